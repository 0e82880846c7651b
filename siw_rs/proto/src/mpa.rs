// SPDX-License-Identifier: GPL-2.0

//! MPA connection setup: request and reply frames (RFC 5044 section 7.1), the
//! enhanced connection establishment data of MPA revision 2 (RFC 6581), and the
//! negotiation of connection parameters as pure functions for both roles.
//!
//! Frame layout (RFC 5044 section 7.1.1 figure 8; C siw `struct mpa_rr`):
//!
//! ```text
//! key[16] | bits: M C R ENH GSO res(3) | rev(8) | PD_Length(16) | private data
//! ```
//!
//! - M `0x8000`: the sender requires markers in the FPDUs it receives;
//! - C `0x4000`: the sender prefers CRCs; CRC is on when either frame has C;
//! - R `0x2000`: reply only, the connection is rejected;
//! - ENHANCED `0x1000`: RFC 6581 enhanced connection establishment;
//! - GSO_EXP `0x0800`: siw-private, "the peer may send FPDUs larger than the MSS";
//! - EXT_OFFER `0x0200`, request only: siw_rs-private, "I speak RFC 7306";
//! - EXT_ACCEPT `0x0100`, reply only: siw_rs-private, "so do I: use it both ways";
//! - revision in the low 8 bits.
//!
//! With revision 2 and ENHANCED, the private data starts with the 4-byte IRD/ORD
//! word, counted in PD_Length (RFC 6581; C siw `struct mpa_v2_data`): `be16 ird` with
//! bit 15 peer-to-peer and bit 14 "zero-length Send RTR", `be16 ord` with bit 15
//! "zero-length RDMA Write RTR" and bit 14 "zero-length RDMA Read RTR"; the low 14 bits
//! of each are the value.

use super::error::{BufferTooSmall, TermError};
use super::rx::Input;
use super::wire::{Reader, Writer};

/// The key of a request frame (RFC 5044 section 7.1.1).
pub const KEY_REQ: [u8; 16] = *b"MPA ID Req Frame";
/// The key of a reply frame (RFC 5044 section 7.1.1).
pub const KEY_REP: [u8; 16] = *b"MPA ID Rep Frame";
/// Length of the fixed part of a frame: key, bits, revision, PD_Length.
pub const HEADER_LEN: usize = 20;
/// The most private data a frame may carry (RFC 5044 section 7.1.1: "exceeds 512
/// octets, the receiver MUST close the connection").
pub const PD_MAX_WIRE: usize = 512;
/// The C siw's receive limit on PD_Length, IRD/ORD word included
/// (`RDMA_MAX_PRIVATE_DATA`, `siw_recv_mpa_rr()`).
pub const PD_MAX_SIW: usize = 256;
/// The most ULP private data (after the IRD/ORD word) a frame may carry for the Linux
/// connection manager: `struct iw_cm_event` and `struct iw_cm_conn_param` count it in a
/// `u8`, so more can never be handed up. A frame carrying more is refused
/// ([`Reject::PrivateDataTooLong`]), never truncated.
pub const PD_MAX_ULP: usize = 255;
/// Length of the RFC 6581 IRD/ORD word.
pub const IRD_ORD_LEN: usize = 4;
/// The largest frame.
pub const MAX_FRAME_LEN: usize = HEADER_LEN + PD_MAX_WIRE;

/// M: markers required by the sender of the frame.
pub const FLAG_MARKERS: u16 = 0x8000;
/// C: CRC preferred by the sender of the frame.
pub const FLAG_CRC: u16 = 0x4000;
/// R: the reply rejects the connection.
pub const FLAG_REJECT: u16 = 0x2000;
/// RFC 6581 enhanced connection establishment.
pub const FLAG_ENHANCED: u16 = 0x1000;
/// siw-private: FPDUs may exceed the MSS (C siw `MPA_RR_FLAG_GSO_EXP`).
pub const FLAG_GSO_EXP: u16 = 0x0800;
/// siw_rs-private, request only: the initiator speaks the RFC 7306 extensions (atomics,
/// Immediate Data). RFC 7306 section 1.1 leaves their negotiation to the ULP; siw_rs
/// does it here, for every ULP, so that a peer without them is never sent one.
pub const FLAG_EXT_OFFER: u16 = 0x0200;
/// siw_rs-private, reply only: the responder takes up [`FLAG_EXT_OFFER`].
///
/// The answer is a different bit from the offer because the C siw builds its reply
/// from the request's header (`siw_proc_mpareq()` rewrites the key, `siw_accept()`
/// sends the rest as received): it echoes every bit it does not know. An echoed offer
/// must not read as an acceptance.
pub const FLAG_EXT_ACCEPT: u16 = 0x0100;
/// The remaining reserved bit: sent as zero, not checked.
pub const FLAG_RESERVED: u16 = 0x0400;
/// The revision field.
pub const MASK_REVISION: u16 = 0x00ff;

/// The 14-bit IRD/ORD value mask.
pub const IRD_ORD_MASK: u16 = 0x3fff;
/// IRD word bit 15: peer-to-peer mode requested (C siw `MPA_V2_PEER_TO_PEER`).
pub const V2_PEER_TO_PEER: u16 = 0x8000;
/// IRD word bit 14: zero-length Send as RTR (`MPA_V2_ZERO_LENGTH_RTR`).
pub const V2_SEND_RTR: u16 = 0x4000;
/// ORD word bit 15: zero-length RDMA Write as RTR (`MPA_V2_RDMA_WRITE_RTR`).
pub const V2_WRITE_RTR: u16 = 0x8000;
/// ORD word bit 14: zero-length RDMA Read as RTR (`MPA_V2_RDMA_READ_RTR`).
pub const V2_READ_RTR: u16 = 0x4000;

/// The C siw's IRD and ORD limit (`SIW_MAX_IRD_QP`, `SIW_MAX_ORD_QP`).
pub const SIW_MAX_IRD_ORD: u16 = 128;

/// Request or reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FrameKind {
    /// "MPA ID Req Frame", sent by the initiator.
    Request,
    /// "MPA ID Rep Frame", sent by the responder.
    Reply,
}

impl FrameKind {
    /// The key of this kind of frame.
    pub const fn key(self) -> &'static [u8; 16] {
        match self {
            Self::Request => &KEY_REQ,
            Self::Reply => &KEY_REP,
        }
    }
}

/// The fixed 20-byte part of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MpaHeader {
    /// Request or reply (from the key).
    pub kind: FrameKind,
    /// M.
    pub markers: bool,
    /// C.
    pub crc: bool,
    /// R.
    pub reject: bool,
    /// RFC 6581 ENHANCED.
    pub enhanced: bool,
    /// siw-private GSO_EXP.
    pub gso_exp: bool,
    /// siw_rs-private EXT_OFFER (RFC 7306 offered).
    pub ext_offer: bool,
    /// siw_rs-private EXT_ACCEPT (RFC 7306 accepted).
    pub ext_accept: bool,
    /// The other reserved bits (`FLAG_RESERVED`), kept as received.
    pub reserved: u16,
    /// The revision.
    pub revision: u8,
    /// PD_Length.
    pub pd_len: u16,
}

/// Why a frame is malformed or unacceptable to the parser.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MpaError {
    /// More bytes are needed: the frame is at least `needed` bytes long.
    Truncated {
        /// Bytes needed.
        needed: usize,
    },
    /// The key is neither the request nor the reply key (RFC 5044 section 7.1.2
    /// rule 5).
    BadKey,
    /// PD_Length is above the wire limit (512) or the receiver's limit.
    PrivateDataTooLong {
        /// The received PD_Length.
        len: u16,
    },
    /// Revision 2 with ENHANCED, but PD_Length is below the 4-byte IRD/ORD word.
    EnhancedDataMissing,
    /// The output buffer is too small.
    BufferTooSmall,
}

impl MpaError {
    /// The TERMINATE this error maps to: LLP, MPA, "Invalid MPA Request or Reply
    /// frame" (RFC 5044 section 8, code 4). RFC 5044 closes the connection instead of
    /// sending anything for a malformed frame; the code is for reporting.
    pub const fn term_error(self) -> TermError {
        TermError::LlpInvalidReqResp
    }
}

impl From<BufferTooSmall> for MpaError {
    fn from(_: BufferTooSmall) -> Self {
        Self::BufferTooSmall
    }
}

impl MpaHeader {
    /// A header of the given kind and revision with every flag clear.
    pub const fn new(kind: FrameKind, revision: u8) -> Self {
        Self {
            kind,
            markers: false,
            crc: false,
            reject: false,
            enhanced: false,
            gso_exp: false,
            ext_offer: false,
            ext_accept: false,
            reserved: 0,
            revision,
            pd_len: 0,
        }
    }

    /// The 16-bit bits-and-revision field.
    pub fn bits(&self) -> u16 {
        let mut b = u16::from(self.revision) | (self.reserved & FLAG_RESERVED);
        for (on, flag) in [
            (self.markers, FLAG_MARKERS),
            (self.crc, FLAG_CRC),
            (self.reject, FLAG_REJECT),
            (self.enhanced, FLAG_ENHANCED),
            (self.gso_exp, FLAG_GSO_EXP),
            (self.ext_offer, FLAG_EXT_OFFER),
            (self.ext_accept, FLAG_EXT_ACCEPT),
        ] {
            if on {
                b |= flag;
            }
        }
        b
    }

    /// Whether the private data starts with the RFC 6581 IRD/ORD word.
    pub const fn has_ird_ord(&self) -> bool {
        self.revision == 2 && self.enhanced
    }

    /// Writes the 20 bytes.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, BufferTooSmall> {
        let mut w = Writer::new(out);
        w.put(self.kind.key()).ok_or(BufferTooSmall)?;
        w.u16(self.bits()).ok_or(BufferTooSmall)?;
        w.u16(self.pd_len).ok_or(BufferTooSmall)?;
        Ok(w.len())
    }

    /// Reads the 20 bytes and checks the key and PD_Length against `max_pd` (which is
    /// itself capped at the 512-octet wire limit).
    pub fn parse(buf: &[u8], max_pd: usize) -> Result<Self, MpaError> {
        let mut r = Reader::new(buf);
        let (Some(key), Some(bits), Some(pd_len)) = (r.array::<16>(), r.u16(), r.u16()) else {
            return Err(MpaError::Truncated { needed: HEADER_LEN });
        };
        let kind = if key == KEY_REQ {
            FrameKind::Request
        } else if key == KEY_REP {
            FrameKind::Reply
        } else {
            return Err(MpaError::BadKey);
        };
        if usize::from(pd_len) > max_pd.min(PD_MAX_WIRE) {
            return Err(MpaError::PrivateDataTooLong { len: pd_len });
        }
        let h = Self {
            kind,
            markers: bits & FLAG_MARKERS != 0,
            crc: bits & FLAG_CRC != 0,
            reject: bits & FLAG_REJECT != 0,
            enhanced: bits & FLAG_ENHANCED != 0,
            gso_exp: bits & FLAG_GSO_EXP != 0,
            ext_offer: bits & FLAG_EXT_OFFER != 0,
            ext_accept: bits & FLAG_EXT_ACCEPT != 0,
            reserved: bits & FLAG_RESERVED,
            revision: bits.to_be_bytes()[1],
            pd_len,
        };
        if h.has_ird_ord() && usize::from(pd_len) < IRD_ORD_LEN {
            return Err(MpaError::EnhancedDataMissing);
        }
        Ok(h)
    }
}

/// The RTR (ready-to-receive) messages of RFC 6581 peer-to-peer mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct RtrSet {
    /// Zero-length Send.
    pub send: bool,
    /// Zero-length RDMA Write.
    pub write: bool,
    /// Zero-length RDMA Read.
    pub read: bool,
}

impl RtrSet {
    /// No RTR message.
    pub const NONE: Self = Self {
        send: false,
        write: false,
        read: false,
    };
    /// Write and Read, what the C siw offers (`rtr_type`).
    pub const WRITE_READ: Self = Self {
        send: false,
        write: true,
        read: true,
    };

    /// Whether the set is empty.
    pub const fn is_empty(&self) -> bool {
        !(self.send || self.write || self.read)
    }

    /// The set with only `rtr`.
    pub const fn only(rtr: Rtr) -> Self {
        match rtr {
            Rtr::Send => Self {
                send: true,
                ..Self::NONE
            },
            Rtr::Write => Self {
                write: true,
                ..Self::NONE
            },
            Rtr::Read => Self {
                read: true,
                ..Self::NONE
            },
        }
    }

    /// Whether `rtr` is in the set.
    pub const fn contains(&self, rtr: Rtr) -> bool {
        match rtr {
            Rtr::Send => self.send,
            Rtr::Write => self.write,
            Rtr::Read => self.read,
        }
    }

    /// The preferred member: Write, then Read, then Send (the C siw's preference,
    /// `siw_proc_mpareq()`).
    pub const fn preferred(&self) -> Option<Rtr> {
        if self.write {
            Some(Rtr::Write)
        } else if self.read {
            Some(Rtr::Read)
        } else if self.send {
            Some(Rtr::Send)
        } else {
            None
        }
    }
}

/// One RTR message type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rtr {
    /// Zero-length Send.
    Send,
    /// Zero-length RDMA Write.
    Write,
    /// Zero-length RDMA Read.
    Read,
}

/// The RFC 6581 IRD/ORD word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct IrdOrd {
    /// Inbound RDMA Read queue depth (14 bits).
    pub ird: u16,
    /// Outbound RDMA Read queue depth (14 bits).
    pub ord: u16,
    /// Peer-to-peer mode.
    pub p2p: bool,
    /// RTR types: offered in a request, the chosen one in a reply.
    pub rtr: RtrSet,
}

impl IrdOrd {
    /// The four wire bytes. IRD and ORD are truncated to 14 bits.
    pub fn to_bytes(&self) -> [u8; 4] {
        let mut ird = self.ird & IRD_ORD_MASK;
        let mut ord = self.ord & IRD_ORD_MASK;
        if self.p2p {
            ird |= V2_PEER_TO_PEER;
        }
        if self.rtr.send {
            ird |= V2_SEND_RTR;
        }
        if self.rtr.write {
            ord |= V2_WRITE_RTR;
        }
        if self.rtr.read {
            ord |= V2_READ_RTR;
        }
        let [a, b] = ird.to_be_bytes();
        let [c, d] = ord.to_be_bytes();
        [a, b, c, d]
    }

    /// Decodes the four wire bytes.
    pub fn from_bytes(b: [u8; 4]) -> Self {
        let [a, bb, c, d] = b;
        let ird = u16::from_be_bytes([a, bb]);
        let ord = u16::from_be_bytes([c, d]);
        Self {
            ird: ird & IRD_ORD_MASK,
            ord: ord & IRD_ORD_MASK,
            p2p: ird & V2_PEER_TO_PEER != 0,
            rtr: RtrSet {
                send: ird & V2_SEND_RTR != 0,
                write: ord & V2_WRITE_RTR != 0,
                read: ord & V2_READ_RTR != 0,
            },
        }
    }
}

/// A whole request or reply frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MpaFrame<'a> {
    /// The fixed part. When encoding, `pd_len` is recomputed.
    pub header: MpaHeader,
    /// The IRD/ORD word, present when the header has revision 2 and ENHANCED.
    pub ird_ord: Option<IrdOrd>,
    /// The ULP's private data (after the IRD/ORD word, if any).
    pub private_data: &'a [u8],
}

impl<'a> MpaFrame<'a> {
    /// The encoded length.
    pub fn len(&self) -> usize {
        let v2 = if self.ird_ord.is_some() {
            IRD_ORD_LEN
        } else {
            0
        };
        HEADER_LEN
            .saturating_add(v2)
            .saturating_add(self.private_data.len())
    }

    /// Whether the frame is empty; never, a frame has at least its 20-byte header.
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// Writes the frame. PD_Length is computed from the IRD/ORD word and the private
    /// data and must not exceed 512 octets.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, MpaError> {
        let pd = self.len().saturating_sub(HEADER_LEN);
        if pd > PD_MAX_WIRE {
            return Err(MpaError::PrivateDataTooLong {
                len: u16::try_from(pd).unwrap_or(u16::MAX),
            });
        }
        let mut h = self.header;
        h.pd_len = u16::try_from(pd).map_err(|_| MpaError::BufferTooSmall)?;
        h.enhanced = h.enhanced || self.ird_ord.is_some();
        let mut w = Writer::new(out);
        let mut fixed = [0u8; HEADER_LEN];
        h.encode(&mut fixed)?;
        w.put(&fixed).ok_or(MpaError::BufferTooSmall)?;
        if let Some(v2) = self.ird_ord {
            w.put(&v2.to_bytes()).ok_or(MpaError::BufferTooSmall)?;
        }
        w.put(self.private_data).ok_or(MpaError::BufferTooSmall)?;
        Ok(w.len())
    }

    /// Parses a frame from the front of `buf`. Returns the frame and its length; bytes
    /// after it are not looked at. `max_pd` is the receiver's PD_Length limit
    /// ([`PD_MAX_WIRE`] or the C siw's [`PD_MAX_SIW`]).
    pub fn parse(buf: &'a [u8], max_pd: usize) -> Result<(Self, usize), MpaError> {
        let header = MpaHeader::parse(buf, max_pd)?;
        let total = HEADER_LEN.saturating_add(usize::from(header.pd_len));
        let Some(pd) = buf.get(HEADER_LEN..total) else {
            return Err(MpaError::Truncated { needed: total });
        };
        let mut r = Reader::new(pd);
        let ird_ord = if header.has_ird_ord() {
            Some(IrdOrd::from_bytes(
                r.array::<4>().ok_or(MpaError::EnhancedDataMissing)?,
            ))
        } else {
            None
        };
        Ok((
            Self {
                header,
                ird_ord,
                private_data: r.rest(),
            },
            total,
        ))
    }
}

/// Collects one frame from a byte stream split at any point, in a fixed buffer.
///
/// It never consumes past the end of the frame, so the bytes after it (the first FPDU)
/// stay with the caller.
#[derive(Clone, Debug)]
pub struct MpaReader {
    buf: [u8; MAX_FRAME_LEN],
    have: usize,
    max_pd: usize,
}

impl MpaReader {
    /// A reader that accepts PD_Length up to `max_pd` (capped at 512).
    pub const fn new(max_pd: usize) -> Self {
        Self {
            buf: [0; MAX_FRAME_LEN],
            have: 0,
            max_pd: if max_pd < PD_MAX_WIRE {
                max_pd
            } else {
                PD_MAX_WIRE
            },
        }
    }

    fn needed(&self) -> Result<usize, MpaError> {
        if self.have < HEADER_LEN {
            return Ok(HEADER_LEN);
        }
        let h = MpaHeader::parse(self.buf.get(..self.have).unwrap_or(&[]), self.max_pd)?;
        Ok(HEADER_LEN.saturating_add(usize::from(h.pd_len)))
    }

    /// Consumes bytes of the frame from `input`. Returns how many were consumed and
    /// whether the frame is complete. The key and PD_Length are checked as soon as the
    /// 20-byte header is in.
    pub fn feed(&mut self, input: &[u8]) -> Result<(usize, bool), MpaError> {
        self.feed_from(input)
    }

    /// [`Self::feed`] for any [`Input`] (socket bytes, read once, by copying them here).
    pub fn feed_from<B: Input>(&mut self, input: B) -> Result<(usize, bool), MpaError> {
        let mut rest = input;
        let mut consumed = 0usize;
        loop {
            let need = self.needed()?;
            if self.have >= need {
                return Ok((consumed, true));
            }
            if rest.is_empty() {
                return Ok((consumed, false));
            }
            let end = need.min(self.buf.len());
            let n = rest.copy_to(
                self.buf
                    .get_mut(self.have..end)
                    .ok_or(MpaError::BufferTooSmall)?,
            );
            if n == 0 {
                return Err(MpaError::BufferTooSmall);
            }
            self.have = self.have.saturating_add(n);
            consumed = consumed.saturating_add(n);
            rest = rest.split_at(n).1;
        }
    }

    /// Forgets what was fed, for a frame on a new connection.
    pub fn reset(&mut self) {
        self.have = 0;
    }

    /// The complete frame.
    pub fn frame(&self) -> Result<MpaFrame<'_>, MpaError> {
        MpaFrame::parse(self.buf.get(..self.have).unwrap_or(&[]), self.max_pd).map(|(f, _)| f)
    }
}

/// Local connection policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MpaPolicy {
    /// The highest MPA revision spoken: 1 (RFC 5044) or 2 (RFC 6581).
    pub revision: u8,
    /// Ask for CRC (C bit). RFC 5044 section 4.4: the default MUST be to use CRCs,
    /// unless an administrator says otherwise.
    pub crc: bool,
    /// Require the peer to send markers (M bit).
    pub markers_rx: bool,
    /// Insert markers when the peer requires them. RFC 5044 section 4.3: "All MPA
    /// senders MUST be able to generate Markers"; turn off only to mimic the C siw.
    pub markers_tx: bool,
    /// Initiator: request peer-to-peer mode. Responder: accept it.
    pub p2p: bool,
    /// Initiator: RTR types offered. Responder: RTR types accepted.
    pub rtr: RtrSet,
    /// The IRD wanted (inbound RDMA Reads this side serves concurrently).
    pub ird: u16,
    /// The ORD wanted (outbound RDMA Reads this side issues concurrently).
    pub ord: u16,
    /// The device's IRD limit.
    pub max_ird: u16,
    /// The device's ORD limit.
    pub max_ord: u16,
    /// Relaxed IRD/ORD negotiation (C siw `relaxed_ird_negotiation`, true): adapt to
    /// the peer within the limits instead of failing.
    pub relaxed: bool,
    /// Allow FPDUs larger than the MSS when both sides set GSO_EXP (siw-private).
    pub gso_exp: bool,
    /// Offer (initiator) or accept (responder) the RFC 7306 extensions
    /// ([`FLAG_EXT_OFFER`], [`FLAG_EXT_ACCEPT`]).
    pub rfc7306: bool,
    /// The most ULP private data this side can take from the peer's frame.
    pub max_private_data: usize,
}

impl Default for MpaPolicy {
    fn default() -> Self {
        Self {
            revision: 2,
            crc: true,
            markers_rx: false,
            markers_tx: true,
            p2p: false,
            rtr: RtrSet::WRITE_READ,
            ird: SIW_MAX_IRD_ORD,
            ord: SIW_MAX_IRD_ORD,
            max_ird: SIW_MAX_IRD_ORD,
            max_ord: SIW_MAX_IRD_ORD,
            relaxed: true,
            gso_exp: false,
            rfc7306: false,
            max_private_data: PD_MAX_ULP,
        }
    }
}

impl MpaPolicy {
    /// The C siw's compiled-in defaults (`siw_main.c`, `siw_cm.c`): revision 2, no CRC
    /// request, no markers either way, no peer-to-peer, IRD/ORD 128, relaxed.
    pub fn c_siw() -> Self {
        Self {
            crc: false,
            markers_tx: false,
            ..Self::default()
        }
    }
}

/// The parameters both sides agreed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Agreed {
    /// The MPA revision in use.
    pub revision: u8,
    /// CRCs are generated and checked (C in either frame, RFC 5044 section 7.1.1).
    pub crc: bool,
    /// This side inserts markers (the peer set M).
    pub markers_tx: bool,
    /// The peer inserts markers (this side set M).
    pub markers_rx: bool,
    /// RFC 6581 enhanced setup is in use (IRD/ORD exchanged).
    pub enhanced: bool,
    /// This side's IRD.
    pub ird: u16,
    /// This side's ORD.
    pub ord: u16,
    /// Peer-to-peer mode: the RTR message the initiator sends and the responder waits
    /// for before it sends anything.
    pub rtr: Option<Rtr>,
    /// Both sides set GSO_EXP.
    pub gso_exp: bool,
    /// Both sides speak RFC 7306: its opcodes may be sent and are accepted.
    pub rfc7306: bool,
}

/// Why negotiation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reject {
    /// The frame has the wrong key (RFC 5044 section 7.1.2 rule 5: close).
    BadKey,
    /// Unsupported revision (RFC 5044 section 7.1.1 Rev: close).
    Revision(u8),
    /// Markers are required from this side but disabled by policy (the C siw's
    /// behaviour: reject with R).
    Markers,
    /// Revision 2 with ENHANCED but no IRD/ORD word.
    EnhancedDataMissing,
    /// The IRD/ORD cannot be met (RFC 6581; TERMINATE LLP/MPA code 6).
    InsufficientIrd,
    /// No acceptable RTR type (RFC 6581; TERMINATE LLP/MPA code 7).
    NoMatchingRtr,
    /// The responder set R (initiator side).
    PeerRejected,
    /// The frame carries more ULP private data than this side can hand up
    /// ([`MpaPolicy::max_private_data`]). A responder answers with R; an initiator
    /// fails the connection.
    PrivateDataTooLong,
}

impl Reject {
    /// The TERMINATE that reports this failure, for the failures that RFC 5044 and
    /// RFC 6581 report in-band. The C siw sends LLP/MPA/INVALID_REQ_RESP for a bad
    /// reply key, INSUFFICIENT_IRD and NO_MATCHING_RTR from the initiator.
    pub const fn term_error(self) -> Option<TermError> {
        match self {
            Self::BadKey | Self::Revision(_) | Self::EnhancedDataMissing => {
                Some(TermError::LlpInvalidReqResp)
            }
            Self::InsufficientIrd => Some(TermError::LlpInsufficientIrd),
            Self::NoMatchingRtr => Some(TermError::LlpNoMatchingRtr),
            Self::Markers | Self::PeerRejected | Self::PrivateDataTooLong => None,
        }
    }

    /// Responder side: whether to answer with a reply frame that has R set (otherwise
    /// close the connection without a reply, RFC 5044 section 7.1.2 rule 2).
    pub const fn reply_with_reject(self) -> bool {
        !matches!(self, Self::BadKey | Self::Revision(_))
    }
}

/// The responder's accepted connection: parameters and the reply to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Accept {
    /// The agreed parameters.
    pub agreed: Agreed,
    /// The reply header (PD_Length is filled in when encoding).
    pub reply: MpaHeader,
    /// The reply's IRD/ORD word, when enhanced.
    pub ird_ord: Option<IrdOrd>,
}

impl Accept {
    /// The reply frame with the ULP's private data.
    pub fn reply_frame<'a>(&self, private_data: &'a [u8]) -> MpaFrame<'a> {
        MpaFrame {
            header: self.reply,
            ird_ord: self.ird_ord,
            private_data,
        }
    }
}

fn rev_ok(rev: u8) -> bool {
    rev == 1 || rev == 2
}

/// The initiator's request: the header and, for revision 2, the IRD/ORD word.
///
/// RFC 5044 section 7.1.1: M when this side requires markers, C when it wants CRC.
/// RFC 6581: revision 2 sets ENHANCED and sends IRD/ORD; with peer-to-peer the P bit
/// and the offered RTR types. As in the C siw (`siw_connect()`), peer-to-peer forces
/// ORD to at least 1 when a Read RTR is offered.
pub fn build_request(policy: &MpaPolicy) -> (MpaHeader, Option<IrdOrd>) {
    let rev = if policy.revision >= 2 { 2 } else { 1 };
    let mut h = MpaHeader::new(FrameKind::Request, rev);
    h.markers = policy.markers_rx;
    h.crc = policy.crc;
    h.gso_exp = policy.gso_exp;
    h.ext_offer = policy.rfc7306;
    let v2 = (rev == 2).then(|| {
        h.enhanced = true;
        let mut ord = policy.ord.min(policy.max_ord);
        let ird = policy.ird.min(policy.max_ird);
        let (p2p, rtr) = if policy.p2p && !policy.rtr.is_empty() {
            if policy.rtr.read && ord == 0 {
                ord = 1;
            }
            (true, policy.rtr)
        } else {
            (false, RtrSet::NONE)
        };
        IrdOrd { ird, ord, p2p, rtr }
    });
    (h, v2)
}

/// The reply that rejects `req`: R set, M cleared, the request's revision mirrored
/// (capped at the policy's), like the C siw's `siw_reject()` and its reject path in
/// `siw_proc_mpareq()`. Enhanced replies still carry an IRD/ORD word, so the ENHANCED
/// flag is kept only when the caller also sends one.
pub fn reject_reply(policy: &MpaPolicy, req: &MpaHeader) -> MpaHeader {
    let rev = req.revision.min(policy.revision.max(1)).max(1);
    let mut h = MpaHeader::new(FrameKind::Reply, rev);
    h.reject = true;
    h.crc = req.crc || policy.crc;
    h
}

/// Responder negotiation: the local policy and the received request give the agreed
/// parameters and the reply, or the reason to reject.
///
/// Rules, with their sources:
/// 1. The key must be the request key (RFC 5044 section 7.1.2 rule 5).
/// 2. Revision 1 and 2 are accepted; the reply mirrors the request's revision, capped
///    at the policy's (RFC 6581: a revision 1 responder answers revision 1; the C
///    siw mirrors the request's bits). Revision 0 and above 2 are rejected.
/// 3. Markers: M in the request means this side must insert markers (RFC 5044 section
///    7.1.1); accepted when `markers_tx` (RFC 5044 section 4.3 makes it a MUST), else
///    rejected as the C siw does. The reply's M asks the initiator for markers when
///    `markers_rx`.
/// 4. CRC is on when either side sets C (RFC 5044 section 7.1.1: "When this bit is '1'
///    in either the MPA Request Frame or MPA Reply Frame, CRCs MUST be generated and
///    checked by both endpoints"); the reply has C when CRC is on.
/// 5. With revision 2 and ENHANCED, the IRD/ORD word is required (RFC 6581; C siw
///    rejects otherwise). The peer's IRD bounds this side's ORD and the peer's ORD is
///    this side's IRD need, each clamped to the device limits (C siw
///    `siw_proc_mpareq()`, clamp to 128). Relaxed negotiation (C siw `siw_accept()`):
///    ORD is lowered to what the peer offers, IRD raised to what the peer needs. Strict
///    negotiation rejects instead (InsufficientIrd).
/// 6. Peer-to-peer: when the peer sets P and `policy.p2p`, the reply sets P and picks
///    one offered RTR type that the policy accepts, preferring Write, then Read, then
///    Send (C siw `siw_proc_mpareq()`). If the peer offers no type at all, Write is
///    proposed as the C siw does. If the peer offers types and none is acceptable, the
///    connection is rejected (NoMatchingRtr). When `policy.p2p` is false, P is not
///    echoed and no RTR is expected.
/// 7. GSO_EXP is echoed and agreed only when the policy allows it.
/// 8. ULP private data beyond `max_private_data` is refused (PrivateDataTooLong): the
///    connection manager could not carry it to the ULP.
/// 9. RFC 7306 is agreed when the request offers it (EXT_OFFER, and not the reply's
///    EXT_ACCEPT, which no initiator sets) and the policy allows it; the reply then
///    says so with EXT_ACCEPT, never with EXT_OFFER.
pub fn negotiate_responder(policy: &MpaPolicy, req: &MpaFrame<'_>) -> Result<Accept, Reject> {
    let h = &req.header;
    if h.kind != FrameKind::Request {
        return Err(Reject::BadKey);
    }
    if !rev_ok(h.revision) {
        return Err(Reject::Revision(h.revision));
    }
    if req.private_data.len() > policy.max_private_data {
        return Err(Reject::PrivateDataTooLong);
    }
    let rev = h.revision.min(if policy.revision >= 2 { 2 } else { 1 });
    if h.markers && !policy.markers_tx {
        return Err(Reject::Markers);
    }
    let crc = h.crc || policy.crc;
    let gso_exp = h.gso_exp && policy.gso_exp;
    let mut reply = MpaHeader::new(FrameKind::Reply, rev);
    reply.markers = policy.markers_rx;
    reply.crc = crc;
    reply.gso_exp = gso_exp;
    let rfc7306 = h.ext_offer && !h.ext_accept && policy.rfc7306;
    reply.ext_accept = rfc7306;

    let max_ird = policy.max_ird.min(IRD_ORD_MASK);
    let max_ord = policy.max_ord.min(IRD_ORD_MASK);
    let mut ird = policy.ird.min(max_ird);
    let mut ord = policy.ord.min(max_ord);
    let mut rtr = None;
    let mut ird_ord = None;
    let enhanced = rev == 2 && h.enhanced;
    if enhanced {
        let peer = req.ird_ord.ok_or(Reject::EnhancedDataMissing)?;
        // The peer's IRD limits our ORD; the peer's ORD is our IRD need.
        let ord_cap = peer.ird.min(max_ord);
        let ird_need = peer.ord.min(max_ird);
        if ord > ord_cap {
            if !policy.relaxed {
                return Err(Reject::InsufficientIrd);
            }
            ord = ord_cap;
        }
        if ird < ird_need {
            if !policy.relaxed {
                return Err(Reject::InsufficientIrd);
            }
            ird = ird_need;
        }
        let mut word = IrdOrd {
            ird,
            ord,
            p2p: false,
            rtr: RtrSet::NONE,
        };
        if peer.p2p && policy.p2p {
            let offered = peer.rtr;
            let pick = if offered.is_empty() {
                policy.rtr.contains(Rtr::Write).then_some(Rtr::Write)
            } else {
                RtrSet {
                    send: offered.send && policy.rtr.send,
                    write: offered.write && policy.rtr.write,
                    read: offered.read && policy.rtr.read,
                }
                .preferred()
            };
            let pick = pick.ok_or(Reject::NoMatchingRtr)?;
            word.p2p = true;
            word.rtr = RtrSet::only(pick);
            rtr = Some(pick);
        }
        reply.enhanced = true;
        ird_ord = Some(word);
    }
    Ok(Accept {
        agreed: Agreed {
            revision: rev,
            crc,
            markers_tx: h.markers,
            markers_rx: policy.markers_rx,
            enhanced,
            ird,
            ord,
            rtr,
            gso_exp,
            rfc7306,
        },
        reply,
        ird_ord,
    })
}

/// Initiator negotiation: the local policy, the request this side sent and the reply
/// received give the agreed parameters or the reason to fail.
///
/// Rules, with their sources:
/// 1. The key must be the reply key (RFC 5044 section 7.1.2 rule 5; the C siw sends
///    TERMINATE LLP/MPA/INVALID_REQ_RESP).
/// 2. The reply's revision must be 1 or 2 and not above the request's. A revision 1
///    reply to a revision 2 request is accepted as plain RFC 5044 (RFC 6581
///    interoperability; the C siw refuses it, defect O5 of the anchor study). A
///    revision 2 reply to an enhanced request must itself be enhanced.
/// 3. R means rejected (RFC 5044 section 7.1.2 rule 3).
/// 4. M in the reply: this side must insert markers, refused only when `markers_tx`
///    is off (as the C siw does). The peer inserts markers when the request had M.
/// 5. CRC is on when either frame has C.
/// 6. Enhanced: this side's IRD becomes the responder's ORD and its ORD the
///    responder's IRD (C siw `siw_proc_mpareply()`). Relaxed: fail only when the
///    responder's ORD exceeds the device IRD limit; strict: also when it exceeds the
///    requested IRD or the responder's IRD is below the requested ORD. Failure is
///    TERMINATE LLP/MPA/INSUFFICIENT_IRD. ORD is capped at the device limit.
/// 7. Peer-to-peer: when the request offered RTR types, the reply must pick one of
///    them (RFC 6581; else TERMINATE LLP/MPA/NO_MATCHING_RTR); when several bits are
///    set, Write, then Read, then Send is used.
/// 8. ULP private data beyond `max_private_data` fails the connection
///    (PrivateDataTooLong), checked before R: a reject's private data goes to the ULP
///    too.
/// 9. RFC 7306 is agreed only when the request offered it and the reply has
///    EXT_ACCEPT. A reply that merely echoes the request's bits (the C siw's) has
///    EXT_OFFER, not EXT_ACCEPT, and agrees to nothing.
pub fn negotiate_initiator(
    policy: &MpaPolicy,
    sent: &MpaFrame<'_>,
    reply: &MpaFrame<'_>,
) -> Result<Agreed, Reject> {
    let r = &reply.header;
    if r.kind != FrameKind::Reply {
        return Err(Reject::BadKey);
    }
    if !rev_ok(r.revision) || r.revision > sent.header.revision {
        return Err(Reject::Revision(r.revision));
    }
    if reply.private_data.len() > policy.max_private_data {
        return Err(Reject::PrivateDataTooLong);
    }
    if r.reject {
        return Err(Reject::PeerRejected);
    }
    if r.markers && !policy.markers_tx {
        return Err(Reject::Markers);
    }
    let crc = sent.header.crc || r.crc;
    let gso_exp = sent.header.gso_exp && r.gso_exp && policy.gso_exp;
    let rfc7306 = sent.header.ext_offer && r.ext_accept && policy.rfc7306;
    let max_ird = policy.max_ird.min(IRD_ORD_MASK);
    let max_ord = policy.max_ord.min(IRD_ORD_MASK);
    let mut agreed = Agreed {
        revision: r.revision,
        crc,
        markers_tx: r.markers,
        markers_rx: sent.header.markers,
        enhanced: false,
        ird: policy.ird.min(max_ird),
        ord: policy.ord.min(max_ord),
        rtr: None,
        gso_exp,
        rfc7306,
    };
    let Some(req_v2) = sent.ird_ord.filter(|_| sent.header.has_ird_ord()) else {
        return Ok(agreed);
    };
    if r.revision < 2 {
        // RFC 6581 fallback to RFC 5044: no IRD/ORD exchange, no RTR.
        return Ok(agreed);
    }
    let rep = match reply.ird_ord {
        Some(v) if r.enhanced => v,
        _ => return Err(Reject::EnhancedDataMissing),
    };
    let insufficient = if policy.relaxed {
        rep.ord > max_ird
    } else {
        rep.ord > req_v2.ird || req_v2.ord > rep.ird
    };
    if insufficient {
        return Err(Reject::InsufficientIrd);
    }
    agreed.enhanced = true;
    agreed.ird = rep.ord;
    agreed.ord = rep.ird.min(max_ord);
    if req_v2.p2p && !req_v2.rtr.is_empty() {
        let chosen = RtrSet {
            send: rep.rtr.send && req_v2.rtr.send,
            write: rep.rtr.write && req_v2.rtr.write,
            read: rep.rtr.read && req_v2.rtr.read,
        };
        agreed.rtr = Some(chosen.preferred().ok_or(Reject::NoMatchingRtr)?);
    }
    Ok(agreed)
}

/// The looks an initiator takes at a new connection, in milliseconds after the previous
/// one (the first after the MPA reply): at 20, 100, 420 and 1700 ms. See [`ResponderWake`].
pub const WAKE_LOOKS_MS: [u32; 4] = [20, 80, 320, 1280];

/// An initiator's wake-up of a responder that may not have seen its first FPDUs.
///
/// The C siw as responder (`siw_accept()`) sends its MPA reply and only then hands the
/// socket's data-ready callback to its QP; until then its connection manager's callback
/// ignores data (`siw_cm_llp_data_ready()` in RDMA mode). FPDUs that arrive in between stay
/// in the socket, unread, until more data comes. If the initiator's first message waits
/// for an answer (rping's advert, a ULP's connect command), both sides wait for ever. Seen
/// with a siw_rs initiator over a veth under TCG: the C siw server's socket held the
/// client's first Send (40 octets) for 77 s. The window is short, but an initiator that
/// answers the reply quickly, or a responder preempted in `siw_accept()`, meets it.
///
/// Only new data moves such a responder, so an initiator that has sent FPDUs and heard
/// none sends a zero-length RDMA Write: the RFC 6581 Write RTR message, which every iWARP
/// receiver takes without placing anything or validating its STag (the C siw included:
/// `siw_proc_write()`). It looks at [`WAKE_LOOKS_MS`]; the first FPDU heard ends the looks,
/// since a responder sends only after its QP has the socket. At most four Writes per
/// connection, all in its first two seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ResponderWake {
    /// Looks taken; `u8::MAX` once the responder was heard or the schedule ran out.
    looks: u8,
}

/// What one look of [`ResponderWake`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WakeLook {
    /// Send the zero-length RDMA Write now.
    pub write: bool,
    /// The next look, this many milliseconds from now; `None`: no more.
    pub next_ms: Option<u32>,
}

impl ResponderWake {
    /// The delay before the first look (right after the MPA reply is taken).
    pub const fn first_ms() -> u32 {
        WAKE_LOOKS_MS[0]
    }

    /// A look: `sent` whether this side has sent any FPDU on the connection, `heard`
    /// whether it has received any.
    pub fn look(&mut self, sent: bool, heard: bool) -> WakeLook {
        if heard || usize::from(self.looks) >= WAKE_LOOKS_MS.len() {
            self.looks = u8::MAX;
            return WakeLook {
                write: false,
                next_ms: None,
            };
        }
        self.looks = self.looks.saturating_add(1);
        WakeLook {
            write: sent,
            next_ms: WAKE_LOOKS_MS.get(usize::from(self.looks)).copied(),
        }
    }
}

#[cfg(test)]
mod wake_tests {
    use super::*;

    #[test]
    fn a_silent_responder_gets_four_writes_then_no_more() {
        let mut w = ResponderWake::default();
        let mut writes = 0;
        let mut at = ResponderWake::first_ms();
        let mut times = [0u32; 4];
        for t in times.iter_mut() {
            *t = at;
            let l = w.look(true, false);
            assert!(l.write);
            writes += 1;
            match l.next_ms {
                Some(ms) => at += ms,
                None => break,
            }
        }
        assert_eq!(writes, 4);
        assert_eq!(times, [20, 100, 420, 1700]);
        // Nothing more, whatever is asked.
        assert_eq!(
            w.look(true, false),
            WakeLook {
                write: false,
                next_ms: None
            }
        );
    }

    #[test]
    fn hearing_the_responder_ends_the_looks_without_a_write() {
        let mut w = ResponderWake::default();
        assert_eq!(
            w.look(true, true),
            WakeLook {
                write: false,
                next_ms: None
            }
        );
        let mut w = ResponderWake::default();
        assert!(w.look(true, false).write);
        let l = w.look(true, true);
        assert!(!l.write && l.next_ms.is_none());
    }

    #[test]
    fn nothing_sent_yet_means_no_write_but_more_looks() {
        let mut w = ResponderWake::default();
        assert_eq!(
            w.look(false, false),
            WakeLook {
                write: false,
                next_ms: Some(80)
            }
        );
        let l = w.look(true, false);
        assert!(l.write);
        assert_eq!(l.next_ms, Some(320));
    }
}
