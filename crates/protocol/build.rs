//! With the `napi` feature (the addon's build), the shapes this crate defines for JS are part of
//! the addon's type definitions: `napi build` collects them from this crate's build, which it
//! reruns through `napi_build::setup` when the definitions are asked for.

fn main() {
    #[cfg(feature = "napi")]
    napi_build::setup();
}
