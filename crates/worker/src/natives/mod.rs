//! The natives: the Rust the runtime's JS calls into. The requests to the host (tool calls,
//! fetch: [`host`]), the console ([`console`]), the web platform's Rust half ([`web`]), the
//! failure grammar ([`failure`]), structured clone ([`clone`], which the run uses too), and the
//! seeded randomness of a replayable run ([`seeded`]).
//!
//! Every native is declared once: [`TABLE`] names each function as JS sees it on the bindings
//! object. [`install`] binds the table into that object and [`external_references`] hands the
//! same table to the snapshot, which records natives by address: the two cannot drift apart.

use v8::MapFnTo;

pub mod clone;
pub mod console;
pub mod failure;
pub mod host;
pub mod seeded;
pub mod web;

/// One native: the name it has on the bindings object, and its function.
pub struct Native {
    pub name: &'static str,
    pub function: fn() -> v8::FunctionCallback,
}

/// `native!("name", path::to::function)`: a table entry. The function is adapted to V8's
/// calling convention where the entry is used (`MapFnTo` is not const).
macro_rules! native {
    ($name:literal, $f:path) => {
        Native {
            name: $name,
            function: || $f.map_fn_to(),
        }
    };
}

/// The natives, by their JS names.
pub const TABLE: &[Native] = &[
    // The host link (host.rs) and the console (console.rs).
    native!("callTool", host::call_tool),
    native!("log", console::log),
    native!("fetch", host::fetch),
    // The failure grammar.
    native!("renderFailure", failure::render_failure),
    // The web globals (web.rs).
    native!("now", web::now),
    native!("utf8Length", web::utf8_length),
    native!("utf8Write", web::utf8_write),
    native!("utf8EncodeInto", web::utf8_encode_into),
    native!("encodingFor", web::encoding_for),
    native!("decode", web::decode),
    native!("clone", web::structured_clone),
    native!("randomFill", web::random_fill),
    // A replayable run's Math.random (seeded.rs).
    native!("seededRandom", seeded::seeded_random),
    native!("digest", web::digest),
    native!("urlParse", web::url_parse),
    native!("urlSet", web::url_set),
    native!("formParse", web::form_parse),
    native!("formSerialize", web::form_serialize),
];

/// The table's functions, for the snapshot's external reference table.
pub fn external_references() -> Vec<v8::ExternalReference> {
    TABLE
        .iter()
        .map(|n| v8::ExternalReference {
            function: (n.function)(),
        })
        .collect()
}

/// Fills the bindings object the runtime's JS receives with every native of [`TABLE`]. Failure
/// texts reach the JS through `renderFailure` (failure.rs), the one renderer of the grammar.
pub fn install(scope: &mut v8::PinScope, bindings: v8::Local<v8::Object>) -> Option<()> {
    for native in TABLE {
        let key = v8::String::new(scope, native.name)?;
        let func = v8::Function::new_raw(scope, (native.function)())?;
        bindings.set(scope, key.into(), func.into())?;
    }
    Some(())
}
