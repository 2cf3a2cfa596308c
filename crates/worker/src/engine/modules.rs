//! The module map: imports resolve only through the request's `modules` (specifier -> source).
//! Bare and `node:` specifiers match a key exactly; relative specifiers also resolve against
//! the importing module's key, so `./lib/a.js` importing `./b.js` finds `./lib/b.js`.
//! Dynamic `import()` resolves through the same map and rules ([`import::import_dynamically`]), and
//! shares the compiled modules: each module is evaluated once per run, however it is imported.
//! A module keyed `.ts` (`.mts`, `.cts`) has its types blanked first, like the program, after its
//! nesting is counted (past `limits::NESTING_LEVELS` it is refused unparsed, since oxc recurses
//! per level; a JavaScript module goes to V8 alone, whose parser checks its own stack).

pub mod import;

use std::collections::HashMap;

pub const PROGRAM_NAME: &str = "program.js";

#[derive(Default)]
pub struct ModuleMap {
    /// normalized specifier -> (key as given, source)
    sources: HashMap<String, (String, String)>,
    compiled: HashMap<String, v8::Global<v8::Module>>,
    key_by_hash: HashMap<i32, String>,
    /// The first specifier that resolved to nothing, for the outcome's text.
    pub missing: Option<String>,
    /// NESTING_TOO_DEEP's text for the first module refused for its nesting.
    pub too_deep: Option<String>,
    /// The promises of import() calls still loading, by id.
    imports: HashMap<u32, v8::Global<v8::PromiseResolver>>,
    next_import: u32,
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

    /// Whether `name` is a module of this run (a script name V8 reports is the key as given).
    pub fn has_name(&self, name: &str) -> bool {
        self.sources.values().any(|(k, _)| k == name)
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
    scope: &mut v8::PinScope<'s, '_>,
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
    scope: &mut v8::PinScope<'s, '_>,
    name: &str,
    source: &str,
) -> Option<v8::Local<'s, v8::Module>> {
    let code = v8::String::new(scope, source)?;
    let origin = origin(scope, name, true)?;
    let mut src = v8::script_compiler::Source::new(code, Some(&origin));
    let module = v8::script_compiler::compile_module(scope, &mut src)?;
    let hash = module.get_identity_hash().get();
    if let Some(map) = scope.get_slot_mut::<ModuleMap>() {
        map.key_by_hash.insert(hash, name.to_string());
    }
    Some(module)
}

/// The referrer key resolution starts from: the importing module's key, or the map's root for
/// the program itself (and for code V8 knows no module of).
fn referrer_key(name: Option<&str>) -> &str {
    match name {
        Some(PROGRAM_NAME) | None => "./",
        Some(k) => k,
    }
}

/// MODULE_NOT_FOUND's text for `specifier`.
fn not_found_text(map: &ModuleMap, specifier: &str) -> String {
    codemode_protocol::FailureCode::ModuleNotFound
        .render(&[("specifier", specifier), ("available", &map.available())])
}

/// The module compiled for `key` (one per key per run), compiling it on first use.
fn load<'s>(scope: &mut v8::PinScope<'s, '_>, key: &str) -> Option<v8::Local<'s, v8::Module>> {
    let map = scope.get_slot::<ModuleMap>()?;
    if let Some(global) = map.compiled.get(key).cloned() {
        return Some(v8::Local::new(scope, global));
    }
    let (name, source) = map.sources.get(key)?.clone();
    let source = match typescript_module(&name, source) {
        Ok(s) => s,
        Err(refusal) => {
            let text = match refusal {
                Refusal::TooDeep(text) => {
                    if let Some(map) = scope.get_slot_mut::<ModuleMap>() {
                        map.too_deep.get_or_insert_with(|| text.clone());
                    }
                    text
                }
                Refusal::Construct(text) => text,
            };
            let msg = v8::String::new(scope, &text)?;
            let err = v8::Exception::syntax_error(scope, msg);
            scope.throw_exception(err);
            return None;
        }
    };
    let module = compile(scope, &name, &source)?;
    let global = v8::Global::new(scope, module);
    if let Some(map) = scope.get_slot_mut::<ModuleMap>() {
        map.compiled.insert(key.to_string(), global);
    }
    Some(module)
}

/// Why a TypeScript module was not handed to V8: the text of the SyntaxError it throws.
enum Refusal {
    /// A construct that cannot be stripped.
    Construct(String),
    /// Nested past the bound (NESTING_TOO_DEEP's text).
    TooDeep(String),
}

/// A module whose key ends in `.ts`, `.mts` or `.cts` has its types blanked (positions kept, as
/// for the program); a construct that cannot be stripped is a SyntaxError naming it, and so is
/// nesting past the bound. A module that does not parse as TypeScript goes to V8 as given, for
/// V8's own text.
fn typescript_module(name: &str, source: String) -> Result<String, Refusal> {
    if ![".ts", ".mts", ".cts"]
        .iter()
        .any(|ext| name.ends_with(ext))
    {
        return Ok(source);
    }
    match codemode_typestrip::strip(&source) {
        Ok(js) => Ok(js),
        Err(codemode_typestrip::StripError::Refused(r)) => {
            Err(Refusal::Construct(r.text(&module_named(name))))
        }
        Err(codemode_typestrip::StripError::TooDeep(t)) => {
            Err(Refusal::TooDeep(t.text(&module_named(name))))
        }
        Err(codemode_typestrip::StripError::Syntax { .. }) => Ok(source),
    }
}

/// How a failure's text names the module keyed `name`.
fn module_named(name: &str) -> String {
    format!("The module \"{name}\"")
}

/// V8's resolve hook for static imports.
pub fn resolve<'a>(
    context: v8::Local<'a, v8::Context>,
    specifier: v8::Local<'a, v8::String>,
    _attributes: v8::Local<'a, v8::FixedArray>,
    referrer: v8::Local<'a, v8::Module>,
) -> Option<v8::Local<'a, v8::Module>> {
    // SAFETY: V8 calls this hook synchronously while instantiating a module in `context`, on
    // the thread that owns the isolate, which is what a CallbackScope requires.
    v8::callback_scope!(unsafe scope, context);
    let spec = specifier.to_rust_string_lossy(scope);
    let hash = referrer.get_identity_hash().get();
    let map = scope.get_slot_mut::<ModuleMap>()?;
    let referrer = referrer_key(map.key_by_hash.get(&hash).map(String::as_str));
    let Some(key) = map.resolve(&spec, Some(referrer)) else {
        let text = not_found_text(map, &spec);
        map.missing.get_or_insert(spec);
        let msg = v8::String::new(scope, &text)?;
        let err = v8::Exception::error(scope, msg);
        scope.throw_exception(err);
        return None;
    };
    load(scope, &key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_deeply_nested_typescript_module_unparsed() {
        let deep = format!(
            "export const x: number = {}1{}",
            "(".repeat(20_000),
            ")".repeat(20_000)
        );
        match typescript_module("./deep.ts", deep.clone()) {
            Err(Refusal::TooDeep(text)) => {
                assert!(
                    text.starts_with("The module \"./deep.ts\" nests too deeply"),
                    "{text}"
                );
                assert!(text.contains("at line 1"), "{text}");
            }
            _ => panic!("not refused for its nesting"),
        }
        // A JavaScript module is V8's to parse (V8 checks its own stack).
        assert!(typescript_module("./deep.js", deep).is_ok());
    }

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
