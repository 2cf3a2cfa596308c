//! The runtime's JavaScript: the files under `js/`, evaluated once into a context (in the
//! snapshot creator, or in a fresh isolate when there is no snapshot). Each file is a script
//! whose value is a function `(load) => exports`; js/loader.js calls them, each file's imports
//! first, with the native bindings as the exports of `natives.js`.
//!
//! Not ES modules: V8 keeps every evaluated module's records (requests, import and export
//! entries, cells) alive for as long as its functions live, so the snapshot of the same code as
//! modules is ~80 KB larger and each isolate takes ~0.3 ms (~20 %) longer to prepare from it.

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

/// Evaluates the runtime with `bindings` (the natives) and returns the helpers
/// object runtime.js exports. `None` leaves an exception in the caller's TryCatch (or, when V8
/// gives none, means the runtime itself is malformed).
pub fn evaluate<'s>(
    scope: &mut v8::HandleScope<'s>,
    bindings: v8::Local<v8::Object>,
) -> Option<v8::Local<'s, v8::Object>> {
    let null = v8::null(scope).into();
    let files = v8::Object::with_prototype_and_properties(scope, null, &[], &[]);
    for &(name, resource, source) in FILES {
        let file = script_value(scope, resource, source)?;
        let key = v8::String::new(scope, name)?;
        files.set(scope, key.into(), file)?;
    }
    let loader = script_value(scope, "runtime:loader.js", LOADER)?;
    let loader = v8::Local::<v8::Function>::try_from(loader).ok()?;
    let undefined = v8::undefined(scope).into();
    let helpers = loader.call(scope, undefined, &[bindings.into(), files.into()])?;
    v8::Local::<v8::Object>::try_from(helpers).ok()
}

/// Compiles and runs one runtime file as a classic script and returns its completion value.
fn script_value<'s>(
    scope: &mut v8::HandleScope<'s>,
    resource: &str,
    source: &str,
) -> Option<v8::Local<'s, v8::Value>> {
    let code = v8::String::new(scope, source)?;
    let origin = crate::modules::origin(scope, resource, false)?;
    v8::Script::compile(scope, code, Some(&origin))?.run(scope)
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
