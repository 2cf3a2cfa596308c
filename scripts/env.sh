# Sourced by every build entry point: points the v8 crate at the offline-built V8 archive when
# this machine has one (../shared/rusty_v8 beside the checkout); otherwise the crate downloads
# its official archive as it does for any user with internet.
_cm_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_cm_archive="$(cd "$_cm_root/.." && pwd)/shared/rusty_v8/librusty_v8_release_x86_64-unknown-linux-gnu.a.gz"
if [ -z "${RUSTY_V8_ARCHIVE:-}" ] && [ -f "$_cm_archive" ]; then
  export RUSTY_V8_ARCHIVE="$_cm_archive"
fi
unset _cm_root _cm_archive
