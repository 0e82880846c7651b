// SPDX-License-Identifier: GPL-2.0

//! The transmit engine: send queue elements, Read Responses and Terminates into FPDUs.
//!
//! One work element is active at a time; it is cut into FPDUs by the protocol core's
//! [`Segmenter`], and each FPDU goes to TCP as header, payload pieces and trailer without
//! copying the payload: the pieces point into the registered pages (or the inline data).
//! Sends never block: when TCP's buffer is full, the FPDU stays half sent and the socket's
//! write-space callback brings the work back.
//!
//! Over SCTP (RFC 5043) each FPDU is a DDP segment: its DDP-SSN stands where MPA has its
//! length field, no pad or CRC follows, and it goes to SCTP as one whole message (copied).

use crate::{
    cq::Completion,
    glue::{
        iov::{IoVec, IoVecs, KernelCrc},
        net::tcp::Socket,
        rdma::{umem::MrMem, verbs::AccessFlags},
        siw_abi::{op, wc, wqe, MAX_INLINE, MAX_SGE, SQE_SIZE},
    },
    mr::{self, AccessError, FastRegError, MrCore, LOCAL_READ, LOCAL_WRITE, REMOTE_READ},
    proto::{
        ddp::{QN_ATOMIC_RESPONSE, QN_READ_REQUEST, QN_SEND},
        error::TermError,
        fpdu::{mulpdu, trailer, write_fpdu, MarkerTx, Pack, Packer},
        mpa::Rtr,
        rdmap::{
            build_terminate, AtomicRequest, AtomicResponse, Opcode, RdmapHdr, ReadRequest,
            AOP_CMP_SWAP, AOP_FETCH_ADD, ATOMIC_LEN, MAX_HDR_LEN,
        },
        sctp::{SsnCounter, PPID_DDP_SEGMENT},
        segment::{first_wire_len, Message, SegmentError, Segmenter, Target},
    },
    qp::{sq_completion, LinkParams, QpCore, QpState, OK},
    queue::{sqe_sge_len, AtomicWqe, RegMrWqe, Sqe, SQE_IMM, SQE_INLINE, SQE_NUM_SGE, WQE_FLAGS},
    stats::Counter,
    table::Tables,
};
use core::sync::atomic::{fence, Ordering};
use kernel::{prelude::*, sync::Arc};

/// Largest FPDU payload siw_rs builds: an FPDU then spans few pages, so its pieces fit one
/// `sendmsg` (and at most one MSS on Ethernet, as the C siw's default).
const MAX_FPDU: u32 = 16 * 1024;

/// Read Responses of at least this size from user memory are sent from the user's pages
/// without a copy (`MSG_SPLICE_PAGES`); below it the copy is cheaper than page references
/// (the C siw's `SENDPAGE_THRESH`).
///
/// Only Read Responses from user memory: TCP may retransmit a spliced page as it is
/// *then*, and nothing tells us when TCP lets go of it. A Read's source may not change
/// until the peer's Read completes, and the peer completes it only after it has all the
/// data, so a retransmit carries other bytes than the first transmission did only if the
/// application races the Read or invalidates the region under it (RFC 5040 leaves the
/// first undefined), and then only bytes of the application's own pages: TCP holds its own
/// references to them, so a page unpinned by a deregistration meanwhile is not reused by
/// anyone else while TCP may still send it. A kernel consumer's pages are another matter:
/// once the peer's Send with Invalidate has completed its I/O they go back to the block
/// layer or the page cache, so they are always copied. A Write or Send completes when TCP
/// has taken the data, after which its buffer is the user's to reuse: a spliced page would
/// then let a retransmit carry the new contents (the C siw splices unsignalled ones; we
/// copy them).
const ZCOPY_MIN: u32 = kernel::page::PAGE_SIZE as u32;

/// Room for any header we send: the largest is a Terminate with copied headers.
const HDR_BUF: usize = 96;

/// Largest FPDU, markers included, siw_rs sends when it inserts markers: each is framed
/// in a buffer of this size (see [`Marked`]).
const MARKED_FPDU: u32 = 4096;

/// An outstanding RDMA Read of ours.
pub(crate) struct OrqEntry {
    pub(crate) id: u64,
    pub(crate) signalled: bool,
    pub(crate) sink_stag: u32,
    /// The registration `sink_stag` named when the request was posted (none for the RTR
    /// Read), so that its response is placed without another lookup ([`Self::sink`]).
    pub(crate) sink_mr: Option<Arc<MrCore>>,
    pub(crate) sink_to: u64,
    pub(crate) len: u32,
    /// Bytes of the Read Response received so far: segments come in order and the last
    /// one must end the sink exactly.
    pub(crate) received: u32,
    /// The peer-to-peer RTR Read: no work request behind it, so never completed.
    pub(crate) rtr: bool,
    /// A Read with Invalidate: the sink STag is invalidated once the response is in.
    pub(crate) invalidate: bool,
    /// An RFC 7306 Atomic Request, not a Read: its opcode (`op::FETCH_AND_ADD` or
    /// `op::COMP_AND_SWAP`) and Request Identifier. Its Atomic Response puts the original
    /// value, 8 bytes, at the sink.
    pub(crate) atomic: Option<(u8, u32)>,
}

impl OrqEntry {
    /// The opcode its completion reports.
    pub(crate) fn opcode(&self) -> u8 {
        self.atomic.map_or(op::READ, |(opcode, _)| opcode)
    }

    /// The registration the response is placed into (see [`Tables::mr_held`]).
    pub(crate) fn sink(&self, tables: &Tables) -> Option<Arc<MrCore>> {
        tables.mr_held(self.sink_mr.clone(), self.sink_stag)
    }
}

/// A request of the peer's to answer, in the order received (RFC 7306 section 7: a Read
/// Response is not generated before the Atomic Response of an earlier Atomic Request, nor
/// the other way round).
pub(crate) enum Inbound {
    /// An RDMA Read Request, checked on arrival; `src` is the registration its source
    /// STag named then (none for a zero-length Read), answered from without another
    /// lookup while it is still valid ([`Tables::mr_held`]).
    Read {
        rr: ReadRequest,
        src: Option<Arc<MrCore>>,
    },
    /// An RFC 7306 Atomic Request, checked on arrival: the 8 bytes at `off` of `mr`. It is
    /// executed when its turn to be answered comes.
    Atomic {
        req: AtomicRequest,
        mr: Arc<MrCore>,
        off: usize,
    },
}

/// The (region, offset, length) pieces of registered memory a message's payload is made
/// of, one per SGE.
///
/// Only the first `n` slots may be in use (a zero-length SGE leaves its slot empty), so
/// setting up and letting go of a message of one SGE touches one slot, not all six.
#[derive(Default)]
struct Pieces {
    slot: [Option<(Arc<MrCore>, usize, u32)>; MAX_SGE],
    n: usize,
}

impl Pieces {
    /// The pieces in use, in order.
    fn iter(&self) -> impl Iterator<Item = &(Arc<MrCore>, usize, u32)> {
        self.slot.iter().take(self.n).flatten()
    }

    /// Lets go of the regions: no slot is in use afterwards.
    fn clear(&mut self) {
        for p in self.slot.iter_mut().take(self.n) {
            *p = None;
        }
        self.n = 0;
    }
}

/// Where an active element's payload comes from.
enum Source {
    /// Registered memory. With `splice`, TCP references pinned user pages instead of
    /// copying them (see [`ZCOPY_MIN`]). `remote`: a Read Response, read on the peer's
    /// behalf, which stops once its STag goes invalid.
    Sges {
        parts: Pieces,
        splice: bool,
        remote: bool,
    },
    /// Inline data copied out of the SQE.
    Inline { data: [u8; MAX_INLINE], len: usize },
    /// No payload.
    None,
}

impl Source {
    /// Lets go of the regions, keeping the variant: the next element's pieces are written
    /// into the same array.
    fn release(&mut self) {
        if let Source::Sges { parts, .. } = self {
            parts.clear();
        }
    }

    /// The pieces of registered memory, this made such a source with these flags first
    /// (idle, its pieces are clear). `None` only if that failed, which it cannot.
    fn sges(&mut self, splice: bool, remote: bool) -> Option<&mut Pieces> {
        if !matches!(self, Source::Sges { .. }) {
            *self = Source::Sges {
                parts: Pieces::default(),
                splice,
                remote,
            };
        }
        match self {
            Source::Sges {
                parts,
                splice: s,
                remote: r,
            } => {
                *s = splice;
                *r = remote;
                Some(parts)
            }
            Source::Inline { .. } | Source::None => None,
        }
    }

    /// Whether this is memory read for the peer and any of it is no longer valid.
    fn remote_invalid(&self) -> bool {
        match self {
            Source::Sges {
                parts,
                remote: true,
                ..
            } => parts.iter().any(|(mr, _, _)| !mr.is_valid()),
            _ => false,
        }
    }
}

/// The active element.
///
/// It lives in [`TxState`] for good, like [`Fpdu`], and a send queue element is written
/// into it field by field: building a new one and moving it in (into an `Option`) copied
/// its ~390 octets twice with `memcpy` calls, once per message.
struct Active {
    /// It holds an element not yet wholly sent.
    live: bool,
    seg: Segmenter,
    src: Source,
    /// Completion to report once the last FPDU is out: (id, opcode, bytes).
    done: Option<(u64, u8, u32)>,
    /// A Terminate: close after sending.
    term: bool,
    /// The message that follows this one as part of the same work element: the RFC 7306
    /// Immediate Data message of an RDMA Write with Immediate Data, which then reports
    /// `done`.
    then: Option<Segmenter>,
}

impl Active {
    const IDLE: Self = Self {
        live: false,
        seg: Segmenter::IDLE,
        src: Source::None,
        done: None,
        term: false,
        then: None,
    };

    /// Done with: idle, its regions let go.
    fn finish(&mut self) {
        self.live = false;
        self.src.release();
        self.done = None;
        self.then = None;
    }

    /// Starts `msg`, a message without payload that completes nothing (a request, a
    /// response, an RTR), in this idle element; on error it stays idle.
    fn start_header_only(&mut self, msg: Message, mul: u16) -> Result<(), SegmentError> {
        self.seg.start(msg, mul)?;
        self.src.release();
        self.done = None;
        self.term = false;
        self.then = None;
        self.live = true;
        Ok(())
    }
}

/// An FPDU being handed to TCP: header, payload pieces and trailer, or (with markers) the
/// framed FPDU in [`Marked::wire`].
///
/// It lives in [`TxState`] for good and is refilled field by field for each FPDU, the header
/// encoded straight into `hdr`: moving a new one in (into an `Option`) would copy its 170
/// octets with a `memcpy` call per FPDU, the kernel's Rust having no vector registers.
struct Fpdu {
    /// It holds an FPDU not yet wholly sent.
    queued: bool,
    hdr: [u8; HDR_BUF],
    hdr_len: usize,
    pay_off: u32,
    pay_len: u32,
    trailer: [u8; 7],
    tr_len: usize,
    sent: usize,
    total: usize,
    last: bool,
    /// Framed whole in [`Marked::wire`], `total` bytes.
    staged: bool,
    /// Handed to TCP with the segment held open for the next FPDU (see [`Packer`]).
    hold: bool,
}

impl Fpdu {
    const IDLE: Self = Self {
        queued: false,
        hdr: [0; HDR_BUF],
        hdr_len: 0,
        pay_off: 0,
        pay_len: 0,
        trailer: [0; 7],
        tr_len: 0,
        sent: 0,
        total: 0,
        last: false,
        staged: false,
        hold: false,
    };

    /// Starts an FPDU of `hdr_len` header octets (already in `hdr`) and `pay_len` payload
    /// octets from message offset `pay_off`, with no trailer yet.
    fn start(&mut self, hdr_len: usize, pay_off: u32, pay_len: u32, last: bool) {
        self.hdr_len = hdr_len;
        self.pay_off = pay_off;
        self.pay_len = pay_len;
        self.tr_len = 0;
        self.sent = 0;
        self.total = 0;
        self.last = last;
        self.staged = false;
        self.hold = false;
    }

    /// Ends the FPDU started: its trailer, `pad` octets and the CRC (none over SCTP), and
    /// its length. `crc`, when the CRC is on, has taken the header and payload; the pad is
    /// added here.
    fn seal(&mut self, pad: usize, sctp: bool, crc: Option<KernelCrc>) {
        let (t, tl) = if sctp {
            ([0; 7], 0)
        } else {
            let value = crc.map_or(0, |mut c| {
                c.update([0u8; 4].get(..pad).unwrap_or(&[]));
                c.value()
            });
            trailer(pad, value)
        };
        self.trailer = t;
        self.tr_len = tl;
        self.total = self.hdr_len + self.pay_len as usize + tl;
    }
}

/// Markers we insert because the peer asked for them (its M bit, RFC 5044 section 4.3).
///
/// A marker goes every 512 octets of the stream, so it falls inside payload pieces; one
/// `sendmsg` cannot carry the pieces of a whole FPDU so split. Each FPDU is framed instead
/// in `wire`, copied (header and payload gathered in `plain` first). This is the
/// compatibility path, for peers that insist on markers; FPDUs stay at most
/// [`MARKED_FPDU`] octets.
struct Marked {
    /// Stream position, from the first octet of the Full Operation Phase.
    tx: MarkerTx,
    plain: KVec<u8>,
    wire: KVec<u8>,
}

impl Marked {
    fn new() -> Result<Self> {
        let len = MARKED_FPDU as usize + HDR_BUF;
        Ok(Self {
            tx: MarkerTx::new(),
            plain: KVec::from_elem(0u8, len, GFP_KERNEL)?,
            wire: KVec::from_elem(0u8, len, GFP_KERNEL)?,
        })
    }

    /// Frames `f` (its header and payload from `src`), markers, pad and CRC, into `wire`.
    fn stage(&mut self, f: &mut Fpdu, src: &Source, crc: bool) -> Result<(), TxStop> {
        let hdr = f.hdr.get(..f.hdr_len).ok_or(TxStop::Failed)?;
        self.plain
            .get_mut(..f.hdr_len)
            .ok_or(TxStop::Failed)?
            .copy_from_slice(hdr);
        let mut at = f.hdr_len;
        let plain = &mut self.plain;
        payload(src, f.pay_off, f.pay_len, &mut |v| {
            let dst = plain.get_mut(at..).ok_or(TxStop::Failed)?;
            if v.len() > dst.len() {
                return Err(TxStop::Failed);
            }
            at += v.copy_to(dst);
            Ok(())
        })?;
        let body = self.plain.get(..at).ok_or(TxStop::Failed)?;
        let mut c = KernelCrc::new();
        let n = write_fpdu(
            &mut self.wire,
            &[body],
            crc.then_some(&mut c),
            Some(&mut self.tx),
        )
        .map_err(|_| TxStop::Failed)?;
        f.total = n;
        f.staged = true;
        Ok(())
    }
}

/// Transmit state of a connection.
pub(crate) struct TxState {
    active: Active,
    fpdu: Fpdu,
    /// The last MSN used on QN 0 (Send, Immediate Data), QN 1 (Read and Atomic Request)
    /// and QN 3 (Atomic Response).
    msn: [u32; 3],
    /// Our Reads awaiting their responses, oldest first.
    pub(crate) orq: KVec<OrqEntry>,
    /// The peer's Reads and Atomics to answer, oldest first.
    pub(crate) irq: KVec<Inbound>,
    /// A Terminate to send (the raw header that caused it, as far as known).
    term: Option<(TermError, [u8; MAX_HDR_LEN], usize)>,
    /// A zero-length message to send before the next work: the peer-to-peer RTR message
    /// (RFC 6581), or an initiator's wake-up of its responder (a Write RTR message, see
    /// [`crate::proto::mpa::ResponderWake`]).
    rtr: Option<Rtr>,
    /// Markers we insert, when the peer asked for them.
    marked: Option<KBox<Marked>>,
    /// The TCP segment held open for FPDUs ready together (`fpdu_pack`).
    packer: Packer,
    /// Send queue elements taken in a row with nothing received in between, across runs
    /// (see [`SQ_BURST`]), and the receive side's byte count when the last was taken.
    streak: u32,
    rx_mark: u64,
}

/// Why transmission stopped for good.
pub(crate) enum TxStop {
    /// A Terminate was sent: close.
    Terminated,
    /// The socket failed, or a work element was bad (it completed with an error).
    Failed,
    /// The peer reset the connection (`ECONNRESET`, `EPIPE`): its end is gone.
    Lost,
}

impl TxState {
    /// An idle engine for a connection with `p`'s IRD/ORD limits, inserting markers if the
    /// peer asked for them.
    pub(crate) fn new(p: &LinkParams) -> Result<Self> {
        let (ird, ord, markers) = (p.ird, p.ord, p.markers_tx);
        Ok(Self {
            active: Active::IDLE,
            fpdu: Fpdu::IDLE,
            msn: [0, 0, 0],
            orq: KVec::with_capacity(usize::from(ord).max(1), GFP_KERNEL)?,
            irq: KVec::with_capacity(usize::from(ird).max(1), GFP_KERNEL)?,
            term: None,
            rtr: None,
            marked: if markers {
                Some(KBox::new(Marked::new()?, GFP_KERNEL)?)
            } else {
                None
            },
            packer: Packer::new(),
            streak: 0,
            rx_mark: 0,
        })
    }

    /// A Terminate or a zero-length RTR message waits to go out.
    pub(crate) fn control_due(&self) -> bool {
        self.term.is_some() || self.rtr.is_some()
    }

    /// Nothing is being sent.
    pub(crate) fn idle(&self) -> bool {
        !self.active.live && !self.fpdu.queued
    }

    /// Work taken from the queues but not completed, as (id, opcode), for flushing.
    pub(crate) fn take_pending(&mut self) -> KVec<(u64, u8)> {
        let mut v = KVec::new();
        if self.active.live {
            if let Some((id, opcode, _)) = self.active.done {
                let _ = v.push((id, opcode), GFP_ATOMIC);
            }
        }
        self.active.finish();
        self.fpdu.queued = false;
        for o in self.orq.drain_all() {
            if !o.rtr {
                let _ = v.push((o.id, o.opcode()), GFP_ATOMIC);
            }
        }
        v
    }

    /// Queues the peer-to-peer RTR message; it goes out first.
    pub(crate) fn send_rtr(&mut self, rtr: Rtr) {
        self.rtr = Some(rtr);
    }

    /// Queues a zero-length RDMA Write (the Write RTR message), unless a zero-length message
    /// waits already: it wakes a responder that missed the FPDUs before it.
    pub(crate) fn send_wake(&mut self) {
        if self.rtr.is_none() {
            self.rtr = Some(Rtr::Write);
        }
    }

    /// Queues a Terminate for `err`, found in the FPDU whose header is `raw`.
    pub(crate) fn terminate(&mut self, err: TermError, raw: &[u8]) {
        if self.term.is_none() {
            let mut h = [0u8; MAX_HDR_LEN];
            let n = raw.len().min(MAX_HDR_LEN);
            if let (Some(d), Some(s)) = (h.get_mut(..n), raw.get(..n)) {
                d.copy_from_slice(s);
            }
            self.term = Some((err, h, n));
        }
    }
}

fn next_msn(msn: &mut u32) -> u32 {
    *msn = msn.wrapping_add(1);
    *msn
}

/// Send queue elements one transmit run takes at most before it yields (the C siw's
/// `SQ_USER_MAXBURST`).
///
/// A one-way stream also yields after `SQ_BURST` elements in a row, however many runs
/// took them: the C siw counts across its doorbells too. So a process that sends without
/// hearing from the peer, ringing the doorbell once per element, hands every
/// `SQ_BURST`-th to the connection's work. Until the work has taken it, the elements the
/// process posts find the one before them still valid and ring no doorbell (libsiw's
/// rule), and the work sends them all in one run: fewer system calls for the price of
/// one hand-off. Traffic that waits for the peer (request and response) has nothing to
/// batch and never pays the hand-off, which would lengthen one round trip in a hundred.
const SQ_BURST: u32 = 100;

/// How a transmit run ended, short of an error.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Ran {
    /// Nothing to send now, or TCP's buffer is full (its write-space callback resumes).
    Idle,
    /// [`SQ_BURST`] elements were taken and more may wait: run again, after others.
    Yield,
}

/// Runs the engine until it has nothing to send, TCP's buffer is full, or a burst of send
/// queue elements is done. Over SCTP, `ssn` hands out the DDP-SSNs of the connection's
/// messages (RFC 5043 section 5.2.1; the connection manager's Session Control messages
/// take theirs from it too).
///
/// Each pass takes work if none is under way, frames the next FPDU if none is queued, and
/// hands the queued one to TCP: a message of one FPDU goes out in one pass.
///
/// FPDUs ready together share TCP segments (see [`Packer`]); a segment still held open when
/// the run ends is pushed, unless TCP's buffer is full (then data is in flight, and TCP
/// sends it at the next acknowledgement).
pub(crate) fn run(
    qp: &QpCore,
    st: &mut QpState,
    sock: &Socket,
    ssn: Option<&mut SsnCounter>,
) -> Result<Ran, TxStop> {
    let mut blocked = false;
    let r = passes(qp, st, sock, ssn, &mut blocked);
    if !blocked {
        if let Some(link) = st.link_mut() {
            if link.tx.packer.is_open() {
                link.tx.packer.closed();
                sock.push();
            }
        }
    }
    r
}

/// [`run`]'s passes; `blocked` is set when TCP's buffer is full.
fn passes(
    qp: &QpCore,
    st: &mut QpState,
    sock: &Socket,
    mut ssn: Option<&mut SsnCounter>,
    blocked: &mut bool,
) -> Result<Ran, TxStop> {
    let mut burst = 0u32;
    loop {
        let Some(link) = st.link_mut() else {
            return Ok(Ran::Idle);
        };
        if !link.tx.fpdu.queued && !link.tx.active.live {
            match take_work(qp, st, sock, &mut burst)? {
                Took::Work => {}
                Took::Again => continue,
                Took::Stop(ran) => return Ok(ran),
            }
        }
        // The slot after the element taken: a packing guess looks there.
        let sq_next = st.sq_get();
        let Some(link) = st.link_mut() else {
            return Ok(Ran::Idle);
        };
        let tx = &mut link.tx;
        // An FPDU framed by an earlier pass (TCP's buffer was full) may have lost its
        // source since; `frame` has just checked a fresh one.
        let resumed = tx.fpdu.queued;
        if !resumed && !frame(tx, link.params.crc, link.params.sctp.is_some())? {
            continue;
        }
        if tx.fpdu.sent == 0 && ssn.is_none() && !tx.fpdu.staged && packing() {
            let mss = sock.mss() as usize;
            // An FPDU that fills a segment alone is never held: nothing to look for.
            let next = if tx.fpdu.total < mss {
                next_wire_len(qp, tx, &link.params, sock, sq_next, burst)
            } else {
                None
            };
            let pack = if next.is_some() || tx.packer.is_open() {
                tx.packer.plan(tx.fpdu.total, mss, next)
            } else {
                Pack::default()
            };
            if pack.close_first {
                sock.push();
            }
            tx.fpdu.hold = pack.hold;
        }
        let f = &mut tx.fpdu;
        let a = &tx.active;
        if !a.live {
            return Err(TxStop::Failed);
        }
        let mut iov = IoVecs::new();
        let mut voided = false;
        // Over SCTP the DDP-SSN this message gets, should SCTP take it.
        let next_ssn = ssn.as_deref().map(SsnCounter::peek);
        if let (Some(s), Some(l)) = (next_ssn, f.hdr.get_mut(..2)) {
            l.copy_from_slice(&s.to_be_bytes());
        }
        if f.staged {
            let m = tx.marked.as_ref().ok_or(TxStop::Failed)?;
            push(
                &mut iov,
                IoVec::new(m.wire.get(..f.total).ok_or(TxStop::Failed)?),
            )?;
        } else {
            push(&mut iov, IoVec::new(f.hdr.get(..f.hdr_len).unwrap_or(&[])))?;
            // A Read Response's source invalidated or deregistered since this FPDU was
            // framed: the rest of it goes as zeros, so that the
            // stream stays framed, and a Terminate follows. Not another byte of the
            // region is read (RFC 5040 section 8.1.1, item 6).
            if resumed && a.src.remote_invalid() {
                zeros(f.pay_len, &mut |v| push(&mut iov, v))?;
                voided = true;
            } else {
                payload(&a.src, f.pay_off, f.pay_len, &mut |v| push(&mut iov, v))?;
            }
            push(
                &mut iov,
                IoVec::new(f.trailer.get(..f.tr_len).unwrap_or(&[])),
            )?;
        }
        let r = if next_ssn.is_some() {
            sock.send_message(iov.as_slice(), PPID_DDP_SEGMENT)
        } else {
            sock.send(iov.as_slice(), f.sent, false, f.hold)
        };
        if voided {
            tx.terminate(TermError::RdmapInvalidStag, &[]);
        }
        let f = &mut tx.fpdu;
        match r {
            Ok(k) => f.sent = f.sent.saturating_add(k),
            Err(e) if e == EAGAIN => {
                *blocked = true;
                return Ok(Ran::Idle);
            }
            Err(e) if e == ECONNRESET || e == EPIPE => return Err(TxStop::Lost),
            Err(_) => return Err(TxStop::Failed),
        }
        if f.sent >= f.total {
            // Taken now that SCTP took the message: one not sent leaves no gap.
            let _ = ssn.as_deref_mut().map(SsnCounter::take);
        }
        if f.sent < f.total {
            // TCP's buffer is full; the write-space callback resumes us.
            *blocked = true;
            return Ok(Ran::Idle);
        }
        let last = f.last;
        qp.stats().add(Counter::TxFpdus, 1);
        qp.stats().add(Counter::TxBytes, u64::from(f.pay_len));
        if f.hold {
            qp.stats().add(Counter::TxPacked, 1);
        }
        f.queued = false;
        if last {
            // Looked at in place: taking the element out would copy its ~390 octets
            // with a `memcpy` call, once per message.
            let a = &mut tx.active;
            if a.term {
                a.finish();
                qp.tables().count(Counter::TerminatesSent);
                return Err(TxStop::Terminated);
            }
            if let Some(seg) = a.then.take() {
                // The Immediate Data message goes right behind its Write, before
                // anything else, so the peer can tell which Write it completes
                // (`done`, kept).
                a.seg = seg;
                a.src = Source::None;
                continue;
            }
            let done = a.done;
            a.finish();
            if let Some((id, opcode, bytes)) = done {
                let c = sq_completion(st, id, opcode, OK, bytes);
                let _ = st.complete(true, &c);
            }
        }
    }
}

/// Frames the active element's next FPDU into [`TxState::fpdu`]: header, payload pieces and
/// trailer (over SCTP none), or the whole FPDU with markers. Returns `false` if there was
/// none to frame: the element is finished then (and a Terminate queued if its source went
/// invalid).
fn frame(tx: &mut TxState, crc: bool, sctp: bool) -> Result<bool, TxStop> {
    let a = &mut tx.active;
    // A Read Response whose source was invalidated or deregistered since the
    // last FPDU: not another byte of it (RFC 5040 section 8.1.1, item 6).
    if a.src.remote_invalid() {
        a.finish();
        tx.terminate(TermError::RdmapInvalidStag, &[]);
        return Ok(false);
    }
    let f = &mut tx.fpdu;
    let Some(seg) = a.seg.next_into(&mut f.hdr) else {
        a.finish();
        return Ok(false);
    };
    f.start(
        seg.header_len,
        seg.payload_offset,
        seg.payload_len,
        seg.last,
    );
    if let Some(m) = tx.marked.as_mut() {
        m.stage(f, &a.src, crc)?;
        f.queued = true;
        return Ok(true);
    }
    let mut c = crc.then(KernelCrc::new);
    if let Some(c) = c.as_mut() {
        c.update(f.hdr.get(..f.hdr_len).unwrap_or(&[]));
        payload(&a.src, f.pay_off, f.pay_len, &mut |v| {
            *c = KernelCrc::from_state(v.crc32c(c.state()));
            Ok(())
        })?;
    }
    f.seal(seg.pad, sctp, c);
    f.queued = true;
    Ok(true)
}

/// What [`take_work`] found.
enum Took {
    /// An element is active now (or an FPDU queued): frame and send it.
    Work,
    /// Look again: a local operation was done, or a Terminate queued.
    Again,
    /// Nothing to take now, or a burst was taken.
    Stop(Ran),
}

/// Takes the next work when nothing is under way, in this order: a Terminate to send, the
/// RTR or wake-up message, the peer's Reads and Atomics to answer, the user's next send
/// queue element.
fn take_work(
    qp: &QpCore,
    st: &mut QpState,
    sock: &Socket,
    burst: &mut u32,
) -> Result<Took, TxStop> {
    let Some(link) = st.link_mut() else {
        return Ok(Took::Stop(Ran::Idle));
    };
    let tx = &mut link.tx;
    if let Some((err, raw, n)) = tx.term.take() {
        let mul = fpdu_mul(&link.params, tx.marked.is_some(), sock);
        // The Terminate is a one-FPDU message, its header built straight into the FPDU
        // (no FPDU is queued while work is taken) and framed here.
        let f = &mut tx.fpdu;
        let len = build_terminate(&mut f.hdr, 1, err, raw.get(..n)).map_err(|_| TxStop::Failed)?;
        let hdr_len = len.min(HDR_BUF);
        let ulpdu = u16::try_from(hdr_len.saturating_sub(2)).unwrap_or(0);
        if let Some(l) = f.hdr.get_mut(..2) {
            l.copy_from_slice(&ulpdu.to_be_bytes());
        }
        f.start(hdr_len, 0, 0, true);
        let crc = link.params.crc.then(|| {
            let mut c = KernelCrc::new();
            c.update(f.hdr.get(..hdr_len).unwrap_or(&[]));
            c
        });
        f.seal((4 - (hdr_len & 3)) & 3, link.params.sctp.is_some(), crc);
        tx.active
            .start_header_only(
                Message {
                    opcode: Opcode::Send,
                    target: Target::Untagged {
                        qn: QN_SEND,
                        msn: 0,
                        rsvd_ulp: 0,
                    },
                    rdmap: RdmapHdr::None,
                    len: 0,
                },
                mul,
            )
            .map_err(|_| TxStop::Failed)?;
        tx.active.term = true;
        let f = &mut tx.fpdu;
        if let Some(m) = tx.marked.as_mut() {
            m.stage(f, &Source::None, link.params.crc)?;
        }
        f.queued = true;
        return Ok(Took::Work);
    }
    if let Some(rtr) = tx.rtr.take() {
        let mul = fpdu_mul(&link.params, tx.marked.is_some(), sock);
        let (message, orq) = rtr_message(rtr, &mut tx.msn);
        tx.active
            .start_header_only(message, mul)
            .map_err(|_| TxStop::Failed)?;
        if let Some(o) = orq {
            if tx.orq.push_within_capacity(o).is_err() {
                tx.active.finish();
                return Err(TxStop::Failed);
            }
        }
        return Ok(Took::Work);
    }
    if !tx.irq.is_empty() {
        let mul = fpdu_mul(&link.params, tx.marked.is_some(), sock);
        let (rr, src) = match tx.irq.remove(0).map_err(|_| TxStop::Failed)? {
            Inbound::Read { rr, src } => (rr, src),
            Inbound::Atomic { req, mr, off } => {
                // Executed in its turn, after the Reads before it are answered (RFC
                // 7306 section 7), and only while its region is valid (RFC 5040
                // section 8.1.1, item 6): one invalidated or deregistered since the
                // request came is not touched.
                let orig = if mr.is_valid() {
                    match mr.pages.atomic_word(off) {
                        // A word changing under a masked operation without end:
                        // nothing is done to it.
                        Ok(w) => req.execute(w).ok_or(TermError::RdmapCatastrophicStream),
                        // Aligned offset, misaligned memory: RFC 7306 section 8.2.
                        Err(e) if e == EINVAL => Err(TermError::RdmapCatastrophicStream),
                        Err(_) => Err(TermError::RdmapBaseBounds),
                    }
                } else {
                    Err(TermError::RdmapInvalidStag)
                };
                let orig = match orig {
                    Ok(v) => v,
                    Err(e) => {
                        tx.terminate(e, &[]);
                        return Ok(Took::Again);
                    }
                };
                let msn = next_msn(&mut tx.msn[2]);
                tx.active
                    .start_header_only(
                        Message {
                            opcode: Opcode::AtomicResponse,
                            target: Target::Untagged {
                                qn: QN_ATOMIC_RESPONSE,
                                msn,
                                rsvd_ulp: 0,
                            },
                            rdmap: RdmapHdr::AtomicResponse(AtomicResponse {
                                req_id: req.req_id,
                                orig,
                            }),
                            len: 0,
                        },
                        mul,
                    )
                    .map_err(|_| TxStop::Failed)?;
                return Ok(Took::Work);
            }
        };
        // A zero-length Read names no memory (RFC 5040 section 5.2.1). Otherwise it is
        // served from the registration checked on its arrival and from no other: one
        // invalidated or deregistered since (whose STag may name a newer registration by
        // now) is not read (RFC 5040 section 8.1.1, item 6), and the rights are checked
        // again.
        let piece = if rr.size == 0 {
            None
        } else {
            match queued_read_source(qp, src, &rr) {
                Ok(p) => Some(p),
                Err(e) => {
                    tx.terminate(e, &[]);
                    return Ok(Took::Again);
                }
            }
        };
        // Written into the idle element in place (see `Active`).
        let a = &mut tx.active;
        a.seg
            .start(
                Message {
                    opcode: Opcode::ReadResponse,
                    target: Target::Tagged {
                        stag: rr.sink_stag,
                        to: rr.sink_to,
                    },
                    rdmap: RdmapHdr::None,
                    len: rr.size,
                },
                mul,
            )
            .map_err(|_| TxStop::Failed)?;
        // Kernel memory is never spliced: TCP may retransmit a spliced page after the
        // region is invalidated and the consumer has reused the page for anything else.
        let splice = rr.size >= ZCOPY_MIN
            && piece
                .as_ref()
                .is_some_and(|(mr, _, _)| matches!(mr.pages, MrMem::User(_)));
        let parts = a.src.sges(splice, true).ok_or(TxStop::Failed)?;
        if let Some((p, slot)) = piece.zip(parts.slot.first_mut()) {
            *slot = Some(p);
            parts.n = 1;
        }
        a.done = None;
        a.term = false;
        a.then = None;
        a.live = true;
        return Ok(Took::Work);
    }
    // The next send queue element, if the user posted one.
    let off = qp.sq().offset(st.sq_get(), SQE_SIZE);
    let Some(flags) = qp.sq().mem.atomic_u16(off.saturating_add(WQE_FLAGS)) else {
        return Ok(Took::Stop(Ran::Idle));
    };
    if flags.load(Ordering::Acquire) & wqe::VALID == 0 {
        // libsiw rings no doorbell while the element before its new one is still valid: it
        // counts on us to look again. We cleared that element's flags before this load;
        // the fence orders the two, as the C siw's `smp_store_mb()` does, so that either
        // libsiw saw the clearing (and rings) or the load below sees its new element.
        fence(Ordering::SeqCst);
        if flags.load(Ordering::Acquire) & wqe::VALID == 0 {
            return Ok(Took::Stop(Ran::Idle));
        }
    }
    // After a burst others get a turn first: a process refilling its queue as fast as
    // we send could otherwise hold this worker and the QP's lock for good. A one-way
    // stream's burst counts across runs (see [`SQ_BURST`]).
    let Some(link) = st.link_mut() else {
        return Ok(Took::Stop(Ran::Idle));
    };
    let heard = link.rx.bytes();
    let tx = &mut link.tx;
    if tx.rx_mark != heard {
        tx.rx_mark = heard;
        tx.streak = 0;
    }
    if burst_done(tx, *burst) {
        tx.streak = 0;
        return Ok(Took::Stop(Ran::Yield));
    }
    *burst = burst.saturating_add(1);
    tx.streak = tx.streak.saturating_add(1);
    let sqe: Sqe = qp.sq().mem.read(off).ok_or(TxStop::Failed)?;
    let ord = usize::from(link.params.ord);
    // A fenced element waits for our Reads (and Atomics) to complete; a Read or an
    // Atomic waits for room in the ORQ (the peer's IRD, which RFC 7306 section 5.2
    // lets Atomics share with Reads).
    if sqe.flags & wqe::READ_FENCE != 0 && !tx.orq.is_empty() {
        return Ok(Took::Stop(Ran::Idle));
    }
    if matches!(
        sqe.opcode,
        op::READ | op::READ_LOCAL_INV | op::FETCH_AND_ADD | op::COMP_AND_SWAP
    ) && ord > 0
        && tx.orq.len() >= ord
    {
        return Ok(Took::Stop(Ran::Idle));
    }
    let mul = fpdu_mul(&link.params, tx.marked.is_some(), sock);
    let inline = if sqe.flags & wqe::INLINE != 0 {
        qp.sq()
            .mem
            .read::<[u8; MAX_INLINE]>(off.saturating_add(SQE_INLINE))
    } else {
        None
    };
    let imm = if sqe.opcode == op::WRITE_WITH_IMM {
        qp.sq().mem.read::<[u8; 4]>(off.saturating_add(SQE_IMM))
    } else {
        None
    };
    // The slot is the user's again once we hold a copy (the C siw releases at activation).
    flags.store(0, Ordering::Release);
    st.sq_taken();
    let signalled = sqe.flags & wqe::SIGNALLED != 0 || qp.sig_all();
    if qp.is_kernel() && matches!(sqe.opcode, op::REG_MR | op::INVAL_STAG) {
        // A local operation: done here, in order, nothing on the wire.
        let status = local_op(qp, &sqe);
        if signalled || status != OK {
            let c = sq_completion(st, sqe.id, sqe.opcode, status, 0);
            let _ = st.complete(true, &c);
        }
        if status != OK {
            return Err(TxStop::Failed);
        }
        return Ok(Took::Again);
    }
    match activate(qp, st, &sqe, inline, imm, mul, signalled) {
        Ok(()) => Ok(Took::Work),
        Err(status) => {
            // A bad element completes with an error, and the QP goes to ERROR.
            let c = sq_completion(st, sqe.id, sqe.opcode, status, 0);
            let _ = st.complete(true, &c);
            Err(TxStop::Failed)
        }
    }
}

/// Whether the engine yields before taking another send queue element: `SQ_BURST` taken in
/// this run (`burst`), or a one-way stream's `SQ_BURST` in a row (see [`SQ_BURST`]).
fn burst_done(tx: &TxState, burst: u32) -> bool {
    burst >= SQ_BURST || tx.streak >= SQ_BURST
}

/// The MULPDU of the next message: the payload an FPDU may carry, from the TCP segment
/// size (or, with GSO_EXP agreed or over SCTP, the largest FPDU we build).
fn fpdu_mul(params: &LinkParams, marked: bool, sock: &Socket) -> u16 {
    let limit = match crate::module_parameters::max_fpdu.value() {
        0 => MAX_FPDU,
        n => n.clamp(256, MAX_FPDU),
    };
    // With GSO_EXP agreed an FPDU may span TCP segments: as long as the limit allows.
    let mss = if params.gso || params.sctp.is_some() {
        limit
    } else {
        sock.mss().clamp(256, limit)
    };
    if let Some(max) = params.sctp {
        max
    } else if marked {
        mulpdu(mss.min(MARKED_FPDU), true)
    } else {
        mulpdu(mss, false)
    }
}

/// Whether FPDUs ready together are packed into TCP segments (`fpdu_pack`).
fn packing() -> bool {
    crate::module_parameters::fpdu_pack.value()
}

/// The wire length of the FPDU that follows the queued one at once, if one is ready: the
/// active message's next FPDU, its Immediate Data message, the peer's next Read or Atomic
/// to answer, or the user's next send queue element (in [`take_work`]'s order). For a send
/// queue element it is a guess (the slot is the user's until taken, and the element may have
/// to wait for a fence or the ORD): a wrong one only ends a TCP segment early. A Terminate
/// or an RTR message goes alone.
fn next_wire_len(
    qp: &QpCore,
    tx: &TxState,
    params: &LinkParams,
    sock: &Socket,
    sq_next: u32,
    burst: u32,
) -> Option<usize> {
    let a = &tx.active;
    if !tx.fpdu.last {
        return a.seg.next_wire_len();
    }
    if let Some(seg) = a.then.as_ref() {
        return seg.next_wire_len();
    }
    if a.term || tx.term.is_some() || tx.rtr.is_some() {
        return None;
    }
    let mul = || fpdu_mul(params, tx.marked.is_some(), sock);
    match tx.irq.first() {
        Some(Inbound::Read { rr, .. }) => {
            return first_wire_len(Opcode::ReadResponse, rr.size, mul())
        }
        Some(Inbound::Atomic { .. }) => return first_wire_len(Opcode::AtomicResponse, 0, mul()),
        None => {}
    }
    // Past a burst the engine yields before taking this element (`take_work`).
    if burst_done(tx, burst) {
        return None;
    }
    let sq = qp.sq();
    let off = sq.offset(sq_next, SQE_SIZE);
    let flags = sq
        .mem
        .atomic_u16(off.saturating_add(WQE_FLAGS))?
        .load(Ordering::Acquire);
    if flags & wqe::VALID == 0 {
        return None;
    }
    let [nsge, opcode] = sq.mem.read::<[u8; 2]>(off.saturating_add(SQE_NUM_SGE))?;
    let (opcode, payload) = match opcode {
        op::WRITE | op::WRITE_WITH_IMM => (Opcode::RdmaWrite, true),
        op::SEND | op::SEND_REMOTE_INV => (Opcode::Send, true),
        op::READ | op::READ_LOCAL_INV => (Opcode::ReadRequest, false),
        op::FETCH_AND_ADD | op::COMP_AND_SWAP => (Opcode::AtomicRequest, false),
        // A local operation sends nothing; what comes after it is not looked for.
        _ => return None,
    };
    let sge_len = |i: usize| {
        sq.mem
            .read::<u32>(off.saturating_add(sqe_sge_len(i)))
            .unwrap_or(0)
    };
    let len = if !payload {
        0
    } else if flags & wqe::INLINE != 0 {
        sge_len(0)
    } else {
        (0..usize::from(nsge).min(MAX_SGE)).fold(0u32, |n, i| n.saturating_add(sge_len(i)))
    };
    first_wire_len(opcode, len, mul())
}

fn push<'a>(iov: &mut IoVecs<'a>, v: IoVec<'a>) -> Result<(), TxStop> {
    iov.push(v).map_err(|_| TxStop::Failed)
}

/// `len` zero octets (at most an FPDU's payload), in pieces of [`ZEROS`].
fn zeros(len: u32, f: &mut dyn FnMut(IoVec<'static>) -> Result<(), TxStop>) -> Result<(), TxStop> {
    let mut left = len as usize;
    while left > 0 {
        let n = left.min(ZEROS.len());
        f(IoVec::new(ZEROS.get(..n).ok_or(TxStop::Failed)?))?;
        left = left.saturating_sub(n);
    }
    Ok(())
}

/// What a voided FPDU's payload is sent from.
static ZEROS: [u8; 4096] = [0; 4096];

/// The source of a queued inbound Read as it executes: `held`, the registration its STag
/// named on arrival, if that registration still has the STag, is still valid and still
/// lets the peer read the range; else the Terminate error (RFC 5040 section 7.4.1).
fn queued_read_source(
    qp: &QpCore,
    held: Option<Arc<MrCore>>,
    rr: &ReadRequest,
) -> Result<(Arc<MrCore>, usize, u32), TermError> {
    let mr = held
        .filter(|mr| mr.stag == rr.src_stag && mr.is_valid())
        .ok_or(TermError::RdmapInvalidStag)?;
    let off = mr
        .check(qp.pd(), rr.src_to, rr.size, REMOTE_READ)
        .map_err(AccessError::of_read)?;
    Ok((mr, off, rr.size))
}

/// Calls `f` on the pieces of `len` payload bytes at message offset `off`.
fn payload<'a>(
    src: &'a Source,
    off: u32,
    len: u32,
    f: &mut dyn FnMut(IoVec<'a>) -> Result<(), TxStop>,
) -> Result<(), TxStop> {
    if len == 0 {
        return Ok(());
    }
    match src {
        Source::None => Err(TxStop::Failed),
        Source::Inline { data, len: dl } => {
            let s = off as usize;
            let e = s.saturating_add(len as usize);
            if e > *dl {
                return Err(TxStop::Failed);
            }
            f(IoVec::new(data.get(s..e).ok_or(TxStop::Failed)?))
        }
        Source::Sges { parts, splice, .. } => {
            let mut skip = off;
            let mut left = len;
            for (mr, base, plen) in parts.iter() {
                if left == 0 {
                    break;
                }
                if skip >= *plen {
                    skip = skip.wrapping_sub(*plen);
                    continue;
                }
                let n = plen.wrapping_sub(skip).min(left);
                let mut err = false;
                mr.pages
                    .iovecs(
                        base.saturating_add(skip as usize),
                        n as usize,
                        *splice,
                        |v| {
                            f(v).map_err(|_| {
                                err = true;
                                EINVAL
                            })
                        },
                    )
                    .map_err(|_| TxStop::Failed)?;
                if err {
                    return Err(TxStop::Failed);
                }
                left = left.wrapping_sub(n);
                skip = 0;
            }
            if left == 0 {
                Ok(())
            } else {
                Err(TxStop::Failed)
            }
        }
    }
}

/// Runs a kernel consumer's `REG_MR` or Local Invalidate; returns the completion status.
fn local_op(qp: &QpCore, sqe: &Sqe) -> u16 {
    let r = if sqe.opcode == op::REG_MR {
        let w = RegMrWqe::decode(sqe);
        mr::register(
            qp.tables(),
            qp.pd(),
            w.mr,
            w.key,
            AccessFlags::from_raw(w.access),
            w.iova,
            w.length,
        )
    } else {
        mr::invalidate(qp.tables(), qp.pd(), sqe.rkey)
    };
    match r {
        Ok(()) => OK,
        Err(FastRegError::Stag) => wc::LOC_PROT_ERR,
        Err(FastRegError::NotAllowed) => wc::LOC_QP_OP_ERR,
        Err(FastRegError::Mapping) => wc::LOC_LEN_ERR,
    }
}

/// Validates a send queue element and makes it the active one. On error returns the
/// completion status to report.
fn activate(
    qp: &QpCore,
    st: &mut QpState,
    sqe: &Sqe,
    inline: Option<[u8; MAX_INLINE]>,
    imm: Option<[u8; 4]>,
    mul: u16,
    signalled: bool,
) -> Result<(), u16> {
    let nsge = usize::from(sqe.num_sge);
    if nsge > qp.sq_max_sges() as usize || nsge > sqe.sge.len() {
        return Err(wc::LOC_QP_OP_ERR);
    }
    // Only these operations may come from a user's send queue (O1: nothing kernel-only).
    let (opcode, target) = match sqe.opcode {
        op::WRITE => (
            Opcode::RdmaWrite,
            Target::Tagged {
                stag: sqe.rkey,
                to: sqe.raddr,
            },
        ),
        op::SEND | op::SEND_REMOTE_INV | op::READ => {
            (Opcode::Send, Target::Tagged { stag: 0, to: 0 })
        }
        // A kernel consumer's only (`IB_WR_RDMA_READ_WITH_INV`).
        op::READ_LOCAL_INV if qp.is_kernel() => (Opcode::Send, Target::Tagged { stag: 0, to: 0 }),
        // RFC 7306, a kernel consumer's only (libsiw posts none of them).
        op::WRITE_WITH_IMM if qp.is_kernel() => (
            Opcode::RdmaWrite,
            Target::Tagged {
                stag: sqe.rkey,
                to: sqe.raddr,
            },
        ),
        op::FETCH_AND_ADD | op::COMP_AND_SWAP if qp.is_kernel() => {
            (Opcode::AtomicRequest, Target::Tagged { stag: 0, to: 0 })
        }
        _ => return Err(wc::LOC_QP_OP_ERR),
    };
    let link = st.link_mut().ok_or(wc::LOC_QP_OP_ERR)?;
    let ord = link.params.ord;
    let atomic = matches!(sqe.opcode, op::FETCH_AND_ADD | op::COMP_AND_SWAP);
    // Never an RFC 7306 message to a peer that did not agree to them (posting checked
    // this already; the connection is what counts).
    if (atomic || sqe.opcode == op::WRITE_WITH_IMM) && !link.params.rfc7306 {
        return Err(wc::LOC_QP_OP_ERR);
    }
    let tx = &mut link.tx;
    let solicited = sqe.flags & wqe::SOLICITED != 0;
    if atomic {
        if inline.is_some() || nsge != 1 || ord == 0 {
            return Err(wc::LOC_QP_OP_ERR);
        }
        let sink = sqe.sge[0];
        if sink.length < ATOMIC_LEN {
            return Err(wc::LOC_LEN_ERR);
        }
        let ops = AtomicWqe::decode(sqe);
        let msn = next_msn(&mut tx.msn[1]);
        let req = AtomicRequest {
            aop: if sqe.opcode == op::COMP_AND_SWAP {
                AOP_CMP_SWAP
            } else {
                AOP_FETCH_ADD
            },
            // The MSN names the request uniquely among those outstanding.
            req_id: msn,
            stag: sqe.rkey,
            to: sqe.raddr,
            add_swap: ops.add_swap,
            add_swap_mask: ops.add_swap_mask,
            compare: ops.compare,
            compare_mask: ops.compare_mask,
        };
        let orq = OrqEntry {
            id: sqe.id,
            signalled,
            sink_stag: sink.lkey,
            sink_mr: None,
            sink_to: sink.laddr,
            len: ATOMIC_LEN,
            received: 0,
            rtr: false,
            invalidate: false,
            atomic: Some((sqe.opcode, msn)),
        };
        return start_request(qp, tx, RdmapHdr::AtomicRequest(req), msn, orq, mul);
    }
    if matches!(sqe.opcode, op::READ | op::READ_LOCAL_INV) {
        if inline.is_some() || nsge != 1 || sqe.flags & wqe::READ_FENCE != 0 || ord == 0 {
            return Err(wc::LOC_QP_OP_ERR);
        }
        let sink = sqe.sge[0];
        let rr = ReadRequest {
            sink_stag: sink.lkey,
            sink_to: sink.laddr,
            size: sink.length,
            src_stag: sqe.rkey,
            src_to: sqe.raddr,
        };
        let msn = next_msn(&mut tx.msn[1]);
        let orq = OrqEntry {
            id: sqe.id,
            signalled,
            sink_stag: sink.lkey,
            sink_mr: None,
            sink_to: sink.laddr,
            len: sink.length,
            received: 0,
            rtr: false,
            invalidate: sqe.opcode == op::READ_LOCAL_INV,
            atomic: None,
        };
        return start_request(qp, tx, RdmapHdr::ReadRequest(rr), msn, orq, mul);
    }
    // Written into the idle element in place; on error it is left idle, its regions let go.
    let mut fill = || -> Result<(), u16> {
        let a = &mut tx.active;
        let len = if let Some(data) = inline {
            let len = sqe.sge[0].length;
            if len as usize > MAX_INLINE
                || !matches!(sqe.opcode, op::SEND | op::WRITE | op::WRITE_WITH_IMM)
            {
                return Err(wc::LOC_QP_OP_ERR);
            }
            a.src = Source::Inline {
                data,
                len: len as usize,
            };
            len
        } else {
            let parts = a.src.sges(false, false).ok_or(wc::LOC_QP_OP_ERR)?;
            // The first `nsge` slots; on error they are cleared again (`Pieces::clear`).
            parts.n = nsge;
            let mut total = 0u32;
            for (p, s) in parts.slot.iter_mut().zip(sqe.sge.iter()).take(nsge) {
                if s.length == 0 {
                    *p = None;
                    continue;
                }
                let mr = qp.tables().mr(s.lkey).ok_or(wc::LOC_PROT_ERR)?;
                let off = mr
                    .check(qp.pd(), s.laddr, s.length, LOCAL_READ)
                    .map_err(|_| wc::LOC_PROT_ERR)?;
                total = total.checked_add(s.length).ok_or(wc::LOC_LEN_ERR)?;
                *p = Some((mr, off, s.length));
            }
            total
        };
        let (opcode, target) = match sqe.opcode {
            op::SEND | op::SEND_REMOTE_INV => {
                let inv = sqe.opcode == op::SEND_REMOTE_INV;
                let opc = match (inv, solicited) {
                    (false, false) => Opcode::Send,
                    (false, true) => Opcode::SendSe,
                    (true, false) => Opcode::SendInvalidate,
                    (true, true) => Opcode::SendSeInvalidate,
                };
                let msn = next_msn(&mut tx.msn[0]);
                let rsvd_ulp = if inv { sqe.rkey } else { 0 };
                (
                    opc,
                    Target::Untagged {
                        qn: QN_SEND,
                        msn,
                        rsvd_ulp,
                    },
                )
            }
            _ => (opcode, target),
        };
        tx.active
            .seg
            .start(
                Message {
                    opcode,
                    target,
                    rdmap: RdmapHdr::None,
                    len,
                },
                mul,
            )
            .map_err(|_| wc::LOC_LEN_ERR)?;
        // RDMA Write with Immediate Data: the Write, then an Immediate Data message (RFC
        // 7306 section 1: the two make the operation), which consumes a receive at the
        // peer. The 32-bit immediate data of the verbs goes in the last four of its eight
        // octets.
        // Assigned in each arm: a `None` taken from a `match` was copied whole.
        match (sqe.opcode, imm) {
            (op::WRITE_WITH_IMM, Some(i)) => {
                let [i0, i1, i2, i3] = i;
                let data = [0, 0, 0, 0, i0, i1, i2, i3];
                let msn = next_msn(&mut tx.msn[0]);
                tx.active.then = Some(
                    Segmenter::new(
                        Message {
                            opcode: if solicited {
                                Opcode::ImmediateDataSe
                            } else {
                                Opcode::ImmediateData
                            },
                            target: Target::Untagged {
                                qn: QN_SEND,
                                msn,
                                rsvd_ulp: 0,
                            },
                            rdmap: RdmapHdr::Immediate(data),
                            len: 0,
                        },
                        mul,
                    )
                    .map_err(|_| wc::LOC_QP_OP_ERR)?,
                );
            }
            (op::WRITE_WITH_IMM, None) => return Err(wc::LOC_QP_OP_ERR),
            _ => tx.active.then = None,
        }
        // The sender's completion of a Write with Immediate Data is a Write's
        // (`IB_WC_RDMA_WRITE`); no CQE carries the internal opcode.
        let opcode = if sqe.opcode == op::WRITE_WITH_IMM {
            op::WRITE
        } else {
            sqe.opcode
        };
        let a = &mut tx.active;
        a.done = signalled.then_some((sqe.id, opcode, len));
        a.term = false;
        a.live = true;
        Ok(())
    };
    let r = fill();
    if r.is_err() {
        tx.active.finish();
    }
    r
}

/// Starts a request of ours that the peer answers in order on QN 1, within the ORD: an RDMA
/// Read Request or an RFC 7306 Atomic Request (`hdr`, with MSN `msn`), and the ORQ entry
/// its response must match. The sink must be writable memory of this PD (checked again when
/// the response comes).
fn start_request(
    qp: &QpCore,
    tx: &mut TxState,
    hdr: RdmapHdr,
    msn: u32,
    orq: OrqEntry,
    mul: u16,
) -> Result<(), u16> {
    let opcode = match hdr {
        RdmapHdr::ReadRequest(_) => Opcode::ReadRequest,
        RdmapHdr::AtomicRequest(_) => Opcode::AtomicRequest,
        _ => return Err(wc::LOC_QP_OP_ERR),
    };
    let mr = qp.tables().mr(orq.sink_stag).ok_or(wc::LOC_PROT_ERR)?;
    mr.check(qp.pd(), orq.sink_to, orq.len, LOCAL_WRITE)
        .map_err(|_| wc::LOC_PROT_ERR)?;
    let mut orq = orq;
    orq.sink_mr = Some(mr);
    tx.active
        .start_header_only(
            Message {
                opcode,
                target: Target::Untagged {
                    qn: QN_READ_REQUEST,
                    msn,
                    rsvd_ulp: 0,
                },
                rdmap: hdr,
                len: 0,
            },
            mul,
        )
        .map_err(|_| wc::LOC_QP_OP_ERR)?;
    if tx.orq.push_within_capacity(orq).is_err() {
        tx.active.finish();
        return Err(wc::LOC_QP_OP_ERR);
    }
    Ok(())
}

/// The completion of a finished Read of ours.
pub(crate) fn read_done(st: &QpState, o: &OrqEntry, status: u16) -> Option<Completion> {
    (!o.rtr && (o.signalled || status != OK))
        .then(|| sq_completion(st, o.id, o.opcode(), status, o.len))
}

/// The STag of the zero-length RDMA Write and Read RTR messages: the C siw's (1), which a
/// zero-length operation never validates.
const RTR_STAG: u32 = 1;

/// The RTR message of RFC 6581 peer-to-peer mode, and for a Read RTR the ORQ entry its
/// (zero-length) response matches.
fn rtr_message(rtr: Rtr, msn: &mut [u32; 3]) -> (Message, Option<OrqEntry>) {
    match rtr {
        Rtr::Write => (
            Message {
                opcode: Opcode::RdmaWrite,
                target: Target::Tagged {
                    stag: RTR_STAG,
                    to: 0,
                },
                rdmap: RdmapHdr::None,
                len: 0,
            },
            None,
        ),
        Rtr::Read => {
            let rr = ReadRequest {
                sink_stag: 0,
                sink_to: 0,
                size: 0,
                src_stag: RTR_STAG,
                src_to: 0,
            };
            let m = Message {
                opcode: Opcode::ReadRequest,
                target: Target::Untagged {
                    qn: QN_READ_REQUEST,
                    msn: next_msn(&mut msn[1]),
                    rsvd_ulp: 0,
                },
                rdmap: RdmapHdr::ReadRequest(rr),
                len: 0,
            };
            let o = OrqEntry {
                id: 0,
                signalled: false,
                sink_stag: 0,
                sink_mr: None,
                sink_to: 0,
                len: 0,
                received: 0,
                rtr: true,
                invalidate: false,
                atomic: None,
            };
            (m, Some(o))
        }
        Rtr::Send => (
            Message {
                opcode: Opcode::Send,
                target: Target::Untagged {
                    qn: QN_SEND,
                    msn: next_msn(&mut msn[0]),
                    rsvd_ulp: 0,
                },
                rdmap: RdmapHdr::None,
                len: 0,
            },
            None,
        ),
    }
}
