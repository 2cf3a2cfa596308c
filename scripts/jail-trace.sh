#!/usr/bin/env bash
# Observes the system calls workers make once jailed, to extend the seccomp allow-list
# (crates/worker/src/process/jail.rs, ALLOWED). Runs the vitest suite (or the files given) with every
# worker under `strace -f`, then prints each call made after the filter was installed: its
# count, how many were refused, and whether the list holds it (in ALLOWED, or in `conditional`
# with the arguments it may take: read the trace for the arguments it was refused with). A
# refused call that belongs to V8, glibc or the worker goes into ALLOWED with its reason, or into
# `conditional` when some of its arguments reach outside the worker; files, sockets, processes,
# threads (every one starts before the jail) and privileges never do. Needs strace. Tests that count codemode-worker processes fail under the
# wrapper (the worker's parent is strace); that is expected.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="$(mktemp -d)"
# Under a root host workers run as uid 65534: the wrapper must be theirs to run, the traces
# theirs to write.
chmod 1777 "$dir"
cat > "$dir/worker.sh" <<WRAP
#!/bin/sh
exec strace -f -qq -o "$dir/trace.\$\$" "$PWD/codemode-worker" "\$@"
WRAP
chmod +x "$dir/worker.sh"
CODEMODE_WORKER_PATH="$dir/worker.sh" npx vitest run "$@" || true
listed="$(sed -n '/^const ALLOWED/,/^pub fn close_inherited_fds/p' crates/worker/src/process/jail.rs | grep -o 'SYS_[a-z_0-9]*' | sed 's/^SYS_//' | sort -u)"
awk -v listed="$listed" '
  BEGIN { n = split(listed, l, "\n"); for (i = 1; i <= n; i++) ok[l[i]] = 1 }
  # One file per worker, its threads in time order: only what follows the filter counts.
  FNR == 1 { jailed = 0 }
  {
    # A call strace split in two counts once, at its end (which holds the result).
    if ($0 ~ /<unfinished \.\.\.>/ || $2 ~ /^(---|\+\+\+)/) { next }
    name = ($2 == "<...") ? $3 : $2; sub(/\(.*/, "", name)
    if (!jailed) { if (name == "seccomp") jailed = 1; next }
    calls[name]++
    if ($0 ~ /= -1 (EPERM|ENOSYS)/) refused[name]++
  }
  END { for (c in calls) printf "%-24s %8d calls %8d refused  %s\n", c, calls[c], refused[c], (c in ok) ? "listed" : "NOT LISTED" }
' "$dir"/trace.* | sort
echo "traces kept in $dir"
