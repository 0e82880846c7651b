// SPDX-License-Identifier: GPL-2.0

//! The receive engine: bytes from TCP through the protocol core's streaming [`Receiver`]
//! into registered memory, with one copy (from the socket buffer to the target pages).
//! The socket's bytes are [`IoVec`]s, never `&[u8]`s: a page an skb references may change
//! meanwhile (see `IoVec`), so they are read only by copying them and by the CRC.
//!
//! Every inbound placement is checked first: the STag must name a region of the QP's PD
//! with the access right the operation needs, and the range must lie inside the region. A
//! failed check is a Terminate with the RFC's error code. (QP access flags are not
//! enforced, as by the C siw; see `qp.rs`.)
//!
//! Everything here runs inside the socket read actor, in atomic context: spinlocks only.
//! Over TCP that is mostly the socket's data-ready callback itself (softirq), as in the C
//! siw; else the connection's work. So every lock taken here is softirq-safe.

use crate::{
    cq::Completion,
    glue::{
        iov::{IoVec, KernelCrc},
        rdma::{mmap::SharedMem, verbs::AccessFlags},
        siw_abi::{op, wc, wqe, MAX_SGE, RQE_SIZE},
    },
    mr::{self, AccessError, MrCore, LOCAL_WRITE, REMOTE_ATOMIC, REMOTE_READ, REMOTE_WRITE},
    proto::{
        ddp::DdpHdr,
        error::TermError,
        rdmap::{HeaderOptions, Opcode, RdmapHdr, ATOMIC_LEN},
        rx::{Event, Receiver, RxConfig},
    },
    qp::{LinkParams, QpCore, QpState},
    queue::{Rqe, Sge, Sges, WQE_FLAGS},
    stats::Counter,
    tx::{read_done, Inbound},
};
use core::{
    mem::{offset_of, size_of},
    sync::atomic::Ordering,
};
use kernel::{prelude::*, sync::Arc};

/// The receive buffer a Send is placed into.
///
/// It lives in [`RxState`] for good and each receive queue element is written into it
/// field by field, only its SGEs in use read from the queue (as `tx::Active`): a new one
/// returned and moved in (into an `Option`) was copied with `memcpy` calls, once to take
/// it and once to give it back, per message.
struct RxSend {
    /// It holds a receive taken for the message coming in.
    live: bool,
    id: u64,
    sges: Sges,
    nsge: usize,
    /// The region the last piece was placed into, for the pieces after it (a message of
    /// many segments, each arriving in pieces, places into one SGE many times; see
    /// [`Tables::mr_held`](crate::table::Tables::mr_held)).
    region: Option<Arc<MrCore>>,
    /// The first error found while placing (the receive completes with it).
    status: Option<u16>,
}

/// Receive state of a connection.
pub(crate) struct RxState {
    recv: Receiver<KernelCrc>,
    send: RxSend,
    /// The region the current tagged FPDU goes to, and the offset of its first byte.
    tagged: Option<(Arc<MrCore>, usize)>,
    /// The region of the RDMA Write message coming in, for its next segment (the C siw
    /// looks the STag up once a message too); let go with its last segment.
    write_region: Option<Arc<MrCore>>,
    /// Complete messages received (saturating); a peer-to-peer responder waits for one,
    /// the RTR.
    pub(crate) messages: u32,
    /// Bytes taken from the socket (wrapping): the Read watchdog's sign of life.
    bytes: u64,
    /// Payload of the RDMA Write message coming in (its segments so far).
    write_len: u32,
    /// The length of the RDMA Write that was the last message received, if it was one: an
    /// RFC 7306 Immediate Data message right behind it completes it (`byte_len`).
    last_write: Option<u32>,
    /// Receiving stopped for good (a Terminate is due or came in): nothing after the
    /// error is placed or completed.
    stopped: bool,
    /// Why, when the socket's callback stopped it: the connection's work, which can send
    /// and close, acts on it.
    deferred: Option<RxStop>,
}

/// Why receiving stopped for good.
pub(crate) enum RxStop {
    /// A protocol or access error: send this Terminate, then close.
    Term(TermError),
    /// The peer sent a Terminate.
    PeerTerminated,
}

impl RxSend {
    const IDLE: Self = Self {
        live: false,
        id: 0,
        sges: [Sge {
            laddr: 0,
            length: 0,
            lkey: 0,
        }; MAX_SGE],
        nsge: 0,
        region: None,
        status: None,
    };

    /// The receive taken, if one is.
    fn live_mut(&mut self) -> Option<&mut Self> {
        if self.live {
            Some(self)
        } else {
            None
        }
    }

    /// Done with the receive taken, if one is: its id and status (the first error found
    /// while placing); its region let go.
    fn finish(&mut self) -> Option<(u64, Option<u16>)> {
        if !self.live {
            return None;
        }
        self.live = false;
        self.region = None;
        Some((self.id, self.status))
    }
}

impl RxState {
    /// A receiver at the start of the Full Operation Phase.
    pub(crate) fn new(p: LinkParams) -> Result<Self> {
        Ok(Self {
            recv: Receiver::new(
                RxConfig {
                    crc: p.crc,
                    markers: p.markers_rx,
                    header: HeaderOptions { rfc7306: p.rfc7306 },
                    sctp: p.sctp.is_some(),
                },
                KernelCrc::new(),
            ),
            send: RxSend::IDLE,
            tagged: None,
            write_region: None,
            messages: 0,
            bytes: 0,
            write_len: 0,
            last_write: None,
            stopped: false,
            deferred: None,
        })
    }

    /// Bytes taken from the socket so far (wrapping).
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The receive being placed, if any, as (id, status so far): the connection is going
    /// down and it must still complete.
    pub(crate) fn take_recv(&mut self) -> Option<(u64, Option<u16>)> {
        self.send.finish()
    }

    /// Between messages: no FPDU partly read, no receive taken, no RDMA Write partly
    /// placed, and receiving not stopped.
    pub(crate) fn between_messages(&self) -> bool {
        !self.send.live
            && self.write_region.is_none()
            && !self.stopped
            && self.deferred.is_none()
            && self.recv.at_fpdu_boundary()
    }

    /// Receiving stopped for good.
    pub(crate) fn stopped(&self) -> bool {
        self.stopped
    }

    /// Leaves why receiving stopped to the connection's work (the socket's callback found
    /// it, and can neither send the Terminate nor close).
    pub(crate) fn defer(&mut self, stop: RxStop) {
        self.deferred.get_or_insert(stop);
    }

    /// Why the socket's callback stopped receiving, if it did and nobody acted on it yet.
    pub(crate) fn take_deferred(&mut self) -> Option<RxStop> {
        self.deferred.take()
    }

    /// The raw header of the FPDU being received (for a Terminate).
    pub(crate) fn raw_header(&self) -> &[u8] {
        self.recv.raw_header()
    }
}

// A peer learns no more than "invalid" of an STag that is not its stream's: one of another
// PD gets the same Terminate as one that does not exist, so STags cannot be probed (the C
// siw reports "not associated" for the former).
fn tagged_err(e: AccessError) -> TermError {
    match e {
        AccessError::InvalidStag | AccessError::Pd => TermError::DdpTaggedInvalidStag,
        AccessError::Rights => TermError::RdmapAccessRights,
        AccessError::Bounds => TermError::DdpTaggedBaseBounds,
    }
}

/// The region and offset a tagged segment of `len` bytes at `to` of `stag` is placed into,
/// if the QP may write there with the rights `need`; else the Terminate that says why.
/// `held` is a region found for the same message before (see `Tables::mr_held`).
fn tagged_sink(
    qp: &QpCore,
    held: Option<Arc<MrCore>>,
    stag: u32,
    to: u64,
    len: u32,
    need: AccessFlags,
) -> Result<(Arc<MrCore>, usize), RxStop> {
    let mr = qp
        .tables()
        .mr_held(held, stag)
        .ok_or(RxStop::Term(TermError::DdpTaggedInvalidStag))?;
    let off = mr
        .check(qp.pd(), to, len, need)
        .map_err(|e| RxStop::Term(tagged_err(e)))?;
    Ok((mr, off))
}

/// Feeds `buf` (socket bytes) through the receiver; returns how many bytes were consumed,
/// and why receiving must stop, if it must.
///
/// Once it has stopped, nothing more is consumed, by this pass or a later one.
pub(crate) fn feed(qp: &QpCore, st: &mut QpState, buf: IoVec<'_>) -> (usize, Option<RxStop>) {
    let (n, stop) = feed_until_stop(qp, st, buf);
    if let Some(link) = st.link_mut() {
        link.rx.bytes = link.rx.bytes.wrapping_add(n as u64);
        if stop.is_some() {
            link.rx.stopped = true;
        }
    }
    (n, stop)
}

/// DDP over SCTP: feeds one whole message (DDP-SSN first) holding a DDP segment; the
/// session layer found it the next one in order. Returns why receiving must stop, if it
/// must.
pub(crate) fn feed_message(qp: &QpCore, st: &mut QpState, msg: &[u8]) -> Option<RxStop> {
    let link = st.link_mut()?;
    if link.rx.stopped {
        return None;
    }
    let len = msg.len().saturating_sub(crate::proto::sctp::SSN_LEN);
    if let Err(e) = link.rx.recv.start_segment(len) {
        link.rx.stopped = true;
        return Some(RxStop::Term(e));
    }
    let (n, stop) = feed(qp, st, IoVec::new(msg));
    if stop.is_none() && n != msg.len() {
        // A whole message makes a whole segment: anything else is our own bug.
        if let Some(link) = st.link_mut() {
            link.rx.stopped = true;
        }
        return Some(RxStop::Term(TermError::LlpLocalCatastrophic));
    }
    stop
}

fn feed_until_stop(qp: &QpCore, st: &mut QpState, buf: IoVec<'_>) -> (usize, Option<RxStop>) {
    let mut pos = 0usize;
    loop {
        let Some(link) = st.link_mut() else {
            return (pos, None);
        };
        if link.rx.stopped {
            return (pos, None);
        }
        // Over SCTP a segment ends with its last payload octet: its end comes without input.
        if pos >= buf.len() && !link.rx.recv.end_due() {
            break;
        }
        let rest = buf.skip(pos);
        let step = match link.rx.recv.feed_from(rest) {
            Ok(s) => s,
            Err(e) => {
                if e == TermError::LlpCrc {
                    qp.tables().count(Counter::CrcErrors);
                }
                return (pos, Some(RxStop::Term(e)));
            }
        };
        pos = pos.saturating_add(step.consumed);
        let r = match step.event {
            None => Ok(()),
            Some(Event::Header { first }) => {
                qp.stats().add(Counter::RxFpdus, 1);
                on_header(qp, st, first)
            }
            Some(Event::Payload(p)) => {
                qp.stats().add(Counter::RxBytes, p.len() as u64);
                // Where this slice goes: the FPDU's offset plus what came before in it.
                let before = st
                    .link_mut()
                    .map_or(0, |l| l.rx.recv.payload_received().saturating_sub(p.len()));
                on_payload(qp, st, p, before)
            }
            Some(Event::End) => on_end(qp, st),
            Some(Event::Fpdu { first, payload }) => {
                // A whole FPDU, its CRC checked: the three steps at once.
                qp.stats().add(Counter::RxFpdus, 1);
                qp.stats().add(Counter::RxBytes, payload.len() as u64);
                on_header(qp, st, first)
                    .and_then(|()| {
                        if payload.is_empty() {
                            Ok(())
                        } else {
                            on_payload(qp, st, payload, 0)
                        }
                    })
                    .and_then(|()| on_end(qp, st))
            }
        };
        if let Err(e) = r {
            return (pos, Some(e));
        }
    }
    (pos, None)
}

fn on_header(qp: &QpCore, st: &mut QpState, first: bool) -> Result<(), RxStop> {
    let link = st.link_mut().ok_or(RxStop::PeerTerminated)?;
    link.rx.tagged = None;
    // The fields needed, not a copy of the whole 96-octet header (a `memcpy` call).
    let h = link
        .rx
        .recv
        .current_header()
        .ok_or(RxStop::PeerTerminated)?;
    let (opcode, ddp, last) = (h.opcode, h.ddp, h.last);
    let len = u32::try_from(h.payload_len()).unwrap_or(u32::MAX);
    match (opcode, ddp) {
        (
            Opcode::Send
            | Opcode::SendSe
            | Opcode::SendInvalidate
            | Opcode::SendSeInvalidate
            | Opcode::ImmediateData
            | Opcode::ImmediateDataSe,
            _,
        ) => {
            // An Immediate Data message consumes a receive too (RFC 7306 section 6.3),
            // and places nothing in it.
            if first && !take_rqe(qp, st) {
                return Err(RxStop::Term(TermError::DdpUntaggedNoBuffer));
            }
            Ok(())
        }
        (Opcode::RdmaWrite, DdpHdr::Tagged(t)) => {
            link.rx.write_len = if first {
                len
            } else {
                link.rx.write_len.saturating_add(len)
            };
            // The region of the message's segment before (a new message looks up).
            let held = link.rx.write_region.take().filter(|_| !first);
            if len == 0 {
                // Nothing to place, so nothing to validate (the C siw's rule; a
                // peer-to-peer RTR Write names STag 1).
                if !last {
                    link.rx.write_region = held;
                }
                return Ok(());
            }
            let (mr, off) = tagged_sink(qp, held, t.stag, t.to, len, REMOTE_WRITE)?;
            if !last {
                link.rx.write_region = Some(mr.clone());
            }
            link.rx.tagged = Some((mr, off));
            Ok(())
        }
        (Opcode::ReadResponse, DdpHdr::Tagged(t)) => {
            // It must continue our oldest outstanding Read where the last segment ended,
            // inside its sink, and the last segment must end the sink exactly: a short
            // response must not complete the Read with stale data (the C siw's
            // `siw_rresp_check()`).
            let o = link
                .tx
                .orq
                .first_mut()
                .filter(|o| o.atomic.is_none())
                .ok_or(RxStop::Term(TermError::LlpInvalidReqResp))?;
            let at = o.sink_to.checked_add(u64::from(o.received));
            let end = o
                .received
                .checked_add(len)
                .filter(|&e| e <= o.len && (!last || e == o.len));
            match end {
                Some(e) if t.stag == o.sink_stag && at == Some(t.to) => o.received = e,
                _ => return Err(RxStop::Term(TermError::DdpTaggedBaseBounds)),
            }
            if len == 0 {
                // The response to a zero-length Read: nothing to place.
                return Ok(());
            }
            // The sink found when the Read was posted (`OrqEntry::sink_mr`).
            let held = o.sink_mr.clone();
            link.rx.tagged = Some(tagged_sink(qp, held, t.stag, t.to, len, LOCAL_WRITE)?);
            Ok(())
        }
        // Header-only messages: handled whole at their end.
        (
            Opcode::ReadRequest
            | Opcode::Terminate
            | Opcode::AtomicRequest
            | Opcode::AtomicResponse,
            _,
        ) => Ok(()),
        _ => Err(RxStop::Term(TermError::RdmapUnexpectedOpcode)),
    }
}

/// Places `p`, the payload octets of the current FPDU from `before` on.
fn on_payload(qp: &QpCore, st: &mut QpState, p: IoVec<'_>, before: usize) -> Result<(), RxStop> {
    let link = st.link_mut().ok_or(RxStop::PeerTerminated)?;
    if let Some((mr, off)) = &link.rx.tagged {
        // Invalidated or deregistered while this FPDU was coming in: not another byte.
        if !mr.is_valid() {
            return Err(RxStop::Term(TermError::DdpTaggedInvalidStag));
        }
        return mr
            .pages
            .write(off.saturating_add(before), p)
            .map_err(|_| RxStop::Term(TermError::DdpTaggedBaseBounds));
    }
    let h = link
        .rx
        .recv
        .current_header()
        .ok_or(RxStop::PeerTerminated)?;
    match h.opcode {
        Opcode::Send | Opcode::SendSe | Opcode::SendInvalidate | Opcode::SendSeInvalidate => {}
        _ => return Ok(()),
    }
    let mo = u32::try_from(h.offset()).unwrap_or(u32::MAX);
    let Some(s) = link.rx.send.live_mut() else {
        return Err(RxStop::Term(TermError::DdpUntaggedNoBuffer));
    };
    let at = mo.saturating_add(u32::try_from(before).unwrap_or(u32::MAX));
    place_send(qp, s, at, p)
}

/// Places `p` at message offset `at` of the receive buffer `s`.
fn place_send(qp: &QpCore, s: &mut RxSend, at: u32, p: IoVec<'_>) -> Result<(), RxStop> {
    let mut skip = at;
    let mut data = p;
    for sge in s.sges.iter().take(s.nsge) {
        if data.is_empty() {
            break;
        }
        if skip >= sge.length {
            skip -= sge.length;
            continue;
        }
        let n = ((sge.length - skip) as usize).min(data.len());
        let (now, rest) = data.split_at(n);
        // The region of the piece before while it is this SGE's (`Tables::mr_held`).
        s.region = qp.tables().mr_held(s.region.take(), sge.lkey);
        let placed = s
            .region
            .as_deref()
            .ok_or(AccessError::InvalidStag)
            .and_then(|mr| {
                let addr = sge.laddr.saturating_add(u64::from(skip));
                let off = mr.check(qp.pd(), addr, n as u32, LOCAL_WRITE)?;
                mr.pages.write(off, now).map_err(|_| AccessError::Bounds)
            });
        if placed.is_err() {
            s.status = Some(wc::LOC_PROT_ERR);
            return Err(RxStop::Term(TermError::DdpCatastrophic));
        }
        data = rest;
        skip = 0;
    }
    if !data.is_empty() {
        s.status = Some(wc::LOC_LEN_ERR);
        return Err(RxStop::Term(TermError::DdpUntaggedTooLong));
    }
    Ok(())
}

fn on_end(qp: &QpCore, st: &mut QpState) -> Result<(), RxStop> {
    let link = st.link_mut().ok_or(RxStop::PeerTerminated)?;
    link.rx.tagged = None;
    let h = link
        .rx
        .recv
        .current_header()
        .ok_or(RxStop::PeerTerminated)?;
    if !h.last {
        return Ok(());
    }
    link.rx.messages = link.rx.messages.saturating_add(1);
    if h.opcode == Opcode::RdmaWrite {
        link.rx.last_write = Some(link.rx.write_len);
        return Ok(());
    }
    // The other messages need their header beside the QP's state: what they use of it is
    // copied, not the whole header (a `memcpy` call per message), and the RDMAP header
    // only where there is one.
    let opcode = h.opcode;
    let ddp = h.ddp;
    // A Send's end: its length so far.
    let end = u32::try_from(h.offset())
        .unwrap_or(u32::MAX)
        .saturating_add(u32::try_from(h.payload_len()).unwrap_or(u32::MAX));
    let rdmap = if opcode.rdmap_len() == 0 {
        RdmapHdr::None
    } else {
        h.rdmap
    };
    let last_write = link.rx.last_write.take();
    match opcode {
        Opcode::RdmaWrite => Ok(()),
        Opcode::ImmediateData | Opcode::ImmediateDataSe => {
            let RdmapHdr::Immediate(data) = rdmap else {
                return Err(RxStop::Term(TermError::RdmapUnexpectedOpcode));
            };
            let (id, status) = link
                .rx
                .send
                .finish()
                .ok_or(RxStop::Term(TermError::DdpUntaggedNoBuffer))?;
            // The verbs' 32 bits are the last four of the eight octets.
            let [_, _, _, _, i0, i1, i2, i3] = data;
            let imm = [i0, i1, i2, i3];
            // RDMA Write with Immediate Data: a kernel consumer's receive reports the
            // Write's length (a standalone Immediate Data message: a zero-length Write's),
            // as IB_WC_RECV_RDMA_WITH_IMM. libsiw shows a process only IBV_WC_RECV and its
            // length, which must then be what was placed in the buffer: nothing.
            let c = Completion {
                id,
                opcode: op::RECEIVE,
                status: status.unwrap_or(wc::SUCCESS),
                bytes: if qp.is_kernel() {
                    last_write.unwrap_or(0)
                } else {
                    0
                },
                qp_num: st.ids().qpn,
                qp_handle: st.ids().handle,
                solicited: opcode.solicited(),
                invalidated: None,
                imm: Some(imm),
            };
            let _ = st.complete(false, &c);
            Ok(())
        }
        Opcode::AtomicRequest => {
            let RdmapHdr::AtomicRequest(req) = rdmap else {
                return Err(RxStop::Term(TermError::RdmapUnexpectedOpcode));
            };
            // RFC 7306 section 5: the operation code and alignment, then the same remote
            // addressing checks as a Read's, with the remote atomic right.
            req.check().map_err(RxStop::Term)?;
            let mr = qp
                .tables()
                .mr(req.stag)
                .ok_or(RxStop::Term(TermError::RdmapInvalidStag))?;
            let off = mr
                .check(qp.pd(), req.to, ATOMIC_LEN, REMOTE_ATOMIC)
                .map_err(|e| RxStop::Term(e.of_read()))?;
            // Atomics share the IRD with Reads (RFC 7306 section 5.2).
            answer_later(link, Inbound::Atomic { req, mr, off })?;
            Ok(())
        }
        Opcode::AtomicResponse => {
            let RdmapHdr::AtomicResponse(resp) = rdmap else {
                return Err(RxStop::Term(TermError::RdmapUnexpectedOpcode));
            };
            // It answers our oldest outstanding request, which must be this Atomic (the
            // responder answers in order, RFC 7306 section 7).
            match link.tx.orq.first() {
                Some(o) if o.atomic.is_some_and(|(_, id)| id == resp.req_id) => {}
                _ => return Err(RxStop::Term(TermError::RdmapCatastrophicStream)),
            }
            let o = link
                .tx
                .orq
                .remove(0)
                .map_err(|_| RxStop::Term(TermError::RdmapCatastrophicStream))?;
            // The original value, in this CPU's byte order, to the sink (checked again:
            // it may have been deregistered meanwhile).
            let placed = o
                .sink(qp.tables())
                .ok_or(AccessError::InvalidStag)
                .and_then(|mr| {
                    let off = mr.check(qp.pd(), o.sink_to, ATOMIC_LEN, LOCAL_WRITE)?;
                    mr.pages
                        .write(off, IoVec::new(&resp.orig.to_ne_bytes()))
                        .map_err(|_| AccessError::Bounds)
                });
            let status = if placed.is_ok() {
                wc::SUCCESS
            } else {
                wc::LOC_PROT_ERR
            };
            if let Some(c) = read_done(st, &o, status) {
                let _ = st.complete(true, &c);
            }
            // A sink gone bad is a local error: the QP cannot go on (as a Read's).
            if placed.is_err() {
                return Err(RxStop::Term(TermError::RdmapCatastrophic));
            }
            Ok(())
        }
        Opcode::Send | Opcode::SendSe | Opcode::SendInvalidate | Opcode::SendSeInvalidate => {
            let placed = link
                .rx
                .send
                .live_mut()
                .ok_or(RxStop::Term(TermError::DdpUntaggedNoBuffer))?
                .status
                .is_none();
            // RFC 5040 section 5.3: on delivery, invalidate the STag if it is associated
            // with this stream, else Terminate "STag cannot be invalidated". The same answer
            // for an STag that does not exist, is another PD's, or is not a
            // fast-registration MR's (registered memory cannot be invalidated): a peer
            // cannot tell them apart, so cannot probe STags this way either. The receive
            // then completes with REM_INV_REQ_ERR (as from the C siw) before the Terminate.
            let (invalidated, refused) = match (opcode, ddp) {
                (Opcode::SendInvalidate | Opcode::SendSeInvalidate, DdpHdr::Untagged(u))
                    if placed =>
                {
                    match mr::invalidate(qp.tables(), qp.pd(), u.rsvd_ulp) {
                        Ok(()) => (Some(u.rsvd_ulp), false),
                        Err(_) => (None, true),
                    }
                }
                _ => (None, false),
            };
            let link = st.link_mut().ok_or(RxStop::PeerTerminated)?;
            let (id, status) = link
                .rx
                .send
                .finish()
                .ok_or(RxStop::Term(TermError::DdpUntaggedNoBuffer))?;
            let status = if refused {
                wc::REM_INV_REQ_ERR
            } else {
                status.unwrap_or(wc::SUCCESS)
            };
            let c = Completion {
                id,
                opcode: op::RECEIVE,
                status,
                bytes: end,
                qp_num: st.ids().qpn,
                qp_handle: st.ids().handle,
                solicited: opcode.solicited(),
                invalidated,
                imm: None,
            };
            let _ = st.complete(false, &c);
            if refused {
                return Err(RxStop::Term(TermError::RdmapProtCannotInvalidate));
            }
            Ok(())
        }
        Opcode::ReadResponse => {
            let o = link
                .tx
                .orq
                .remove(0)
                .map_err(|_| RxStop::Term(TermError::LlpInvalidReqResp))?;
            // A Read with Invalidate: the sink goes invalid with the response in.
            let status =
                if o.invalidate && mr::invalidate(qp.tables(), qp.pd(), o.sink_stag).is_err() {
                    wc::LOC_PROT_ERR
                } else {
                    wc::SUCCESS
                };
            if let Some(c) = read_done(st, &o, status) {
                let _ = st.complete(true, &c);
            }
            Ok(())
        }
        Opcode::ReadRequest => {
            let RdmapHdr::ReadRequest(rr) = rdmap else {
                return Err(RxStop::Term(TermError::RdmapUnexpectedOpcode));
            };
            // O2: serving a Read needs REMOTE_READ on the region. (QP access flags are
            // not checked, as by the C siw: librdmacm leaves them unset on iWARP.)
            // A zero-length Read is not validated and gets a zero-length response
            // (RFC 5040 section 5.2.1).
            let src = if rr.size != 0 {
                let mr = qp
                    .tables()
                    .mr(rr.src_stag)
                    .ok_or(RxStop::Term(TermError::RdmapInvalidStag))?;
                mr.check(qp.pd(), rr.src_to, rr.size, REMOTE_READ)
                    .map_err(|e| RxStop::Term(e.of_read()))?;
                Some(mr)
            } else {
                None
            };
            answer_later(link, Inbound::Read { rr, src })?;
            qp.stats().add(Counter::ReadRequestsServed, 1);
            Ok(())
        }
        Opcode::Terminate => {
            qp.tables().count(Counter::TerminatesReceived);
            Err(RxStop::PeerTerminated)
        }
    }
}

/// Queues a request of the peer's (a Read or an Atomic) to be answered in order; beyond the
/// negotiated IRD the peer broke the limit (Terminate).
fn answer_later(link: &mut crate::qp::Link, req: Inbound) -> Result<(), RxStop> {
    if link.tx.irq.len() >= usize::from(link.params.ird) {
        return Err(RxStop::Term(TermError::RdmapCatastrophicStream));
    }
    link.tx
        .irq
        .push_within_capacity(req)
        .map_err(|_| RxStop::Term(TermError::RdmapCatastrophicStream))
}

/// Takes the next posted receive (`siw_rqe_get()`), from the QP's RQ or its SRQ, into
/// [`RxState`]'s receive; `false` if there is none: the slot must be exactly VALID.
fn take_rqe(qp: &QpCore, st: &mut QpState) -> bool {
    let (get, link) = st.rq_get_and_link();
    let Some(link) = link else {
        return false;
    };
    match qp.rq().as_ref() {
        Some(rq) => take_from(
            &rq.mem,
            rq.offset(*get, RQE_SIZE),
            qp.rq_max_sges(),
            get,
            &mut link.rx.send,
        ),
        None => {
            let Some(srq) = qp.srq() else {
                return false;
            };
            let mut get = srq.get.lock();
            let at = *get;
            if !take_from(
                &srq.mem,
                srq.offset(at),
                srq.max_sge,
                &mut get,
                &mut link.rx.send,
            ) {
                return false;
            }
            let event = srq.limit_reached(at);
            drop(get);
            if event {
                if let Some(h) = st.handle() {
                    h.srq_limit_event();
                }
            }
            true
        }
    }
}

/// Takes the receive queue element at `off` of `mem` into `s` (idle) and advances the
/// consumer index `get`; `false` if the slot holds none. Of its SGEs only those in use
/// are read.
fn take_from(mem: &SharedMem, off: usize, max_sge: u32, get: &mut u32, s: &mut RxSend) -> bool {
    let Some(flags) = mem.atomic_u16(off.saturating_add(WQE_FLAGS)) else {
        return false;
    };
    if flags.load(Ordering::Acquire) != wqe::VALID {
        return false;
    }
    let (Some(id), Some(num_sge)) = (
        mem.read::<u64>(off.saturating_add(offset_of!(Rqe, id))),
        mem.read::<u8>(off.saturating_add(offset_of!(Rqe, num_sge))),
    ) else {
        return false;
    };
    let nsge = usize::from(num_sge).min(max_sge as usize).min(s.sges.len());
    let sges = off.saturating_add(offset_of!(Rqe, sge));
    for (i, d) in s.sges.iter_mut().take(nsge).enumerate() {
        // In bounds as the element is (`offset` gives whole elements).
        let Some(sge) = mem.read::<Sge>(sges.saturating_add(i.saturating_mul(size_of::<Sge>())))
        else {
            return false;
        };
        *d = sge;
    }
    flags.store(0, Ordering::Release);
    *get = get.wrapping_add(1);
    s.id = id;
    s.nsge = nsge;
    s.region = None;
    s.status = None;
    s.live = true;
    true
}
