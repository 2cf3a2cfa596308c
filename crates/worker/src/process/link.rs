//! The run's link to the host: answers come in through a [`HostInput`], requests go out through
//! an [`Outbox`]. The worker uses its pipes (`io::Input`, `io::send`); tests use memory.

use std::time::Duration;

use codemode_protocol::WorkerMsg;

use crate::process::io::{Input, Next};

/// Frames from the host, as the run loop waits for them.
pub trait HostInput {
    /// The next message, waiting at most `wait` (forever when `None`) for one to start.
    /// `answers`: the run has calls the host is to answer (the wait may poll for one first).
    fn next_within(&mut self, wait: Option<Duration>, answers: bool) -> Next;
}

impl HostInput for Input {
    fn next_within(&mut self, wait: Option<Duration>, answers: bool) -> Next {
        Input::next_within(self, wait, answers)
    }
}

/// Writes one frame to the host. A plain function pointer: natives reach it through the run's
/// state, and the worker's (`io::send`) costs one indirect call over calling it by name.
pub type Outbox = fn(&WorkerMsg);
