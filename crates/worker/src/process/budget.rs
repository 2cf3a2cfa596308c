//! The CPU budget (`ExecuteRequest::cpu_limit_ms`): what the main thread and the cancel thread
//! share to enforce it, and the V8 interrupt that checks it.
//!
//! What counts is the CPU of the thread running the program (`CLOCK_THREAD_CPUTIME_ID`) from
//! the run's start to its end, or an invocation's: waiting for the host or a timer costs that
//! thread none (the poll for an answer before it sleeps is set aside: `process::spun`). Only the main thread may read its own CPU clock (the jail refuses another
//! thread's), so the cancel thread times the checks by wall time, which never runs slower than
//! the thread's CPU: at `since` the run had `left` to spend, so it cannot have spent it before
//! `since + left`. Then the cancel thread asks V8 for an interrupt; its callback runs on the
//! main thread at V8's next check, reads the thread's CPU, and either terminates the run (the
//! budget is spent) or tells the cancel thread how much is left, which it waits for next.
//! The overshoot is the time to V8's next interrupt check.

use std::ffi::c_void;
use std::time::Duration;

use crate::process::io::CurrentRun;
use crate::process::work_cpu_us;

/// The main thread's side, in an isolate slot while a budget is armed.
struct Meter {
    current: CurrentRun,
    generation: u64,
    limit_us: u64,
    start_us: u64,
    spent: bool,
}

/// What a budget counted, once disarmed.
pub struct Counted {
    /// CPU of the run's thread while the budget was armed.
    pub cpu_us: u64,
    /// The budget was spent and the run terminated for it.
    pub spent: bool,
}

/// Starts counting `limit_ms` of the calling thread's CPU for the execution in `isolate`; a
/// no-op without a limit.
pub fn arm(isolate: &mut v8::Isolate, current: &CurrentRun, limit_ms: Option<u32>) {
    let Some(limit_ms) = limit_ms else {
        return;
    };
    let limit_us = u64::from(limit_ms) * 1000;
    let start_us = work_cpu_us();
    let generation = current.arm_budget(Duration::from_micros(limit_us), check);
    isolate.set_slot(Meter {
        current: current.clone(),
        generation,
        limit_us,
        start_us,
        spent: false,
    });
}

/// Stops counting; `None` when no budget was armed.
pub fn disarm(isolate: &mut v8::Isolate, current: &CurrentRun) -> Option<Counted> {
    let meter = isolate.remove_slot::<Meter>()?;
    current.disarm_budget(meter.generation);
    Some(Counted {
        cpu_us: work_cpu_us().saturating_sub(meter.start_us),
        spent: meter.spent,
    })
}

/// The interrupt the cancel thread asks for (io.rs, `CurrentRun`): runs on the main thread,
/// between two steps of its JavaScript.
unsafe extern "C" fn check(mut isolate: v8::UnsafeRawIsolatePtr, data: *mut c_void) {
    // SAFETY: V8 runs an interrupt on the isolate's own thread, with the (non-null) isolate
    // that requested it, alive for the call.
    let isolate = unsafe { v8::Isolate::ref_from_raw_isolate_ptr_mut(&mut isolate) };
    let generation = data as usize as u64;
    let Some(meter) = isolate.get_slot_mut::<Meter>() else {
        return;
    };
    if meter.generation != generation {
        return;
    }
    let spent_us = work_cpu_us().saturating_sub(meter.start_us);
    if spent_us >= meter.limit_us {
        meter.spent = true;
        meter.current.disarm_budget(generation);
        isolate.terminate_execution();
    } else {
        let left = Duration::from_micros(meter.limit_us - spent_us);
        meter.current.budget_left(generation, left);
    }
}
