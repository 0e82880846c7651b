// SPDX-License-Identifier: GPL-2.0

//! Segmentation of one RDMAP message into DDP segments (RFC 5041 section 5.2).
//!
//! A [`Segmenter`] yields one [`Segment`] per FPDU: the encoded header (MPA length
//! field first), the range of the message payload the FPDU carries, the pad and the
//! L flag. Untagged segments advance the MO, tagged ones the TO. Every segment's
//! ULPDU is at most the given MULPDU (RFC 5041 section 5.2: "no larger than the
//! MULPDU value Advertised by the LLP"), and every segment but the last carries as
//! much payload as fits, as in the examples of RFC 5041 section 5.2. With a MULPDU
//! from [`super::fpdu::mulpdu`] (always 2 modulo 4) the non-last segments need no
//! pad and fill the TCP segment exactly, as the C siw's do (`siw_qp_tx.c`). A
//! zero-length message is exactly one segment (RFC 5041 section 5.2).

use super::ddp::{DdpHdr, TaggedHdr, UntaggedHdr};
use super::fpdu::{fpdu_len, pad_len};
use super::rdmap::{encode_header, FpduHeader, Opcode, RdmapHdr, MAX_HDR_LEN, MPA_LEN_FIELD};

/// Where a message goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// A tagged buffer: the sink STag and the TO of the first payload byte.
    Tagged {
        /// Sink STag.
        stag: u32,
        /// Tagged Offset of the first payload byte.
        to: u64,
    },
    /// An untagged queue.
    Untagged {
        /// Queue Number.
        qn: u32,
        /// Message Sequence Number of this message.
        msn: u32,
        /// `RsvdULP[8:39]`: the Invalidate STag of the Send with Invalidate messages,
        /// otherwise zero.
        rsvd_ulp: u32,
    },
}

/// The description of one message to segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Message {
    /// The RDMAP opcode.
    pub opcode: Opcode,
    /// The buffer model and addressing fields.
    pub target: Target,
    /// The RDMAP header (Read Request, Terminate, RFC 7306 headers), else `None`.
    pub rdmap: RdmapHdr,
    /// Total payload length of the message.
    pub len: u32,
}

/// Why a message cannot be segmented.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SegmentError {
    /// The target's buffer model does not match the opcode, or the RDMAP header does
    /// not fit the opcode.
    Mismatch,
    /// A header-only message with a payload, or one that does not fit one FPDU.
    TooLong,
    /// The MULPDU leaves no room for payload after the header.
    MulpduTooSmall,
    /// TO plus message length wraps 64 bits (RFC 5041 section 7.1, TO wrap).
    ToWrap,
}

/// One DDP segment: its header bytes and the part of the message payload it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Segment {
    header: [u8; MAX_HDR_LEN],
    header_len: usize,
    /// The decoded header.
    pub fpdu: FpduHeader,
    /// Offset of the first payload octet within the message.
    pub payload_offset: u32,
    /// Number of payload octets.
    pub payload_len: u32,
    /// Number of pad octets after the payload.
    pub pad: usize,
    /// The DDP L flag.
    pub last: bool,
}

impl Segment {
    /// The encoded header, MPA length field first.
    pub fn header(&self) -> &[u8] {
        self.header.get(..self.header_len).unwrap_or(&[])
    }
}

/// Yields the segments of one message. See the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Segmenter {
    msg: Message,
    max_payload: u32,
    offset: u32,
    done: bool,
}

fn rdmap_fits(op: Opcode, h: &RdmapHdr) -> bool {
    matches!(
        (op, h),
        (
            Opcode::RdmaWrite
                | Opcode::ReadResponse
                | Opcode::Send
                | Opcode::SendInvalidate
                | Opcode::SendSe
                | Opcode::SendSeInvalidate,
            RdmapHdr::None
        ) | (Opcode::ReadRequest, RdmapHdr::ReadRequest(_))
            | (Opcode::Terminate, RdmapHdr::Terminate(_))
            | (
                Opcode::ImmediateData | Opcode::ImmediateDataSe,
                RdmapHdr::Immediate(_)
            )
            | (Opcode::AtomicRequest, RdmapHdr::AtomicRequest(_))
            | (Opcode::AtomicResponse, RdmapHdr::AtomicResponse(_))
    )
}

impl Segmenter {
    /// A segmenter with nothing to give: [`Self::next_into`] returns `None` at once. For
    /// a caller that keeps one in place, to overwrite when a message starts.
    pub const IDLE: Self = Self {
        msg: Message {
            opcode: Opcode::Send,
            target: Target::Untagged {
                qn: 0,
                msn: 0,
                rsvd_ulp: 0,
            },
            rdmap: RdmapHdr::None,
            len: 0,
        },
        max_payload: 0,
        offset: 0,
        done: true,
    };

    /// Prepares the segmentation of `msg` into FPDUs whose ULPDU is at most `mulpdu`
    /// octets (see [`super::fpdu::mulpdu`]).
    pub fn new(msg: Message, mulpdu: u16) -> Result<Self, SegmentError> {
        let max_payload = Self::room(&msg, mulpdu)?;
        Ok(Self {
            msg,
            max_payload,
            offset: 0,
            done: false,
        })
    }

    /// [`Self::new`] in place: `self` starts segmenting `msg`, or is left as it was if
    /// `msg` cannot be segmented. For a caller that keeps its segmenter in a larger
    /// structure: the message is written there once, not returned and moved (in the
    /// kernel each move of a segmenter, over 100 octets, is a `memcpy` call).
    pub fn start(&mut self, msg: Message, mulpdu: u16) -> Result<(), SegmentError> {
        self.max_payload = Self::room(&msg, mulpdu)?;
        self.msg = msg;
        self.offset = 0;
        self.done = false;
        Ok(())
    }

    /// The payload room of each segment of `msg` for `mulpdu`, if `msg` can be segmented.
    fn room(msg: &Message, mulpdu: u16) -> Result<u32, SegmentError> {
        let tagged = matches!(msg.target, Target::Tagged { .. });
        if tagged != msg.opcode.is_tagged() || !rdmap_fits(msg.opcode, &msg.rdmap) {
            return Err(SegmentError::Mismatch);
        }
        let hdr_ulp = msg.opcode.header_len().saturating_sub(MPA_LEN_FIELD);
        let room = usize::from(mulpdu)
            .checked_sub(hdr_ulp)
            .ok_or(SegmentError::MulpduTooSmall)?;
        let room = u32::try_from(room).map_err(|_| SegmentError::MulpduTooSmall)?;
        let max_msg = msg.opcode.max_payload();
        if max_msg != u32::MAX {
            // Header-only messages (and Terminate with its copied headers) are one
            // segment.
            if msg.len > max_msg || msg.len > room {
                return Err(SegmentError::TooLong);
            }
        } else if room == 0 {
            return Err(SegmentError::MulpduTooSmall);
        }
        if let Target::Tagged { to, .. } = msg.target {
            if msg.len != 0 && to.checked_add(u64::from(msg.len)).is_none() {
                return Err(SegmentError::ToWrap);
            }
        }
        Ok(room)
    }

    /// The number of segments still to come.
    pub fn remaining(&self) -> u32 {
        if self.done {
            return 0;
        }
        let left = self.msg.len.saturating_sub(self.offset);
        if left == 0 || self.max_payload == 0 {
            return 1;
        }
        left.div_ceil(self.max_payload)
    }
}

/// Where the next segment's payload lies, from [`Segmenter::next_into`]: a
/// [`Segment`] without the header copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SegmentInfo {
    /// The encoded header's length, MPA length field included.
    pub header_len: usize,
    /// Offset of the first payload octet within the message.
    pub payload_offset: u32,
    /// Number of payload octets.
    pub payload_len: u32,
    /// Number of pad octets after the payload.
    pub pad: usize,
    /// The DDP L flag.
    pub last: bool,
}

impl Segmenter {
    /// The next segment, its header encoded into `out` (at least [`MAX_HDR_LEN`] octets
    /// for any opcode), or `None` after the last one or if `out` is too small. The same
    /// segments as the iterator's, for a caller that keeps the header in its own buffer:
    /// nothing larger than [`SegmentInfo`] is returned (in the kernel a [`Segment`],
    /// over 200 octets, is copied with `memcpy` calls).
    pub fn next_into(&mut self, out: &mut [u8]) -> Option<SegmentInfo> {
        let (ulpdu_len, info) = self.next_span()?;
        // Encoded from the message in place (see `encode_header`).
        let header_len = encode_header(
            out,
            ulpdu_len,
            info.last,
            self.msg.opcode,
            &self.ddp_at(info.payload_offset),
            &self.msg.rdmap,
        )
        .ok()?;
        self.advance(&info);
        Some(SegmentInfo { header_len, ..info })
    }

    /// The next segment's ULPDU length and payload range (`header_len` 0), without
    /// advancing.
    fn next_span(&self) -> Option<(u16, SegmentInfo)> {
        if self.done {
            return None;
        }
        let left = self.msg.len.checked_sub(self.offset)?;
        let (len, last) = if left <= self.max_payload {
            (left, true)
        } else {
            (self.max_payload, false)
        };
        let offset = self.offset;
        let hdr_ulp = self.msg.opcode.header_len().saturating_sub(MPA_LEN_FIELD);
        let ulpdu_len = u16::try_from(usize::try_from(len).ok()?.checked_add(hdr_ulp)?).ok()?;
        // Where the next segment starts: checked here, so that advancing cannot fail.
        offset.checked_add(len)?;
        let info = SegmentInfo {
            header_len: 0,
            payload_offset: offset,
            payload_len: len,
            pad: pad_len(ulpdu_len),
            last,
        };
        Some((ulpdu_len, info))
    }

    /// The DDP header of the segment whose payload starts at message offset `offset`.
    fn ddp_at(&self, offset: u32) -> DdpHdr {
        match self.msg.target {
            Target::Tagged { stag, to } => DdpHdr::Tagged(TaggedHdr {
                stag,
                to: to.wrapping_add(u64::from(offset)),
            }),
            Target::Untagged { qn, msn, rsvd_ulp } => DdpHdr::Untagged(UntaggedHdr {
                rsvd_ulp,
                qn,
                msn,
                mo: offset,
            }),
        }
    }

    /// The next segment's header and payload range, without advancing.
    fn next_header(&self) -> Option<(FpduHeader, SegmentInfo)> {
        let (ulpdu_len, info) = self.next_span()?;
        let fpdu = FpduHeader {
            ulpdu_len,
            last: info.last,
            opcode: self.msg.opcode,
            ddp: self.ddp_at(info.payload_offset),
            rdmap: self.msg.rdmap,
        };
        Some((fpdu, info))
    }

    /// The length on the wire (without markers) of the next FPDU, or `None` after the
    /// last: what a sender packing FPDUs into TCP segments needs to know in advance
    /// (see [`super::fpdu::Packer`]).
    pub fn next_wire_len(&self) -> Option<usize> {
        let (ulpdu_len, _) = self.next_span()?;
        Some(fpdu_len(ulpdu_len))
    }

    fn advance(&mut self, info: &SegmentInfo) {
        self.offset = info.payload_offset.saturating_add(info.payload_len);
        self.done = info.last;
    }
}

/// The length on the wire (without markers) of the first FPDU of a message of `opcode`
/// carrying `len` payload octets, segmented for `mulpdu` as [`Segmenter::new`] does; `None`
/// if no FPDU of that MULPDU could carry it. A guess about a message not yet taken (its
/// length may still change) costs at most a TCP segment ended early.
pub fn first_wire_len(opcode: Opcode, len: u32, mulpdu: u16) -> Option<usize> {
    let hdr_ulp = opcode.header_len().checked_sub(MPA_LEN_FIELD)?;
    let room = usize::from(mulpdu).checked_sub(hdr_ulp)?;
    let len = usize::try_from(len).ok()?;
    let payload = if opcode.max_payload() == u32::MAX {
        len.min(room)
    } else if len <= room {
        len
    } else {
        return None;
    };
    let ulpdu = u16::try_from(hdr_ulp.checked_add(payload)?).ok()?;
    Some(fpdu_len(ulpdu))
}

impl Iterator for Segmenter {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        let (fpdu, info) = self.next_header()?;
        let mut header = [0u8; MAX_HDR_LEN];
        let header_len = fpdu.encode(&mut header).ok()?;
        self.advance(&info);
        Some(Segment {
            header,
            header_len,
            fpdu,
            payload_offset: info.payload_offset,
            payload_len: info.payload_len,
            pad: info.pad,
            last: info.last,
        })
    }
}
