// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: the send queue (`struct siw_sqe` ring), the receive queue (`struct siw_rqe`
//! ring, absent when an SRQ is attached) and the QP state.
//!
//! The state machine itself is [`crate::proto::qp`]; this file applies its decisions. Until
//! the connection manager exists (the data path), no QP can reach RTS: RTS needs a connected
//! socket, which only `iw_cm` hands over.

use crate::{
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
            RQE_SIZE,
            SQE_SIZE, //
        },
        verbs::{
            access,
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
}

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
            }),
            GFP_KERNEL,
        )?;
        let qp = Self {
            sq,
            rq,
            sq_max_sges: cap.max_send_sge,
            rq_max_sges: cap.max_recv_sge,
            sig_all,
            inner,
            _count: count,
        };
        Ok((qp, qpn))
    }

    /// `modify_qp`.
    pub(crate) fn modify(&self, m: &QpModify) -> Result {
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
        // Flushes and connection teardown act on work in flight, which arrives with the
        // data path; without a connection there is none to act on.
        inner.state = t.next;
        Ok(())
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

    /// The SQ doorbell. A QP that is not in RTS has nothing to send and answers `ENOTCONN`,
    /// as in the C siw; without the connection manager no QP reaches RTS yet.
    pub(crate) fn doorbell(&self) -> Result {
        Err(ENOTCONN)
    }
}
