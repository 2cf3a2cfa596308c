//! Values cross every boundary with structuredClone semantics, using V8's own serializer (the
//! one Node's `v8.Serializer` and `structuredClone` use), so host and sandbox agree by
//! construction. ArrayBuffer views are written natively, not as host objects.

use v8::{ValueDeserializerHelper, ValueSerializerHelper};

struct Delegate;

impl v8::ValueSerializerImpl for Delegate {
    fn throw_data_clone_error<'s>(
        &self,
        scope: &mut v8::HandleScope<'s>,
        message: v8::Local<'s, v8::String>,
    ) {
        let err = v8::Exception::error(scope, message);
        scope.throw_exception(err);
    }
}

impl v8::ValueDeserializerImpl for Delegate {}

/// Serializes `value`; on failure returns V8's description of what could not be cloned.
pub fn serialize(
    scope: &mut v8::HandleScope,
    value: v8::Local<v8::Value>,
) -> Result<Vec<u8>, String> {
    let tc = &mut v8::TryCatch::new(scope);
    let context = tc.get_current_context();
    let ser = v8::ValueSerializer::new(tc, Box::new(Delegate));
    ser.write_header();
    match ser.write_value(context, value) {
        Some(true) => Ok(ser.release()),
        _ => {
            let detail = tc
                .exception()
                .and_then(|e| e.to_object(tc))
                .and_then(|o| {
                    let key = v8::String::new(tc, "message")?;
                    o.get(tc, key.into())
                })
                .map(|m| m.to_rust_string_lossy(tc).trim_end_matches('.').to_string())
                .unwrap_or_else(|| "a value could not be cloned".into());
            Err(detail)
        }
    }
}

pub fn deserialize<'s>(
    scope: &mut v8::HandleScope<'s>,
    data: &[u8],
) -> Option<v8::Local<'s, v8::Value>> {
    let tc = &mut v8::EscapableHandleScope::new(scope);
    let tc = &mut v8::TryCatch::new(tc);
    let context = tc.get_current_context();
    let de = v8::ValueDeserializer::new(tc, Box::new(Delegate), data);
    if de.read_header(context) != Some(true) {
        return None;
    }
    let v = de.read_value(context)?;
    Some(tc.escape(v))
}
