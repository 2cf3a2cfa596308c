//! The randomness of a replayable run (docs/runtime.md, "Replayable runs (approvals)"): the
//! generators seeded by the request's `Replayable::seed`, in an isolate slot for as long as the
//! run lasts. `Math.random` draws from one stream (`seededRandom`, installed by js/replay.js),
//! `crypto.getRandomValues` and `crypto.randomUUID` from another (web.rs's `randomFill` asks
//! [`fill`] first). A run without the slot draws from V8 and the OS as ever.
//!
//! ChaCha20 (`rand_chacha`): one key from the seed, two of its streams, so the two sources are
//! independent and each is fixed by the seed alone. Whoever holds the seed can compute every
//! value: nothing drawn in a replayable run is secret from the holder of its token.

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// ChaCha20's stream that `Math.random` reads.
const MATH_STREAM: u64 = 0;
/// ChaCha20's stream that crypto's randomness reads.
const CRYPTO_STREAM: u64 = 1;

/// The run's seeded generators.
pub struct Seeded {
    math: ChaCha20Rng,
    crypto: ChaCha20Rng,
}

impl Seeded {
    pub fn new(seed: u64) -> Self {
        let stream = |n| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            rng.set_stream(n);
            rng
        };
        Seeded {
            math: stream(MATH_STREAM),
            crypto: stream(CRYPTO_STREAM),
        }
    }

    /// The next `Math.random()` value: 53 random bits in [0, 1), as V8's own.
    pub fn next_f64(&mut self) -> f64 {
        (self.math.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Fills `out` from the run's crypto stream; false when the run is not replayable (the caller
/// then draws from the OS).
pub fn fill(scope: &mut v8::PinScope, out: &mut [u8]) -> bool {
    match scope.get_slot_mut::<Seeded>() {
        Some(seeded) => {
            seeded.crypto.fill_bytes(out);
            true
        }
        None => false,
    }
}

/// `seededRandom() -> number`: `Math.random` of a replayable run. Outside one (no slot) it
/// throws: js/replay.js installs it only in a replayable run.
pub fn seeded_random(
    scope: &mut v8::PinScope,
    _: v8::FunctionCallbackArguments,
    mut rv: v8::ReturnValue,
) {
    match scope.get_slot_mut::<Seeded>().map(Seeded::next_f64) {
        Some(x) => rv.set(v8::Number::new(scope, x).into()),
        None => crate::natives::failure::throw_type_error(
            scope,
            "seededRandom: this run is not replayable",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_seed_gives_one_sequence_and_the_streams_differ() {
        let (mut a, mut b, mut c) = (Seeded::new(42), Seeded::new(42), Seeded::new(43));
        let draws = |s: &mut Seeded| (0..8).map(|_| s.next_f64()).collect::<Vec<_>>();
        let (da, db, dc) = (draws(&mut a), draws(&mut b), draws(&mut c));
        assert_eq!(da, db);
        assert_ne!(da, dc);
        assert!(da.iter().all(|x| (0.0..1.0).contains(x)));
        let (mut x, mut y) = ([0u8; 32], [0u8; 32]);
        a.crypto.fill_bytes(&mut x);
        b.crypto.fill_bytes(&mut y);
        assert_eq!(x, y);
        let mut m = [0u8; 32];
        Seeded::new(42).math.fill_bytes(&mut m);
        assert_ne!(x, m, "Math.random and crypto read different streams");
    }
}
