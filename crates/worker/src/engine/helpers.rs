//! The runtime's helpers the run loop calls (the object js/runtime.js returns), looked up once per
//! prepared isolate instead of by name on every run.

/// Functions of the runtime, each held as a Global of the isolate it was resolved in: a
/// `Helpers` must be dropped before that isolate.
pub struct Helpers {
    /// `installProviders([[name, tools|null], ...])`: the provider globals of a run.
    pub install_providers: v8::Global<v8::Function>,
    /// `beginRun(epochMs?)`: resets the per-run state of the runtime (timers, the clock); with
    /// `epochMs`, the run is replayable (js/replay.js).
    pub begin_run: v8::Global<v8::Function>,
    /// `runTimers() -> -2 | -1 | deadline`: fires due timers (see run/event_loop.rs).
    pub run_timers: v8::Global<v8::Function>,
    /// `allocBytes(n) -> Uint8Array`: a metered buffer for a response body.
    pub alloc_bytes: v8::Global<v8::Function>,
    /// `describeThrow(value) -> string`: the text of an uncaught throw.
    pub describe_throw: v8::Global<v8::Function>,
    /// `typeName(value) -> string`: what a value is, for the entry-shape failure.
    pub type_name: v8::Global<v8::Function>,
    /// `invokeFetch(handler, this, method, url, headers, body) -> Promise`: one invocation of
    /// a retained fetch handle (js/handles.js).
    pub invoke_fetch: v8::Global<v8::Function>,
}

impl Helpers {
    /// Reads the helpers off the object the runtime returned; `Err` names one that is missing.
    pub fn resolve(
        scope: &mut v8::PinScope,
        helpers: v8::Local<v8::Object>,
    ) -> Result<Helpers, &'static str> {
        let get = |name: &'static str| {
            let key = v8::String::new(scope, name).ok_or(name)?;
            let value = helpers.get(scope, key.into()).ok_or(name)?;
            let f = v8::Local::<v8::Function>::try_from(value).map_err(|_| name)?;
            Ok::<_, &'static str>(v8::Global::new(scope, f))
        };
        Ok(Helpers {
            install_providers: get("installProviders")?,
            begin_run: get("beginRun")?,
            run_timers: get("runTimers")?,
            alloc_bytes: get("allocBytes")?,
            describe_throw: get("describeThrow")?,
            type_name: get("typeName")?,
            invoke_fetch: get("invokeFetch")?,
        })
    }
}
