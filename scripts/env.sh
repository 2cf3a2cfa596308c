# Sourced by every build entry point: points the v8 crate at the offline-built V8 archive and its
# bindings when this machine has them (../shared/rusty_v8 beside the checkout). The worker builds
# V8 15.2 with the heap sandbox (`v8` 152.2.0, feature v8_enable_sandbox), a flavour the crate
# publishes no prebuilt archive for: a machine without these two files must build or carry them
# (docs/deployment.md, "Building the worker").
_cm_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_cm_dir="$(cd "$_cm_root/.." && pwd)/shared/rusty_v8"
_cm_flavour="ptrcomp_sandbox_release_x86_64-unknown-linux-gnu"
if [ -z "${RUSTY_V8_ARCHIVE:-}" ] && [ -f "$_cm_dir/librusty_v8_$_cm_flavour.a.gz" ]; then
  export RUSTY_V8_ARCHIVE="$_cm_dir/librusty_v8_$_cm_flavour.a.gz"
fi
if [ -z "${RUSTY_V8_SRC_BINDING_PATH:-}" ] && [ -f "$_cm_dir/src_binding_$_cm_flavour.rs" ]; then
  export RUSTY_V8_SRC_BINDING_PATH="$_cm_dir/src_binding_$_cm_flavour.rs"
fi
unset _cm_root _cm_dir _cm_flavour
