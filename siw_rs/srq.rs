// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: a ring of `struct siw_rqe` shared by the QPs attached to it.

use crate::{
    device::{
        Siw,
        SiwDev,
        MAX_SGE,
        MAX_SRQ,
        MAX_SRQ_WR, //
    },
    glue::{
        rdma::{
            mmap::SharedMem,
            object::User,
            verbs::{
                RecvWr,
                RecvWrs,
                SrqAttr,
                SrqAttrBit,
                SrqAttrMask, //
            },
        },
        siw_abi::{
            wqe,
            UrespCreateSrq,
            RQE_SIZE, //
        },
        sync::{new_spinlock_bh, SpinLockBh},
    },
    limit::{
        Counted,
        Kind, //
    },
    qp::post_rqe,
    queue::{
        Ring,
        WQE_FLAGS, //
    },
};
use core::sync::atomic::{
    AtomicBool,
    AtomicU32,
    Ordering, //
};
use kernel::{
    new_spinlock_irq,
    prelude::*,
    sync::{
        Arc,
        SpinLockIrq, //
    },
};

/// What the QPs attached to an SRQ share: the ring and its consumer index.
#[pin_data]
pub(crate) struct SrqShared {
    pub(crate) mem: Arc<SharedMem>,
    pub(crate) entries: u32,
    pub(crate) max_sge: u32,
    /// The consumer index (free-running), taken by whichever QP receives. A spinlock
    /// taken with bottom halves off: receiving runs in the socket's callback (softirq).
    #[pin]
    pub(crate) get: SpinLockBh<u32>,
    /// The SRQ limit (`query_srq` reports it).
    pub(crate) limit: AtomicU32,
    /// Whether the limit event is armed: it fires once, when a receive leaves fewer than
    /// `limit` elements posted, and disarms itself.
    pub(crate) armed: AtomicBool,
    /// The producer index (free-running) of a kernel consumer's SRQ.
    #[pin]
    put: SpinLockIrq<u32>,
}

impl SrqShared {
    /// The byte offset of the slot `counter` names.
    pub(crate) fn offset(&self, counter: u32) -> usize {
        ((counter & self.entries.wrapping_sub(1)) as usize).saturating_mul(RQE_SIZE)
    }

    /// With the element at `get` being taken: whether that leaves fewer than the limit
    /// posted, with the event armed. Disarms it then, so the event fires once per arming
    /// (`siw_rqe_get()`: the slot `limit` ahead is not valid). Called under `get`'s lock.
    pub(crate) fn limit_reached(&self, get: u32) -> bool {
        if !self.armed.load(Ordering::Relaxed) {
            return false;
        }
        let ahead = self.offset(get.wrapping_add(self.limit.load(Ordering::Relaxed)));
        let valid = self
            .mem
            .atomic_u16(ahead.saturating_add(WQE_FLAGS))
            .is_some_and(|f| f.load(Ordering::Acquire) & wqe::VALID != 0);
        !valid && self.armed.swap(false, Ordering::Relaxed)
    }
}

/// A shared receive queue.
pub(crate) struct SiwSrq {
    /// The part receiving QPs use.
    pub(crate) shared: Arc<SrqShared>,
    /// The receive queue elements.
    pub(crate) ring: Ring,
    /// SGEs per element.
    max_sge: u32,
    _count: Counted,
}

impl SiwSrq {
    /// A new SRQ.
    pub(crate) fn new(
        dev: &SiwDev,
        attr: &SrqAttr,
        mut user: Option<&mut User<'_, Siw>>,
    ) -> Result<(Self, SrqAttr)> {
        let count = Counted::new(&dev.counts, Kind::Srq, MAX_SRQ)?;
        if attr.max_sge > MAX_SGE
            || attr.max_wr == 0
            || attr.max_wr > MAX_SRQ_WR
            || attr.srq_limit > attr.max_wr
        {
            return Err(EINVAL);
        }
        let ring = Ring::new(attr.max_wr, RQE_SIZE, 0, user.as_deref_mut())?;
        if let Some(u) = user {
            let resp = UrespCreateSrq {
                num_rqe: ring.entries,
                srq_key: ring.key(),
                ..Default::default()
            };
            u.udata.respond(&resp)?;
        }
        // Like the C siw, report the requested attributes back from create (query_srq
        // shows the rounded size).
        let out = *attr;
        let (mem, entries) = (ring.mem.clone(), ring.entries);
        let shared = Arc::pin_init(
            pin_init!(SrqShared {
                mem,
                entries,
                max_sge: attr.max_sge,
                get <- new_spinlock_bh!(0u32, "SrqShared::get"),
                limit: AtomicU32::new(attr.srq_limit),
                armed: AtomicBool::new(attr.srq_limit != 0),
                put <- new_spinlock_irq!(0u32, "SrqShared::put"),
            }),
            GFP_KERNEL,
        )?;
        let srq = Self {
            shared,
            ring,
            max_sge: attr.max_sge,
            _count: count,
        };
        Ok((srq, out))
    }

    /// `modify_srq`: only arming the limit is supported (no resize, as in the C siw).
    pub(crate) fn modify(&self, attr: &SrqAttr, mask: SrqAttrMask) -> Result {
        if mask.contains(SrqAttrBit::MaxWr) {
            return Err(EOPNOTSUPP);
        }
        if mask.contains(SrqAttrBit::Limit) {
            if attr.srq_limit > self.ring.entries {
                return Err(EINVAL);
            }
            // As the C siw: a limit arms the event, zero disarms it.
            let sh = &self.shared;
            let _get = sh.get.lock();
            sh.limit.store(attr.srq_limit, Ordering::Relaxed);
            sh.armed.store(attr.srq_limit != 0, Ordering::Relaxed);
        }
        Ok(())
    }

    /// `post_srq_recv`: a kernel consumer's list into the SRQ's ring (a process posts into
    /// its mapped ring).
    pub(crate) fn post_recv(&self, wrs: &mut RecvWrs<'_>) -> Result {
        if !wrs.is_kernel() {
            return if wrs.is_empty() { Ok(()) } else { Err(EINVAL) };
        }
        wrs.try_for_each(|w| self.post_one(&w?))
    }

    /// A kernel consumer's receive work request, into the SRQ's ring.
    fn post_one(&self, w: &RecvWr<'_>) -> Result {
        if w.sge.len() > self.max_sge as usize {
            return Err(EINVAL);
        }
        let sh = &self.shared;
        let mut put = sh.put.lock();
        post_rqe(&sh.mem, sh.offset(*put), w)?;
        *put = put.wrapping_add(1);
        Ok(())
    }

    /// `query_srq`.
    pub(crate) fn query(&self) -> SrqAttr {
        SrqAttr {
            max_wr: self.ring.entries,
            max_sge: self.max_sge,
            srq_limit: self.shared.limit.load(Ordering::Relaxed),
        }
    }
}
