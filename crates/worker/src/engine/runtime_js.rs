//! The runtime's JavaScript: the files under `js/`, evaluated once into a context (in the
//! snapshot creator, or in a fresh isolate when there is no snapshot). Each file is a script
//! whose value is a function `(load) => exports`; js/loader.js calls them, each file's imports
//! first, with the native bindings as the exports of `natives.js`.
//!
//! Not ES modules: V8 keeps every evaluated module's records (requests, import and export
//! entries, cells) alive for as long as its functions live, so the snapshot of the same code as
//! modules is ~80 KB larger and each isolate takes ~0.3 ms (~20 %) longer to prepare from it.

use codemode_protocol::limits::RUNTIME_GLOBALS;

use crate::engine::helpers::Helpers;
use crate::natives;

/// js/loader.js: its value is `(natives, files) => helpers`.
const LOADER: &str = include_str!("js/loader.js");

macro_rules! runtime_files {
    ($($path:literal),* $(,)?) => {
        &[$(($path, concat!("runtime:", $path), include_str!(concat!("js/", $path)))),*]
    };
}

/// Every runtime file: (the name `load` takes, the name stack traces show, source).
const FILES: &[(&str, &str, &str)] = runtime_files![
    "primordials.js",
    "runtime.js",
    "buffer_guard.js",
    "inspect.js",
    "console.js",
    "errors.js",
    "providers.js",
    "handles.js",
    "replay.js",
    "web/timers.js",
    "web/dom_exception.js",
    "web/events.js",
    "web/encoding.js",
    "web/base64.js",
    "web/structured_clone.js",
    "web/crypto.js",
    "web/absences.js",
    "web/url.js",
    "web/headers.js",
    "web/bytes.js",
    "web/blob.js",
    "web/streams.js",
    "web/body.js",
    "web/request.js",
    "web/response.js",
    "web/fetch.js",
];

/// Evaluates the runtime with `bindings` (the natives) and the names of the globals it installs
/// (`limits::RUNTIME_GLOBALS`, in that order), and returns the helpers object runtime.js
/// exports. `None` leaves an exception in the caller's TryCatch (or, when V8 gives none, means
/// the runtime itself is malformed).
pub fn evaluate<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    bindings: v8::Local<v8::Object>,
) -> Option<v8::Local<'s, v8::Object>> {
    evaluate_with(scope, bindings, RUNTIME_GLOBALS)
}

/// [`evaluate`] with another list of globals (tests: a list runtime.js does not match).
pub fn evaluate_with<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    bindings: v8::Local<v8::Object>,
    runtime_globals: &[&str],
) -> Option<v8::Local<'s, v8::Object>> {
    let null = v8::null(scope).into();
    let files = v8::Object::with_prototype_and_properties(scope, null, &[], &[]);
    for &(name, resource, source) in FILES {
        let file = script_value(scope, resource, source)?;
        let key = v8::String::new(scope, name)?;
        files.set(scope, key.into(), file)?;
    }
    let mut names = Vec::with_capacity(runtime_globals.len());
    for name in runtime_globals {
        names.push(v8::String::new(scope, name)?.into());
    }
    let globals = v8::Array::new_with_elements(scope, &names);
    let loader = script_value(scope, "runtime:loader.js", LOADER)?;
    let loader = v8::Local::<v8::Function>::try_from(loader).ok()?;
    let undefined = v8::undefined(scope).into();
    let args = [bindings.into(), files.into(), globals.into()];
    let helpers = loader.call(scope, undefined, &args)?;
    v8::Local::<v8::Object>::try_from(helpers).ok()
}

/// Compiles and runs one runtime file as a classic script and returns its completion value.
fn script_value<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    resource: &str,
    source: &str,
) -> Option<v8::Local<'s, v8::Value>> {
    let code = v8::String::new(scope, source)?;
    let origin = super::modules::origin(scope, resource, false)?;
    v8::Script::compile(scope, code, Some(&origin))?.run(scope)
}

/// Evaluates the runtime with the native bindings. The runtime is part of the
/// worker binary: if it fails, the binary is broken, and the worker must not pretend to be usable.
pub fn install_runtime<'s>(scope: &mut v8::PinScope<'s, '_>) -> v8::Local<'s, v8::Object> {
    v8::tc_scope!(let tc, scope);
    let helpers = (|| {
        let bindings = v8::Object::new(tc);
        natives::install(tc, bindings)?;
        evaluate(tc, bindings)
    })();
    match helpers {
        Some(h) => h,
        None => {
            let why = tc
                .exception()
                .map(|e| e.to_rust_string_lossy(tc))
                .unwrap_or_else(|| "no exception".into());
            eprintln!("codemode-worker: the runtime failed to install: {why}");
            std::process::exit(70);
        }
    }
}

/// The helpers of a runtime just installed or deserialized. The runtime is part of the worker
/// binary: a helper missing means the binary is broken, and the worker must not pretend to be
/// usable.
pub fn resolve_helpers(scope: &mut v8::PinScope, helpers: v8::Local<v8::Object>) -> Helpers {
    match Helpers::resolve(scope, helpers) {
        Ok(h) => h,
        Err(name) => {
            eprintln!("codemode-worker: the runtime has no helper `{name}`");
            std::process::exit(70);
        }
    }
}

/// Calls the helpers every run calls, so their bytecode is compiled into the snapshot: a lazily
/// compiled function would otherwise be parsed and compiled again in every fresh isolate, on the
/// run's critical path (~70 µs for beginRun and runTimers together).
pub fn warm_up(scope: &mut v8::PinScope, helpers: v8::Local<v8::Object>) {
    let helpers = resolve_helpers(scope, helpers);
    v8::tc_scope!(let tc, scope);
    let empty = v8::Array::new(tc, 0).into();
    for (f, args) in [
        (&helpers.begin_run, vec![]),
        (&helpers.run_timers, vec![]),
        (&helpers.install_providers, vec![empty]),
    ] {
        let f = v8::Local::new(tc, f);
        let undefined = v8::undefined(tc).into();
        f.call(tc, undefined, &args);
    }
    tc.reset();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What each file loads: the names in its `load('…')` calls.
    fn loads(source: &str) -> Vec<&str> {
        source
            .split("load('")
            .skip(1)
            .map(|rest| &rest[..rest.find('\'').unwrap()])
            .collect()
    }

    /// Every file in the table is loaded from runtime.js, every load names a file in the table
    /// (or natives.js), and no file is compiled into every isolate for nothing.
    #[test]
    fn the_table_is_exactly_what_runtime_js_loads() {
        let sources: std::collections::HashMap<&str, &str> =
            FILES.iter().map(|&(name, _, src)| (name, src)).collect();
        assert_eq!(loads(LOADER), ["runtime.js"]);
        let mut seen = vec!["runtime.js"];
        let mut i = 0;
        while i < seen.len() {
            for name in loads(sources[seen[i]]) {
                if name == "natives.js" {
                    continue;
                }
                assert!(sources.contains_key(name), "{} loads {name}", seen[i]);
                if !seen.contains(&name) {
                    seen.push(name);
                }
            }
            i += 1;
        }
        assert_eq!(seen.len(), FILES.len(), "files runtime.js never loads");
    }
}
