//! The supervision scenarios of fake.rs, with the workers' output read the way the addon reads
//! it: a poll(2) loop (harness/mod.rs) calls `Pool::readable` whenever a worker's descriptor is
//! readable, on the non-blocking, readiness-driven path src/uv.rs drives from Node's loop.

#[path = "fake.rs"]
mod fake;

/// The reader fake.rs's scenarios run under here.
const READER: fake::harness::Reader = fake::harness::Reader::Polled;
