//! The snapshot file (snapshot.rs): a file from another build is refused and the worker builds
//! its own; a file written as `--write-snapshot` writes it gives working isolates.

use super::{in_context, on_v8_thread};
use crate::engine::isolate::Prepared;
use crate::engine::snapshot::{self, decode, encode, fingerprint, Origin};

/// Evaluates `code` in a fresh isolate made from `snap`.
fn eval_in(snap: &snapshot::Snapshot, code: &str) -> String {
    let mut prepared = Prepared::build(64, Some(snap));
    in_context(&mut prepared, |scope| {
        let src = v8::String::new(scope, code).unwrap();
        let value = v8::Script::compile(scope, src, None)
            .unwrap()
            .run(scope)
            .unwrap();
        value.to_rust_string_lossy(scope)
    })
}

#[test]
fn the_header_is_checked() {
    let ours = fingerprint();
    let file = encode(&ours, 3, b"blob").unwrap();
    assert_eq!(decode(&file, &ours), Ok((&b"blob"[..], 3)));

    let mut other = ours;
    other[0] ^= 1;
    let stale = encode(&other, 3, b"blob").unwrap();
    assert!(decode(&stale, &ours).is_err());
    assert!(decode(&file[..file.len() - 1], &ours).is_err());
    assert!(decode(&file[..20], &ours).is_err());
    let mut bad_magic = file.clone();
    bad_magic[0] = b'X';
    assert!(decode(&bad_magic, &ours).is_err());
}

#[test]
fn a_stale_embedded_file_is_refused_and_the_snapshot_built() {
    on_v8_thread(|| {
        let (blob, index) = snapshot::create(snapshot::external_references()).unwrap();
        let mut other = fingerprint();
        other[15] ^= 0x80;
        let stale: &'static [u8] = encode(&other, index, &blob).unwrap().leak();
        let (snap, origin) = snapshot::load(Some(stale));
        assert_eq!(origin, Origin::Built);
        let snap = snap.unwrap();
        assert!(!std::ptr::eq(snap.blob, &stale[32..]));
        assert_eq!(eval_in(&snap, "typeof URL"), "function");
    });
}

#[test]
fn a_written_file_round_trips_into_a_working_isolate() {
    on_v8_thread(|| {
        let path =
            std::env::temp_dir().join(format!("codemode-snapshot-{}.bin", std::process::id()));
        let path_str = path.to_str().unwrap().to_owned();
        let _ = std::fs::remove_file(&path);
        assert_eq!(snapshot::write(&path_str), Ok("written"));
        assert_eq!(snapshot::write(&path_str), Ok("up to date"));
        let file: &'static [u8] = std::fs::read(&path).unwrap().leak();
        std::fs::remove_file(&path).unwrap();

        let (snap, origin) = snapshot::load(Some(file));
        assert_eq!(origin, Origin::Embedded);
        let snap = snap.unwrap();
        // The blob is the file's, used in place.
        assert!(std::ptr::eq(snap.blob, &file[32..]));
        // Natives (external references) and the runtime's JS both work.
        let code = "new URL('https://a.example/p?q=42').searchParams.get('q') + ' ' + \
                    new TextDecoder().decode(new TextEncoder().encode('ü')) + ' ' + \
                    typeof structuredClone + ' ' + typeof WebAssembly";
        assert_eq!(eval_in(&snap, code), "42 ü function undefined");
    });
}
