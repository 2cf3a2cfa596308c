//! The frame codec: every frame either side writes or reads passes here.
//!
//! A frame is a little-endian `u32` body length followed by the body. Decoding is one state
//! machine ([`Decoder`]: the length prefix, then the body it announced) that every reader
//! drives: a blocking reader ([`read_frame`], the worker's stdin and control pipe), and the
//! buffered reader ([`FrameBuf`]) the host reads a worker's output with, whether a thread
//! blocks on the pipe or an event loop reads it when it is readable. Encoding
//! ([`encode`], [`encode_raw`]) writes the prefix and refuses a body past
//! [`MAX_FRAME_BYTES`], the most any reader accepts.

use std::io::{self, Read};

use serde::Serialize;

use crate::MAX_FRAME_BYTES;

/// Bytes of a frame's length prefix.
pub const PREFIX_BYTES: usize = 4;

/// Where a [`Decoder`] stands in the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between frames: the next bytes are a length prefix.
    Head,
    /// The prefix announced a body of this many bytes, not yet all read.
    Body(usize),
}

/// What [`Decoder::decode`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// A whole frame: its body is this range of the bytes given, and every byte up to the
    /// range's end is consumed.
    Frame(std::ops::Range<usize>),
    /// No whole frame yet: `consumed` bytes (a length prefix, or none) are taken.
    Partial { consumed: usize },
}

/// The decode state machine: a prefix is checked against the bound before anything is
/// allocated for its body, then the body it announced is awaited.
#[derive(Debug, Clone, Copy)]
pub struct Decoder {
    limit: usize,
    state: State,
}

impl Decoder {
    /// A decoder that refuses bodies outside `1..=limit`.
    pub fn new(limit: usize) -> Decoder {
        Decoder {
            limit,
            state: State::Head,
        }
    }

    /// Takes a length prefix: the body length it announces (the bytes to await next), or an
    /// `InvalidData` error when it is outside `1..=limit`.
    pub fn head(&mut self, prefix: [u8; PREFIX_BYTES]) -> io::Result<usize> {
        let len = frame_len(prefix, self.limit)?;
        self.state = State::Body(len);
        Ok(len)
    }

    /// Decodes from `src` (the bytes not yet decoded, from where the last call left off):
    /// a whole frame, or how many bytes it consumed while it waits for more (a length prefix
    /// it took: the next call starts at the body).
    pub fn decode(&mut self, src: &[u8]) -> io::Result<Decoded> {
        let (skip, len) = match self.state {
            State::Head => {
                let Some(prefix) = src.first_chunk::<PREFIX_BYTES>() else {
                    return Ok(Decoded::Partial { consumed: 0 });
                };
                (PREFIX_BYTES, self.head(*prefix)?)
            }
            State::Body(len) => (0, len),
        };
        if src.len() < skip + len {
            return Ok(Decoded::Partial { consumed: skip });
        }
        self.state = State::Head;
        Ok(Decoded::Frame(skip..skip + len))
    }

    /// At the end of the stream, with `pending` bytes not decoded: fine between frames, else
    /// the `UnexpectedEof` error of a frame cut short.
    pub fn end(&self, pending: usize) -> io::Result<()> {
        match self.state {
            State::Head if pending == 0 => Ok(()),
            State::Head if pending < PREFIX_BYTES => Err(truncated(pending, PREFIX_BYTES)),
            State::Head => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the stream ended after a length prefix",
            )),
            State::Body(len) => Err(truncated(pending, len)),
        }
    }
}

/// A stream's bytes read and not yet decoded, and the [`Decoder`] over them: a reader fills it
/// ([`FrameBuf::read_from`], blocking or not) and takes whole frames out
/// ([`FrameBuf::next_frame`]). The buffer grows only with the bytes that arrive (a prefix that
/// promises more than the stream holds costs nothing) and is reused from frame to frame: its
/// bytes are zeroed once, when it grows, not on every read.
#[derive(Debug)]
pub struct FrameBuf {
    decoder: Decoder,
    bytes: Vec<u8>,
    /// The first byte not yet decoded.
    start: usize,
    /// The end of the bytes read (`bytes` past it is room for the next read).
    end: usize,
}

impl FrameBuf {
    /// An empty buffer whose frames' bodies are bounded by `limit`.
    pub fn new(limit: usize) -> FrameBuf {
        FrameBuf {
            decoder: Decoder::new(limit),
            bytes: Vec::new(),
            start: 0,
            end: 0,
        }
    }

    /// Reads once from `r` into room for at least `room` bytes: the count read, 0 at the end of
    /// the stream. A non-blocking `r` returns its `WouldBlock` error as is.
    pub fn read_from(&mut self, r: &mut impl Read, room: usize) -> io::Result<usize> {
        if self.start > 0 {
            // What was decoded is dropped; a partial frame moves to the front.
            self.bytes.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.bytes.len() - self.end < room {
            self.bytes.resize(self.end + room, 0);
        }
        let n = r.read(&mut self.bytes[self.end..])?;
        self.end += n;
        Ok(n)
    }

    /// Appends bytes already read.
    pub fn extend(&mut self, bytes: &[u8]) {
        self.bytes.truncate(self.end);
        self.bytes.extend_from_slice(bytes);
        self.end = self.bytes.len();
    }

    /// The body of the next whole frame buffered, if any; an `InvalidData` error for a length
    /// prefix past the bound.
    pub fn next_frame(&mut self) -> io::Result<Option<&[u8]>> {
        match self.decoder.decode(&self.bytes[self.start..self.end])? {
            Decoded::Partial { consumed } => {
                self.start += consumed;
                Ok(None)
            }
            Decoded::Frame(body) => {
                let body = self.start + body.start..self.start + body.end;
                self.start = body.end;
                if self.start == self.end {
                    // Nothing left over: the next read starts at the front, with nothing to move.
                    self.start = 0;
                    self.end = 0;
                }
                Ok(Some(&self.bytes[body]))
            }
        }
    }

    /// At the end of the stream: fine between frames, else the `UnexpectedEof` error of a
    /// frame cut short.
    pub fn end(&self) -> io::Result<()> {
        self.decoder.end(self.end - self.start)
    }
}

/// The frame buffer as a postcard output: slices are appended with one `memcpy` (postcard's
/// own `to_extend` appends byte by byte through `Extend`).
struct FrameWriter(Vec<u8>);

impl postcard::ser_flavors::Flavor for FrameWriter {
    type Output = Vec<u8>;

    #[inline(always)]
    fn try_push(&mut self, byte: u8) -> postcard::Result<()> {
        self.0.push(byte);
        Ok(())
    }

    #[inline(always)]
    fn try_extend(&mut self, bytes: &[u8]) -> postcard::Result<()> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<Vec<u8>> {
        Ok(self.0)
    }
}

/// A message whose body would pass [`MAX_FRAME_BYTES`]: the peer would refuse the frame
/// (and a worker exits on it), so it is refused before it is built. Like a length-delimited
/// codec, the encoder bounds what it writes as well as what the reader accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameTooLarge {
    /// The body's size in bytes.
    pub size: usize,
    /// The bound it passes ([`MAX_FRAME_BYTES`]).
    pub limit: usize,
}

impl std::fmt::Display for FrameTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "a frame body of {} bytes passes the bound of {} bytes",
            self.size, self.limit
        )
    }
}

impl std::error::Error for FrameTooLarge {}

/// The whole frame of `msg`: the length prefix, then its postcard body, written in place into
/// one buffer sized exactly beforehand (the sizing pass counts, it copies nothing). A body over
/// [`MAX_FRAME_BYTES`] is refused after the sizing pass, before anything is allocated.
pub fn encode<T: Serialize>(msg: &T) -> Result<Vec<u8>, FrameTooLarge> {
    let size = postcard::experimental::serialized_size(msg).unwrap_or(0);
    if size > MAX_FRAME_BYTES {
        return Err(FrameTooLarge {
            size,
            limit: MAX_FRAME_BYTES,
        });
    }
    let mut frame = Vec::with_capacity(4 + size);
    frame.extend_from_slice(&[0; PREFIX_BYTES]);
    match postcard::serialize_with_flavor(msg, FrameWriter(frame)) {
        Ok(mut frame) => {
            let len = (frame.len() - 4) as u32;
            frame[..4].copy_from_slice(&len.to_le_bytes());
            Ok(frame)
        }
        // Unreachable for these types (every field has a known length, no Serialize impl of
        // ours can fail, Hello never gets here). Should it ever happen, a zero-length frame is
        // refused by every reader: the peer fails loudly instead of misreading.
        Err(e) => {
            debug_assert!(false, "a message failed to serialize: {e}");
            Ok(vec![0; 4])
        }
    }
}

/// The whole frame of a body already built (the frozen `Hello`, a test's hand-made frame),
/// held to the same bound as [`encode`].
pub fn encode_raw(body: &[u8]) -> Result<Vec<u8>, FrameTooLarge> {
    if body.len() > MAX_FRAME_BYTES {
        return Err(FrameTooLarge {
            size: body.len(),
            limit: MAX_FRAME_BYTES,
        });
    }
    let mut frame = Vec::with_capacity(PREFIX_BYTES + body.len());
    frame.extend_from_slice(&(body.len() as u32).to_le_bytes());
    frame.extend_from_slice(body);
    Ok(frame)
}

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
    let mut decoder = Decoder::new(limit);
    let mut prefix = [0u8; PREFIX_BYTES];
    match r.read_exact(&mut prefix) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(false),
        Err(e) => return Err(e),
    }
    let len = decoder.head(prefix)?;
    buf.clear();
    let got = r.take(len as u64).read_to_end(buf)?;
    if got < len {
        return Err(truncated(got, len));
    }
    Ok(true)
}

/// The body length a frame's 4-byte prefix announces, if it is within `1..=limit` (checked
/// before anything is allocated for the body); else an `InvalidData` error.
fn frame_len(prefix: [u8; PREFIX_BYTES], limit: usize) -> io::Result<usize> {
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
fn truncated(got: usize, len: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!("the stream ended {got} bytes into a frame of {len}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `step` bytes per read.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn stream() -> (Vec<u8>, Vec<Vec<u8>>) {
        let bodies: Vec<Vec<u8>> = vec![vec![1], vec![2; 300], vec![3, 4, 5], vec![6; 70]];
        let mut data = Vec::new();
        for b in &bodies {
            data.extend(encode_raw(b).unwrap());
        }
        (data, bodies)
    }

    #[test]
    fn frames_come_out_whole_however_the_bytes_arrive() {
        let (data, bodies) = stream();
        for step in 1..=data.len() {
            for room in [1, 7, 64, 4096] {
                let mut buf = FrameBuf::new(1000);
                let mut r = Trickle { data: &data, step };
                let mut got = Vec::new();
                while buf.read_from(&mut r, room).unwrap() > 0 {
                    while let Some(body) = buf.next_frame().unwrap() {
                        got.push(body.to_vec());
                    }
                }
                buf.end().unwrap();
                assert_eq!(got, bodies, "step {step}, room {room}");
            }
        }
    }

    #[test]
    fn a_prefix_past_the_bound_is_refused_before_its_body_arrives() {
        let mut buf = FrameBuf::new(10);
        buf.extend(&11u32.to_le_bytes());
        let e = buf.next_frame().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let mut buf = FrameBuf::new(10);
        buf.extend(&0u32.to_le_bytes());
        assert!(buf.next_frame().is_err());
    }

    #[test]
    fn a_stream_ending_inside_a_frame_is_truncated() {
        let mut buf = FrameBuf::new(10);
        buf.extend(&[5, 0, 0, 0, 1, 2]);
        assert!(buf.next_frame().unwrap().is_none());
        let e = buf.end().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert!(e.to_string().contains("2 bytes into a frame of 5"), "{e}");
        let mut buf = FrameBuf::new(10);
        buf.extend(&[5, 0]);
        assert!(buf.next_frame().unwrap().is_none());
        assert_eq!(buf.end().unwrap_err().kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn the_blocking_reader_and_the_buffer_agree() {
        let (data, bodies) = stream();
        let mut r = &data[..];
        let mut body = Vec::new();
        for b in &bodies {
            assert!(read_frame_within(&mut r, &mut body, 1000).unwrap());
            assert_eq!(&body, b);
        }
        assert!(!read_frame_within(&mut r, &mut body, 1000).unwrap());
        let mut r = &data[..];
        assert!(read_frame_within(&mut r, &mut body, 100).unwrap());
        let e = read_frame_within(&mut r, &mut body, 100).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "300 bytes pass 100");
    }
}
