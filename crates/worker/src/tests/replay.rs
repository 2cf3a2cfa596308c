//! Replayable runs (docs/runtime.md, "Replayable runs (approvals)"): the seeded randomness, the
//! logical clock, and the Idle frames the host pauses at.

use codemode_protocol::{ExecuteRequest, Replayable, WorkerMsg};

use super::{echo, execute, execute_in_turn, provider, request, Ran};

/// 2001-09-09T01:46:40Z: far from the host's clock, so reading the real one shows.
const EPOCH_MS: u64 = 1_000_000_000_000;

fn replayable(code: &str, seed: u64) -> ExecuteRequest {
    let mut req = request(code);
    req.replayable = Some(Replayable {
        seed,
        epoch_ms: EPOCH_MS,
    });
    req.providers = vec![provider("t", Some(&["echo"]))];
    req
}

fn json(ran: &Ran) -> serde_json::Value {
    assert_eq!(ran.outcome.error, None);
    serde_json::from_str(ran.json.as_deref().expect("a result")).expect("JSON")
}

/// Every source a replayable run seeds, read before and after a timer and a tool call.
const READS: &str = "async () => {
    const read = () => ({
        random: [Math.random(), Math.random(), Math.random(), Math.random(), Math.random()],
        uuid: crypto.randomUUID(),
        bytes: [...crypto.getRandomValues(new Uint8Array(16))],
        now: Date.now(),
        date: new Date().getTime(),
        perf: performance.now(),
    });
    const reads = [read()];
    await new Promise((r) => setTimeout(r, 20));
    reads.push(read());
    await t.echo(1);
    reads.push(read());
    return reads;
}";

#[test]
fn the_same_replayable_reads_the_same_values_and_another_seed_other_randomness() {
    let first = json(&execute(replayable(READS, 7), echo));
    let second = json(&execute(replayable(READS, 7), echo));
    assert_eq!(
        first, second,
        "the same seed and epoch read the same values"
    );
    let other = json(&execute(replayable(READS, 8), echo));
    for (a, b) in first
        .as_array()
        .unwrap()
        .iter()
        .zip(other.as_array().unwrap())
    {
        for source in ["random", "uuid", "bytes"] {
            assert_ne!(a[source], b[source], "{source} is seeded");
        }
        // The clock is the seed's neither: the same epoch, the same reads.
        for source in ["now", "date", "perf"] {
            assert_eq!(a[source], b[source], "{source}");
        }
    }
    let reads = first.as_array().unwrap();
    let randoms: Vec<f64> = reads[0]["random"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert!(
        randoms.iter().all(|x| (0.0..1.0).contains(x)),
        "{randoms:?}"
    );
    assert_ne!(reads[0]["random"], reads[1]["random"]);
    let uuid = reads[0]["uuid"].as_str().unwrap();
    assert_eq!(&uuid[14..15], "4", "a v4 UUID: {uuid}");
    // The clock: from the epoch, strictly increasing, past the timer's 20 ms.
    let now = |i: usize, k: &str| reads[i][k].as_f64().unwrap();
    assert_eq!(now(0, "now"), EPOCH_MS as f64);
    assert!(now(0, "now") <= now(0, "date") && now(0, "perf") > 0.0);
    assert!(now(1, "now") >= now(0, "now") + 20.0);
    assert!(now(1, "perf") >= 20.0 && now(2, "perf") > now(1, "perf"));
}

#[test]
fn the_clock_starts_at_the_epoch_and_each_read_advances_it_a_microsecond() {
    let code = "async () => [
        Date.now(), performance.now(), performance.timeOrigin, new Date().getTime(),
        Date() === new Date(1000000000000).toString(), performance.now(),
        new Date(5).getTime(), new Date() instanceof Date, Object.getPrototypeOf(new Date()) === Date.prototype,
        new Intl.DateTimeFormat('en-US', { timeZone: 'UTC', year: 'numeric' }).format(),
        ((f) => f.format === f.format)(new Intl.DateTimeFormat()),
    ]";
    let reads = json(&execute(replayable(code, 1), echo));
    assert_eq!(
        reads,
        serde_json::json!([
            EPOCH_MS, 0.001, EPOCH_MS, EPOCH_MS, true, 0.004, 5, true, true, "2001", true
        ])
    );
}

/// Temporal.Now reads the same logical clock as Date: a replay sees the same instants.
#[test]
fn temporal_now_reads_the_logical_clock() {
    let code = "async () => {
        const i = Temporal.Now.instant().epochMilliseconds, d = Date.now();
        return [
            Math.abs(i - d) < 1, i >= 1000000000000, i < 1000000000010,
            Temporal.Now.zonedDateTimeISO('UTC').year,
            Temporal.Now.plainDateISO('UTC').toString(),
            Temporal.Now.plainDateTimeISO('UTC').toString().slice(0, 16),
            typeof Temporal.Now.plainTimeISO('UTC').hour,
            typeof Temporal.Now.timeZoneId(),
        ];
    }";
    let reads = json(&execute(replayable(code, 1), echo));
    assert_eq!(
        reads,
        serde_json::json!([
            true,
            true,
            true,
            2001,
            "2001-09-09",
            "2001-09-09T01:46",
            "number",
            "string"
        ])
    );
}

#[test]
fn a_timer_advances_the_clock_by_its_delay_and_a_busy_wait_on_it_ends() {
    let code = "async () => {
        const a = Date.now(), p = performance.now();
        await new Promise((r) => setTimeout(r, 100));
        const waited = [Date.now() - a, performance.now() - p];
        const t = Date.now();
        let reads = 0;
        while (Date.now() < t + 50) reads++;
        return { waited, reads };
    }";
    let ran = json(&execute(replayable(code, 1), echo));
    let waited = ran["waited"].as_array().unwrap();
    assert!(
        waited.iter().all(|w| w.as_f64().unwrap() >= 100.0),
        "{waited:?}"
    );
    assert!(waited[0].as_f64().unwrap() < 110.0, "{waited:?}");
    // 50 ms of 1 µs reads, whatever the CPU: the clock is the reads'.
    let reads = ran["reads"].as_u64().unwrap();
    assert!((49_000..=50_000).contains(&reads), "{reads}");
}

#[test]
fn timers_fire_in_the_order_of_their_logical_deadlines() {
    // The host takes 60 ms (real) to answer, which the clock does not count: `b`, set after the
    // answer, is due at logical 80 ms, before `a` (100 ms), though its real deadline (140 ms) is
    // after a's. A replay whose answers come at once fires them in the same order.
    let code = "async () => {
        const order = [];
        const a = new Promise((r) => setTimeout(() => { order.push('a'); r() }, 100));
        await t.echo(1);
        const b = new Promise((r) => setTimeout(() => { order.push('b'); r() }, 80));
        await Promise.all([a, b]);
        return order;
    }";
    let slow_host = |msg: &WorkerMsg| {
        if matches!(msg, WorkerMsg::ToolCall { .. }) {
            std::thread::sleep(std::time::Duration::from_millis(60));
        }
        echo(msg)
    };
    assert_eq!(
        json(&execute(replayable(code, 1), slow_host)),
        serde_json::json!(["b", "a"])
    );
}

#[test]
fn a_plain_run_after_a_replayable_one_reads_the_real_clock_and_unseeded_randomness() {
    let code =
        "async () => [Date.now(), Math.random(), crypto.randomUUID(), performance.timeOrigin]";
    let plain = || request(code);
    let ran = execute_in_turn(
        vec![replayable(code, 3), plain(), replayable(code, 3), plain()],
        echo,
    );
    let reads: Vec<serde_json::Value> = ran.iter().map(json).collect();
    assert_eq!(reads[0], reads[2], "replayable: the same values");
    assert_eq!(reads[0][0], EPOCH_MS);
    let host_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as f64;
    for plain in [&reads[1], &reads[3]] {
        for at in [0, 3] {
            let ms = plain[at].as_f64().unwrap();
            assert!(
                (ms - host_ms).abs() < 5_000.0,
                "{ms} vs the host's {host_ms}"
            );
        }
    }
    assert_ne!(reads[1][1], reads[3][1], "Math.random is not seeded");
    assert_ne!(reads[1][2], reads[3][2], "randomUUID is not seeded");
}

/// Where in the frames the run sent are those `which` picks.
fn positions(ran: &Ran, which: impl Fn(&WorkerMsg) -> bool) -> Vec<usize> {
    ran.sent
        .iter()
        .enumerate()
        .filter(|(_, m)| which(m))
        .map(|(i, _)| i)
        .collect()
}

fn idles(ran: &Ran) -> Vec<usize> {
    positions(
        ran,
        |m| matches!(m, WorkerMsg::Idle { exec_id } if *exec_id == super::EXEC_ID),
    )
}

#[test]
fn a_replayable_run_says_once_it_waits_for_the_calls_of_a_turn_and_once_after_them() {
    let code = "async () => {
        const [a, b] = await Promise.all([t.echo(1), t.echo(2)]);
        await new Promise((r) => setTimeout(r, 5));
        return a[0] + b[0];
    }";
    let ran = execute(replayable(code, 1), echo);
    assert_eq!(ran.json.as_deref(), Some("3"));
    let calls = positions(&ran, |m| matches!(m, WorkerMsg::ToolCall { .. }));
    // Both calls, then Idle (the answers come after it: the double answers what it read); each
    // wake from that wait says Awake before the program runs on (an answer, then the other,
    // then the timer), and the wait after it says Idle again, so a host that rested the run's
    // bound at an Idle has it running whenever the program computes.
    assert_eq!(calls, [0, 1]);
    assert_eq!(idles(&ran), [2, 4, 6], "{:?}", ran.sent);
    let awakes = positions(&ran, |m| matches!(m, WorkerMsg::Awake { .. }));
    assert_eq!(awakes, [3, 5, 7], "{:?}", ran.sent);
    // A run that makes no call and waits for a timer only says nothing.
    let ran = execute(
        replayable(
            "async () => { await new Promise((r) => setTimeout(r, 5)); return 1 }",
            1,
        ),
        echo,
    );
    assert_eq!(idles(&ran), Vec::<usize>::new());
    // The same program, not replayable: no Idle at all.
    let mut req = replayable(code, 1);
    req.replayable = None;
    let ran = execute(req, echo);
    assert_eq!(ran.json.as_deref(), Some("3"));
    assert_eq!(ran.sent.len(), 2, "{:?}", ran.sent);
    assert_eq!(idles(&ran), Vec::<usize>::new());
}
