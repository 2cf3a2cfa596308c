//! The runtime (the JS of `js/`) as a V8 startup snapshot: each isolate deserializes a context
//! with every global already installed instead of running the bootstrap again.
//!
//! scripts/build.sh builds the snapshot once (`codemode-worker --write-snapshot <file>`) and
//! embeds the file into the worker it ships (build.rs). A worker with an embedded snapshot made
//! from its own sources, V8 version and V8 flags uses it as it is; otherwise (a plain
//! `cargo build`, or a stale file) it builds the snapshot when it starts, as every worker did
//! before, and says so on stderr when a stale file was refused.
//!
//! The file: [`MAGIC`], the [`fingerprint`] of the binary that wrote it, the helpers' index in
//! the snapshot's context data (u32 LE), the blob's length (u32 LE), then the blob.

use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use crate::engine::{platform, runtime_js};
use crate::natives;

pub struct Snapshot {
    pub blob: &'static [u8],
    /// Null-terminated, so V8's CreateParams take it as it is (no copy per isolate).
    pub refs: &'static [v8::ExternalReference],
    /// Where the helpers object sits in the snapshot's context data.
    pub helpers_index: usize,
}

/// Where this process's snapshot came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The file embedded in the binary.
    Embedded,
    /// Built when the process started.
    Built,
    /// None could be built: isolates run the bootstrap.
    Absent,
}

const MAGIC: &[u8; 8] = b"CMSNAP\0\x01";
const FINGERPRINT_LEN: usize = 16;
/// A multiple of 16, so the blob after it keeps the alignment of the file.
const HEADER_LEN: usize = 32;

/// The process's snapshot. Its table of external references is plain data (addresses of
/// functions and statics) that V8 only reads.
struct Shared((Option<Snapshot>, Origin));

// SAFETY: `Snapshot` holds a `&'static [u8]` and a `&'static [v8::ExternalReference]`, both
// written once before the cell is set and never mutated; the references' raw pointers (the
// reason `ExternalReference` is not `Sync`) point at functions and statics, which any thread
// may read.
unsafe impl Sync for Shared {}
unsafe impl Send for Shared {}

static SNAPSHOT: OnceLock<Shared> = OnceLock::new();

/// What a snapshot depends on besides V8's own checks: every source of this crate (build.rs
/// hashes them, the runtime's JS and the natives' table among them), the V8 version, its build
/// flavour (the version string is the same with and without the heap sandbox) and the flags
/// V8 runs with (V8 refuses a snapshot made with other flags by aborting, not by an error).
pub fn fingerprint() -> [u8; FINGERPRINT_LEN] {
    let mut h = Sha256::new();
    for part in [
        MAGIC.as_slice(),
        env!("CODEMODE_SOURCES_HASH").as_bytes(),
        v8::V8::get_version().as_bytes(),
        platform::V8_FLAVOUR.as_bytes(),
        platform::V8_FLAGS.as_bytes(),
        std::env::consts::ARCH.as_bytes(),
    ] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part);
    }
    let mut out = [0; FINGERPRINT_LEN];
    out.copy_from_slice(&h.finalize()[..FINGERPRINT_LEN]);
    out
}

/// The snapshot file of `blob`.
pub fn encode(
    fingerprint: &[u8; FINGERPRINT_LEN],
    helpers_index: usize,
    blob: &[u8],
) -> Option<Vec<u8>> {
    let index = u32::try_from(helpers_index).ok()?;
    let len = u32::try_from(blob.len()).ok()?;
    let mut file = Vec::with_capacity(HEADER_LEN + blob.len());
    file.extend_from_slice(MAGIC);
    file.extend_from_slice(fingerprint);
    file.extend_from_slice(&index.to_le_bytes());
    file.extend_from_slice(&len.to_le_bytes());
    file.extend_from_slice(blob);
    Some(file)
}

/// The blob and helpers' index of a snapshot file, if it was written by a binary with
/// `fingerprint`; otherwise why not.
pub fn decode<'f>(
    file: &'f [u8],
    fingerprint: &[u8; FINGERPRINT_LEN],
) -> Result<(&'f [u8], usize), &'static str> {
    if file.len() < HEADER_LEN || &file[..8] != MAGIC {
        return Err("not a snapshot file of this format");
    }
    if &file[8..8 + FINGERPRINT_LEN] != fingerprint {
        return Err("it was built from other sources, V8 version or flags");
    }
    let word = |at: usize| {
        let mut w = [0; 4];
        w.copy_from_slice(&file[at..at + 4]);
        u32::from_le_bytes(w) as usize
    };
    let (index, len) = (word(24), word(28));
    let blob = &file[HEADER_LEN..];
    if blob.len() != len {
        return Err("it is truncated");
    }
    Ok((blob, index))
}

/// Every native the runtime binds: V8 records them by their index in this table.
/// Ends with the null entry V8 expects: the crate copies an unterminated table into a new one
/// for every isolate.
pub fn external_references() -> &'static [v8::ExternalReference] {
    let mut refs = natives::external_references();
    refs.push(v8::ExternalReference {
        pointer: std::ptr::null_mut(),
    });
    refs.leak()
}

/// Builds the snapshot: the runtime installed and warmed up in a fresh context. Returns the blob
/// and the helpers' index in the context data.
pub fn create(refs: &'static [v8::ExternalReference]) -> Option<(Vec<u8>, usize)> {
    let mut creator = v8::Isolate::snapshot_creator(Some(refs.into()), None);
    let helpers_index = {
        v8::scope!(let scope, &mut creator);
        let context = v8::Context::new(scope, Default::default());
        let scope = &mut v8::ContextScope::new(scope, context);
        let helpers = runtime_js::install_runtime(scope);
        runtime_js::warm_up(scope, helpers);
        scope.set_default_context(context);
        scope.add_context_data(context, helpers)
    };
    let blob = creator.create_blob(v8::FunctionCodeHandling::Keep)?;
    Some((blob.to_vec(), helpers_index))
}

/// The snapshot file embedded by build.rs, 16-byte aligned like a heap allocation.
#[cfg(codemode_embedded_snapshot)]
fn embedded() -> Option<&'static [u8]> {
    #[repr(C, align(16))]
    struct Aligned<T: ?Sized>(T);
    static FILE: &Aligned<[u8]> = &Aligned(*include_bytes!(env!("CODEMODE_SNAPSHOT_FILE")));
    Some(&FILE.0)
}

#[cfg(not(codemode_embedded_snapshot))]
fn embedded() -> Option<&'static [u8]> {
    None
}

/// The snapshot from `embedded` if it fits this binary, else one built now.
pub fn load(embedded: Option<&'static [u8]>) -> (Option<Snapshot>, Origin) {
    let refs = external_references();
    if let Some(file) = embedded {
        match decode(file, &fingerprint()) {
            Ok((blob, helpers_index)) => {
                let snap = Snapshot {
                    blob,
                    refs,
                    helpers_index,
                };
                return (Some(snap), Origin::Embedded);
            }
            Err(why) => eprintln!(
                "codemode-worker: the embedded runtime snapshot is not used ({why}); building it now"
            ),
        }
    }
    match create(refs) {
        Some((blob, helpers_index)) => {
            let snap = Snapshot {
                blob: Box::leak(blob.into_boxed_slice()),
                refs,
                helpers_index,
            };
            (Some(snap), Origin::Built)
        }
        None => {
            eprintln!("codemode-worker: the runtime snapshot could not be built; isolates will run the bootstrap instead");
            (None, Origin::Absent)
        }
    }
}

/// Sets up this process's snapshot (call once, on the main thread, after `init_v8` and before
/// the first `Prepared::new`). `use_embedded: false` builds it now even when one is embedded (V8
/// started with other flags than the embedded one was made with).
pub fn init(use_embedded: bool) -> Origin {
    let embedded = embedded().filter(|_| use_embedded);
    SNAPSHOT.get_or_init(|| Shared(load(embedded))).0 .1
}

/// The process's snapshot, once `init` has run and if there is one.
pub fn current() -> Option<&'static Snapshot> {
    SNAPSHOT.get().and_then(|Shared((snap, _))| snap.as_ref())
}

/// `codemode-worker --write-snapshot <path>`: builds the snapshot and writes its file. A file
/// already at `path` with this binary's fingerprint is left as it is (so a rebuild that changed
/// nothing does not embed it again). Runs no untrusted code.
pub fn write(path: &str) -> Result<&'static str, String> {
    let fingerprint = fingerprint();
    if let Ok(existing) = std::fs::read(path) {
        if decode(&existing, &fingerprint).is_ok() {
            return Ok("up to date");
        }
    }
    let (blob, helpers_index) =
        create(external_references()).ok_or("V8 could not build the snapshot")?;
    let file = encode(&fingerprint, helpers_index, &blob).ok_or("the snapshot is too large")?;
    let tmp = format!("{path}.tmp");
    std::fs::write(&tmp, &file).map_err(|e| format!("{tmp}: {e}"))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{path}: {e}"))?;
    Ok("written")
}
