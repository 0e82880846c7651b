// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: the send queue (`struct siw_sqe` ring), the receive queue (`struct siw_rqe`
//! ring, absent when an SRQ is attached) and the QP state.
//!
//! The state machine itself is [`crate::proto::qp`]; this file applies its decisions. Until
//! the connection manager exists (the data path), no QP can reach RTS: RTS needs a connected
//! socket, which only `iw_cm` hands over.

use crate::{
    cq::Completion,
    device::{
        Siw,
        SiwDev,
        MAX_QP,
        MAX_QP_WR,
        MAX_SGE, //
    },
    ib::{
        object::{
            UrespCreateQp,
            User,
            MAX_INLINE,
            OP_RECEIVE,
            RQE_SIZE,
            SQE_SIZE, //
            WC_WR_FLUSH_ERR,
        },
        verbs::{
            access,
            CqRef,
            QpCap,
            QpInit,
            QpModify,
            QpQuery, //
        },
    },
    limit::{
        Counted,
        Kind, //
    },
    proto::qp::{
        self as sm,
        State, //
    },
    queue::Ring,
};
use core::sync::atomic::{
    AtomicU32,
    Ordering, //
};
use kernel::{new_mutex, prelude::*, sync::Mutex};

/// QP numbers start at 1, as in the C siw (an `XA_FLAGS_ALLOC1` xarray there).
static NEXT_QPN: AtomicU32 = AtomicU32::new(1);

/// RDMA Read and Write permissions granted to the peer by `modify_qp(IB_QP_ACCESS_FLAGS)`.
#[derive(Clone, Copy, Default)]
#[expect(
    dead_code,
    reason = "read by the data path (TX/RX), which arrives with the connection manager"
)]
struct Perms {
    read: bool,
    write: bool,
    bind: bool,
}

/// The mutable QP state.
struct QpInner {
    state: State,
    perms: Perms,
    /// The receive queue's consumer index (free-running).
    rq_get: u32,
}

/// How completions name a QP.
#[derive(Clone, Copy)]
pub(crate) struct QpIds {
    /// The QP number (user CQs).
    pub(crate) qpn: u32,
    /// The `ib_qp` (kernel CQs).
    pub(crate) handle: u64,
}

/// Offset of `flags` in a receive queue element (`struct siw_rqe`).
const RQE_FLAGS: usize = 8;

/// A queue pair.
pub(crate) struct SiwQp {
    /// The send queue.
    sq: Ring,
    /// The receive queue (none with an SRQ or `max_recv_wr == 0`).
    rq: Option<Ring>,
    sq_max_sges: u32,
    rq_max_sges: u32,
    #[expect(
        dead_code,
        reason = "read by the data path (TX/RX), which arrives with the connection manager"
    )]
    sig_all: bool,
    /// The receive CQ.
    rcq: Option<CqRef<Siw>>,
    /// The send CQ.
    #[expect(
        dead_code,
        reason = "read by the data path (TX/RX), which arrives with the connection manager"
    )]
    scq: Option<CqRef<Siw>>,
    inner: Pin<KBox<Mutex<QpInner>>>,
    _count: Counted,
}

impl SiwQp {
    /// A new RC QP; returns it and its QP number. The checks and their order are the C
    /// siw's (`siw_create_qp()`), so the same requests fail with the same errno.
    pub(crate) fn new(
        dev: &SiwDev,
        attr: &QpInit<'_, Siw>,
        mut user: Option<&mut User<'_, Siw>>,
    ) -> Result<(Self, u32)> {
        if attr.create_flags != 0 {
            return Err(EOPNOTSUPP);
        }
        let count = Counted::new(&dev.counts, Kind::Qp, MAX_QP)?;
        if !attr.rc {
            return Err(EOPNOTSUPP);
        }
        let cap = attr.cap;
        if cap.max_send_wr > MAX_QP_WR
            || cap.max_recv_wr > MAX_QP_WR
            || cap.max_send_sge > MAX_SGE
            || cap.max_recv_sge > MAX_SGE
            || cap.max_inline_data > MAX_INLINE
            // A QP must be able to hold at least one send WQE.
            || cap.max_send_wr == 0
            || attr.send_cq.is_none()
            || (attr.recv_cq.is_none() && attr.srq.is_none())
        {
            return Err(EINVAL);
        }
        let sq = Ring::new(cap.max_send_wr, SQE_SIZE, 0, user.as_deref_mut())?;
        let sig_all = attr.sig_all.ok_or(EINVAL)?;
        let rq = if attr.srq.is_none() && cap.max_recv_wr > 0 {
            Some(Ring::new(
                cap.max_recv_wr,
                RQE_SIZE,
                0,
                user.as_deref_mut(),
            )?)
        } else {
            None
        };
        let qpn = NEXT_QPN.fetch_add(1, Ordering::Relaxed);
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
        let inner = KBox::pin_init(
            new_mutex!(QpInner {
                state: State::Idle,
                perms: Perms::default(),
                rq_get: 0,
            }),
            GFP_KERNEL,
        )?;
        let qp = Self {
            sq,
            rq,
            sq_max_sges: cap.max_send_sge,
            rq_max_sges: cap.max_recv_sge,
            sig_all,
            rcq: attr.recv_cq.map(CqRef::new),
            scq: attr.send_cq.map(CqRef::new),
            inner,
            _count: count,
        };
        Ok((qp, qpn))
    }

    /// `modify_qp`.
    pub(crate) fn modify(&self, m: &QpModify, ids: QpIds) -> Result {
        let mut inner = self.inner.lock();
        if let Some(flags) = m.access_flags {
            inner.perms = Perms {
                read: flags & access::REMOTE_READ != 0,
                write: flags & access::REMOTE_WRITE != 0,
                bind: flags & access::MW_BIND != 0,
            };
        }
        let Some(target) = m.state else {
            return Ok(());
        };
        let ctx = sm::Context {
            // Only the connection manager brings a socket and MPA parameters.
            has_llp: false,
            has_mpa: false,
            tx_idle: true,
        };
        let t = sm::modify(inner.state, State::from_verbs(target), ctx).map_err(|e| match e {
            sm::Refused::NotConnected => EINVAL,
            sm::Refused::Undefined => ECONNABORTED,
        })?;
        inner.state = t.next;
        if t.flush_rq {
            self.flush_rq(&mut inner, ids);
        }
        // Send queue flushes and connection teardown act on work in flight and on the
        // socket, which arrive with the data path; before a connection there is none.
        Ok(())
    }

    /// Completes every posted receive with a flush error (`siw_rq_flush()`), stopping early
    /// if the CQ overflows, as the C siw does.
    fn flush_rq(&self, inner: &mut QpInner, ids: QpIds) {
        let Some(rq) = &self.rq else {
            return;
        };
        loop {
            let off = rq.offset(inner.rq_get, RQE_SIZE);
            let Some(flags) = rq.mem.atomic_u16(off.saturating_add(RQE_FLAGS)) else {
                break;
            };
            if flags.load(Ordering::Acquire) == 0 {
                break;
            }
            if let Some(cq) = &self.rcq {
                let c = Completion {
                    id: rq.mem.read::<u64>(off).unwrap_or(0),
                    opcode: OP_RECEIVE,
                    status: WC_WR_FLUSH_ERR,
                    bytes: 0,
                    qp_num: ids.qpn,
                    qp_handle: ids.handle,
                    solicited: false,
                };
                if crate::cq::complete(cq.get(), &c).is_err() {
                    break;
                }
            }
            // Recycle the slot for the producer.
            flags.store(0, Ordering::Release);
            inner.rq_get = inner.rq_get.wrapping_add(1);
        }
    }

    /// `query_qp`.
    pub(crate) fn query(&self) -> QpQuery {
        let inner = self.inner.lock();
        QpQuery {
            state: inner.state.to_verbs(),
            cap: QpCap {
                max_send_wr: self.sq.entries,
                max_recv_wr: self.rq.as_ref().map_or(0, |r| r.entries),
                max_send_sge: self.sq_max_sges,
                max_recv_sge: self.rq_max_sges,
                max_inline_data: MAX_INLINE,
            },
            // IRD/ORD are set when a connection is established.
            max_rd_atomic: 0,
            max_dest_rd_atomic: 0,
            // Reported as constant, as by the C siw.
            access_flags: access::LOCAL_WRITE | access::REMOTE_WRITE | access::REMOTE_READ,
        }
    }

    /// The SQ doorbell (`siw_post_send()` without work requests). In ERROR there is nothing
    /// to do (the C siw flushes the empty list); in any other state but RTS the QP is not
    /// connected. Without the connection manager no QP reaches RTS yet.
    pub(crate) fn doorbell(&self) -> Result {
        match self.inner.lock().state {
            State::Error => Ok(()),
            _ => Err(ENOTCONN),
        }
    }
}
