//! The natives table, the bindings object and `renderFailure`.

use codemode_protocol::FailureCode;

use super::{in_context, on_v8_thread, thrown};
use crate::engine::isolate::Prepared;
use crate::natives;

/// Evaluates `src` in a prepared context where `natives` is a bindings object filled by
/// `natives::install`; returns the completion value as a string, or the thrown value's text.
fn eval_with_natives(src: &'static str) -> Result<String, String> {
    on_v8_thread(move || eval_here(src))
}

fn eval_here(src: &str) -> Result<String, String> {
    let mut prepared = Prepared::new(64);
    in_context(&mut prepared, |scope| {
        let bindings = v8::Object::new(scope);
        natives::install(scope, bindings).expect("natives installed");
        let global = scope.get_current_context().global(scope);
        let key = v8::String::new(scope, "natives").expect("a key");
        global.set(scope, key.into(), bindings.into());
        v8::tc_scope!(let tc, scope);
        let source = v8::String::new(tc, src).expect("a source");
        let value = v8::Script::compile(tc, source, None).and_then(|s| s.run(tc));
        match value {
            Some(v) => Ok(v.to_rust_string_lossy(tc)),
            None => Err(thrown(tc)),
        }
    })
}

#[test]
fn the_bindings_object_holds_every_native() {
    let keys =
        eval_with_natives("Object.entries(natives).map(([k, v]) => k + ':' + typeof v).join(',')");
    let expected: Vec<String> = natives::TABLE
        .iter()
        .map(|n| format!("{}:function", n.name))
        .collect();
    assert_eq!(keys, Ok(expected.join(",")));
}

#[test]
fn render_failure_fills_the_grammar_text() {
    assert_eq!(
        eval_with_natives("natives.renderFailure('TOOL_NOT_FOUND', { tool: 'drop' })"),
        Ok(FailureCode::ToolNotFound.render(&[("tool", "drop")]))
    );
    // Values are converted to strings; missing placeholders stay as written.
    assert_eq!(
        eval_with_natives("natives.renderFailure('LOG_LIMIT', { dropped: 12 })"),
        Ok(FailureCode::LogLimit.render(&[("dropped", "12")]))
    );
    assert_eq!(
        eval_with_natives("natives.renderFailure('TOOL_NOT_FOUND')"),
        Ok(FailureCode::ToolNotFound.template().into())
    );
}

#[test]
fn render_failure_refuses_unknown_codes_and_bad_vars() {
    assert_eq!(
        eval_with_natives("natives.renderFailure('NOPE', {})"),
        Err("TypeError: renderFailure: unknown failure code \"NOPE\"".into())
    );
    assert_eq!(
        eval_with_natives("natives.renderFailure('TOOL_NOT_FOUND', 5)"),
        Err("TypeError: renderFailure: vars must be an object".into())
    );
    assert_eq!(
        eval_with_natives(
            "natives.renderFailure('TOOL_NOT_FOUND', { get tool() { throw new Error('getter') } })"
        ),
        Err("Error: getter".into())
    );
}

#[test]
fn the_table_declares_each_native_once_under_its_js_name() {
    let names: Vec<&str> = natives::TABLE.iter().map(|n| n.name).collect();
    assert_eq!(
        names,
        [
            "callTool",
            "log",
            "fetch",
            "renderFailure",
            "now",
            "utf8Length",
            "utf8Write",
            "utf8EncodeInto",
            "encodingFor",
            "decode",
            "clone",
            "randomFill",
            "seededRandom",
            "digest",
            "urlParse",
            "urlSet",
            "formParse",
            "formSerialize",
        ]
    );
    let mut functions: Vec<usize> = natives::TABLE
        .iter()
        .map(|n| (n.function)() as usize)
        .collect();
    functions.sort_unstable();
    functions.dedup();
    assert_eq!(functions.len(), natives::TABLE.len());
    assert_eq!(natives::external_references().len(), natives::TABLE.len());
}

#[test]
fn isolates_come_from_the_snapshot() {
    assert!(on_v8_thread(|| crate::engine::snapshot::current().is_some()));
}
