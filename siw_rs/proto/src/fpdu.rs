// SPDX-License-Identifier: GPL-2.0

//! MPA FPDU framing (RFC 5044 section 4): ULPDU length, padding, the CRC trailer, the
//! MULPDU and MPA markers on transmit.
//!
//! An FPDU is `ULPDU_Length (2) | ULPDU | PAD (0-3) | CRC (4)`, a multiple of four
//! octets (RFC 5044 section 4.1). When markers are in use, a 4-byte marker
//! (`RESERVED (16) | FPDUPTR (16)`, section 4.2) sits at every 512th octet of the
//! stream, counted from the first octet of the Full Operation Phase: the first marker
//! immediately precedes the first FPDU (section 4.3 and section 7.1.2 rule 7). In this
//! crate "stream position" always means that count, modulo 2^32.
//!
//! CRC coverage with markers (RFC 5044 section 4.4, "The fields which MUST be included
//! in the CRC calculation"): the CRC covers every stream octet of the FPDU except the
//! CRC field itself, markers included: from the ULPDU_Length field (or from a marker
//! that immediately precedes it, rule 2) through the pad, plus a marker that falls
//! right after the pad (rule 1). A marker right after the CRC field belongs to the
//! next FPDU (FPDUPTR 0, section 4.3). Since FPDUs and markers are both 4-byte
//! aligned in the stream, a marker never splits the length field or the CRC field.

use super::crc::{crc_to_wire, Crc32c};
use super::error::BufferTooSmall;

/// Length of the MPA ULPDU_Length field.
pub const MPA_HDR_LEN: usize = 2;
/// Length of the CRC field.
pub const CRC_LEN: usize = 4;
/// Length of a marker.
pub const MARKER_LEN: usize = 4;
/// The marker interval in stream octets (RFC 5044 section 4.3).
pub const MARKER_INTERVAL: u32 = 512;
/// The smallest MULPDU a sender may use (RFC 5044 section 4.5).
pub const MIN_MULPDU: u32 = 128;

/// The pad that makes `2 + ulpdu_len + pad` a multiple of four (RFC 5044 section 4.1).
pub fn pad_len(ulpdu_len: u16) -> usize {
    // (2 + len) mod 4, then the distance to the next multiple of four.
    usize::from(ulpdu_len.wrapping_add(2)).wrapping_neg() & 3
}

/// The length of an FPDU without markers: length field, ULPDU, pad and CRC.
pub fn fpdu_len(ulpdu_len: u16) -> usize {
    usize::from(ulpdu_len)
        .wrapping_add(MPA_HDR_LEN)
        .wrapping_add(pad_len(ulpdu_len))
        .wrapping_add(CRC_LEN)
}

/// The largest ULPDU that fits an EMSS-byte TCP segment (RFC 5044 section 4.5):
///
/// - without markers: `MULPDU = EMSS - (6 + EMSS mod 4)`;
/// - with markers: `MULPDU = EMSS - (6 + 4 * Ceiling(EMSS / 512) + EMSS mod 4)`.
///
/// The result is never below 128 octets (the sender "MUST NOT shrink the MULPDU
/// below 128 octets") and never above the 16-bit ULPDU_Length.
pub fn mulpdu(emss: u32, markers: bool) -> u16 {
    let mut overhead = 6u32.saturating_add(emss & 3);
    if markers {
        let n = emss.div_ceil(MARKER_INTERVAL);
        overhead = overhead.saturating_add(n.saturating_mul(4));
    }
    let m = emss.saturating_sub(overhead).max(MIN_MULPDU);
    u16::try_from(m).unwrap_or(u16::MAX)
}

/// The FPDU trailer: `pad` zero bytes followed by the CRC field.
///
/// Returns the bytes and how many of them to send (`pad + 4`). With CRC disabled pass
/// `crc = 0`: the field "is still present, may contain any value" (RFC 5044 section
/// 4.1), and the C siw sends zero.
pub fn trailer(pad: usize, crc: u32) -> ([u8; 7], usize) {
    let pad = pad & 3;
    let mut t = [0u8; 7];
    let c = crc_to_wire(crc);
    let n = pad.wrapping_add(CRC_LEN);
    if let Some(dst) = t.get_mut(pad..n) {
        dst.copy_from_slice(&c);
    }
    (t, n.min(7))
}

/// Encodes a marker with the given FPDUPTR (RFC 5044 section 4.2). The reserved half
/// is zero.
pub const fn encode_marker(fpduptr: u16) -> [u8; 4] {
    let p = fpduptr.to_be_bytes();
    [0, 0, p[0], p[1]]
}

/// Decodes the FPDUPTR of a marker; the two low bits "MUST always be treated as zero
/// for calculations" (RFC 5044 section 4.2).
pub const fn decode_marker(m: [u8; 4]) -> u16 {
    u16::from_be_bytes([m[2], m[3]]) & !3
}

/// One piece of the transmitted byte stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Bytes of the caller's data.
    Data(&'a [u8]),
    /// A marker to send at this point.
    Marker([u8; 4]),
}

impl Piece<'_> {
    /// The bytes of this piece.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Piece::Data(d) => d,
            Piece::Marker(m) => m,
        }
    }
}

/// The error of marker insertion: the FPDU is too long for a 16-bit FPDUPTR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FpduTooLong;

/// Transmit-side marker state: the stream position of the next octet and the start of
/// the current FPDU.
///
/// Use per FPDU: [`MarkerTx::start_fpdu`], then [`MarkerTx::pieces`] over the header,
/// payload and pad slices (in order), then [`MarkerTx::before_crc`] and
/// [`MarkerTx::crc_field`]. Feed every piece up to and including `before_crc`'s marker
/// into the CRC. No allocation: pieces borrow the caller's slices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MarkerTx {
    pos: u32,
    fpdu_start: u32,
}

impl MarkerTx {
    /// Starts at stream position 0, the first octet of the Full Operation Phase.
    pub const fn new() -> Self {
        Self::at(0)
    }

    /// Starts at the given stream position.
    pub const fn at(pos: u32) -> Self {
        Self {
            pos,
            fpdu_start: pos,
        }
    }

    /// The stream position of the next octet to send.
    pub const fn position(&self) -> u32 {
        self.pos
    }

    const fn at_boundary(&self) -> bool {
        self.pos & (MARKER_INTERVAL - 1) == 0
    }

    /// Begins an FPDU whose ULPDU is `ulpdu_len` octets. Returns the marker (FPDUPTR 0)
    /// to send first when one is due exactly where the FPDU starts; it belongs to this
    /// FPDU and its CRC (RFC 5044 section 4.3 and 4.4 rule 2).
    ///
    /// Fails when a marker inside the FPDU would lie more than 65535 octets after the
    /// length field, which a 16-bit FPDUPTR cannot express.
    pub fn start_fpdu(&mut self, ulpdu_len: u16) -> Result<Option<[u8; 4]>, FpduTooLong> {
        let mut lead = None;
        let mut start = self.pos;
        if self.at_boundary() {
            lead = Some(encode_marker(0));
            start = start.wrapping_add(4);
        }
        // Octets from the FPDU start to its first inner marker, then one marker per
        // 508 further octets of FPDU data.
        let len = u32::try_from(fpdu_len(ulpdu_len)).map_err(|_| FpduTooLong)?;
        let first =
            MARKER_INTERVAL.wrapping_sub(start & (MARKER_INTERVAL - 1)) & (MARKER_INTERVAL - 1);
        let first = if first == 0 { MARKER_INTERVAL } else { first };
        if len > first {
            // Markers at data offsets first, first + 508, ... below len - 4 + 1.
            let inner = len.wrapping_sub(first).wrapping_sub(1) / 508;
            let last_ptr = u64::from(first).saturating_add(u64::from(inner).saturating_mul(512));
            if last_ptr > 0xFFFF {
                return Err(FpduTooLong);
            }
        }
        if lead.is_some() {
            self.pos = start;
        }
        self.fpdu_start = start;
        Ok(lead)
    }

    /// Splits `data` (the next octets of the current FPDU) into pieces with markers
    /// interleaved where the stream reaches a 512-octet boundary.
    pub fn pieces<'s, 'a>(&'s mut self, data: &'a [u8]) -> Pieces<'s, 'a> {
        Pieces {
            tx: self,
            data,
            emitted_marker_here: false,
        }
    }

    /// The marker due right before the CRC field, if the stream is at a boundary. It
    /// is inside this FPDU and covered by its CRC (RFC 5044 section 4.4 rule 1).
    pub fn before_crc(&mut self) -> Option<[u8; 4]> {
        if self.at_boundary() {
            let ptr = self.pos.wrapping_sub(self.fpdu_start);
            self.pos = self.pos.wrapping_add(4);
            Some(encode_marker(u16::try_from(ptr).unwrap_or(0xFFFC)))
        } else {
            None
        }
    }

    /// Accounts for the 4-byte CRC field, which a marker never splits.
    pub fn crc_field(&mut self) {
        self.pos = self.pos.wrapping_add(4);
    }

    fn marker(&mut self) -> [u8; 4] {
        let ptr = self.pos.wrapping_sub(self.fpdu_start);
        self.pos = self.pos.wrapping_add(4);
        encode_marker(u16::try_from(ptr).unwrap_or(0xFFFC))
    }
}

impl Default for MarkerTx {
    fn default() -> Self {
        Self::new()
    }
}

/// The iterator of [`MarkerTx::pieces`].
pub struct Pieces<'s, 'a> {
    tx: &'s mut MarkerTx,
    data: &'a [u8],
    emitted_marker_here: bool,
}

impl<'a> Iterator for Pieces<'_, 'a> {
    type Item = Piece<'a>;

    fn next(&mut self) -> Option<Piece<'a>> {
        if self.data.is_empty() {
            return None;
        }
        let off = self.tx.pos & (MARKER_INTERVAL - 1);
        if off == 0 && !self.emitted_marker_here {
            self.emitted_marker_here = true;
            return Some(Piece::Marker(self.tx.marker()));
        }
        self.emitted_marker_here = false;
        let room = usize::try_from(MARKER_INTERVAL.wrapping_sub(off)).unwrap_or(usize::MAX);
        let (head, tail) = self.data.split_at(room.min(self.data.len()));
        self.data = tail;
        self.tx.pos = self
            .tx
            .pos
            .wrapping_add(u32::try_from(head.len()).unwrap_or(0));
        Some(Piece::Data(head))
    }
}

/// Frames one FPDU into `out`: optional markers, the `parts` (the header starting at
/// the length field, then the payload slices), the pad and the CRC.
///
/// `parts` must add up to `2 + ULPDU_Length` octets, with the length field matching.
/// `crc` is `None` when CRC is off (the field is sent as zero). `markers` is `None`
/// when markers are off. Returns the number of octets written. This is the simple,
/// copying path (short FPDUs, Terminate, tests); the zero-copy transmit path uses
/// [`MarkerTx`] and [`trailer`] directly.
pub fn write_fpdu<C: Crc32c>(
    out: &mut [u8],
    parts: &[&[u8]],
    mut crc: Option<&mut C>,
    markers: Option<&mut MarkerTx>,
) -> Result<usize, BufferTooSmall> {
    let total: usize = parts
        .iter()
        .map(|p| p.len())
        .fold(0usize, usize::saturating_add);
    let ulpdu = u16::try_from(total.checked_sub(MPA_HDR_LEN).ok_or(BufferTooSmall)?)
        .map_err(|_| BufferTooSmall)?;
    let pad = pad_len(ulpdu);
    let mut w = Out { buf: out, len: 0 };
    if let Some(c) = crc.as_deref_mut() {
        c.reset();
    }
    let zeros = [0u8; 3];
    let pad_bytes = zeros.get(..pad).ok_or(BufferTooSmall)?;
    if let Some(m) = markers {
        if let Some(lead) = m.start_fpdu(ulpdu).map_err(|_| BufferTooSmall)? {
            w.put(&lead, crc.as_deref_mut())?;
        }
        for part in parts.iter().copied().chain(core::iter::once(pad_bytes)) {
            for piece in m.pieces(part) {
                w.put(piece.bytes(), crc.as_deref_mut())?;
            }
        }
        if let Some(mk) = m.before_crc() {
            w.put(&mk, crc.as_deref_mut())?;
        }
        m.crc_field();
    } else {
        for part in parts.iter().copied().chain(core::iter::once(pad_bytes)) {
            w.put(part, crc.as_deref_mut())?;
        }
    }
    let value = crc.as_deref().map_or(0, Crc32c::value);
    w.put::<C>(&crc_to_wire(value), None)?;
    Ok(w.len)
}

struct Out<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Out<'_> {
    fn put<C: Crc32c>(&mut self, data: &[u8], crc: Option<&mut C>) -> Result<(), BufferTooSmall> {
        let end = self.len.checked_add(data.len()).ok_or(BufferTooSmall)?;
        self.buf
            .get_mut(self.len..end)
            .ok_or(BufferTooSmall)?
            .copy_from_slice(data);
        self.len = end;
        if let Some(c) = crc {
            c.update(data);
        }
        Ok(())
    }
}

/// Packing FPDUs into TCP segments (RFC 5044 section 5.1: "Multiple FPDUs MAY be packed
/// into a single TCP segment as determined by the EMSS calculation as long as they are
/// entirely contained in the TCP segment"; appendix A.2: "If a 'message tail', small DDP
/// messages, or the start of a larger DDP message are available, MPA may pack multiple
/// FPDUs into TCP segments").
///
/// A sender that hands TCP one FPDU at a time, with the Nagle algorithm off, sends a segment
/// per FPDU (or per FPDU tail): a chain of small messages costs a packet, and its share of
/// acknowledgements, each. When the next FPDU is ready as one is handed over, the sender
/// may instead *hold* the segment open (`MSG_MORE`, without `MSG_EOR`) so that the next one
/// joins it. The packer tracks how full the open segment is and decides per FPDU whether to
/// hold it, and whether an FPDU that does not fit after all (a guess about the next one was
/// wrong) must *close* it first, so that every FPDU still begins in a segment of its own or
/// lies wholly inside the one it shares. The sender closes a held segment (pushes it) when
/// it stops sending with one open ([`Packer::is_open`]); TCP also sends a held segment on
/// its own at the next acknowledgement, so a segment is never held for long.
///
/// Only an FPDU that fits in the segment's room is held. A longer one (a message's tail
/// segment, an FPDU of more than one MSS) goes out closed: TCP would send the full
/// segments of a held one at once and split off the partial tail to wait, which costs an
/// skb split and, with TSO or over a veth (where an skb is not cut into segments before
/// the device), saves no packet. Measured on NVMe-oF 4 KiB random reads, whose target
/// posts a 4 KiB Write and its response Send together: holding the Write's tail for the
/// Send cost 3% of the IOPS.
///
/// Segments are counted from the first octet after a closed one; TCP cuts its packets at
/// multiples of the MSS from there, so an FPDU that ends `end` octets into a segment leaves
/// `mss - end` octets of room. If TCP sends a held segment early (an acknowledgement came),
/// the packer's idea of the fill is too high, which only packs less.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Packer {
    /// Octets in the segment held open; 0 when none is.
    fill: usize,
}

/// What to do with one FPDU, from [`Packer::plan`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pack {
    /// Close the segment held open before handing this FPDU over: it would not fit.
    pub close_first: bool,
    /// Hand this FPDU over with the segment held open for the next one.
    pub hold: bool,
}

impl Packer {
    /// No segment held open.
    pub const fn new() -> Self {
        Self { fill: 0 }
    }

    /// Plans the handing over of an FPDU of `len` octets on a connection whose segments
    /// carry `mss` octets; `next` is the length of the FPDU that follows at once, if one
    /// is ready. The FPDU is held only if it fits in the segment and the next one fits
    /// wholly behind it.
    pub fn plan(&mut self, len: usize, mss: usize, next: Option<usize>) -> Pack {
        let close_first = self.fill != 0 && self.fill.saturating_add(len) > mss;
        let start = if close_first { 0 } else { self.fill };
        let end = start.saturating_add(len);
        let hold = end < mss && next.is_some_and(|n| n > 0 && end.saturating_add(n) <= mss);
        self.fill = if hold { end } else { 0 };
        Pack { close_first, hold }
    }

    /// Whether a segment is held open: the sender closes it when it stops sending.
    pub const fn is_open(&self) -> bool {
        self.fill != 0
    }

    /// The segment held open was closed (pushed to TCP's output): none is held now.
    pub fn closed(&mut self) {
        self.fill = 0;
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
    use super::super::crc::SoftCrc32c;
    use super::*;
    use std::vec::Vec;

    fn collect(tx: &mut MarkerTx, data: &[u8]) -> Vec<u8> {
        tx.pieces(data).flat_map(|p| p.bytes().to_vec()).collect()
    }

    #[test]
    fn pieces_insert_markers_every_512_octets() {
        let mut tx = MarkerTx::new();
        assert_eq!(tx.start_fpdu(2000).unwrap(), Some([0, 0, 0, 0]));
        let data: Vec<u8> = (0..2000u32).map(|i| (i % 251) as u8 + 1).collect();
        let out = collect(&mut tx, &data);
        // Markers at stream octets 512, 1024, 1536 (the leading one was returned by
        // start_fpdu); each points back to the length field at octet 4.
        assert_eq!(out.len(), 2000 + 12);
        for (k, at) in [512usize, 1024, 1536].iter().enumerate() {
            let i = at - 4;
            assert_eq!(
                &out[i..i + 4],
                &encode_marker((at - 4) as u16),
                "marker {k}"
            );
        }
        assert_eq!(tx.position(), 4 + 2012);
    }

    #[test]
    fn marker_before_the_crc_field_is_inner() {
        // An 8-octet FPDU body starting at stream octet 504 ends at 512, so the marker
        // at 512 precedes the CRC field and belongs to this FPDU.
        let mut tx = MarkerTx::at(504);
        assert_eq!(tx.start_fpdu(6).unwrap(), None);
        let out = collect(&mut tx, &[0, 6, 1, 2, 3, 4, 5, 6]);
        assert_eq!(out, [0, 6, 1, 2, 3, 4, 5, 6]);
        assert_eq!(tx.before_crc(), Some(encode_marker(8)));
        tx.crc_field();
        assert_eq!(tx.position(), 520);
    }

    #[test]
    fn marker_after_the_crc_belongs_to_the_next_fpdu() {
        let mut tx = MarkerTx::at(500);
        assert_eq!(tx.start_fpdu(6).unwrap(), None);
        let _ = collect(&mut tx, &[0u8; 8]);
        assert_eq!(tx.before_crc(), None);
        tx.crc_field();
        assert_eq!(tx.position(), 512);
        assert_eq!(tx.start_fpdu(2).unwrap(), Some([0, 0, 0, 0]));
    }

    #[test]
    fn fpduptr_overflow_is_refused() {
        let mut tx = MarkerTx::new();
        assert_eq!(tx.start_fpdu(u16::MAX), Err(FpduTooLong));
        // The failed call left the position alone.
        assert_eq!(tx.position(), 0);
        assert!(tx.start_fpdu(64_000).is_ok());
    }

    #[test]
    fn write_fpdu_without_options_and_errors() {
        let mut out = [0u8; 16];
        let n = write_fpdu::<SoftCrc32c>(&mut out, &[&[0, 3], b"abc"], None, None).unwrap();
        assert_eq!(&out[..n], &[0, 3, b'a', b'b', b'c', 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(
            write_fpdu::<SoftCrc32c>(&mut out[..8], &[&[0, 3], b"abc"], None, None),
            Err(BufferTooSmall)
        );
        assert_eq!(
            write_fpdu::<SoftCrc32c>(&mut out, &[&[0]], None, None),
            Err(BufferTooSmall)
        );
        assert_eq!(decode_marker([9, 9, 0x01, 0x07]), 0x104);
        assert_eq!(fpdu_len(42), 48);
    }

    const HELD: Pack = Pack {
        close_first: false,
        hold: true,
    };

    #[test]
    fn packer_holds_small_fpdus_while_the_next_fits() {
        let mut p = Packer::new();
        // 92-octet FPDUs (64-byte Writes) into 1448-octet segments: 15 fit.
        let mut held = 0;
        for i in 0..15 {
            let next = if i < 14 { Some(92) } else { None };
            let k = p.plan(92, 1448, next);
            assert!(!k.close_first);
            held += usize::from(k.hold);
        }
        assert_eq!(held, 14);
        assert!(!p.is_open(), "the last one, with nothing behind it, closes");
        // A 16th would not fit behind 15 (15 x 92 = 1380, room 68): the 15th is not held,
        // and the 16th starts a segment of its own.
        let mut p = Packer::new();
        for _ in 0..14 {
            assert!(p.plan(92, 1448, Some(92)).hold);
        }
        assert_eq!(p.plan(92, 1448, Some(92)), Pack::default());
        assert_eq!(p.plan(92, 1448, Some(92)), HELD);
        // A wrong guess (a small one announced, a large one came): closed first.
        let mut p = Packer::new();
        assert!(p.plan(92, 1448, Some(36)).hold);
        let k = p.plan(1400, 1448, None);
        assert_eq!(
            k,
            Pack {
                close_first: true,
                hold: false
            }
        );
    }

    #[test]
    fn packer_never_holds_an_fpdu_longer_than_the_room() {
        // An NVMe-oF read's data (a 4 KiB Write, one FPDU of 4120 octets over GSO_EXP) and
        // its response (a Send of 16 octets: 44 on the wire): the Write goes out closed,
        // though the Send would fit in its last segment.
        let mut p = Packer::new();
        assert_eq!(p.plan(4120, 1448, Some(44)), Pack::default());
        assert!(!p.is_open());
        // One that does not fit behind the held ones closes their segment first.
        assert!(p.plan(700, 1448, Some(700)).hold);
        assert_eq!(
            p.plan(800, 1448, Some(44)),
            Pack {
                close_first: true,
                hold: true
            }
        );
        // (1400 and a 44-octet Send would fit one segment; 1400 and 100 do not.)
        assert_eq!(
            p.plan(1400, 1448, Some(100)),
            Pack {
                close_first: true,
                hold: false
            }
        );
    }

    #[test]
    fn packer_never_holds_a_full_segment_or_for_nothing() {
        let mut p = Packer::new();
        // An FPDU that fills its segments exactly leaves nothing to share.
        assert_eq!(p.plan(1448, 1448, Some(92)), Pack::default());
        assert_eq!(p.plan(2 * 1448, 1448, Some(92)), Pack::default());
        // Nothing ready behind it, or something that cannot fit behind it.
        assert_eq!(p.plan(92, 1448, None), Pack::default());
        assert_eq!(p.plan(92, 1448, Some(1448)), Pack::default());
        assert_eq!(p.plan(92, 1448, Some(0)), Pack::default());
        // No MSS known: never held.
        assert_eq!(p.plan(92, 0, Some(92)), Pack::default());
        assert!(!p.is_open());
    }

    #[test]
    fn packer_keeps_every_fpdu_whole_in_a_segment() {
        // Whatever the lengths and guesses, with closes honoured: an FPDU that starts in a
        // held segment ends inside it.
        let mss = 1448;
        let lens = [
            92usize, 44, 4120, 36, 1448, 700, 800, 20, 16404, 92, 92, 1300, 200,
        ];
        for skip in 0..lens.len() {
            let mut p = Packer::new();
            let mut fill = 0usize;
            for (i, &len) in lens.iter().enumerate().skip(skip) {
                // The guess: the true next length, or a wrong one every third FPDU.
                let next = lens.get(i + 1).map(|&n| if i % 3 == 0 { 20 } else { n });
                let k = p.plan(len, mss, next);
                if k.close_first {
                    fill = 0;
                }
                if fill != 0 {
                    assert!(fill + len <= mss, "FPDU {i} of {len} straddles at {fill}");
                }
                if k.hold {
                    assert!(fill + len < mss, "FPDU {i} of {len} held past the room");
                }
                fill = if k.hold { fill + len } else { 0 };
                assert_eq!(p.is_open(), fill != 0);
            }
        }
    }
}
