//! Control and observation of runs (docs/operations.md): aborts asked for by the caller, console
//! entries forwarded as they are written (live logs), and the pool's metrics. Kept apart from
//! supervision: the dispatcher (dispatch.rs) hands over a worker's `Log` frames (already held
//! to their bounds by conduct.rs) and the bytes it reads, lifecycle.rs the workers it loses;
//! everything else is wrapped around what `Pool` receives and completes.
//!
//! The metrics are defined once, in [`FAMILIES`] (name, type, help), and kept here, in the pool
//! core, so the addon's `metrics()` and the daemon's `GET /metrics` report the same figures under
//! the same names; [`render`] writes the Prometheus text format for both.
//!
//! One file over 500 lines: the metric table, where each figure is counted and how it is
//! rendered, which are read together so a name, its labels and its meaning cannot drift apart.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use codemode_protocol::{Failure, FailureCode, LogEntry, RunOutcome};

use crate::api::{Completion, Host, InvokeDone, PoolStats};

/// Upper bounds of the latency histograms' buckets, in seconds.
pub const LATENCY_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0,
];

/// How a metric is read (the Prometheus `# TYPE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Counter,
    Gauge,
    Histogram,
}

impl MetricKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
            MetricKind::Histogram => "histogram",
        }
    }
}

/// One metric's definition: its name, its type, its help text.
#[derive(Debug, Clone, Copy)]
pub struct MetricDef {
    pub name: &'static str,
    pub kind: MetricKind,
    pub help: &'static str,
}

const fn def(name: &'static str, kind: MetricKind, help: &'static str) -> MetricDef {
    MetricDef { name, kind, help }
}

pub const EXECUTIONS: MetricDef = def(
    "codemode_executions_total",
    MetricKind::Counter,
    "Executions ended, by outcome code (OK, a program failure code, or a fault code).",
);
pub const EXECUTION_SECONDS: MetricDef = def(
    "codemode_execution_duration_seconds",
    MetricKind::Histogram,
    "Time from an execution's submission to its completion (queue wait included).",
);
pub const TOOL_CALL_SECONDS: MetricDef = def(
    "codemode_tool_call_duration_seconds",
    MetricKind::Histogram,
    "Time from a tool call leaving its worker to the host's answer reaching the pool.",
);
pub const QUEUE_DEPTH: MetricDef = def(
    "codemode_queue_depth",
    MetricKind::Gauge,
    "Executions waiting for a worker.",
);
pub const WORKERS: MetricDef = def(
    "codemode_workers",
    MetricKind::Gauge,
    "Live worker processes, by state (busy: running an execution; idle: ready; retained: holding a retained execution; starting: neither yet).",
);
pub const WORKER_RESTARTS: MetricDef = def(
    "codemode_worker_restarts_total",
    MetricKind::Counter,
    "Workers lost and replaced, by cause (exit, signal, unresponsive: killed after a cancel it did not confirm).",
);
pub const WORKER_BYTES: MetricDef = def(
    "codemode_worker_bytes_total",
    MetricKind::Counter,
    "Bytes of frames exchanged with workers, by direction (in: from workers; out: to workers).",
);
pub const ABORTS: MetricDef = def(
    "codemode_aborts_total",
    MetricKind::Counter,
    "Executions and invocations aborted by their caller, by what (execution, invocation).",
);

pub const TENANT_EXECUTIONS: MetricDef = def(
    "codemode_tenant_executions_total",
    MetricKind::Counter,
    "Executions ended, by tenant (a configured tenant's name; (none): runs that name no tenant; (other): every tenant not configured) and outcome code.",
);
pub const TENANT_CPU: MetricDef = def(
    "codemode_tenant_cpu_seconds_total",
    MetricKind::Counter,
    "CPU time spent by ended executions' programs, by tenant (labelled as in codemode_tenant_executions_total).",
);
pub const TENANT_QUEUE_DEPTH: MetricDef = def(
    "codemode_tenant_queue_depth",
    MetricKind::Gauge,
    "Executions waiting for a worker, by tenant (labelled as in codemode_tenant_executions_total).",
);
pub const TENANT_SWITCHES: MetricDef = def(
    "codemode_tenant_switches_total",
    MetricKind::Counter,
    "Workers retired and replaced so that another tenant's run could have a worker (docs/tenants.md, cordons).",
);

/// Every metric the pool reports, in the order it reports them.
pub const FAMILIES: &[MetricDef] = &[
    EXECUTIONS,
    EXECUTION_SECONDS,
    TOOL_CALL_SECONDS,
    QUEUE_DEPTH,
    WORKERS,
    WORKER_RESTARTS,
    WORKER_BYTES,
    ABORTS,
    TENANT_EXECUTIONS,
    TENANT_CPU,
    TENANT_QUEUE_DEPTH,
    TENANT_SWITCHES,
];

/// One sample: the series name (a histogram's `_bucket`, `_sum`, `_count` included), its labels,
/// its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// One metric and its samples now.
#[derive(Debug, Clone)]
pub struct Family {
    pub def: MetricDef,
    pub samples: Vec<Sample>,
}

/// Writes families in the Prometheus text exposition format (version 0.0.4).
pub fn render(families: &[Family]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for f in families {
        let _ = writeln!(out, "# HELP {} {}", f.def.name, f.def.help);
        let _ = writeln!(out, "# TYPE {} {}", f.def.name, f.def.kind.as_str());
        for s in &f.samples {
            out.push_str(&s.name);
            if !s.labels.is_empty() {
                out.push('{');
                for (i, (k, v)) in s.labels.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let v = v
                        .replace('\\', "\\\\")
                        .replace('"', "\\\"")
                        .replace('\n', "\\n");
                    let _ = write!(out, "{k}=\"{v}\"");
                }
                out.push('}');
            }
            let _ = writeln!(out, " {}", number(s.value));
        }
    }
    out
}

fn number(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// One sample of metric `name`.
pub fn sample(name: &str, labels: &[(&str, &str)], value: f64) -> Sample {
    Sample {
        name: name.to_string(),
        labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        value,
    }
}

/// The two samples of a byte counter labelled `direction`: `in`, then `out`.
pub fn in_and_out(name: &str, bytes_in: &AtomicU64, bytes_out: &AtomicU64) -> Vec<Sample> {
    vec![
        sample(
            name,
            &[("direction", "in")],
            bytes_in.load(Ordering::Relaxed) as f64,
        ),
        sample(
            name,
            &[("direction", "out")],
            bytes_out.load(Ordering::Relaxed) as f64,
        ),
    ]
}

#[derive(Default)]
struct Histogram {
    buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    count: AtomicU64,
    sum_ns: AtomicU64,
}

impl Histogram {
    fn observe(&self, since: Instant) {
        self.observe_took(since.elapsed());
    }

    fn observe_took(&self, d: std::time::Duration) {
        let secs = d.as_secs_f64();
        if let Some(i) = LATENCY_BUCKETS.iter().position(|b| secs <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_ns
            .fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }

    fn samples(&self, name: &str) -> Vec<Sample> {
        let mut out = Vec::with_capacity(LATENCY_BUCKETS.len() + 3);
        let mut cumulative = 0;
        for (b, n) in LATENCY_BUCKETS.iter().zip(&self.buckets) {
            cumulative += n.load(Ordering::Relaxed);
            let le = format!("{b}");
            out.push(sample(
                &format!("{name}_bucket"),
                &[("le", &le)],
                cumulative as f64,
            ));
        }
        let count = self.count.load(Ordering::Relaxed);
        out.push(sample(
            &format!("{name}_bucket"),
            &[("le", "+Inf")],
            count as f64,
        ));
        let sum = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        out.push(sample(&format!("{name}_sum"), &[], sum));
        out.push(sample(&format!("{name}_count"), &[], count as f64));
        out
    }
}

/// The pool's share of control and observation, one per pool.
#[derive(Default)]
pub(crate) struct Observe {
    /// Running executions the caller aborted: their completion becomes `ABORTED`.
    aborted: Mutex<HashSet<u64>>,
    /// Invocations in flight the caller aborted.
    aborted_invocations: Mutex<HashSet<u64>>,
    /// Runs that asked for live logs: where their entries go.
    live: Mutex<HashMap<u64, Arc<dyn Host>>>,
    by_code: Mutex<BTreeMap<&'static str, u64>>,
    restarts: Mutex<BTreeMap<&'static str, u64>>,
    execution_seconds: Histogram,
    tool_call_seconds: Histogram,
    bytes_in: AtomicU64,
    /// Shared with each worker's input, which counts what it writes.
    pub bytes_out: Arc<AtomicU64>,
    aborted_executions: AtomicU64,
    aborted_invokes: AtomicU64,
    /// Endings by tenant label and code; CPU (µs) by tenant label.
    by_tenant: Mutex<BTreeMap<(Arc<str>, &'static str), u64>>,
    cpu_by_tenant: Mutex<BTreeMap<Arc<str>, u64>>,
    switches: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The fault an aborted execution or invocation completes with.
pub(crate) fn aborted(what: &str) -> Failure {
    FailureCode::Aborted.failure(&[("what", what)])
}

impl Observe {
    /// Wraps an execution's completion (to count it, and to turn an aborted run's ending into
    /// `ABORTED`); registers its host for live logs if asked.
    pub(crate) fn track(
        self: &Arc<Self>,
        exec_id: u64,
        host: &Arc<dyn Host>,
        done: Completion,
        live_logs: bool,
        tenant: Arc<str>,
    ) -> Completion {
        let submitted = Instant::now();
        if live_logs {
            lock(&self.live).insert(exec_id, host.clone());
        }
        let me = self.clone();
        let done: Completion = Box::new(move |id, result| {
            let result = if lock(&me.aborted).remove(&id) {
                me.aborted_executions.fetch_add(1, Ordering::Relaxed);
                Err(aborted("execution"))
            } else {
                result
            };
            if live_logs {
                lock(&me.live).remove(&id);
            }
            me.count(&result, tenant);
            me.execution_seconds.observe(submitted);
            done(id, result)
        });
        done
    }

    /// Counts an ending under its code. The label is always the grammar's own (or `OK`): a
    /// worker's code passed its conduct (conduct.rs), and one that did not parse would be
    /// counted as `INTERNAL`, so the label set stays bounded by the grammar.
    fn count(&self, result: &Result<RunOutcome, Failure>, tenant: Arc<str>) {
        let code = match result {
            Ok(o) => o.error.as_ref().map_or("OK", |e| {
                FailureCode::from_code(&e.code)
                    .unwrap_or(FailureCode::Internal)
                    .as_str()
            }),
            Err(f) => f.code.as_str(),
        };
        *lock(&self.by_code).entry(code).or_insert(0) += 1;
        if let Ok(outcome) = result {
            let mut cpu = lock(&self.cpu_by_tenant);
            let spent = cpu.entry(tenant.clone()).or_insert(0);
            *spent = spent.saturating_add(outcome.stats.cpu_us);
        }
        *lock(&self.by_tenant).entry((tenant, code)).or_insert(0) += 1;
    }

    /// Counts a worker retired to change tenant (its replacement is no restart).
    pub(crate) fn switched(&self) {
        self.switches.fetch_add(1, Ordering::Relaxed);
    }

    /// Marks a running execution aborted (called under the pool's state lock, while the run is
    /// known to be running, so the mark is always taken back by its completion).
    pub(crate) fn mark_aborted(&self, exec_id: u64) {
        lock(&self.aborted).insert(exec_id);
    }

    /// Counts an execution aborted while it waited in the queue.
    pub(crate) fn aborted_queued(&self) {
        self.aborted_executions.fetch_add(1, Ordering::Relaxed);
    }

    /// Wraps an invocation's answer so an aborted one rejects with `ABORTED`.
    pub(crate) fn track_invocation(
        self: &Arc<Self>,
        invoke_id: u64,
        done: InvokeDone,
    ) -> InvokeDone {
        let me = self.clone();
        Box::new(move |result| {
            let result = if lock(&me.aborted_invocations).remove(&invoke_id) {
                me.aborted_invokes.fetch_add(1, Ordering::Relaxed);
                Err(aborted("invocation"))
            } else {
                result
            };
            done(result)
        })
    }

    pub(crate) fn mark_invocation_aborted(&self, invoke_id: u64) {
        lock(&self.aborted_invocations).insert(invoke_id);
    }

    /// An invocation that left the queue before it reached its worker.
    pub(crate) fn invocation_aborted_waiting(&self) {
        self.aborted_invokes.fetch_add(1, Ordering::Relaxed);
    }

    /// A console entry a worker sent for `exec_id`, forwarded to its host when the run asked
    /// for live logs. Its bounds were enforced before it got here, once, where every frame a
    /// worker sends is checked (conduct.rs: `limits::LOG_WIRE_*`, the bounds of the outcome's
    /// logs too).
    pub(crate) fn log(&self, exec_id: u64, entry: LogEntry) {
        let host = lock(&self.live).get(&exec_id).cloned();
        if let Some(host) = host {
            host.log(exec_id, entry);
        }
    }

    /// The host answered a tool call that took `took` (calls.rs; `None`: nobody waited).
    pub(crate) fn tool_answered(&self, took: Option<std::time::Duration>) {
        if let Some(took) = took {
            self.tool_call_seconds.observe_took(took);
        }
    }

    /// Bytes of frames read from workers.
    pub(crate) fn read(&self, bytes: usize) {
        self.bytes_in.fetch_add(bytes as u64 + 4, Ordering::Relaxed);
    }

    /// A worker was lost and will be replaced: `unresponsive` when the pool killed it after a
    /// cancel it did not confirm.
    pub(crate) fn restarted(&self, status: Option<std::process::ExitStatus>, unresponsive: bool) {
        use std::os::unix::process::ExitStatusExt;
        let cause = if unresponsive {
            "unresponsive"
        } else if status.is_some_and(|s| s.signal().is_some()) {
            "signal"
        } else {
            "exit"
        };
        *lock(&self.restarts).entry(cause).or_insert(0) += 1;
    }

    /// Every family, with the pool's counts as of now.
    pub(crate) fn families(&self, stats: PoolStats, depths: Vec<(Arc<str>, usize)>) -> Vec<Family> {
        let executions = lock(&self.by_code)
            .iter()
            .map(|(code, n)| sample(EXECUTIONS.name, &[("code", code)], *n as f64))
            .collect();
        let restarts = ["exit", "signal", "unresponsive"]
            .iter()
            .map(|cause| {
                let n = lock(&self.restarts).get(cause).copied().unwrap_or(0);
                sample(WORKER_RESTARTS.name, &[("cause", cause)], n as f64)
            })
            .collect();
        let busy = stats.running;
        let starting = stats
            .workers
            .saturating_sub(stats.idle + stats.running + stats.retained);
        let workers = [
            ("busy", busy),
            ("idle", stats.idle),
            ("retained", stats.retained),
            ("starting", starting),
        ]
        .iter()
        .map(|(state, n)| sample(WORKERS.name, &[("state", state)], *n as f64))
        .collect();
        let bytes = in_and_out(WORKER_BYTES.name, &self.bytes_in, &self.bytes_out);
        let aborts = vec![
            sample(
                ABORTS.name,
                &[("what", "execution")],
                self.aborted_executions.load(Ordering::Relaxed) as f64,
            ),
            sample(
                ABORTS.name,
                &[("what", "invocation")],
                self.aborted_invokes.load(Ordering::Relaxed) as f64,
            ),
        ];
        let tenant_executions = lock(&self.by_tenant)
            .iter()
            .map(|((tenant, code), n)| {
                sample(
                    TENANT_EXECUTIONS.name,
                    &[("tenant", tenant), ("code", code)],
                    *n as f64,
                )
            })
            .collect();
        let tenant_cpu = lock(&self.cpu_by_tenant)
            .iter()
            .map(|(tenant, us)| sample(TENANT_CPU.name, &[("tenant", tenant)], *us as f64 / 1e6))
            .collect();
        let tenant_depths = depths
            .iter()
            .map(|(tenant, n)| sample(TENANT_QUEUE_DEPTH.name, &[("tenant", tenant)], *n as f64))
            .collect();
        let switches = self.switches.load(Ordering::Relaxed) as f64;
        vec![
            Family {
                def: EXECUTIONS,
                samples: executions,
            },
            Family {
                def: EXECUTION_SECONDS,
                samples: self.execution_seconds.samples(EXECUTION_SECONDS.name),
            },
            Family {
                def: TOOL_CALL_SECONDS,
                samples: self.tool_call_seconds.samples(TOOL_CALL_SECONDS.name),
            },
            Family {
                def: QUEUE_DEPTH,
                samples: vec![sample(QUEUE_DEPTH.name, &[], stats.queued as f64)],
            },
            Family {
                def: WORKERS,
                samples: workers,
            },
            Family {
                def: WORKER_RESTARTS,
                samples: restarts,
            },
            Family {
                def: WORKER_BYTES,
                samples: bytes,
            },
            Family {
                def: ABORTS,
                samples: aborts,
            },
            Family {
                def: TENANT_EXECUTIONS,
                samples: tenant_executions,
            },
            Family {
                def: TENANT_CPU,
                samples: tenant_cpu,
            },
            Family {
                def: TENANT_QUEUE_DEPTH,
                samples: tenant_depths,
            },
            Family {
                def: TENANT_SWITCHES,
                samples: vec![sample(TENANT_SWITCHES.name, &[], switches)],
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{FetchCall, ToolCall};
    use crate::conduct::{admit, Binding, ToolList};
    use codemode_protocol::limits;
    use codemode_protocol::{LogLevel, WorkerMsg};

    struct Logs(Mutex<usize>);

    impl Host for Logs {
        fn tool_call(&self, _: ToolCall) {}
        fn fetch(&self, _: FetchCall) {}
        fn log(&self, _: u64, _: LogEntry) {
            *lock(&self.0) += 1;
        }
    }

    /// One rule for a run's logs: every live entry the worker's conduct admits reaches the
    /// host. (A second, tighter formula here once dropped entries the wire bounds allow.)
    #[test]
    fn every_live_log_entry_conduct_admits_reaches_the_host() {
        let observe = Arc::new(Observe::default());
        let logs = Arc::new(Logs(Mutex::new(0)));
        let host: Arc<dyn Host> = logs.clone();
        let _done = observe.track(1, &host, Box::new(|_, _| {}), true, Arc::from("(none)"));
        let mut binding = Binding::new(1, ToolList::of(&[]), Default::default());
        admit(Some(&mut binding), &WorkerMsg::Started { exec_id: 1 }).unwrap();
        let entry = LogEntry {
            level: LogLevel::Log,
            message: "x".repeat(limits::LOG_ENTRY_WIRE_BYTES),
        };
        let mut admitted = 0;
        loop {
            let msg = WorkerMsg::Log {
                exec_id: 1,
                entry: entry.clone(),
            };
            if admit(Some(&mut binding), &msg).is_err() {
                break;
            }
            admitted += 1;
            observe.log(1, entry.clone());
        }
        assert!(admitted * limits::LOG_ENTRY_WIRE_BYTES > limits::LOG_BYTES);
        assert_eq!(*lock(&logs.0), admitted);
    }
}
