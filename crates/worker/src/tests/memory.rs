//! The run's memory budget under V8 15.2 with its heap sandbox: the heap limit with its
//! near-limit callback (one test per bomb shape: termination inside optimized loops is what
//! `--no-turboshaft-loop-unrolling` keeps reliable), the metered allocator that places buffers
//! inside the sandbox and charges them to the same budget, and what the worker itself creates
//! for the program (a tool's answer) when the budget cannot take it.

use codemode_protocol::{HostMsg, WorkerMsg};

use super::{execute, no_host, provider, request, Ran};

const LIMIT_MIB: u32 = 32;

fn limited(code: &str) -> Ran {
    let mut req = request(code);
    req.memory_limit_mib = LIMIT_MIB;
    execute(req, no_host)
}

fn ended_at_the_limit(ran: &Ran) {
    let (code, message) = ran.error();
    assert_eq!(code, "MEMORY_LIMIT", "{message}");
    assert!(message.contains(&LIMIT_MIB.to_string()), "{message}");
}

#[test]
fn heap_bombs_of_every_loop_shape_end_at_the_limit() {
    for code in [
        // The shape Turboshaft's loop unrolling once made deaf to termination.
        "async () => { const a = []; while (true) a.push(new Array(1000)) }",
        "async () => { const a = []; for (let i = 0; ; i++) a.push({ i, s: 'x' + i }) }",
        // Flattened each time (a cons string of itself would cost nothing).
        "async () => { let s = 'ab'; for (;;) s = (s + s + '!').slice(1) }",
        "async () => { const m = new Map(); for (let i = 0; ; i++) m.set(i, [i, i, i]) }",
    ] {
        ended_at_the_limit(&limited(code));
    }
}

/// One allocation past the limit that succeeds on the headroom granted to stop the run, and a
/// run that returns before the termination is seen: still the memory failure, never a result.
#[test]
fn a_run_that_passed_its_limit_and_returned_at_once_is_a_memory_failure() {
    let ran = limited("async () => { const a = new Array(12e6).fill(1.5); return a.length }");
    ended_at_the_limit(&ran);
}

#[test]
fn buffers_count_against_the_budget_and_a_refusal_is_catchable() {
    // Inside the budget: metered, and returned to the meter.
    let ran = limited("async () => new Uint8Array(8 << 20).length");
    assert_eq!(ran.json.as_deref(), Some("8388608"));
    assert!(ran.outcome.stats.buffers_peak >= 8 << 20);
    // Past it: a RangeError the program may catch and get past...
    let ran = limited(
        "async () => { try { new Uint8Array(100 << 20); return 'allocated' } \
         catch (e) { return e.constructor.name } }",
    );
    assert_eq!(
        ran.json.as_deref(),
        Some("\"RangeError\""),
        "{:?}",
        ran.outcome.error
    );
    // ...or not, and the run ends in the memory failure.
    ended_at_the_limit(&limited("async () => new Uint8Array(100 << 20).length"));
    // Many buffers stop at the limit too.
    ended_at_the_limit(&limited(
        "async () => { const a = []; for (;;) a.push(new ArrayBuffer(1 << 20)) }",
    ));
}

/// A V8-serialized ArrayBuffer of `len` zero bytes, as Node's serializer writes it: the header
/// (format 15), the ArrayBuffer tag, the length as a varint, the bytes.
fn serialized_buffer(len: usize) -> Vec<u8> {
    let mut out = vec![0xFF, 0x0F, b'B'];
    let mut n = len;
    loop {
        let byte = (n & 0x7F) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
    out.resize(out.len() + len, 0);
    out
}

/// A tool's answer holding more buffer bytes than the run may have: V8 would abort the process
/// if a buffer the worker creates were refused the hard way; the answer is refused as unreadable
/// instead, the program sees a rejection it can catch, and the worker runs on.
#[test]
fn a_tool_answer_past_the_budget_is_refused_not_fatal() {
    let ran = answered_with(
        "async () => { try { const b = await t.big(); return b.byteLength } \
         catch (e) { return 'rejected: ' + e.message } }",
        48 << 20,
    );
    assert_eq!(ran.outcome.error, None, "{:?}", ran.sent);
    let json = ran.json.as_deref().unwrap_or_default();
    assert!(json.starts_with("\"rejected: "), "{json}");
    // The same answer inside the budget is read.
    let ran = answered_with("async () => (await t.big()).byteLength", 1 << 20);
    assert_eq!(ran.json.as_deref(), Some("1048576"));
}

/// Runs `code` under [`LIMIT_MIB`] with a tool `t.big` that answers an ArrayBuffer of `len`
/// bytes.
fn answered_with(code: &str, len: usize) -> Ran {
    let mut req = request(code);
    req.memory_limit_mib = LIMIT_MIB;
    req.providers = vec![provider("t", Some(&["big"]))];
    execute(req, move |msg| match msg {
        WorkerMsg::ToolCall {
            exec_id, call_id, ..
        } => vec![HostMsg::ToolResult {
            exec_id: *exec_id,
            call_id: *call_id,
            ok: true,
            payload: serialized_buffer(len),
        }],
        _ => Vec::new(),
    })
}

/// V8 15.2 lets one allocation of an array of small integers pass the heap's limit without a
/// collection (no near-limit callback: the heap measured 120 MiB under a 64 MiB limit); the
/// worker's own sample of the heap ends such a run (memory.rs, `sample_heap`).
#[test]
fn one_array_of_small_integers_past_the_limit_is_a_memory_failure() {
    for code in [
        "async () => JSON.parse('[' + '1,'.repeat(2e7) + '1]').length",
        "async () => new Array(2e7).fill(1).length",
        "async () => { const a = new Array(2e7).fill(1); await null; return a.length }",
        "async () => { const a = new Array(2e7).fill(1); await new Promise((r) => setTimeout(r, 5)); return a.length }",
    ] {
        let mut req = request(code);
        req.memory_limit_mib = 64;
        let ran = execute(req, no_host);
        let (code, message) = ran.error();
        assert_eq!(code, "MEMORY_LIMIT", "{message}");
    }
    // Under the limit, the same shape runs.
    let mut req = request("async () => new Array(4e6).fill(1).length");
    req.memory_limit_mib = 64;
    assert_eq!(execute(req, no_host).json.as_deref(), Some("4000000"));
}
