//! Reading length-prefixed frames from a byte stream (a pipe): blocking ([`read_frame`]), or
//! piecewise from bytes already read ([`frame_len`] checks each prefix).

use std::io::{self, Read};

use crate::MAX_FRAME_BYTES;

/// Reads one frame body (tag and fields, without the length prefix) into `buf`.
/// Returns `Ok(false)` on a clean end of stream before a frame starts.
pub fn read_frame(r: &mut impl Read, buf: &mut Vec<u8>) -> io::Result<bool> {
    read_frame_within(r, buf, MAX_FRAME_BYTES)
}

/// [`read_frame`] with a tighter bound on the body: a length prefix outside `1..=limit` is an
/// `InvalidData` error before anything is allocated, and the buffer grows only with the bytes
/// that actually arrive (a prefix that promises more than the stream holds costs nothing). A
/// stream that ends inside a frame is an `UnexpectedEof` error.
pub fn read_frame_within(r: &mut impl Read, buf: &mut Vec<u8>, limit: usize) -> io::Result<bool> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    let len = frame_len(len, limit)?;
    buf.clear();
    let got = r.take(len as u64).read_to_end(buf)?;
    if got < len {
        return Err(truncated(got, len));
    }
    Ok(true)
}

/// The body length a frame's 4-byte prefix announces, if it is within `1..=limit` (checked
/// before anything is allocated for the body); else an `InvalidData` error.
pub fn frame_len(prefix: [u8; 4], limit: usize) -> io::Result<usize> {
    let len = u32::from_le_bytes(prefix) as usize;
    if len == 0 || len > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame length {len} is outside 1..={limit}"),
        ));
    }
    Ok(len)
}

/// The `UnexpectedEof` error of a stream that ended `got` bytes into a frame of `len`.
pub fn truncated(got: usize, len: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("the stream ended {got} bytes into a frame of {len}"),
    )
}
