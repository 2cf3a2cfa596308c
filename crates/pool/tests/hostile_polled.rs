//! The hostile-worker scenarios of hostile.rs, with the workers' output read the way the addon
//! reads it: a poll(2) loop (harness/mod.rs) calls `Pool::readable` whenever a worker's
//! descriptor is readable, so a hostile worker's frames meet the readiness-driven reader too.

#[path = "hostile.rs"]
mod hostile;

/// The reader hostile.rs's scenarios run under here.
const READER: hostile::harness::Reader = hostile::harness::Reader::Polled;
