//! Dynamic `import()`: the specifier resolves through the run's module map as a static import
//! would, and the module is loaded, linked and evaluated in a microtask, its promise settled when
//! its evaluation (top-level await included) does.

use super::{load, not_found_text, referrer_key, resolve, ModuleMap};

/// V8's hook for dynamic `import()` (set on every isolate, isolate.rs). The specifier resolves
/// as a static import from the module whose code calls `import()` (its resource name is its
/// key); an unknown one rejects the promise with MODULE_NOT_FOUND's text. A known one is
/// loaded in a microtask (import() never settles synchronously, and a module evaluating
/// synchronously cannot be evaluated again): instantiated, evaluated, and the promise resolved
/// with its namespace once its evaluation (top-level await included) settles.
pub fn import_dynamically<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    _options: v8::Local<'s, v8::Data>,
    resource_name: v8::Local<'s, v8::Value>,
    specifier: v8::Local<'s, v8::String>,
    _attributes: v8::Local<'s, v8::FixedArray>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let resolver = v8::PromiseResolver::new(scope)?;
    let promise = resolver.get_promise(scope);
    let spec = specifier.to_rust_string_lossy(scope);
    let referrer = resource_name
        .is_string()
        .then(|| resource_name.to_rust_string_lossy(scope));
    let resolved = match scope.get_slot::<ModuleMap>() {
        Some(map) => map
            .resolve(&spec, Some(referrer_key(referrer.as_deref())))
            .ok_or_else(|| not_found_text(map, &spec)),
        None => Err(not_found_text(&ModuleMap::default(), &spec)),
    };
    match resolved {
        Err(text) => {
            let msg = v8::String::new(scope, &text)?;
            let err = v8::Exception::error(scope, msg);
            resolver.reject(scope, err)?;
        }
        Ok(key) => {
            let id = park(scope, resolver)?;
            let key = v8::String::new(scope, &key)?;
            let data = v8::Array::new_with_elements(scope, &[id.into(), key.into()]);
            let task = v8::Function::builder(finish_import)
                .data(data.into())
                .build(scope)?;
            scope.enqueue_microtask(task);
        }
    }
    Some(promise)
}

/// Keeps an import's resolver in the map while its module loads; the id finds it again.
fn park<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    resolver: v8::Local<'s, v8::PromiseResolver>,
) -> Option<v8::Local<'s, v8::Integer>> {
    let global = v8::Global::new(scope, resolver);
    let map = scope.get_slot_mut::<ModuleMap>()?;
    let id = map.next_import;
    map.next_import = id.wrapping_add(1);
    map.imports.insert(id, global);
    Some(v8::Integer::new_from_unsigned(scope, id))
}

/// The pair a pending import carries, `[id, key or namespace]`: its resolver (taken from the
/// map, so it settles once) and the value.
fn pending<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    data: v8::Local<'s, v8::Value>,
) -> Option<(v8::Local<'s, v8::PromiseResolver>, v8::Local<'s, v8::Value>)> {
    let pair = v8::Local::<v8::Array>::try_from(data).ok()?;
    let id = pair.get_index(scope, 0)?.uint32_value(scope)?;
    let value = pair.get_index(scope, 1)?;
    let global = scope.get_slot_mut::<ModuleMap>()?.imports.remove(&id)?;
    Some((v8::Local::new(scope, global), value))
}

/// The microtask of an import(): load, instantiate and evaluate the module, then settle.
fn finish_import<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue,
) {
    let Some((resolver, key)) = pending(scope, args.data()) else {
        return;
    };
    let key = key.to_rust_string_lossy(scope);
    v8::tc_scope!(let tc, scope);
    let outcome = evaluate_for_import(tc, &key);
    if let Some(map) = tc.get_slot_mut::<ModuleMap>() {
        map.missing = None;
        map.too_deep = None;
    }
    if tc.has_terminated() || tc.is_execution_terminating() {
        return;
    }
    let caught = tc.exception();
    tc.reset();
    match outcome {
        Some(Imported::Now(namespace)) => {
            resolver.resolve(tc, namespace);
        }
        Some(Imported::After(evaluation, namespace)) => {
            // Parked again until the evaluation settles.
            let Some(id) = park(tc, resolver) else {
                return;
            };
            let pair = v8::Array::new_with_elements(tc, &[id.into(), namespace]);
            let on_ok = v8::Function::builder(import_evaluated)
                .data(pair.into())
                .build(tc);
            let on_err = v8::Function::builder(import_failed)
                .data(pair.into())
                .build(tc);
            if let (Some(on_ok), Some(on_err)) = (on_ok, on_err) {
                evaluation.then2(tc, on_ok, on_err);
            }
        }
        Some(Imported::Failed(reason)) => {
            resolver.reject(tc, reason);
        }
        None => {
            let reason = match caught {
                Some(e) => e,
                None => {
                    let text = format!("import(\"{key}\") failed");
                    let Some(msg) = v8::String::new(tc, &text) else {
                        return;
                    };
                    v8::Exception::error(tc, msg)
                }
            };
            resolver.reject(tc, reason);
        }
    }
}

/// Where an import() stands after its module was asked to evaluate.
enum Imported<'s> {
    /// Ready: the namespace.
    Now(v8::Local<'s, v8::Value>),
    /// The evaluation promise to wait for, and the namespace it leads to.
    After(v8::Local<'s, v8::Promise>, v8::Local<'s, v8::Value>),
    /// The module's evaluation failed earlier in the run: its error.
    Failed(v8::Local<'s, v8::Value>),
}

/// `None`: an exception is pending in `scope` (compiling, linking or evaluating threw).
fn evaluate_for_import<'s>(scope: &mut v8::PinScope<'s, '_>, key: &str) -> Option<Imported<'s>> {
    let module = load(scope, key)?;
    if module.get_status() == v8::ModuleStatus::Uninstantiated {
        module.instantiate_module(scope, resolve)?;
    }
    match module.get_status() {
        v8::ModuleStatus::Errored => {
            let exception = module.get_exception();
            return Some(Imported::Failed(v8::Local::new(scope, exception)));
        }
        // Its synchronous part is running (an import from inside it): as with a cycle of
        // static imports, the namespace is what there is.
        v8::ModuleStatus::Evaluating => {
            let namespace = module.get_module_namespace();
            return Some(Imported::Now(v8::Local::new(scope, namespace)));
        }
        _ => {}
    }
    let evaluation = module.evaluate(scope)?;
    let namespace = module.get_module_namespace();
    let namespace = v8::Local::new(scope, namespace);
    match v8::Local::<v8::Promise>::try_from(evaluation) {
        Ok(p) => match p.state() {
            v8::PromiseState::Fulfilled => Some(Imported::Now(namespace)),
            v8::PromiseState::Rejected => Some(Imported::Failed(p.result(scope))),
            v8::PromiseState::Pending => Some(Imported::After(p, namespace)),
        },
        Err(_) => Some(Imported::Now(namespace)),
    }
}

/// A pending import's module finished evaluating: resolve with its namespace.
fn import_evaluated<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue,
) {
    if let Some((resolver, namespace)) = pending(scope, args.data()) {
        resolver.resolve(scope, namespace);
    }
}

/// A pending import's module threw while evaluating: reject with what it threw.
fn import_failed<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    args: v8::FunctionCallbackArguments<'s>,
    _rv: v8::ReturnValue,
) {
    if let Some((resolver, _)) = pending(scope, args.data()) {
        resolver.reject(scope, args.get(0));
    }
}
