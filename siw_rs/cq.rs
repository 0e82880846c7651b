// SPDX-License-Identifier: GPL-2.0

//! Completion queues: a ring of `struct siw_cqe` followed by a `struct siw_cq_ctrl`
//! notification word, mapped into the owning process (libsiw polls it without system calls).

use crate::{
    device::{
        Siw,
        SiwDev,
        MAX_CQ,
        MAX_CQE, //
    },
    glue::{
        rdma::{
            object::User,
            verbs::{
                Cq,
                CqNotify,
                KernelQp,
                Wc,
                WcOpcode,
                WcStatus, //
            },
        },
        siw_abi::{
            op,
            wc,
            wqe,
            UrespCreateCq,
            CQE_SIZE,
            CQE_VALID,
            CQ_CTRL_SIZE, //
        },
    },
    limit::{
        Counted,
        Kind, //
    },
    proto::cq::{
        notify_now,
        NOTIFY_NEXT_COMPLETION,
        NOTIFY_NOT,
        NOTIFY_SOLICITED, //
    },
    queue::{
        Cqe,
        Ring,
        CQE_FLAGS, //
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
    sync::SpinLockIrq, //
};

/// CQ ids are reported to user space for debugging only.
static NEXT_CQ_ID: AtomicU32 = AtomicU32::new(1);

/// A work completion to add to a CQ.
pub(crate) struct Completion {
    pub(crate) id: u64,
    pub(crate) opcode: u8,
    pub(crate) status: u16,
    pub(crate) bytes: u32,
    /// The QP number (user CQs report it).
    pub(crate) qp_num: u32,
    /// The QP as kernel consumers know it (kernel CQs report it).
    pub(crate) qp_handle: Option<KernelQp>,
    /// Solicited event (wakes a CQ armed for solicited completions).
    pub(crate) solicited: bool,
    /// The local STag a received Send with Invalidate invalidated.
    pub(crate) invalidated: Option<u32>,
    /// The immediate data of a received RFC 7306 Immediate Data message (the bytes of
    /// `ib_wc.ex.imm_data`).
    pub(crate) imm: Option<[u8; 4]>,
}

/// Adds `c` to `cq` and wakes its consumer if it armed the CQ; on overflow fails with
/// `ENOMEM` (`siw_sqe_complete()`/`siw_rqe_complete()`) and reports a CQ error event, the
/// first time only.
///
/// The C siw reports every overflow. A process that keeps its CQ full (it owns the CQE
/// flags) and rings a doorbell in a loop would then queue one async event per `write()`,
/// without bound; the CQ is in error after the first, and saying so once is enough.
pub(crate) fn complete(cq: &Cq<Siw>, c: &Completion) -> Result {
    match cq.data().push(c) {
        Ok(true) => {
            cq.comp_handler();
            Ok(())
        }
        Ok(false) => Ok(()),
        Err(e) => {
            if !cq.data().overflowed.swap(true, Ordering::Relaxed) {
                cq.error_event();
            }
            Err(e)
        }
    }
}

/// The producer and (for kernel CQs) consumer indices, free-running.
struct Idx {
    put: u32,
    get: u32,
    /// Kernel CQs: the QP of the completion in each slot. It stays out of the ring, which
    /// holds bytes, so `poll` hands back only handles made from live QPs.
    qps: KVVec<Option<KernelQp>>,
}

/// A completion queue.
///
/// The kernel produces CQEs at `put`; the consumer (libsiw, or `poll_cq` for kernel CQs)
/// takes them in order. A slot is free when its `flags` byte is zero; the producer fills the
/// entry first and sets `WQE_VALID` last, with release ordering.
#[pin_data]
pub(crate) struct SiwCq {
    /// CQEs, then the control word.
    ring: Ring,
    /// The producer and consumer indices (free-running).
    #[pin]
    idx: SpinLockIrq<Idx>,
    /// An overflow was reported (see [`complete`]).
    overflowed: AtomicBool,
    _count: Counted,
}

impl SiwCq {
    /// A CQ of at least `cqe` entries, to initialise in place; returns it and its real size.
    pub(crate) fn new(
        dev: &SiwDev,
        cqe: i32,
        mut user: Option<&mut User<'_, Siw>>,
    ) -> Result<(impl PinInit<Self, Error>, i32)> {
        let count = Counted::new(&dev.counts, Kind::Cq, MAX_CQ)?;
        let is_user = user.is_some();
        let n = u32::try_from(cqe).map_err(|_| EINVAL)?;
        if !(1..=MAX_CQE).contains(&n) {
            return Err(EINVAL);
        }
        let ring = Ring::new(n, CQE_SIZE, CQ_CTRL_SIZE, user.as_deref_mut())?;
        let size = i32::try_from(ring.entries).map_err(|_| EINVAL)?;
        let qps = if is_user {
            KVVec::new()
        } else {
            let n = usize::try_from(ring.entries).map_err(|_| EINVAL)?;
            KVVec::from_elem(None, n, GFP_KERNEL)?
        };
        if let Some(u) = user {
            let resp = UrespCreateCq {
                cq_id: NEXT_CQ_ID.fetch_add(1, Ordering::Relaxed),
                num_cqe: ring.entries,
                cq_key: ring.key(),
            };
            u.udata.respond(&resp)?;
        }
        let cq = try_pin_init!(Self {
            ring,
            idx <- new_spinlock_irq!(Idx { put: 0, get: 0, qps }, "SiwCq::idx"),
            overflowed: AtomicBool::new(false),
            _count: count,
        }? Error);
        Ok((cq, size))
    }

    /// Adds `c`; returns whether the consumer's armed notification fired (the caller then calls
    /// the completion handler, outside any lock). Fails with `ENOMEM` when the CQ is full.
    pub(crate) fn push(&self, c: &Completion) -> Result<bool> {
        let mem = &self.ring.mem;
        let mut idx = self.idx.lock();
        let off = self.ring.offset(idx.put, CQE_SIZE);
        let flags = mem.atomic_u8(off.saturating_add(CQE_FLAGS)).ok_or(EINVAL)?;
        if flags.load(Ordering::Acquire) != 0 {
            // The consumer has not taken this slot yet: overflow.
            return Err(ENOMEM);
        }
        // The element goes in whole, its flags octet written as the 0 it is (a consumer
        // polling the slot meanwhile reads 0 either way); the flags are set last, below.
        mem.write(
            off,
            Cqe {
                id: c.id,
                flags: 0,
                opcode: c.opcode,
                status: c.status,
                bytes: c.bytes,
                imm: match (c.invalidated, c.imm) {
                    (Some(stag), _) => u64::from(stag),
                    (None, Some(imm)) => u64::from(u32::from_ne_bytes(imm)),
                    (None, None) => 0,
                },
                qp: u64::from(c.qp_num),
            },
        )?;
        let slot = self.ring.slot(idx.put);
        if let Some(q) = idx.qps.get_mut(slot) {
            *q = c.qp_handle;
        }
        let extra = if c.invalidated.is_some() {
            wqe::REM_INVAL
        } else if c.imm.is_some() {
            wqe::WITH_IMM
        } else {
            0
        };
        flags.store(CQE_VALID | extra, Ordering::Release);
        idx.put = idx.put.wrapping_add(1);
        // The control word follows the last CQE.
        let ctrl = mem.atomic_u32(self.ring.end(CQE_SIZE)).ok_or(EINVAL)?;
        let fire = notify_now(ctrl.load(Ordering::Acquire), c.solicited);
        if fire {
            ctrl.store(NOTIFY_NOT, Ordering::Release);
        }
        Ok(fire)
    }

    /// Takes up to `out.len()` completions (`poll_cq`, kernel CQs).
    pub(crate) fn poll(&self, out: &mut [Wc]) -> usize {
        let mem = &self.ring.mem;
        let mut idx = self.idx.lock();
        let mut n = 0usize;
        for slot in out.iter_mut() {
            let off = self.ring.offset(idx.get, CQE_SIZE);
            let Some(flags) = mem.atomic_u8(off.saturating_add(CQE_FLAGS)) else {
                break;
            };
            let f = flags.load(Ordering::Acquire);
            if f & CQE_VALID == 0 {
                break;
            }
            let Some(c) = mem.read::<Cqe>(off) else {
                break;
            };
            let imm = (f & wqe::WITH_IMM != 0).then_some((c.imm as u32).to_ne_bytes());
            *slot = Wc {
                id: c.id,
                // The receive of an Immediate Data message: the peer's RDMA Write with
                // Immediate Data (a standalone Immediate Data message reads the same: a
                // zero-length Write with Immediate Data).
                opcode: if imm.is_some() && c.opcode == op::RECEIVE {
                    WcOpcode::RecvRdmaWithImm
                } else {
                    wc_opcode(c.opcode)
                },
                status: wc_status(c.status),
                byte_len: c.bytes,
                qp: idx.qps.get(self.ring.slot(idx.get)).copied().flatten(),
                invalidated: (f & wqe::REM_INVAL != 0).then_some(c.imm as u32),
                imm,
            };
            flags.store(0, Ordering::Release);
            idx.get = idx.get.wrapping_add(1);
            n = n.saturating_add(1);
        }
        n
    }

    /// Arms the CQ (`req_notify_cq`, kernel CQs); returns whether completions are
    /// already waiting.
    pub(crate) fn arm(&self, notify: CqNotify) -> bool {
        let mem = &self.ring.mem;
        if let Some(ctrl) = mem.atomic_u32(self.ring.end(CQE_SIZE)) {
            let v = match notify {
                CqNotify::Solicited => NOTIFY_SOLICITED,
                CqNotify::NextComp => NOTIFY_SOLICITED | NOTIFY_NEXT_COMPLETION,
            };
            ctrl.store(v, Ordering::Release);
        }
        let idx = self.idx.lock();
        let off = self.ring.offset(idx.get, CQE_SIZE);
        mem.atomic_u8(off.saturating_add(CQE_FLAGS))
            .is_some_and(|f| f.load(Ordering::Acquire) & CQE_VALID != 0)
    }
}

/// The work completion operation of a CQE's `enum siw_opcode` (the C siw's
/// `map_wc_opcode()`).
pub(crate) fn wc_opcode(opcode: u8) -> WcOpcode {
    match opcode {
        op::WRITE | op::WRITE_WITH_IMM => WcOpcode::RdmaWrite,
        op::SEND | op::SEND_WITH_IMM | op::SEND_REMOTE_INV => WcOpcode::Send,
        op::READ | op::READ_LOCAL_INV => WcOpcode::RdmaRead,
        op::INVAL_STAG => WcOpcode::LocalInv,
        op::REG_MR => WcOpcode::RegMr,
        op::FETCH_AND_ADD => WcOpcode::FetchAdd,
        op::COMP_AND_SWAP => WcOpcode::CompSwap,
        _ => WcOpcode::Recv,
    }
}

/// The work completion status of a CQE's `enum siw_wc_status` (the C siw's
/// `map_cqe_status()`).
pub(crate) fn wc_status(status: u16) -> WcStatus {
    match status {
        wc::SUCCESS => WcStatus::Success,
        wc::LOC_LEN_ERR => WcStatus::LocLenErr,
        wc::LOC_PROT_ERR => WcStatus::LocProtErr,
        wc::LOC_QP_OP_ERR => WcStatus::LocQpOpErr,
        wc::WR_FLUSH_ERR => WcStatus::WrFlushErr,
        wc::BAD_RESP_ERR => WcStatus::BadRespErr,
        wc::LOC_ACCESS_ERR => WcStatus::LocAccessErr,
        wc::REM_ACCESS_ERR => WcStatus::RemAccessErr,
        wc::REM_INV_REQ_ERR => WcStatus::RemInvReqErr,
        _ => WcStatus::GeneralErr,
    }
}
