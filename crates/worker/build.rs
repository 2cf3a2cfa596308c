//! The ArrayBuffer allocator shim (src/engine/metered_allocator.cc, see its header), and two
//! things for the worker's snapshot (src/snapshot.rs):
//!
//! - `CODEMODE_SOURCES_HASH`: a hash of every file under `src/` (the runtime's JS and the Rust
//!   that builds the snapshot among them). A snapshot file records the hash of the binary that
//!   wrote it; a binary accepts an embedded snapshot only with its own hash, so a stale one can
//!   never be used.
//! - With `CODEMODE_SNAPSHOT=<absolute path>` (set by scripts/build.sh), the cfg
//!   `codemode_embedded_snapshot` and `CODEMODE_SNAPSHOT_FILE`: the file is embedded. Without it
//!   nothing is embedded and the worker builds the snapshot when it starts.

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo::rustc-check-cfg=cfg(codemode_embedded_snapshot)");
    println!("cargo::rerun-if-changed=src");
    println!("cargo::rerun-if-env-changed=CODEMODE_SNAPSHOT");

    cc::Build::new()
        .cpp(true)
        .file("src/engine/metered_allocator.cc")
        .flag("-fno-rtti")
        .flag("-fno-exceptions")
        .flag("-std=c++17")
        .warnings(true)
        .compile("codemode_metered_allocator");

    let mut files = Vec::new();
    list(Path::new("src"), &mut files);
    files.sort();
    let mut hash = Fnv::default();
    for file in &files {
        let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        hash.part(file.to_string_lossy().as_bytes());
        hash.part(&bytes);
    }
    println!("cargo::rustc-env=CODEMODE_SOURCES_HASH={:032x}", hash.0);

    if let Some(path) = std::env::var_os("CODEMODE_SNAPSHOT").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_absolute() && path.is_file(),
            "CODEMODE_SNAPSHOT must be the absolute path of a file written by `codemode-worker --write-snapshot`: {}",
            path.display()
        );
        println!("cargo::rerun-if-changed={}", path.display());
        println!("cargo::rustc-cfg=codemode_embedded_snapshot");
        println!("cargo::rustc-env=CODEMODE_SNAPSHOT_FILE={}", path.display());
    }
}

/// Every file under `dir`, recursively.
fn list(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            list(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// FNV-1a, 128 bits: a staleness check, not a defence against an adversary (whoever can write
/// the build's files can write the binary).
struct Fnv(u128);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0x6c62272e07bb014262b821756295c58d)
    }
}

impl Fnv {
    /// Hashes `bytes` preceded by their length, so parts cannot run into each other.
    fn part(&mut self, bytes: &[u8]) {
        for &b in (bytes.len() as u64).to_le_bytes().iter().chain(bytes) {
            self.0 ^= u128::from(b);
            self.0 = self.0.wrapping_mul(0x0000000001000000000000000000013b);
        }
    }
}
