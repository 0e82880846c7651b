// SPDX-License-Identifier: GPL-2.0

//! The streaming receiver: turns the TCP byte stream of the Full Operation Phase into
//! header events, payload slices and trailer verdicts.
//!
//! The input may be split at any point; the events are the same whatever the split
//! (payload slices may be cut differently, their concatenation per FPDU is the same), once
//! an [`Event::Fpdu`] is read as the Header, Payload and End events it stands for: an FPDU
//! that lies whole in one input comes as that one event (without markers, over TCP).
//! Memory is bounded (one header, one trailer and one marker buffer inside the
//! struct) and nothing is allocated. Every call either consumes input, returns an
//! event, or fails with the [`TermError`] to send in a TERMINATE; errors are final.
//!
//! What the receiver checks on its own:
//! - MPA: the CRC (RFC 5044 section 4.4) when negotiated; marker FPDUPTRs against the
//!   FPDU start (section 4.3), reported as LLP "FPDU start" error only when the CRC is
//!   valid (section 8, code 3); markers are stripped and never returned as payload.
//! - DDP and RDMAP header rules that need no QP resources: see
//!   [`FpduHeader::parse`] and [`check_prefix`].
//! - Message continuity, as the C siw does it (`siw_get_hdr()` and the
//!   `siw_*_check_ntoh()` functions): one untagged and one tagged message may be in
//!   progress at a time (they may interleave with each other, not with a message of
//!   the same model); continuation segments must repeat the opcode, QN, MSN or STag,
//!   and continue at the next MO or TO; each untagged message must carry the next MSN
//!   of its queue (starting at 1, RFC 5041 section 4.3) and start at MO 0.
//!
//! The input is anything that implements [`Input`]: a `&[u8]` on the host, in the kernel
//! a piece of an skb that someone else may write meanwhile (a spliced page). The receiver
//! reads it only by copying octets out ([`Input::copy_to`]) or running the CRC over it
//! ([`CrcOf`]), and decides from its copies: the header it parses, the length it cuts the
//! payload with and the CRC field it compares are all its own copies, each read once. The
//! payload it only hands on, to be copied to where it goes.
//!
//! What the caller checks with QP state: STag lookup and bounds
//! ([`super::ddp::check_tagged_bounds`]), receive buffer availability and length
//! ([`super::ddp::check_untagged`]), Read Response against the outstanding read,
//! Invalidate STags.

use super::crc::{crc_from_wire, Crc32c, CrcOf};
use super::ddp::{Ctrl, DdpHdr, MSN_INITIAL};
use super::error::{ParseError, TermError};
use super::fpdu::{decode_marker, pad_len, CRC_LEN, MARKER_INTERVAL, MARKER_LEN};
use super::rdmap::{check_prefix, FpduHeader, HeaderOptions, Opcode, MAX_HDR_LEN, MPA_LEN_FIELD};

/// The number of untagged queues tracked (QN 0 to 3, [`super::ddp::QN_COUNT`]).
const QUEUES: usize = 4;

/// What was negotiated for the receive direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct RxConfig {
    /// Check the FPDU CRC (MPA C bit in either frame).
    pub crc: bool,
    /// The peer inserts markers (we set M in our MPA frame).
    pub markers: bool,
    /// Header validation options.
    pub header: HeaderOptions,
    /// DDP over SCTP (RFC 5043): the input is whole messages, each a DDP-SSN and one DDP
    /// segment, announced by [`Receiver::start_segment`]; no MPA (no length field, pad,
    /// CRC or markers: `crc` and `markers` must be off).
    pub sctp: bool,
}

/// Received octets, as the receiver reads them: it copies them out, runs the CRC over
/// them ([`CrcOf`]) or hands them on in [`Event::Payload`] and [`Event::Fpdu`], and never
/// needs them to stay as they were between two reads.
pub trait Input: Copy {
    /// How many octets.
    fn len(&self) -> usize;
    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The first `n` octets and the rest (all and none if `n` is larger).
    #[must_use]
    fn split_at(self, n: usize) -> (Self, Self);
    /// Copies the first octets to `dst`, as many as fit; returns how many.
    fn copy_to(&self, dst: &mut [u8]) -> usize;
    /// A copy of the first `N` octets, if there are as many. (Worth its own way for a few
    /// octets, where [`Self::copy_to`] would call `memcpy`.)
    fn head<const N: usize>(&self) -> Option<[u8; N]> {
        let mut b = [0u8; N];
        (self.copy_to(&mut b) == N).then_some(b)
    }
}

impl Input for &[u8] {
    fn len(&self) -> usize {
        <[u8]>::len(self)
    }

    fn split_at(self, n: usize) -> (Self, Self) {
        self.split_at(n.min(<[u8]>::len(self)))
    }

    fn copy_to(&self, dst: &mut [u8]) -> usize {
        put_at(dst, 0, self).min(dst.len())
    }
}

/// One thing the receiver found in the stream; `B` is the [`Input`] it was fed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<B> {
    /// A complete, validated FPDU header, now [`Receiver::current_header`]. The payload
    /// (its `payload_len()` octets) follows as [`Event::Payload`] slices. (The header is
    /// not in the event: it is 96 octets, and in the kernel every step that carried it
    /// would copy it with a `memcpy` call.)
    Header {
        /// Whether this segment is the first of its message.
        first: bool,
    },
    /// The next payload octets of the current FPDU, markers removed. Place them at the
    /// header's offset plus the payload octets already seen.
    Payload(B),
    /// The FPDU is complete and its CRC (when enabled) is correct.
    End,
    /// A whole FPDU, found complete in one input: [`Event::Header`], one
    /// [`Event::Payload`] with all its payload (none if empty) and [`Event::End`] at once.
    /// Its header is now [`Receiver::current_header`]; its CRC (when enabled) was checked
    /// before anything of it is returned. The payload goes at the header's offset.
    ///
    /// The common case on a connection without markers: one step per FPDU instead of one
    /// per event. Never over SCTP or with markers.
    Fpdu {
        /// Whether this segment is the first of its message.
        first: bool,
        /// All its payload.
        payload: B,
    },
}

/// The result of one [`Receiver::feed`] call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step<B> {
    /// How many input octets were consumed.
    pub consumed: usize,
    /// The event found, if any. `None` means all input was consumed without completing
    /// anything.
    pub event: Option<Event<B>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Header,
    Payload { rem: u32 },
    Trailer,
    Failed(TermError),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Untagged {
    opcode: Opcode,
    qn: u32,
    msn: u32,
    next_mo: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Tagged {
    opcode: Opcode,
    stag: u32,
    next_to: u64,
}

/// Copies `src` into `buf` from `at` on and returns where it ended: `at` plus `src`'s
/// length (the callers take no more than their buffer holds).
///
/// Both sides are cut to the same `n` first, so that the compiler sees the lengths equal
/// and leaves out `copy_from_slice`'s length-mismatch panic. Where it could not, the call
/// to that panic at the end of a function is one objtool does not know under its name in
/// newer rustc versions (`copy_from_slice_impl::len_mismatch_fail`), and the kernel build
/// warned that the function falls through to the next one. (A byte loop instead compiled
/// to five instructions an octet.)
fn put_at(buf: &mut [u8], at: usize, src: &[u8]) -> usize {
    if let Some(dst) = buf.get_mut(at..) {
        let n = dst.len().min(src.len());
        if let (Some(d), Some(s)) = (dst.get_mut(..n), src.get(..n)) {
            d.copy_from_slice(s);
        }
    }
    at.saturating_add(src.len())
}

/// Copies the first octets of `bytes` to `buf` after the `have` it holds, as many as fit,
/// counts them in `have` and returns how many; with `crc`, adds them to it, read from the
/// copy.
fn copy_in<B: Input, C: Crc32c>(
    buf: &mut [u8],
    have: &mut usize,
    bytes: B,
    crc: Option<&mut C>,
) -> usize {
    let Some(dst) = buf.get_mut(*have..) else {
        return 0;
    };
    let n = bytes.copy_to(dst);
    if let (Some(c), Some(copied)) = (crc, dst.get(..n)) {
        c.update(copied);
    }
    *have = have.saturating_add(n);
    n
}

/// The streaming receiver of one connection. See the module documentation.
#[derive(Clone, Debug)]
pub struct Receiver<C: Crc32c> {
    cfg: RxConfig,
    crc: C,
    state: State,
    hdr: [u8; MAX_HDR_LEN],
    hdr_have: usize,
    hdr_need: usize,
    hdr_stale: bool,
    cur: Option<FpduHeader>,
    /// The first header word of the FPDU being taken octet by octet, once checked: its
    /// ULPDU length, control field and opcode.
    prefix: Option<(u16, Ctrl, Opcode)>,
    trailer: [u8; 7],
    tr_have: usize,
    tr_need: usize,
    pad: usize,
    pos: u32,
    fpdu_start: u32,
    fpdu_open: bool,
    marker: [u8; MARKER_LEN],
    marker_have: usize,
    marker_at: u32,
    marker_bad: bool,
    msn: [u32; QUEUES],
    untagged: Option<Untagged>,
    tagged: Option<Tagged>,
    /// SCTP: the length of the DDP segment announced next (its MPA-like ULPDU length).
    seg_len: Option<u16>,
}

impl<C: Crc32c> Receiver<C> {
    /// A receiver positioned at the first octet of the Full Operation Phase.
    pub fn new(cfg: RxConfig, mut crc: C) -> Self {
        crc.reset();
        Self {
            cfg,
            crc,
            state: State::Header,
            hdr: [0; MAX_HDR_LEN],
            hdr_have: 0,
            hdr_need: 4,
            hdr_stale: false,
            cur: None,
            prefix: None,
            trailer: [0; 7],
            tr_have: 0,
            tr_need: 0,
            pad: 0,
            pos: 0,
            fpdu_start: 0,
            fpdu_open: false,
            marker: [0; MARKER_LEN],
            marker_have: 0,
            marker_at: 0,
            marker_bad: false,
            msn: [MSN_INITIAL; QUEUES],
            untagged: None,
            tagged: None,
            seg_len: None,
        }
    }

    /// DDP over SCTP: the next message is a DDP segment of `len` octets (the SCTP
    /// message less its DDP-SSN). Feed the whole message, DDP-SSN first, next; it ends with
    /// [`Event::End`]. Refused unless between segments, or for a segment too short to hold
    /// a DDP header.
    pub fn start_segment(&mut self, len: usize) -> Result<(), TermError> {
        if let State::Failed(e) = self.state {
            return Err(e);
        }
        if !self.cfg.sctp || !self.at_fpdu_boundary() || self.seg_len.is_some() {
            return Err(self.fail(TermError::LlpLocalCatastrophic));
        }
        // RFC 5043 section 9: a segment longer than any the layer announced is refused;
        // that bound is the caller's, this one is the header's field.
        let len = u16::try_from(len).map_err(|_| self.fail(TermError::DdpUntaggedTooLong))?;
        // Not even a DDP control field: no header to take. (RFC 5043 defines no LLP
        // errors, so a segment too short for its header is a DDP one here.)
        if usize::from(len) < 2 {
            return Err(self.fail(TermError::DdpCatastrophic));
        }
        self.seg_len = Some(len);
        Ok(())
    }

    /// The configuration.
    pub const fn config(&self) -> &RxConfig {
        &self.cfg
    }

    /// The stream position of the next octet (octets consumed so far, modulo 2^32).
    pub const fn position(&self) -> u32 {
        self.pos
    }

    /// The error that stopped the receiver, if any.
    pub const fn error(&self) -> Option<TermError> {
        match self.state {
            State::Failed(e) => Some(e),
            _ => None,
        }
    }

    /// Whether the receiver is between FPDUs (no partial header, payload, trailer or
    /// marker pending).
    pub const fn at_fpdu_boundary(&self) -> bool {
        matches!(self.state, State::Header) && !self.fpdu_open && self.marker_have == 0
    }

    /// Whether the current segment is complete and its [`Event::End`] is due without more
    /// input (DDP over SCTP, where no trailer follows the payload).
    pub fn end_due(&self) -> bool {
        self.state == State::Trailer && self.tr_need == 0
    }

    /// The MSN the next new message on queue `qn` must carry.
    pub fn expected_msn(&self, qn: u32) -> Option<u32> {
        self.msn.get(usize::try_from(qn).ok()?).copied()
    }

    /// The raw octets of the current (or last) FPDU header, starting at the MPA length
    /// field, as far as they arrived. Pass them to [`super::rdmap::build_terminate`].
    pub fn raw_header(&self) -> &[u8] {
        self.hdr.get(..self.hdr_have).unwrap_or(&[])
    }

    /// How many payload octets of the current FPDU were returned so far. Before a
    /// [`Event::Payload`] slice is placed, the slice's placement offset is the header's
    /// [`FpduHeader::offset`] plus this value as it was before the slice.
    pub fn payload_received(&self) -> usize {
        let total = self.cur.as_ref().map_or(0, FpduHeader::payload_len);
        match self.state {
            State::Payload { rem } => {
                total.saturating_sub(usize::try_from(rem).unwrap_or(usize::MAX))
            }
            State::Trailer => total,
            State::Header | State::Failed(_) => 0,
        }
    }

    /// The header of the FPDU being received, once its Header event was returned.
    pub const fn current_header(&self) -> Option<&FpduHeader> {
        self.cur.as_ref()
    }

    /// Whether the received CRC field `field` is the CRC of what was fed since the reset.
    fn crc_matches(&self, field: [u8; CRC_LEN]) -> bool {
        crc_from_wire(field) == self.crc.value()
    }

    fn fail(&mut self, e: TermError) -> TermError {
        self.state = State::Failed(e);
        e
    }

    /// Counts `n` octets taken from the stream.
    fn advance(&mut self, n: usize) {
        self.pos = self.pos.wrapping_add(u32::try_from(n).unwrap_or(u32::MAX));
    }

    /// Consumes octets from `input` until one event is found or the input ends.
    ///
    /// Call it again with the unconsumed rest (`&input[step.consumed..]`) until all
    /// input is consumed. With non-empty input and no error, every call consumes at
    /// least one octet.
    pub fn feed<'a>(&mut self, input: &'a [u8]) -> Result<Step<&'a [u8]>, TermError> {
        self.feed_from(input)
    }

    /// [`Self::feed`] for any [`Input`]: the same events, their payload a piece of `input`.
    pub fn feed_from<B: Input>(&mut self, input: B) -> Result<Step<B>, TermError>
    where
        C: CrcOf<B>,
    {
        if let State::Failed(e) = self.state {
            return Err(e);
        }
        let mut rest = input;
        let mut consumed = 0usize;
        loop {
            // SCTP: no trailer, so a segment ends with its payload, input or not.
            if self.state == State::Trailer && self.tr_need == 0 {
                let (none, _) = rest.split_at(0);
                let (n, event) = self.take_trailer(none)?;
                return Ok(Step {
                    consumed: consumed.saturating_add(n),
                    event,
                });
            }
            if rest.is_empty() {
                return Ok(Step {
                    consumed,
                    event: None,
                });
            }
            if self.whole_possible() {
                if let Some((n, event)) = self.take_whole(rest) {
                    return Ok(Step {
                        consumed: consumed.saturating_add(n),
                        event: Some(event),
                    });
                }
            }
            let in_marker =
                self.cfg.markers && (self.marker_have > 0 || self.pos & (MARKER_INTERVAL - 1) == 0);
            if in_marker {
                let n = self.take_marker(rest);
                let (_, tail) = rest.split_at(n);
                rest = tail;
                consumed = consumed.saturating_add(n);
                continue;
            }
            let limit = if self.cfg.markers {
                let off = self.pos & (MARKER_INTERVAL - 1);
                usize::try_from(MARKER_INTERVAL.wrapping_sub(off)).unwrap_or(usize::MAX)
            } else {
                usize::MAX
            };
            let (avail, _) = rest.split_at(limit);
            let (n, event) = match self.state {
                State::Header => self.take_header(avail)?,
                State::Payload { rem } => self.take_payload(avail, rem),
                State::Trailer => self.take_trailer(avail)?,
                State::Failed(e) => return Err(e),
            };
            let (_, tail) = rest.split_at(n);
            rest = tail;
            consumed = consumed.saturating_add(n);
            if event.is_some() {
                return Ok(Step { consumed, event });
            }
        }
    }

    /// Whether an FPDU could be taken whole: between FPDUs, over TCP without markers.
    fn whole_possible(&self) -> bool {
        self.state == State::Header && !self.fpdu_open && !self.cfg.markers && !self.cfg.sctp
    }

    /// Takes the FPDU at the start of `input` in one step, if it lies there whole and
    /// passes every check: returns the octets it took and its [`Event::Fpdu`].
    ///
    /// `None` leaves the receiver as it was (but for octets in `hdr` past `hdr_have`, which
    /// the octet-by-octet path, next, overwrites), and that path takes the FPDU: one not
    /// all there, and one with anything wrong, which that path then reports as it always
    /// does (the same error, after the same events). Nothing else is changed before the
    /// last check has passed: [`Self::check_stream`] changes state only on success.
    fn take_whole<B: Input>(&mut self, input: B) -> Option<(usize, Event<B>)>
    where
        C: CrcOf<B>,
    {
        // The length and control fields, to see whether the FPDU is all here before the
        // rest of its header is copied (a partial FPDU is the other path's, which copies it
        // as it comes). Each octet is read once: from here on only the copy is, as the
        // input may change meanwhile.
        let prefix = input.head::<4>()?;
        let [l0, l1, c0, c1] = prefix;
        let ulpdu = u16::from_be_bytes([l0, l1]);
        let ctrl = Ctrl(u16::from_be_bytes([c0, c1]));
        let op = check_prefix(ulpdu, ctrl, self.cfg.header).ok()?;
        let hlen = op.header_len();
        let pad = pad_len(ulpdu);
        let body = usize::from(ulpdu).saturating_add(MPA_LEN_FIELD);
        let covered = body.saturating_add(pad);
        let total = covered.saturating_add(CRC_LEN);
        if input.len() < total {
            return None;
        }
        let (fpdu, _) = input.split_at(total);
        // `check_prefix` made sure the header fits the ULPDU.
        let (hdr, after_hdr) = fpdu.split_at(hlen);
        let (_, more) = hdr.split_at(prefix.len());
        *self.hdr.first_chunk_mut::<4>()? = prefix;
        more.copy_to(self.hdr.get_mut(prefix.len()..hlen)?);
        let header = FpduHeader::parse_checked(self.hdr.get(..hlen)?, ulpdu, ctrl, op).ok()?;
        let (payload, tail) = after_hdr.split_at(body.checked_sub(hlen)?);
        if self.cfg.crc {
            let (pad_bytes, field_bytes) = tail.split_at(pad);
            let field = field_bytes.head::<CRC_LEN>()?;
            self.crc.update(self.hdr.get(..hlen)?);
            self.crc.update_from(payload);
            self.crc.update_from(pad_bytes);
            let ok = self.crc_matches(field);
            self.crc.reset();
            if !ok {
                return None;
            }
        }
        let first = self.check_stream(&header).ok()?;
        // From here on nothing fails: the state is that of the same FPDU taken octet by
        // octet, at its End event.
        self.hdr_have = hlen;
        self.hdr_need = hlen;
        self.hdr_stale = true;
        self.fpdu_start = self.pos;
        self.cur = Some(header);
        self.pad = pad;
        self.tr_have = 0;
        self.tr_need = pad.saturating_add(CRC_LEN);
        self.advance(total);
        Some((total, Event::Fpdu { first, payload }))
    }

    fn take_marker<B: Input>(&mut self, rest: B) -> usize {
        if self.marker_have == 0 {
            self.marker_at = self.pos;
        }
        let (bytes, _) = rest.split_at(MARKER_LEN.saturating_sub(self.marker_have));
        let crc = self.cfg.crc.then_some(&mut self.crc);
        let n = copy_in(&mut self.marker, &mut self.marker_have, bytes, crc);
        self.advance(n);
        if self.marker_have >= MARKER_LEN {
            self.marker_have = 0;
            let ptr = u32::from(decode_marker(self.marker));
            let expected = if self.fpdu_open {
                self.marker_at.wrapping_sub(self.fpdu_start)
            } else {
                0
            };
            if ptr != expected {
                self.marker_bad = true;
            }
        }
        n
    }

    fn take_header<B: Input>(&mut self, avail: B) -> Result<(usize, Option<Event<B>>), TermError> {
        if self.hdr_stale || !self.fpdu_open {
            self.hdr_stale = false;
            self.hdr_have = 0;
            self.hdr_need = 4;
            self.cur = None;
            self.prefix = None;
        }
        if self.hdr_have == 0 {
            self.fpdu_start = self.pos;
            self.fpdu_open = true;
        }
        let (bytes, _) = avail.split_at(self.hdr_need.saturating_sub(self.hdr_have));
        let crc = self.cfg.crc.then_some(&mut self.crc);
        let n = copy_in(&mut self.hdr, &mut self.hdr_have, bytes, crc);
        self.advance(n);
        if self.hdr_have < self.hdr_need {
            return Ok((n, None));
        }
        if self.hdr_need == 4 {
            let [l0, l1, c0, c1] = match self.hdr.first_chunk::<4>() {
                Some(p) => *p,
                None => return Err(self.fail(TermError::LlpLocalCatastrophic)),
            };
            let ulpdu = if self.cfg.sctp {
                // The DDP-SSN stands where MPA has its length: the length is the
                // message's. Kept in the raw header, where a Terminate reports it as the
                // DDP segment length.
                let Some(len) = self.seg_len.take() else {
                    return Err(self.fail(TermError::LlpLocalCatastrophic));
                };
                if let Some(l) = self.hdr.get_mut(..2) {
                    l.copy_from_slice(&len.to_be_bytes());
                }
                let _ = (l0, l1);
                len
            } else {
                u16::from_be_bytes([l0, l1])
            };
            let ctrl = Ctrl(u16::from_be_bytes([c0, c1]));
            match check_prefix(ulpdu, ctrl, self.cfg.header) {
                Ok(op) => {
                    self.hdr_need = op.header_len();
                    self.prefix = Some((ulpdu, ctrl, op));
                }
                Err(TermError::LlpFpduStart) if self.cfg.sctp => {
                    return Err(self.fail(TermError::DdpCatastrophic))
                }
                Err(e) => return Err(self.fail(e)),
            }
            return Ok((n, None));
        }
        // The first word is checked: the rest of the header is parsed after it.
        let Some((ulpdu, ctrl, op)) = self.prefix else {
            return Err(self.fail(TermError::LlpLocalCatastrophic));
        };
        let header = match FpduHeader::parse_checked(self.raw_header(), ulpdu, ctrl, op) {
            Ok(h) => h,
            Err(ParseError::Invalid(e)) => return Err(self.fail(e)),
            Err(ParseError::Truncated { .. }) => {
                return Err(self.fail(TermError::LlpLocalCatastrophic))
            }
        };
        let first = match self.check_stream(&header) {
            Ok(f) => f,
            Err(e) => return Err(self.fail(e)),
        };
        self.cur = Some(header);
        self.pad = if self.cfg.sctp {
            0
        } else {
            pad_len(header.ulpdu_len)
        };
        let payload = u32::try_from(header.payload_len()).unwrap_or(u32::MAX);
        self.enter_payload(payload);
        Ok((n, Some(Event::Header { first })))
    }

    fn enter_payload(&mut self, rem: u32) {
        if rem == 0 {
            self.state = State::Trailer;
            self.tr_have = 0;
            self.tr_need = if self.cfg.sctp {
                0
            } else {
                self.pad.saturating_add(CRC_LEN)
            };
        } else {
            self.state = State::Payload { rem };
        }
    }

    fn take_payload<B: Input>(&mut self, avail: B, rem: u32) -> (usize, Option<Event<B>>)
    where
        C: CrcOf<B>,
    {
        let (bytes, _) = avail.split_at(usize::try_from(rem).unwrap_or(usize::MAX));
        let n = bytes.len();
        if self.cfg.crc {
            self.crc.update_from(bytes);
        }
        self.advance(n);
        let left = rem.saturating_sub(u32::try_from(n).unwrap_or(u32::MAX));
        self.enter_payload(left);
        (n, Some(Event::Payload(bytes)))
    }

    fn take_trailer<B: Input>(&mut self, avail: B) -> Result<(usize, Option<Event<B>>), TermError> {
        let (bytes, _) = avail.split_at(self.tr_need.saturating_sub(self.tr_have));
        let at = self.tr_have;
        let n = copy_in::<_, C>(&mut self.trailer, &mut self.tr_have, bytes, None);
        // The pad is covered by the CRC, the CRC field is not; both are read from the copy.
        if self.cfg.crc {
            let pad_end = self.pad.min(self.tr_have);
            if let Some(pad_bytes) = self.trailer.get(at.min(pad_end)..pad_end) {
                self.crc.update(pad_bytes);
            }
        }
        self.advance(n);
        if self.tr_have < self.tr_need {
            return Ok((n, None));
        }
        if self.cfg.crc {
            let field = self
                .trailer
                .get(self.pad..self.tr_need)
                .and_then(|f| f.first_chunk::<4>())
                .copied()
                .unwrap_or([0; 4]);
            if !self.crc_matches(field) {
                return Err(self.fail(TermError::LlpCrc));
            }
        }
        if self.marker_bad {
            return Err(self.fail(TermError::LlpFpduStart));
        }
        self.crc.reset();
        self.state = State::Header;
        self.fpdu_open = false;
        self.hdr_stale = true;
        Ok((n, Some(Event::End)))
    }

    /// The continuity checks described in the module documentation. Returns whether
    /// the segment starts a new message.
    fn check_stream(&mut self, h: &FpduHeader) -> Result<bool, TermError> {
        let payload = u32::try_from(h.payload_len()).unwrap_or(u32::MAX);
        match h.ddp {
            DdpHdr::Untagged(u) => {
                let idx = usize::try_from(u.qn).map_err(|_| TermError::DdpUntaggedInvalidQn)?;
                let expected = *self.msn.get(idx).ok_or(TermError::DdpUntaggedInvalidQn)?;
                let first = match self.untagged {
                    Some(p) => {
                        if p.opcode != h.opcode {
                            return Err(TermError::RdmapUnexpectedOpcode);
                        }
                        if p.qn != u.qn {
                            return Err(TermError::DdpUntaggedInvalidQn);
                        }
                        if p.msn != u.msn {
                            return Err(TermError::DdpUntaggedMsnRange);
                        }
                        if p.next_mo != u.mo {
                            return Err(TermError::DdpUntaggedInvalidMo);
                        }
                        false
                    }
                    None => {
                        if u.msn != expected {
                            return Err(TermError::DdpUntaggedMsnRange);
                        }
                        if u.mo != 0 {
                            return Err(TermError::DdpUntaggedInvalidMo);
                        }
                        true
                    }
                };
                let next_mo =
                    u.mo.checked_add(payload)
                        .ok_or(TermError::DdpUntaggedTooLong)?;
                if h.last {
                    self.untagged = None;
                    if let Some(m) = self.msn.get_mut(idx) {
                        *m = u.msn.wrapping_add(1);
                    }
                } else {
                    self.untagged = Some(Untagged {
                        opcode: h.opcode,
                        qn: u.qn,
                        msn: u.msn,
                        next_mo,
                    });
                }
                Ok(first)
            }
            DdpHdr::Tagged(t) => {
                let first = match self.tagged {
                    Some(p) => {
                        if p.opcode != h.opcode {
                            return Err(TermError::RdmapUnexpectedOpcode);
                        }
                        if p.stag != t.stag {
                            return Err(TermError::DdpTaggedInvalidStag);
                        }
                        if p.next_to != t.to {
                            return Err(TermError::DdpTaggedBaseBounds);
                        }
                        false
                    }
                    None => true,
                };
                if h.last {
                    self.tagged = None;
                } else {
                    self.tagged = Some(Tagged {
                        opcode: h.opcode,
                        stag: t.stag,
                        next_to: t.to.wrapping_add(u64::from(payload)),
                    });
                }
                Ok(first)
            }
        }
    }
}
