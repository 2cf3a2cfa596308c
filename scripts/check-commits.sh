#!/usr/bin/env bash
# Every commit since the subject rule was set (d6c638d) has a subject of one line of at most 72
# characters, its reasoning in the body, so `git log --oneline` reads as a list of changes.
# Older commits are left as they are: rewriting published history would break every clone.
set -euo pipefail
cd "$(dirname "$0")/.."
base=d6c638d
if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  echo "check-commits: $base is not in this clone's history (a shallow clone?); fetch it" >&2
  exit 1
fi
long=$(git log --no-merges --format='%h %s' "$base..HEAD" | awk '{ s = substr($0, index($0, " ") + 1); if (length(s) > 72) print }')
if [ -n "$long" ]; then
  echo "commit subjects over 72 characters (put the reasoning in the body):" >&2
  echo "$long" >&2
  exit 1
fi
