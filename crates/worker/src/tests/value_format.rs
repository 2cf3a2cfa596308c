//! The value-serializer format the worker's V8 speaks is the one `VALUE_FORMAT_VERSION` declares
//! (the host checks Node's against it), and a value in a newer format is refused, never misread.
//! V8 itself writes [`V8_WRITES`]: the worker relabels it (natives/clone.rs says why that is
//! sound); a V8 that writes any other format fails here before it reaches a host.

use codemode_protocol::{HostMsg, WorkerMsg, VALUE_FORMAT_VERSION};

use super::{execute, provider, request};
use crate::natives::clone::V8_WRITES;
use v8::ValueSerializerHelper;

/// What V8's serializer writes, before the worker relabels it.
#[test]
fn this_v8_writes_the_format_the_worker_relabels() {
    super::on_v8_thread(|| {
        let mut prepared = crate::engine::isolate::Prepared::new(64);
        v8::scope!(let scope, &mut prepared.isolate);
        let context = v8::Local::new(scope, &prepared.context);
        let scope = &mut v8::ContextScope::new(scope, context);
        let value = v8::Integer::new(scope, 7);
        let ser = v8::ValueSerializer::new(scope, Box::new(Plain));
        ser.write_header();
        assert_eq!(ser.write_value(context, value.into()), Some(true));
        let bytes = ser.release();
        assert_eq!(header_version(&bytes), V8_WRITES);
        assert!(u32::from(V8_WRITES) > VALUE_FORMAT_VERSION);
    });
}

struct Plain;
impl v8::ValueSerializerImpl for Plain {
    fn throw_data_clone_error<'s>(
        &self,
        _scope: &mut v8::PinScope<'s, '_>,
        _message: v8::Local<'s, v8::String>,
    ) {
    }
}

/// The header V8 writes: the 0xFF tag, then the format version as a varint (one byte below 128).
fn header_version(bytes: &[u8]) -> u8 {
    assert_eq!(bytes.first(), Some(&0xFF), "a V8 serializer header");
    bytes[1]
}

#[test]
fn the_worker_writes_and_reads_the_declared_format_and_refuses_a_newer_one() {
    let mut req = request(
        "async () => { const same = await t.echo(1, 'x'); let newer; \
         try { newer = await t.newer(2) } catch (e) { newer = 'rejected: ' + e.message } \
         return [same, newer] }",
    );
    req.providers = vec![provider("t", Some(&["echo", "newer"]))];
    let ran = execute(req, |msg| match msg {
        WorkerMsg::ToolCall {
            exec_id,
            call_id,
            tool,
            args,
            ..
        } => {
            assert_eq!(u32::from(header_version(args)), VALUE_FORMAT_VERSION);
            let mut payload = args.clone();
            if tool == "newer" {
                // The same value under a header one version newer than the worker's V8 knows.
                payload[1] = (VALUE_FORMAT_VERSION + 1) as u8;
            }
            vec![HostMsg::ToolResult {
                exec_id: *exec_id,
                call_id: *call_id,
                ok: true,
                payload,
            }]
        }
        _ => Vec::new(),
    });
    assert_eq!(ran.outcome.error, None);
    let json = ran.json.as_deref().unwrap_or_default();
    assert!(
        json.starts_with("[[1,\"x\"],\"rejected: The tool's answer could not be read"),
        "{json}"
    );
    let result = ran.outcome.result.as_deref().expect("a result");
    assert_eq!(u32::from(header_version(result)), VALUE_FORMAT_VERSION);
}
