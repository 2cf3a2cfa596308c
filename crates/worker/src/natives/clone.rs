//! Values cross every boundary with structuredClone semantics, using V8's own serializer (the
//! one Node's `v8.Serializer` and `structuredClone` use), so host and sandbox agree by
//! construction. ArrayBuffer views are written natively, not as host objects.
//!
//! The format on the wire is [`VALUE_FORMAT_VERSION`] (15), the newest every supported Node
//! reads and writes. This V8 (15.2) writes format 16, whose body differs from 15 only where no
//! value of ours reaches: ArrayBuffer and view lengths and offsets are written as `size_t`
//! varints instead of `uint32` ones (the same bytes below 4 GiB, and no value crossing a
//! boundary comes near: `RESULT_BYTES`, `TOOL_PAYLOAD_BYTES`), and a tag for immutable
//! ArrayBuffers, behind a V8 flag that is off. So the worker writes V8's bytes under the header
//! 15 ([`declared`]) and reads at most 15; tests/value_format.rs pins what V8 writes, and the
//! host's property test (`__test__/value-format.test.mjs`) carries every value kind both ways
//! under each supported Node.

use codemode_protocol::VALUE_FORMAT_VERSION;

use codemode_protocol::limits::PLATFORM_CLASSES;
use v8::{ValueDeserializerHelper, ValueSerializerHelper};

#[derive(Default)]
struct Delegate {
    /// Set when V8 reported the value as not cloneable (as opposed to a getter throwing).
    not_cloneable: std::cell::Cell<bool>,
}

impl v8::ValueSerializerImpl for Delegate {
    fn throw_data_clone_error<'s>(
        &self,
        scope: &mut v8::PinScope<'s, '_>,
        message: v8::Local<'s, v8::String>,
    ) {
        self.not_cloneable.set(true);
        let err = v8::Exception::error(scope, message);
        scope.throw_exception(err);
    }

    fn has_custom_host_object(&self, _isolate: &v8::Isolate) -> bool {
        true
    }

    /// The runtime's own classes are platform objects: like a browser's, they are not
    /// serializable (V8 would otherwise copy them as empty plain objects, losing their state).
    fn is_host_object<'s>(
        &self,
        scope: &mut v8::PinScope<'s, '_>,
        object: v8::Local<'s, v8::Object>,
    ) -> Option<bool> {
        let name = object.get_constructor_name().to_rust_string_lossy(scope);
        Some(PLATFORM_CLASSES.contains(&name.as_str()))
    }

    fn write_host_object<'s>(
        &self,
        scope: &mut v8::PinScope<'s, '_>,
        object: v8::Local<'s, v8::Object>,
        _value_serializer: &dyn v8::ValueSerializerHelper,
    ) -> Option<bool> {
        let name = object.get_constructor_name().to_rust_string_lossy(scope);
        let text = format!("{name} object could not be cloned");
        if let Some(message) = v8::String::new(scope, &text) {
            self.throw_data_clone_error(scope, message);
        }
        None
    }
}

/// Why a value could not be serialized.
pub enum CloneFailure {
    /// V8's description of the value that cannot be cloned.
    NotCloneable(String),
    /// Something ran during serialization (a getter) and threw; the exception is pending in
    /// the caller's TryCatch.
    Threw,
}

/// Serializes `value` inside the caller's TryCatch, telling a non-cloneable value apart from
/// an exception thrown by the value's own code.
pub fn serialize_or_rethrow(
    tc: &mut v8::PinnedRef<v8::TryCatch<v8::HandleScope>>,
    value: v8::Local<v8::Value>,
) -> Result<Vec<u8>, CloneFailure> {
    let context = tc.get_current_context();
    let delegate = Box::new(Delegate::default());
    let flag: *const std::cell::Cell<bool> = &delegate.not_cloneable;
    let ser = v8::ValueSerializer::new(tc, delegate);
    ser.write_header();
    if ser.write_value(context, value) == Some(true) {
        return Ok(declared(ser.release()));
    }
    // SAFETY: the delegate lives inside `ser`, which is still alive here.
    let not_cloneable = unsafe { (*flag).get() };
    drop(ser);
    if !not_cloneable {
        return Err(CloneFailure::Threw);
    }
    let detail = exception_message(tc);
    tc.reset();
    Err(CloneFailure::NotCloneable(detail))
}

/// The format this V8's serializer writes (the version after the 0xFF tag).
pub const V8_WRITES: u8 = 16;

/// V8's bytes under the wire's header: format [`V8_WRITES`] relabelled as
/// [`VALUE_FORMAT_VERSION`] (module header: the bodies agree for every value that crosses).
/// Bytes of any other format are left as they are, so a V8 that writes another one is caught
/// by the host's check and by tests/value_format.rs, not silently relabelled.
fn declared(mut bytes: Vec<u8>) -> Vec<u8> {
    const WIRE: u8 = {
        assert!(VALUE_FORMAT_VERSION < 0x80, "one varint byte");
        VALUE_FORMAT_VERSION as u8
    };
    if let [0xFF, version, ..] = bytes.as_mut_slice() {
        if *version == V8_WRITES {
            *version = WIRE;
        }
    }
    bytes
}

/// The pending exception's `message`, without a trailing period.
fn exception_message(tc: &mut v8::PinnedRef<v8::TryCatch<v8::HandleScope>>) -> String {
    tc.exception()
        .and_then(|e| e.to_object(tc))
        .and_then(|o| {
            let key = v8::String::new(tc, "message")?;
            o.get(tc, key.into())
        })
        .map(|m| m.to_rust_string_lossy(tc).trim_end_matches('.').to_string())
        .unwrap_or_else(|| "a value could not be cloned".into())
}

impl v8::ValueDeserializerImpl for Delegate {}

/// Serializes `value`; on failure returns a description of what could not be cloned (or of
/// what a getter threw while the value was read).
pub fn serialize(scope: &mut v8::PinScope, value: v8::Local<v8::Value>) -> Result<Vec<u8>, String> {
    v8::tc_scope!(let tc, scope);
    match serialize_or_rethrow(tc, value) {
        Ok(bytes) => Ok(bytes),
        Err(CloneFailure::NotCloneable(detail)) => Err(detail),
        Err(CloneFailure::Threw) => Err(exception_message(tc)),
    }
}

pub fn deserialize<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    data: &[u8],
) -> Option<v8::Local<'s, v8::Value>> {
    v8::escapable_handle_scope!(let tc, scope);
    v8::tc_scope!(let tc, tc);
    let context = tc.get_current_context();
    let de = v8::ValueDeserializer::new(tc, Box::new(Delegate::default()), data);
    // V8 reads its own format 16 too; the wire's is 15 (module header), and a newer header is
    // refused, never guessed at.
    if de.read_header(context) != Some(true) || de.get_wire_format_version() > VALUE_FORMAT_VERSION
    {
        return None;
    }
    let v = de.read_value(context)?;
    Some(tc.escape(v))
}
