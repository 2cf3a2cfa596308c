//! The state of the run in progress, kept in an isolate slot so V8 callbacks (natives, the
//! module resolver) can reach it; the run loop takes it out when the run ends.

use std::collections::HashMap;

use codemode_protocol::{limits, FailureCode, LogEntry, LogLevel, Outbound, WorkerMsg};

use crate::link::Outbox;
use crate::modules::ModuleMap;

pub struct RunState {
    pub exec_id: u64,
    /// Where the run's requests to the host (tool calls, fetches) go.
    pub send: Outbox,
    pub calls: HashMap<u32, v8::Global<v8::PromiseResolver>>,
    pub next_call: u32,
    pub logs: Vec<LogEntry>,
    pub log_bytes: usize,
    /// Entries dropped after the log bound was reached.
    pub log_dropped: usize,
    /// Largest heap size sampled during the run.
    pub heap_peak: usize,
    pub modules: ModuleMap,
    pub outbound: Outbound,
    /// Fetches sent to the host (they share call ids with tool calls).
    pub fetches: u32,
    /// The run ended and its isolate is retained (docs/handles.md): the dispatch ended with the
    /// run, so tool calls reject inside the isolate, and console output is discarded.
    pub completed: bool,
    /// The host asked for live logs: each kept entry is also sent as it is written.
    pub live_logs: bool,
}

impl RunState {
    pub fn new(exec_id: u64, modules: ModuleMap, outbound: Outbound, send: Outbox) -> Self {
        RunState {
            send,
            outbound,
            fetches: 0,
            completed: false,
            live_logs: false,
            exec_id,
            calls: HashMap::new(),
            next_call: 0,
            logs: Vec::new(),
            log_bytes: 0,
            log_dropped: 0,
            heap_peak: 0,
            modules,
        }
    }

    /// Keeps an entry within the log bounds: one entry is cut at LOG_ENTRY_BYTES; past
    /// LOG_ENTRIES or LOG_BYTES entries are counted as dropped.
    pub fn push_log(&mut self, level: LogLevel, mut message: String) {
        if self.log_dropped > 0
            || self.logs.len() >= limits::LOG_ENTRIES
            || self.log_bytes >= limits::LOG_BYTES
        {
            self.log_dropped += 1;
            return;
        }
        if message.len() > limits::LOG_ENTRY_BYTES {
            let cut = floor_char_boundary(&message, limits::LOG_ENTRY_BYTES);
            let more = message.len() - cut;
            message.truncate(cut);
            message.push_str(&format!("... [{more} more bytes cut]"));
        }
        self.log_bytes += message.len();
        let entry = LogEntry { level, message };
        if self.live_logs {
            self.send_live(entry.clone());
        }
        self.logs.push(entry);
    }

    fn send_live(&self, entry: LogEntry) {
        (self.send)(&WorkerMsg::Log {
            exec_id: self.exec_id,
            entry,
        });
    }

    /// The logs, with the LOG_LIMIT notice last when entries were dropped.
    pub fn finish_logs(&mut self) -> Vec<LogEntry> {
        let mut logs = std::mem::take(&mut self.logs);
        if self.log_dropped > 0 {
            let dropped = self.log_dropped.to_string();
            let notice = LogEntry {
                level: LogLevel::Warn,
                message: FailureCode::LogLimit.render(&[("dropped", &dropped)]),
            };
            if self.live_logs {
                self.send_live(notice.clone());
            }
            logs.push(notice);
        }
        logs
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}
