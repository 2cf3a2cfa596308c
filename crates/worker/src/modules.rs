//! The module map: imports resolve only through the request's `modules` (specifier -> source).
//! Bare and `node:` specifiers match a key exactly; relative specifiers also resolve against
//! the importing module's key, so `./lib/a.js` importing `./b.js` finds `./lib/b.js`.

use std::collections::HashMap;

use crate::state::RunState;

pub const PROGRAM_NAME: &str = "program.js";

#[derive(Default)]
pub struct ModuleMap {
    /// normalized specifier -> (key as given, source)
    sources: HashMap<String, (String, String)>,
    compiled: HashMap<String, v8::Global<v8::Module>>,
    key_by_hash: HashMap<i32, String>,
    /// The first specifier that resolved to nothing, for the outcome's text.
    pub missing: Option<String>,
}

impl ModuleMap {
    pub fn new(modules: Vec<(String, String)>) -> Self {
        let sources = modules
            .into_iter()
            .map(|(k, v)| (normalize(&k), (k, v)))
            .collect();
        ModuleMap {
            sources,
            ..Default::default()
        }
    }

    pub fn available(&self) -> String {
        if self.sources.is_empty() {
            return "none".into();
        }
        let mut keys: Vec<&str> = self.sources.values().map(|(k, _)| k.as_str()).collect();
        keys.sort_unstable();
        keys.iter()
            .map(|k| format!("\"{k}\""))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn resolve(&self, specifier: &str, referrer: Option<&str>) -> Option<String> {
        let direct = normalize(specifier);
        if self.sources.contains_key(&direct) {
            return Some(direct);
        }
        let relative = specifier.starts_with("./") || specifier.starts_with("../");
        let base = referrer?;
        if !relative {
            return None;
        }
        let dir = match base.rfind('/') {
            Some(i) => &base[..=i],
            None => "./",
        };
        let joined = normalize(&format!("{dir}{specifier}"));
        self.sources.contains_key(&joined).then_some(joined)
    }
}

/// Resolves `.` and `..` segments of a relative or absolute specifier; others stay as written.
fn normalize(spec: &str) -> String {
    let rooted = spec.starts_with('/');
    if !(rooted || spec.starts_with("./") || spec.starts_with("../")) {
        return spec.to_string();
    }
    let mut parts: Vec<&str> = Vec::new();
    let mut ups = 0usize;
    for seg in spec.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    ups += 1;
                }
            }
            s => parts.push(s),
        }
    }
    let mut out = String::with_capacity(spec.len());
    if rooted {
        out.push('/');
    } else if ups == 0 {
        out.push_str("./");
    } else {
        for _ in 0..ups {
            out.push_str("../");
        }
    }
    out.push_str(&parts.join("/"));
    out
}

/// The origin V8 reports errors and stack frames against: `name`, as a module or a script.
pub fn origin<'s>(
    scope: &mut v8::HandleScope<'s>,
    name: &str,
    is_module: bool,
) -> Option<v8::ScriptOrigin<'s>> {
    let resource = v8::String::new(scope, name)?;
    Some(v8::ScriptOrigin::new(
        scope,
        resource.into(),
        0,
        0,
        false,
        -1,
        None,
        false,
        false,
        is_module,
        None,
    ))
}

pub fn compile<'s>(
    scope: &mut v8::HandleScope<'s>,
    name: &str,
    source: &str,
) -> Option<v8::Local<'s, v8::Module>> {
    let code = v8::String::new(scope, source)?;
    let origin = origin(scope, name, true)?;
    let mut src = v8::script_compiler::Source::new(code, Some(&origin));
    let module = v8::script_compiler::compile_module(scope, &mut src)?;
    let hash = module.get_identity_hash().get();
    if let Some(state) = scope.get_slot_mut::<RunState>() {
        state.modules.key_by_hash.insert(hash, name.to_string());
    }
    Some(module)
}

/// V8's resolve hook for static imports.
pub fn resolve<'a>(
    context: v8::Local<'a, v8::Context>,
    specifier: v8::Local<'a, v8::String>,
    _attributes: v8::Local<'a, v8::FixedArray>,
    referrer: v8::Local<'a, v8::Module>,
) -> Option<v8::Local<'a, v8::Module>> {
    // SAFETY: V8 calls this hook synchronously while instantiating a module in `context`, on
    // the thread that owns the isolate, which is what CallbackScope::new requires.
    let scope = &mut unsafe { v8::CallbackScope::new(context) };
    let spec = specifier.to_rust_string_lossy(scope);
    let hash = referrer.get_identity_hash().get();
    let state = scope.get_slot_mut::<RunState>()?;
    let map = &mut state.modules;
    let referrer_key = map.key_by_hash.get(&hash).map(String::as_str);
    let referrer_key = match referrer_key {
        Some(PROGRAM_NAME) | None => None,
        Some(k) => Some(k),
    };
    let Some(key) = map.resolve(&spec, referrer_key.or(Some("./"))) else {
        let text = codemode_protocol::FailureCode::ModuleNotFound
            .render(&[("specifier", &spec), ("available", &map.available())]);
        map.missing.get_or_insert(spec);
        let msg = v8::String::new(scope, &text)?;
        let err = v8::Exception::error(scope, msg);
        scope.throw_exception(err);
        return None;
    };
    if let Some(global) = map.compiled.get(&key).cloned() {
        return Some(v8::Local::new(scope, global));
    }
    let (name, source) = map.sources.get(&key)?.clone();
    let module = compile(scope, &name, &source)?;
    let global = v8::Global::new(scope, module);
    if let Some(state) = scope.get_slot_mut::<RunState>() {
        state.modules.compiled.insert(key, global);
    }
    Some(module)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_relative_specifiers() {
        assert_eq!(normalize("./a/../b.js"), "./b.js");
        assert_eq!(normalize("b.js"), "b.js");
        assert_eq!(normalize("node:fs"), "node:fs");
        assert_eq!(normalize("../x/./y.js"), "../x/y.js");
    }

    #[test]
    fn resolves_against_the_referrer() {
        let m = ModuleMap::new(vec![
            ("./lib/a.js".into(), String::new()),
            ("./lib/b.js".into(), String::new()),
            ("node:async_hooks".into(), String::new()),
        ]);
        assert_eq!(
            m.resolve("./b.js", Some("./lib/a.js")).as_deref(),
            Some("./lib/b.js")
        );
        assert_eq!(
            m.resolve("./lib/a.js", Some("./")).as_deref(),
            Some("./lib/a.js")
        );
        assert_eq!(
            m.resolve("node:async_hooks", None).as_deref(),
            Some("node:async_hooks")
        );
        assert_eq!(m.resolve("node:fs", None), None);
        assert_eq!(m.resolve("lodash", Some("./lib/a.js")), None);
    }
}
