//! Tenants (docs/tenants.md): callers of one pool who distrust each other. Each run belongs to
//! a tenant (the name its request gave, or the pool's one unnamed domain when it gave none);
//! this module holds what the scheduler needs of them: the runs waiting, one queue a tenant,
//! served in turn ([`Queues`]); each tenant's bounds ([`TenantLimits`]); the CPU each spent in
//! the last minute ([`CpuWindow`]); and the bounded label a tenant is reported under
//! ([`TenantOptions::label`]). A leaf: generic over the job it queues, it knows nothing of
//! workers (schedule.rs cordons them).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_protocol::{Failure, FailureCode};

/// A tenant as the pool keys it: the name a request gave, or [`UNNAMED`].
pub type TenantKey = Arc<str>;

/// The key of runs whose request names no tenant: the pool's single trust domain when no
/// tenant is named (a name has 1 to 64 characters, so none is empty).
pub const UNNAMED: &str = "";

/// The label metrics give runs that name no tenant.
pub const LABEL_UNNAMED: &str = "(none)";
/// The label metrics give every tenant not configured, counted as one (a name cannot hold
/// parentheses, so neither label is a tenant's).
pub const LABEL_OTHER: &str = "(other)";

/// Checks a tenant name: 1 to 64 of `[A-Za-z0-9._-]`. The text says what is wrong.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 64 {
        return Err(format!("got {} characters", name.chars().count()));
    }
    match name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        Some(c) => Err(format!("{c:?} is not one of A-Z a-z 0-9 . _ -")),
        None => Ok(()),
    }
}

/// One tenant's bounds; `None`: no bound of that kind beyond the pool's own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TenantLimits {
    /// Runs of the tenant running at once (at most the pool's workers either way).
    pub max_running: Option<usize>,
    /// Runs of the tenant waiting for a worker; past it `QUEUE_FULL` naming this bound.
    pub max_queued: Option<usize>,
    /// CPU (ms) the tenant's runs may spend in any minute; past it `TENANT_CPU_LIMIT`.
    pub cpu_per_minute_ms: Option<u64>,
}

/// The tenants a pool knows by name, with their bounds, and the bounds of any other.
#[derive(Debug, Clone, Default)]
pub struct TenantOptions {
    pub named: HashMap<String, TenantLimits>,
    /// What a tenant not named above gets (and runs that name no tenant).
    pub default: TenantLimits,
}

impl TenantOptions {
    pub fn limits(&self, key: &str) -> TenantLimits {
        self.named.get(key).copied().unwrap_or(self.default)
    }

    /// The label a tenant is reported under: bounded by the configured tenants and two more.
    pub fn label<'a>(&'a self, key: &'a str) -> &'a str {
        if key == UNNAMED {
            LABEL_UNNAMED
        } else if self.named.contains_key(key) {
            key
        } else {
            LABEL_OTHER
        }
    }
}

/// The key of a request's tenant.
pub fn key_of(tenant: Option<&str>) -> TenantKey {
    Arc::from(tenant.unwrap_or(UNNAMED))
}

/// A tenant's CPU over the last minute, in one-second buckets.
#[derive(Debug, Default)]
pub(crate) struct CpuWindow {
    /// Microseconds charged, by the second (since `epoch`) they were charged in.
    buckets: VecDeque<(u64, u64)>,
}

const WINDOW_SECS: u64 = 60;

impl CpuWindow {
    fn second(epoch: Instant, now: Instant) -> u64 {
        now.saturating_duration_since(epoch).as_secs()
    }

    fn expire(&mut self, now_s: u64) {
        while self
            .buckets
            .front()
            .is_some_and(|(s, _)| s + WINDOW_SECS <= now_s)
        {
            self.buckets.pop_front();
        }
    }

    pub(crate) fn charge(&mut self, epoch: Instant, now: Instant, us: u64) {
        let s = Self::second(epoch, now);
        self.expire(s);
        match self.buckets.back_mut() {
            Some((at, n)) if *at == s => *n = n.saturating_add(us),
            _ => self.buckets.push_back((s, us)),
        }
    }

    /// Microseconds spent in the last minute.
    pub(crate) fn spent(&mut self, epoch: Instant, now: Instant) -> u64 {
        self.expire(Self::second(epoch, now));
        self.buckets
            .iter()
            .fold(0u64, |sum, (_, n)| sum.saturating_add(*n))
    }

    /// How long until the minute's spending falls under `limit_us`: the charges that must roll
    /// off, oldest first, and when the last of them does.
    fn retry_after(&self, epoch: Instant, now: Instant, limit_us: u64) -> Duration {
        let mut left = self
            .buckets
            .iter()
            .fold(0u64, |sum, (_, n)| sum.saturating_add(*n));
        for (s, n) in &self.buckets {
            left = left.saturating_sub(*n);
            if left < limit_us {
                let off = epoch + Duration::from_secs(s + WINDOW_SECS);
                return off.saturating_duration_since(now);
            }
        }
        Duration::ZERO
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.buckets.is_empty()
    }
}

/// One tenant's waiting runs and CPU.
#[derive(Debug)]
struct Tenant<J> {
    queue: VecDeque<J>,
    cpu: CpuWindow,
}

impl<J> Default for Tenant<J> {
    fn default() -> Self {
        Tenant {
            queue: VecDeque::new(),
            cpu: CpuWindow::default(),
        }
    }
}

/// The runs waiting for a worker, a queue per tenant, and whose turn it is: tenants with runs
/// waiting are served round-robin ([`Queues::turns`], [`Queues::served`]), each run of a
/// tenant in the order it came.
#[derive(Debug)]
pub(crate) struct Queues<J> {
    tenants: HashMap<TenantKey, Tenant<J>>,
    /// Tenants with runs waiting, the next to be served first.
    turn: VecDeque<TenantKey>,
    len: usize,
    epoch: Instant,
    /// The entries past which the next new tenant prunes (twice what the last prune left, so
    /// a prune is paid for by as many new names as it kept).
    prune_at: usize,
}

impl<J> Default for Queues<J> {
    fn default() -> Self {
        Queues {
            tenants: HashMap::new(),
            turn: VecDeque::new(),
            len: 0,
            epoch: Instant::now(),
            prune_at: PRUNE_AT,
        }
    }
}

/// Tenants past this many entries drop those with nothing queued and no CPU in the window
/// (names an in-process host makes up must not grow the map without bound).
const PRUNE_AT: usize = 1024;

impl<J> Queues<J> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Runs of `tenant` waiting.
    pub(crate) fn queued(&self, tenant: &str) -> usize {
        self.tenants.get(tenant).map_or(0, |t| t.queue.len())
    }

    fn entry(&mut self, tenant: &TenantKey) -> &mut Tenant<J> {
        if self.tenants.len() >= self.prune_at && !self.tenants.contains_key(tenant) {
            let (epoch, now) = (self.epoch, Instant::now());
            self.tenants
                .retain(|_, t| !t.queue.is_empty() || t.cpu.spent(epoch, now) > 0);
            self.prune_at = PRUNE_AT.max(2 * self.tenants.len());
        }
        self.tenants.entry(tenant.clone()).or_default()
    }

    /// Queues `job` last in its tenant's queue (`front`: first, a run given back).
    pub(crate) fn push(&mut self, tenant: &TenantKey, job: J, front: bool) {
        let t = self.entry(tenant);
        let was_empty = t.queue.is_empty();
        if front {
            t.queue.push_front(job);
        } else {
            t.queue.push_back(job);
        }
        self.len += 1;
        if was_empty {
            if front {
                self.turn.push_front(tenant.clone());
            } else {
                self.turn.push_back(tenant.clone());
            }
        }
    }

    /// The tenants with runs waiting, in the order their turns come.
    pub(crate) fn turns(&self) -> impl Iterator<Item = &TenantKey> {
        self.turn.iter()
    }

    /// Takes the next run of `tenant`, whose turn it was: the tenant goes to the back of the
    /// turns (or leaves them, with nothing more waiting).
    pub(crate) fn served(&mut self, tenant: &str) -> Option<J> {
        let t = self.tenants.get_mut(tenant)?;
        let job = t.queue.pop_front()?;
        let left = !t.queue.is_empty();
        self.len -= 1;
        if let Some(at) = self.turn.iter().position(|k| &**k == tenant) {
            if let Some(k) = self.turn.remove(at) {
                if left {
                    self.turn.push_back(k);
                }
            }
        }
        Some(job)
    }

    /// Takes out the first run `pick` chooses, whatever its tenant.
    pub(crate) fn remove(&mut self, pick: impl Fn(&J) -> bool) -> Option<J> {
        let (key, at) = self
            .tenants
            .iter()
            .find_map(|(k, t)| t.queue.iter().position(&pick).map(|at| (k.clone(), at)))?;
        let t = self.tenants.get_mut(&key)?;
        let job = t.queue.remove(at)?;
        self.len -= 1;
        if t.queue.is_empty() {
            self.turn.retain(|k| *k != key);
        }
        Some(job)
    }

    /// Takes out every run, in turn order.
    pub(crate) fn drain(&mut self) -> Vec<J> {
        let mut out = Vec::with_capacity(self.len);
        for key in std::mem::take(&mut self.turn) {
            if let Some(t) = self.tenants.get_mut(&key) {
                out.extend(t.queue.drain(..));
            }
        }
        self.len = 0;
        out
    }

    /// Runs waiting, by tenant.
    pub(crate) fn depths(&self) -> impl Iterator<Item = (&TenantKey, usize)> {
        self.tenants.iter().map(|(k, t)| (k, t.queue.len()))
    }

    /// Charges `tenant` `cpu_us` microseconds spent now.
    pub(crate) fn charge(&mut self, tenant: &TenantKey, cpu_us: u64) {
        let epoch = self.epoch;
        self.entry(tenant).cpu.charge(epoch, Instant::now(), cpu_us);
    }

    /// `TENANT_CPU_LIMIT` when `tenant` spent its `cpuPerMinute` (its `limits`) in the last
    /// minute: a run of it may not start now.
    pub(crate) fn over_cpu(&mut self, tenant: &str, limits: TenantLimits) -> Option<Failure> {
        let limit_ms = limits.cpu_per_minute_ms?;
        let (epoch, now) = (self.epoch, Instant::now());
        let t = self.tenants.get_mut(tenant)?;
        let spent = t.cpu.spent(epoch, now);
        let limit_us = limit_ms.saturating_mul(1000);
        if spent < limit_us {
            return None;
        }
        let retry = t.cpu.retry_after(epoch, now, limit_us);
        // Whole milliseconds, rounded up: retrying at the time said always finds room.
        let retry_ms = retry.as_micros().div_ceil(1000).max(1);
        Some(FailureCode::TenantCpuLimit.failure(&[
            ("tenant", tenant),
            ("spent", &(spent / 1000).to_string()),
            ("limit", &limit_ms.to_string()),
            ("retry", &retry_ms.to_string()),
        ]))
    }

    /// Whether `tenant` has no entry worth keeping (nothing queued, no CPU in the window).
    #[cfg(test)]
    fn forgotten(&self, tenant: &str) -> bool {
        self.tenants
            .get(tenant)
            .is_none_or(|t| t.queue.is_empty() && t.cpu.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> TenantKey {
        Arc::from(s)
    }

    #[test]
    fn names_are_checked() {
        for good in ["a", "acme", "A.b_c-9", &"x".repeat(64)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", "a b", "ü", "a/b", "(none)", &"x".repeat(65)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tenants_take_turns_and_each_keeps_its_order() {
        let mut q = Queues::default();
        let (a, b) = (key("a"), key("b"));
        for i in 0..3 {
            q.push(&a, ("a", i), false);
        }
        q.push(&b, ("b", 0), false);
        let mut order = Vec::new();
        loop {
            let Some(t) = q.turns().next().cloned() else {
                break;
            };
            order.push(q.served(&t).unwrap());
        }
        assert_eq!(order, [("a", 0), ("b", 0), ("a", 1), ("a", 2)]);
        assert!(q.is_empty());
        assert_eq!(q.turns().count(), 0);
    }

    #[test]
    fn a_run_given_back_goes_first() {
        let mut q = Queues::default();
        let (a, b) = (key("a"), key("b"));
        q.push(&a, 1, false);
        q.push(&b, 2, false);
        q.push(&b, 3, true);
        // First in its tenant's queue; the tenants' turns are unchanged.
        assert_eq!(q.turns().next().map(|k| &**k), Some("a"));
        assert_eq!(q.served("b"), Some(3));
        assert_eq!(q.remove(|j| *j == 1), Some(1));
        assert_eq!(q.queued("a"), 0);
        assert_eq!(q.turns().map(|k| &**k).collect::<Vec<_>>(), ["b"]);
        assert_eq!(q.drain(), [2]);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn the_cpu_window_forgets_after_a_minute_and_says_when() {
        let epoch = Instant::now();
        let mut w = CpuWindow::default();
        w.charge(epoch, epoch, 40_000);
        w.charge(epoch, epoch + Duration::from_secs(10), 30_000);
        let at = epoch + Duration::from_secs(20);
        assert_eq!(w.spent(epoch, at), 70_000);
        // Under 50 ms once the first charge rolls off, at 60 s: 40 s from now.
        assert_eq!(w.retry_after(epoch, at, 50_000), Duration::from_secs(40));
        assert_eq!(w.spent(epoch, epoch + Duration::from_secs(61)), 30_000);
        assert_eq!(w.spent(epoch, epoch + Duration::from_secs(71)), 0);
        assert!(w.is_empty());
    }

    #[test]
    fn a_tenant_past_its_minute_is_refused_with_when_to_retry() {
        let mut q: Queues<()> = Queues::default();
        let a = key("a");
        let limits = TenantLimits {
            cpu_per_minute_ms: Some(100),
            ..TenantLimits::default()
        };
        q.charge(&a, 60_000);
        assert!(q.over_cpu("a", limits).is_none());
        q.charge(&a, 60_000);
        let f = q.over_cpu("a", limits).expect("over");
        assert_eq!(f.code, FailureCode::TenantCpuLimit);
        assert!(f.message.contains("\"a\""), "{}", f.message);
        assert!(f.message.contains("120 ms"), "{}", f.message);
        assert!(f.message.contains("100 ms"), "{}", f.message);
        assert!(q.over_cpu("b", limits).is_none());
        assert!(!q.forgotten("a"));
    }

    #[test]
    fn made_up_names_do_not_grow_the_map_without_bound() {
        let mut q: Queues<u32> = Queues::default();
        for i in 0..(PRUNE_AT * 3) {
            let k = key(&format!("t{i}"));
            q.push(&k, 1, false);
            q.served(&k);
        }
        assert!(q.tenants.len() <= PRUNE_AT, "{}", q.tenants.len());
        // Entries still in use are kept, and the next prune waits for as many new ones.
        let mut busy: Queues<u32> = Queues::default();
        for i in 0..(PRUNE_AT + 10) {
            busy.push(&key(&format!("t{i}")), 1, false);
        }
        assert_eq!(busy.tenants.len(), PRUNE_AT + 10);
        assert_eq!(busy.prune_at, 2 * PRUNE_AT);
    }

    #[test]
    fn labels_are_bounded() {
        let mut o = TenantOptions::default();
        o.named.insert("acme".into(), TenantLimits::default());
        assert_eq!(o.label("acme"), "acme");
        assert_eq!(o.label("zzz"), LABEL_OTHER);
        assert_eq!(o.label(UNNAMED), LABEL_UNNAMED);
    }
}
