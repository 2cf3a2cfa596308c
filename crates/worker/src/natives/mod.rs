//! Every native the runtime's JS calls, declared once: [`TABLE`] names each function as JS sees
//! it on the bindings object. [`install`] binds the table into that
//! object and [`external_references`] hands the same table to the snapshot, which records
//! natives by address: the two cannot drift apart.

use codemode_protocol::FailureCode;
use v8::MapFnTo;

pub mod clone;
pub mod console;
pub mod host;
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
    native!("renderFailure", render_failure),
    // The web globals (web.rs).
    native!("now", web::now),
    native!("utf8Length", web::utf8_length),
    native!("utf8Write", web::utf8_write),
    native!("utf8EncodeInto", web::utf8_encode_into),
    native!("encodingFor", web::encoding_for),
    native!("decode", web::decode),
    native!("clone", web::structured_clone),
    native!("randomFill", web::random_fill),
    native!("digest", web::digest),
    native!("urlParse", web::url_parse),
    native!("urlSet", web::url_set),
    native!("formParse", web::form_parse),
    native!("formSerialize", web::form_serialize),
];

/// The table's functions, for the snapshot's external reference table.
pub fn external_references() -> Vec<v8::ExternalReference<'static>> {
    TABLE
        .iter()
        .map(|n| v8::ExternalReference {
            function: (n.function)(),
        })
        .collect()
}

/// Fills the bindings object the runtime's JS receives with every native of [`TABLE`]. Failure
/// texts reach the JS through `renderFailure`, the one renderer of the grammar.
pub fn install(scope: &mut v8::HandleScope, bindings: v8::Local<v8::Object>) -> Option<()> {
    for native in TABLE {
        let key = v8::String::new(scope, native.name)?;
        let func = v8::Function::new_raw(scope, (native.function)())?;
        bindings.set(scope, key.into(), func.into())?;
    }
    Some(())
}

/// `renderFailure(code, vars) -> string`: the text of failure `code` (a code of the failure
/// grammar, e.g. "TOOL_NOT_FOUND") with its `{name}` placeholders filled from the own
/// enumerable properties of `vars` (each converted to a string; `vars` may be omitted). An
/// unknown code, or `vars` that is not an object, throws a TypeError.
fn render_failure(
    scope: &mut v8::HandleScope,
    args: v8::FunctionCallbackArguments,
    mut rv: v8::ReturnValue,
) {
    let name = args.get(0).to_rust_string_lossy(scope);
    let Some(code) = FailureCode::from_code(&name) else {
        return throw_type_error(
            scope,
            &format!("renderFailure: unknown failure code \"{name}\""),
        );
    };
    let vars = args.get(1);
    let mut pairs: Vec<(String, String)> = Vec::new();
    if !vars.is_null_or_undefined() {
        let Ok(vars) = v8::Local::<v8::Object>::try_from(vars) else {
            return throw_type_error(scope, "renderFailure: vars must be an object");
        };
        // A getter or toString that throws leaves its exception pending: returning lets it
        // propagate to the caller.
        let Some(keys) = vars.get_own_property_names(scope, Default::default()) else {
            return;
        };
        for i in 0..keys.length() {
            let Some(key) = keys.get_index(scope, i) else {
                return;
            };
            let Some(value) = vars.get(scope, key).and_then(|v| v.to_string(scope)) else {
                return;
            };
            let key = key.to_rust_string_lossy(scope);
            pairs.push((key, value.to_rust_string_lossy(scope)));
        }
    }
    let vars: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (&**k, &**v)).collect();
    if let Some(text) = v8::String::new(scope, &code.render(&vars)) {
        rv.set(text.into());
    }
}

pub fn throw_type_error(scope: &mut v8::HandleScope, text: &str) {
    if let Some(msg) = v8::String::new(scope, text) {
        let err = v8::Exception::type_error(scope, msg);
        scope.throw_exception(err);
    }
}
