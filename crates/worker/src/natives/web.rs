//! Natives behind the web-standard globals: the work that belongs in Rust (URL parsing with the
//! WHATWG-conformant `url` crate, text codecs with `encoding_rs`, digests, randomness (seeded
//! in a replayable run: seeded.rs), the monotonic clock), bound to their JS names by the table
//! in natives/mod.rs. Buffers are allocated by the JS side, so they are metered like any other.

use std::sync::OnceLock;
use std::time::Instant;

use sha1::Digest as _;

use crate::natives::clone;
use crate::natives::failure::throw_type_error;
use crate::natives::host::string_pairs;
use crate::natives::seeded;

fn string_arg(scope: &mut v8::PinScope, v: v8::Local<v8::Value>) -> String {
    v.to_rust_string_lossy(scope)
}

/// The bytes a view covers, writable. The caller must not let the slice outlive the view.
fn view_bytes_mut<'a>(v: v8::Local<'a, v8::Value>) -> Option<&'a mut [u8]> {
    let view = v8::Local::<v8::ArrayBufferView>::try_from(v).ok()?;
    let len = view.byte_length();
    if len == 0 {
        return Some(&mut []);
    }
    let data = view.data() as *mut u8;
    if data.is_null() {
        return None;
    }
    // SAFETY: `data` points at `len` bytes of the view's backing store, which the view keeps
    // alive for the duration of this native call; no JS runs while the slice is used, and
    // resizable buffers are refused in this runtime, so the length cannot change under us.
    Some(unsafe { std::slice::from_raw_parts_mut(data, len) })
}

/// Milliseconds on the worker's monotonic clock (timers and performance.now use it).
pub fn now_ms() -> f64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_secs_f64() * 1000.0
}

/// How long from now until `deadline` (a time on the `now_ms` clock); zero once it passed.
pub fn until_ms(deadline: f64) -> std::time::Duration {
    std::time::Duration::from_secs_f64((deadline - now_ms()).max(0.0) / 1000.0)
}

pub fn now(scope: &mut v8::PinScope, _: v8::FunctionCallbackArguments, mut rv: v8::ReturnValue) {
    rv.set(v8::Number::new(scope, now_ms()).into());
}

pub fn utf8_length(
    scope: &mut v8::PinScope,
    args: v8::FunctionCallbackArguments,
    mut rv: v8::ReturnValue,
) {
    let Ok(s) = v8::Local::<v8::String>::try_from(args.get(0)) else {
        return throw_type_error(scope, "utf8Length: not a string");
    };
    // Lone surrogates are written as U+FFFD (3 bytes), which is also what utf8_length counts.
    let n = s.utf8_length(scope);
    rv.set(v8::Number::new(scope, n as f64).into());
}

/// No terminator (V8 writes one only when asked), lone surrogates as U+FFFD, and never a partial
/// UTF-8 sequence at the end of a too-small buffer.
const WRITE: v8::WriteFlags = v8::WriteFlags::kReplaceInvalidUtf8;

pub fn utf8_write(
    scope: &mut v8::PinScope,
    args: v8::FunctionCallbackArguments,
    _rv: v8::ReturnValue,
) {
    let (Ok(s), Some(out)) = (
        v8::Local::<v8::String>::try_from(args.get(0)),
        view_bytes_mut(args.get(1)),
    ) else {
        return throw_type_error(scope, "utf8Write: expected a string and a Uint8Array");
    };
    s.write_utf8_v2(scope, out, WRITE, None);
}

pub fn utf8_encode_into(
    scope: &mut v8::PinScope,
    args: v8::FunctionCallbackArguments,
    mut rv: v8::ReturnValue,
) {
    let (Ok(s), Some(out)) = (
        v8::Local::<v8::String>::try_from(args.get(0)),
        view_bytes_mut(args.get(1)),
    ) else {
        return throw_type_error(scope, "encodeInto: expected a string and a Uint8Array");
    };
    let mut read = 0usize;
    let written = s.write_utf8_v2(scope, out, WRITE, Some(&mut read));
    let read = v8::Number::new(scope, read as f64).into();
    let written = v8::Number::new(scope, written as f64).into();
    rv.set(v8::Array::new_with_elements(scope, &[read, written]).into());
}

pub fn encoding_for(
    scope: &mut v8::PinScope,
    args: v8::FunctionCallbackArguments,
    mut rv: v8::ReturnValue,
) {
    let label = string_arg(scope, args.get(0));
    match encoding_rs::Encoding::for_label(label.as_bytes()) {
        Some(enc) => {
            let name = enc.name().to_ascii_lowercase();
            if let Some(s) = v8::String::new(scope, &name) {
                rv.set(s.into());
            }
        }
        None => rv.set_null(),
    }
}

/// decode(encoding, bytes, fatal, stripBOM) -> string, or null when `fatal` and invalid.
pub fn decode(
    scope: &mut v8::PinScope,
    args: v8::FunctionCallbackArguments,
    mut rv: v8::ReturnValue,
) {
    let label = string_arg(scope, args.get(0));
    let Some(enc) = encoding_rs::Encoding::for_label(label.as_bytes()) else {
        return throw_type_error(scope, "decode: unknown encoding");
    };
    let fatal = args.get(2).is_true();
    let strip_bom = args.get(3).is_true();
    let Some(bytes) = view_bytes_mut(args.get(1)) else {
        return throw_type_error(scope, "decode: expected bytes");
    };
    let (text, had_errors) = if strip_bom {
        let (text, errors) = enc.decode_with_bom_removal(bytes);
        (text, errors)
    } else {
        enc.decode_without_bom_handling(bytes)
    };
    if fatal && had_errors {
        rv.set_null();
        return;
    }
    match v8::String::new(scope, &text) {
        Some(s) => rv.set(s.into()),
        None => throw_type_error(scope, "decode: the text is too long for a string"),
    }
}

/// clone(value) -> [true, copy] or [false, why] when the value is not serializable. An
/// exception thrown while serializing (a getter's) propagates as it is, as the standard says.
pub fn structured_clone(
    scope: &mut v8::PinScope,
    args: v8::FunctionCallbackArguments,
    mut rv: v8::ReturnValue,
) {
    v8::tc_scope!(let tc, scope);
    let (ok, value): (bool, v8::Local<v8::Value>) =
        match clone::serialize_or_rethrow(tc, args.get(0)) {
            Ok(bytes) => match clone::deserialize(tc, &bytes) {
                Some(v) => (true, v),
                None => return,
            },
            Err(clone::CloneFailure::NotCloneable(detail)) => {
                match v8::String::new(tc, &format!("{detail}.")) {
                    Some(s) => (false, s.into()),
                    None => return,
                }
            }
            Err(clone::CloneFailure::Threw) => {
                tc.rethrow();
                return;
            }
        };
    let flag = v8::Boolean::new(tc, ok).into();
    rv.set(v8::Array::new_with_elements(tc, &[flag, value]).into());
}

/// randomFill(bytes): fills `bytes` from the OS, or from the seeded stream of a replayable run
/// (seeded.rs).
pub fn random_fill(
    scope: &mut v8::PinScope,
    args: v8::FunctionCallbackArguments,
    _rv: v8::ReturnValue,
) {
    let Some(out) = view_bytes_mut(args.get(0)) else {
        return throw_type_error(scope, "randomFill: expected a Uint8Array");
    };
    if seeded::fill(scope, out) {
        return;
    }
    let mut filled = 0;
    while filled < out.len() {
        let rest = &mut out[filled..];
        // SAFETY: getrandom writes at most `rest.len()` bytes into the slice we pass.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n <= 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return throw_type_error(scope, &format!("no randomness available: {err}"));
        }
        filled += n as usize;
    }
}

/// digest(name, bytes, out): writes the digest of `bytes` into `out`.
pub fn digest(scope: &mut v8::PinScope, args: v8::FunctionCallbackArguments, _rv: v8::ReturnValue) {
    let name = string_arg(scope, args.get(0));
    let Some(data) = view_bytes_mut(args.get(1)).map(|b| b.to_vec()) else {
        return throw_type_error(scope, "digest: expected bytes");
    };
    let hash: Vec<u8> = match name.as_str() {
        "SHA-1" => sha1::Sha1::digest(&data).to_vec(),
        "SHA-256" => sha2::Sha256::digest(&data).to_vec(),
        "SHA-384" => sha2::Sha384::digest(&data).to_vec(),
        "SHA-512" => sha2::Sha512::digest(&data).to_vec(),
        _ => return throw_type_error(scope, "digest: unsupported algorithm"),
    };
    match view_bytes_mut(args.get(2)) {
        Some(out) if out.len() == hash.len() => out.copy_from_slice(&hash),
        _ => throw_type_error(scope, "digest: output buffer has the wrong size"),
    }
}

fn components<'s>(scope: &mut v8::PinScope<'s, '_>, url: &url::Url) -> v8::Local<'s, v8::Value> {
    use url::quirks as q;
    let parts = [
        q::href(url).to_string(),
        q::origin(url),
        q::protocol(url).to_string(),
        q::username(url).to_string(),
        q::password(url).to_string(),
        q::host(url).to_string(),
        q::hostname(url).to_string(),
        q::port(url).to_string(),
        q::pathname(url).to_string(),
        q::search(url).to_string(),
        q::hash(url).to_string(),
    ];
    let values: Vec<v8::Local<v8::Value>> = parts
        .iter()
        .map(|p| match v8::String::new(scope, p) {
            Some(s) => s.into(),
            None => v8::String::empty(scope).into(),
        })
        .collect();
    v8::Array::new_with_elements(scope, &values).into()
}

/// urlParse(input, base?) -> components, or null when the URL Standard's parser fails.
pub fn url_parse(
    scope: &mut v8::PinScope,
    args: v8::FunctionCallbackArguments,
    mut rv: v8::ReturnValue,
) {
    let input = string_arg(scope, args.get(0));
    let parsed = if args.get(1).is_undefined() {
        url::Url::parse(&input)
    } else {
        let base = string_arg(scope, args.get(1));
        match url::Url::parse(&base) {
            Ok(base) => url::Url::options().base_url(Some(&base)).parse(&input),
            Err(e) => Err(e),
        }
    };
    match parsed {
        Ok(url) => rv.set(components(scope, &url)),
        Err(_) => rv.set_null(),
    }
}

/// urlSet(href, attribute, value) -> components; null only when a new href does not parse.
/// Other setters that reject their value leave the URL as it was, as the standard says.
pub fn url_set(
    scope: &mut v8::PinScope,
    args: v8::FunctionCallbackArguments,
    mut rv: v8::ReturnValue,
) {
    use url::quirks as q;
    let href = string_arg(scope, args.get(0));
    let attr = string_arg(scope, args.get(1));
    let value = string_arg(scope, args.get(2));
    let Ok(mut url) = url::Url::parse(&href) else {
        return rv.set_null();
    };
    // Only a new href can fail; the other setters leave the URL as it was when they reject a
    // value, as the URL Standard says, so their results are ignored.
    let ignore = |_: Result<(), ()>| ();
    match attr.as_str() {
        "href" if q::set_href(&mut url, &value).is_err() => return rv.set_null(),
        "href" => {}
        "protocol" => ignore(q::set_protocol(&mut url, &value)),
        "username" => ignore(q::set_username(&mut url, &value)),
        "password" => ignore(q::set_password(&mut url, &value)),
        "host" => ignore(q::set_host(&mut url, &value)),
        "hostname" => ignore(q::set_hostname(&mut url, &value)),
        "port" => ignore(q::set_port(&mut url, &value)),
        "pathname" => q::set_pathname(&mut url, &value),
        "search" => q::set_search(&mut url, &value),
        "hash" => q::set_hash(&mut url, &value),
        _ => return rv.set_null(),
    }
    let url = if attr == "href" {
        url
    } else {
        let had_authority = href[href.find(':').map_or(0, |i| i + 1)..].starts_with("//");
        fix_path_serialization(url, &attr, &value, had_authority)
    };
    rv.set(components(scope, &url));
}

/// The `url` crate's setters can leave a stale serialization around the path (WPT
/// setters_tests.json): a `/.` prefix that should appear (a URL without a host whose path starts
/// with `//`, which would otherwise read back as a host) or disappear (once a host is set), and
/// `/` where a non-special URL with a host may have an empty path. Its components are right, so
/// the href is rebuilt from them as the URL Standard serializes, and parsed again.
fn fix_path_serialization(url: url::Url, attr: &str, value: &str, had_authority: bool) -> url::Url {
    if url.cannot_be_a_base() {
        return url;
    }
    let scheme = url.scheme();
    // The serialization cannot tell an empty host from a path starting with `//`, so whether
    // the URL has an authority comes from before the setter: only a host setter changes it
    // (an empty hostname gives a non-special URL an empty host).
    let authority = had_authority
        || url.host_str().is_some()
        || (matches!(attr, "host" | "hostname") && value.is_empty() && !is_special(scheme));
    let mut out = String::with_capacity(url.as_str().len());
    out.push_str(scheme);
    out.push(':');
    let mut path = url.path();
    if authority {
        out.push_str("//");
        let (user, pass) = (url.username(), url.password());
        if !user.is_empty() || pass.is_some() {
            out.push_str(user);
            if let Some(p) = pass {
                out.push(':');
                out.push_str(p);
            }
            out.push('@');
        }
        out.push_str(url.host_str().unwrap_or(""));
        if let Some(port) = url.port() {
            out.push(':');
            out.push_str(&port.to_string());
        }
        if attr == "pathname" && value.is_empty() && !is_special(scheme) && path == "/" {
            path = "";
        }
    } else if path.starts_with("//") {
        out.push_str("/.");
    }
    out.push_str(path);
    if let Some(q) = url.query() {
        out.push('?');
        out.push_str(q);
    }
    if let Some(f) = url.fragment() {
        out.push('#');
        out.push_str(f);
    }
    if out == url.as_str() {
        return url;
    }
    url::Url::parse(&out).unwrap_or(url)
}

fn is_special(scheme: &str) -> bool {
    matches!(scheme, "http" | "https" | "ws" | "wss" | "ftp" | "file")
}

pub fn form_parse(
    scope: &mut v8::PinScope,
    args: v8::FunctionCallbackArguments,
    mut rv: v8::ReturnValue,
) {
    let input = string_arg(scope, args.get(0));
    let mut pairs = Vec::new();
    for (k, v) in url::form_urlencoded::parse(input.as_bytes()) {
        let (Some(k), Some(v)) = (v8::String::new(scope, &k), v8::String::new(scope, &v)) else {
            return throw_type_error(scope, "formParse: string too long");
        };
        pairs.push(v8::Array::new_with_elements(scope, &[k.into(), v.into()]).into());
    }
    rv.set(v8::Array::new_with_elements(scope, &pairs).into());
}

pub fn form_serialize(
    scope: &mut v8::PinScope,
    args: v8::FunctionCallbackArguments,
    mut rv: v8::ReturnValue,
) {
    let mut out = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in string_pairs(scope, args.get(0)) {
        out.append_pair(&k, &v);
    }
    if let Some(s) = v8::String::new(scope, &out.finish()) {
        rv.set(s.into());
    }
}
