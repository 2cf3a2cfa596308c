//! The frame layout: every message survives a round trip, the Hello layout is frozen, and
//! malformed input is refused, never panicked on. (One file per subject: the strategies cover
//! every message, so it grows with the protocol.)

use codemode_protocol::frame::read_frame;
use codemode_protocol::messages::HELLO_TAG;
use codemode_protocol::{
    Budgets, ExecuteRequest, Grant, HostMsg, LogEntry, LogLevel, Outbound, ProviderDecl, Redirect,
    Replayable, RunError, RunOutcome, RunStats, SourceLocation, WireRequest, WireResponse,
    WorkerMsg, PROTOCOL_VERSION,
};
use proptest::prelude::*;

mod samples;

fn body(frame: &[u8]) -> Vec<u8> {
    let mut buf = Vec::new();
    assert!(read_frame(&mut &frame[..], &mut buf).unwrap());
    assert_eq!(buf.len() + 4, frame.len(), "one frame, nothing after it");
    buf
}

fn roundtrip_host(m: &HostMsg) {
    assert_eq!(HostMsg::decode(&body(&m.encode().unwrap())).as_ref(), Ok(m));
}

fn roundtrip_worker(m: &WorkerMsg) {
    assert_eq!(
        WorkerMsg::decode(&body(&m.encode().unwrap())).as_ref(),
        Ok(m)
    );
}

// ---- strategies ----

fn text() -> impl Strategy<Value = String> {
    ".{0,12}"
}

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..48)
}

fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec((text(), text()), 0..3)
}

fn outbound() -> impl Strategy<Value = Outbound> {
    prop_oneof![
        Just(Outbound::Native),
        Just(Outbound::Blocked),
        Just(Outbound::Routed),
        Just(Outbound::Public)
    ]
}

fn response() -> impl Strategy<Value = WireResponse> {
    (
        any::<u16>(),
        text(),
        headers(),
        prop::option::of(bytes()),
        text(),
        any::<bool>(),
    )
        .prop_map(
            |(status, status_text, headers, body, url, redirected)| WireResponse {
                status,
                status_text,
                headers,
                body,
                url,
                redirected,
            },
        )
}

fn redirect() -> impl Strategy<Value = Redirect> {
    prop_oneof![
        Just(Redirect::Follow),
        Just(Redirect::Error),
        Just(Redirect::Manual)
    ]
}

fn request() -> impl Strategy<Value = WireRequest> {
    (
        text(),
        text(),
        headers(),
        prop::option::of(bytes()),
        redirect(),
    )
        .prop_map(|(method, url, headers, body, redirect)| WireRequest {
            method,
            url,
            headers,
            body,
            redirect,
        })
}

fn host_msg() -> impl Strategy<Value = HostMsg> {
    let provider = (
        text(),
        prop::option::of(prop::collection::vec(text(), 0..3)),
    )
        .prop_map(|(name, tools)| ProviderDecl { name, tools });
    let execute = (
        any::<u64>(),
        text(),
        prop::collection::vec((text(), text()), 0..3),
        prop::collection::vec(provider, 0..3),
        any::<u32>(),
        outbound(),
        any::<(bool, bool)>(),
        any::<(Option<u32>, Option<u32>, Option<u32>)>(),
        any::<Option<(u64, u64)>>(),
    )
        .prop_map(
            |(
                exec_id,
                code,
                modules,
                providers,
                memory_limit_mib,
                outbound,
                (retain_handles, live_logs),
                (cpu_limit_ms, tool_call_limit, fetch_limit),
                replay,
            )| {
                HostMsg::Execute(ExecuteRequest {
                    exec_id,
                    code,
                    modules,
                    providers,
                    memory_limit_mib,
                    outbound,
                    retain_handles,
                    live_logs,
                    budgets: Budgets {
                        cpu_limit_ms,
                        tool_call_limit,
                        fetch_limit,
                    },
                    replayable: replay.map(|(seed, epoch_ms)| Replayable { seed, epoch_ms }),
                    hops: false,
                })
            },
        );
    let request = request();
    prop_oneof![
        execute,
        (any::<u64>(), any::<u32>(), any::<bool>(), bytes()).prop_map(
            |(exec_id, call_id, ok, payload)| HostMsg::ToolResult {
                exec_id,
                call_id,
                ok,
                payload
            }
        ),
        any::<u64>().prop_map(|exec_id| HostMsg::Cancel { exec_id }),
        (
            any::<u64>(),
            any::<u32>(),
            prop_oneof![response().prop_map(Ok), text().prop_map(Err)]
        )
            .prop_map(|(exec_id, call_id, result)| HostMsg::FetchResult {
                exec_id,
                call_id,
                result
            }),
        (any::<u64>(), any::<u64>(), text(), request).prop_map(
            |(exec_id, invoke_id, handle, request)| HostMsg::Invoke {
                exec_id,
                invoke_id,
                handle,
                request
            }
        ),
        any::<u64>().prop_map(|exec_id| HostMsg::CloseHandles { exec_id }),
        (any::<u64>(), any::<u32>(), text()).prop_map(|(exec_id, call_id, message)| {
            HostMsg::ToolDenied {
                exec_id,
                call_id,
                message,
            }
        }),
    ]
}

fn worker_msg() -> impl Strategy<Value = WorkerMsg> {
    let level = prop_oneof![
        Just(LogLevel::Log),
        Just(LogLevel::Info),
        Just(LogLevel::Warn),
        Just(LogLevel::Error),
        Just(LogLevel::Debug),
    ];
    let log = (level, text())
        .prop_map(|(level, message)| LogEntry { level, message })
        .boxed();
    let stats = any::<((u64, u64, u64, u64, u32, u32), (u64, u32))>().prop_map(
        |((a, b, c, d, e, f), (g, h))| RunStats {
            wall_us: a,
            cpu_us: b,
            heap_peak: c,
            buffers_peak: d,
            tool_calls: e,
            worker_pid: f,
            cpu_budget_us: g,
            fetches: h,
        },
    );
    let run_error = (
        text(),
        text(),
        prop::option::of((any::<u32>(), any::<u32>(), prop::option::of(text()))),
    )
        .prop_map(|(code, message, at)| RunError {
            code,
            message,
            location: at.map(|(line, column, module)| {
                Box::new(SourceLocation {
                    line,
                    column,
                    module,
                })
            }),
        })
        .boxed();
    let outcome = (
        prop::option::of(bytes()),
        prop::option::of(run_error.clone()),
        prop::collection::vec(log.clone(), 0..4),
        stats,
        prop::option::of((text(), prop::collection::vec(text(), 0..2))),
    )
        .prop_map(|(result, error, logs, stats, grant)| RunOutcome {
            result,
            error,
            logs,
            stats,
            grant: grant.map(|(execution_id, handles)| Grant {
                execution_id,
                handles,
            }),
            ..RunOutcome::default()
        });
    let request = request();
    prop_oneof![
        any::<(u32, u32)>().prop_map(|(version, pid)| WorkerMsg::Hello { version, pid }),
        (any::<u64>(), any::<u32>(), text(), text(), bytes()).prop_map(
            |(exec_id, call_id, provider, tool, args)| WorkerMsg::ToolCall {
                exec_id,
                call_id,
                provider,
                tool,
                args
            }
        ),
        (any::<u64>(), outcome).prop_map(|(exec_id, outcome)| WorkerMsg::Done { exec_id, outcome }),
        Just(WorkerMsg::Ready),
        any::<u64>().prop_map(|exec_id| WorkerMsg::Started { exec_id }),
        (any::<u64>(), log).prop_map(|(exec_id, entry)| WorkerMsg::Log { exec_id, entry }),
        any::<u64>().prop_map(|exec_id| WorkerMsg::Idle { exec_id }),
        any::<u64>().prop_map(|exec_id| WorkerMsg::Awake { exec_id }),
        (any::<u64>(), any::<u32>(), request).prop_map(|(exec_id, call_id, request)| {
            WorkerMsg::Fetch {
                exec_id,
                call_id,
                request,
            }
        }),
        (
            any::<u64>(),
            any::<u64>(),
            prop_oneof![response().prop_map(Ok), run_error.prop_map(Err)]
        )
            .prop_map(|(exec_id, invoke_id, result)| WorkerMsg::Invoked {
                exec_id,
                invoke_id,
                result
            }),
    ]
}

proptest! {
    #[test]
    fn every_host_message_roundtrips(m in host_msg()) {
        roundtrip_host(&m);
    }

    #[test]
    fn every_worker_message_roundtrips(m in worker_msg()) {
        roundtrip_worker(&m);
    }

    #[test]
    fn arbitrary_bytes_decode_or_are_refused_without_panic(
        data in prop::collection::vec(any::<u8>(), 0..256)
    ) {
        let _ = HostMsg::decode(&data);
        let _ = WorkerMsg::decode(&data);
        let mut buf = Vec::new();
        let _ = read_frame(&mut &data[..], &mut buf);
    }

    #[test]
    fn a_cut_message_is_refused(m in worker_msg(), cut in any::<prop::sample::Index>()) {
        let b = body(&m.encode().unwrap());
        let at = cut.index(b.len());
        prop_assert!(WorkerMsg::decode(&b[..at]).is_err());
    }
}

#[test]
fn hello_keeps_the_version_1_layout() {
    // Frozen: tag 101, u32 LE version, u32 LE pid. Every version reads every other's Hello.
    let frame = WorkerMsg::Hello {
        version: PROTOCOL_VERSION,
        pid: 0x0102_0304,
    }
    .encode()
    .unwrap();
    let mut expected = vec![9, 0, 0, 0, HELLO_TAG];
    expected.extend_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    expected.extend_from_slice(&[4, 3, 2, 1]);
    assert_eq!(frame, expected);
    // A Hello written by a version 1 worker, byte for byte.
    let v1 = [101, 1, 0, 0, 0, 0x39, 0x30, 0, 0];
    assert_eq!(
        WorkerMsg::decode(&v1),
        Ok(WorkerMsg::Hello {
            version: 1,
            pid: 12345
        })
    );
    // A Hello is exactly 9 bytes.
    assert!(WorkerMsg::decode(&v1[..8]).is_err());
    assert!(WorkerMsg::decode(&[&v1[..], &[0]].concat()).is_err());
}

#[test]
fn a_message_of_every_variant_roundtrips() {
    samples::host_messages().iter().for_each(roundtrip_host);
    samples::worker_messages().iter().for_each(roundtrip_worker);
}

#[test]
fn no_other_worker_message_starts_like_a_hello() {
    for m in samples::worker_messages() {
        if matches!(m, WorkerMsg::Hello { .. }) {
            continue;
        }
        assert!(body(&m.encode().unwrap())[0] < HELLO_TAG, "{m:?}");
    }
}

#[test]
fn hand_picked_messages_roundtrip() {
    roundtrip_host(&HostMsg::Execute(ExecuteRequest {
        exec_id: u64::MAX,
        code: "import { a } from './a.js'\nasync () => a".into(),
        modules: vec![("./a.js".into(), "export const a = 'é'".into())],
        providers: vec![
            ProviderDecl {
                name: "store".into(),
                tools: Some(vec!["list".into(), "get".into()]),
            },
            ProviderDecl {
                name: "open".into(),
                tools: None,
            },
        ],
        memory_limit_mib: 128,
        outbound: Outbound::Routed,
        retain_handles: true,
        live_logs: true,
        budgets: Budgets {
            cpu_limit_ms: Some(50),
            tool_call_limit: Some(0),
            fetch_limit: Some(u32::MAX),
        },
        replayable: Some(Replayable {
            seed: u64::MAX,
            epoch_ms: 1_796_000_000_000,
        }),
        hops: true,
    }));
    roundtrip_host(&HostMsg::ToolResult {
        exec_id: 7,
        call_id: 3,
        ok: true,
        payload: vec![0x5a; 100_000],
    });
    roundtrip_worker(&WorkerMsg::Done {
        exec_id: 5,
        outcome: RunOutcome {
            result: Some(vec![1, 2, 3]),
            error: Some(RunError {
                code: "PROGRAM_ERROR".into(),
                message: "Error: x".into(),
                location: None,
            }),
            logs: vec![LogEntry {
                level: LogLevel::Warn,
                message: "careful".into(),
            }],
            stats: RunStats {
                wall_us: 2345,
                cpu_us: 1234,
                heap_peak: 1 << 20,
                buffers_peak: 77,
                tool_calls: 3,
                worker_pid: 42,
                cpu_budget_us: 1200,
                fetches: 2,
            },
            grant: Some(Grant {
                execution_id: "d6201803-2236-4c65-be08-ff9eaca95a75".into(),
                handles: vec!["fetch".into()],
            }),
            ..RunOutcome::default()
        },
    });
}

#[test]
fn malformed_bodies_are_refused() {
    // empty, and an unknown variant index
    assert!(HostMsg::decode(&[]).is_err());
    assert!(HostMsg::decode(&[4]).is_err());
    assert!(HostMsg::decode(&[250]).is_err());
    assert!(WorkerMsg::decode(&[4]).is_err());
    // truncated
    let cancel = body(&HostMsg::Cancel { exec_id: u64::MAX }.encode().unwrap());
    assert!(HostMsg::decode(&cancel[..cancel.len() - 1]).is_err());
    // trailing bytes
    let mut long = cancel.clone();
    long.push(0);
    let err = HostMsg::decode(&long).unwrap_err();
    assert!(err.to_string().contains("trailing"), "{err}");
    // an out-of-range enum value (Outbound 3) and a bool that is neither 0 nor 1
    let exec = body(
        &HostMsg::Execute(ExecuteRequest {
            memory_limit_mib: 1,
            ..samples::execute()
        })
        .encode()
        .unwrap(),
    );
    let mut bad = exec.clone();
    *bad.last_mut().unwrap() = 3;
    assert!(HostMsg::decode(&bad).is_err());
    let result = body(
        &HostMsg::ToolResult {
            exec_id: 1,
            call_id: 1,
            ok: true,
            payload: vec![],
        }
        .encode()
        .unwrap(),
    );
    assert_eq!(result, [1, 1, 1, 1, 0]);
    assert!(HostMsg::decode(&[1, 1, 1, 2, 0]).is_err());
    // invalid UTF-8 in a string: ToolCall { exec 1, call 1, provider = [0xff, 0xfe] }
    let err = WorkerMsg::decode(&[0, 1, 1, 2, 0xff, 0xfe, 0, 0]).unwrap_err();
    assert!(err.to_string().contains("malformed frame"), "{err}");
    // a byte string longer than the frame
    assert!(HostMsg::decode(&[1, 1, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
}

#[test]
fn frame_reader_rejects_bad_lengths_and_reports_clean_eof() {
    let mut buf = Vec::new();
    assert!(!read_frame(&mut &[][..], &mut buf).unwrap());
    assert!(read_frame(&mut &[0, 0, 0, 0][..], &mut buf).is_err());
    assert!(read_frame(&mut &[0xff, 0xff, 0xff, 0xff][..], &mut buf).is_err());
    // a length prefix promising more than arrives
    assert!(read_frame(&mut &[5, 0, 0, 0, 1][..], &mut buf).is_err());
}

/// The encoder refuses a body over MAX_FRAME_BYTES after its sizing pass, before it allocates
/// the frame, and names the size and the bound; a body of exactly the bound is still encoded.
/// Every field that can grow is tried: code, modules, tool lists, tool answers, fetch answers
/// (body, headers, rejection text) and invocation requests. The big byte strings are shared
/// (one allocation each), and only the sizing pass reads them.
#[test]
fn the_encoder_refuses_a_body_over_the_frame_bound() {
    use codemode_protocol::{ExecuteRequest, FrameTooLarge, ProviderDecl, MAX_FRAME_BYTES};
    let over = MAX_FRAME_BYTES + 1;
    let big = || "x".repeat(over);
    let half = || "x".repeat(over / 2 + 1);
    let execute = |code: String, modules: Vec<(String, String)>, providers: Vec<ProviderDecl>| {
        HostMsg::Execute(ExecuteRequest {
            code,
            modules,
            providers,
            ..samples::execute()
        })
    };
    let many_tools = || ProviderDecl {
        name: "p".into(),
        tools: Some(vec![half(), half()]),
    };
    // Built one at a time: each big input lives only while its case runs.
    let case = |i: usize| -> (&str, HostMsg) {
        match i {
            0 => ("code", execute(big(), vec![], vec![])),
            1 => (
                "modules",
                execute(
                    String::new(),
                    vec![("a".into(), half()), ("b".into(), half())],
                    vec![],
                ),
            ),
            2 => (
                "tool lists",
                execute(String::new(), vec![], vec![many_tools()]),
            ),
            3 => (
                "tool answer",
                HostMsg::ToolResult {
                    exec_id: 1,
                    call_id: 1,
                    ok: true,
                    payload: big().into_bytes(),
                },
            ),
            4 => (
                "fetch answer body",
                HostMsg::FetchResult {
                    exec_id: 1,
                    call_id: 1,
                    result: Ok(WireResponse {
                        body: Some(big().into_bytes()),
                        ..Default::default()
                    }),
                },
            ),
            5 => (
                "fetch rejection",
                HostMsg::FetchResult {
                    exec_id: 1,
                    call_id: 1,
                    result: Err(big()),
                },
            ),
            6 => (
                "invocation request",
                HostMsg::Invoke {
                    exec_id: 1,
                    invoke_id: 1,
                    handle: "fetch".into(),
                    request: WireRequest {
                        body: Some(big().into_bytes()),
                        ..Default::default()
                    },
                },
            ),
            _ => unreachable!(),
        }
    };
    for i in 0..7 {
        let (what, msg) = case(i);
        match msg.encode() {
            Err(FrameTooLarge { size, limit }) => {
                assert!(size > MAX_FRAME_BYTES, "{what}: {size}");
                assert_eq!(limit, MAX_FRAME_BYTES, "{what}");
            }
            Ok(frame) => panic!("{what}: a frame of {} bytes was encoded", frame.len()),
        }
    }
    // The bound itself still fits: a ToolResult body is its header (tag, two varints, ok, the
    // payload's length varint) plus the payload.
    let header = HostMsg::ToolResult {
        exec_id: 1,
        call_id: 1,
        ok: true,
        payload: vec![0; 1 << 21],
    }
    .encode()
    .unwrap()
    .len()
        - 4
        - (1 << 21);
    let fits = HostMsg::ToolResult {
        exec_id: 1,
        call_id: 1,
        ok: true,
        payload: vec![0; MAX_FRAME_BYTES - header],
    };
    assert_eq!(fits.encode().unwrap().len(), 4 + MAX_FRAME_BYTES);
}
