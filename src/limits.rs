//! The bounds of `codemode_protocol::limits`, as JS reads them: an executor's option ranges and
//! defaults, the response status rule and the reserved global names for `lib/validate.js`
//! (`limits()`, with the daemon's own options of `codemode_daemon::options` for `serve()` and the
//! CLI), the dispatch bounds for `lib/executor-core.js` (`dispatchLimits()`), and the
//! output bounds a pool holds its runs to (`NativePool.limits()`). Each is read from the
//! protocol crate's constants here, so JS holds no copy of a number.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use codemode_daemon::options as serve;
use codemode_protocol::limits::{self, options};
use napi_derive::napi;

/// The ranges and defaults every executor's options and requests are held to, the status a
/// response may carry, and the globals the sandbox's runtime installs.
#[napi(object)]
pub struct NativeOptionLimits {
    /// `[min, max]` of each option (`workers`, `queueBound`, `timeout` in ms, `memoryLimit`
    /// in MiB, `handlesIdleTimeout` in ms, the budgets `cpuLimit` in ms, `toolCallLimit` and
    /// `fetchLimit`; the budgets have no default: omitted, there is none).
    pub options: BTreeMap<String, (f64, f64)>,
    /// What an omitted option gets (`queueBound`, `timeout`, `memoryLimit`,
    /// `handlesIdleTimeout`; `workers` defaults to the machine's parallelism).
    pub defaults: BTreeMap<String, f64>,
    /// `[min, max]` of each of a tenant's bounds (`maxRunning`, `maxQueued`, `cpuPerMinute` in
    /// ms; none has a default: omitted, there is none; docs/tenants.md).
    pub tenant_options: BTreeMap<String, (f64, f64)>,
    /// `[min, max]` of a response's status (a routed policy's answer, a handler's).
    pub response_status: (f64, f64),
    /// The names the runtime installs on the sandbox's global object, in order.
    pub runtime_globals: Vec<String>,
    /// A request's `approval` and the executor's `approvalKey` (docs/approvals.md).
    pub approval: NativeApprovalLimits,
    /// `[min, max]` of each of the daemon's own options (`serve()`: `port`, `maxInFlight`,
    /// `maxConnections`, `maxConnectionsPerAddress`, `helloTimeout` and `idleTimeout` in ms,
    /// `maxMessageBytes`, and the budget ceilings `cpuLimit` in ms, `toolCallLimit`,
    /// `fetchLimit`), from `codemode_daemon::options`.
    pub serve_options: BTreeMap<String, (f64, f64)>,
    /// What an omitted daemon option gets (the same names but the budget ceilings, which have
    /// no default: omitted, there is none).
    pub serve_defaults: BTreeMap<String, f64>,
}

/// The bounds of approvals: `[min, max]` of `expiresIn` and `timeout` (ms), what an omitted
/// one gets, and the least bytes of an `approvalKey`.
#[napi(object)]
pub struct NativeApprovalLimits {
    pub expires_in: (f64, f64),
    pub default_expires_in: f64,
    pub timeout: (f64, f64),
    pub default_timeout: f64,
    pub key_min_bytes: u32,
}

fn range<T: Copy + Into<f64>>(r: &RangeInclusive<T>) -> (f64, f64) {
    ((*r.start()).into(), (*r.end()).into())
}

/// Lossless for every bound here (each below 2^53).
fn num(v: u64) -> f64 {
    v as f64
}

/// The option ranges and defaults, the response status rule and the runtime's globals
/// (`codemode_protocol::limits`), for `lib/validate.js`.
#[napi]
pub fn limits() -> NativeOptionLimits {
    let u = |r: &RangeInclusive<u64>| (num(*r.start()), num(*r.end()));
    let options = [
        ("workers", u(&options::WORKERS)),
        ("queueBound", u(&options::QUEUE_BOUND)),
        ("timeout", u(&options::TIMEOUT_MS)),
        ("memoryLimit", u(&options::MEMORY_LIMIT_MIB)),
        ("handlesIdleTimeout", u(&options::HANDLES_IDLE_TIMEOUT_MS)),
        ("cpuLimit", u(&options::CPU_LIMIT_MS)),
        ("toolCallLimit", u(&options::TOOL_CALL_LIMIT)),
        ("fetchLimit", u(&options::FETCH_LIMIT)),
    ];
    let tenant_options = [
        ("maxRunning", u(&options::TENANT_MAX_RUNNING)),
        ("maxQueued", u(&options::TENANT_MAX_QUEUED)),
        ("cpuPerMinute", u(&options::TENANT_CPU_PER_MINUTE_MS)),
    ];
    let defaults = [
        ("queueBound", options::DEFAULT_QUEUE_BOUND),
        ("timeout", options::DEFAULT_TIMEOUT_MS),
        ("memoryLimit", options::DEFAULT_MEMORY_LIMIT_MIB),
        (
            "handlesIdleTimeout",
            options::DEFAULT_HANDLES_IDLE_TIMEOUT_MS,
        ),
    ];
    NativeOptionLimits {
        options: options.map(|(k, v)| (k.to_string(), v)).into(),
        defaults: defaults.map(|(k, v)| (k.to_string(), num(v))).into(),
        tenant_options: tenant_options.map(|(k, v)| (k.to_string(), v)).into(),
        response_status: range(&limits::RESPONSE_STATUS),
        approval: NativeApprovalLimits {
            expires_in: u(&options::APPROVAL_EXPIRES_IN_MS),
            default_expires_in: num(options::DEFAULT_APPROVAL_EXPIRES_IN_MS),
            timeout: u(&options::APPROVAL_TIMEOUT_MS),
            default_timeout: num(options::DEFAULT_APPROVAL_TIMEOUT_MS),
            key_min_bytes: limits::APPROVAL_KEY_MIN_BYTES as u32,
        },
        runtime_globals: limits::RUNTIME_GLOBALS
            .iter()
            .map(|g| g.to_string())
            .collect(),
        serve_options: serve::TABLE
            .iter()
            .map(|o| (o.name.to_string(), u(&o.range)))
            .collect(),
        serve_defaults: serve::TABLE
            .iter()
            .filter_map(|o| Some((o.name.to_string(), num(o.default?))))
            .collect(),
    }
}

/// What a run's tool calls may hold on the host that dispatches them (crates/protocol
/// `limits`): the serialized argument bytes of calls not yet answered, and how many dispatches
/// run at once.
#[napi(object)]
pub struct NativeDispatchLimits {
    pub tool_bytes_in_flight: u32,
    pub dispatches: u32,
}

/// The dispatch bounds lib/executor-core.js holds every run to, in process and over connect().
#[napi]
pub fn dispatch_limits() -> NativeDispatchLimits {
    NativeDispatchLimits {
        tool_bytes_in_flight: limits::TOOL_BYTES_IN_FLIGHT as u32,
        dispatches: limits::DISPATCHES as u32,
    }
}

/// The output bounds, for the host side (which bounds what it sends back).
#[napi(object)]
pub struct NativeLimits {
    pub log_entries: u32,
    pub log_bytes: u32,
    pub log_entry_bytes: u32,
    pub result_bytes: u32,
    pub tool_payload_bytes: u32,
}

impl NativeLimits {
    pub fn current() -> Self {
        NativeLimits {
            log_entries: limits::LOG_ENTRIES as u32,
            log_bytes: limits::LOG_BYTES as u32,
            log_entry_bytes: limits::LOG_ENTRY_BYTES as u32,
            result_bytes: limits::RESULT_BYTES as u32,
            tool_payload_bytes: limits::TOOL_PAYLOAD_BYTES as u32,
        }
    }
}

/// What is wrong with `name` as a tenant's name (`codemode_pool::tenants::check_name`: 1 to 64
/// of `[A-Za-z0-9._-]`), or nothing: the one rule `lib/validate/tenants.js` applies.
#[napi]
pub fn tenant_problem(name: String) -> Option<String> {
    codemode_pool::tenants::check_name(&name).err()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_tenant_name_is_held_to_the_pool_s_rule() {
        assert_eq!(super::tenant_problem("acme.eu-1".into()), None);
        let problem = super::tenant_problem("a b".into()).unwrap_or_default();
        assert!(problem.contains("' '"), "{problem}");
    }
}
