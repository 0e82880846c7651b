// SPDX-License-Identifier: GPL-2.0

//! Connection endpoints: listeners, and connections from TCP connect through the MPA
//! exchange to the data path and teardown.
//!
//! An [`Ep`] owns one socket and runs as work on siw_rs's workqueue whenever its socket
//! has news (data, write space, state change) or a user rang the doorbell. Lock order:
//! an endpoint's `inner`, then its QP's state, then (for listeners) nothing else.

use crate::{
    device::{Siw, SiwDev},
    glue::{
        iov::IoVec,
        net::tcp::{SkCtx, SockEvent, SockEvents, Socket},
        rdma::{
            cm::{CmEvent, CmId, ConnParam, EventData, RequestCookie},
            device::Device,
        },
        workqueue as work,
    },
    proto::mpa::{
        build_request, negotiate_initiator, negotiate_responder, reject_reply, IrdOrd, MpaFrame,
        MpaHeader, MpaPolicy, MpaReader, Reject, RtrSet, IRD_ORD_LEN, MAX_FRAME_LEN, PD_MAX_SIW,
        PD_MAX_ULP,
    },
    qp::{LinkParams, QpCore},
    rx::{self, RxStop},
    table::Tables,
    tx::{self, TxStop},
};
use kernel::{
    impl_has_delayed_work, impl_has_work, new_delayed_work, new_work,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex},
    time::{msecs_to_jiffies, Delta, Instant, Monotonic},
    workqueue::{DelayedWork, Work, WorkItem},
};

/// Where an endpoint is in its life.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// A listener: accepts TCP connections.
    Listen,
    /// Accepted; waiting for the MPA request.
    AwaitRequest,
    /// The request went to the connection manager; waiting for accept or reject.
    Requested,
    /// Connected and the MPA request sent; waiting for the reply.
    AwaitReply,
    /// Responder in peer-to-peer mode: accepted, waiting for the initiator's RTR message
    /// before reporting ESTABLISHED (RFC 6581).
    AwaitRtr,
    /// In the Full Operation Phase.
    Established,
    /// Gone.
    Closed,
}

/// How a connection ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum How {
    /// The QP was moved out of RTS (disconnect, destroy): report CLOSE.
    Local,
    /// The peer closed: report DISCONNECT, then CLOSE.
    Peer,
    /// A protocol or socket error: report CLOSE, and a fatal QP event.
    Error,
}

/// The initiator's MPA request, kept to check the reply against.
struct Sent {
    header: MpaHeader,
    ird_ord: Option<IrdOrd>,
    private_data: KVec<u8>,
}

struct Inner {
    phase: Phase,
    sock: Option<Socket>,
    /// The cm_id events go to (for a connection waiting for accept: none yet).
    cm: Option<CmId>,
    /// The listener that accepted this connection (until accept or reject).
    listener: Option<Arc<Ep>>,
    qp: Option<Arc<QpCore>>,
    mpa: KBox<MpaReader>,
    policy: MpaPolicy,
    sent: Option<Sent>,
    /// An initiator's cm_id still owed its CONNECT_REPLY: the core refused the upcall
    /// (out of memory) and the timer retries it. See [`Ep::report_reply`].
    reply_owed: Option<CmId>,
    /// When a phase that waits for the peer or the ULP ends the endpoint.
    deadline: Option<Instant<Monotonic>>,
}

/// A connection endpoint (listener or connection).
#[pin_data]
pub(crate) struct Ep {
    sk: SkCtx,
    tables: Arc<Tables>,
    /// Names this endpoint's connection request to the connection manager.
    cookie: RequestCookie,
    #[pin]
    work: Work<Ep>,
    /// The MPA exchange's deadline.
    #[pin]
    timeout: DelayedWork<Ep, 1>,
    #[pin]
    inner: Mutex<Inner>,
}

impl_has_work! {
    impl HasWork<Self> for Ep { self.work }
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self, 1> for Ep { self.timeout }
}

/// How long a responder waits for the MPA request (the C siw's `MPAREQ_TIMEOUT`).
const MPA_REQUEST_TIMEOUT_MS: u32 = 5000;
/// How long an initiator waits for the MPA reply (the C siw's `MPAREP_TIMEOUT`).
const MPA_REPLY_TIMEOUT_MS: u32 = 10000;
/// How soon a CONNECT_REPLY the core refused is offered again.
const REPLY_RETRY_MS: u32 = 100;
/// How long a connection request waits for the ULP's accept or reject. The core may drop
/// a request without telling us (its listener is going away), so waiting must end; an
/// initiator has given up by then anyway (the C siw and siw_rs wait 10 s for the reply).
const ACCEPT_TIMEOUT_MS: u32 = 10000;

impl WorkItem<1> for Ep {
    type Pointer = Arc<Ep>;

    fn run(this: Arc<Ep>) {
        work::timer_done();
        let mut g = this.inner.lock();
        if let Some(cm) = g.reply_owed.take() {
            this.owe_reply(&mut g, cm);
        }
        let waiting = matches!(
            g.phase,
            Phase::AwaitRequest | Phase::AwaitReply | Phase::AwaitRtr | Phase::Requested
        );
        let Some(deadline) = g.deadline.filter(|_| waiting) else {
            return;
        };
        // One timer serves every deadline: one set while it was pending fires late.
        let left = (deadline - Instant::now()).as_millis_ceil();
        if left > 0 {
            this.arm_timeout(u32::try_from(left).unwrap_or(u32::MAX));
            return;
        }
        pr_debug!("siw_rs: timeout in {:?}\n", g.phase);
        this.close_locked(&mut g, How::Error);
    }
}

impl WorkItem for Ep {
    type Pointer = Arc<Ep>;

    fn run(this: Arc<Ep>) {
        this.process();
    }
}

impl SockEvents for Ep {
    fn sk_ctx(&self) -> &SkCtx {
        &self.sk
    }

    fn sock_event(this: ArcBorrow<'_, Self>, _ev: SockEvent) {
        Arc::from(this).kick();
    }
}

/// The MPA policy: the C siw's defaults (rev 2, no CRC unless the peer asks, no markers),
/// with the module parameters applied.
fn base_policy() -> MpaPolicy {
    let mut p = MpaPolicy::c_siw();
    p.crc = crate::module_parameters::mpa_crc_required.value();
    p.revision = if crate::module_parameters::mpa_revision.value() == 1 {
        1
    } else {
        2
    };
    p
}

/// [`base_policy`] with the ULP's IRD and ORD.
fn policy(ird: u32, ord: u32) -> MpaPolicy {
    let mut p = base_policy();
    p.ird = u16::try_from(ird).unwrap_or(u16::MAX).min(p.max_ird);
    p.ord = u16::try_from(ord).unwrap_or(u16::MAX).min(p.max_ord);
    p
}

/// The initiator's peer-to-peer request: the RTR types the `peer_to_peer` parameter
/// offers (none: no request).
fn initiator_p2p(p: &mut MpaPolicy) {
    let m = crate::module_parameters::peer_to_peer.value();
    p.rtr = RtrSet {
        send: m & 1 != 0,
        write: m & 2 != 0,
        read: m & 4 != 0,
    };
    p.p2p = !p.rtr.is_empty();
}

/// The responder honours a peer-to-peer request with a Write or Read RTR, as the C siw.
fn responder_p2p(p: &mut MpaPolicy) {
    p.p2p = true;
    p.rtr = RtrSet::WRITE_READ;
}

fn clamp_u8(v: u16) -> u8 {
    u8::try_from(v).unwrap_or(u8::MAX)
}

impl Ep {
    fn new(
        tables: Arc<Tables>,
        phase: Phase,
        sock: Option<Socket>,
        listener: Option<Arc<Ep>>,
    ) -> Result<Arc<Self>> {
        // The C siw's limit on PD_Length, plus the IRD/ORD word; what the connection
        // manager can carry of it is checked in negotiation (`PD_MAX_ULP`).
        let mpa = KBox::new(MpaReader::new(PD_MAX_SIW + IRD_ORD_LEN), GFP_KERNEL)?;
        // Listeners and connections nest (a new connection asks its listener for the
        // cm_id to report to), so they get separate lock classes.
        let (name, class) = if phase == Phase::Listen {
            (c"Ep::inner (listener)", kernel::static_lock_class!())
        } else {
            (c"Ep::inner", kernel::static_lock_class!())
        };
        Arc::pin_init(
            pin_init!(Ep {
                sk: SkCtx::new(),
                tables,
                cookie: RequestCookie::new(),
                work <- new_work!("Ep::work"),
                timeout <- new_delayed_work!("Ep::timeout"),
                inner <- Mutex::new(Inner {
                    phase,
                    sock,
                    cm: None,
                    listener,
                    qp: None,
                    mpa,
                    policy: base_policy(),
                    sent: None,
                    reply_owed: None,
                    deadline: None,
                }, name, class),
            }),
            GFP_KERNEL,
        )
    }

    /// Runs the endpoint's work soon.
    pub(crate) fn kick(self: &Arc<Self>) {
        if let Some(q) = work::queue() {
            // Already queued: that run will see the news too.
            let _ = q.enqueue::<_, 0>(self.clone());
        }
    }

    /// Closes the endpoint if the MPA exchange has not finished within `ms`.
    fn arm_timeout(self: &Arc<Self>, ms: u32) {
        if let Some(q) = work::queue() {
            work::timer_armed();
            if q.enqueue_delayed::<_, 1>(self.clone(), msecs_to_jiffies(ms))
                .is_err()
            {
                work::timer_done();
            }
        }
    }

    /// Ends the endpoint if it still waits (for the peer or the ULP) `ms` from now.
    fn set_deadline(self: &Arc<Self>, g: &mut Inner, ms: u32) {
        g.deadline = Some(Instant::now() + Delta::from_millis(i64::from(ms)));
        // Already armed (an earlier deadline): that run re-arms for this one.
        self.arm_timeout(ms);
    }

    fn attach(self: &Arc<Self>, g: &Inner) {
        if let Some(s) = &g.sock {
            s.attach(self.clone());
        }
    }

    fn process(self: &Arc<Self>) {
        let mut g = self.inner.lock();
        // MPA can finish and the data path start in one run.
        for _ in 0..2 {
            match g.phase {
                Phase::Listen => {
                    let children = self.accept_all(&mut g);
                    drop(g);
                    // The new connections' locks are taken without the listener's.
                    for child in children {
                        let mut cg = child.inner.lock();
                        child.attach(&cg);
                        child.set_deadline(&mut cg, MPA_REQUEST_TIMEOUT_MS);
                        drop(cg);
                        child.kick();
                    }
                    return;
                }
                Phase::AwaitRequest | Phase::AwaitReply => {
                    if !self.mpa_step(&mut g) {
                        return;
                    }
                }
                Phase::Established => {
                    self.data(&mut g);
                    return;
                }
                Phase::AwaitRtr => {
                    self.data(&mut g);
                    self.check_rtr(&mut g);
                    return;
                }
                Phase::Requested | Phase::Closed => return,
            }
        }
    }

    /// Accepts every pending connection of a listener; returns the new endpoints, whose
    /// callbacks the caller installs.
    fn accept_all(self: &Arc<Self>, g: &mut Inner) -> KVec<Arc<Ep>> {
        let mut children = KVec::new();
        while let Some(Ok(s)) = g.sock.as_ref().map(Socket::accept) {
            // On failure the socket is released: the peer sees a reset.
            let Ok(child) = Ep::new_child(self.tables.clone(), s, self.clone()) else {
                continue;
            };
            if children.push(child, GFP_KERNEL).is_err() {
                break;
            }
        }
        children
    }

    fn new_child(tables: Arc<Tables>, s: Socket, listener: Arc<Ep>) -> Result<Arc<Self>> {
        Ep::new(tables, Phase::AwaitRequest, Some(s), Some(listener))
    }

    /// Reads MPA bytes; returns true when the phase moved on and processing may continue.
    fn mpa_step(self: &Arc<Self>, g: &mut Inner) -> bool {
        let inner = &mut *g;
        let (Some(sock), mpa) = (inner.sock.as_ref(), &mut inner.mpa) else {
            return false;
        };
        let mut done = false;
        let mut bad = false;
        let r = sock.read(&mut |buf| match mpa.feed(buf) {
            Ok((n, complete)) => {
                done = complete;
                n
            }
            Err(_) => {
                bad = true;
                0
            }
        });
        if bad || r.is_err() {
            self.close_locked(g, How::Error);
            return false;
        }
        if !done {
            if sock.alive().is_err() {
                self.close_locked(g, How::Error);
            }
            return false;
        }
        match g.phase {
            Phase::AwaitRequest => {
                self.got_request(g);
                false
            }
            Phase::AwaitReply => self.got_reply(g),
            _ => false,
        }
    }

    /// Responder: the MPA request is in; tell the connection manager.
    fn got_request(self: &Arc<Self>, g: &mut Inner) {
        let Ok(frame) = g.mpa.frame() else {
            self.close_locked(g, How::Error);
            return;
        };
        let pol = base_policy();
        // The peer's IRD bounds our ORD and its ORD is our IRD need (RFC 6581). The
        // connection manager's request event carries them as the C siw does: `ird` is the
        // peer's IRD (rdma_cm's `initiator_depth`, what the ULP may accept as its ORD),
        // `ord` the peer's ORD (`responder_resources`). A revision 1 request says nothing:
        // offer one Read each way, which any peer can take (the C siw reports 0, and a ULP
        // that accepts with those values cannot Read at all).
        let (ird, ord) = frame.ird_ord.map_or((1, 1), |io| {
            (
                clamp_u8(io.ird.min(pol.max_ord)),
                clamp_u8(io.ord.min(pol.max_ird)),
            )
        });
        match negotiate_responder(&pol, &frame) {
            Ok(_) => {}
            Err(rej) => {
                if rej.reply_with_reject() {
                    send_reject(g.sock.as_ref(), &pol, &frame.header, &[]);
                }
                self.close_locked(g, How::Error);
                return;
            }
        }
        let Some(listener) = g.listener.take() else {
            self.close_locked(g, How::Error);
            return;
        };
        let cm = {
            let lg = listener.inner.lock();
            if lg.phase != Phase::Listen {
                None
            } else {
                lg.cm.clone()
            }
        };
        let Some(cm) = cm else {
            self.close_locked(g, How::Error);
            return;
        };
        g.phase = Phase::Requested;
        let pd = frame.private_data;
        let d = EventData {
            status: 0,
            private_data: pd,
            ird,
            ord,
        };
        // Kept here until the ULP answers: the core names it by cookie only.
        if self
            .tables
            .insert_request(self.cookie, self.clone())
            .is_err()
        {
            self.close_locked(g, How::Error);
            return;
        }
        let Some(sock) = g.sock.as_ref() else {
            return;
        };
        let r = cm.connect_request(sock.addrs(), &d, self.cookie);
        if r.is_ok() {
            self.set_deadline(g, ACCEPT_TIMEOUT_MS);
        } else if let Err(e) = r {
            // The core is out of memory: refuse the connection in-band, so the
            // initiator learns of it at once instead of waiting for its timeout.
            pr_warn!(
                "siw_rs: connection manager refused a connect request: {:?}\n",
                e
            );
            send_reject(Some(sock), &pol, &frame.header, &[]);
            self.close_locked(g, How::Error);
        }
    }

    /// Initiator: reports the outcome of the connect to the connection manager
    /// (CONNECT_REPLY). Returns whether the connection may go on, that is, whether the
    /// core took a successful reply.
    ///
    /// The iw_cm must see one CONNECT_REPLY for every connect: a cm_id left in
    /// CONN_SENT hits a `BUG()` when it is closed or destroyed. The upcall fails only
    /// when the core is out of memory; the connect is then reported failed, without
    /// private data, and that report is retried from the endpoint's timer until the
    /// core takes it.
    fn report_reply(self: &Arc<Self>, g: &mut Inner, d: &EventData<'_>) -> bool {
        let Some(cm) = g.cm.take() else {
            return false;
        };
        match cm.event(CmEvent::ConnectReply, g.sock.as_ref().map(Socket::addrs), d) {
            Ok(()) if d.status == 0 => {
                g.cm = Some(cm);
                return true;
            }
            Ok(()) => return false,
            Err(e) => {
                pr_warn!(
                    "siw_rs: connection manager refused CONNECT_REPLY: {:?}\n",
                    e
                );
            }
        }
        self.owe_reply(g, cm);
        false
    }

    /// Reports a failed connect to `cm`, or keeps it owed and retries soon.
    fn owe_reply(self: &Arc<Self>, g: &mut Inner, cm: CmId) {
        let fail = EventData::failed(ECONNRESET);
        if cm.event(CmEvent::ConnectReply, None, &fail).is_err() {
            g.reply_owed = Some(cm);
            // Already armed (the MPA deadline): that run retries.
            self.arm_timeout(REPLY_RETRY_MS);
        }
    }

    /// Initiator: the MPA reply is in.
    fn got_reply(self: &Arc<Self>, g: &mut Inner) -> bool {
        let (Ok(reply), Some(sent)) = (g.mpa.frame(), g.sent.as_ref()) else {
            self.close_locked(g, How::Error);
            return false;
        };
        let req = MpaFrame {
            header: sent.header,
            ird_ord: sent.ird_ord,
            private_data: &sent.private_data,
        };
        let r = negotiate_initiator(&g.policy, &req, &reply);
        // Negotiation refuses more than the connection manager can carry.
        let mut pd = [0u8; PD_MAX_ULP];
        let n = reply.private_data.len().min(PD_MAX_ULP);
        pd[..n].copy_from_slice(&reply.private_data[..n]);
        let agreed = match r {
            Ok(a) => a,
            Err(rej) => {
                let (status, n) = match rej {
                    Reject::PeerRejected => (ECONNREFUSED, n),
                    _ => (ECONNRESET, 0),
                };
                self.report_reply(
                    g,
                    &EventData {
                        status: status.to_errno(),
                        private_data: &pd[..n],
                        ..Default::default()
                    },
                );
                self.close_locked(g, How::Error);
                return false;
            }
        };
        let params = LinkParams {
            crc: agreed.crc,
            ird: agreed.ird,
            ord: agreed.ord,
        };
        let ok = match g.qp.as_ref() {
            Some(qp) => {
                let mut st = qp.lock();
                let ok = qp.connected(&mut st, self.clone(), params).is_ok();
                // Peer-to-peer: the RTR message is the first FPDU, before any work.
                if let (true, Some(rtr), Some(link)) = (ok, agreed.rtr, st.link.as_mut()) {
                    link.tx.send_rtr(rtr);
                }
                ok
            }
            None => false,
        };
        let d = if ok {
            EventData {
                status: 0,
                private_data: &pd[..n],
                ird: clamp_u8(agreed.ird),
                ord: clamp_u8(agreed.ord),
            }
        } else {
            EventData::failed(ECONNRESET)
        };
        if !self.report_reply(g, &d) {
            // The connection manager was told (or will be) of a failure; no CLOSE
            // follows a failed connect.
            self.close_locked(g, How::Error);
            return false;
        }
        g.phase = Phase::Established;
        true
    }

    /// Responder in peer-to-peer mode: once the initiator's RTR message is in (any
    /// complete message, as the C siw checks), the connection is established.
    fn check_rtr(self: &Arc<Self>, g: &mut Inner) {
        if g.phase != Phase::AwaitRtr {
            return;
        }
        let Some(qp) = g.qp.as_ref() else {
            return;
        };
        let rtr_in = qp.lock().link.as_ref().is_some_and(|l| l.rx.messages > 0);
        if rtr_in {
            g.phase = Phase::Established;
            if let Some(cm) = g.cm.as_ref() {
                notify(cm, CmEvent::Established);
            }
        }
    }

    /// The data path: receive what arrived, send what is queued, notice the peer leaving.
    fn data(self: &Arc<Self>, g: &mut Inner) {
        let (Some(sock), Some(qp)) = (g.sock.as_ref(), g.qp.clone()) else {
            return;
        };
        let mut how = None;
        let mut again = false;
        {
            let mut st = qp.lock();
            if !st.ep.as_ref().is_some_and(|e| Arc::ptr_eq(e, self)) {
                // The QP left RTS; `close_from_qp` is on its way.
                return;
            }
            let mut stop = None;
            // After an error the receiver takes nothing more, so the read stops at the next
            // piece (an error at the very end of one piece consumed it whole).
            let r = sock.read(&mut |buf| {
                let (n, s) = rx::feed(&qp, &mut st, buf);
                if s.is_some() {
                    stop = s;
                }
                n
            });
            match &stop {
                Some(RxStop::Term(e)) => pr_debug!("siw_rs: rx term {:?}\n", e),
                Some(RxStop::PeerTerminated) => pr_debug!("siw_rs: peer terminated\n"),
                None => {}
            }
            if let Err(e) = &r {
                pr_debug!("siw_rs: read error {:?}\n", e);
            }
            match stop {
                Some(RxStop::Term(e)) => {
                    if let Some(link) = st.link.as_mut() {
                        let mut raw = [0u8; 72];
                        let h = link.rx.raw_header();
                        let n = h.len().min(raw.len());
                        raw[..n].copy_from_slice(&h[..n]);
                        link.tx.terminate(e, &raw[..n]);
                    }
                    // Best effort: send it now, then close.
                    let _ = tx::run(&qp, &mut st, sock);
                    how = Some(How::Error);
                }
                Some(RxStop::PeerTerminated) => how = Some(How::Error),
                None if r.is_err() => how = Some(How::Error),
                None => {}
            }
            if how.is_none() {
                match tx::run(&qp, &mut st, sock) {
                    Ok(tx::Ran::Idle) => {}
                    Ok(tx::Ran::Yield) => again = true,
                    Err(TxStop::Terminated) => how = Some(How::Error),
                    Err(TxStop::Failed) => {
                        pr_debug!("siw_rs: tx failed\n");
                        how = Some(How::Error)
                    }
                }
            }
        }
        if how.is_none() && sock.alive().is_err() {
            how = Some(How::Peer);
        }
        if let Some(h) = how {
            self.close_locked(g, h);
        } else if again {
            // Queued behind the work already waiting on this workqueue.
            self.kick();
        }
    }

    /// Ends the endpoint: QP to ERROR (flushing), callbacks off, socket closed, events.
    fn close_locked(self: &Arc<Self>, g: &mut Inner, how: How) {
        let prev = g.phase;
        if prev == Phase::Closed {
            return;
        }
        pr_debug!("siw_rs: close {:?} how {}\n", prev, how as u8);
        g.phase = Phase::Closed;
        if let Some(qp) = g.qp.take() {
            let mut st = qp.lock();
            let ours = st.ep.as_ref().is_none_or(|e| Arc::ptr_eq(e, self));
            if ours
                && matches!(
                    prev,
                    Phase::Established | Phase::AwaitReply | Phase::AwaitRtr
                )
            {
                qp.link_down(&mut st);
                if how == How::Error {
                    st.fatal_event();
                }
            }
        }
        if let Some(sock) = g.sock.take() {
            sock.detach(&**self);
            sock.shutdown();
            drop(sock);
        }
        drop(g.listener.take());
        if prev == Phase::Requested {
            // Not ours to wait for any more: a late accept or reject finds nothing.
            drop(self.tables.take_request(self.cookie));
        }
        g.deadline = None;
        if prev == Phase::AwaitReply {
            self.report_reply(g, &EventData::failed(ECONNRESET));
        }
        if let Some(cm) = g.cm.take() {
            match prev {
                Phase::Established | Phase::AwaitRtr => {
                    if prev == Phase::AwaitRtr {
                        // The iw_cm accepted and waits in CONN_RECV, where a CLOSE would
                        // hit its BUG(): complete the connection, then end it.
                        notify(&cm, CmEvent::Established);
                    }
                    if how == How::Peer {
                        notify(&cm, CmEvent::Disconnect);
                    }
                    notify(&cm, CmEvent::Close);
                }
                _ => {}
            }
        }
    }

    /// The QP left RTS (disconnect or destroy) and let go of this endpoint.
    pub(crate) fn close_from_qp(self: &Arc<Self>) {
        let mut g = self.inner.lock();
        self.close_locked(&mut g, How::Local);
    }
}

/// Reports an event that carries no private data (ESTABLISHED, DISCONNECT, CLOSE).
///
/// Such an upcall fails only when the cm_id has no free work entry, and the core gives
/// every connection's cm_id entries up front (three for an accepted connection, four for a
/// connect) for at most three such events in flight, so it cannot fail. If it ever did,
/// the core's view of the connection would be stuck: say so loudly rather than drop it.
fn notify(cm: &CmId, ev: CmEvent) {
    if let Err(e) = cm.event(ev, None, &EventData::default()) {
        pr_err!("siw_rs: connection manager refused {:?}: {:?}\n", ev, e);
    }
}

/// Answers the request `req` with a reject frame carrying `private_data` (the core passes
/// at most 255 bytes).
fn send_reject(sock: Option<&Socket>, policy: &MpaPolicy, req: &MpaHeader, private_data: &[u8]) {
    let f = MpaFrame {
        header: reject_reply(policy, req),
        ird_ord: None,
        private_data,
    };
    send_frame(sock, &f);
}

/// Sends an MPA frame, blocking (the frames come before the data path).
fn send_frame(sock: Option<&Socket>, f: &MpaFrame<'_>) -> bool {
    let Some(sock) = sock else {
        return false;
    };
    let mut buf = [0u8; MAX_FRAME_LEN];
    let Ok(n) = f.encode(&mut buf) else {
        return false;
    };
    let Some(b) = buf.get(..n) else {
        return false;
    };
    matches!(sock.send(&[IoVec::new(b)], 0, true, false), Ok(k) if k == n)
}

/// A TCP connection from `cm`'s local to its remote address (blocking), as the C siw makes
/// it: bound first, so the ULP's source address and port hold. Made in the namespace of
/// `dev`'s netdev, where that address is; the C siw makes it in the caller's, so a kernel
/// consumer connecting from a worker (xprtrdma: an NFS mount in a network namespace) gets
/// `EADDRNOTAVAIL` from it.
fn connect_socket(dev: &Device<Siw>, cm: &CmId) -> Result<Socket> {
    let (laddr, raddr) = (cm.mapped_local_addr(), cm.mapped_remote_addr());
    let family = laddr.family().ok_or(EAFNOSUPPORT)?;
    if raddr.family() != Some(family) {
        return Err(EINVAL);
    }
    let s = dev.with_netdev(|nd| Socket::new_tcp_in(nd, family, cm.afonly()))??;
    s.bind(&laddr)?;
    s.connect(&raddr)?;
    Ok(s)
}

/// The listening socket for `cm` on `dev`; `None` when there is nothing to listen on.
///
/// A wildcard listen only serves the device's netdev, as in the C siw. When that netdev lives
/// in another network namespace than the listener, no connection can reach it from here:
/// listen on nothing, rather than bind to whatever has the same ifindex in this namespace
/// (which the C siw does, making wildcard listens across namespaces collide).
fn listen_socket(dev: &Device<Siw>, cm: &CmId, backlog: i32) -> Result<Option<Socket>> {
    let laddr = cm.local_addr();
    let s = Socket::new_tcp(laddr.family().ok_or(EAFNOSUPPORT)?, cm.afonly())?;
    if laddr.is_any() {
        let ifindex = dev.with_netdev(|nd| s.in_netns_of(nd).then(|| nd.ifindex()))?;
        let Some(ifindex) = ifindex else {
            return Ok(None);
        };
        s.bind_to_ifindex(ifindex);
    }
    s.bind(&laddr)?;
    s.listen(backlog)?;
    Ok(Some(s))
}

/// `iw_connect`.
pub(crate) fn connect(dev: &Device<Siw>, cm: CmId, p: &ConnParam<'_>) -> Result {
    let d: &SiwDev = dev.data();
    let qp = d.tables.qp(p.qpn).ok_or(EINVAL)?;
    if p.private_data.len() > PD_MAX_SIW {
        return Err(EINVAL);
    }
    let s = connect_socket(dev, &cm)?;
    let ep = Ep::new(d.tables.clone(), Phase::AwaitReply, Some(s), None)?;
    let mut pol = policy(p.ird, p.ord);
    initiator_p2p(&mut pol);
    let (header, ird_ord) = build_request(&pol);
    let mut private_data = KVec::new();
    private_data.extend_from_slice(p.private_data, GFP_KERNEL)?;
    let f = MpaFrame {
        header,
        ird_ord,
        private_data: p.private_data,
    };
    let mut g = ep.inner.lock();
    {
        let mut st = qp.lock();
        if st.ep.is_some() {
            return Err(EBUSY);
        }
        st.ep = Some(ep.clone());
    }
    g.qp = Some(qp);
    g.policy = pol;
    g.sent = Some(Sent {
        header,
        ird_ord,
        private_data,
    });
    ep.attach(&g);
    if !send_frame(g.sock.as_ref(), &f) {
        ep.close_locked(&mut g, How::Error);
        return Err(ECONNRESET);
    }
    g.cm = Some(cm);
    ep.set_deadline(&mut g, MPA_REPLY_TIMEOUT_MS);
    drop(g);
    ep.kick();
    Ok(())
}

/// `iw_accept`.
pub(crate) fn accept(dev: &Device<Siw>, cm: CmId, req: RequestCookie, p: &ConnParam<'_>) -> Result {
    let d: &SiwDev = dev.data();
    // Gone: rejected, timed out, or the peer left.
    let ep = d.tables.take_request(req).ok_or(ECONNRESET)?;
    let Some(qp) = d.tables.qp(p.qpn) else {
        let mut g = ep.inner.lock();
        ep.close_locked(&mut g, How::Error);
        return Err(EINVAL);
    };
    let mut g = ep.inner.lock();
    if g.phase != Phase::Requested {
        return Err(ECONNRESET);
    }
    let mut pol = policy(p.ird, p.ord);
    responder_p2p(&mut pol);
    let acc = match g.mpa.frame().ok().map(|f| negotiate_responder(&pol, &f)) {
        Some(Ok(a)) => a,
        _ => {
            ep.close_locked(&mut g, How::Error);
            return Err(ECONNRESET);
        }
    };
    if p.private_data.len() > PD_MAX_SIW - 4 {
        ep.close_locked(&mut g, How::Error);
        return Err(EINVAL);
    }
    let params = LinkParams {
        crc: acc.agreed.crc,
        ird: acc.agreed.ird,
        ord: acc.agreed.ord,
    };
    {
        let mut st = qp.lock();
        if st.ep.is_some() || qp.connected(&mut st, ep.clone(), params).is_err() {
            drop(st);
            ep.close_locked(&mut g, How::Error);
            return Err(EINVAL);
        }
    }
    g.qp = Some(qp);
    let await_rtr = acc.agreed.rtr.is_some();
    g.phase = if await_rtr {
        Phase::AwaitRtr
    } else {
        Phase::Established
    };
    if !send_frame(g.sock.as_ref(), &acc.reply_frame(p.private_data)) {
        ep.close_locked(&mut g, How::Error);
        return Err(ECONNRESET);
    }
    if !await_rtr {
        notify(&cm, CmEvent::Established);
    }
    g.cm = Some(cm);
    if await_rtr {
        ep.set_deadline(&mut g, MPA_REPLY_TIMEOUT_MS);
    }
    drop(g);
    ep.kick();
    Ok(())
}

/// `iw_reject`.
pub(crate) fn reject(dev: &Device<Siw>, req: RequestCookie, private_data: &[u8]) {
    let d: &SiwDev = dev.data();
    let Some(ep) = d.tables.take_request(req) else {
        return;
    };
    let mut g = ep.inner.lock();
    if g.phase == Phase::Requested {
        if let Ok(frame) = g.mpa.frame() {
            send_reject(g.sock.as_ref(), &g.policy, &frame.header, private_data);
        }
    }
    ep.close_locked(&mut g, How::Error);
}

/// `iw_create_listen`.
pub(crate) fn listen(dev: &Device<Siw>, cm: CmId, backlog: i32) -> Result<Arc<Ep>> {
    let d: &SiwDev = dev.data();
    let s = listen_socket(dev, &cm, backlog)?;
    let ep = Ep::new(d.tables.clone(), Phase::Listen, s, None)?;
    {
        let mut g = ep.inner.lock();
        g.cm = Some(cm);
        ep.attach(&g);
    }
    // Connections may already be waiting.
    ep.kick();
    Ok(ep)
}

/// `iw_destroy_listen`.
pub(crate) fn destroy_listen(ep: Arc<Ep>) {
    let mut g = ep.inner.lock();
    ep.close_locked(&mut g, How::Local);
}
