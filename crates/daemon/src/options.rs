//! The daemon's own options beyond the pool's: the range each may take and the default an
//! omitted one gets. [`Bounds::default`](crate::Bounds) is built from them, and the addon hands
//! them to `serve()`'s validation and the CLI's usage text (`limits().serve`), so no layer holds
//! a copy of a number. The pool's options are `codemode_protocol::limits::options`; the budget
//! ceilings take the ranges of the budgets they cap from there.

use std::ops::RangeInclusive;

use codemode_pool::protocol::limits::options as run;

/// One option: the name `serve()` gives it, the range it may take, the default an omitted one
/// gets (`None`: an omitted one is no setting at all, as a budget ceiling left out is none).
pub struct Opt {
    pub name: &'static str,
    pub range: RangeInclusive<u64>,
    pub default: Option<u64>,
}

impl Opt {
    /// The default of an option that has one. Used in const context (`const { ... }`), so an
    /// option without one is a build error, never a runtime one.
    pub const fn fixed_default(&self) -> u64 {
        match self.default {
            Some(d) => d,
            None => panic!("this option has no default"),
        }
    }
}

const fn opt(name: &'static str, range: RangeInclusive<u64>, default: u64) -> Opt {
    Opt {
        name,
        range,
        default: Some(default),
    }
}

/// A ceiling on what a request may ask for, with no default: left out, there is no ceiling.
const fn ceiling(name: &'static str, range: RangeInclusive<u64>) -> Opt {
    Opt {
        name,
        range,
        default: None,
    }
}

/// The port to listen on; 0 picks a free one.
pub const PORT: Opt = opt("port", 0..=65_535, 8_080);
/// Requests in flight one connection may have.
pub const MAX_IN_FLIGHT: Opt = opt("maxInFlight", 1..=65_536, 1_024);
/// WebSocket connections open at once, over every client.
pub const MAX_CONNECTIONS: Opt = opt("maxConnections", 1..=1_000_000, 1_024);
/// WebSocket connections open at once from one address (an IPv6 client's /64).
pub const MAX_CONNECTIONS_PER_ADDRESS: Opt = opt("maxConnectionsPerAddress", 1..=1_000_000, 64);
/// How long an upgraded connection may take to send `hello`, in milliseconds.
pub const HELLO_TIMEOUT_MS: Opt = opt("helloTimeout", 1..=3_600_000, 10_000);
/// How long an idle connection may stay silent, in milliseconds; 0: forever.
pub const IDLE_TIMEOUT_MS: Opt = opt("idleTimeout", 0..=2_147_483_647, 300_000);
/// The largest message a client may send: at least the largest payload (16 MiB) with room
/// for its header, at most 1 GiB; by default `wire::MAX_MESSAGE_BYTES`.
pub const MAX_MESSAGE_BYTES: Opt = opt(
    "maxMessageBytes",
    17 * 1024 * 1024..=1024 * 1024 * 1024,
    crate::wire::MAX_MESSAGE_BYTES as u64,
);

/// The most CPU (ms) a request's `cpuLimit` may ask for, and what one without it gets
/// (`serve --cpu-limit`). The range is the request's own.
pub const CPU_LIMIT_MS: Opt = ceiling("cpuLimit", run::CPU_LIMIT_MS);
/// The most tool calls a request's `toolCallLimit` may ask for, and what one without it gets
/// (`serve --tool-call-limit`).
pub const TOOL_CALL_LIMIT: Opt = ceiling("toolCallLimit", run::TOOL_CALL_LIMIT);
/// The most fetches a request's `fetchLimit` may ask for, and what one without it gets
/// (`serve --fetch-limit`).
pub const FETCH_LIMIT: Opt = ceiling("fetchLimit", run::FETCH_LIMIT);

/// The most time (ms) a callback-mode run's `approval.timeout` may give one decision, and
/// what one that names none gets when it is below the request default (`serve
/// --approval-timeout`). While a run waits on decisions only its time bound rests (its worker
/// stays held), so this bounds how long a caller may hold a worker waiting for a person.
pub const APPROVAL_TIMEOUT_MS: Opt = opt(
    "approvalTimeout",
    run::APPROVAL_TIMEOUT_MS,
    run::DEFAULT_APPROVAL_TIMEOUT_MS,
);

/// Every option above.
pub const TABLE: &[Opt] = &[
    PORT,
    MAX_IN_FLIGHT,
    MAX_CONNECTIONS,
    MAX_CONNECTIONS_PER_ADDRESS,
    HELLO_TIMEOUT_MS,
    IDLE_TIMEOUT_MS,
    MAX_MESSAGE_BYTES,
    CPU_LIMIT_MS,
    TOOL_CALL_LIMIT,
    FETCH_LIMIT,
    APPROVAL_TIMEOUT_MS,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_lies_in_its_range() {
        for o in TABLE {
            if let Some(default) = o.default {
                assert!(o.range.contains(&default), "{}: outside its range", o.name);
            }
        }
    }

    #[test]
    fn the_default_bounds_are_the_table_s() {
        let b = crate::Bounds::default();
        let ms = |o: &Opt| o.default.map(u128::from);
        assert_eq!(Some(u64::from(b.max_connections)), MAX_CONNECTIONS.default);
        let per_address = u64::from(b.max_connections_per_address);
        assert_eq!(Some(per_address), MAX_CONNECTIONS_PER_ADDRESS.default);
        assert_eq!(Some(b.hello_timeout.as_millis()), ms(&HELLO_TIMEOUT_MS));
        assert_eq!(b.idle_timeout.map(|t| t.as_millis()), ms(&IDLE_TIMEOUT_MS));
        assert_eq!(Some(b.max_message_bytes as u64), MAX_MESSAGE_BYTES.default);
    }

    #[test]
    fn a_budget_ceiling_takes_the_budget_s_range_and_has_no_default() {
        for (o, range) in [
            (CPU_LIMIT_MS, run::CPU_LIMIT_MS),
            (TOOL_CALL_LIMIT, run::TOOL_CALL_LIMIT),
            (FETCH_LIMIT, run::FETCH_LIMIT),
        ] {
            assert_eq!(o.range, range, "{}", o.name);
            assert_eq!(o.default, None, "{}", o.name);
        }
    }
}
