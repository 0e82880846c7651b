// SPDX-License-Identifier: GPL-2.0

//! DDP (RFC 5041): the control word shared with RDMAP, the tagged and untagged
//! headers, and the placement checks that need QP state.
//!
//! Byte layouts follow RFC 5041 section 4 and the C siw's `iwarp.h`. The 16-bit
//! control word is the DDP control byte followed by the RDMAP control byte (the
//! untagged header's `RsvdULP[0:7]`, RFC 5040 section 4.1):
//!
//! | bits (of the big-endian u16) | field |
//! |---|---|
//! | `0x8000` | T, tagged |
//! | `0x4000` | L, last segment of the message |
//! | `0x3C00` | DDP reserved |
//! | `0x0300` | DV, DDP version (1) |
//! | `0x00C0` | RV, RDMAP version (1) |
//! | `0x0030` | RDMAP reserved |
//! | `0x000F` | RDMAP opcode |

use super::error::{BufferTooSmall, TermError};
use super::wire::{Reader, Writer};

/// DDP version carried in the DV field (RFC 5041 section 4.1).
pub const DDP_VERSION: u8 = 1;
/// RDMAP version carried in the RV field (RFC 5040 section 4.1).
pub const RDMAP_VERSION: u8 = 1;

/// T: the segment targets a tagged buffer.
pub const CTRL_TAGGED: u16 = 0x8000;
/// L: the last segment of a DDP message.
pub const CTRL_LAST: u16 = 0x4000;
/// DDP reserved bits: sent as zero, not checked.
pub const CTRL_DDP_RSVD: u16 = 0x3C00;
/// DV: DDP version.
pub const CTRL_DDP_VERSION: u16 = 0x0300;
/// RV: RDMAP version.
pub const CTRL_RDMAP_VERSION: u16 = 0x00C0;
/// RDMAP reserved bits: sent as zero, ignored by the receiver.
pub const CTRL_RDMAP_RSVD: u16 = 0x0030;
/// The RDMAP opcode.
pub const CTRL_OPCODE: u16 = 0x000F;

/// DDP queue number of Send messages (RFC 5040 section 4.1 figure 4).
pub const QN_SEND: u32 = 0;
/// DDP queue number of RDMA Read Request messages (and RFC 7306 Atomic Requests).
pub const QN_READ_REQUEST: u32 = 1;
/// DDP queue number of Terminate messages.
pub const QN_TERMINATE: u32 = 2;
/// DDP queue number of RFC 7306 Atomic Response messages.
pub const QN_ATOMIC_RESPONSE: u32 = 3;
/// The number of untagged queues this implementation knows (0 to 3).
pub const QN_COUNT: u32 = 4;

/// The first MSN of every queue (RFC 5041 section 4.3: "The initial value for MSN
/// MUST be one").
pub const MSN_INITIAL: u32 = 1;

/// Length of the DDP tagged header without the control word: STag and TO.
pub const TAGGED_LEN: usize = 12;
/// Length of the DDP untagged header without the control word: RsvdULP/Invalidate
/// STag, QN, MSN and MO.
pub const UNTAGGED_LEN: usize = 16;

/// The 16-bit DDP/RDMAP control word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ctrl(pub u16);

impl Ctrl {
    /// Builds a control word with DV = RV = 1, zero reserved bits and the given flags.
    pub fn new(tagged: bool, last: bool, opcode: u8) -> Self {
        let mut v = 0x0100 | 0x0040 | (u16::from(opcode) & CTRL_OPCODE);
        if tagged {
            v |= CTRL_TAGGED;
        }
        if last {
            v |= CTRL_LAST;
        }
        Self(v)
    }

    /// The T flag.
    pub const fn tagged(self) -> bool {
        self.0 & CTRL_TAGGED != 0
    }

    /// The L flag.
    pub const fn last(self) -> bool {
        self.0 & CTRL_LAST != 0
    }

    /// The DV field.
    pub const fn ddp_version(self) -> u8 {
        self.0.to_be_bytes()[0] & 0x03
    }

    /// The RV field.
    pub const fn rdmap_version(self) -> u8 {
        (self.0.to_be_bytes()[1] & 0xC0) >> 6
    }

    /// The raw 4-bit opcode.
    pub const fn opcode(self) -> u8 {
        self.0.to_be_bytes()[1] & 0x0F
    }

    /// Checks the versions (RFC 5041 section 4.1 DV, RFC 5040 section 4.1 RV), in the
    /// order the C siw checks them (`siw_get_hdr()`): DDP first, then RDMAP.
    pub const fn check_versions(self) -> Result<(), TermError> {
        if self.ddp_version() != DDP_VERSION {
            return Err(if self.tagged() {
                TermError::DdpTaggedVersion
            } else {
                TermError::DdpUntaggedVersion
            });
        }
        if self.rdmap_version() != RDMAP_VERSION {
            return Err(TermError::RdmapVersion);
        }
        Ok(())
    }
}

/// The tagged buffer model header after the control word (RFC 5041 section 4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaggedHdr {
    /// The Data Sink's Steering Tag.
    pub stag: u32,
    /// The Tagged Offset of the first payload byte of this segment.
    pub to: u64,
}

impl TaggedHdr {
    /// Writes the 12 bytes after the control word.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, BufferTooSmall> {
        let mut w = Writer::new(out);
        self.write(&mut w).ok_or(BufferTooSmall)?;
        Ok(w.len())
    }

    /// Appends the fields to `w` (the FPDU header encoder writes them in place).
    pub(super) fn write(&self, w: &mut Writer<'_>) -> Option<()> {
        w.u32(self.stag)?;
        w.u64(self.to)
    }

    /// Reads the 12 bytes after the control word.
    pub fn parse(buf: &[u8]) -> Option<(Self, usize)> {
        let mut r = Reader::new(buf);
        let stag = r.u32()?;
        let to = r.u64()?;
        Some((Self { stag, to }, TAGGED_LEN))
    }
}

/// The untagged buffer model header after the control word (RFC 5041 section 4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UntaggedHdr {
    /// `RsvdULP[8:39]`: the Invalidate STag of Send with Invalidate, otherwise zero
    /// (RFC 5040 section 4.1).
    pub rsvd_ulp: u32,
    /// Queue Number.
    pub qn: u32,
    /// Message Sequence Number.
    pub msn: u32,
    /// Message Offset of the first payload byte of this segment.
    pub mo: u32,
}

impl UntaggedHdr {
    /// Writes the 16 bytes after the control word.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, BufferTooSmall> {
        let mut w = Writer::new(out);
        self.write(&mut w).ok_or(BufferTooSmall)?;
        Ok(w.len())
    }

    /// Appends the fields to `w` (the FPDU header encoder writes them in place).
    pub(super) fn write(&self, w: &mut Writer<'_>) -> Option<()> {
        w.u32(self.rsvd_ulp)?;
        w.u32(self.qn)?;
        w.u32(self.msn)?;
        w.u32(self.mo)
    }

    /// Reads the 16 bytes after the control word.
    pub fn parse(buf: &[u8]) -> Option<(Self, usize)> {
        let mut r = Reader::new(buf);
        let rsvd_ulp = r.u32()?;
        let qn = r.u32()?;
        let msn = r.u32()?;
        let mo = r.u32()?;
        Some((
            Self {
                rsvd_ulp,
                qn,
                msn,
                mo,
            },
            UNTAGGED_LEN,
        ))
    }
}

/// Either DDP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DdpHdr {
    /// Tagged buffer model.
    Tagged(TaggedHdr),
    /// Untagged buffer model.
    Untagged(UntaggedHdr),
}

/// Returns whether `msn` lies in the window of `count` MSNs starting at `first`,
/// modulo 2^32 (RFC 5041 section 4.3: the MSN wraps to 0 after 0xFFFFFFFF).
pub const fn msn_in_window(msn: u32, first: u32, count: u32) -> bool {
    msn.wrapping_sub(first) < count
}

/// The state of one untagged queue that the placement check needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct UntaggedQueue {
    /// The MSN assigned to the first available buffer of the queue.
    pub msn_first: u32,
    /// The number of buffers available (posted and not yet consumed).
    pub buffers: u32,
    /// The length of the buffer the segment's MSN selects.
    pub buf_len: u32,
}

/// The placement checks of a non-zero-length untagged segment, RFC 5041 section 7.1,
/// in the order the RFC lists them:
///
/// 1. the QN is valid for this stream (`qn < queue_count`), else Invalid QN;
/// 2. the QN and MSN have an associated buffer, else Invalid MSN - no buffer;
/// 5. the MSN lies between the MSNs of the first and the last available buffer,
///    else Invalid MSN - MSN range is not valid;
/// 3. the MO falls inside the buffer, else Invalid MO;
/// 4. MO plus the segment payload length falls inside the buffer, else DDP Message
///    too long for available buffer.
///
/// `queue` is `None` when the QN has no buffers at all.
pub fn check_untagged(
    hdr: &UntaggedHdr,
    seg_len: u32,
    queue_count: u32,
    queue: Option<&UntaggedQueue>,
) -> Result<(), TermError> {
    if hdr.qn >= queue_count {
        return Err(TermError::DdpUntaggedInvalidQn);
    }
    let Some(q) = queue else {
        return Err(TermError::DdpUntaggedNoBuffer);
    };
    if q.buffers == 0 {
        return Err(TermError::DdpUntaggedNoBuffer);
    }
    if !msn_in_window(hdr.msn, q.msn_first, q.buffers) {
        return Err(TermError::DdpUntaggedMsnRange);
    }
    if hdr.mo > q.buf_len {
        return Err(TermError::DdpUntaggedInvalidMo);
    }
    match hdr.mo.checked_add(seg_len) {
        Some(end) if end <= q.buf_len => Ok(()),
        _ => Err(TermError::DdpUntaggedTooLong),
    }
}

/// The bounds checks of a tagged segment against the registered region
/// `[base, base + len)` of its STag (RFC 5041 section 7.1, tagged checks 3 to 5):
/// a 64-bit wrap of TO plus length gives TO wrap, anything outside the region gives
/// Base or bounds violation. Zero-length segments are not checked ("The STag and TO
/// fields MUST NOT be checked for a zero-length Tagged DDP Message", RFC 5041 section
/// 5.2). STag validity (checks 1 and 2) needs the STag lookup and stays with the
/// caller: it reports [`TermError::DdpTaggedInvalidStag`] or
/// [`TermError::DdpTaggedStagNotAssociated`].
pub fn check_tagged_bounds(base: u64, len: u64, to: u64, seg_len: u32) -> Result<(), TermError> {
    if seg_len == 0 {
        return Ok(());
    }
    let Some(end) = to.checked_add(u64::from(seg_len)) else {
        return Err(TermError::DdpTaggedToWrap);
    };
    let region_end = base.saturating_add(len);
    if to < base || end > region_end {
        return Err(TermError::DdpTaggedBaseBounds);
    }
    Ok(())
}

/// The RDMAP checks of a non-zero-length RDMA Read Request against the source region
/// `[base, base + len)` (RFC 5040 section 7.2, checks 4c to 4e): a wrap of SrcTO plus
/// RDMARDSZ gives TO wrap, anything outside gives Base or bounds violation (both
/// Remote Protection errors). A zero-length read is not validated (RFC 5040 section
/// 5.2.1).
pub fn check_read_source(base: u64, len: u64, src_to: u64, size: u32) -> Result<(), TermError> {
    if size == 0 {
        return Ok(());
    }
    let Some(end) = src_to.checked_add(u64::from(size)) else {
        return Err(TermError::RdmapToWrap);
    };
    if src_to < base || end > base.saturating_add(len) {
        return Err(TermError::RdmapBaseBounds);
    }
    Ok(())
}

#[cfg(test)]
#[allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used
)]
mod tests {
    use super::*;

    #[test]
    fn ctrl_bits_match_c_siw() {
        // iwarp.h DDP_FLAG_*, *_MASK_*: a last untagged Send is 0x4143.
        let c = Ctrl::new(false, true, 3);
        assert_eq!(c.0, 0x4143);
        assert_eq!(c.0.to_be_bytes(), [0x41, 0x43]);
        let w = Ctrl::new(true, false, 0);
        assert_eq!(w.0, 0x8140);
        assert!(w.tagged() && !w.last());
        assert_eq!(w.ddp_version(), 1);
        assert_eq!(w.rdmap_version(), 1);
        assert_eq!(Ctrl(0xC14F).opcode(), 0xF);
    }

    #[test]
    fn version_errors_use_the_model_of_the_segment() {
        assert_eq!(
            Ctrl(0x8040).check_versions(),
            Err(TermError::DdpTaggedVersion)
        );
        assert_eq!(
            Ctrl(0x0240).check_versions(),
            Err(TermError::DdpUntaggedVersion)
        );
        assert_eq!(Ctrl(0x0100).check_versions(), Err(TermError::RdmapVersion));
        assert_eq!(Ctrl(0x0180).check_versions(), Err(TermError::RdmapVersion));
        assert_eq!(Ctrl(0x0140).check_versions(), Ok(()));
        // Reserved bits are not checked (RFC 5041 section 4.1).
        assert_eq!(Ctrl(0x3d70).check_versions(), Ok(()));
    }

    #[test]
    fn headers_round_trip() {
        let t = TaggedHdr {
            stag: 0x1234_5678,
            to: 0x0102_0304_0506_0708,
        };
        let mut b = [0u8; 12];
        assert_eq!(t.encode(&mut b), Ok(12));
        assert_eq!(b, [0x12, 0x34, 0x56, 0x78, 1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(TaggedHdr::parse(&b), Some((t, 12)));
        assert_eq!(t.encode(&mut [0u8; 11]), Err(BufferTooSmall));
        assert_eq!(TaggedHdr::parse(&b[..11]), None);

        let u = UntaggedHdr {
            rsvd_ulp: 0xdead_beef,
            qn: 1,
            msn: 2,
            mo: 3,
        };
        let mut b = [0u8; 16];
        assert_eq!(u.encode(&mut b), Ok(16));
        assert_eq!(
            b,
            [0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3]
        );
        assert_eq!(UntaggedHdr::parse(&b), Some((u, 16)));
    }

    #[test]
    fn msn_window_wraps() {
        assert!(msn_in_window(1, 1, 1));
        assert!(!msn_in_window(2, 1, 1));
        assert!(!msn_in_window(0, 1, 4));
        assert!(msn_in_window(0, 0xffff_fffe, 3));
        assert!(msn_in_window(0xffff_ffff, 0xffff_fffe, 3));
        assert!(!msn_in_window(1, 0xffff_fffe, 3));
        assert!(!msn_in_window(5, 5, 0));
    }

    #[test]
    fn untagged_checks_in_rfc_order() {
        let h = |qn, msn, mo| UntaggedHdr {
            rsvd_ulp: 0,
            qn,
            msn,
            mo,
        };
        let q = UntaggedQueue {
            msn_first: 10,
            buffers: 2,
            buf_len: 100,
        };
        assert_eq!(check_untagged(&h(0, 10, 0), 100, 1, Some(&q)), Ok(()));
        assert_eq!(check_untagged(&h(0, 11, 50), 50, 1, Some(&q)), Ok(()));
        assert_eq!(
            check_untagged(&h(1, 10, 0), 1, 1, Some(&q)),
            Err(TermError::DdpUntaggedInvalidQn)
        );
        assert_eq!(
            check_untagged(&h(0, 10, 0), 1, 1, None),
            Err(TermError::DdpUntaggedNoBuffer)
        );
        let empty = UntaggedQueue { buffers: 0, ..q };
        assert_eq!(
            check_untagged(&h(0, 10, 0), 1, 1, Some(&empty)),
            Err(TermError::DdpUntaggedNoBuffer)
        );
        assert_eq!(
            check_untagged(&h(0, 12, 0), 1, 1, Some(&q)),
            Err(TermError::DdpUntaggedMsnRange)
        );
        assert_eq!(
            check_untagged(&h(0, 9, 0), 1, 1, Some(&q)),
            Err(TermError::DdpUntaggedMsnRange)
        );
        assert_eq!(
            check_untagged(&h(0, 10, 101), 0, 1, Some(&q)),
            Err(TermError::DdpUntaggedInvalidMo)
        );
        assert_eq!(
            check_untagged(&h(0, 10, 60), 41, 1, Some(&q)),
            Err(TermError::DdpUntaggedTooLong)
        );
        assert_eq!(
            check_untagged(
                &h(0, 10, u32::MAX),
                u32::MAX,
                1,
                Some(&UntaggedQueue {
                    buf_len: u32::MAX,
                    ..q
                })
            ),
            Err(TermError::DdpUntaggedTooLong)
        );
    }

    #[test]
    fn tagged_bounds() {
        assert_eq!(check_tagged_bounds(0x1000, 0x100, 0x1000, 0x100), Ok(()));
        assert_eq!(check_tagged_bounds(0x1000, 0x100, 0x10ff, 1), Ok(()));
        assert_eq!(
            check_tagged_bounds(0x1000, 0x100, 0x10ff, 2),
            Err(TermError::DdpTaggedBaseBounds)
        );
        assert_eq!(
            check_tagged_bounds(0x1000, 0x100, 0xfff, 1),
            Err(TermError::DdpTaggedBaseBounds)
        );
        assert_eq!(
            check_tagged_bounds(0, u64::MAX, u64::MAX, 1),
            Err(TermError::DdpTaggedToWrap)
        );
        // Zero-length segments are never checked.
        assert_eq!(check_tagged_bounds(0x1000, 0, 5, 0), Ok(()));
        assert_eq!(check_read_source(0, 10, 0, 10), Ok(()));
        assert_eq!(
            check_read_source(0, 10, 1, 10),
            Err(TermError::RdmapBaseBounds)
        );
        assert_eq!(
            check_read_source(0, 10, u64::MAX, 2),
            Err(TermError::RdmapToWrap)
        );
        assert_eq!(check_read_source(0, 0, u64::MAX, 0), Ok(()));
    }
}
