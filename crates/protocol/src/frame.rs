//! Reading length-prefixed frames from a blocking byte stream (a pipe).

use std::io::{self, Read};

use crate::MAX_FRAME_BYTES;

/// Reads one frame body (tag and fields, without the length prefix) into `buf`.
/// Returns `Ok(false)` on a clean end of stream before a frame starts.
pub fn read_frame(r: &mut impl Read, buf: &mut Vec<u8>) -> io::Result<bool> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    let len = frame_len(len)?;
    buf.clear();
    buf.resize(len, 0);
    r.read_exact(buf)?;
    Ok(true)
}

/// The body length a frame's 4-byte prefix announces, if it is within the frame bound (checked
/// before anything is allocated for the body).
pub fn frame_len(prefix: [u8; 4]) -> io::Result<usize> {
    let len = u32::from_le_bytes(prefix) as usize;
    if len == 0 || len > MAX_FRAME_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame length {len} is outside 1..={MAX_FRAME_BYTES}"),
        ));
    }
    Ok(len)
}
