//! The globals the runtime installs are `limits::RUNTIME_GLOBALS`, in its order: the worker
//! hands the list to runtime.js, which installs it and refuses a list it has no values for.

use codemode_protocol::limits::RUNTIME_GLOBALS;

use super::{in_context, in_plain_context, on_v8_thread, thrown};
use crate::engine::isolate::Prepared;
use crate::engine::runtime_js;
use crate::natives;

/// `Object.getOwnPropertyNames(globalThis)` in `scope`'s context.
fn global_names(scope: &mut v8::PinScope) -> Vec<String> {
    let context = scope.get_current_context();
    let global = context.global(scope);
    let names = global
        .get_own_property_names(
            scope,
            v8::GetPropertyNamesArgs {
                property_filter: v8::PropertyFilter::ALL_PROPERTIES,
                ..Default::default()
            },
        )
        .expect("the global's names");
    let mut out = Vec::with_capacity(names.length() as usize);
    for i in 0..names.length() {
        if let Some(name) = names.get_index(scope, i) {
            out.push(name.to_rust_string_lossy(scope));
        }
    }
    out
}

#[test]
fn the_runtime_installs_the_runtime_globals_in_their_order() {
    let (own, runtime) = on_v8_thread(|| {
        let own = in_plain_context(global_names);
        let mut prepared = Prepared::new(64);
        let runtime = in_context(&mut prepared, global_names);
        (own, runtime)
    });
    for name in RUNTIME_GLOBALS {
        assert!(runtime.iter().any(|n| n == name), "{name} is not installed");
    }
    // Past V8's own globals (console is one: the runtime replaces it in place), the global
    // object holds the runtime's, in the order they were defined.
    let added: Vec<&str> = runtime
        .iter()
        .filter(|n| !own.contains(n))
        .map(String::as_str)
        .collect();
    let expected: Vec<&str> = RUNTIME_GLOBALS
        .iter()
        .copied()
        .filter(|n| !own.iter().any(|o| o == n))
        .collect();
    assert_eq!(added, expected);
}

/// Evaluates the runtime with `globals` in a fresh context; the error's text when it refuses.
fn install_with(globals: &'static [&'static str]) -> Result<(), String> {
    on_v8_thread(move || {
        in_plain_context(|scope| {
            v8::tc_scope!(let tc, scope);
            let bindings = v8::Object::new(tc);
            natives::install(tc, bindings).expect("the natives install");
            match runtime_js::evaluate_with(tc, bindings, globals) {
                Some(_) => Ok(()),
                None => Err(thrown(tc)),
            }
        })
    })
}

#[test]
fn the_runtime_refuses_a_list_of_globals_it_does_not_match() {
    assert_eq!(install_with(RUNTIME_GLOBALS), Ok(()));
    let missing = &RUNTIME_GLOBALS[..RUNTIME_GLOBALS.len() - 1];
    let missing: &'static [&'static str] = Vec::leak(missing.to_vec());
    let err = install_with(missing).expect_err("a value the list does not name");
    assert!(err.contains("not in the list of runtime globals"), "{err}");
    let mut extra = RUNTIME_GLOBALS.to_vec();
    extra.push("process");
    let err = install_with(Vec::leak(extra)).expect_err("a name without a value");
    assert!(
        err.contains("the runtime has no global \"process\""),
        "{err}"
    );
}
