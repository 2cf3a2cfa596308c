//! The daemon's own options beyond the pool's: the range each may take and the default an
//! omitted one gets. [`Bounds::default`](crate::Bounds) is built from them, and the addon hands
//! them to `serve()`'s validation and the CLI's usage text (`limits().serve`), so no layer holds
//! a copy of a number. The pool's options are `codemode_protocol::limits::options`.

use std::ops::RangeInclusive;

/// One option: the name `serve()` gives it, the range it may take, the default an omitted one
/// gets.
pub struct Opt {
    pub name: &'static str,
    pub range: RangeInclusive<u64>,
    pub default: u64,
}

const fn opt(name: &'static str, range: RangeInclusive<u64>, default: u64) -> Opt {
    Opt {
        name,
        range,
        default,
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

/// Every option above.
pub const TABLE: &[Opt] = &[
    PORT,
    MAX_IN_FLIGHT,
    MAX_CONNECTIONS,
    MAX_CONNECTIONS_PER_ADDRESS,
    HELLO_TIMEOUT_MS,
    IDLE_TIMEOUT_MS,
    MAX_MESSAGE_BYTES,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_lies_in_its_range() {
        for o in TABLE {
            assert!(
                o.range.contains(&o.default),
                "{}: outside its range",
                o.name
            );
        }
    }

    #[test]
    fn the_default_bounds_are_the_table_s() {
        let b = crate::Bounds::default();
        let ms = |o: &Opt| Some(u128::from(o.default));
        assert_eq!(u64::from(b.max_connections), MAX_CONNECTIONS.default);
        let per_address = u64::from(b.max_connections_per_address);
        assert_eq!(per_address, MAX_CONNECTIONS_PER_ADDRESS.default);
        assert_eq!(Some(b.hello_timeout.as_millis()), ms(&HELLO_TIMEOUT_MS));
        assert_eq!(b.idle_timeout.map(|t| t.as_millis()), ms(&IDLE_TIMEOUT_MS));
        assert_eq!(b.max_message_bytes as u64, MAX_MESSAGE_BYTES.default);
    }
}
