// SPDX-License-Identifier: GPL-2.0

//! RDMAP (RFC 5040, with the RFC 7306 extensions): opcodes, the RDMAP headers and the
//! complete FPDU header (MPA length field, DDP header, RDMAP header).
//!
//! Header sizes, counting the 2-byte MPA length field as the C siw's `iwarp.h` structs
//! do:
//!
//! | message | bytes | after the control word |
//! |---|---:|---|
//! | RDMA Write, RDMA Read Response | 16 | STag, TO |
//! | Send (with Invalidate, with SE) | 20 | Invalidate STag, QN, MSN, MO |
//! | RDMA Read Request | 48 | untagged + sink STag, sink TO, size, source STag, source TO |
//! | Terminate | 24 | untagged + Terminate Control word |
//! | Immediate Data (with SE) | 28 | untagged + 8 bytes of immediate data |
//! | Atomic Request | 72 | untagged + 52-byte atomic request header |
//! | Atomic Response | 32 | untagged + request identifier, original value |

use super::ddp::{
    Ctrl, DdpHdr, TaggedHdr, UntaggedHdr, QN_ATOMIC_RESPONSE, QN_READ_REQUEST, QN_SEND,
    QN_TERMINATE,
};
use super::error::{BufferTooSmall, HeaderCopy, ParseError, TermError};
use super::wire::{Reader, Writer};
use core::sync::atomic::{AtomicU64, Ordering};

/// The largest header of any opcode (Atomic Request), MPA length field included.
pub const MAX_HDR_LEN: usize = 72;
/// The length of the MPA ULPDU length field.
pub const MPA_LEN_FIELD: usize = 2;
/// The length of the RDMA Read Request header (RFC 5040 section 4.4), 224 bits.
pub const READ_REQUEST_LEN: usize = 28;
/// The length of the Terminate header's control word (RFC 5040 section 4.8).
pub const TERMINATE_CTRL_LEN: usize = 4;
/// The most that may follow a Terminate header: the DDP segment length, an untagged
/// DDP header and the Terminated RDMA Header (2 + 18 + 28 bytes).
pub const TERMINATE_MAX_INFO: usize = 48;

/// RDMAP opcodes (RFC 5040 section 4.1 figure 4, RFC 7306).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// RDMA Write (0000b), tagged.
    RdmaWrite = 0,
    /// RDMA Read Request (0001b), untagged QN 1.
    ReadRequest = 1,
    /// RDMA Read Response (0010b), tagged.
    ReadResponse = 2,
    /// Send (0011b), untagged QN 0.
    Send = 3,
    /// Send with Invalidate (0100b), untagged QN 0.
    SendInvalidate = 4,
    /// Send with Solicited Event (0101b), untagged QN 0.
    SendSe = 5,
    /// Send with Solicited Event and Invalidate (0110b), untagged QN 0.
    SendSeInvalidate = 6,
    /// Terminate (0111b), untagged QN 2.
    Terminate = 7,
    /// RFC 7306 Immediate Data (1000b), untagged QN 0.
    ImmediateData = 8,
    /// RFC 7306 Immediate Data with Solicited Event (1001b), untagged QN 0.
    ImmediateDataSe = 9,
    /// RFC 7306 Atomic Request (1010b), untagged QN 1.
    AtomicRequest = 10,
    /// RFC 7306 Atomic Response (1011b), untagged QN 3.
    AtomicResponse = 11,
}

/// What [`Props::queue`] holds for a tagged opcode.
const NO_QUEUE: u8 = u8::MAX;

/// An opcode's constants, as its `match`es give them.
#[derive(Clone, Copy)]
struct Props {
    header_len: u8,
    rdmap_len: u8,
    queue: u8,
    max_payload: u32,
}

/// [`Props`] of every opcode, indexed by its value, computed at compile time from the
/// `match`es. Looked up per FPDU: x86 kernels are built without jump tables (IBT's
/// `-Cjump-tables=n`, or retpolines), which also keeps LLVM from turning a `match` into
/// a table, so each call of a `match` is a tree of compares and branches (measured:
/// `header_len` alone was 150 instructions per round trip of `send_lat 8 ev`).
// Indexing at compile time: an index out of bounds fails the build, it cannot panic.
#[allow(clippy::indexing_slicing)]
static PROPS: [Props; 12] = {
    let mut t = [Props {
        header_len: 0,
        rdmap_len: 0,
        queue: NO_QUEUE,
        max_payload: 0,
    }; 12];
    let mut i = 0;
    while i < Opcode::ALL.len() {
        let op = Opcode::ALL[i];
        // Every value fits (the largest header is 72 octets, the largest QN 3).
        t[op as usize] = Props {
            header_len: op.header_len_by_match() as u8,
            rdmap_len: op.rdmap_len_by_match() as u8,
            queue: match op.queue_by_match() {
                Some(q) => q as u8,
                None => NO_QUEUE,
            },
            max_payload: op.max_payload_by_match(),
        };
        i += 1;
    }
    t
};

impl Opcode {
    /// Every opcode, by value.
    pub const ALL: [Opcode; 12] = [
        Self::RdmaWrite,
        Self::ReadRequest,
        Self::ReadResponse,
        Self::Send,
        Self::SendInvalidate,
        Self::SendSe,
        Self::SendSeInvalidate,
        Self::Terminate,
        Self::ImmediateData,
        Self::ImmediateDataSe,
        Self::AtomicRequest,
        Self::AtomicResponse,
    ];

    /// Decodes the 4-bit opcode field; 12 to 15 are reserved and give `None`.
    pub const fn from_raw(v: u8) -> Option<Self> {
        Some(match v {
            0 => Self::RdmaWrite,
            1 => Self::ReadRequest,
            2 => Self::ReadResponse,
            3 => Self::Send,
            4 => Self::SendInvalidate,
            5 => Self::SendSe,
            6 => Self::SendSeInvalidate,
            7 => Self::Terminate,
            8 => Self::ImmediateData,
            9 => Self::ImmediateDataSe,
            10 => Self::AtomicRequest,
            11 => Self::AtomicResponse,
            _ => return None,
        })
    }

    /// The 4-bit opcode field.
    pub const fn raw(self) -> u8 {
        self as u8
    }

    /// This opcode's row of [`PROPS`] (always there: the table has a row per opcode).
    fn props(self) -> Option<&'static Props> {
        PROPS.get(self as usize)
    }

    /// Whether the message uses the tagged buffer model (RFC 5040 figure 4).
    pub const fn is_tagged(self) -> bool {
        matches!(self, Self::RdmaWrite | Self::ReadResponse)
    }

    /// Whether the opcode is one of the RFC 7306 extensions.
    pub const fn is_rfc7306(self) -> bool {
        matches!(
            self,
            Self::ImmediateData
                | Self::ImmediateDataSe
                | Self::AtomicRequest
                | Self::AtomicResponse
        )
    }

    /// The DDP queue number of an untagged message; `None` for tagged ones.
    pub fn queue(self) -> Option<u32> {
        match Self::props(self) {
            Some(p) if p.queue == NO_QUEUE => None,
            Some(p) => Some(u32::from(p.queue)),
            None => self.queue_by_match(),
        }
    }

    /// [`Self::queue`] as the RFCs give it; the source of [`PROPS`].
    const fn queue_by_match(self) -> Option<u32> {
        match self {
            Self::RdmaWrite | Self::ReadResponse => None,
            Self::Send
            | Self::SendInvalidate
            | Self::SendSe
            | Self::SendSeInvalidate
            | Self::ImmediateData
            | Self::ImmediateDataSe => Some(QN_SEND),
            Self::ReadRequest | Self::AtomicRequest => Some(QN_READ_REQUEST),
            Self::Terminate => Some(QN_TERMINATE),
            Self::AtomicResponse => Some(QN_ATOMIC_RESPONSE),
        }
    }

    /// The length of the RDMAP header that follows the DDP header.
    pub fn rdmap_len(self) -> usize {
        match Self::props(self) {
            Some(p) => usize::from(p.rdmap_len),
            None => self.rdmap_len_by_match(),
        }
    }

    /// [`Self::rdmap_len`] as the RFCs give it; the source of [`PROPS`].
    const fn rdmap_len_by_match(self) -> usize {
        match self {
            Self::ReadRequest => READ_REQUEST_LEN,
            Self::Terminate => TERMINATE_CTRL_LEN,
            Self::ImmediateData | Self::ImmediateDataSe => 8,
            Self::AtomicRequest => 52,
            Self::AtomicResponse => 12,
            _ => 0,
        }
    }

    /// The length of the whole FPDU header of this opcode, MPA length field included.
    pub fn header_len(self) -> usize {
        match Self::props(self) {
            Some(p) => usize::from(p.header_len),
            None => self.header_len_by_match(),
        }
    }

    /// [`Self::header_len`] as the RFCs give it; the source of [`PROPS`].
    const fn header_len_by_match(self) -> usize {
        match self {
            Self::RdmaWrite | Self::ReadResponse => 16,
            Self::Send | Self::SendInvalidate | Self::SendSe | Self::SendSeInvalidate => 20,
            Self::ReadRequest => 48,
            Self::Terminate => 24,
            Self::ImmediateData | Self::ImmediateDataSe => 28,
            Self::AtomicRequest => 72,
            Self::AtomicResponse => 32,
        }
    }

    /// The most payload one message of this opcode may carry after its header.
    ///
    /// Write, Read Response and the Sends carry ULP payload (RFC 5040 figure 5); the
    /// other messages are header only, except that a Terminate carries the copied
    /// headers of the offending message (RFC 5040 section 4.8).
    pub fn max_payload(self) -> u32 {
        match Self::props(self) {
            Some(p) => p.max_payload,
            None => self.max_payload_by_match(),
        }
    }

    /// [`Self::max_payload`] as the RFCs give it; the source of [`PROPS`].
    const fn max_payload_by_match(self) -> u32 {
        match self {
            Self::RdmaWrite
            | Self::ReadResponse
            | Self::Send
            | Self::SendInvalidate
            | Self::SendSe
            | Self::SendSeInvalidate => u32::MAX,
            Self::Terminate => 48,
            _ => 0,
        }
    }

    /// Whether the message carries an Invalidate STag.
    pub const fn invalidates(self) -> bool {
        matches!(self, Self::SendInvalidate | Self::SendSeInvalidate)
    }

    /// Whether the message asks for a Solicited Event.
    pub const fn solicited(self) -> bool {
        matches!(
            self,
            Self::SendSe | Self::SendSeInvalidate | Self::ImmediateDataSe
        )
    }
}

/// The RDMA Read Request header (RFC 5040 section 4.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReadRequest {
    /// Data Sink STag.
    pub sink_stag: u32,
    /// Data Sink Tagged Offset.
    pub sink_to: u64,
    /// RDMA Read Message Size.
    pub size: u32,
    /// Data Source STag.
    pub src_stag: u32,
    /// Data Source Tagged Offset.
    pub src_to: u64,
}

impl ReadRequest {
    /// Writes the 28 bytes.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, BufferTooSmall> {
        let mut w = Writer::new(out);
        w.u32(self.sink_stag).ok_or(BufferTooSmall)?;
        w.u64(self.sink_to).ok_or(BufferTooSmall)?;
        w.u32(self.size).ok_or(BufferTooSmall)?;
        w.u32(self.src_stag).ok_or(BufferTooSmall)?;
        w.u64(self.src_to).ok_or(BufferTooSmall)?;
        Ok(w.len())
    }

    /// Reads the 28 bytes.
    pub fn parse(buf: &[u8]) -> Option<(Self, usize)> {
        let mut r = Reader::new(buf);
        Some((
            Self {
                sink_stag: r.u32()?,
                sink_to: r.u64()?,
                size: r.u32()?,
                src_stag: r.u32()?,
                src_to: r.u64()?,
            },
            READ_REQUEST_LEN,
        ))
    }
}

/// Terminate header control bits (RFC 5040 section 4.8 figure 8; C siw `TERM_FLAG_*`).
pub mod term_bits {
    /// M: DDP Segment Length valid.
    pub const M: u32 = 0x0000_8000;
    /// D: DDP Header included.
    pub const D: u32 = 0x0000_4000;
    /// R: RDMAP Header included.
    pub const R: u32 = 0x0000_2000;
}

/// The Terminate Control word (RFC 5040 section 4.8): layer (4 bits), error type (4),
/// error code (8), the M, D and R header control bits and 13 reserved bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TerminateHdr {
    /// Layer (0 RDMAP, 1 DDP, 2 LLP).
    pub layer: u8,
    /// Error type.
    pub etype: u8,
    /// Error code.
    pub ecode: u8,
    /// M: the DDP Segment Length is valid.
    pub m: bool,
    /// D: the DDP Header is included.
    pub d: bool,
    /// R: the RDMAP Header is included.
    pub r: bool,
}

impl TerminateHdr {
    /// The control word for `err` carrying the headers `copy` says.
    pub const fn new(err: TermError, copy: HeaderCopy) -> Self {
        let (layer, etype, ecode) = err.triple();
        let (m, d, r) = match copy {
            HeaderCopy::None => (false, false, false),
            HeaderCopy::Ddp => (true, true, false),
            HeaderCopy::DdpRdmap => (true, true, true),
        };
        Self {
            layer,
            etype,
            ecode,
            m,
            d,
            r,
        }
    }

    /// The reason, if the triple is one the RFCs define.
    pub fn error(&self) -> Option<TermError> {
        TermError::from_wire(self.layer, self.etype, self.ecode)
    }

    /// Writes the 4 bytes; reserved bits are zero.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, BufferTooSmall> {
        let mut v = u32::from_be_bytes([
            (self.layer & 0x0f) << 4 | (self.etype & 0x0f),
            self.ecode,
            0,
            0,
        ]);
        if self.m {
            v |= term_bits::M;
        }
        if self.d {
            v |= term_bits::D;
        }
        if self.r {
            v |= term_bits::R;
        }
        let mut w = Writer::new(out);
        w.u32(v).ok_or(BufferTooSmall)?;
        Ok(w.len())
    }

    /// Reads the 4 bytes; reserved bits are ignored.
    pub fn parse(buf: &[u8]) -> Option<(Self, usize)> {
        let mut r = Reader::new(buf);
        let v = r.u32()?;
        let b = v.to_be_bytes();
        Some((
            Self {
                layer: b[0] >> 4,
                etype: b[0] & 0x0f,
                ecode: b[1],
                m: v & term_bits::M != 0,
                d: v & term_bits::D != 0,
                r: v & term_bits::R != 0,
            },
            TERMINATE_CTRL_LEN,
        ))
    }
}

/// RFC 7306 atomic operation code: Fetch and Add (section 5.2.1 figure 5).
pub const AOP_FETCH_ADD: u8 = 0;
/// RFC 7306 atomic operation code: Compare and Swap (section 5.2.1 figure 5).
pub const AOP_CMP_SWAP: u8 = 2;

/// The RFC 7306 Atomic Request header (52 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AtomicRequest {
    /// The atomic operation code (low 4 bits of the first word; the rest is reserved),
    /// RFC 7306 section 5.2.1 figure 5: [`AOP_FETCH_ADD`], 1 reserved, [`AOP_CMP_SWAP`].
    /// Both operations are masked ones: a plain 64-bit add has an Add Mask of 0, a plain
    /// compare-and-swap Compare and Swap Masks of all ones.
    pub aop: u8,
    /// Request Identifier, echoed in the Atomic Response.
    pub req_id: u32,
    /// Remote STag.
    pub stag: u32,
    /// Remote Tagged Offset.
    pub to: u64,
    /// Add or Swap data.
    pub add_swap: u64,
    /// Add or Swap mask.
    pub add_swap_mask: u64,
    /// Compare data.
    pub compare: u64,
    /// Compare mask.
    pub compare_mask: u64,
}

impl AtomicRequest {
    /// Writes the 52 bytes.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, BufferTooSmall> {
        let mut w = Writer::new(out);
        w.u32(u32::from(self.aop & 0x0f)).ok_or(BufferTooSmall)?;
        w.u32(self.req_id).ok_or(BufferTooSmall)?;
        w.u32(self.stag).ok_or(BufferTooSmall)?;
        w.u64(self.to).ok_or(BufferTooSmall)?;
        w.u64(self.add_swap).ok_or(BufferTooSmall)?;
        w.u64(self.add_swap_mask).ok_or(BufferTooSmall)?;
        w.u64(self.compare).ok_or(BufferTooSmall)?;
        w.u64(self.compare_mask).ok_or(BufferTooSmall)?;
        Ok(w.len())
    }

    /// Reads the 52 bytes.
    pub fn parse(buf: &[u8]) -> Option<(Self, usize)> {
        let mut r = Reader::new(buf);
        let aop = r.u32()?.to_be_bytes()[3] & 0x0f;
        Some((
            Self {
                aop,
                req_id: r.u32()?,
                stag: r.u32()?,
                to: r.u64()?,
                add_swap: r.u64()?,
                add_swap_mask: r.u64()?,
                compare: r.u64()?,
                compare_mask: r.u64()?,
            },
            52,
        ))
    }
}

/// The size of an atomic operand and of the target location (RFC 7306 section 5.1).
pub const ATOMIC_LEN: u32 = 8;
/// The low bits of a tagged offset that must be zero for an atomic target.
const ATOMIC_ALIGN_MASK: u64 = 7;

impl AtomicRequest {
    /// The checks a responder makes before it executes the request (RFC 7306 section
    /// 5.1 and 8.2), besides the STag's, which need its memory tables:
    /// - the operation code is FetchAdd or CmpSwap (section 5.2.1 figure 5: 1 is
    ///   reserved, the rest unassigned), else Remote Operation Error "Unexpected
    ///   OpCode";
    /// - the target is 64-bit aligned (sections 5.1.1 and 5.1.2), else Remote
    ///   Operation Error "Catastrophic error, localized to RDMAP Stream", the code
    ///   section 8.2 names. The location is then not touched.
    pub fn check(&self) -> Result<(), TermError> {
        if self.aop != AOP_FETCH_ADD && self.aop != AOP_CMP_SWAP {
            return Err(TermError::RdmapUnexpectedOpcode);
        }
        if self.to & ATOMIC_ALIGN_MASK != 0 {
            return Err(TermError::RdmapCatastrophicStream);
        }
        Ok(())
    }

    /// The value the target location takes when it held `orig` (the responder returns
    /// `orig` in either case). For a request that passed [`Self::check`].
    ///
    /// FetchAdd (section 5.1.1) adds field by field: a bit set in the Add Mask marks
    /// the most significant bit of a field, and the carry out of that bit is dropped;
    /// a mask of 0 is one plain 64-bit add. Clearing the mask bits of both operands
    /// keeps any carry from crossing a field's top bit, and the top bits are then the
    /// carry-less sum of the operands' bits and the carry that came in.
    ///
    /// CmpSwap (section 5.1.2): when `orig` equals Compare Data in the bits of the
    /// Compare Mask, the bits of the Swap Mask are taken from Swap Data; otherwise the
    /// location is unchanged.
    pub fn apply(&self, orig: u64) -> u64 {
        match self.aop {
            AOP_FETCH_ADD => {
                let m = self.add_swap_mask;
                (orig & !m).wrapping_add(self.add_swap & !m) ^ ((orig ^ self.add_swap) & m)
            }
            AOP_CMP_SWAP if (self.compare ^ orig) & self.compare_mask == 0 => {
                (orig & !self.add_swap_mask) | (self.add_swap & self.add_swap_mask)
            }
            _ => orig,
        }
    }
}

/// How many times a masked operation retries its compare-and-swap on a word that keeps
/// changing under it (see [`AtomicRequest::execute`]).
pub const ATOMIC_RETRIES: u32 = 4096;

impl AtomicRequest {
    /// Executes the request on `word`, the target location, as one atomic step; returns
    /// the original value, or `None` when a masked operation found the word changed by
    /// someone else [`ATOMIC_RETRIES`] times in a row (the location is then unchanged).
    ///
    /// The plain forms take one instruction each and never fail: Fetch-and-Add without a
    /// mask is `fetch_add`, Compare-and-Swap with full masks one `compare_exchange`. The
    /// masked forms read, compute [`Self::apply`] and compare-and-swap, which a word under
    /// constant change could make loop for ever: it is bounded instead, so that nothing
    /// the word's owner does can hold the caller. For a request that passed
    /// [`Self::check`].
    pub fn execute(&self, word: &AtomicU64) -> Option<u64> {
        match self.aop {
            AOP_FETCH_ADD if self.add_swap_mask == 0 => {
                return Some(word.fetch_add(self.add_swap, Ordering::SeqCst));
            }
            AOP_CMP_SWAP if self.add_swap_mask == u64::MAX && self.compare_mask == u64::MAX => {
                let r = word.compare_exchange(
                    self.compare,
                    self.add_swap,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                );
                return Some(r.unwrap_or_else(|v| v));
            }
            _ => {}
        }
        let mut old = word.load(Ordering::SeqCst);
        for _ in 0..ATOMIC_RETRIES {
            let new = self.apply(old);
            if new == old {
                return Some(old);
            }
            match word.compare_exchange_weak(old, new, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(v) => return Some(v),
                Err(v) => old = v,
            }
        }
        None
    }
}

/// The RFC 7306 Atomic Response header (12 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AtomicResponse {
    /// The Request Identifier of the request answered.
    pub req_id: u32,
    /// The original value of the remote location.
    pub orig: u64,
}

impl AtomicResponse {
    /// Writes the 12 bytes.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, BufferTooSmall> {
        let mut w = Writer::new(out);
        w.u32(self.req_id).ok_or(BufferTooSmall)?;
        w.u64(self.orig).ok_or(BufferTooSmall)?;
        Ok(w.len())
    }

    /// Reads the 12 bytes.
    pub fn parse(buf: &[u8]) -> Option<(Self, usize)> {
        let mut r = Reader::new(buf);
        Some((
            Self {
                req_id: r.u32()?,
                orig: r.u64()?,
            },
            12,
        ))
    }
}

/// The RDMAP header that follows the DDP header, by opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RdmapHdr {
    /// Write, Read Response and the Sends have no RDMAP header.
    None,
    /// RDMA Read Request.
    ReadRequest(ReadRequest),
    /// Terminate Control word.
    Terminate(TerminateHdr),
    /// RFC 7306 Immediate Data: 8 opaque bytes.
    Immediate([u8; 8]),
    /// RFC 7306 Atomic Request.
    AtomicRequest(AtomicRequest),
    /// RFC 7306 Atomic Response.
    AtomicResponse(AtomicResponse),
}

impl RdmapHdr {
    fn encode(&self, w: &mut Writer<'_>) -> Option<()> {
        // Most FPDUs (Writes, Sends, Read Responses) have none.
        if let Self::None = self {
            return Some(());
        }
        let mut tmp = [0u8; 52];
        let n = match self {
            Self::None => 0,
            Self::ReadRequest(h) => h.encode(&mut tmp).ok()?,
            Self::Terminate(h) => h.encode(&mut tmp).ok()?,
            Self::Immediate(d) => {
                w.put(d)?;
                0
            }
            Self::AtomicRequest(h) => h.encode(&mut tmp).ok()?,
            Self::AtomicResponse(h) => h.encode(&mut tmp).ok()?,
        };
        w.put(tmp.get(..n)?)
    }

    fn parse(op: Opcode, buf: &[u8]) -> Option<Self> {
        Some(match op {
            Opcode::ReadRequest => Self::ReadRequest(ReadRequest::parse(buf)?.0),
            Opcode::Terminate => Self::Terminate(TerminateHdr::parse(buf)?.0),
            Opcode::ImmediateData | Opcode::ImmediateDataSe => {
                Self::Immediate(*buf.first_chunk::<8>()?)
            }
            Opcode::AtomicRequest => Self::AtomicRequest(AtomicRequest::parse(buf)?.0),
            Opcode::AtomicResponse => Self::AtomicResponse(AtomicResponse::parse(buf)?.0),
            _ => Self::None,
        })
    }
}

/// Receive-side options of header validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct HeaderOptions {
    /// Accept the RFC 7306 opcodes. The C siw does not: it answers them with a
    /// Terminate "Unexpected OpCode" (`siw_get_hdr()`).
    pub rfc7306: bool,
}

/// A complete FPDU header: the MPA ULPDU length, the DDP and the RDMAP header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FpduHeader {
    /// The MPA ULPDU_Length: DDP header, RDMAP header and payload, without the length
    /// field itself, pad, CRC or markers (RFC 5044 section 4.1).
    pub ulpdu_len: u16,
    /// The DDP L flag.
    pub last: bool,
    /// The RDMAP opcode.
    pub opcode: Opcode,
    /// The DDP header.
    pub ddp: DdpHdr,
    /// The RDMAP header.
    pub rdmap: RdmapHdr,
}

/// [`FpduHeader::encode`] of a header given in parts: for a sender whose message keeps the
/// RDMAP header, which a whole [`FpduHeader`] would copy (up to 96 octets, per FPDU).
/// Inlined: called out of line, LLVM passed the parts as a whole header built on the stack
/// again (seen in the kernel build).
#[inline(always)]
pub fn encode_header(
    out: &mut [u8],
    ulpdu_len: u16,
    last: bool,
    opcode: Opcode,
    ddp: &DdpHdr,
    rdmap: &RdmapHdr,
) -> Result<usize, BufferTooSmall> {
    let mut w = Writer::new(out);
    let tagged = matches!(ddp, DdpHdr::Tagged(_));
    w.u16(ulpdu_len).ok_or(BufferTooSmall)?;
    w.u16(Ctrl::new(tagged, last, opcode.raw()).0)
        .ok_or(BufferTooSmall)?;
    // The DDP fields written in place: no staging buffer, whose variable-length copy is
    // a `memcpy` call in the kernel, on every FPDU sent.
    match ddp {
        DdpHdr::Tagged(t) => t.write(&mut w),
        DdpHdr::Untagged(u) => u.write(&mut w),
    }
    .ok_or(BufferTooSmall)?;
    rdmap.encode(&mut w).ok_or(BufferTooSmall)?;
    Ok(w.len())
}

/// Validates the first four bytes of an FPDU: the MPA length field and the control
/// word. Returns the opcode.
///
/// Checks, in the C siw's order: DDP version, RDMAP version, opcode (reserved opcodes,
/// and RFC 7306 opcodes unless enabled, are Unexpected OpCode), the T flag against the
/// opcode (RFC 5040 figure 4 fixes the buffer model of every opcode), and that the
/// ULPDU is long enough for the opcode's header. The last check is the C siw's 2026
/// hardening (`siw_get_hdr()`, TERMINATE LLP/MPA/FPDU_START): a shorter length would
/// make the header overlap the next FPDU.
pub fn check_prefix(ulpdu_len: u16, ctrl: Ctrl, opts: HeaderOptions) -> Result<Opcode, TermError> {
    ctrl.check_versions()?;
    let op = match Opcode::from_raw(ctrl.opcode()) {
        Some(op) if opts.rfc7306 || !op.is_rfc7306() => op,
        _ => return Err(TermError::RdmapUnexpectedOpcode),
    };
    if ctrl.tagged() != op.is_tagged() {
        return Err(TermError::RdmapUnexpectedOpcode);
    }
    let min = op.header_len().saturating_sub(MPA_LEN_FIELD);
    if usize::from(ulpdu_len) < min {
        return Err(TermError::LlpFpduStart);
    }
    Ok(op)
}

impl FpduHeader {
    /// The header length, MPA length field included.
    pub fn header_len(&self) -> usize {
        self.opcode.header_len()
    }

    /// The payload length: ULPDU length minus the DDP and RDMAP headers.
    pub fn payload_len(&self) -> usize {
        usize::from(self.ulpdu_len)
            .saturating_add(MPA_LEN_FIELD)
            .saturating_sub(self.opcode.header_len())
    }

    /// The placement offset of the first payload byte: the TO of a tagged segment or
    /// the MO of an untagged one.
    pub fn offset(&self) -> u64 {
        match self.ddp {
            DdpHdr::Tagged(t) => t.to,
            DdpHdr::Untagged(u) => u64::from(u.mo),
        }
    }

    /// Writes the header, MPA length field first. The T flag follows the DDP header
    /// variant; reserved bits are zero.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, BufferTooSmall> {
        encode_header(
            out,
            self.ulpdu_len,
            self.last,
            self.opcode,
            &self.ddp,
            &self.rdmap,
        )
    }

    /// Parses and validates a header that starts at the MPA length field. Returns the
    /// header and its length; the payload follows.
    ///
    /// Besides [`check_prefix`], the checks that need no connection state (RFC 5041
    /// section 7.1, RFC 5040 section 7.2):
    /// - an untagged segment's QN is the opcode's queue, else Invalid QN;
    /// - header-only messages (Read Request, Terminate, the RFC 7306 messages) are a
    ///   single segment: MO 0 (else Invalid MO), L set and no payload beyond what the
    ///   opcode allows (else DDP Message too long);
    /// - a tagged segment's TO plus payload length must not wrap 64 bits (TO wrap),
    ///   unless the segment is empty.
    pub fn parse(buf: &[u8], opts: HeaderOptions) -> Result<(Self, usize), ParseError> {
        let mut r = Reader::new(buf);
        let (Some(ulpdu_len), Some(ctrl)) = (r.u16(), r.u16()) else {
            return Err(ParseError::Truncated { needed: 4 });
        };
        let ctrl = Ctrl(ctrl);
        let opcode = check_prefix(ulpdu_len, ctrl, opts)?;
        let hdr = Self::parse_checked(buf, ulpdu_len, ctrl, opcode)?;
        Ok((hdr, opcode.header_len()))
    }

    /// [`Self::parse`] of a header whose first word, `ulpdu_len` and `ctrl`, is already
    /// read from `buf` and found by [`check_prefix`] to be `opcode`'s (the receiver's
    /// one-step path, which reads it first to see whether the FPDU is all there).
    pub fn parse_checked(
        buf: &[u8],
        ulpdu_len: u16,
        ctrl: Ctrl,
        opcode: Opcode,
    ) -> Result<Self, ParseError> {
        let hlen = opcode.header_len();
        if buf.len() < hlen {
            return Err(ParseError::Truncated { needed: hlen });
        }
        let truncated = ParseError::Truncated { needed: hlen };
        let mut r = Reader::new(buf);
        r.bytes(MPA_LEN_FIELD.saturating_add(2)).ok_or(truncated)?;
        let ddp = if ctrl.tagged() {
            DdpHdr::Tagged(TaggedHdr::parse(r.rest()).ok_or(truncated)?.0)
        } else {
            DdpHdr::Untagged(UntaggedHdr::parse(r.rest()).ok_or(truncated)?.0)
        };
        let ddp_len = if ctrl.tagged() {
            super::ddp::TAGGED_LEN
        } else {
            super::ddp::UNTAGGED_LEN
        };
        r.bytes(ddp_len).ok_or(truncated)?;
        let rdmap = RdmapHdr::parse(opcode, r.rest()).ok_or(truncated)?;
        let hdr = Self {
            ulpdu_len,
            last: ctrl.last(),
            opcode,
            ddp,
            rdmap,
        };
        hdr.check_stateless()?;
        Ok(hdr)
    }

    fn check_stateless(&self) -> Result<(), TermError> {
        let payload = self.payload_len();
        match self.ddp {
            DdpHdr::Untagged(u) => {
                if Some(u.qn) != self.opcode.queue() {
                    return Err(TermError::DdpUntaggedInvalidQn);
                }
                let max = self.opcode.max_payload();
                if max != u32::MAX {
                    if u.mo != 0 {
                        return Err(TermError::DdpUntaggedInvalidMo);
                    }
                    if !self.last || payload > usize::try_from(max).unwrap_or(usize::MAX) {
                        return Err(TermError::DdpUntaggedTooLong);
                    }
                }
            }
            DdpHdr::Tagged(t) => {
                if payload != 0
                    && u64::try_from(payload)
                        .ok()
                        .and_then(|p| t.to.checked_add(p))
                        .is_none()
                {
                    return Err(TermError::DdpTaggedToWrap);
                }
            }
        }
        Ok(())
    }
}

/// What a received Terminate message reports beyond its control word: the copied DDP
/// segment length, DDP header and RDMA Read Request header (RFC 5040 section 4.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TerminateInfo {
    /// The DDP Segment Length, present when D is set.
    pub seg_len: Option<u16>,
    /// The control word and DDP header of the terminated message, present when D is
    /// set and enough bytes arrived.
    pub ddp: Option<(Ctrl, DdpHdr)>,
    /// The Terminated RDMA Header, present when R is set and enough bytes arrived.
    pub rdma: Option<ReadRequest>,
}

impl TerminateInfo {
    /// Decodes the bytes after a Terminate header. Missing or short parts give `None`;
    /// this never fails, since a Terminate ends the connection anyway.
    pub fn parse(hdr: &TerminateHdr, info: &[u8]) -> Self {
        let mut out = Self {
            seg_len: None,
            ddp: None,
            rdma: None,
        };
        if !hdr.d {
            return out;
        }
        let mut r = Reader::new(info);
        let Some(seg_len) = r.u16() else {
            return out;
        };
        out.seg_len = Some(seg_len);
        let Some(ctrl) = r.u16().map(Ctrl) else {
            return out;
        };
        out.ddp = if ctrl.tagged() {
            TaggedHdr::parse(r.rest()).map(|(t, _)| (ctrl, DdpHdr::Tagged(t)))
        } else {
            UntaggedHdr::parse(r.rest()).map(|(u, _)| (ctrl, DdpHdr::Untagged(u)))
        };
        let skip = if ctrl.tagged() {
            super::ddp::TAGGED_LEN
        } else {
            super::ddp::UNTAGGED_LEN
        };
        if out.ddp.is_some() && hdr.r && r.bytes(skip).is_some() {
            out.rdma = ReadRequest::parse(r.rest()).map(|(rr, _)| rr);
        }
        out
    }
}

/// Builds a complete Terminate message: MPA length field, untagged DDP header (QN 2,
/// the given MSN, MO 0, L set), the Terminate control word and the copied headers.
/// Pad and CRC are not included; frame the result with [`super::fpdu`].
///
/// `offending` is the raw header of the message that caused the error, starting at
/// its MPA length field (as [`super::rx::Receiver::raw_header`] returns it). What is
/// copied follows [`TermError::header_copy`]: with D, the DDP segment length (the
/// offending MPA length field) and the 14- or 18-byte DDP header; with R, the 28-byte
/// RDMA Read Request header. A part is left out (and its bit cleared) when
/// `offending` is too short to supply it. The C siw's `siw_send_terminate()` sends QN
/// 2, MSN 1, MO 0 and copies the same bytes.
pub fn build_terminate(
    out: &mut [u8],
    msn: u32,
    err: TermError,
    offending: Option<&[u8]>,
) -> Result<usize, BufferTooSmall> {
    let raw = offending.unwrap_or(&[]);
    let ctrl = raw
        .get(2..4)
        .and_then(|c| c.first_chunk::<2>())
        .map(|c| Ctrl(u16::from_be_bytes(*c)));
    let op = ctrl.and_then(|c| Opcode::from_raw(c.opcode()));
    let mut copy = err.header_copy(offending.map(|_| op.unwrap_or(Opcode::Send)));
    let ddp_copy_len = match ctrl {
        Some(c) if c.tagged() => 16,
        Some(_) => 20,
        None => 0,
    };
    let ddp_bytes = raw.get(..ddp_copy_len).filter(|_| ddp_copy_len != 0);
    let rdma_bytes = raw.get(20..48);
    if copy == HeaderCopy::DdpRdmap && (rdma_bytes.is_none() || op != Some(Opcode::ReadRequest)) {
        copy = HeaderCopy::Ddp;
    }
    if copy != HeaderCopy::None && ddp_bytes.is_none() {
        copy = HeaderCopy::None;
    }

    let mut w = Writer::new(out);
    // The length is patched once known; reserve the field.
    w.u16(0).ok_or(BufferTooSmall)?;
    w.u16(Ctrl::new(false, true, Opcode::Terminate.raw()).0)
        .ok_or(BufferTooSmall)?;
    let mut tmp = [0u8; 16];
    let n = UntaggedHdr {
        rsvd_ulp: 0,
        qn: QN_TERMINATE,
        msn,
        mo: 0,
    }
    .encode(&mut tmp)?;
    w.put(tmp.get(..n).ok_or(BufferTooSmall)?)
        .ok_or(BufferTooSmall)?;
    let mut t = [0u8; 4];
    TerminateHdr::new(err, copy).encode(&mut t)?;
    w.put(&t).ok_or(BufferTooSmall)?;
    if copy != HeaderCopy::None {
        w.put(ddp_bytes.ok_or(BufferTooSmall)?)
            .ok_or(BufferTooSmall)?;
    }
    if copy == HeaderCopy::DdpRdmap {
        w.put(rdma_bytes.ok_or(BufferTooSmall)?)
            .ok_or(BufferTooSmall)?;
    }
    let total = w.len();
    let ulpdu = u16::try_from(total.saturating_sub(MPA_LEN_FIELD)).map_err(|_| BufferTooSmall)?;
    let len_field = out.get_mut(..2).ok_or(BufferTooSmall)?;
    len_field.copy_from_slice(&ulpdu.to_be_bytes());
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table the lookups read gives what the `match`es give, for every opcode.
    #[test]
    fn props_are_the_matches() {
        for op in Opcode::ALL {
            assert_eq!(op.header_len(), op.header_len_by_match(), "{op:?}");
            assert_eq!(op.rdmap_len(), op.rdmap_len_by_match(), "{op:?}");
            assert_eq!(op.queue(), op.queue_by_match(), "{op:?}");
            assert_eq!(op.max_payload(), op.max_payload_by_match(), "{op:?}");
        }
        // Spot checks against RFC 5040 figure 5 and RFC 7306 (header lengths with the MPA
        // length field, as the module documentation's table).
        assert_eq!(Opcode::Send.header_len(), 20);
        assert_eq!(Opcode::ReadRequest.header_len(), 48);
        assert_eq!(Opcode::AtomicRequest.header_len(), MAX_HDR_LEN);
        assert_eq!(Opcode::RdmaWrite.queue(), None);
        assert_eq!(Opcode::AtomicResponse.queue(), Some(QN_ATOMIC_RESPONSE));
        assert_eq!(Opcode::Terminate.max_payload(), TERMINATE_MAX_INFO as u32);
    }
}
