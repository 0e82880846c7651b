// SPDX-License-Identifier: GPL-2.0

//! CRC32C (Castagnoli) as used by MPA (RFC 5044 section 4.4).
//!
//! MPA computes the FPDU CRC "in the manner described in the iSCSI Protocol document
//! for Header and Data Digests" (RFC 5044 section 4.4, RFC 3720 section 12.1 and
//! appendix B.4): reflected polynomial 0x82F63B78, initial value all ones, final
//! value inverted.
//!
//! Byte order on the wire: the final CRC value is sent least significant byte first.
//! This is what RFC 5044 figures 5 and 6 show (the example FPDU with value
//! 0x83992352 carries the bytes `52 23 99 83`; the known-answer tests recompute both
//! figures), what RFC 3720 appendix B.4 shows (`aa 36 91 8a` for 0x8a9136aa), and
//! what the C siw does: `siw_crc_final()` stores `~crc` with `put_unaligned_le32()`
//! (`siw.h:683-686` in Linux 7.3), used for transmit at `siw_qp_tx.c:252,588` and
//! compared on receive in `siw_get_trailer()` (`siw_qp_rx.c:987-990`). Use
//! [`crc_to_wire`] and [`crc_from_wire`] for the conversion.
//!
//! The receiver and the transmit helpers are generic over the [`Crc32c`] trait. In the
//! kernel it is implemented on top of the kernel's `crc32c()`; on the host
//! [`SoftCrc32c`] (always available) or `HostCrc32c` (feature `host-crc`,
//! hardware-accelerated) implement it.

/// An incremental CRC32C computation.
///
/// `reset` starts a new computation, `update` feeds bytes, `value` returns the final
/// CRC32C of all bytes fed since the last reset (already inverted, i.e. the number
/// that RFC 3720 appendix B.4 lists). `value` does not end the computation: more
/// bytes may be fed afterwards.
pub trait Crc32c {
    /// Starts a new computation.
    fn reset(&mut self);
    /// Feeds `data`.
    fn update(&mut self, data: &[u8]);
    /// Returns the CRC32C of the bytes fed since the last reset.
    fn value(&self) -> u32;
}

/// A [`Crc32c`] that runs over received octets of kind `B` (a [`super::rx::Input`]) where
/// they lie: the kernel's runs over an skb's pages without making a `&[u8]` of them. Every
/// [`Crc32c`] runs over a `&[u8]`.
pub trait CrcOf<B>: Crc32c {
    /// Feeds `data`.
    fn update_from(&mut self, data: B);
}

impl<'a, C: Crc32c> CrcOf<&'a [u8]> for C {
    fn update_from(&mut self, data: &'a [u8]) {
        self.update(data);
    }
}

/// The reflected CRC32C polynomial (Castagnoli), RFC 3720 section 12.1.
pub const POLY: u32 = 0x82F6_3B78;

/// Converts a CRC value into the four bytes sent in the FPDU CRC field.
pub const fn crc_to_wire(crc: u32) -> [u8; 4] {
    crc.to_le_bytes()
}

/// Converts the four bytes of a received FPDU CRC field into a CRC value.
pub const fn crc_from_wire(bytes: [u8; 4]) -> u32 {
    u32::from_le_bytes(bytes)
}

/// Slicing-by-8 tables: `TABLES[0]` is the classic byte-at-a-time table and
/// `TABLES[k][i]` advances `TABLES[k - 1][i]` by one more zero byte.
static TABLES: [[u32; 256]; 8] = make_tables();

// Table generation runs at compile time only: an out-of-range index or an overflow
// here would be a compile error, never a run-time panic.
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
const fn make_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0usize;
    while i < 256 {
        let mut crc = i as u32;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
            bit += 1;
        }
        t[0][i] = crc;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0usize;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

#[inline(always)]
fn tab(k: usize, b: u8) -> u32 {
    // Both indices are in range (k < 8 by construction, b < 256 by type); `get` keeps
    // the code free of panicking paths and compiles to a plain load.
    match TABLES.get(k) {
        Some(t) => t.get(usize::from(b)).copied().unwrap_or(0),
        None => 0,
    }
}

/// Advances a raw (not inverted) CRC32C register over `data`.
///
/// This is the kernel's `crc32c(crc, p, len)` contract: start with `!0`, invert the
/// result. Eight bytes are processed per step (slicing-by-8).
pub fn crc32c_update(mut crc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(8);
    for chunk in &mut chunks {
        let Some((lo, hi)) = chunk.split_first_chunk::<4>() else {
            break;
        };
        let Some(hi) = hi.first_chunk::<4>() else {
            break;
        };
        let a = (crc ^ u32::from_le_bytes(*lo)).to_le_bytes();
        crc = tab(7, a[0])
            ^ tab(6, a[1])
            ^ tab(5, a[2])
            ^ tab(4, a[3])
            ^ tab(3, hi[0])
            ^ tab(2, hi[1])
            ^ tab(1, hi[2])
            ^ tab(0, hi[3]);
    }
    for &b in chunks.remainder() {
        let idx = crc.to_le_bytes()[0] ^ b;
        crc = tab(0, idx) ^ (crc >> 8);
    }
    crc
}

/// Returns the CRC32C of `data` in one call.
pub fn crc32c(data: &[u8]) -> u32 {
    !crc32c_update(!0, data)
}

/// The portable, table-driven CRC32C (slicing-by-8). No `unsafe`, no allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftCrc32c {
    state: u32,
}

impl SoftCrc32c {
    /// Returns a computation with no bytes fed yet.
    pub const fn new() -> Self {
        Self { state: !0 }
    }
}

impl Default for SoftCrc32c {
    fn default() -> Self {
        Self::new()
    }
}

impl Crc32c for SoftCrc32c {
    fn reset(&mut self) {
        self.state = !0;
    }

    fn update(&mut self, data: &[u8]) {
        self.state = crc32c_update(self.state, data);
    }

    fn value(&self) -> u32 {
        !self.state
    }
}

/// A hardware-accelerated CRC32C for the host, with the `crc32c` crate's own software
/// fallback. Only built with the `host-crc` feature, never in the kernel.
#[cfg(feature = "host-crc")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostCrc32c {
    // The crc32c crate keeps the running value already finalised.
    value: u32,
}

#[cfg(feature = "host-crc")]
impl HostCrc32c {
    /// Returns a computation with no bytes fed yet.
    pub const fn new() -> Self {
        Self { value: 0 }
    }
}

#[cfg(feature = "host-crc")]
impl Default for HostCrc32c {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(feature = "host-crc")]
impl Crc32c for HostCrc32c {
    fn reset(&mut self) {
        self.value = 0;
    }

    fn update(&mut self, data: &[u8]) {
        self.value = ::crc32c::crc32c_append(self.value, data);
    }

    fn value(&self) -> u32 {
        self.value
    }
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used
)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    // RFC 3720 appendix B.4, "CRC Examples".
    #[test]
    fn rfc3720_b4_32_zero_bytes() {
        assert_eq!(crc32c(&[0u8; 32]), 0x8a91_36aa);
        assert_eq!(crc_to_wire(crc32c(&[0u8; 32])), [0xaa, 0x36, 0x91, 0x8a]);
    }

    #[test]
    fn rfc3720_b4_32_ff_bytes() {
        assert_eq!(crc32c(&[0xffu8; 32]), 0x62a8_ab43);
    }

    #[test]
    fn rfc3720_b4_incrementing() {
        let v: Vec<u8> = (0u8..32).collect();
        assert_eq!(crc32c(&v), 0x46dd_794e);
    }

    #[test]
    fn rfc3720_b4_decrementing() {
        let v: Vec<u8> = (0u8..32).rev().collect();
        assert_eq!(crc32c(&v), 0x113f_db5c);
    }

    #[test]
    fn rfc3720_b4_iscsi_read_pdu() {
        // "An iSCSI - SCSI Read (10) Command PDU" from RFC 3720 appendix B.4.
        let pdu: [u8; 48] = [
            0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
            0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, //
            0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00, //
            0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, //
        ];
        assert_eq!(crc32c(&pdu), 0xd996_3a56);
        assert_eq!(crc_to_wire(crc32c(&pdu)), [0x56, 0x3a, 0x96, 0xd9]);
    }

    #[test]
    fn check_value_123456789() {
        // The standard CRC catalogue check value of CRC-32C.
        assert_eq!(crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn incremental_equals_one_shot_at_every_split() {
        let data: Vec<u8> = (0u32..300).map(|i| (i * 7 + 3) as u8).collect();
        let whole = crc32c(&data);
        for split in 0..data.len() {
            let mut c = SoftCrc32c::new();
            c.update(&data[..split]);
            c.update(&data[split..]);
            assert_eq!(c.value(), whole, "split {split}");
        }
        let mut c = SoftCrc32c::new();
        c.update(&data);
        c.reset();
        c.update(b"123456789");
        assert_eq!(c.value(), 0xe306_9283);
    }

    #[test]
    fn matches_crc32c_crate() {
        let data: Vec<u8> = (0u32..4099)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in [0usize, 1, 7, 8, 9, 15, 16, 63, 64, 65, 1000, 4099] {
            assert_eq!(
                crc32c(&data[..len]),
                ::crc32c::crc32c(&data[..len]),
                "len {len}"
            );
        }
    }

    #[cfg(feature = "host-crc")]
    #[test]
    fn host_crc_matches_soft() {
        let mut h = HostCrc32c::new();
        h.update(&[0u8; 32]);
        assert_eq!(h.value(), 0x8a91_36aa);
    }
}
