//! The failure grammar for the runtime's JS: `renderFailure` renders a code's text from the
//! table (codemode_protocol's failures.rs), and natives refuse bad arguments with a TypeError.

use codemode_protocol::FailureCode;

/// `renderFailure(code, vars) -> string`: the text of failure `code` (a code of the failure
/// grammar, e.g. "TOOL_NOT_FOUND") with its `{name}` placeholders filled from the own
/// enumerable properties of `vars` (each converted to a string; `vars` may be omitted). An
/// unknown code, or `vars` that is not an object, throws a TypeError.
pub fn render_failure(
    scope: &mut v8::PinScope,
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

pub fn throw_type_error(scope: &mut v8::PinScope, text: &str) {
    if let Some(msg) = v8::String::new(scope, text) {
        let err = v8::Exception::type_error(scope, msg);
        scope.throw_exception(err);
    }
}
