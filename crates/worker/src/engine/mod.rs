//! The engine: V8 started with the worker's flags ([`platform`]), the runtime's JavaScript
//! ([`runtime_js`], `js/`) evaluated into a startup [`snapshot`], and a fresh [`isolate`] from
//! it for each run, with its memory [`meter`](memory), the [`helpers`] the run calls, and the
//! module loader V8 calls back into ([`modules`]). It runs no program: that is `run`'s.

pub mod bench;
pub mod helpers;
pub mod isolate;
pub mod memory;
pub mod modules;
pub mod platform;
pub mod runtime_js;
pub mod snapshot;
