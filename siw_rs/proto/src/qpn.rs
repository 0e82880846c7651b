// SPDX-License-Identifier: GPL-2.0

//! QP numbers: a keyed permutation of the 24-bit number space.
//!
//! A device numbers its QPs by running a counter through [`permute`], a balanced Feistel
//! network over two 12-bit halves whose round function the caller keys (the driver uses
//! SipHash with a per-device random key). A permutation never repeats a number before the
//! counter has gone through all 2^24 values, so a destroyed QP's number does not come back
//! soon; and without the key, a QP's number says nothing about the numbers of the QPs
//! created before or after it (Luby and Rackoff: four or more rounds of a pseudo-random
//! function give a pseudo-random permutation). 24 bits because that is what the rdma_cm
//! passes on (`ucma_copy_conn_param()` masks `qp_num` with `0xFFFFFF`): a wider number
//! would be named by its low bits.

/// How many bits a QP number has.
pub const QPN_BITS: u32 = 24;

/// The largest QP number plus one.
pub const QPN_SPACE: u32 = 1 << QPN_BITS;

const HALF_BITS: u32 = QPN_BITS / 2;
const HALF_MASK: u32 = (1 << HALF_BITS) - 1;

/// Feistel rounds: more than the four the theory asks for, for the small halves' sake.
pub const ROUNDS: u32 = 8;

/// The QP number for counter value `n` (taken modulo [`QPN_SPACE`]).
///
/// `round(r, half)` is the keyed round function for round `r` (`0..ROUNDS`) of the 12-bit
/// value `half`; only its low 12 bits are used. Any function gives a permutation; a
/// pseudo-random one makes the numbers unpredictable.
pub fn permute(n: u32, mut round: impl FnMut(u32, u32) -> u64) -> u32 {
    let mut left = (n >> HALF_BITS) & HALF_MASK;
    let mut right = n & HALF_MASK;
    for r in 0..ROUNDS {
        // Only the low 12 bits of the round function count; the cast keeps 32 of its 64.
        let f = (round(r, right) as u32) & HALF_MASK;
        (left, right) = (right, left ^ f);
    }
    (left << HALF_BITS) | right
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    extern crate std;

    use super::*;
    use std::{vec, vec::Vec};

    /// A cheap keyed mix standing in for SipHash: a permutation holds for any function.
    fn mix(key: u64) -> impl FnMut(u32, u32) -> u64 {
        move |r, x| {
            let mut v = key ^ (u64::from(r) << 32) ^ u64::from(x);
            v = (v ^ (v >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
            v ^ (v >> 29)
        }
    }

    #[test]
    fn every_number_once() {
        let mut seen = vec![0u64; (QPN_SPACE / 64) as usize];
        let mut f = mix(0x1234_5678_9abc_def0);
        for n in 0..QPN_SPACE {
            let q = permute(n, &mut f);
            assert!(q < QPN_SPACE);
            let (w, b) = ((q / 64) as usize, q % 64);
            assert_eq!(seen[w] & (1 << b), 0, "{q:#x} twice (counter {n:#x})");
            seen[w] |= 1 << b;
        }
    }

    #[test]
    fn counter_wraps_at_24_bits() {
        let mut f = mix(7);
        for n in [0, 1, 0x00ab_cdef, QPN_SPACE - 1] {
            assert_eq!(permute(n, &mut f), permute(n + QPN_SPACE, &mut f));
        }
    }

    #[test]
    fn neighbours_scatter() {
        // Consecutive counters land far apart: no short run of numbers follows another.
        let mut f = mix(42);
        let q: Vec<u32> = (0..1000).map(|n| permute(n, &mut f)).collect();
        let close = q.windows(2).filter(|w| w[0].abs_diff(w[1]) < 1024).count();
        assert!(close < 5, "{close} of 999 neighbours within 1024");
    }

    #[test]
    fn the_key_decides() {
        let a: Vec<u32> = (0..64).map(|n| permute(n, mix(1))).collect();
        let b: Vec<u32> = (0..64).map(|n| permute(n, mix(2))).collect();
        assert_ne!(a, b);
    }
}
