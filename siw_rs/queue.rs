// SPDX-License-Identifier: GPL-2.0

//! Work and completion queue memory: power-of-two rings shared with user space, and the
//! layout of their elements (the siw user ABI, checked against the C header at compile time).

use crate::device::Siw;
use crate::glue::{
    rdma::{
        mmap::{
            MmapEntry,
            SharedMem, //
        },
        object::User,
    },
    siw_abi::{
        self,
        wqe,
        INVAL_UOBJ_KEY, //
    },
};
use core::{
    mem::{
        offset_of,
        size_of, //
    },
    sync::atomic::Ordering,
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

/// A scatter/gather element as it sits in a queue element (`struct siw_sge`).
#[repr(C)]
#[derive(Clone, Copy, Default, FromBytes, IntoBytes)]
pub(crate) struct Sge {
    pub(crate) laddr: u64,
    pub(crate) length: u32,
    pub(crate) lkey: u32,
}

/// The SGEs of a queue element.
pub(crate) type Sges = [Sge; siw_abi::MAX_SGE];

/// A send queue element (`struct siw_sqe`). With `SIW_WQE_INLINE`, the data sits where
/// `sge[1..]` would ([`SQE_INLINE`]), and `sge[0].length` is its length.
#[repr(C)]
#[derive(Clone, Copy, Default, FromBytes, IntoBytes)]
pub(crate) struct Sqe {
    pub(crate) id: u64,
    pub(crate) flags: u16,
    pub(crate) num_sge: u8,
    pub(crate) opcode: u8,
    pub(crate) rkey: u32,
    pub(crate) raddr: u64,
    pub(crate) sge: Sges,
}

/// A receive queue element (`struct siw_rqe`).
#[repr(C)]
#[derive(Clone, Copy, Default, FromBytes, IntoBytes)]
pub(crate) struct Rqe {
    pub(crate) id: u64,
    pub(crate) flags: u16,
    pub(crate) num_sge: u8,
    pub(crate) opcode: u8,
    pub(crate) unused: u32,
    pub(crate) sge: Sges,
}

/// A completion queue element (`struct siw_cqe`).
#[repr(C)]
#[derive(Clone, Copy, FromBytes, IntoBytes)]
pub(crate) struct Cqe {
    pub(crate) id: u64,
    pub(crate) flags: u8,
    pub(crate) opcode: u8,
    pub(crate) status: u16,
    pub(crate) bytes: u32,
    /// `imm_data` / `inval_stag`.
    pub(crate) imm: u64,
    /// `qp_id` (the QP number; kernel CQs keep their `ib_qp` handles beside the ring).
    pub(crate) qp: u64,
}

/// A kernel QP's `REG_MR` element. The C siw keeps a pointer to the `ib_mr` in it; siw_rs
/// keeps the MR's STag (its index names the MR) and what the work request says, where the
/// SGEs would be. User space cannot post it ([`crate::tx`] refuses local operations from a
/// user's send queue), so this layout is no ABI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RegMrWqe {
    /// The MR's STag when posted (`ib_mr.lkey`).
    pub(crate) mr: u32,
    /// The STag to register it under (same index, possibly a new key).
    pub(crate) key: u32,
    /// `IB_ACCESS_*`.
    pub(crate) access: u32,
    pub(crate) iova: u64,
    pub(crate) length: u64,
}

impl RegMrWqe {
    /// Writes the request into `sqe`.
    pub(crate) fn encode(&self, sqe: &mut Sqe) {
        sqe.num_sge = 0;
        sqe.rkey = self.key;
        sqe.raddr = self.iova;
        sqe.sge[0] = Sge {
            laddr: self.length,
            length: self.access,
            lkey: self.mr,
        };
    }

    /// Reads the request from `sqe`.
    pub(crate) fn decode(sqe: &Sqe) -> Self {
        Self {
            mr: sqe.sge[0].lkey,
            key: sqe.rkey,
            access: sqe.sge[0].length,
            iova: sqe.raddr,
            length: sqe.sge[0].laddr,
        }
    }
}

/// A kernel QP's atomic element (`op::FETCH_AND_ADD`, `op::COMP_AND_SWAP`): the sink of
/// the original value in `sge[0]`, the operands where `sge[1]` and `sge[2]` would be. User
/// space cannot post it ([`crate::tx`] refuses atomics from a user's send queue; libsiw
/// refuses them too), so this layout is no ABI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AtomicWqe {
    pub(crate) add_swap: u64,
    pub(crate) add_swap_mask: u64,
    pub(crate) compare: u64,
    pub(crate) compare_mask: u64,
}

impl AtomicWqe {
    /// Writes the operands into `sqe` (whose `sge[0]` is the sink).
    pub(crate) fn encode(&self, sqe: &mut Sqe) {
        let split = |v: u64| (v as u32, (v >> 32) as u32);
        let (lo, hi) = split(self.add_swap_mask);
        sqe.sge[1] = Sge {
            laddr: self.add_swap,
            length: lo,
            lkey: hi,
        };
        let (lo, hi) = split(self.compare_mask);
        sqe.sge[2] = Sge {
            laddr: self.compare,
            length: lo,
            lkey: hi,
        };
    }

    /// Reads the operands from `sqe`.
    pub(crate) fn decode(sqe: &Sqe) -> Self {
        let join = |s: &Sge| u64::from(s.length) | (u64::from(s.lkey) << 32);
        Self {
            add_swap: sqe.sge[1].laddr,
            add_swap_mask: join(&sqe.sge[1]),
            compare: sqe.sge[2].laddr,
            compare_mask: join(&sqe.sge[2]),
        }
    }
}

/// Where a kernel QP's `op::WRITE_WITH_IMM` element keeps its immediate data: the `lkey`
/// of the last SGE. Such an element has at most `MAX_SGE - 1` SGEs, or inline data that
/// ends before this ([`IMM_MAX_INLINE`]). Written after the element and its inline data,
/// read by the transmit engine from the ring; no ABI (user space cannot post it).
pub(crate) const SQE_IMM: usize =
    offset_of!(Sqe, sge) + (siw_abi::MAX_SGE - 1) * size_of::<Sge>() + offset_of!(Sge, lkey);
/// The most inline data an element with immediate data carries.
pub(crate) const IMM_MAX_INLINE: usize = siw_abi::MAX_INLINE - size_of::<Sge>();

/// Offset of `flags` in an SQE and an RQE.
pub(crate) const WQE_FLAGS: usize = offset_of!(Sqe, flags);
/// Offset of `flags` in a CQE.
pub(crate) const CQE_FLAGS: usize = offset_of!(Cqe, flags);
/// Offset of inline data in an SQE (`sge[1]`).
pub(crate) const SQE_INLINE: usize = offset_of!(Sqe, sge) + size_of::<Sge>();
/// Offset of `num_sge` in an SQE; `opcode` follows it.
pub(crate) const SQE_NUM_SGE: usize = offset_of!(Sqe, num_sge);
const _: () = assert!(offset_of!(Sqe, opcode) == SQE_NUM_SGE + 1);

/// Offset of the length of SGE `i` in an SQE (of the inline data's, for `i` = 0 in an
/// inline element).
pub(crate) const fn sqe_sge_len(i: usize) -> usize {
    offset_of!(Sqe, sge)
        .saturating_add(i.saturating_mul(size_of::<Sge>()))
        .saturating_add(offset_of!(Sge, length))
}

// The elements are the C header's, byte for byte.
const _: () = {
    assert!(size_of::<Sge>() == siw_abi::SGE_SIZE);
    assert!(size_of::<Sqe>() == siw_abi::SQE_SIZE);
    assert!(size_of::<Rqe>() == siw_abi::RQE_SIZE);
    assert!(size_of::<Cqe>() == siw_abi::CQE_SIZE);
    assert!(WQE_FLAGS == siw_abi::WQE_FLAGS);
    assert!(offset_of!(Rqe, flags) == siw_abi::WQE_FLAGS);
    assert!(offset_of!(Sqe, sge) == siw_abi::SQE_SGE);
    assert!(offset_of!(Rqe, sge) == siw_abi::RQE_SGE);
    assert!(CQE_FLAGS == siw_abi::CQE_FLAGS);
    assert!(SQE_INLINE + siw_abi::MAX_INLINE == siw_abi::SQE_SIZE);
    assert!(SQE_INLINE + IMM_MAX_INLINE <= SQE_IMM);
    assert!(SQE_IMM + 4 <= siw_abi::SQE_SIZE);
    assert!(siw_abi::MAX_SGE >= 3);
};

/// Posts a kernel consumer's work queue element at byte offset `off` of `mem`, as a process
/// would: `ENOMEM` while the slot still holds an element the driver has not taken (the queue
/// is full); else `fill` writes the element with its flags word zero, and then the flags
/// `flags | VALID` are published with release ordering, so the taker sees it whole.
/// Callers serialise on their queue's producer index.
pub(crate) fn post_wqe(
    mem: &SharedMem,
    off: usize,
    flags: u16,
    fill: impl FnOnce() -> Result,
) -> Result {
    let f = mem
        .atomic_u16(off.checked_add(WQE_FLAGS).ok_or(EINVAL)?)
        .ok_or(EINVAL)?;
    if f.load(Ordering::Acquire) & wqe::VALID != 0 {
        return Err(ENOMEM);
    }
    fill()?;
    f.store(flags | wqe::VALID, Ordering::Release);
    Ok(())
}

/// A ring of `entries` elements of `elem` bytes (plus `extra` bytes behind them), in memory
/// that a user process can map when the queue belongs to one.
pub(crate) struct Ring {
    /// The memory.
    pub(crate) mem: Arc<SharedMem>,
    /// Number of elements (a power of two).
    pub(crate) entries: u32,
    /// The mmap registration, for user queues.
    mmap: Option<MmapEntry>,
}

impl Ring {
    /// Allocates a ring for at least `min_entries` elements (rounded up to a power of two,
    /// as all queue indices are free-running counters taken modulo the size).
    pub(crate) fn new(
        min_entries: u32,
        elem: usize,
        extra: usize,
        user: Option<&mut User<'_, Siw>>,
    ) -> Result<Self> {
        let entries = min_entries.checked_next_power_of_two().ok_or(EINVAL)?;
        let len = usize::try_from(entries)
            .ok()
            .and_then(|n| n.checked_mul(elem))
            .and_then(|n| n.checked_add(extra))
            .ok_or(EINVAL)?;
        let mem = SharedMem::new(len, user.is_some())?;
        let mmap = match user {
            // libsiw reads `SIW_INVAL_UOBJ_KEY` as "no ring": never hand it out.
            Some(u) => Some(u.ctx.mmap_insert(&mem, INVAL_UOBJ_KEY + 1)?),
            None => None,
        };
        Ok(Self { mem, entries, mmap })
    }

    /// The slot a free-running `counter` names: `entries` is a power of two, so this is a
    /// mask.
    pub(crate) fn slot(&self, counter: u32) -> usize {
        (counter & self.entries.wrapping_sub(1)) as usize
    }

    /// The byte offset of the slot a free-running `counter` names, for elements of `elem`
    /// bytes. Arithmetic saturates, and an offset past the end is rejected by every accessor
    /// of the memory.
    pub(crate) fn offset(&self, counter: u32, elem: usize) -> usize {
        self.slot(counter).saturating_mul(elem)
    }

    /// The byte offset just past the last element (where a CQ's control word sits).
    pub(crate) fn end(&self, elem: usize) -> usize {
        (self.entries as usize).saturating_mul(elem)
    }

    /// The key user space passes to `mmap()` (libsiw's `*_key` response fields).
    pub(crate) fn key(&self) -> u64 {
        self.mmap.as_ref().map_or(0, MmapEntry::key)
    }

    /// Takes the mmap registration out, for an owner that must end it when its verbs object
    /// is destroyed while the ring itself may live on a little (held by work in progress):
    /// the core insists that no entry of a process's context outlives the context.
    pub(crate) fn take_mmap(&mut self) -> Option<MmapEntry> {
        self.mmap.take()
    }
}
