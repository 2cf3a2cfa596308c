//! Approvals (docs/approvals.md): tool calls that wait for a person's yes.

use crate::Inner;

/// A replayable run has nothing to do until the host answers (`WorkerMsg::Idle`).
pub(crate) fn idle(_inner: &Inner, _exec_id: u64) {}
