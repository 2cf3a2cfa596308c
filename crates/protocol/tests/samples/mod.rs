//! One message of every variant, for the tests that must see them all (the frames table of
//! docs/protocol.md, the Hello tag no other message starts with). The matches make the compiler
//! ask for a sample of every variant added.

use codemode_protocol::{
    ExecuteRequest, HostMsg, LogEntry, LogLevel, Outbound, RunOutcome, WireRequest, WireResponse,
    WorkerMsg,
};

/// An execute of no code that asks for nothing: no modules or providers, 64 MiB, native fetch,
/// no retained handles, live logs, budgets, replay or step times. A test sets what it is about
/// and takes the rest from here (`..execute()`).
pub fn execute() -> ExecuteRequest {
    ExecuteRequest {
        exec_id: 1,
        code: String::new(),
        modules: vec![],
        providers: vec![],
        memory_limit_mib: 64,
        outbound: Outbound::Native,
        retain_handles: false,
        live_logs: false,
        budgets: Default::default(),
        replayable: None,
        hops: false,
    }
}

/// One `HostMsg` of each variant, in declaration order.
pub fn host_messages() -> Vec<HostMsg> {
    fn index(m: &HostMsg) -> usize {
        match m {
            HostMsg::Execute(_) => 0,
            HostMsg::ToolResult { .. } => 1,
            HostMsg::Cancel { .. } => 2,
            HostMsg::FetchResult { .. } => 3,
            HostMsg::Invoke { .. } => 4,
            HostMsg::CloseHandles { .. } => 5,
            HostMsg::ToolDenied { .. } => 6,
        }
    }
    let all = vec![
        HostMsg::Execute(ExecuteRequest {
            code: "a \"quoted\" { code".into(),
            modules: vec![("m".into(), "export {}".into())],
            memory_limit_mib: 8,
            outbound: Outbound::Routed,
            ..execute()
        }),
        HostMsg::ToolResult {
            exec_id: 1,
            call_id: 1,
            ok: true,
            payload: vec![1],
        },
        HostMsg::Cancel { exec_id: 1 },
        HostMsg::FetchResult {
            exec_id: 1,
            call_id: 1,
            result: Err("no".into()),
        },
        HostMsg::Invoke {
            exec_id: 1,
            invoke_id: 1,
            handle: "fetch".into(),
            request: WireRequest::default(),
        },
        HostMsg::CloseHandles { exec_id: 1 },
        HostMsg::ToolDenied {
            exec_id: 1,
            call_id: 1,
            message: "denied".into(),
        },
    ];
    assert!(all.iter().map(index).eq(0..all.len()));
    all
}

/// One `WorkerMsg` of each variant, in declaration order (`Hello` last).
pub fn worker_messages() -> Vec<WorkerMsg> {
    fn index(m: &WorkerMsg) -> usize {
        match m {
            WorkerMsg::ToolCall { .. } => 0,
            WorkerMsg::Done { .. } => 1,
            WorkerMsg::Ready => 2,
            WorkerMsg::Fetch { .. } => 3,
            WorkerMsg::Invoked { .. } => 4,
            WorkerMsg::Started { .. } => 5,
            WorkerMsg::Log { .. } => 6,
            WorkerMsg::Idle { .. } => 7,
            WorkerMsg::Awake { .. } => 8,
            WorkerMsg::Engine(_) => 9,
            WorkerMsg::Hello { .. } => 10,
        }
    }
    let all = vec![
        WorkerMsg::ToolCall {
            exec_id: 1,
            call_id: 1,
            provider: "p".into(),
            tool: "t".into(),
            args: vec![],
        },
        WorkerMsg::Done {
            exec_id: 1,
            outcome: RunOutcome::default(),
        },
        WorkerMsg::Ready,
        WorkerMsg::Fetch {
            exec_id: 1,
            call_id: 1,
            request: WireRequest::default(),
        },
        WorkerMsg::Invoked {
            exec_id: 1,
            invoke_id: 1,
            result: Ok(WireResponse::default()),
        },
        WorkerMsg::Started { exec_id: u64::MAX },
        WorkerMsg::Log {
            exec_id: 1,
            entry: LogEntry {
                level: LogLevel::Log,
                message: "m".into(),
            },
        },
        WorkerMsg::Idle { exec_id: 1 },
        WorkerMsg::Awake { exec_id: 1 },
        WorkerMsg::Engine(codemode_protocol::Engine {
            v8: "15.2.124.1-rusty".into(),
            sandbox: true,
        }),
        WorkerMsg::Hello { version: 1, pid: 1 },
    ];
    assert!(all.iter().map(index).eq(0..all.len()));
    all
}
