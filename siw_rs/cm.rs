// SPDX-License-Identifier: GPL-2.0

//! Connection endpoints: listeners, and connections from TCP connect through the MPA
//! exchange to the data path and teardown; on a `siw_rs_sctp` device, from the SCTP
//! association through the DDP Stream Session's Initiate and Accept (RFC 5043) instead.
//!
//! An [`Ep`] owns one socket and runs as work on siw_rs's workqueue whenever its socket
//! has news (data, write space, state change) or a user rang the doorbell. Lock order:
//! an endpoint's `inner`, then its QP's state, then (for listeners) nothing else.

use crate::{
    device::{Llp, Siw, SiwDev},
    glue::{
        iov::IoVec,
        log,
        net::{
            netdev::NetDev,
            tcp::{
                CallbackSock, Family, SkCtx, SockAddr, SockEvent, SockEvents, Socket, Transport,
            },
        },
        rdma::{
            cm::{CmEvent, CmId, ConnParam, EventData, RequestCookie},
            device::Device,
        },
        sync::{new_spinlock_bh, SpinLockBh},
        workqueue as work,
    },
    proto::qp::State,
    proto::{
        gidconn::{self, End, IpAddr, Message, Outcome},
        mpa::{
            build_request, negotiate_initiator, negotiate_responder, reject_reply,
            Accept as MpaAccept, IrdOrd, MpaFrame, MpaHeader, MpaPolicy, MpaReader, Reject,
            ResponderWake, RtrSet, IRD_ORD_LEN, MAX_FRAME_LEN, PD_MAX_SIW, PD_MAX_ULP,
            SIW_MAX_IRD_ORD,
        },
        sctp::{
            Control, Function, Received, Role, CONTROL_HDR_LEN, MIN_MAX_SEGMENT,
            PD_MAX as SCTP_PD_MAX, PPID_SESSION_CONTROL,
        },
    },
    qp::{LinkParams, QpCore},
    rx::{self, RxStop},
    sctp::{SctpFail, SctpLink},
    stats::Counter,
    table::Tables,
    tx::{self, TxStop},
};
use core::sync::atomic::{AtomicBool, Ordering};
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
    /// The TCP handshake runs (an initiator: `iw_connect`, or a connection made by
    /// `modify_qp`).
    Connecting,
    /// A connection made by `modify_qp`: waiting to try again (the socket is a fresh,
    /// unconnected one).
    Backoff,
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
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum How {
    /// The QP was moved out of RTS (disconnect, destroy): report CLOSE.
    Local,
    /// The peer closed: report DISCONNECT, then CLOSE.
    Peer,
    /// A protocol or socket error: report CLOSE, and a fatal QP event.
    Error,
}

/// Who an endpoint serves.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// The iWARP connection manager (`iw_cm`): events go to a cm_id.
    Cm,
    /// A connection made by `modify_qp` ([`crate::proto::gidconn`]): no cm_id; the QP
    /// learns of the outcome alone.
    Av,
}

/// The initiator's side of a connection made by `modify_qp`.
struct AvEp {
    /// This end and the peer's.
    local: End,
    remote: End,
    /// The addresses to connect from (port 0) and to.
    from: SockAddr,
    to: SockAddr,
    /// The wait before the next try.
    backoff_ms: u32,
}

/// The initiator's MPA request, kept to check the reply against.
struct Sent {
    header: MpaHeader,
    ird_ord: Option<IrdOrd>,
    private_data: KVec<u8>,
}

impl Sent {
    /// The request as a frame.
    fn frame(&self) -> MpaFrame<'_> {
        MpaFrame {
            header: self.header,
            ird_ord: self.ird_ord,
            private_data: &self.private_data,
        }
    }
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
    /// When a phase that waits for the peer or the ULP ends the endpoint (or, for a
    /// connection made by `modify_qp`, tries again).
    deadline: Option<Instant<Monotonic>>,
    /// The initiator's side of a connection made by `modify_qp`.
    av: Option<AvEp>,
    /// A responder holds its first FPDU until the initiator's first message is in, or until
    /// this instant (see [`RESPONDER_HOLD_MS`]).
    tx_hold: Option<Instant<Monotonic>>,
    /// An initiator over TCP looks whether its responder may have missed its first FPDUs
    /// (see [`ResponderWake`]), on the `backoff` timer.
    wake: Option<ResponderWake>,
    /// A connection over SCTP: the DDP Stream Session and the messages coming in.
    sctp: Option<KBox<SctpLink>>,
    /// An initiator over SCTP: when its connect fails, however many associations it tried
    /// (see [`SCTP_TRY_TIMEOUT_MS`]).
    connect_by: Option<Instant<Monotonic>>,
}

/// A connection endpoint (listener or connection).
#[pin_data]
pub(crate) struct Ep {
    sk: SkCtx,
    kind: Kind,
    tables: Arc<Tables>,
    /// Names this endpoint's connection request to the connection manager.
    cookie: RequestCookie,
    #[pin]
    work: Work<Ep>,
    /// The MPA exchange's deadline.
    #[pin]
    timeout: DelayedWork<Ep, 1>,
    /// The next try of an initiator of a connection made by `modify_qp`, the end of a
    /// responder's hold on its first FPDU, or an initiator's next look at its responder.
    #[pin]
    backoff: DelayedWork<Ep, 2>,
    #[pin]
    inner: Mutex<Inner>,
    /// The QP of an established TCP connection, which the socket's data-ready callback
    /// receives for in place (see [`Ep::receive_in_callback`]); `None` otherwise. Held by
    /// the callback while it receives, so that it is gone for good once the close has
    /// taken it.
    #[pin]
    fast: SpinLockBh<Option<Arc<QpCore>>>,
    /// A process's doorbell holds `inner` and sends (see [`Ep::send_now`]).
    doorbell: AtomicBool,
    /// The work found a doorbell sending and left, and waits to run: the doorbell queues
    /// it again when done, and doorbells leave the sending to it until it has run.
    rerun: AtomicBool,
}

impl_has_work! {
    impl HasWork<Self> for Ep { self.work }
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self, 1> for Ep { self.timeout }
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self, 2> for Ep { self.backoff }
}

impl WorkItem<2> for Ep {
    type Pointer = Arc<Ep>;

    fn run(this: Arc<Ep>) {
        work::timer_done();
        let mut g = this.inner.lock();
        if g.phase == Phase::Backoff && g.av.is_some() {
            this.av_try(&mut g);
        } else if g.tx_hold.take().is_some() {
            // A responder's hold is over: send what waits.
            drop(g);
            this.kick();
        } else if g.wake.is_some() {
            this.wake_look(&mut g);
        }
    }
}

/// How long a responder waits for the MPA request (the C siw's `MPAREQ_TIMEOUT`).
const MPA_REQUEST_TIMEOUT_MS: u32 = 5000;
/// How long an initiator waits for the MPA reply (the C siw's `MPAREP_TIMEOUT`).
const MPA_REPLY_TIMEOUT_MS: u32 = 10000;
/// How long `iw_connect`'s TCP handshake may take before the connect is reported failed
/// (`ETIMEDOUT`). The C siw blocks in `iw_connect` until TCP gives up (about two minutes of
/// SYN retries), holding the ULP's thread; siw_rs connects in the background.
const CONNECT_TIMEOUT_MS: u32 = 10000;
/// Over SCTP, how long one association may take to come up before the initiator aborts it
/// and tries again on a fresh socket, within [`CONNECT_TIMEOUT_MS`]. A lost COOKIE-ACK
/// would otherwise cost the whole connect: the responder accepts the association at once,
/// the accepted socket gets an endpoint with a cookie key of its own (Linux's
/// `sctp_clone_sock()` does not copy the listener's), and the initiator's retransmitted
/// COOKIE-ECHO, signed with the listener's key, is then discarded every time.
const SCTP_TRY_TIMEOUT_MS: u32 = 2000;
/// How soon a CONNECT_REPLY the core refused is offered again.
const REPLY_RETRY_MS: u32 = 100;
/// How long a connection request waits for the ULP's accept or reject. The core may drop
/// a request without telling us (its listener is going away), so waiting must end; an
/// initiator has given up by then anyway (the C siw and siw_rs wait 10 s for the reply).
const ACCEPT_TIMEOUT_MS: u32 = 10000;
/// How long a responder (`iw_accept`, no peer-to-peer RTR) holds its first FPDU when the
/// initiator has sent none yet. RFC 5044 section 7.1.2 rule 4 has the responder receive an
/// FPDU before it sends any, so that the initiator's receiver is in Full Operation first;
/// the C siw as initiator enforces it (an FPDU that arrives with the MPA reply fails its
/// connect, `-EPROTO` in `siw_recv_mpa_rr()`). Taken strictly, the rule deadlocks every ULP
/// whose server speaks first (the C siw as responder does not follow it either), so the
/// hold ends after this long: time for the initiator to take the reply.
const RESPONDER_HOLD_MS: u32 = 50;
/// A connection made by `modify_qp`: how long one TCP handshake, and one MPA reply, may take
/// before the initiator tries again (the QP's own deadline bounds the whole).
const AV_TRY_TIMEOUT_MS: u32 = 2000;
/// ... and the first and the longest wait between tries.
const AV_BACKOFF_FIRST_MS: u32 = 10;
const AV_BACKOFF_MAX_MS: u32 = 500;

/// The TCP port siw_rs listens on for connections made by `modify_qp` (module parameter
/// `gid_connect_port`; 0 when they are off).
fn av_port() -> u16 {
    u16::try_from(crate::module_parameters::gid_connect_port.value()).unwrap_or(0)
}

/// The liveness bound of every connection's socket (module parameter `peer_timeout_ms`,
/// kept to 1 s .. 1 h; 0: none): see [`Socket::set_liveness`].
pub(crate) fn peer_timeout_ms() -> u32 {
    match crate::module_parameters::peer_timeout_ms.value() {
        0 => 0,
        ms => ms.clamp(1000, 3_600_000),
    }
}

/// Whether connections made by `modify_qp` are on (`gid_connect_port` is not 0).
pub(crate) fn av_enabled() -> bool {
    av_port() != 0
}

/// The socket address of `gid` at `port` on `nd` (a link-local IPv6 address is scoped to
/// `nd`); `None` for a GID that names no address.
fn sockaddr_of(gid: &[u8; 16], port: u16, nd: &NetDev) -> Option<SockAddr> {
    Some(match gidconn::ip_of_gid(gid)? {
        IpAddr::V4(a) => SockAddr::inet(a, port),
        IpAddr::V6(a) => {
            // fe80::/10.
            let link_local = a.first() == Some(&0xfe) && a.get(1).is_some_and(|b| b & 0xc0 == 0x80);
            let scope = if link_local {
                u32::try_from(nd.ifindex()).unwrap_or(0)
            } else {
                0
            };
            SockAddr::inet6(a, port, scope)
        }
    })
}

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
            Phase::AwaitRequest
                | Phase::AwaitReply
                | Phase::AwaitRtr
                | Phase::Requested
                | Phase::Connecting
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
        log::debug!(this.tables.name(), "timeout in {:?}\n", g.phase);
        if g.av.is_some() {
            this.av_retry(&mut g);
        } else if g.phase == Phase::Connecting {
            if let Err(e) = this.sctp_try_again(&mut g) {
                this.connect_failed(&mut g, e);
            }
        } else {
            this.close_locked(&mut g, How::Error);
        }
    }
}

impl WorkItem for Ep {
    type Pointer = Arc<Ep>;

    fn run(this: Arc<Ep>) {
        // While a doorbell sends, the work gets queued (by TCP's write-space callback,
        // another doorbell, or the doorbell itself after a burst): rather than wait on
        // `inner` for the whole burst, it leaves, and the doorbell queues it again once
        // done (measured: the work's spinning on the mutex was 4% of `ib_send_bw -s 64`'s
        // cost). The work sets `rerun` before it reads the doorbell's flag again, the
        // doorbell clears its flag before it reads `rerun`, all sequentially consistent:
        // one of them sees the other (a flag seen set may be a later doorbell's, which
        // reads `rerun` too). Until the work has run, doorbells leave the sending to it,
        // so that it is not put off for as long as doorbells keep coming.
        if this.doorbell.load(Ordering::Relaxed) {
            this.rerun.store(true, Ordering::SeqCst);
            if this.doorbell.load(Ordering::SeqCst) {
                return;
            }
        }
        // Only the work sets it, and the work never runs twice at once.
        this.rerun.store(false, Ordering::Relaxed);
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

    fn data_ready(this: ArcBorrow<'_, Self>, sk: &CallbackSock<'_>) {
        if !this.receive_in_callback(sk) {
            Arc::from(this).kick();
        }
    }
}

/// The MPA policy: the C siw's defaults (rev 2, no CRC unless the peer asks, markers not
/// asked for) with the module parameters applied; unlike the C siw, markers are inserted
/// when the peer asks (RFC 5044 section 4.3 makes them a MUST then; the C siw refuses).
fn base_policy() -> MpaPolicy {
    let mut p = MpaPolicy::c_siw();
    p.markers_tx = true;
    p.markers_rx = crate::module_parameters::mpa_markers.value();
    p.crc = crate::module_parameters::mpa_crc_required.value();
    p.gso_exp = crate::module_parameters::fpdu_gso.value();
    p.rfc7306 = crate::module_parameters::rfc7306.value();
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
        kind: Kind,
        phase: Phase,
        sock: Option<Socket>,
        listener: Option<Arc<Ep>>,
    ) -> Result<Arc<Self>> {
        // The C siw's limit on PD_Length, plus the IRD/ORD word; what the connection
        // manager can carry of it is checked in negotiation (`PD_MAX_ULP`).
        let mpa = KBox::new(MpaReader::new(PD_MAX_SIW + IRD_ORD_LEN), GFP_KERNEL)?;
        // A connection over SCTP (not a listener): the connecting side is the session's
        // active one.
        let sctp = match sock.as_ref().map(Socket::transport) {
            Some(Transport::Sctp) if phase != Phase::Listen => {
                Some(SctpLink::new(if phase == Phase::Connecting {
                    Role::Active
                } else {
                    Role::Passive
                })?)
            }
            _ => None,
        };
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
                kind,
                tables,
                cookie: RequestCookie::new(),
                work <- new_work!("Ep::work"),
                timeout <- new_delayed_work!("Ep::timeout"),
                backoff <- new_delayed_work!("Ep::backoff"),
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
                    av: None,
                    tx_hold: None,
                    wake: None,
                    sctp,
                    connect_by: None,
                }, name, class),
                fast <- new_spinlock_bh!(None, "Ep::fast"),
                doorbell: AtomicBool::new(false),
                rerun: AtomicBool::new(false),
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

    /// Sends what the send queue holds from the caller's context: a process's doorbell,
    /// as the C siw sends from `siw_post_send()` when its send queue was idle. This saves
    /// the hand-off to the workqueue, and its context switch, per message. When the
    /// connection's work holds the endpoint or waits to run, or anything but sending is
    /// due, the work runs instead; everything received is left to the socket's callback
    /// and the work. A run of the work that finds a doorbell sending usually leaves at
    /// once, and the doorbell queues it again when done (see the work's `run`).
    pub(crate) fn send_now(self: &Arc<Self>) {
        if self.rerun.load(Ordering::Relaxed) {
            // The work left for a doorbell and is queued again: it sends this post.
            self.kick();
            return;
        }
        let Some(mut g) = self.inner.try_lock() else {
            // The work runs (or another doorbell sends): queued again, it sees this post.
            self.kick();
            return;
        };
        if g.phase == Phase::Established && g.tx_hold.is_none() {
            self.doorbell.store(true, Ordering::Relaxed);
            self.data(&mut g, false);
            self.doorbell.store(false, Ordering::SeqCst);
            drop(g);
            if self.rerun.load(Ordering::SeqCst) {
                self.kick();
            }
        } else {
            drop(g);
            self.kick();
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

    /// The endpoint no longer waits: no deadline, and its timer, unless a reply is still
    /// owed through it, is cancelled. A pending timer holds the endpoint (and module exit
    /// waits for it) for up to [`MPA_REPLY_TIMEOUT_MS`] after the connection came up or
    /// closed.
    fn clear_deadline(self: &Arc<Self>, g: &mut Inner) {
        g.deadline = None;
        if g.reply_owed.is_none() {
            work::cancel_delayed::<_, 1>(self);
        }
    }

    fn attach(self: &Arc<Self>, g: &Inner) {
        if let Some(s) = &g.sock {
            s.attach(self.clone());
        }
    }

    fn process(self: &Arc<Self>) {
        let mut g = self.inner.lock();
        // The TCP handshake, MPA and the data path can all finish in one run.
        for _ in 0..3 {
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
                    let go = if g.sctp.is_some() {
                        self.sctp_step(&mut g)
                    } else {
                        self.mpa_step(&mut g)
                    };
                    if !go {
                        return;
                    }
                }
                Phase::Connecting => {
                    let go = match self.kind {
                        Kind::Av => self.av_connected_tcp(&mut g),
                        Kind::Cm => self.cm_connected_tcp(&mut g),
                    };
                    if !go {
                        return;
                    }
                }
                Phase::Established => {
                    self.enable_callback_receive(&g);
                    self.data(&mut g, true);
                    return;
                }
                Phase::AwaitRtr => {
                    self.data(&mut g, true);
                    self.check_rtr(&mut g);
                    return;
                }
                Phase::Requested | Phase::Backoff | Phase::Closed => return,
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
        s.set_liveness(peer_timeout_ms());
        Ep::new(
            tables,
            listener.kind,
            Phase::AwaitRequest,
            Some(s),
            Some(listener),
        )
    }

    /// Reads MPA bytes; returns true when the phase moved on and processing may continue.
    fn mpa_step(self: &Arc<Self>, g: &mut Inner) -> bool {
        let inner = &mut *g;
        let (Some(sock), mpa) = (inner.sock.as_ref(), &mut inner.mpa) else {
            return false;
        };
        // As in `data`: the peer's FIN (or reset) may show only after the read, once
        // `release_sock()` has run the backlog with the last MPA bytes in it. A peer that
        // rejects, as the C siw does, sends its reply and closes at once; ending on the close
        // without reading again would lose the reply and report a reset, not a refusal.
        let closed_before = sock.alive().is_err();
        let mut done = false;
        let mut bad = false;
        let r = sock.read(&mut |buf| match mpa.feed_from(buf) {
            Ok((n, complete)) => {
                done = complete;
                n
            }
            Err(_) => {
                bad = true;
                0
            }
        });
        if bad {
            self.close_locked(g, How::Error);
            return false;
        }
        if r.is_err() {
            self.lost(g);
            return false;
        }
        if !done {
            if sock.alive().is_err() {
                if closed_before {
                    self.lost(g);
                } else {
                    // Read once more, now that the close shows.
                    self.kick();
                }
            }
            return false;
        }
        match (g.phase, self.kind) {
            (Phase::AwaitRequest, Kind::Cm) => {
                self.got_request(g);
                false
            }
            (Phase::AwaitRequest, Kind::Av) => {
                self.got_av_request(g);
                false
            }
            (Phase::AwaitReply, Kind::Cm) => self.got_reply(g),
            (Phase::AwaitReply, Kind::Av) => self.got_av_reply(g),
            _ => false,
        }
    }

    /// Initiator (`iw_connect`): the TCP handshake ended. Sends the MPA request once it
    /// succeeded; returns whether processing may go on.
    fn cm_connected_tcp(self: &Arc<Self>, g: &mut Inner) -> bool {
        match g.sock.as_ref().map(Socket::alive) {
            Some(Ok(true)) => {}
            Some(Ok(false)) => return false,
            Some(Err(e)) => {
                self.connect_failed(g, e);
                return false;
            }
            None => {
                self.close_locked(g, How::Error);
                return false;
            }
        }
        let sent = if let Some(sc) = g.sctp.as_deref_mut() {
            // The DDP Stream Session Initiate, DDP-SSN 0, with the ULP's private data.
            let c = Control {
                ssn: sc.tx_ssn.take(),
                function: Function::Initiate,
                private_data: &sc.pd,
            };
            Some(send_control(g.sock.as_ref(), &c) && sc.session.initiate_sent().is_ok())
        } else {
            g.sent.as_ref().map(|s| {
                let f = s.frame();
                send_frame(g.sock.as_ref(), &f)
            })
        };
        if sent != Some(true) {
            self.connect_failed(g, ECONNRESET);
            return false;
        }
        g.phase = Phase::AwaitReply;
        self.set_deadline(g, MPA_REPLY_TIMEOUT_MS);
        true
    }

    /// Initiator (`iw_connect`): the connection could not be made; the connection manager
    /// hears why (`ECONNREFUSED` and `ECONNRESET` become REJECTED, `ETIMEDOUT` UNREACHABLE).
    fn connect_failed(self: &Arc<Self>, g: &mut Inner, e: Error) {
        log::debug!(self.tables.name(), "connect failed: {:?}\n", e);
        // A reset is not the peer's ULP refusing: iWARP reserves ECONNREFUSED for an MPA
        // reject (`rdma_is_consumer_reject()`), as cxgb4 and irdma report a reset.
        let e = if e == ECONNREFUSED { ECONNRESET } else { e };
        self.report_reply(g, &EventData::failed(e));
        self.close_locked(g, How::Error);
    }

    /// Initiator over SCTP: the association did not come up in [`SCTP_TRY_TIMEOUT_MS`]. It
    /// is aborted (which ends the responder's side of it too) and a fresh socket, bound to
    /// the same address and port, connects again, until the connect's own deadline; then,
    /// or for a connection over TCP, the error to fail the connect with.
    fn sctp_try_again(self: &Arc<Self>, g: &mut Inner) -> Result {
        let left = g
            .connect_by
            .map_or(0, |by| (by - Instant::now()).as_millis_ceil());
        let (Some(cm), true) = (g.cm.as_ref(), left > 0) else {
            return Err(ETIMEDOUT);
        };
        // Up just now (its state change's kick still to run): let that run take it on.
        if g.sock
            .as_ref()
            .is_some_and(|s| matches!(s.alive(), Ok(true)))
        {
            self.set_deadline(g, u32::try_from(left).unwrap_or(u32::MAX));
            self.kick();
            return Ok(());
        }
        let (laddr, raddr) = (cm.mapped_local_addr(), cm.mapped_remote_addr());
        let family = laddr.family().ok_or(EINVAL)?;
        let old = g.sock.take().ok_or(ENOTCONN)?;
        let fresh = Socket::new_stream_beside(&old, family, cm.afonly());
        old.detach(&**self);
        old.abort_on_release();
        drop(old);
        let fresh = fresh?;
        fresh.bind(&laddr)?;
        fresh.set_liveness(peer_timeout_ms());
        g.sock = Some(fresh);
        self.attach(g);
        g.sock.as_ref().ok_or(ENOTCONN)?.connect_nonblock(&raddr)?;
        log::debug!(
            self.tables.name(),
            "SCTP association not up in {} ms: trying again\n",
            SCTP_TRY_TIMEOUT_MS
        );
        self.tables.count(Counter::SctpStalledAssocs);
        let ms = u32::try_from(left)
            .unwrap_or(u32::MAX)
            .min(SCTP_TRY_TIMEOUT_MS);
        self.set_deadline(g, ms);
        self.kick();
        Ok(())
    }

    /// The connection broke before it was up: an initiator of a connection made by
    /// `modify_qp` tries again, anything else ends.
    fn lost(self: &Arc<Self>, g: &mut Inner) {
        if g.av.is_some() {
            self.av_retry(g);
        } else {
            self.close_locked(g, How::Error);
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
                    send_reject(&self.tables, g.sock.as_ref(), &pol, &frame.header, &[]);
                }
                self.close_locked(g, How::Error);
                return;
            }
        }
        // Out of the reader's buffer, which the endpoint's lock covers: negotiation refused
        // more than the connection manager can carry.
        let header = frame.header;
        let mut pd = [0u8; PD_MAX_ULP];
        let n = frame.private_data.len().min(PD_MAX_ULP);
        pd[..n].copy_from_slice(&frame.private_data[..n]);
        let d = EventData {
            status: 0,
            private_data: &pd[..n],
            ird,
            ord,
        };
        if self.offer_request(g, &d).is_err() {
            // The core is out of memory: refuse the connection in-band, so the
            // initiator learns of it at once instead of waiting for its timeout.
            send_reject(&self.tables, g.sock.as_ref(), &pol, &header, &[]);
            self.close_locked(g, How::Error);
        }
    }

    /// Responder: hands the peer's request `d` to the listener's connection manager
    /// (CONNECT_REQUEST) and waits for the ULP's accept or reject. Ends the endpoint when
    /// there is no listener or no room; `Err` when the core refused the upcall (out of
    /// memory): the caller answers the peer, then closes.
    fn offer_request(self: &Arc<Self>, g: &mut Inner, d: &EventData<'_>) -> Result<(), ()> {
        let cm = g.listener.take().and_then(|listener| {
            let lg = listener.inner.lock();
            (lg.phase == Phase::Listen).then(|| lg.cm.clone()).flatten()
        });
        let Some(cm) = cm else {
            self.close_locked(g, How::Error);
            return Ok(());
        };
        g.phase = Phase::Requested;
        // Kept here until the ULP answers: the core names it by cookie only.
        if self
            .tables
            .insert_request(self.cookie, self.clone())
            .is_err()
        {
            self.close_locked(g, How::Error);
            return Ok(());
        }
        let Some(sock) = g.sock.as_ref() else {
            return Ok(());
        };
        match cm.connect_request(sock.addrs(), d, self.cookie) {
            Ok(()) => {
                self.set_deadline(g, ACCEPT_TIMEOUT_MS);
                Ok(())
            }
            Err(e) => {
                log::warning!(
                    self.tables.name(),
                    "connection manager refused a connect request: {:?}\n",
                    e
                );
                Err(())
            }
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
                log::warning!(
                    self.tables.name(),
                    "connection manager refused CONNECT_REPLY: {:?}\n",
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
        let req = sent.frame();
        let r = negotiate_initiator(&g.policy, &req, &reply);
        // Negotiation refuses more than the connection manager can carry.
        let mut pd = [0u8; PD_MAX_ULP];
        let n = reply.private_data.len().min(PD_MAX_ULP);
        pd[..n].copy_from_slice(&reply.private_data[..n]);
        let agreed = match r {
            Ok(a) => a,
            Err(rej) => {
                let (status, n) = match rej {
                    Reject::PeerRejected => {
                        self.tables.count(Counter::ConnectionsRefused);
                        (ECONNREFUSED, n)
                    }
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
        let params = LinkParams::of(&agreed);
        let ok = match g.qp.as_ref() {
            Some(qp) => {
                let mut st = qp.lock();
                let ok = qp.connected(&mut st, self.clone(), params).is_ok();
                // Peer-to-peer: the RTR message is the first FPDU, before any work.
                if let (true, Some(rtr), Some(link)) = (ok, agreed.rtr, st.link_mut()) {
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
        self.clear_deadline(g);
        if self.kind == Kind::Cm && g.sctp.is_none() {
            g.wake = Some(ResponderWake::default());
            self.arm_backoff(ResponderWake::first_ms());
        }
        true
    }

    /// Initiator: one look of [`ResponderWake`]: a zero-length RDMA Write if this side has
    /// sent FPDUs and heard none, and the next look armed.
    fn wake_look(self: &Arc<Self>, g: &mut Inner) {
        let Some(mut w) = g.wake.take() else {
            return;
        };
        let Some(qp) = g.qp.clone().filter(|_| g.phase == Phase::Established) else {
            return;
        };
        let look = {
            let mut st = qp.lock();
            let Some(link) = st.link_mut() else {
                return;
            };
            // The QP's own count: an iWARP QP has one connection in its life.
            let sent = qp.stats().get(Counter::TxFpdus) > 0;
            let look = w.look(sent, link.rx.messages > 0);
            if look.write {
                link.tx.send_wake();
            }
            look
        };
        if look.write {
            log::debug!(
                self.tables.name(),
                "nothing heard from the responder: a zero-length Write wakes it\n"
            );
            self.kick();
        }
        if let Some(ms) = look.next_ms {
            g.wake = Some(w);
            self.arm_backoff(ms);
        }
    }

    /// Over SCTP: takes the next message of the session setup (the Initiate, or the answer
    /// to ours); returns true when the phase moved on and processing may continue.
    fn sctp_step(self: &Arc<Self>, g: &mut Inner) -> bool {
        let inner = &mut *g;
        let (Some(sock), Some(sc)) = (inner.sock.as_ref(), inner.sctp.as_deref_mut()) else {
            return false;
        };
        let at = match sc.next(sock, &self.tables) {
            Ok(Some(at)) => at,
            Ok(None) => {
                if sock.alive().is_err() {
                    self.close_locked(g, How::Error);
                }
                return false;
            }
            Err(f) => {
                self.sctp_failed(g, f);
                return false;
            }
        };
        // What came, with its private data copied out of the buffer.
        let (session, ppid, msg) = sc.message(at);
        let mut pd = [0u8; SCTP_PD_MAX];
        let r = session.receive(ppid, msg).map(|r| {
            let (kind, data): (u8, &[u8]) = match r {
                Received::Initiate(d) => (0, d),
                Received::Accepted(d) => (1, d),
                Received::Rejected(d) => (2, d),
                Received::Terminated => (3, &[]),
                Received::Segment(_) => (4, &[]),
            };
            let n = data.len().min(pd.len());
            pd[..n].copy_from_slice(&data[..n]);
            (kind, n)
        });
        sc.consume(at);
        match r {
            Ok((0, n)) => {
                self.got_sctp_request(g, &pd[..n]);
                false
            }
            Ok((1, n)) => self.got_sctp_accept(g, &pd[..n]),
            Ok((2, n)) => {
                self.tables.count(Counter::ConnectionsRefused);
                let n = n.min(PD_MAX_ULP);
                self.report_reply(
                    g,
                    &EventData {
                        status: ECONNREFUSED.to_errno(),
                        private_data: &pd[..n],
                        ..Default::default()
                    },
                );
                self.close_locked(g, How::Error);
                false
            }
            Ok(_) => {
                self.close_locked(g, How::Error);
                false
            }
            Err(e) => {
                self.sctp_failed(g, SctpFail::Session(e));
                false
            }
        }
    }

    /// The adaptation layer gives up on the connection: an association that is not a DDP
    /// one is aborted without a word; anything else ends with the session's Terminate.
    fn sctp_failed(self: &Arc<Self>, g: &mut Inner, f: SctpFail) {
        log::debug!(self.tables.name(), "sctp: {:?}\n", f);
        if let Some(sc) = g.sctp.as_deref_mut() {
            match f {
                SctpFail::NotDdp => sc.abort = true,
                SctpFail::Session(_) | SctpFail::TooMuchEarly => sc.session.fail(),
                SctpFail::Socket(_) => {}
            }
        }
        self.close_locked(g, How::Error);
    }

    /// Passive side: the Initiate is in; tell the connection manager. RFC 5043 carries no
    /// IRD or ORD: each end serves as many of the peer's Reads as it can at all
    /// ([`SIW_MAX_IRD_ORD`]), so whatever ORD the peer's ULP chose is within it, and the
    /// request offers that many each way.
    fn got_sctp_request(self: &Arc<Self>, g: &mut Inner, pd: &[u8]) {
        // More than the connection manager can carry.
        if pd.len() > PD_MAX_ULP {
            self.close_locked(g, How::Error);
            return;
        }
        let d = EventData {
            status: 0,
            private_data: pd,
            ird: clamp_u8(SIW_MAX_IRD_ORD),
            ord: clamp_u8(SIW_MAX_IRD_ORD),
        };
        if self.offer_request(g, &d).is_err() {
            self.close_locked(g, How::Error);
        }
    }

    /// Active side: the Accept is in; the QP goes to RTS and the connection manager hears.
    fn got_sctp_accept(self: &Arc<Self>, g: &mut Inner, pd: &[u8]) -> bool {
        let Some((ord, max_segment)) = g.sctp.as_deref().map(|s| (s.ord, s.max_segment)) else {
            return false;
        };
        if pd.len() > PD_MAX_ULP {
            self.close_locked(g, How::Error);
            return false;
        }
        let params = LinkParams::sctp(SIW_MAX_IRD_ORD, ord, max_segment);
        let ok = match g.qp.as_ref() {
            Some(qp) => qp.connected(&mut qp.lock(), self.clone(), params).is_ok(),
            None => false,
        };
        let d = if ok {
            EventData {
                status: 0,
                private_data: pd,
                ird: clamp_u8(SIW_MAX_IRD_ORD),
                ord: clamp_u8(ord),
            }
        } else {
            EventData::failed(ECONNRESET)
        };
        if !self.report_reply(g, &d) {
            self.close_locked(g, How::Error);
            return false;
        }
        g.phase = Phase::Established;
        self.clear_deadline(g);
        true
    }

    /// The connection's local and remote addresses, while it has a socket.
    pub(crate) fn addrs(&self) -> Option<(SockAddr, SockAddr)> {
        self.inner.lock().sock.as_ref().map(Socket::addrs)
    }

    /// Everything sent on this connection has been acknowledged by the peer's TCP: the
    /// Read watchdog's proof that our Read Requests reached the peer.
    pub(crate) fn all_acked(&self) -> bool {
        self.inner
            .lock()
            .sock
            .as_ref()
            .is_some_and(|s| s.unacked() == 0)
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
        let rtr_in = qp.lock().link().is_some_and(|l| l.rx.messages > 0);
        if rtr_in {
            g.phase = Phase::Established;
            self.clear_deadline(g);
            if let Some(cm) = g.cm.as_ref() {
                notify(cm, CmEvent::Established);
            }
        }
    }

    /// From now on the socket's data-ready callback receives in place (TCP only: an SCTP
    /// message's DDP-SSN ordering runs in the work).
    fn enable_callback_receive(&self, g: &Inner) {
        if g.sctp.is_some() {
            return;
        }
        if let Some(qp) = g.qp.as_ref() {
            let mut fast = self.fast.lock();
            if fast.is_none() {
                *fast = Some(qp.clone());
            }
        }
    }

    /// Receives in the socket's data-ready callback, in softirq, as the C siw does: this
    /// saves the hand-off to the connection's work, and its context switch, per message.
    /// Returns false when the work must run instead or as well:
    /// - more than `callback_rx_max` bytes wait: bulk data is read in larger batches by the
    ///   work (read in the callback, each skb gets its own read and often its own window
    ///   update: measured, `read_bw 64K` lost a quarter);
    /// - it is not receiving here (not yet established, or closing), or a process owns the
    ///   QP's state (the work, a doorbell or a verb: the work reads then);
    /// - receiving stopped (a Terminate to send, or the peer's), or the read failed: the
    ///   work acts on it, since only it may send and close;
    /// - the transmit side has work: a Read or Atomic to answer, the first message in (a
    ///   responder's hold on its first FPDU ends), or an ORD slot freed that a posted Read
    ///   waits for.
    fn receive_in_callback(&self, sk: &CallbackSock<'_>) -> bool {
        let limit = crate::module_parameters::callback_rx_max.value();
        if sk.queued() > usize::try_from(limit).unwrap_or(0) {
            return false;
        }
        let fast = self.fast.lock();
        let Some(qp) = fast.as_ref() else {
            return false;
        };
        let Some(mut st) = qp.try_lock_bh() else {
            return false;
        };
        if !st.ep().is_some_and(|e| core::ptr::eq(&**e, self)) {
            return false;
        }
        let (messages, orq) = match st.link() {
            Some(l) if !l.rx.stopped() => (l.rx.messages, l.tx.orq.len()),
            _ => return false,
        };
        let mut stop = None;
        let r = sk.read(&mut |buf| {
            let (n, s) = rx::feed(qp, &mut st, buf);
            if s.is_some() {
                stop = s;
            }
            n
        });
        let Some(link) = st.link_mut() else {
            return false;
        };
        if let Some(s) = stop {
            link.rx.defer(s);
            return false;
        }
        let answer = !link.tx.irq.is_empty();
        let first = messages == 0 && link.rx.messages > 0;
        let freed = link.tx.orq.len() < orq;
        let work_due = r.is_err() || answer || first || (freed && qp.sq_waiting(&st));
        !work_due
    }

    /// The data path: receive what arrived (if `rx`), send what is queued, notice the peer
    /// leaving.
    fn data(self: &Arc<Self>, g: &mut Inner, rx: bool) {
        let inner = &mut *g;
        let (Some(sock), Some(qp)) = (inner.sock.as_ref(), inner.qp.as_ref()) else {
            return;
        };
        let mut sctp = inner.sctp.as_deref_mut();
        let mut how = None;
        let mut again = false;
        let mut fail = None;
        // The peer's FIN comes in order behind its last data, but the socket may show it
        // only after the read below (`release_sock()` runs the backlog: the last message
        // and the FIN together). Only a read that began with the close already visible has
        // taken everything the peer sent; ending the connection sooner would flush a
        // receive its data is waiting for (an SRQ's receive never completes at all).
        let closed_before = rx && sock.alive().is_err();
        {
            let mut st = qp.lock();
            if !st.ep().is_some_and(|e| Arc::ptr_eq(e, self)) {
                // The QP left RTS; `close_from_qp` is on its way.
                return;
            }
            let mut stop = None;
            // After an error the receiver takes nothing more, so the read stops at the next
            // piece (an error at the very end of one piece consumed it whole).
            let r = if !rx {
                Ok(0)
            } else if let Some(sc) = sctp.as_deref_mut() {
                match sctp_rx(sc, sock, qp, &mut st) {
                    SctpRx::Idle => {}
                    SctpRx::More => again = true,
                    SctpRx::PeerEnded => how = Some(How::Peer),
                    SctpRx::Stop(s) => stop = Some(s),
                    SctpRx::Fail(f) => fail = Some(f),
                }
                Ok(0)
            } else {
                sock.read(&mut |buf| {
                    let (n, s) = rx::feed(qp, &mut st, buf);
                    if s.is_some() {
                        stop = s;
                    }
                    n
                })
            };
            if stop.is_none() {
                // The socket's callback stopped receiving and left it to us.
                stop = st.link_mut().and_then(|l| l.rx.take_deferred());
            }
            let qpn = st.ids().qpn;
            match &stop {
                Some(RxStop::Term(e)) => {
                    log::debug!(
                        self.tables.name(),
                        "QP {}: bad input, a TERMINATE goes out: {:?}\n",
                        qpn,
                        e
                    )
                }
                Some(RxStop::PeerTerminated) => {
                    log::debug!(
                        self.tables.name(),
                        "QP {}: the peer ended the stream (TERMINATE)\n",
                        qpn
                    )
                }
                None => {}
            }
            if let Err(e) = &r {
                log::debug!(
                    self.tables.name(),
                    "QP {}: reading the socket failed: {:?}\n",
                    qpn,
                    e
                );
            }
            match stop {
                Some(RxStop::Term(e)) => {
                    if let Some(link) = st.link_mut() {
                        let mut raw = [0u8; 72];
                        let h = link.rx.raw_header();
                        let n = h.len().min(raw.len());
                        raw[..n].copy_from_slice(&h[..n]);
                        link.tx.terminate(e, &raw[..n]);
                    }
                    // Best effort: send it now, then close.
                    let _ = tx::run(
                        qp,
                        &mut st,
                        sock,
                        sctp.as_deref_mut().map(|s| &mut s.tx_ssn),
                    );
                    how = Some(How::Error);
                }
                Some(RxStop::PeerTerminated) => how = Some(How::Error),
                None if r.is_err() || fail.is_some() => how = Some(How::Error),
                None => {}
            }
            if let Some(until) = inner.tx_hold {
                let heard = st.link().is_some_and(|l| l.rx.messages > 0);
                if heard || (until - Instant::now()).as_millis_ceil() <= 0 {
                    inner.tx_hold = None;
                }
            }
            if how.is_none() && inner.tx_hold.is_none() {
                match tx::run(qp, &mut st, sock, sctp.map(|s| &mut s.tx_ssn)) {
                    Ok(tx::Ran::Idle) => {}
                    Ok(tx::Ran::Yield) => again = true,
                    Err(TxStop::Terminated) => {
                        log::debug!(self.tables.name(), "QP {}: a TERMINATE went out\n", qpn);
                        how = Some(How::Error)
                    }
                    Err(TxStop::Failed) => {
                        log::debug!(
                            self.tables.name(),
                            "QP {}: sending failed (the socket, or a bad work request)\n",
                            qpn
                        );
                        how = Some(How::Error)
                    }
                    // The peer's close, which a reset makes visible: as it, once a read
                    // has taken what the peer sent before (below).
                    Err(TxStop::Lost) => log::debug!(
                        self.tables.name(),
                        "QP {}: the peer reset the connection\n",
                        qpn
                    ),
                }
            }
        }
        if how.is_none() && sock.alive().is_err() {
            if closed_before {
                how = Some(How::Peer);
            } else {
                // Read once more, now that the close shows, then end it.
                again = true;
            }
        }
        if let Some(f) = fail {
            self.sctp_failed(g, f);
        } else if let Some(h) = how {
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
        log::debug!(
            self.tables.name(),
            "connection ends in {:?}: {:?}\n",
            prev,
            how
        );
        g.phase = Phase::Closed;
        // No more receiving in the socket's callback (one in progress is waited for). The
        // QP goes after the lock: `g.qp` holds it too, but no drop under a spinlock.
        let fast = self.fast.lock().take();
        drop(fast);
        // Over SCTP an open session ends with our DDP Stream Session Terminate, in its turn
        // after our last segment (RFC 5043 section 6.2), unless the association is aborted.
        let term_ssn = g
            .sctp
            .as_deref_mut()
            .filter(|s| !s.abort && s.session.owes_terminate())
            .map(|s| s.tx_ssn.take());
        if let Some(qp) = g.qp.take() {
            let mut st = qp.lock();
            let ours = st.ep().is_none_or(|e| Arc::ptr_eq(e, self));
            // A QP already in ERROR (its deadline passed, or its user moved it) was flushed
            // and told; nothing more to do for it.
            if ours
                && st.state() != State::Error
                && matches!(
                    prev,
                    Phase::Established
                        | Phase::AwaitReply
                        | Phase::AwaitRtr
                        | Phase::Connecting
                        | Phase::Backoff
                )
            {
                // The peer's orderly close of a quiet connection made by `modify_qp` leaves
                // the QP in RTS (`QpCore::peer_left` says why).
                let left = how == How::Peer
                    && prev == Phase::Established
                    && g.sock.as_ref().is_some_and(Socket::peer_gone)
                    && qp.peer_left(&mut st);
                if !left {
                    qp.link_down(&mut st);
                    if how == How::Error {
                        st.fatal_event();
                    }
                }
            }
            drop(st);
            qp.timers_cancel();
        }
        if let Some(sock) = g.sock.take() {
            sock.detach(&**self);
            if let Some(ssn) = term_ssn {
                let c = Control {
                    ssn,
                    function: Function::Terminate,
                    private_data: &[],
                };
                send_control(Some(&sock), &c);
            }
            if g.sctp.as_deref().is_some_and(|s| s.abort) {
                sock.abort_on_release();
            } else {
                sock.shutdown();
            }
            drop(sock);
        }
        drop(g.listener.take());
        g.av = None;
        if prev == Phase::Requested {
            // Not ours to wait for any more: a late accept or reject finds nothing.
            drop(self.tables.take_request(self.cookie));
        }
        self.clear_deadline(g);
        if g.wake.take().is_some() {
            work::cancel_delayed::<_, 2>(self);
        }
        if matches!(prev, Phase::AwaitReply | Phase::Connecting) {
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

    /// Whether this endpoint is still the one `g.qp` waits on to connect.
    fn av_wanted(self: &Arc<Self>, g: &Inner) -> bool {
        g.qp.as_ref()
            .is_some_and(|qp| qp.av_waits_on(&qp.lock(), self))
    }

    /// Initiator of a connection made by `modify_qp`: one more try, on the fresh socket.
    fn av_try(self: &Arc<Self>, g: &mut Inner) {
        if !self.av_wanted(g) {
            self.close_locked(g, How::Local);
            return;
        }
        let (Some(av), Some(sock)) = (g.av.as_ref(), g.sock.as_ref()) else {
            self.close_locked(g, How::Error);
            return;
        };
        // Callbacks first: the handshake may end before `connect` returns.
        sock.attach(self.clone());
        sock.set_liveness(peer_timeout_ms());
        // An ephemeral source port: never one of sunrpc's reserved ports, whatever the
        // number of connections. The PSNs, not the port, tell the responder who connects.
        let r = sock
            .bind(&av.from)
            .and_then(|()| sock.connect_nonblock(&av.to));
        if let Err(e) = r {
            log::debug!(self.tables.name(), "av connect: {:?}\n", e);
            self.av_retry(g);
            return;
        }
        g.phase = Phase::Connecting;
        self.set_deadline(g, AV_TRY_TIMEOUT_MS);
        self.kick();
    }

    /// Initiator of a connection made by `modify_qp`: this try failed (no listener yet, a
    /// refusal, which never says why, a timeout): wait, then try again on a fresh socket. The QP's own
    /// deadline ends the tries (it moves to ERROR, which closes this endpoint).
    fn av_retry(self: &Arc<Self>, g: &mut Inner) {
        if !self.av_wanted(g) {
            self.close_locked(g, How::Local);
            return;
        }
        let Some(old) = g.sock.take() else {
            self.close_locked(g, How::Error);
            return;
        };
        old.detach(&**self);
        let fresh =
            g.av.as_ref()
                .and_then(|av| av.to.family())
                .ok_or(EINVAL)
                .and_then(|f| Socket::new_stream_beside(&old, f, true));
        drop(old);
        let (Ok(fresh), Some(av)) = (fresh, g.av.as_mut()) else {
            self.close_locked(g, How::Error);
            return;
        };
        g.sock = Some(fresh);
        g.sent = None;
        g.mpa.reset();
        let wait = av.backoff_ms;
        av.backoff_ms = wait.saturating_mul(2).min(AV_BACKOFF_MAX_MS);
        g.phase = Phase::Backoff;
        self.clear_deadline(g);
        self.arm_backoff(wait);
    }

    /// Runs the second timer in `ms`: [`Ep::av_try`] from the workqueue, or the end of a
    /// responder's hold.
    fn arm_backoff(self: &Arc<Self>, ms: u32) {
        if let Some(q) = work::queue() {
            work::timer_armed();
            if q.enqueue_delayed::<_, 2>(self.clone(), msecs_to_jiffies(ms))
                .is_err()
            {
                work::timer_done();
            }
        }
    }

    /// Initiator of a connection made by `modify_qp`: the TCP handshake ended. Sends the MPA
    /// request once it succeeded; returns whether processing may go on.
    fn av_connected_tcp(self: &Arc<Self>, g: &mut Inner) -> bool {
        match g.sock.as_ref().map(Socket::alive) {
            Some(Ok(true)) => {}
            Some(Ok(false)) => return false,
            _ => {
                self.lost(g);
                return false;
            }
        }
        let (Some(av), Some(qp)) = (g.av.as_ref(), g.qp.as_ref()) else {
            self.close_locked(g, How::Error);
            return false;
        };
        let (sq_psn, _) = qp.av_psns(&qp.lock());
        let (header, ird_ord) = build_request(&g.policy);
        let pd = Message::Request {
            from: av.local.qpn,
            to: av.remote.qpn,
            psn: sq_psn,
        }
        .encode();
        let mut private_data = KVec::new();
        if private_data.extend_from_slice(&pd, GFP_KERNEL).is_err() {
            self.close_locked(g, How::Error);
            return false;
        }
        let f = MpaFrame {
            header,
            ird_ord,
            private_data: &pd,
        };
        if !send_frame(g.sock.as_ref(), &f) {
            self.lost(g);
            return false;
        }
        g.sent = Some(Sent {
            header,
            ird_ord,
            private_data,
        });
        g.phase = Phase::AwaitReply;
        self.set_deadline(g, AV_TRY_TIMEOUT_MS);
        true
    }

    /// Initiator of a connection made by `modify_qp`: the MPA reply is in.
    fn got_av_reply(self: &Arc<Self>, g: &mut Inner) -> bool {
        let (Ok(reply), Some(sent), Some(av), Some(qp)) =
            (g.mpa.frame(), g.sent.as_ref(), g.av.as_ref(), g.qp.as_ref())
        else {
            self.close_locked(g, How::Error);
            return false;
        };
        let (_, rq_psn) = qp.av_psns(&qp.lock());
        match gidconn::outcome(
            av.local.qpn,
            av.remote.qpn,
            rq_psn,
            reply.header.reject,
            reply.private_data,
        ) {
            Outcome::Connected => {}
            Outcome::Retry => {
                self.av_retry(g);
                return false;
            }
            Outcome::Fail => {
                log::debug!(
                    self.tables.name(),
                    "av connection: the reply is not the accept expected\n"
                );
                self.close_locked(g, How::Error);
                return false;
            }
        }
        let req = sent.frame();
        let Ok(agreed) = negotiate_initiator(&g.policy, &req, &reply) else {
            self.close_locked(g, How::Error);
            return false;
        };
        let params = LinkParams::of(&agreed);
        let ok = g.qp.as_ref().is_some_and(|qp| {
            let mut st = qp.lock();
            qp.av_waits_on(&st, self) && qp.av_connected(&mut st, self.clone(), params).is_ok()
        });
        if !ok {
            self.close_locked(g, How::Error);
            return false;
        }
        g.phase = Phase::Established;
        self.clear_deadline(g);
        g.av = None;
        true
    }

    /// Responder of a connection made by `modify_qp`: the MPA request is in. Accepts it if
    /// the QP it names waits, in RTS, for exactly this peer and the PSN it carries; refuses
    /// anything else with the one refusal that says nothing.
    fn got_av_request(self: &Arc<Self>, g: &mut Inner) {
        drop(g.listener.take());
        let (header, msg, peer) = match (g.mpa.frame(), g.sock.as_ref()) {
            (Ok(f), Some(s)) => (f.header, Message::parse(f.private_data), s.addrs().1),
            _ => {
                self.close_locked(g, How::Error);
                return;
            }
        };
        let Some(Message::Request { from, to, psn }) = msg else {
            self.refuse_av(g, &header, gidconn::Refused::NotWaiting);
            return;
        };
        let qp = self.tables.qp(to);
        let peer = peer.ip16().map(|gid| End { gid, qpn: from });
        let verdict = match (qp.as_ref(), peer) {
            (Some(qp), Some(peer)) => self.av_accept(g, qp, &peer, psn),
            _ => Err(gidconn::Refused::NotWaiting),
        };
        let (acc, sq_psn) = match verdict {
            Ok(v) => v,
            Err(r) => {
                self.refuse_av(g, &header, r);
                return;
            }
        };
        let pd = Message::Accept {
            from: to,
            to: from,
            psn: sq_psn,
        }
        .encode();
        g.qp = qp;
        g.phase = Phase::Established;
        self.clear_deadline(g);
        if !send_frame(g.sock.as_ref(), &acc.reply_frame(&pd)) {
            self.close_locked(g, How::Error);
            return;
        }
        self.kick();
    }

    /// Responder of a connection made by `modify_qp`: sends the one refusal and closes;
    /// why stays in the debug log.
    fn refuse_av(self: &Arc<Self>, g: &mut Inner, header: &MpaHeader, why: gidconn::Refused) {
        log::debug!(self.tables.name(), "av request refused: {:?}\n", why);
        send_reject(
            &self.tables,
            g.sock.as_ref(),
            &base_policy(),
            header,
            &Message::Refuse.encode(),
        );
        self.close_locked(g, How::Error);
    }

    /// Attaches this endpoint to `qp` if it waits for `from` with `psn`: the MPA reply to
    /// send and the responder's `sq_psn` for it, or why not.
    fn av_accept(
        self: &Arc<Self>,
        g: &Inner,
        qp: &Arc<QpCore>,
        from: &End,
        psn: u32,
    ) -> Result<(MpaAccept, u32), gidconn::Refused> {
        let mut st = qp.lock();
        let (waits, ird) = qp.av_waits(&st);
        let sq_psn = gidconn::answer(from, psn, waits)?;
        let mut p = base_policy();
        p.ird = ird.min(p.max_ird);
        p.ord = p.max_ord;
        let acc = g
            .mpa
            .frame()
            .ok()
            .and_then(|f| negotiate_responder(&p, &f).ok())
            .ok_or(gidconn::Refused::NotWaiting)?;
        let params = LinkParams::of(&acc.agreed);
        qp.av_connected(&mut st, self.clone(), params)
            .map_err(|_| gidconn::Refused::NotWaiting)?;
        Ok((acc, sq_psn))
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
        pr_err!("connection manager refused {:?}: {:?}\n", ev, e);
    }
}

/// Answers the request `req` with a reject frame carrying `private_data` (the core passes
/// at most 255 bytes), and counts the refusal on the device of `tables`.
fn send_reject(
    tables: &Tables,
    sock: Option<&Socket>,
    policy: &MpaPolicy,
    req: &MpaHeader,
    private_data: &[u8],
) {
    tables.count(Counter::ConnectionsRefused);
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

/// What one pass over an SCTP connection's incoming messages found.
enum SctpRx {
    /// All in-order messages taken.
    Idle,
    /// [`crate::sctp::RX_BURST`] taken; more may wait.
    More,
    /// The peer's DDP Stream Session Terminate came, in its turn.
    PeerEnded,
    /// The receive engine stopped (a Terminate to send, or the peer's RDMAP Terminate).
    Stop(RxStop),
    /// The adaptation layer gives up.
    Fail(SctpFail),
}

/// Takes an open session's messages in DDP-SSN order into the receive engine.
fn sctp_rx(sc: &mut SctpLink, sock: &Socket, qp: &QpCore, st: &mut crate::qp::QpState) -> SctpRx {
    for _ in 0..crate::sctp::RX_BURST {
        let at = match sc.next(sock, qp.tables()) {
            Ok(Some(at)) => at,
            Ok(None) => return SctpRx::Idle,
            Err(f) => return SctpRx::Fail(f),
        };
        let (session, ppid, msg) = sc.message(at);
        let r = match session.receive(ppid, msg) {
            Ok(Received::Segment(_)) => rx::feed_message(qp, st, msg).map(SctpRx::Stop),
            Ok(Received::Terminated) => Some(SctpRx::PeerEnded),
            // Session setup messages in an open session: `receive` refuses them.
            Ok(_) => Some(SctpRx::Fail(SctpFail::Session(
                crate::proto::sctp::SctpError::OutOfSequence,
            ))),
            Err(e) => Some(SctpRx::Fail(SctpFail::Session(e))),
        };
        sc.consume(at);
        if let Some(r) = r {
            return r;
        }
    }
    SctpRx::More
}

/// Sends a DDP Stream Session Control message (never blocking: the session's few control
/// messages go where the send buffer is empty or nearly).
fn send_control(sock: Option<&Socket>, c: &Control<'_>) -> bool {
    let Some(sock) = sock else {
        return false;
    };
    let mut buf = [0u8; CONTROL_HDR_LEN + SCTP_PD_MAX];
    let Ok(n) = c.encode(&mut buf) else {
        return false;
    };
    let Some(b) = buf.get(..n) else {
        return false;
    };
    sock.send_message(&[IoVec::new(b)], PPID_SESSION_CONTROL)
        .is_ok_and(|k| k == n)
}

/// The largest DDP segment to send over SCTP from `dev` (RFC 5043 section 9): what fits in
/// one packet of the netdev's MTU after the IP, SCTP common and DATA chunk headers and the
/// DDP-SSN, less room for a SACK chunk bundled with it; at least the RFC's minimum.
fn sctp_max_segment(dev: &Device<Siw>, family: Family) -> u16 {
    let ip = match family {
        Family::Inet => 20,
        Family::Inet6 => 40,
    };
    let mtu = dev.with_netdev(|nd| nd.mtu()).unwrap_or(1500);
    let seg = mtu.saturating_sub(ip + 12 + 16 + 2 + 16);
    let seg = (seg as usize).clamp(MIN_MAX_SEGMENT, crate::sctp::MAX_SEGMENT);
    u16::try_from(seg).unwrap_or(u16::MAX)
}

/// The transport of `dev`'s connections.
fn transport_of(dev: &Device<Siw>) -> Transport {
    let d: &SiwDev = dev.data();
    match d.llp {
        Llp::Mpa => Transport::Tcp,
        Llp::Sctp => Transport::Sctp,
    }
}

/// The socket for a connection from `cm`'s local to its remote address, and that remote
/// address: bound first, as the C siw does, so the ULP's source address and port hold. Made
/// in the namespace of `dev`'s netdev, where that address is; the C siw makes it in the
/// caller's, so a kernel consumer connecting from a worker (xprtrdma: an NFS mount in a
/// network namespace) gets `EADDRNOTAVAIL` from it.
fn connect_socket(dev: &Device<Siw>, cm: &CmId) -> Result<(Socket, SockAddr)> {
    let (laddr, raddr) = (cm.mapped_local_addr(), cm.mapped_remote_addr());
    let family = laddr.family().ok_or(EAFNOSUPPORT)?;
    if raddr.family() != Some(family) {
        return Err(EINVAL);
    }
    let t = transport_of(dev);
    let s = dev.with_netdev(|nd| Socket::new_stream_in(t, nd, family, cm.afonly()))??;
    s.bind(&laddr)?;
    Ok((s, raddr))
}

/// The listening socket for `cm` on `dev`; `None` when there is nothing to listen on.
///
/// A wildcard listen only serves the device's netdev, as in the C siw. When that netdev lives
/// in another network namespace than the listener, no connection can reach it from here:
/// listen on nothing, rather than bind to whatever has the same ifindex in this namespace
/// (which the C siw does, making wildcard listens across namespaces collide).
fn listen_socket(dev: &Device<Siw>, cm: &CmId, backlog: i32) -> Result<Option<Socket>> {
    let laddr = cm.local_addr();
    let family = laddr.family().ok_or(EAFNOSUPPORT)?;
    let s = Socket::new_stream(transport_of(dev), family, cm.afonly())?;
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

/// QP `qpn`, if the caller of `cm`'s connect or accept may bind it
/// ([`crate::glue::rdma::cm::IwCmId::may_bind`]): a QP it may not bind fails as one that does not exist.
fn bindable(tables: &Tables, cm: &CmId, qpn: u32) -> Option<Arc<QpCore>> {
    tables
        .qp(qpn)
        .filter(|qp| qp.cm_handle().is_some_and(|h| cm.may_bind(h)))
}

/// `iw_connect`: returns at once. The TCP handshake and the MPA exchange run in the
/// background; their outcome reaches the connection manager as CONNECT_REPLY (the C siw
/// blocks here until TCP connects or gives up).
pub(crate) fn connect(dev: &Device<Siw>, cm: CmId, p: &ConnParam<'_>) -> Result {
    let d: &SiwDev = dev.data();
    let qp = bindable(&d.tables, &cm, p.qpn).ok_or(EINVAL)?;
    let pd_max = match d.llp {
        Llp::Mpa => PD_MAX_SIW,
        Llp::Sctp => SCTP_PD_MAX,
    };
    if p.private_data.len() > pd_max {
        return Err(EINVAL);
    }
    let (s, raddr) = connect_socket(dev, &cm)?;
    let family = raddr.family().ok_or(EINVAL)?;
    let ep = Ep::new(d.tables.clone(), Kind::Cm, Phase::Connecting, Some(s), None)?;
    let mut pol = policy(p.ird, p.ord);
    initiator_p2p(&mut pol);
    let (header, ird_ord) = build_request(&pol);
    let mut private_data = KVec::new();
    private_data.extend_from_slice(p.private_data, GFP_KERNEL)?;
    let mut g = ep.inner.lock();
    if let Some(sc) = g.sctp.as_deref_mut() {
        // The Initiate carries the private data alone: nothing to negotiate over SCTP.
        sc.pd = core::mem::take(&mut private_data);
        sc.ord = pol.ord;
        sc.max_segment = sctp_max_segment(dev, family);
    }
    {
        let mut st = qp.lock();
        if st.ep().is_some() {
            return Err(EBUSY);
        }
        // As the C siw (`siw_connect()`), only a QP not past RTR connects: one in ERROR is
        // being destroyed, one in RTS without an endpoint was connected by `modify_qp` and
        // its peer has left (`QpCore::peer_left`).
        if !matches!(st.state(), State::Idle | State::Rtr) {
            return Err(EINVAL);
        }
        st.set_ep(ep.clone());
    }
    g.qp = Some(qp);
    g.policy = pol;
    g.sent = Some(Sent {
        header,
        ird_ord,
        private_data,
    });
    // Callbacks first: the handshake's end (its state change) kicks the endpoint, which
    // then sends the MPA request (`cm_connected_tcp`).
    ep.attach(&g);
    let r = g.sock.as_ref().ok_or(ENOTCONN).and_then(|s| {
        s.set_liveness(peer_timeout_ms());
        s.connect_nonblock(&raddr)
    });
    if let Err(e) = r {
        // Failed at once (no route, say): the caller hears it, and the QP stays as it was,
        // as after the C siw's failed connect.
        if let Some(qp) = g.qp.take() {
            qp.lock().clear_ep();
        }
        ep.close_locked(&mut g, How::Local);
        return Err(e);
    }
    g.cm = Some(cm);
    if g.sctp.is_some() {
        g.connect_by = Some(Instant::now() + Delta::from_millis(i64::from(CONNECT_TIMEOUT_MS)));
        ep.set_deadline(&mut g, SCTP_TRY_TIMEOUT_MS);
    } else {
        ep.set_deadline(&mut g, CONNECT_TIMEOUT_MS);
    }
    drop(g);
    ep.kick();
    Ok(())
}

/// `iw_accept`.
pub(crate) fn accept(dev: &Device<Siw>, cm: CmId, req: RequestCookie, p: &ConnParam<'_>) -> Result {
    let d: &SiwDev = dev.data();
    // Gone: rejected, timed out, or the peer left.
    let ep = d.tables.take_request(req).ok_or(ECONNRESET)?;
    let Some(qp) = bindable(&d.tables, &cm, p.qpn) else {
        let mut g = ep.inner.lock();
        ep.close_locked(&mut g, How::Error);
        return Err(EINVAL);
    };
    let mut g = ep.inner.lock();
    if g.phase != Phase::Requested {
        return Err(ECONNRESET);
    }
    if g.sctp.is_some() {
        return accept_sctp(dev, &ep, &mut g, cm, qp, p);
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
    let params = LinkParams::of(&acc.agreed);
    {
        let mut st = qp.lock();
        if st.ep().is_some() || qp.connected(&mut st, ep.clone(), params).is_err() {
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
        g.tx_hold = Some(Instant::now() + Delta::from_millis(i64::from(RESPONDER_HOLD_MS)));
        ep.arm_backoff(RESPONDER_HOLD_MS);
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

/// `iw_accept` of a request over SCTP: the QP goes to RTS, then the DDP Stream Session
/// Accept (DDP-SSN 0) carries the ULP's private data.
fn accept_sctp(
    dev: &Device<Siw>,
    ep: &Arc<Ep>,
    g: &mut Inner,
    cm: CmId,
    qp: Arc<QpCore>,
    p: &ConnParam<'_>,
) -> Result {
    if p.private_data.len() > SCTP_PD_MAX {
        ep.close_locked(g, How::Error);
        return Err(EINVAL);
    }
    let family = g
        .sock
        .as_ref()
        .and_then(|s| s.addrs().1.family())
        .unwrap_or(Family::Inet);
    let ord = u16::try_from(p.ord)
        .unwrap_or(u16::MAX)
        .min(SIW_MAX_IRD_ORD);
    let params = LinkParams::sctp(SIW_MAX_IRD_ORD, ord, sctp_max_segment(dev, family));
    {
        let mut st = qp.lock();
        if st.ep().is_some() || qp.connected(&mut st, ep.clone(), params).is_err() {
            drop(st);
            ep.close_locked(g, How::Error);
            return Err(EINVAL);
        }
    }
    g.qp = Some(qp);
    let ssn = g
        .sctp
        .as_deref_mut()
        .and_then(|sc| sc.session.answered(true).ok().map(|()| sc.tx_ssn.take()));
    let sent = ssn.is_some_and(|ssn| {
        let c = Control {
            ssn,
            function: Function::Accept,
            private_data: p.private_data,
        };
        send_control(g.sock.as_ref(), &c)
    });
    if !sent {
        ep.close_locked(g, How::Error);
        return Err(ECONNRESET);
    }
    g.phase = Phase::Established;
    notify(&cm, CmEvent::Established);
    g.cm = Some(cm);
    ep.clear_deadline(g);
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
    if g.phase == Phase::Requested && g.sctp.is_some() {
        // The DDP Stream Session Reject, at the ULP's word (RFC 5043 section 6.3).
        d.tables.count(Counter::ConnectionsRefused);
        if let Some(sc) = g.sctp.as_deref_mut() {
            let _ = sc.session.answered(false);
            let c = Control {
                ssn: sc.tx_ssn.take(),
                function: Function::Reject,
                private_data: &private_data[..private_data.len().min(SCTP_PD_MAX)],
            };
            send_control(g.sock.as_ref(), &c);
        }
    } else if g.phase == Phase::Requested {
        if let Ok(frame) = g.mpa.frame() {
            send_reject(
                &d.tables,
                g.sock.as_ref(),
                &g.policy,
                &frame.header,
                private_data,
            );
        }
    }
    ep.close_locked(&mut g, How::Error);
}

/// `iw_create_listen`.
pub(crate) fn listen(dev: &Device<Siw>, cm: CmId, backlog: i32) -> Result<Arc<Ep>> {
    let d: &SiwDev = dev.data();
    let s = listen_socket(dev, &cm, backlog)?;
    let ep = Ep::new(d.tables.clone(), Kind::Cm, Phase::Listen, s, None)?;
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

/// A listener for connections made by `modify_qp`, on address `gid` of `nd` (see
/// [`crate::gid`]).
pub(crate) fn av_listen(nd: &NetDev, tables: Arc<Tables>, gid: &[u8; 16]) -> Result<Arc<Ep>> {
    let addr = sockaddr_of(gid, av_port(), nd).ok_or(EINVAL)?;
    // The kernel's own socket: it must not keep the namespace alive (the device, and so
    // the listener, goes only when the netdev leaves the namespace).
    let s = Socket::new_kernel_tcp_in(nd, addr.family().ok_or(EINVAL)?)?;
    // An IPv6 address may still be tentative (duplicate address detection).
    s.set_freebind();
    s.bind(&addr)?;
    s.listen(64)?;
    let ep = Ep::new(tables, Kind::Av, Phase::Listen, Some(s), None)?;
    {
        let g = ep.inner.lock();
        ep.attach(&g);
    }
    ep.kick();
    Ok(ep)
}

/// The initiator of a connection made by `modify_qp`, from `local` to `remote`: an endpoint
/// with its first socket, made before the QP changes state (this can fail), started by
/// [`av_start`].
pub(crate) fn av_prepare(dev: &Device<Siw>, local: End, remote: End, ird: u16) -> Result<Arc<Ep>> {
    let d: &SiwDev = dev.data();
    // siw_rs-private TCP connections: none from a device whose connections run over SCTP.
    if d.llp != Llp::Mpa {
        return Err(EOPNOTSUPP);
    }
    let (from, to, sock) = dev.with_netdev(|nd| -> Result<_> {
        let from = sockaddr_of(&local.gid, 0, nd).ok_or(EINVAL)?;
        let to = sockaddr_of(&remote.gid, av_port(), nd).ok_or(EINVAL)?;
        let family = from.family().ok_or(EINVAL)?;
        if to.family() != Some(family) {
            return Err(EINVAL);
        }
        Ok((
            from,
            to,
            Socket::new_stream_in(Transport::Tcp, nd, family, true)?,
        ))
    })??;
    let ep = Ep::new(d.tables.clone(), Kind::Av, Phase::Backoff, Some(sock), None)?;
    {
        let mut g = ep.inner.lock();
        let mut p = base_policy();
        p.ird = ird.min(p.max_ird);
        p.ord = p.max_ord;
        g.policy = p;
        g.av = Some(AvEp {
            local,
            remote,
            from,
            to,
            backoff_ms: AV_BACKOFF_FIRST_MS,
        });
    }
    Ok(ep)
}

/// Starts `ep` (from [`av_prepare`]) connecting for `qp`, which has moved to RTS: the first
/// try runs from the workqueue.
pub(crate) fn av_start(ep: &Arc<Ep>, qp: Arc<QpCore>) {
    let mut g = ep.inner.lock();
    g.qp = Some(qp);
    ep.arm_backoff(0);
}

/// Drops `ep` (from [`av_prepare`]) unused.
pub(crate) fn av_abandon(ep: &Arc<Ep>) {
    let mut g = ep.inner.lock();
    ep.close_locked(&mut g, How::Local);
}
