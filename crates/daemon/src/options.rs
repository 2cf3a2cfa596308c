//! The daemon's own options beyond the pool's: the range each may take and the default an
//! omitted one gets. [`Bounds::default`](crate::Bounds) is built from them, and the addon hands
//! them to `serve()`'s validation and the CLI's usage text (`limits().serve`), so no layer holds
//! a copy of a number. The pool's options are `codemode_protocol::limits::options`.

use std::ops::RangeInclusive;

/// The port to listen on; 0 picks a free one.
pub const PORT: RangeInclusive<u64> = 0..=65_535;
/// The default [`PORT`].
pub const DEFAULT_PORT: u64 = 8_080;
/// Requests in flight one connection may have.
pub const MAX_IN_FLIGHT: RangeInclusive<u64> = 1..=65_536;
/// The default [`MAX_IN_FLIGHT`].
pub const DEFAULT_MAX_IN_FLIGHT: u64 = 1_024;
/// WebSocket connections open at once, over every client.
pub const MAX_CONNECTIONS: RangeInclusive<u64> = 1..=1_000_000;
/// The default [`MAX_CONNECTIONS`].
pub const DEFAULT_MAX_CONNECTIONS: u64 = 1_024;
/// WebSocket connections open at once from one address (an IPv6 client's /64).
pub const MAX_CONNECTIONS_PER_ADDRESS: RangeInclusive<u64> = 1..=1_000_000;
/// The default [`MAX_CONNECTIONS_PER_ADDRESS`].
pub const DEFAULT_MAX_CONNECTIONS_PER_ADDRESS: u64 = 64;
/// How long an upgraded connection may take to send `hello`, in milliseconds.
pub const HELLO_TIMEOUT_MS: RangeInclusive<u64> = 1..=3_600_000;
/// The default [`HELLO_TIMEOUT_MS`].
pub const DEFAULT_HELLO_TIMEOUT_MS: u64 = 10_000;
/// How long an idle connection may stay silent, in milliseconds; 0: forever.
pub const IDLE_TIMEOUT_MS: RangeInclusive<u64> = 0..=2_147_483_647;
/// The default [`IDLE_TIMEOUT_MS`].
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 300_000;
/// The largest message a client may send: at least the largest payload (16 MiB) with room
/// for its header, at most 1 GiB.
pub const MAX_MESSAGE_BYTES: RangeInclusive<u64> = 17 * 1024 * 1024..=1024 * 1024 * 1024;
/// The default [`MAX_MESSAGE_BYTES`] (`wire::MAX_MESSAGE_BYTES`).
pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = crate::wire::MAX_MESSAGE_BYTES as u64;

/// Every option above by the name `serve()` gives it: its range and its default.
pub const TABLE: &[(&str, RangeInclusive<u64>, u64)] = &[
    ("port", PORT, DEFAULT_PORT),
    ("maxInFlight", MAX_IN_FLIGHT, DEFAULT_MAX_IN_FLIGHT),
    ("maxConnections", MAX_CONNECTIONS, DEFAULT_MAX_CONNECTIONS),
    (
        "maxConnectionsPerAddress",
        MAX_CONNECTIONS_PER_ADDRESS,
        DEFAULT_MAX_CONNECTIONS_PER_ADDRESS,
    ),
    ("helloTimeout", HELLO_TIMEOUT_MS, DEFAULT_HELLO_TIMEOUT_MS),
    ("idleTimeout", IDLE_TIMEOUT_MS, DEFAULT_IDLE_TIMEOUT_MS),
    (
        "maxMessageBytes",
        MAX_MESSAGE_BYTES,
        DEFAULT_MAX_MESSAGE_BYTES,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_lies_in_its_range() {
        for (name, range, default) in TABLE {
            assert!(
                range.contains(default),
                "{name}: {default} outside {range:?}"
            );
        }
    }

    #[test]
    fn the_default_bounds_are_the_table_s() {
        let b = crate::Bounds::default();
        assert_eq!(u64::from(b.max_connections), DEFAULT_MAX_CONNECTIONS);
        assert_eq!(
            u64::from(b.max_connections_per_address),
            DEFAULT_MAX_CONNECTIONS_PER_ADDRESS
        );
        assert_eq!(
            b.hello_timeout.as_millis(),
            u128::from(DEFAULT_HELLO_TIMEOUT_MS)
        );
        assert_eq!(
            b.idle_timeout.map(|t| t.as_millis()),
            Some(u128::from(DEFAULT_IDLE_TIMEOUT_MS))
        );
        assert_eq!(b.max_message_bytes as u64, DEFAULT_MAX_MESSAGE_BYTES);
    }
}
