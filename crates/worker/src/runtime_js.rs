//! The runtime's JavaScript: ES modules under `js/`, compiled into a context and evaluated once
//! (in the snapshot creator, or in a fresh isolate when there is no snapshot). A module imports
//! another by its name in [`MODULES`]; nothing else resolves, and programs never see these
//! modules (their imports go through modules.rs).

use std::collections::HashMap;

/// The module the worker fills with the native bindings before the rest is evaluated.
const NATIVES: &str = "runtime:natives.js";
/// The entry module: installs the globals and exports the helpers object.
const ENTRY: &str = "runtime:runtime.js";

macro_rules! runtime_modules {
    ($($path:literal),* $(,)?) => {
        &[$((concat!("runtime:", $path), include_str!(concat!("js/", $path)))),*]
    };
}

/// Every runtime module: (specifier, source). The specifier is also the name stack traces show.
const MODULES: &[(&str, &str)] = runtime_modules![
    "natives.js",
    "primordials.js",
    "runtime.js",
    "buffer_guard.js",
    "inspect.js",
    "console.js",
    "errors.js",
    "providers.js",
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

/// The compiled modules while they are being instantiated (an isolate slot, for [`resolve`]).
struct Compiled(HashMap<&'static str, v8::Global<v8::Module>>);

/// Compiles and evaluates the runtime with `bindings` (the natives and their texts) and returns
/// the entry module's `helpers` export. `None` leaves an exception in the caller's TryCatch
/// (or, when V8 gives none, means the runtime itself is malformed).
pub fn evaluate<'s>(
    scope: &mut v8::HandleScope<'s>,
    bindings: v8::Local<v8::Object>,
) -> Option<v8::Local<'s, v8::Object>> {
    let mut compiled = HashMap::with_capacity(MODULES.len());
    for &(name, source) in MODULES {
        let module = compile(scope, name, source)?;
        compiled.insert(name, v8::Global::new(scope, module));
    }
    let natives = v8::Local::new(scope, compiled.get(NATIVES)?);
    let entry = v8::Local::new(scope, compiled.get(ENTRY)?);
    scope.set_slot(Compiled(compiled));
    let helpers = (|| {
        // natives.js first, on its own: its `natives` object gets the bindings before any module
        // that reads them runs.
        let target = run(scope, natives, "natives")?;
        copy_properties(scope, bindings, target)?;
        run(scope, entry, "helpers")
    })();
    // Drops the Globals: the snapshot creator must hold none when it serializes the heap.
    scope.remove_slot::<Compiled>();
    helpers
}

fn compile<'s>(
    scope: &mut v8::HandleScope<'s>,
    name: &str,
    source: &str,
) -> Option<v8::Local<'s, v8::Module>> {
    let code = v8::String::new(scope, source)?;
    let resource = v8::String::new(scope, name)?;
    let origin = v8::ScriptOrigin::new(
        scope,
        resource.into(),
        0,
        0,
        false,
        -1,
        None,
        false,
        false,
        true,
        None,
    );
    let mut src = v8::script_compiler::Source::new(code, Some(&origin));
    v8::script_compiler::compile_module(scope, &mut src)
}

/// Instantiates and evaluates `module` (and what it imports) and returns its export `name`.
fn run<'s>(
    scope: &mut v8::HandleScope<'s>,
    module: v8::Local<v8::Module>,
    name: &str,
) -> Option<v8::Local<'s, v8::Object>> {
    module.instantiate_module(scope, resolve)?;
    module.evaluate(scope)?;
    // No runtime module awaits at its top level, so evaluation has finished here; a throw
    // rejects the returned promise instead of propagating, so it is thrown again for the caller.
    if module.get_status() == v8::ModuleStatus::Errored {
        let exception = module.get_exception();
        scope.throw_exception(exception);
        return None;
    }
    let namespace = v8::Local::<v8::Object>::try_from(module.get_module_namespace()).ok()?;
    let key = v8::String::new(scope, name)?;
    let value = namespace.get(scope, key.into())?;
    v8::Local::<v8::Object>::try_from(value).ok()
}

fn copy_properties(
    scope: &mut v8::HandleScope,
    from: v8::Local<v8::Object>,
    to: v8::Local<v8::Object>,
) -> Option<()> {
    let keys = from.get_own_property_names(scope, Default::default())?;
    for i in 0..keys.length() {
        let key = keys.get_index(scope, i)?;
        let value = from.get(scope, key)?;
        to.set(scope, key, value)?;
    }
    Some(())
}

/// V8's resolve hook while the runtime is instantiated: a specifier names a runtime module.
fn resolve<'a>(
    context: v8::Local<'a, v8::Context>,
    specifier: v8::Local<'a, v8::String>,
    _attributes: v8::Local<'a, v8::FixedArray>,
    _referrer: v8::Local<'a, v8::Module>,
) -> Option<v8::Local<'a, v8::Module>> {
    // SAFETY: V8 calls this hook synchronously while instantiating a module in `context`, on
    // the thread that owns the isolate, which is what CallbackScope::new requires.
    let scope = &mut unsafe { v8::CallbackScope::new(context) };
    let spec = specifier.to_rust_string_lossy(scope);
    let found = scope
        .get_slot::<Compiled>()
        .and_then(|c| c.0.get(spec.as_str()))
        .cloned();
    match found {
        Some(global) => Some(v8::Local::new(scope, global)),
        None => {
            let msg = v8::String::new(scope, &format!("no runtime module \"{spec}\""))?;
            let err = v8::Exception::error(scope, msg);
            scope.throw_exception(err);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every module in the table is reachable from the entry, and every import names a module
    /// in the table (an unreachable module would be compiled in every isolate for nothing).
    #[test]
    fn the_table_is_exactly_the_import_graph() {
        let sources: HashMap<&str, &str> = MODULES.iter().copied().collect();
        let mut seen = vec![ENTRY, NATIVES];
        let mut i = 0;
        while i < seen.len() {
            let source = sources[seen[i]];
            for line in source.lines() {
                let Some(at) = line.find("from 'runtime:") else {
                    continue;
                };
                let rest = &line[at + "from '".len()..];
                let spec = &rest[..rest.find('\'').unwrap()];
                assert!(sources.contains_key(spec), "{} imports {spec}", seen[i]);
                if !seen.contains(&spec) {
                    seen.push(spec);
                }
            }
            i += 1;
        }
        assert_eq!(seen.len(), MODULES.len(), "unreachable runtime modules");
    }
}
