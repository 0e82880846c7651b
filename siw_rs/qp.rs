// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: the send queue (`struct siw_sqe` ring), the receive queue (`struct siw_rqe`
//! ring, absent when an SRQ is attached), the QP state and, once connected, the data path
//! state ([`Link`]).
//!
//! The state machine itself is [`crate::proto::qp`]; this file applies its decisions. The
//! part of a QP that connections and their work use is a [`QpCore`] behind an `Arc`, so work
//! in flight never sees a freed QP; the CQs it completes to are reachable only through the
//! QP's state, which `destroy_qp` empties.

use crate::{
    cm::{self, Ep},
    cq::Completion,
    device::{
        Siw,
        SiwDev,
        MAX_QP,
        MAX_QP_WR,
        MAX_SGE, //
    },
    gid::{
        Gids,
        Waiting, //
    },
    glue::{
        log,
        net::tcp::SockAddr,
        rdma::{
            cm::QpHandle,
            device::Device,
            mmap::{
                MmapEntry,
                SharedMem, //
            },
            object::User,
            verbs::{
                Access,
                AccessFlags,
                Av,
                Cq,
                CqRef,
                KernelQp,
                QpCap,
                QpInit,
                QpModify,
                QpQuery,
                QpState as VerbsQpState,
                QpType,
                RecvWr,
                RecvWrs,
                ResDetails,
                SendFlag,
                SendOp,
                SendWr,
                SendWrs,
                SigType,
                WrSge, //
            },
        },
        siw_abi::{
            op,
            wc,
            wqe,
            UrespCreateQp,
            MAX_INLINE,
            RQE_SIZE,
            SQE_SIZE, //
        },
        sync::{new_owner_lock, BhGuard, OwnerGuard, OwnerLock},
        workqueue,
    },
    limit::{
        Counted,
        Kind, //
    },
    proto::{
        gidconn::{
            self,
            End,
            Waits, //
        },
        qp::{
            self as sm,
            State,
            VerbsState, //
        },
    },
    queue::{
        post_wqe,
        AtomicWqe,
        RegMrWqe,
        Ring,
        Rqe,
        Sge,
        Sges,
        Sqe,
        IMM_MAX_INLINE,
        SQE_IMM,
        SQE_INLINE,
        WQE_FLAGS, //
    },
    rx::RxState,
    srq::SrqShared,
    stats::{Counter, QpStats},
    table::Tables,
    tx::TxState,
};
use core::sync::atomic::{
    fence,
    AtomicU32,
    AtomicU8,
    Ordering, //
};
use kernel::{
    impl_has_delayed_work, impl_has_work, new_delayed_work, new_spinlock_irq, new_work,
    prelude::*,
    str::CString,
    sync::{
        Arc,
        Completion as Done,
        SetOnce,
        SpinLockIrq, //
    },
    time::{
        msecs_to_jiffies,
        Delta,
        Instant,
        Monotonic, //
    },
    workqueue::{
        DelayedWork,
        Work,
        WorkItem, //
    },
};

/// How completions name a QP.
#[derive(Clone, Copy, Default)]
pub(crate) struct QpIds {
    /// The QP number (user CQs).
    pub(crate) qpn: u32,
    /// The QP as kernel CQs report it.
    pub(crate) handle: Option<KernelQp>,
}

/// The send and receive CQs.
pub(crate) struct Cqs {
    pub(crate) send: CqRef<Siw>,
    pub(crate) recv: CqRef<Siw>,
}

/// What a connected QP negotiated.
#[derive(Clone, Copy)]
pub(crate) struct LinkParams {
    /// The MPA revision in use.
    pub(crate) revision: u8,
    pub(crate) crc: bool,
    /// Inbound Read Requests we serve at a time.
    pub(crate) ird: u16,
    /// Read Requests we may have outstanding.
    pub(crate) ord: u16,
    /// Both ends set the siw-private GSO_EXP: FPDUs may be longer than one TCP segment.
    pub(crate) gso: bool,
    /// We insert MPA markers (the peer set M).
    pub(crate) markers_tx: bool,
    /// The peer inserts MPA markers (we set M).
    pub(crate) markers_rx: bool,
    /// Both ends speak RFC 7306 (siw_rs's MPA offer and answer): its messages may be sent
    /// and are accepted.
    pub(crate) rfc7306: bool,
    /// DDP over SCTP (RFC 5043): the largest DDP segment to send (its DDP-SSN not counted).
    /// `None`: TCP with MPA.
    pub(crate) sctp: Option<u16>,
}

impl LinkParams {
    /// The parameters an MPA negotiation agreed on.
    pub(crate) fn of(a: &crate::proto::mpa::Agreed) -> Self {
        Self {
            revision: a.revision,
            crc: a.crc,
            ird: a.ird,
            ord: a.ord,
            gso: a.gso_exp,
            markers_tx: a.markers_tx,
            markers_rx: a.markers_rx,
            rfc7306: a.rfc7306,
            sctp: None,
        }
    }

    /// The parameters of a connection over SCTP (RFC 5043), which negotiates nothing: no
    /// MPA options, no RFC 7306 (siw_rs offers it in MPA only); `ord` Reads of ours at a
    /// time, `ird` of the peer's (RFC 5043 carries no IRD or ORD: see `cm.rs`), DDP
    /// segments of at most `max_segment` octets.
    pub(crate) fn sctp(ird: u16, ord: u16, max_segment: u16) -> Self {
        Self {
            revision: 0,
            crc: false,
            ird,
            ord,
            gso: false,
            markers_tx: false,
            markers_rx: false,
            rfc7306: false,
            sctp: Some(max_segment),
        }
    }
}

/// The data path state of a connected QP.
pub(crate) struct Link {
    pub(crate) params: LinkParams,
    pub(crate) rx: RxState,
    pub(crate) tx: TxState,
    /// What the Read watchdog saw at its last look.
    watch: ReadWatch,
}

/// The Read watchdog's last look at a connection (see [`QpCore::read_watchdog`]).
#[derive(Default)]
pub(crate) struct ReadWatch {
    /// Bytes received by then.
    bytes: u64,
    /// Our Read Requests were outstanding then.
    reads: bool,
    /// All we had sent was acknowledged then (so the peer had those Read Requests).
    acked: bool,
}

impl ReadWatch {
    /// The next look: `bytes` received so far, Read Requests outstanding (`reads`) or not,
    /// everything sent acknowledged (`acked`) or not. True if, at the last look, Reads were
    /// outstanding and the peer had acknowledged them, and they still are outstanding with
    /// nothing received since: the peer left them unanswered for a whole period. (A Read
    /// Request still in our socket's queue, behind a long Write to a slow peer, is not the
    /// peer's fault.)
    pub(crate) fn look(&mut self, bytes: u64, reads: bool, acked: bool) -> bool {
        let stalled = reads && self.reads && self.acked && bytes == self.bytes;
        *self = Self {
            bytes,
            reads,
            acked,
        };
        stalled
    }
}

/// The mutable QP state (under the QP's state lock). Its fields are the QP's own; the
/// transmit, receive and connection code reach them through the methods below.
pub(crate) struct QpState {
    state: State,
    /// The receive queue's consumer index (free-running).
    rq_get: u32,
    /// The send queue's consumer index (free-running).
    sq_get: u32,
    ids: QpIds,
    /// The CQs; taken away when the QP is destroyed.
    cqs: Option<Cqs>,
    /// The connection endpoint, while connecting or connected.
    ep: Option<Arc<Ep>>,
    /// The data path, while connected.
    link: Option<KBox<Link>>,
    /// The `ib_qp`, while the QP lives (for async events).
    handle: Option<QpHandle>,
    /// A connection made by `modify_qp` (RTR with an address vector), from RTR until the
    /// QP leaves RTR/RTS.
    av: Option<AvConn>,
    /// In RTS, the peer of a connection made by `modify_qp` left (see
    /// [`QpCore::peer_left`]): send work fails once the retry time has passed.
    peer_left: bool,
    /// When the send work that found the peer gone fails ([`QpCore::send_after_peer_left`]).
    retry_deadline: Option<Instant<Monotonic>>,
    /// Send work the transmit engine had taken when the peer left (the element being sent,
    /// Read Requests unanswered), as (id, opcode): older than anything on the ring, it fails
    /// or is flushed first.
    unanswered: KVec<(u64, u8)>,
    /// `modify_qp`'s `timeout` and `retry_cnt`.
    retry: Retry,
    /// `modify_qp`'s PSNs, which authenticate a connection made by `modify_qp`. Never
    /// reported by `query_qp`: `rdma resource show` shows its numbers to every user.
    psn: Psns,
}

/// The first PSNs an RC QP sends and expects ([`gidconn`]); 0 until `modify_qp` sets them.
#[derive(Clone, Copy, Default)]
struct Psns {
    sq: u32,
    rq: u32,
}

impl Psns {
    /// What `m` sets of them.
    fn take(&mut self, m: &QpModify) {
        self.sq = m.sq_psn.map_or(self.sq, |p| p & gidconn::PSN_MASK);
        self.rq = m.rq_psn.map_or(self.rq, |p| p & gidconn::PSN_MASK);
    }
}

/// An RC QP's retry time as `modify_qp` gives it ([`gidconn::retry_time_ms`]).
#[derive(Clone, Copy)]
struct Retry {
    timeout: u8,
    retry_cnt: u8,
}

impl Retry {
    /// What `m` sets of it.
    fn take(&mut self, m: &QpModify) {
        self.timeout = m.timeout.unwrap_or(self.timeout);
        self.retry_cnt = m.retry_cnt.unwrap_or(self.retry_cnt);
    }
}

impl Default for Retry {
    /// For a QP whose consumer never set them (InfiniBand requires both for RTS): 8 tries
    /// of 67 ms, as `ibv_rc_pingpong` asks for.
    fn default() -> Self {
        Self {
            timeout: 14,
            retry_cnt: 7,
        }
    }
}

/// A connection made by `modify_qp` ([`crate::proto::gidconn`]).
struct AvConn {
    /// The peer, as the address vector names it.
    remote: End,
    /// This end connects (else it waits to be connected to).
    initiator: bool,
    /// RDMA Reads this QP serves at a time (`max_dest_rd_atomic`).
    ird: u16,
    /// The connection is up.
    up: bool,
    /// The initiator has started connecting (it does once in RTS, with its `sq_psn`).
    started: bool,
    /// The responder's hold on the device's listener at its address, until it is up.
    waiting: Option<Waiting>,
    /// When the QP gives up waiting for it.
    deadline: Instant<Monotonic>,
}

/// What `modify_qp` to RTR with an address vector prepares before the QP changes state.
struct AvPlan {
    remote: End,
    ird: u16,
    /// The initiator's endpoint, ready to connect.
    ep: Option<Arc<Ep>>,
    /// The responder's hold on the listener.
    waiting: Option<Waiting>,
}

impl QpState {
    /// The verbs state.
    pub(crate) fn state(&self) -> State {
        self.state
    }

    /// How completions name the QP.
    pub(crate) fn ids(&self) -> QpIds {
        self.ids
    }

    /// The connection endpoint, while connecting or connected.
    pub(crate) fn ep(&self) -> Option<&Arc<Ep>> {
        self.ep.as_ref()
    }

    /// Makes `ep` the QP's endpoint (an active side's connect, before it is connected).
    pub(crate) fn set_ep(&mut self, ep: Arc<Ep>) {
        self.ep = Some(ep);
    }

    /// Forgets the endpoint (a connect that failed at once; the QP stays as it was).
    pub(crate) fn clear_ep(&mut self) {
        self.ep = None;
    }

    /// The data path, while connected.
    pub(crate) fn link(&self) -> Option<&Link> {
        self.link.as_deref()
    }

    /// The data path, while connected, to change.
    pub(crate) fn link_mut(&mut self) -> Option<&mut Link> {
        self.link.as_deref_mut()
    }

    /// The send queue's consumer index (free-running).
    pub(crate) fn sq_get(&self) -> u32 {
        self.sq_get
    }

    /// The send queue element at the consumer index is taken.
    pub(crate) fn sq_taken(&mut self) {
        self.sq_get = self.sq_get.wrapping_add(1);
    }

    /// The receive queue's consumer index (free-running) and the connection, together: a
    /// receive is taken into the connection's receive state.
    pub(crate) fn rq_get_and_link(&mut self) -> (&mut u32, Option<&mut Link>) {
        (&mut self.rq_get, self.link.as_deref_mut())
    }

    /// The `ib_qp`, while the QP lives (for async events).
    pub(crate) fn handle(&self) -> Option<&QpHandle> {
        self.handle.as_ref()
    }

    /// The completion of a flushed work request (`IB_WC_WR_FLUSH_ERR`).
    fn flushed(&self, id: u64, opcode: u8) -> Completion {
        Completion {
            id,
            opcode,
            status: wc::WR_FLUSH_ERR,
            bytes: 0,
            qp_num: self.ids.qpn,
            qp_handle: self.ids.handle,
            solicited: false,
            invalidated: None,
            imm: None,
        }
    }

    /// Completes send work the transmit engine had taken, (id, opcode), with `status`.
    fn complete_taken(&self, (id, opcode): (u64, u8), status: u16) {
        let c = Completion {
            status,
            ..self.flushed(id, opcode)
        };
        let _ = self.complete(true, &c);
    }

    /// Adds `c` to the send (`send`) or receive CQ.
    pub(crate) fn complete(&self, send: bool, c: &Completion) -> Result {
        let Some(cqs) = &self.cqs else {
            return Ok(());
        };
        let cq: &Cq<Siw> = if send { cqs.send.get() } else { cqs.recv.get() };
        crate::cq::complete(cq, c)
    }

    /// Reports a fatal QP error to the consumer (`IB_EVENT_QP_FATAL`).
    pub(crate) fn fatal_event(&self) {
        if let Some(h) = &self.handle {
            h.fatal_event();
        }
    }
}

/// The part of a QP the connection and its work share.
#[pin_data]
pub(crate) struct QpCore {
    qpn: u32,
    /// The PD (identity), which every memory access must match.
    pd: usize,
    /// The send queue.
    sq: Ring,
    /// The receive queue (none with an SRQ or `max_recv_wr == 0`).
    rq: Option<Ring>,
    sq_max_sges: u32,
    rq_max_sges: u32,
    /// The SRQ receives come from, when the QP has one.
    srq: Option<Arc<SrqShared>>,
    sig_all: bool,
    kernel: bool,
    /// The device's lookup tables (memory regions) and counters.
    tables: Arc<Tables>,
    /// The connection's counts, until they move to the device's when it ends.
    stats: QpStats,
    /// Owned by a process, or held by the socket's data-ready callback (softirq) when no
    /// process owns it, which receives in place then (see [`OwnerLock`]).
    #[pin]
    st: OwnerLock<QpState>,
    /// References of the connection manager (`iw_add_ref`), plus one of the QP itself.
    cm_refs: AtomicU32,
    /// References `iw_get_qp` took, which the `iw_add_ref` following it takes over
    /// ([`QpCore::cm_hand_out`]).
    handed_out: AtomicU32,
    /// Completed when `cm_refs` reaches zero.
    #[pin]
    released: Done,
    /// The `ib_qp`, for the connection manager (`iw_get_qp` runs under its spinlock).
    cm_handle: SetOnce<QpHandle>,
    /// The producer indices of a kernel QP's queues. Kernel consumers post from any context
    /// (completion handlers run in softirq), so posting never takes the state mutex.
    #[pin]
    posting: SpinLockIrq<Posting>,
    /// The QP state as last set under `st` (a [`state_code`]), for posting.
    state_now: AtomicU8,
    /// Flushes what a kernel consumer posted in ERROR (which needs the state mutex).
    #[pin]
    work: Work<QpCore>,
    /// Ends a connection made by `modify_qp` that did not come up in time.
    #[pin]
    av_timer: DelayedWork<QpCore, 1>,
    /// Ends a connection whose peer leaves our RDMA Reads unanswered.
    #[pin]
    watchdog: DelayedWork<QpCore, 2>,
    /// Fails the send work a departed peer cannot take (see [`QpCore::retry_expired`]).
    #[pin]
    retry_timer: DelayedWork<QpCore, 3>,
}

/// The producer indices (free-running) of a kernel QP's send and receive queues, and the
/// connection that sends what is posted in RTS.
#[derive(Default)]
struct Posting {
    sq: u32,
    rq: u32,
    /// `st.ep` while in RTS (so never its last reference), else `None`: posting kicks it
    /// straight from any context, without the state mutex or a hop through the QP's work.
    ep: Option<Arc<Ep>>,
    /// In RTS with its connection up, whether the connection agreed on RFC 7306: if not,
    /// atomics and Writes with Immediate Data are refused when posted. Otherwise (`None`:
    /// flushed in ERROR, or waiting for a connection made by `modify_qp`) they are taken,
    /// and the transmit engine checks the connection again.
    rfc7306: Option<bool>,
}

impl_has_work! {
    impl HasWork<Self> for QpCore { self.work }
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self, 1> for QpCore { self.av_timer }
    impl HasDelayedWork<Self, 2> for QpCore { self.watchdog }
    impl HasDelayedWork<Self, 3> for QpCore { self.retry_timer }
}

impl WorkItem<1> for QpCore {
    type Pointer = Arc<QpCore>;

    fn run(this: Arc<QpCore>) {
        workqueue::timer_done();
        this.av_expired();
    }
}

impl WorkItem<3> for QpCore {
    type Pointer = Arc<QpCore>;

    fn run(this: Arc<QpCore>) {
        workqueue::timer_done();
        this.retry_expired();
    }
}

impl WorkItem<2> for QpCore {
    type Pointer = Arc<QpCore>;

    fn run(this: Arc<QpCore>) {
        workqueue::timer_done();
        this.read_watchdog();
    }
}

/// How long a connection made by `modify_qp` may take to come up (module parameter
/// `gid_connect_timeout_ms`).
fn av_timeout_ms() -> u32 {
    crate::module_parameters::gid_connect_timeout_ms
        .value()
        .clamp(100, 600_000)
}

impl WorkItem for QpCore {
    type Pointer = Arc<QpCore>;

    fn run(this: Arc<QpCore>) {
        let mut st = this.st.lock();
        if st.state == State::Error {
            this.flush_sq(&mut st);
            this.flush_rq(&mut st);
        } else {
            this.send_after_peer_left(&mut st);
        }
    }
}

/// [`State`] as a number, for [`QpCore::state_now`].
fn state_code(s: State) -> u8 {
    match s {
        State::Idle => 0,
        State::Rtr => 1,
        State::Rts => 2,
        State::Closing => 3,
        State::Terminate => 4,
        State::Error => 5,
    }
}

/// The receive queue element for a kernel receive work request (flags left to the poster).
fn rqe(wr: &RecvWr<'_>) -> Rqe {
    Rqe {
        id: wr.id,
        num_sge: u8::try_from(wr.sge.len()).unwrap_or(u8::MAX),
        opcode: op::RECEIVE,
        sge: queue_sges(wr.sge),
        ..Default::default()
    }
}

/// A kernel work request's SGEs as a queue element holds them (callers check the count).
fn queue_sges(sges: &[WrSge]) -> Sges {
    let mut out = Sges::default();
    for (d, s) in out.iter_mut().zip(sges.iter()) {
        *d = Sge {
            laddr: s.addr,
            length: s.length,
            lkey: s.lkey,
        };
    }
    out
}

/// Posts a kernel receive work request into the ring `mem` at the slot `off` names.
pub(crate) fn post_rqe(mem: &SharedMem, off: usize, wr: &RecvWr<'_>) -> Result {
    let r = rqe(wr);
    post_wqe(mem, off, 0, || mem.write(off, r))
}

/// The protocol core's name for a verbs QP state.
fn verbs_state_of(s: VerbsQpState) -> VerbsState {
    match s {
        VerbsQpState::Reset => VerbsState::Reset,
        VerbsQpState::Init => VerbsState::Init,
        VerbsQpState::Rtr => VerbsState::Rtr,
        VerbsQpState::Rts => VerbsState::Rts,
        VerbsQpState::Sqd => VerbsState::Sqd,
        VerbsQpState::Sqe => VerbsState::Sqe,
        VerbsQpState::Err => VerbsState::Err,
    }
}

/// The verbs QP state the protocol core's state reads as.
fn qp_state_of(s: VerbsState) -> VerbsQpState {
    match s {
        VerbsState::Reset => VerbsQpState::Reset,
        VerbsState::Init => VerbsQpState::Init,
        VerbsState::Rtr => VerbsQpState::Rtr,
        VerbsState::Rts => VerbsQpState::Rts,
        VerbsState::Sqd => VerbsQpState::Sqd,
        VerbsState::Sqe => VerbsQpState::Sqe,
        VerbsState::Err => VerbsQpState::Err,
    }
}

impl QpCore {
    /// The PD (identity), which every memory access must match.
    pub(crate) fn pd(&self) -> usize {
        self.pd
    }

    /// The send queue.
    pub(crate) fn sq(&self) -> &Ring {
        &self.sq
    }

    /// The receive queue (none with an SRQ or `max_recv_wr == 0`).
    pub(crate) fn rq(&self) -> Option<&Ring> {
        self.rq.as_ref()
    }

    /// SGEs per send queue element.
    pub(crate) fn sq_max_sges(&self) -> u32 {
        self.sq_max_sges
    }

    /// SGEs per receive queue element.
    pub(crate) fn rq_max_sges(&self) -> u32 {
        self.rq_max_sges
    }

    /// The SRQ receives come from, when the QP has one.
    pub(crate) fn srq(&self) -> Option<&Arc<SrqShared>> {
        self.srq.as_ref()
    }

    /// Whether a kernel consumer owns the QP (only its send queue may hold local
    /// operations: `REG_MR`, Local Invalidate, Read with Invalidate).
    pub(crate) fn is_kernel(&self) -> bool {
        self.kernel
    }

    /// Every send completes signalled (`IB_SIGNAL_ALL_WR`).
    pub(crate) fn sig_all(&self) -> bool {
        self.sig_all
    }

    /// The device's lookup tables.
    pub(crate) fn tables(&self) -> &Arc<Tables> {
        &self.tables
    }

    /// The connection's counts (written under the state lock).
    pub(crate) fn stats(&self) -> &QpStats {
        &self.stats
    }

    /// Owns the QP's state (process context; may sleep).
    pub(crate) fn lock(&self) -> OwnerGuard<'_, QpState> {
        self.st.lock()
    }

    /// The QP's state for the socket's data-ready callback (softirq), unless a process
    /// owns it: then `None`, and the connection's work must receive instead.
    pub(crate) fn try_lock_bh(&self) -> Option<BhGuard<'_, QpState>> {
        self.st.try_lock_bh()
    }

    /// The send queue has an element posted that the transmit engine has not taken.
    pub(crate) fn sq_waiting(&self, st: &QpState) -> bool {
        let off = self.sq.offset(st.sq_get, SQE_SIZE);
        self.sq
            .mem
            .atomic_u16(off.saturating_add(WQE_FLAGS))
            .is_some_and(|f| f.load(Ordering::Acquire) & wqe::VALID != 0)
    }

    /// The `ib_qp`, once the core has set the QP up.
    pub(crate) fn cm_handle(&self) -> Option<&QpHandle> {
        self.cm_handle.as_ref()
    }
}

/// A queue pair.
pub(crate) struct SiwQp {
    pub(crate) core: Arc<QpCore>,
    tables: Arc<Tables>,
    /// The mmap registrations of a user QP's rings, ended when the QP is destroyed (the
    /// rings are in `core`, which connection work may hold a moment longer).
    _mmaps: [Option<MmapEntry>; 2],
    _count: Counted,
}

impl SiwQp {
    /// A new RC QP; returns it and its QP number. The checks and their order are the C
    /// siw's (`siw_create_qp()`), so the same requests fail with the same errno.
    pub(crate) fn new(
        dev: &SiwDev,
        pd: usize,
        attr: &QpInit<'_, Siw>,
        mut user: Option<&mut User<'_, Siw>>,
    ) -> Result<(Self, u32)> {
        if attr.create_flags != 0 {
            return Err(EOPNOTSUPP);
        }
        let count = Counted::new(&dev.counts, Kind::Qp, MAX_QP)?;
        if attr.qp_type != QpType::Rc {
            return Err(EOPNOTSUPP);
        }
        let cap = attr.cap;
        if cap.max_send_wr > MAX_QP_WR
            || cap.max_recv_wr > MAX_QP_WR
            || cap.max_send_sge > MAX_SGE
            || cap.max_recv_sge > MAX_SGE
            || cap.max_inline_data > MAX_INLINE as u32
            // A QP must be able to hold at least one send WQE.
            || cap.max_send_wr == 0
            || attr.send_cq.is_none()
            || (attr.recv_cq.is_none() && attr.srq.is_none())
        {
            return Err(EINVAL);
        }
        let kernel = user.is_none();
        let mut sq = Ring::new(cap.max_send_wr, SQE_SIZE, 0, user.as_deref_mut())?;
        let sig_all = attr.sq_sig_type.ok_or(EINVAL)? == SigType::AllWr;
        let mut rq = if attr.srq.is_none() && cap.max_recv_wr > 0 {
            Some(Ring::new(
                cap.max_recv_wr,
                RQE_SIZE,
                0,
                user.as_deref_mut(),
            )?)
        } else {
            None
        };
        let qpn = dev.tables.new_qpn()?;
        if let Some(u) = user {
            let resp = UrespCreateQp {
                qp_id: qpn,
                num_sqe: sq.entries,
                num_rqe: rq.as_ref().map_or(0, |r| r.entries),
                sq_key: sq.key(),
                rq_key: rq.as_ref().map_or(0, Ring::key),
                ..Default::default()
            };
            u.udata.respond(&resp)?;
        }
        let mmaps = [sq.take_mmap(), rq.as_mut().and_then(Ring::take_mmap)];
        let (send, recv) = match (attr.send_cq, attr.recv_cq) {
            (Some(s), Some(r)) => (CqRef::new(s), CqRef::new(r)),
            // With an SRQ and no receive CQ, receives are not supported yet; complete
            // nothing to a CQ that does not exist.
            (Some(s), None) => (CqRef::new(s), CqRef::new(s)),
            _ => return Err(EINVAL),
        };
        let core = Arc::pin_init(
            pin_init!(QpCore {
                qpn,
                pd,
                sq,
                rq,
                sq_max_sges: cap.max_send_sge,
                rq_max_sges: cap.max_recv_sge,
                srq: attr.srq.map(|s| s.data().shared.clone()),
                sig_all,
                kernel,
                tables: dev.tables.clone(),
                stats: QpStats::new(),
                st <- new_owner_lock!(QpState {
                    state: State::Idle,
                    rq_get: 0,
                    sq_get: 0,
                    ids: QpIds::default(),
                    cqs: Some(Cqs { send, recv }),
                    ep: None,
                    link: None,
                    handle: None,
                    av: None,
                    peer_left: false,
                    retry_deadline: None,
                    unanswered: KVec::new(),
                    retry: Retry::default(),
                    psn: Psns::default(),
                }, "QpCore::st"),
                cm_refs: AtomicU32::new(1),
                handed_out: AtomicU32::new(0),
                released <- Done::new(),
                cm_handle: SetOnce::new(),
                posting <- new_spinlock_irq!(Posting::default(), "QpCore::posting"),
                state_now: AtomicU8::new(state_code(State::Idle)),
                work <- new_work!("QpCore::work"),
                av_timer <- new_delayed_work!("QpCore::av_timer"),
                watchdog <- new_delayed_work!("QpCore::watchdog"),
                retry_timer <- new_delayed_work!("QpCore::retry_timer"),
            }),
            GFP_KERNEL,
        )?;
        let qp = Self {
            core,
            tables: dev.tables.clone(),
            _mmaps: mmaps,
            _count: count,
        };
        Ok((qp, qpn))
    }

    /// The core has set the QP up: make it findable by the connection manager.
    pub(crate) fn created(&self, ids: QpIds, handle: QpHandle) -> Result {
        {
            let mut st = self.core.st.lock();
            st.ids = ids;
            st.handle = Some(handle);
        }
        self.core.cm_handle.populate(handle);
        self.tables.insert_qp(self.core.qpn, self.core.clone())
    }

    /// `modify_qp` of this QP of `dev`.
    pub(crate) fn modify(&self, dev: &Device<Siw>, m: &QpModify) -> Result {
        self.core.modify(Some(dev), m)
    }

    /// `query_qp`.
    /// `rdma resource show qp -dd`: the connection (addresses, MPA revision, CRC, markers,
    /// RFC 7306, IRD and ORD and their use), the queues' fill, and what the connection
    /// counted.
    pub(crate) fn details(&self, out: &mut ResDetails<'_>) -> Result {
        let core = &self.core;
        // The rings' flags are atomics: scanned without the state lock, which the data path
        // needs.
        out.u32(c"sq_size", core.sq.entries)?;
        out.u32(c"sq_posted", posted(&core.sq, SQE_SIZE))?;
        if let Some(rq) = &core.rq {
            out.u32(c"rq_size", rq.entries)?;
            out.u32(c"rq_posted", posted(rq, RQE_SIZE))?;
        }
        let ep = {
            let st = core.st.lock();
            if let Some(link) = st.link() {
                let p = link.params;
                // Over SCTP (RFC 5043): the largest DDP segment sent; no MPA (revision 0).
                if let Some(max) = p.sctp {
                    out.u32(c"sctp_max_segment", u32::from(max))?;
                }
                out.u32(c"mpa_rev", u32::from(p.revision))?;
                out.u32(c"mpa_crc", u32::from(p.crc))?;
                out.u32(c"mpa_markers_tx", u32::from(p.markers_tx))?;
                out.u32(c"mpa_markers_rx", u32::from(p.markers_rx))?;
                out.u32(c"fpdu_gso", u32::from(p.gso))?;
                out.u32(c"rfc7306", u32::from(p.rfc7306))?;
                out.u32(c"ird", u32::from(p.ird))?;
                out.u32(c"ord", u32::from(p.ord))?;
                out.u32(c"ird_used", count_u32(link.tx.irq.len()))?;
                out.u32(c"ord_used", count_u32(link.tx.orq.len()))?;
            }
            st.ep().cloned()
        };
        // The endpoint's lock is taken before the QP's elsewhere: not under `st`.
        if let Some((local, remote)) = ep.and_then(|e| e.addrs()) {
            // An address that cannot be shown (or no memory to show it) is left out.
            if let (Some(l), Some(r)) = (addr_string(&local), addr_string(&remote)) {
                out.str(c"laddr", &l)?;
                out.str(c"raddr", &r)?;
            }
        }
        let mut counts = [0u64; crate::stats::COUNT];
        crate::stats::add_live(&mut counts, core.stats());
        for (name, v) in crate::stats::NAMES.iter().zip(counts).take(5) {
            out.u64(name, v)?;
        }
        Ok(())
    }

    pub(crate) fn query(&self) -> QpQuery {
        let st = self.core.st.lock();
        let (ird, ord) = st
            .link
            .as_ref()
            .map_or((0, 0), |l| (l.params.ird, l.params.ord));
        QpQuery {
            state: qp_state_of(st.state.to_verbs()),
            cap: QpCap {
                max_send_wr: self.core.sq.entries,
                max_recv_wr: self.core.rq.as_ref().map_or(0, |r| r.entries),
                max_send_sge: self.core.sq_max_sges,
                max_recv_sge: self.core.rq_max_sges,
                max_inline_data: MAX_INLINE as u32,
            },
            max_rd_atomic: u8::try_from(ord).unwrap_or(u8::MAX),
            max_dest_rd_atomic: u8::try_from(ird).unwrap_or(u8::MAX),
            // Reported as constant, as by the C siw.
            access_flags: AccessFlags::from(Access::LocalWrite)
                | Access::RemoteWrite
                | Access::RemoteRead,
        }
    }

    /// The SQ doorbell (`siw_post_send()` without work requests): in RTS, send what the
    /// send queue holds (a process's call sends itself, see `Ep::send_now`); in ERROR
    /// complete what was posted with flush errors (the C siw leaves it in the queue,
    /// uncompleted); in any other state the QP is not connected.
    fn doorbell(&self, process: bool) -> Result {
        // In RTS the endpoint comes from `posting`, as a kernel consumer's post finds it,
        // without the state lock: owning it costs a mutex and a spinlock round with bottom
        // halves off and on again, and `send_now` owns it anyway. The fence pairs with
        // `set_state`'s, as in `posted`: either the flush of a move to ERROR sees the
        // element just published, or this sees the new state (and takes the lock below).
        // A QP that leaves RTS meanwhile has no connection left for `send_now` to send
        // on; the element stays queued until that flush completes it.
        fence(Ordering::SeqCst);
        if self.core.state_now() == State::Rts {
            let p = self.core.posting.lock();
            if let Some(ep) = p.ep.as_ref() {
                if !process {
                    // As in `posted`: the clone `kick` queues (or drops) is never the last,
                    // whatever context a kernel consumer rings from.
                    ep.kick();
                    return Ok(());
                }
                // A process sends from its system call, where sending may sleep: not
                // under the spinlock, and the clone may be the last reference.
                let ep = ep.clone();
                drop(p);
                ep.send_now();
                return Ok(());
            }
        }
        let ep = {
            let mut st = self.core.st.lock();
            match st.state {
                State::Error => {
                    self.core.flush_sq(&mut st);
                    return Ok(());
                }
                State::Rts if st.peer_left => {
                    self.core.send_after_peer_left(&mut st);
                    return Ok(());
                }
                State::Rts => st.ep.clone(),
                _ => return Err(ENOTCONN),
            }
        };
        match ep {
            // A process rings from its system call, where sending may sleep. A kernel
            // consumer's (unusual) empty list kicks the work, as its posts do.
            Some(ep) if process => ep.send_now(),
            Some(ep) => ep.kick(),
            None => {}
        }
        Ok(())
    }

    /// `post_send`. A process posts into its mapped send queue and calls with no requests
    /// to ring the doorbell; a kernel consumer posts a list, which goes into the same queue
    /// (the C siw's `siw_post_send()`). What was posted before a failure stays posted.
    pub(crate) fn post_send(&self, wrs: &mut SendWrs<'_>) -> Result {
        if wrs.is_empty() {
            return self.doorbell(!wrs.is_kernel());
        }
        if !wrs.is_kernel() {
            return Err(EINVAL);
        }
        let r = wrs.try_for_each(|w| self.post_one_send(&w?));
        self.posted(true);
        r
    }

    /// `post_recv`: a kernel consumer's list into the receive queue (a process posts into
    /// its mapped queue).
    pub(crate) fn post_recv(&self, wrs: &mut RecvWrs<'_>) -> Result {
        if !wrs.is_kernel() {
            return if wrs.is_empty() { Ok(()) } else { Err(EINVAL) };
        }
        let r = wrs.try_for_each(|w| self.post_one_recv(&w?));
        self.posted(false);
        r
    }

    /// A kernel consumer's send work request, into the send queue as the element a process
    /// would write. In RTS the connection's work sends it; in ERROR it completes flushed;
    /// before RTS there is no connection to send on (`ENOTCONN`); a full queue is `ENOMEM`.
    fn post_one_send(&self, w: &SendWr<'_>) -> Result {
        let inline = if w.flags.contains(SendFlag::Inline)
            && matches!(
                w.op,
                SendOp::Send
                    | SendOp::SendWithInv { .. }
                    | SendOp::RdmaWrite { .. }
                    | SendOp::RdmaWriteWithImm { .. }
            ) {
            let mut data = [0u8; MAX_INLINE];
            let len = w.gather_inline(&mut data)?;
            Some((data, u32::try_from(len).map_err(|_| EINVAL)?))
        } else {
            None
        };
        let core = &*self.core;
        if !matches!(core.state_now(), State::Rts | State::Error) {
            return Err(ENOTCONN);
        }
        if w.sge.len() > core.sq_max_sges as usize {
            return Err(EINVAL);
        }
        let (opcode, rkey, raddr) = match w.op {
            SendOp::RdmaWrite { remote_addr, rkey } => (op::WRITE, rkey, remote_addr),
            SendOp::RdmaRead { remote_addr, rkey } => (op::READ, rkey, remote_addr),
            SendOp::Send => (op::SEND, 0, 0),
            SendOp::SendWithInv { rkey } => (op::SEND_REMOTE_INV, rkey, 0),
            SendOp::RdmaReadWithInv { remote_addr, rkey } => {
                (op::READ_LOCAL_INV, rkey, remote_addr)
            }
            SendOp::LocalInv { rkey } => (op::INVAL_STAG, rkey, 0),
            SendOp::RegMr { .. } => (op::REG_MR, 0, 0),
            SendOp::RdmaWriteWithImm {
                remote_addr, rkey, ..
            } => (op::WRITE_WITH_IMM, rkey, remote_addr),
            SendOp::Atomic(a) => (
                if a.cmp_swap {
                    op::COMP_AND_SWAP
                } else {
                    op::FETCH_AND_ADD
                },
                a.rkey,
                a.remote_addr,
            ),
            SendOp::Other(_) => return Err(EINVAL),
        };
        // RFC 7306: only on a connection whose peer agreed to it (never to the C siw, which
        // would end the connection with a Terminate), with the room these elements need.
        let imm = match w.op {
            SendOp::RdmaWriteWithImm { imm, .. } => {
                let room = match &inline {
                    Some((_, len)) => *len as usize <= IMM_MAX_INLINE,
                    None => w.sge.len() < MAX_SGE as usize,
                };
                if !room {
                    return Err(EINVAL);
                }
                Some(imm)
            }
            _ => None,
        };
        if matches!(w.op, SendOp::Atomic(_)) && (w.sge.len() != 1 || inline.is_some()) {
            return Err(EINVAL);
        }
        if (imm.is_some() || matches!(w.op, SendOp::Atomic(_)))
            && core.posting.lock().rfc7306 == Some(false)
        {
            return Err(EOPNOTSUPP);
        }
        let mut flags = 0u16;
        for (ib, siw) in [
            (SendFlag::Signaled, wqe::SIGNALLED),
            (SendFlag::Solicited, wqe::SOLICITED),
            (SendFlag::Fence, wqe::READ_FENCE),
        ] {
            if w.flags.contains(ib) {
                flags |= siw;
            }
        }
        let mut sqe = Sqe {
            id: w.id,
            num_sge: u8::try_from(w.sge.len()).map_err(|_| EINVAL)?,
            opcode,
            rkey,
            raddr,
            sge: queue_sges(w.sge),
            ..Default::default()
        };
        if let SendOp::RegMr {
            mr,
            key,
            access,
            iova,
            length,
        } = w.op
        {
            RegMrWqe {
                mr,
                key,
                access: access.bits(),
                iova,
                length,
            }
            .encode(&mut sqe);
        }
        if let SendOp::Atomic(a) = w.op {
            AtomicWqe {
                add_swap: a.add_swap,
                add_swap_mask: a.add_swap_mask,
                compare: a.compare,
                compare_mask: a.compare_mask,
            }
            .encode(&mut sqe);
        }
        let inline = inline.map(|(data, len)| {
            sqe.num_sge = 1;
            sqe.sge = Default::default();
            sqe.sge[0].length = len;
            flags |= wqe::INLINE;
            data
        });
        let mut p = core.posting.lock();
        let off = core.sq.offset(p.sq, SQE_SIZE);
        post_wqe(&core.sq.mem, off, flags, || {
            core.sq.mem.write(off, sqe)?;
            if let Some(d) = inline {
                core.sq.mem.write(off.saturating_add(SQE_INLINE), d)?;
            }
            match imm {
                Some(i) => core.sq.mem.write(off.saturating_add(SQE_IMM), i),
                None => Ok(()),
            }
        })?;
        p.sq = p.sq.wrapping_add(1);
        Ok(())
    }

    /// A kernel consumer's receive work request, into the receive queue. Not with an SRQ
    /// (the consumer posts to that), nor while the connection closes.
    fn post_one_recv(&self, w: &RecvWr<'_>) -> Result {
        let core = &*self.core;
        let rq = core.rq.as_ref().ok_or(EINVAL)?;
        if matches!(core.state_now(), State::Closing | State::Terminate)
            || w.sge.len() > core.rq_max_sges as usize
        {
            return Err(EINVAL);
        }
        let mut p = core.posting.lock();
        post_rqe(&rq.mem, rq.offset(p.rq, RQE_SIZE), w)?;
        p.rq = p.rq.wrapping_add(1);
        Ok(())
    }

    /// A kernel consumer's list was posted: in RTS kick the connection to send it, in
    /// ERROR let the QP's work flush it.
    fn posted(&self, send: bool) {
        // Pairs with `set_state`'s fence: either the flush of a state change sees what
        // was just published, or this sees the new state.
        fence(Ordering::SeqCst);
        match self.core.state_now() {
            State::Error => {
                if let Some(q) = workqueue::queue() {
                    // Already queued: that run will see these too.
                    let _ = q.enqueue::<_, 0>(self.core.clone());
                }
            }
            State::Rts if send => {
                // A connection leaving RTS meanwhile clears `ep`, and its flush sees what
                // was published (the fences above).
                if let Some(ep) = self.core.posting.lock().ep.as_ref() {
                    // The clone `kick` queues (or drops) is never the last: `ep` holds one.
                    ep.kick();
                } else if let Some(q) = workqueue::queue() {
                    // No connection: one still to be made (the post waits for it), or the
                    // peer left (the QP's work moves it to ERROR).
                    let _ = q.enqueue::<_, 0>(self.core.clone());
                }
            }
            _ => {}
        }
    }

    /// `destroy_qp`: to ERROR (which closes the connection and flushes), out of the table,
    /// then wait until the connection manager has dropped its references.
    pub(crate) fn destroy(&self) {
        // No async event for a QP being destroyed: its consumer is letting go of it (and
        // the flush below would report Last WQE Reached for a QP on an SRQ).
        self.core.st.lock().handle = None;
        let _ = self.core.modify(
            None,
            &QpModify {
                state: Some(VerbsQpState::Err),
                ..Default::default()
            },
        );
        // A QP whose connection ended without `link_down` (already in ERROR) still holds
        // its counts: move them before the QP leaves the table readers walk.
        {
            let _st = self.core.st.lock();
            self.tables.retire(&self.core);
        }
        drop(self.tables.remove_qp(self.core.qpn));
        self.core.timers_cancel();
        self.core.cm_put();
        self.core.released.wait_for_completion();
        let mut st = self.core.st.lock();
        st.cqs = None;
        st.handle = None;
        st.ep = None;
        st.link = None;
    }
}

impl QpCore {
    /// `iw_get_qp` hands the QP out (under the table's lock, so destroy has not dropped
    /// its own reference yet): a reference is taken now, not in the `iw_add_ref` that
    /// follows, which a destroy between the two would otherwise make a use after free
    /// (`iw_cm_connect()` and `iw_cm_accept()` call that at once, under the same lock).
    pub(crate) fn cm_hand_out(&self) {
        self.cm_refs.fetch_add(1, Ordering::AcqRel);
        self.handed_out.fetch_add(1, Ordering::AcqRel);
    }

    /// The connection manager takes a reference: the one `iw_get_qp` took, if any.
    pub(crate) fn cm_get(&self) {
        let taken = self
            .handed_out
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        if taken.is_err() {
            self.cm_refs.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// A reference of the connection manager (or the QP's own) goes away.
    pub(crate) fn cm_put(&self) {
        if self.cm_refs.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.released.complete_all();
        }
    }

    /// `modify_qp` (`dev` is the QP's device; `None` when destroying). Closing the connection
    /// happens outside the state lock (the connection's work takes the endpoint lock first,
    /// then this one).
    ///
    /// RTR with an address vector starts a connection made by `modify_qp` (see
    /// [`crate::proto::gidconn`]): checked, and its endpoint or listeners made, before the
    /// state changes, so a refusal leaves the QP as it was.
    pub(crate) fn modify(self: &Arc<Self>, dev: Option<&Device<Siw>>, m: &QpModify) -> Result {
        let plan = match (m.state, &m.av, dev) {
            (Some(VerbsQpState::Rtr), Some(av), Some(dev)) => Some(self.av_plan(dev, av, m)?),
            _ => None,
        };
        let mut started = None;
        let mut armed = false;
        let mut unused = None;
        let had_av;
        let ep = {
            let mut st = self.st.lock();
            had_av = st.av.is_some();
            // QP access flags (`m.access_flags`) are accepted and not enforced, as by the C
            // siw: the region's rights decide (see `rx.rs`).
            let Some(target) = m.state else {
                st.retry.take(m);
                st.psn.take(m);
                drop(st);
                Self::abandon(plan);
                return Ok(());
            };
            let ctx = sm::Context {
                // Only the connection manager brings a socket and MPA parameters, through
                // `connected()`, never through `modify_qp`.
                has_llp: false,
                has_mpa: false,
                tx_idle: st.link.as_ref().is_none_or(|l| l.tx.idle()) && st.unanswered.is_empty(),
                has_av: plan.is_some(),
                av_conn: st.av.is_some(),
            };
            let t = match sm::modify(st.state, State::from_verbs(verbs_state_of(target)), ctx) {
                Ok(t) => t,
                Err(e) => {
                    drop(st);
                    Self::abandon(plan);
                    return Err(match e {
                        sm::Refused::NotConnected => EINVAL,
                        sm::Refused::Undefined => ECONNABORTED,
                    });
                }
            };
            let was = st.state;
            self.set_state(&mut st, t.next);
            st.retry.take(m);
            st.psn.take(m);
            if t.flush_rq {
                self.flush_rq(&mut st);
            }
            if t.flush_sq {
                self.flush_sq(&mut st);
            }
            match plan {
                Some(p) if t.connect => {
                    st.av = Some(AvConn {
                        remote: p.remote,
                        initiator: p.ep.is_some(),
                        ird: p.ird,
                        up: false,
                        started: false,
                        waiting: p.waiting,
                        deadline: Instant::now() + Delta::from_millis(i64::from(av_timeout_ms())),
                    });
                    if let Some(ep) = &p.ep {
                        st.ep = Some(ep.clone());
                    }
                    armed = true;
                }
                other => unused = other,
            }
            // The initiator connects once in RTS: its request carries its `sq_psn`.
            if was == State::Rtr && t.next == State::Rts {
                if let Some(a) = st.av.as_mut().filter(|a| a.initiator && !a.started) {
                    a.started = true;
                    started = st.ep.clone();
                }
            }
            if t.drop_conn || t.release_cep || t.next == State::Error {
                self.drop_link(&mut st);
                st.ep.take()
            } else {
                None
            }
        };
        if let Some(ep) = ep {
            ep.close_from_qp();
        }
        Self::abandon(unused);
        if had_av && self.st.lock().av.is_none() {
            self.av_timer_cancel();
        }
        if armed {
            self.arm_av_timer(av_timeout_ms());
        }
        if let Some(ep) = started {
            cm::av_start(&ep, self.clone());
        }
        Ok(())
    }

    /// Checks an RTR's address vector and makes what its connection needs: the initiator's
    /// endpoint, or the responder's hold on the device's listeners. Only a process in the
    /// netdev's network namespace makes or takes such connections (`ENETUNREACH` for one
    /// elsewhere, which the device is visible to when devices are shared among namespaces).
    fn av_plan(&self, dev: &Device<Siw>, av: &Av, m: &QpModify) -> Result<AvPlan> {
        if !cm::av_enabled() {
            return Err(EOPNOTSUPP);
        }
        if !dev.with_netdev(|nd| nd.in_current_netns())? {
            return Err(ENETUNREACH);
        }
        // iWARP peers are IP hosts: a global route with IP GIDs at both ends, and not the
        // MAC GID in entry 0 (the core has already refused an empty entry).
        let grh = av.grh.ok_or(EINVAL)?;
        let dest = m.dest_qpn.ok_or(EINVAL)?;
        let (Some(l), Some(r)) = (gidconn::ip_of_gid(&grh.sgid), gidconn::ip_of_gid(&grh.dgid))
        else {
            return Err(EINVAL);
        };
        if grh.sgid_index == 0
            || matches!((l, r), (gidconn::IpAddr::V4(_), gidconn::IpAddr::V6(_)))
            || matches!((l, r), (gidconn::IpAddr::V6(_), gidconn::IpAddr::V4(_)))
        {
            return Err(EINVAL);
        }
        let local = End {
            gid: grh.sgid,
            qpn: self.qpn,
        };
        let remote = End {
            gid: grh.dgid,
            qpn: dest,
        };
        let initiator = gidconn::initiator(&local, &remote).ok_or(EINVAL)?;
        let ird = m
            .max_dest_rd_atomic
            .map_or(crate::device::MAX_IRD, u32::from);
        let ird = u16::try_from(ird).unwrap_or(u16::MAX);
        if initiator {
            let ep = Some(cm::av_prepare(dev, local, remote, ird)?);
            return Ok(AvPlan {
                remote,
                ird,
                ep,
                waiting: None,
            });
        }
        // The peer connects to the device's listener at `sgid`.
        let dref = dev.get_ref().ok_or(ENODEV)?;
        let waiting = Some(Gids::wait_at(&dev.data().gids, dref, &grh.sgid)?);
        Ok(AvPlan {
            remote,
            ird,
            ep: None,
            waiting,
        })
    }

    /// Drops what [`Self::av_plan`] made, unused.
    fn abandon(plan: Option<AvPlan>) {
        if let Some(ep) = plan.and_then(|p| p.ep) {
            cm::av_abandon(&ep);
        }
    }

    /// Arms the deadline of a connection made by `modify_qp`.
    fn arm_av_timer(self: &Arc<Self>, ms: u32) {
        if let Some(q) = workqueue::queue() {
            workqueue::timer_armed();
            if q.enqueue_delayed::<_, 1>(self.clone(), msecs_to_jiffies(ms))
                .is_err()
            {
                workqueue::timer_done();
            }
        }
    }

    /// Arms the retry time of send work that found the peer gone, `ms` from now, under the
    /// state lock: a timer of an earlier deadline (cleared since, when the QP left RTS)
    /// that is still pending is cancelled first, else this arming would be lost.
    fn arm_retry_timer(self: &Arc<Self>, ms: u32) {
        workqueue::cancel_delayed::<_, 3>(self);
        if let Some(q) = workqueue::queue() {
            workqueue::timer_armed();
            if q.enqueue_delayed::<_, 3>(self.clone(), msecs_to_jiffies(ms))
                .is_err()
            {
                workqueue::timer_done();
            }
        }
    }

    /// Cancels the deadline of a connection made by `modify_qp` (it came up, or ended).
    pub(crate) fn av_timer_cancel(self: &Arc<Self>) {
        workqueue::cancel_delayed::<_, 1>(self);
    }

    /// Cancels the timers: the connection ended, or the QP goes.
    pub(crate) fn timers_cancel(self: &Arc<Self>) {
        workqueue::cancel_delayed::<_, 1>(self);
        workqueue::cancel_delayed::<_, 2>(self);
        workqueue::cancel_delayed::<_, 3>(self);
    }

    /// Arms the Read watchdog's next look, `peer_timeout_ms` from now (none when 0).
    fn arm_watchdog(self: &Arc<Self>) {
        let ms = cm::peer_timeout_ms();
        if ms == 0 {
            return;
        }
        if let Some(q) = workqueue::queue() {
            workqueue::timer_armed();
            if q.enqueue_delayed::<_, 2>(self.clone(), msecs_to_jiffies(ms))
                .is_err()
            {
                workqueue::timer_done();
            }
        }
    }

    /// The Read watchdog: a peer that keeps its TCP end alive (so neither
    /// `TCP_USER_TIMEOUT` nor keepalives end the connection) but leaves our RDMA Read
    /// Requests unanswered would hold them, and the work queued behind them, for ever. A
    /// Read Request outstanding, and acknowledged by the peer's TCP, at one look, and still
    /// outstanding at the next, `peer_timeout_ms` later, with not one byte received in
    /// between, has had no answer for that long: the QP goes to ERROR (flushing both
    /// queues, the Read first) with a fatal event, and the connection closes.
    fn read_watchdog(self: &Arc<Self>) {
        // The socket is the endpoint's, whose lock comes before the state lock.
        let ep = self.st.lock().ep.clone();
        let acked = ep.is_some_and(|e| e.all_acked());
        let ep = {
            let mut st = self.st.lock();
            let qpn = self.qpn;
            let Some(link) = st.link.as_mut() else {
                return;
            };
            let bytes = link.rx.bytes();
            let reads = !link.tx.orq.is_empty();
            if !link.watch.look(bytes, reads, acked) {
                // Armed under the state lock: a close or destroy (which drops the link
                // under it, then cancels) cannot slip in between and miss this timer.
                self.arm_watchdog();
                return;
            }
            log::warning!(
                self.tables.name(),
                "QP {}: RDMA Read unanswered for {} ms, with the connection alive: ending it\n",
                qpn,
                cm::peer_timeout_ms()
            );
            self.give_up(&mut st)
        };
        if let Some(ep) = ep {
            ep.close_from_qp();
        }
    }

    /// A timer gives the connection up: ERROR (both queues flushed) with a fatal event;
    /// returns the endpoint to close once the state lock is dropped.
    fn give_up(&self, st: &mut QpState) -> Option<Arc<Ep>> {
        self.set_state(st, State::Error);
        self.drop_link(st);
        self.flush_rq(st);
        self.flush_sq(st);
        st.fatal_event();
        st.ep.take()
    }

    /// The deadline passed: a connection made by `modify_qp` still not up moves the QP to
    /// ERROR (flushing both queues) with a fatal event.
    fn av_expired(self: &Arc<Self>) {
        let ep = {
            let mut st = self.st.lock();
            let Some(a) = st.av.as_ref().filter(|a| !a.up) else {
                return;
            };
            // The timer of an earlier attempt, not cancelled in time: wait for this one's.
            let left = (a.deadline - Instant::now()).as_millis_ceil();
            if left > 0 {
                // Under the state lock, as in `read_watchdog`.
                self.arm_av_timer(u32::try_from(left).unwrap_or(u32::MAX));
                return;
            }
            log::debug!(
                self.tables.name(),
                "QP {} not connected in time\n",
                self.qpn
            );
            self.give_up(&mut st)
        };
        if let Some(ep) = ep {
            ep.close_from_qp();
        }
    }

    /// What this QP waits for, as the responder of a connection made by `modify_qp`, and the
    /// RDMA Reads it serves at a time. Only in RTS: the accept carries its `sq_psn`.
    pub(crate) fn av_waits(&self, st: &QpState) -> (Waits, u16) {
        match &st.av {
            Some(a) if st.state == State::Rts && !a.up && !a.initiator && st.ep.is_none() => (
                Waits::For {
                    peer: a.remote,
                    rq_psn: st.psn.rq,
                    sq_psn: st.psn.sq,
                },
                a.ird,
            ),
            _ => (Waits::Nothing, 0),
        }
    }

    /// The PSNs of an initiator of a connection made by `modify_qp`: its `sq_psn` for the
    /// request, its `rq_psn` to check the accept with.
    pub(crate) fn av_psns(&self, st: &QpState) -> (u32, u32) {
        (st.psn.sq, st.psn.rq)
    }

    /// Whether `ep` is the endpoint this QP's connection made by `modify_qp` still waits on.
    pub(crate) fn av_waits_on(&self, st: &QpState, ep: &Arc<Ep>) -> bool {
        st.av.as_ref().is_some_and(|a| !a.up) && st.ep.as_ref().is_some_and(|e| Arc::ptr_eq(e, ep))
    }

    /// A connection made by `modify_qp` is up, through `ep`: the data path starts, in the
    /// state the QP is in (RTR or RTS), and the deadline is off.
    pub(crate) fn av_connected(
        self: &Arc<Self>,
        st: &mut QpState,
        ep: Arc<Ep>,
        params: LinkParams,
    ) -> Result {
        if st.av.as_ref().is_none_or(|a| a.up) {
            return Err(EINVAL);
        }
        self.connected(st, ep, params)?;
        if let Some(a) = st.av.as_mut() {
            a.up = true;
            // No longer waiting: the listener closes unless another QP waits there.
            a.waiting = None;
        }
        self.av_timer_cancel();
        Ok(())
    }

    /// Moves to state `s`. Posting reads the state without the lock: the fence orders the
    /// new state before this thread's next look at the queues (a flush), against a poster's
    /// fence between publishing an element and reading the state (`posted`).
    fn set_state(&self, st: &mut QpState, s: State) {
        // A QP on an SRQ takes no receive from it once in ERROR (receives are taken under
        // this lock, and only while connected): say so, once (IB's Last WQE Reached, which
        // `ib_drain_qp()` waits for; the C siw never sends it, and a kernel consumer's
        // drain of such a QP waits 60 s).
        if s == State::Error && st.state != State::Error && self.srq().is_some() {
            if let Some(h) = st.handle() {
                h.last_wqe_event();
            }
        }
        st.state = s;
        // Only RTS keeps it (a move from RTS to RTS among them).
        st.peer_left &= s == State::Rts;
        if !st.peer_left {
            st.retry_deadline = None;
        }
        let ep = if s == State::Rts { st.ep.clone() } else { None };
        // Dropped after the spinlock, and never the last reference: `st.ep` still holds
        // the endpoint while the state leaves RTS.
        let rfc7306 = ep.as_ref().and(st.link()).map(|l| l.params.rfc7306);
        let mut p = self.posting.lock();
        p.rfc7306 = rfc7306;
        let _old = core::mem::replace(&mut p.ep, ep);
        drop(p);
        self.state_now.store(state_code(s), Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// The state as last set, read without the state lock.
    fn state_now(&self) -> State {
        match self.state_now.load(Ordering::Relaxed) {
            0 => State::Idle,
            1 => State::Rtr,
            2 => State::Rts,
            3 => State::Closing,
            4 => State::Terminate,
            _ => State::Error,
        }
    }

    /// The connection is up: RTS with `params` (a connection made by `modify_qp` keeps the
    /// state the QP is in, RTR or RTS).
    pub(crate) fn connected(
        self: &Arc<Self>,
        st: &mut QpState,
        ep: Arc<Ep>,
        params: LinkParams,
    ) -> Result {
        let next = match (st.state, st.av.is_some()) {
            (State::Idle | State::Rtr, false) => State::Rts,
            (s @ (State::Rtr | State::Rts), true) => s,
            _ => return Err(EINVAL),
        };
        let link = KBox::new(
            Link {
                params,
                rx: RxState::new(params)?,
                tx: TxState::new(&params)?,
                watch: ReadWatch::default(),
            },
            GFP_KERNEL,
        )?;
        st.link = Some(link);
        st.ep = Some(ep);
        self.set_state(st, next);
        self.arm_watchdog();
        self.tables.count(Counter::ConnectionsEstablished);
        Ok(())
    }

    /// The peer of a connection made by `modify_qp` went away (its QP destroyed or moved to
    /// ERROR: its FIN, or its reset when our data found its socket closed) while this QP was
    /// in RTS and between messages on receive. Then the QP stays in RTS with its receives
    /// posted, as an RC QP on InfiniBand does when its peer goes away, and its send work
    /// (the element being sent, Read Requests unanswered, elements posted or posted later)
    /// fails after the QP's retry time, as unacknowledged work does there (see
    /// [`QpCore::send_after_peer_left`]). Failing it at once would put error completions on
    /// the CQ right behind the last message, and an application written for InfiniBand that
    /// has all it waited for fails on them: `ibv_rc_pingpong` polls two completions at a
    /// time, and `ibv_srq_pingpong` posts a Send more than its peer needs while several QPs
    /// finish together. Returns `false`, doing nothing, if the QP does not qualify (a
    /// message partly received, or a Terminate due); the caller then takes the link down.
    pub(crate) fn peer_left(self: &Arc<Self>, st: &mut QpState) -> bool {
        let Some(l) = st
            .link()
            .filter(|_| st.state == State::Rts && st.av.is_some())
        else {
            return false;
        };
        let (rx, control) = (l.rx.between_messages(), l.tx.control_due());
        if !rx || control {
            log::debug!(
                self.tables.name(),
                "QP {}: the peer left with work in progress (receive idle {}, control {})\n",
                self.qpn,
                rx,
                control
            );
            return false;
        }
        // `drop_link` without its flush of the send queue: its elements wait for the
        // retry time, and a process may be writing one right now (it finds the state
        // lock). An unsignalled element being sent ends unreported, as its success would.
        if let Some(l) = st.link.as_mut() {
            st.unanswered = l.tx.take_pending();
        }
        log::debug!(
            self.tables.name(),
            "QP {}: the peer left; RTS until send work ({} taken)\n",
            self.qpn,
            st.unanswered.len()
        );
        st.av = None;
        if st.link.take().is_some() {
            self.tables.retire(self);
        }
        st.ep = None;
        // `posting.ep` goes too: a post finds no connection and comes to the state lock.
        // (Not its last reference: the endpoint closing calls this.)
        self.set_state(st, State::Rts);
        st.peer_left = true;
        // The elements taken, those posted and not yet taken, and any a post that still
        // found the connection wrote before it looked: their retry time starts.
        self.send_after_peer_left(st);
        true
    }

    /// Send work posted to a QP whose peer left ([`QpCore::peer_left`]): it cannot be
    /// delivered, and fails once the QP's retry time has passed ([`QpCore::retry_expired`]),
    /// not at once: an application that finished meanwhile, its peer having had all it
    /// needed, never sees it fail, as on InfiniBand (`ibv_srq_pingpong` posts such a Send
    /// when several QPs finish together). With a `timeout` of 0 it waits for ever.
    fn send_after_peer_left(self: &Arc<Self>, st: &mut QpState) {
        // `set_state` clears the mark, and the deadline, outside RTS.
        let waiting = !st.unanswered.is_empty() || self.sq_waiting(st);
        if !st.peer_left || st.retry_deadline.is_some() || !waiting {
            return;
        }
        let Some(ms) = gidconn::retry_time_ms(st.retry.timeout, st.retry.retry_cnt) else {
            return;
        };
        log::debug!(
            self.tables.name(),
            "QP {}: send work after the peer left: fails in {} ms\n",
            self.qpn,
            ms
        );
        st.retry_deadline = Some(Instant::now() + Delta::from_millis(i64::from(ms)));
        self.arm_retry_timer(ms);
    }

    /// The retry time of send work that found the peer gone has passed: the oldest element
    /// fails (`IB_WC_GENERAL_ERR`: the siw ABI has no "retry exceeded"), the QP goes to
    /// ERROR and the rest of both queues is flushed. No async event: as when the peer's
    /// close ends a QP with work in progress, the completions say it.
    fn retry_expired(self: &Arc<Self>) {
        let mut st = self.st.lock();
        let Some(deadline) = st.retry_deadline else {
            return;
        };
        let left = (deadline - Instant::now()).as_millis_ceil();
        if left > 0 {
            // The timer of an earlier deadline, not cancelled in time.
            self.arm_retry_timer(u32::try_from(left).unwrap_or(u32::MAX));
            return;
        }
        log::debug!(
            self.tables.name(),
            "QP {}: the peer left; send work failed after its retry time\n",
            self.qpn
        );
        if let Ok(taken) = st.unanswered.remove(0) {
            st.complete_taken(taken, wc::GENERAL_ERR);
        } else {
            self.complete_first_sq(&mut st, wc::GENERAL_ERR);
        }
        self.link_down(&mut st);
    }

    /// The connection failed or closed: ERROR, flushing both queues.
    pub(crate) fn link_down(&self, st: &mut QpState) {
        self.set_state(st, State::Error);
        self.drop_link(st);
        st.ep = None;
        self.flush_rq(st);
        self.flush_sq(st);
    }

    /// Ends the data path: the receive in progress completes (with its error, or flushed),
    /// the send work in progress is flushed.
    fn drop_link(&self, st: &mut QpState) {
        // A connection made by `modify_qp` ends with the link (its listeners' hold too).
        st.av = None;
        self.flush_sq(st);
        let Some(mut link) = st.link.take() else {
            return;
        };
        // Nothing counts on this QP without a link: its counts are final.
        self.tables.retire(self);
        if let Some((id, status)) = link.rx.take_recv() {
            let c = Completion {
                id,
                opcode: op::RECEIVE,
                status: status.unwrap_or(wc::WR_FLUSH_ERR),
                bytes: 0,
                qp_num: st.ids.qpn,
                qp_handle: st.ids.handle,
                solicited: false,
                invalidated: None,
                imm: None,
            };
            let _ = st.complete(false, &c);
        }
    }

    /// Completes every posted receive with a flush error (`siw_rq_flush()`), stopping early
    /// if the CQ overflows, as the C siw does. One pass goes round the queue once at most,
    /// however fast a process refills it.
    pub(crate) fn flush_rq(&self, st: &mut QpState) {
        let Some(rq) = &self.rq else {
            return;
        };
        for _ in 0..rq.entries {
            let off = rq.offset(st.rq_get, RQE_SIZE);
            let Some(flags) = rq.mem.atomic_u16(off.saturating_add(WQE_FLAGS)) else {
                break;
            };
            if flags.load(Ordering::Acquire) == 0 {
                break;
            }
            let c = st.flushed(rq.mem.read::<u64>(off).unwrap_or(0), op::RECEIVE);
            if st.complete(false, &c).is_err() {
                break;
            }
            // Recycle the slot for the producer.
            flags.store(0, Ordering::Release);
            st.rq_get = st.rq_get.wrapping_add(1);
        }
    }

    /// Completes the send work in progress and every posted send with a flush error. One
    /// pass goes round the queue once at most, however fast a process refills it.
    pub(crate) fn flush_sq(&self, st: &mut QpState) {
        let pending = st.link.as_mut().map(|l| l.tx.take_pending());
        let unanswered = core::mem::take(&mut st.unanswered);
        for taken in Iterator::chain(unanswered.into_iter(), pending.into_iter().flatten()) {
            st.complete_taken(taken, wc::WR_FLUSH_ERR);
        }
        for _ in 0..self.sq.entries {
            if !self.complete_first_sq(st, wc::WR_FLUSH_ERR) {
                break;
            }
        }
    }

    /// Completes the oldest posted send element with `status` and takes it off the ring;
    /// `false` if there is none (or the CQ is full).
    fn complete_first_sq(&self, st: &mut QpState, status: u16) -> bool {
        let off = self.sq.offset(st.sq_get, SQE_SIZE);
        let Some(flags) = self.sq.mem.atomic_u16(off.saturating_add(WQE_FLAGS)) else {
            return false;
        };
        if flags.load(Ordering::Acquire) & wqe::VALID == 0 {
            return false;
        }
        let sqe: Sqe = self.sq.mem.read(off).unwrap_or_default();
        let c = Completion {
            status,
            ..st.flushed(sqe.id, sqe.opcode)
        };
        if st.complete(true, &c).is_err() {
            return false;
        }
        flags.store(0, Ordering::Release);
        st.sq_get = st.sq_get.wrapping_add(1);
        true
    }
}

/// A work completion for a send queue element.
pub(crate) fn sq_completion(
    st: &QpState,
    id: u64,
    opcode: u8,
    status: u16,
    bytes: u32,
) -> Completion {
    Completion {
        id,
        opcode,
        status,
        bytes,
        qp_num: st.ids.qpn,
        qp_handle: st.ids.handle,
        solicited: false,
        invalidated: None,
        imm: None,
    }
}

/// Status of a successful completion.
pub(crate) const OK: u16 = wc::SUCCESS;

/// How many elements of `ring` are posted and not yet taken (their flags say VALID).
fn posted(ring: &Ring, elem: usize) -> u32 {
    (0..ring.entries)
        .filter(|&i| {
            ring.mem
                .atomic_u16(ring.offset(i, elem).saturating_add(WQE_FLAGS))
                .is_some_and(|f| f.load(Ordering::Relaxed) & wqe::VALID != 0)
        })
        .count()
        .try_into()
        .unwrap_or(u32::MAX)
}

fn count_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `a.b.c.d:port`, or `[x:x:x:x:x:x:x:x]:port` for IPv6.
fn addr_string(a: &SockAddr) -> Option<CString> {
    let ip = a.ip16()?;
    let port = a.port();
    if ip[..12] == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] {
        return CString::try_from_fmt(fmt!("{}.{}.{}.{}:{}", ip[12], ip[13], ip[14], ip[15], port))
            .ok();
    }
    let g = |i: usize| u16::from_be_bytes([ip[2 * i], ip[2 * i + 1]]);
    CString::try_from_fmt(fmt!(
        "[{:x}:{:x}:{:x}:{:x}:{:x}:{:x}:{:x}:{:x}]:{}",
        g(0),
        g(1),
        g(2),
        g(3),
        g(4),
        g(5),
        g(6),
        g(7),
        port
    ))
    .ok()
}
