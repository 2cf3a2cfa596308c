//! The run's console: the `log` native and the entries it keeps, within the log bounds. The
//! [`Console`] sits in an isolate slot while the run lasts; the run takes it out when the run
//! ends (a retained handler's output then has nowhere to go, and is discarded).

use codemode_protocol::{limits, FailureCode, LogEntry, LogLevel, WorkerMsg};

use crate::process::link::Outbox;

pub struct Console {
    logs: Vec<LogEntry>,
    bytes: usize,
    /// Entries dropped after the log bound was reached.
    dropped: usize,
    /// The host asked for live logs: each kept entry is also sent as it is written, for
    /// this execution, through this outbox.
    live: Option<(u64, Outbox)>,
}

impl Console {
    /// `live`: the execution and outbox live entries go to, when the host asked for them.
    pub fn new(live: Option<(u64, Outbox)>) -> Self {
        Console {
            logs: Vec::new(),
            bytes: 0,
            dropped: 0,
            live,
        }
    }

    /// Keeps an entry within the log bounds: one entry is cut at LOG_ENTRY_BYTES; past
    /// LOG_ENTRIES or LOG_BYTES entries are counted as dropped.
    /// `whole`: the message's length in bytes, of which `message` may hold only the start (the
    /// native copies at most an entry's bound out of V8, whatever the string's size).
    fn push(&mut self, level: LogLevel, mut message: String, whole: usize) {
        if self.dropped > 0
            || self.logs.len() >= limits::LOG_ENTRIES
            || self.bytes >= limits::LOG_BYTES
        {
            self.dropped += 1;
            return;
        }
        if whole > message.len() || message.len() > limits::LOG_ENTRY_BYTES {
            let cut = floor_char_boundary(&message, limits::LOG_ENTRY_BYTES);
            let more = whole.max(message.len()) - cut;
            message.truncate(cut);
            message.shrink_to_fit();
            message.push_str(&cut_marker(more));
        }
        self.bytes += message.len();
        let entry = LogEntry { level, message };
        self.send_live(&entry);
        self.logs.push(entry);
    }

    fn send_live(&self, entry: &LogEntry) {
        if let Some((exec_id, send)) = self.live {
            send(&WorkerMsg::Log {
                exec_id,
                entry: entry.clone(),
            });
        }
    }

    /// The logs, with the LOG_LIMIT notice last when entries were dropped.
    pub fn finish(mut self) -> Vec<LogEntry> {
        let mut logs = std::mem::take(&mut self.logs);
        if self.dropped > 0 {
            let dropped = self.dropped.to_string();
            let notice = LogEntry {
                level: LogLevel::Warn,
                message: FailureCode::LogLimit.render(&[("dropped", &dropped)]),
            };
            self.send_live(&notice);
            logs.push(notice);
        }
        logs
    }
}

/// `log(level, text)`: appends one console entry.
pub fn log(scope: &mut v8::PinScope, args: v8::FunctionCallbackArguments, _rv: v8::ReturnValue) {
    let level = args
        .get(0)
        .uint32_value(scope)
        .and_then(|v| LogLevel::from_u8(v as u8))
        .unwrap_or(LogLevel::Log);
    match scope.get_slot_mut::<Console>() {
        // No run in progress (a retained handler's output has nowhere to go: an invocation
        // answers with the response alone): discarded without copying it out of V8.
        None => return,
        Some(console) if console.dropped > 0 => {
            // Past the bound: count the entry without copying its text out of V8.
            console.dropped += 1;
            return;
        }
        Some(_) => {}
    }
    let (message, whole) = bounded_text(scope, args.get(1), limits::LOG_ENTRY_BYTES);
    if let Some(console) = scope.get_slot_mut::<Console>() {
        console.push(level, message, whole);
    }
}

/// The UTF-8 text of `value` (the runtime hands a string) and its whole length in bytes, with
/// at most `max` bytes copied out of V8: a program's string of any size costs the worker's own
/// memory, which no bound of the run's counts, no more than an entry's bound.
fn bounded_text(
    scope: &mut v8::PinScope,
    value: v8::Local<v8::Value>,
    max: usize,
) -> (String, usize) {
    let Ok(text) = v8::Local::<v8::String>::try_from(value) else {
        let text = value.to_rust_string_lossy(scope);
        let whole = text.len();
        return (text, whole);
    };
    let whole = text.utf8_length(scope);
    if whole <= max {
        return (text.to_rust_string_lossy(scope), whole);
    }
    let mut start = vec![0u8; max];
    // Never a partial UTF-8 sequence; lone surrogates as U+FFFD.
    let written = text.write_utf8_v2(scope, &mut start, v8::WriteFlags::kReplaceInvalidUtf8, None);
    start.truncate(written);
    (String::from_utf8_lossy(&start).into_owned(), whole)
}

/// What an entry cut at [`limits::LOG_ENTRY_BYTES`] ends with: within
/// [`limits::LOG_MARKER_BYTES`], which the host's bound on an entry allows for.
fn cut_marker(more: usize) -> String {
    format!("... [{more} more bytes cut]")
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cut_marker_fits_the_bytes_the_host_allows_for_it() {
        assert!(cut_marker(usize::MAX).len() <= limits::LOG_MARKER_BYTES);
    }

    #[test]
    fn a_cut_entry_fits_the_wire_bound_for_an_entry() {
        let mut console = Console::new(None);
        let text = "é".repeat(limits::LOG_ENTRY_BYTES);
        let whole = text.len();
        console.push(LogLevel::Log, text, whole);
        let logs = console.finish();
        assert_eq!(logs.len(), 1);
        assert!(logs[0].message.len() <= limits::LOG_ENTRY_WIRE_BYTES);
        assert!(logs[0].message.ends_with("more bytes cut]"));
    }
}
