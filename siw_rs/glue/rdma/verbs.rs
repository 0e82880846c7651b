// SPDX-License-Identifier: GPL-2.0

//! Verbs objects: protection domains, completion queues, shared receive queues, queue pairs
//! and memory regions; their typed attributes, work requests and completions; and the
//! trampolines behind [`Adapter`]'s ops table.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).

use super::{
    device::{
        Adapter,
        Device,
        Driver, //
    },
    object::{
        Obj,
        User, //
    },
    umem::{
        KernelMem,
        MappedPage,
        Umem, //
    },
};
use crate::glue::bindings;
use core::{
    marker::PhantomData,
    ptr::NonNull, //
};
use kernel::{
    bits::bit_u32,
    error::{
        from_err_ptr,
        from_result,
        to_result, //
    },
    impl_flags,
    prelude::*,
    types::ForeignOwnable,
};

/// A protection domain of driver `T`.
pub(crate) type Pd<T> = Obj<bindings::ib_pd, <T as Driver>::Pd>;
/// A completion queue of driver `T`.
pub(crate) type Cq<T> = Obj<bindings::ib_cq, <T as Driver>::Cq>;
/// A shared receive queue of driver `T`.
pub(crate) type Srq<T> = Obj<bindings::ib_srq, <T as Driver>::Srq>;
/// A queue pair of driver `T`.
pub(crate) type Qp<T> = Obj<bindings::ib_qp, <T as Driver>::Qp>;

impl<D> Obj<bindings::ib_pd, D> {
    /// The device the PD belongs to.
    pub(crate) fn device<T: Driver<Pd = D>>(&self) -> &Device<T> {
        // SAFETY: A live PD's `device` is set by the core and is a live device of the driver
        // whose ops created the PD, i.e. `T` (the `Pd = D` bound ties them).
        unsafe { Device::<T>::from_raw((*self.as_ptr()).device) }
    }
}

/// A counted reference to a CQ: it holds one use (`usecnt`) of the CQ, which makes the core
/// refuse to destroy the CQ (`EBUSY`) while the reference exists. QPs keep these for their CQs.
///
/// # Invariants
///
/// Points to a live CQ of driver `T` whose `usecnt` this value incremented.
pub(crate) struct CqRef<T: Driver>(NonNull<Cq<T>>);

// SAFETY: The CQ is `Sync` (its driver data is); the use count is atomic.
unsafe impl<T: Driver> Send for CqRef<T> {}
// SAFETY: As above.
unsafe impl<T: Driver> Sync for CqRef<T> {}

impl<T: Driver> CqRef<T> {
    /// A new reference to `cq`.
    pub(crate) fn new(cq: &Cq<T>) -> Self {
        // SAFETY: `cq` is live; the use is dropped in `Drop`.
        unsafe { bindings::cq_use(cq.as_ptr()) };
        // INVARIANT: Counted just above.
        Self(NonNull::from(cq))
    }

    /// The CQ.
    pub(crate) fn get(&self) -> &Cq<T> {
        // SAFETY: By the type invariant the CQ cannot be destroyed while we hold our use.
        unsafe { self.0.as_ref() }
    }
}

impl<T: Driver> Clone for CqRef<T> {
    fn clone(&self) -> Self {
        Self::new(self.get())
    }
}

impl<T: Driver> Drop for CqRef<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we hold one use of a live CQ.
        unsafe { bindings::cq_unuse(self.get().as_ptr()) };
    }
}

impl<D> Obj<bindings::ib_cq, D> {
    /// Calls the consumer's completion handler (`ib_cq.comp_handler`), if it has one: for a
    /// user CQ, uverbs then signals the process's completion channel.
    pub(crate) fn comp_handler(&self) {
        let cq = self.as_ptr();
        // SAFETY: A live CQ; `comp_handler` and `cq_context` are set by the core at creation
        // and not changed afterwards.
        unsafe {
            if let Some(f) = (*cq).comp_handler {
                f(cq, (*cq).cq_context);
            }
        }
    }
}

impl<D> Obj<bindings::ib_cq, D> {
    /// Reports a CQ error (an overflow) to the consumer's event handler (`IB_EVENT_CQ_ERR`).
    pub(crate) fn error_event(&self) {
        let cq = self.as_ptr();
        let mut ev: bindings::ib_event = pin_init::zeroed();
        ev.event = bindings::ib_event_type_IB_EVENT_CQ_ERR;
        ev.element.cq = cq;
        // SAFETY: A live CQ; `device`, `event_handler` and `cq_context` are set by the core at
        // creation; `ev` is a valid event for the duration of the call.
        unsafe {
            ev.device = (*cq).device;
            if let Some(f) = (*cq).event_handler {
                f(&mut ev, (*cq).cq_context);
            }
        }
    }
}

impl<D> Obj<bindings::ib_qp, D> {
    /// The device the QP belongs to.
    pub(crate) fn device<T: Driver<Qp = D>>(&self) -> &Device<T> {
        // SAFETY: A live QP's `device` is set by the core and is a live device of the driver
        // whose ops created the QP, i.e. `T` (the `Qp = D` bound ties them).
        unsafe { Device::<T>::from_raw((*self.as_ptr()).device) }
    }

    /// Whether the QP belongs to a kernel consumer (work requests come as lists) rather than to
    /// a process (work requests come through the mapped queues).
    pub(crate) fn is_kernel(&self) -> bool {
        // SAFETY: A live QP; its restrack entry is set at creation.
        unsafe { bindings::qp_is_kernel(self.as_ptr()) }
    }

    /// The QP as kernel consumers name it in work completions (`wc->qp`).
    pub(crate) fn kernel_handle(&self) -> KernelQp {
        // INVARIANT: Made from this live QP.
        // SAFETY: `as_ptr` of a live QP is not null.
        KernelQp(unsafe { NonNull::new_unchecked(self.as_ptr()) })
    }

    /// The QP number.
    pub(crate) fn qp_num(&self) -> u32 {
        // SAFETY: A live QP; `qp_num` is set at creation.
        unsafe { (*self.as_ptr()).qp_num }
    }
}

impl_flags!(
    /// Memory access rights (`enum ib_access_flags`).
    #[derive(Debug, Clone, Default, Copy, PartialEq, Eq)]
    pub(crate) struct AccessFlags(u32);

    /// One memory access right.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum Access {
        /// `IB_ACCESS_LOCAL_WRITE`.
        LocalWrite = bit_u32(0),
        /// `IB_ACCESS_REMOTE_WRITE`.
        RemoteWrite = bit_u32(1),
        /// `IB_ACCESS_REMOTE_READ`.
        RemoteRead = bit_u32(2),
        /// `IB_ACCESS_REMOTE_ATOMIC`.
        RemoteAtomic = bit_u32(3),
        /// `IB_ACCESS_MW_BIND`.
        MwBind = bit_u32(4),
    }
);

const _: () = {
    assert!(Access::LocalWrite as u32 == bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE);
    assert!(Access::RemoteWrite as u32 == bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE);
    assert!(Access::RemoteRead as u32 == bindings::ib_access_flags_IB_ACCESS_REMOTE_READ);
    assert!(Access::RemoteAtomic as u32 == bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC);
    assert!(Access::MwBind as u32 == bindings::ib_access_flags_IB_ACCESS_MW_BIND);
};

impl AccessFlags {
    /// The flags a consumer passed, kept whole (bits this layer does not name included, for
    /// the driver to refuse or ignore).
    pub(crate) const fn from_raw(raw: u32) -> Self {
        Self(raw)
    }

    /// The raw `IB_ACCESS_*` bits.
    pub(crate) const fn bits(self) -> u32 {
        self.0
    }
}

/// A QP state (`enum ib_qp_state`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum QpState {
    /// `IB_QPS_RESET`.
    Reset,
    /// `IB_QPS_INIT`.
    Init,
    /// `IB_QPS_RTR`.
    Rtr,
    /// `IB_QPS_RTS`.
    Rts,
    /// `IB_QPS_SQD`.
    Sqd,
    /// `IB_QPS_SQE`.
    Sqe,
    /// `IB_QPS_ERR`.
    Err,
}

impl QpState {
    /// The state a C `enum ib_qp_state` names.
    fn from_c(s: bindings::ib_qp_state) -> Result<Self> {
        Ok(match s {
            bindings::ib_qp_state_IB_QPS_RESET => Self::Reset,
            bindings::ib_qp_state_IB_QPS_INIT => Self::Init,
            bindings::ib_qp_state_IB_QPS_RTR => Self::Rtr,
            bindings::ib_qp_state_IB_QPS_RTS => Self::Rts,
            bindings::ib_qp_state_IB_QPS_SQD => Self::Sqd,
            bindings::ib_qp_state_IB_QPS_SQE => Self::Sqe,
            bindings::ib_qp_state_IB_QPS_ERR => Self::Err,
            _ => return Err(EINVAL),
        })
    }

    /// The C `enum ib_qp_state`.
    fn to_c(self) -> bindings::ib_qp_state {
        match self {
            Self::Reset => bindings::ib_qp_state_IB_QPS_RESET,
            Self::Init => bindings::ib_qp_state_IB_QPS_INIT,
            Self::Rtr => bindings::ib_qp_state_IB_QPS_RTR,
            Self::Rts => bindings::ib_qp_state_IB_QPS_RTS,
            Self::Sqd => bindings::ib_qp_state_IB_QPS_SQD,
            Self::Sqe => bindings::ib_qp_state_IB_QPS_SQE,
            Self::Err => bindings::ib_qp_state_IB_QPS_ERR,
        }
    }
}

/// Queue pair capacities (`struct ib_qp_cap`).
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct QpCap {
    pub(crate) max_send_wr: u32,
    pub(crate) max_recv_wr: u32,
    pub(crate) max_send_sge: u32,
    pub(crate) max_recv_sge: u32,
    pub(crate) max_inline_data: u32,
}

impl QpCap {
    fn from_c(c: &bindings::ib_qp_cap) -> Self {
        Self {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        }
    }

    fn to_c(self, c: &mut bindings::ib_qp_cap) {
        c.max_send_wr = self.max_send_wr;
        c.max_recv_wr = self.max_recv_wr;
        c.max_send_sge = self.max_send_sge;
        c.max_recv_sge = self.max_recv_sge;
        c.max_inline_data = self.max_inline_data;
    }
}

/// A QP's transport (`enum ib_qp_type`), as far as a driver needs to tell.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum QpType {
    /// Reliable connected (`IB_QPT_RC`).
    Rc,
    /// Any other type, with its `enum ib_qp_type` value.
    Other(u32),
}

/// Which send work requests complete signalled (`enum ib_sig_type`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum SigType {
    /// Every one (`IB_SIGNAL_ALL_WR`).
    AllWr,
    /// Those posted with [`SendFlag::Signaled`] (`IB_SIGNAL_REQ_WR`).
    ReqWr,
}

/// `create_qp` attributes.
pub(crate) struct QpInit<'a, T: Driver> {
    /// The QP type.
    pub(crate) qp_type: QpType,
    /// `create_flags` (`enum ib_qp_create_flags`).
    pub(crate) create_flags: u32,
    /// Which sends complete signalled; `None` for a value the core does not define.
    pub(crate) sq_sig_type: Option<SigType>,
    /// Requested capacities.
    pub(crate) cap: QpCap,
    /// The send CQ.
    pub(crate) send_cq: Option<&'a Cq<T>>,
    /// The receive CQ.
    pub(crate) recv_cq: Option<&'a Cq<T>>,
    /// The SRQ, if any.
    pub(crate) srq: Option<&'a Srq<T>>,
}

/// `modify_qp` attributes: the state, the access flags, and what a connection made without
/// the connection manager needs (the address vector, the peer's QP number, the Read depths,
/// the retry time, the PSNs);
/// the other standard attributes are accepted and not passed on.
#[derive(Default)]
pub(crate) struct QpModify {
    /// New state (`IB_QP_STATE`).
    pub(crate) state: Option<QpState>,
    /// New access flags (`IB_QP_ACCESS_FLAGS`).
    pub(crate) access_flags: Option<AccessFlags>,
    /// The address vector (`IB_QP_AV`).
    pub(crate) av: Option<Av>,
    /// The peer's QP number (`IB_QP_DEST_QPN`).
    pub(crate) dest_qpn: Option<u32>,
    /// RDMA Reads the QP serves at a time (`IB_QP_MAX_DEST_RD_ATOMIC`).
    pub(crate) max_dest_rd_atomic: Option<u8>,
    /// RDMA Reads the QP may have outstanding (`IB_QP_MAX_QP_RD_ATOMIC`).
    pub(crate) max_rd_atomic: Option<u8>,
    /// How long the QP waits for an acknowledgement before it tries again, 4.096 us times 2
    /// to this power; 0 waits for ever (`IB_QP_TIMEOUT`).
    pub(crate) timeout: Option<u8>,
    /// How many times it tries again (`IB_QP_RETRY_CNT`).
    pub(crate) retry_cnt: Option<u8>,
    /// The first PSN the QP sends (`IB_QP_SQ_PSN`).
    pub(crate) sq_psn: Option<u32>,
    /// The first PSN the QP expects to receive (`IB_QP_RQ_PSN`).
    pub(crate) rq_psn: Option<u32>,
}

/// An address vector (`struct rdma_ah_attr`), as far as it names IP-routed peers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Av {
    /// The global route (`IB_AH_GRH`), if the vector has one.
    pub(crate) grh: Option<Grh>,
}

/// A global route (`struct ib_global_route`): which local GID to send from, and the peer's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Grh {
    /// The index of the local GID in the port's table (`sgid_index`).
    pub(crate) sgid_index: u32,
    /// The local GID at that index, as the core resolved it (`sgid_attr->gid`).
    pub(crate) sgid: [u8; 16],
    /// The peer's GID.
    pub(crate) dgid: [u8; 16],
}

/// What `query_qp` reports.
pub(crate) struct QpQuery {
    pub(crate) state: QpState,
    pub(crate) cap: QpCap,
    pub(crate) max_rd_atomic: u8,
    pub(crate) max_dest_rd_atomic: u8,
    pub(crate) access_flags: AccessFlags,
}

/// `struct ib_srq_attr`.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct SrqAttr {
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
    pub(crate) srq_limit: u32,
}

impl_flags!(
    /// Which SRQ attributes a `modify_srq` changes (`enum ib_srq_attr_mask`).
    #[derive(Debug, Clone, Default, Copy, PartialEq, Eq)]
    pub(crate) struct SrqAttrMask(u32);

    /// One SRQ attribute.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum SrqAttrBit {
        /// `IB_SRQ_MAX_WR` (resize).
        MaxWr = bit_u32(0),
        /// `IB_SRQ_LIMIT` (arm the limit event).
        Limit = bit_u32(1),
    }
);

const _: () = {
    assert!(SrqAttrBit::MaxWr as u32 == bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR);
    assert!(SrqAttrBit::Limit as u32 == bindings::ib_srq_attr_mask_IB_SRQ_LIMIT);
};

/// A scatter/gather element of a kernel work request (`struct ib_sge`), borrowed in place
/// from the consumer's list.
///
/// Packed (alignment 1), because a consumer's list need not be aligned: iSER's receive
/// descriptor (`struct iser_rx_desc`) is `__packed`, its `rx_sg` 4 bytes off an 8-byte boundary.
/// A slice of an 8-aligned type over it would be undefined behaviour (the test kernel's
/// debug assertions stopped at exactly that); fields are only ever read by value.
#[repr(C, packed)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct WrSge {
    /// A DMA address: a kernel virtual address for a device doing virtual DMA.
    pub(crate) addr: u64,
    pub(crate) length: u32,
    pub(crate) lkey: u32,
}

const _: () = {
    use core::mem::{align_of, offset_of, size_of};
    assert!(size_of::<WrSge>() == size_of::<bindings::ib_sge>());
    // Any address is aligned for it (see above).
    assert!(align_of::<WrSge>() == 1);
    assert!(offset_of!(WrSge, addr) == offset_of!(bindings::ib_sge, addr));
    assert!(offset_of!(WrSge, length) == offset_of!(bindings::ib_sge, length));
    assert!(offset_of!(WrSge, lkey) == offset_of!(bindings::ib_sge, lkey));
};

/// A send work request's operation (`enum ib_wr_opcode`), with what it carries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum SendOp {
    /// `IB_WR_RDMA_WRITE` to `remote_addr` of the region `rkey` names.
    RdmaWrite { remote_addr: u64, rkey: u32 },
    /// `IB_WR_RDMA_READ` from `remote_addr` of the region `rkey` names.
    RdmaRead { remote_addr: u64, rkey: u32 },
    /// `IB_WR_SEND`.
    Send,
    /// `IB_WR_SEND_WITH_INV`, invalidating the peer's `rkey`.
    SendWithInv { rkey: u32 },
    /// `IB_WR_RDMA_READ_WITH_INV`: an RDMA Read whose sink (the first SGE's lkey) is
    /// invalidated once the response is in.
    RdmaReadWithInv { remote_addr: u64, rkey: u32 },
    /// `IB_WR_LOCAL_INV` of the local STag `rkey`.
    LocalInv { rkey: u32 },
    /// `IB_WR_REG_MR` (`struct ib_reg_wr`): registers the fast-registration MR whose STag is
    /// `mr` (its `lkey` now) under the STag `key` with the rights `access`, over the pages
    /// its last `map_mr_sg` gave, from address `iova` for `length` bytes (as the MR's
    /// `iova` and `length` read when posting: consumers rewrite the iova between mapping
    /// and posting).
    RegMr {
        mr: u32,
        key: u32,
        access: AccessFlags,
        iova: u64,
        length: u64,
    },
    /// `IB_WR_RDMA_WRITE_WITH_IMM`: an RDMA Write to `remote_addr` of the region `rkey`
    /// names, then `imm` (`ex.imm_data`, the bytes as they sit in memory: big-endian) for
    /// the peer's receive completion.
    RdmaWriteWithImm {
        remote_addr: u64,
        rkey: u32,
        imm: [u8; 4],
    },
    /// `IB_WR_ATOMIC_FETCH_AND_ADD`, `IB_WR_ATOMIC_CMP_AND_SWP` and their masked forms
    /// (`struct ib_atomic_wr`) on the 64-bit word at `remote_addr` of the region `rkey`
    /// names; the original value goes to the one SGE.
    Atomic(AtomicWr),
    /// Any other opcode, with its `enum ib_wr_opcode` value.
    Other(u32),
}

/// An atomic work request, as RFC 7306 defines the operation: every form is a masked one.
///
/// Fetch-and-Add adds `add_swap` field by field, the fields' top bits set in
/// `add_swap_mask` (0: one 64-bit add; `IB_WR_MASKED_ATOMIC_FETCH_AND_ADD`'s
/// `compare_add_mask` means the same). Compare-and-Swap compares under `compare_mask`
/// and swaps the bits of `add_swap_mask` (all ones for the plain form).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct AtomicWr {
    pub(crate) remote_addr: u64,
    pub(crate) rkey: u32,
    /// Compare-and-Swap, else Fetch-and-Add.
    pub(crate) cmp_swap: bool,
    pub(crate) add_swap: u64,
    pub(crate) add_swap_mask: u64,
    pub(crate) compare: u64,
    pub(crate) compare_mask: u64,
}

impl_flags!(
    /// Send work request flags (`enum ib_send_flags`).
    #[derive(Debug, Clone, Default, Copy, PartialEq, Eq)]
    pub(crate) struct SendFlags(u32);

    /// One send flag.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) enum SendFlag {
        /// `IB_SEND_FENCE`.
        Fence = bit_u32(0),
        /// `IB_SEND_SIGNALED`.
        Signaled = bit_u32(1),
        /// `IB_SEND_SOLICITED`.
        Solicited = bit_u32(2),
        /// `IB_SEND_INLINE`.
        Inline = bit_u32(3),
    }
);

const _: () = {
    assert!(SendFlag::Fence as u32 == bindings::ib_send_flags_IB_SEND_FENCE as u32);
    assert!(SendFlag::Signaled as u32 == bindings::ib_send_flags_IB_SEND_SIGNALED as u32);
    assert!(SendFlag::Solicited as u32 == bindings::ib_send_flags_IB_SEND_SOLICITED as u32);
    assert!(SendFlag::Inline as u32 == bindings::ib_send_flags_IB_SEND_INLINE as u32);
};

/// A send work request of a posted list (`struct ib_send_wr`, with `struct ib_rdma_wr`'s
/// remote address and key for RDMA Write and Read), borrowed for the post call.
pub(crate) struct SendWr<'a> {
    /// `wr_id` (or `wr_cqe`, which kernel completions return in the same place).
    pub(crate) id: u64,
    /// The operation.
    pub(crate) op: SendOp,
    /// `IB_SEND_*`.
    pub(crate) flags: SendFlags,
    /// The scatter/gather list.
    pub(crate) sge: &'a [WrSge],
    /// Whether the list comes from a kernel consumer, whose SGEs name kernel memory.
    kernel: bool,
}

impl SendWr<'_> {
    /// Gathers a kernel consumer's inline data (`IB_SEND_INLINE`) into `out`; returns its
    /// length. The SGEs name kernel virtual addresses; as in the C siw, their lkeys are not
    /// looked up: the data is copied now, and posting may run in any context. `EINVAL` for a
    /// list a process posted (its addresses are its own), or data longer than `out`.
    pub(crate) fn gather_inline(&self, out: &mut [u8]) -> Result<usize> {
        if !self.kernel {
            return Err(EINVAL);
        }
        let mut n = 0usize;
        for s in self.sge.iter().filter(|s| s.length != 0) {
            let end = n.checked_add(s.length as usize).ok_or(EINVAL)?;
            let dst = out.get_mut(n..end).ok_or(EINVAL)?;
            let addr = usize::try_from(s.addr).map_err(|_| EINVAL)?;
            let mut done = 0usize;
            // INVARIANT (of `KernelMem`): a kernel consumer's own SGE, which it hands over
            // for reading by posting it.
            KernelMem(()).pieces(addr, dst.len(), |a, k| {
                let d = dst.get_mut(done..done.saturating_add(k)).ok_or(EINVAL)?;
                // SAFETY: `pieces` checked that the bytes lie in mapped linear-map pages; `d`
                // is ours and `k` bytes long.
                unsafe { core::ptr::copy_nonoverlapping(a as *const u8, d.as_mut_ptr(), k) };
                done = done.saturating_add(k);
                Ok(())
            })?;
            n = end;
        }
        Ok(n)
    }
}

/// A receive work request of a posted list (`struct ib_recv_wr`), borrowed for the call.
pub(crate) struct RecvWr<'a> {
    pub(crate) id: u64,
    pub(crate) sge: &'a [WrSge],
}

/// Borrows a work request's scatter/gather list.
///
/// # Safety
///
/// `list` points to `n` valid `ib_sge`s when `n > 0`, which stay valid for `'a`.
unsafe fn wr_sges<'a>(list: *const bindings::ib_sge, n: c_int) -> Result<&'a [WrSge]> {
    let n = usize::try_from(n).map_err(|_| EINVAL)?;
    if n == 0 {
        return Ok(&[]);
    }
    if list.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: `WrSge` has `ib_sge`'s layout and alignment 1 (both checked above), so the
    // non-null `list` is aligned for it wherever the consumer put it; the caller guarantees
    // `n` valid entries for `'a`, and nothing writes them during the post call.
    Ok(unsafe { core::slice::from_raw_parts(list.cast::<WrSge>(), n) })
}

/// A node of a work request list: `ib_send_wr` and `ib_recv_wr`, the only implementors.
pub(crate) trait WrNode {
    /// The next request.
    ///
    /// # Safety
    ///
    /// `p` points to a valid request.
    unsafe fn next(p: *const Self) -> *const Self;
}

impl WrNode for bindings::ib_send_wr {
    unsafe fn next(p: *const Self) -> *const Self {
        // SAFETY: By the function's contract `p` points to a valid request, which may sit
        // at any address (see `WrList`): the field is read without assuming alignment.
        unsafe { core::ptr::read_unaligned(core::ptr::addr_of!((*p).next)) }.cast_const()
    }
}

impl WrNode for bindings::ib_recv_wr {
    unsafe fn next(p: *const Self) -> *const Self {
        // SAFETY: As for `ib_send_wr`.
        unsafe { core::ptr::read_unaligned(core::ptr::addr_of!((*p).next)) }.cast_const()
    }
}

/// A posted list of work requests, walked by the driver: each item is one request, or the
/// error that it is malformed. The request the driver stops at (an error item, or the last
/// one it took when it returns an error) is what the core reports as `bad_wr`.
///
/// A request may sit at any address: isert's `struct iser_tx_desc` is `__packed` and holds
/// its `ib_send_wr` 4 bytes off an 8-byte boundary, so requests (and the `ib_rdma_wr`,
/// `ib_reg_wr` or `ib_atomic_wr` around them) are copied out with unaligned reads, never
/// referenced in place.
///
/// # Invariants
///
/// `cur` is null or a request of a list of valid requests that outlives `'a`; `last` is the
/// request most recently yielded (null before the first).
pub(crate) struct WrList<'a, W: WrNode> {
    cur: *const W,
    last: *const W,
    kernel: bool,
    _p: PhantomData<&'a W>,
}

/// A posted list of send work requests.
pub(crate) type SendWrs<'a> = WrList<'a, bindings::ib_send_wr>;
/// A posted list of receive work requests.
pub(crate) type RecvWrs<'a> = WrList<'a, bindings::ib_recv_wr>;

impl<W: WrNode> WrList<'_, W> {
    /// The list the core passed.
    ///
    /// # Safety
    ///
    /// `wr` is null or a list of valid requests that outlives the returned value.
    unsafe fn new(wr: *const W, kernel: bool) -> Self {
        // INVARIANT: By the caller's guarantee; nothing yielded yet.
        Self {
            cur: wr,
            last: core::ptr::null(),
            kernel,
            _p: PhantomData,
        }
    }

    /// Whether the list is empty (for a process's QP whose driver has it post through
    /// mapped queues, a POST_SEND without requests is that driver's doorbell).
    pub(crate) fn is_empty(&self) -> bool {
        self.cur.is_null() && self.last.is_null()
    }

    /// Whether a kernel consumer posted the list (else a process, through uverbs).
    pub(crate) fn is_kernel(&self) -> bool {
        self.kernel
    }

    /// Takes the next request node, remembering it as the one a failure names.
    fn advance(&mut self) -> Option<*const W> {
        if self.cur.is_null() {
            return None;
        }
        let w = self.cur;
        self.last = w;
        // SAFETY: `w` is a request of the list (invariant).
        self.cur = unsafe { W::next(w) };
        Some(w)
    }

    /// Reports `r` to the core: 0, or its errno with `*bad_wr` pointing to the request the
    /// driver stopped at (as the verbs ask).
    ///
    /// # Safety
    ///
    /// `bad_wr` is null or a valid out pointer.
    unsafe fn finish(self, r: Result, bad_wr: *mut *const W) -> c_int {
        match r {
            Ok(()) => 0,
            Err(e) => {
                if !bad_wr.is_null() {
                    // The request being worked on, or the first if the driver took none.
                    let bad = if self.last.is_null() {
                        self.cur
                    } else {
                        self.last
                    };
                    // SAFETY: A valid out pointer (the caller's guarantee).
                    unsafe { *bad_wr = bad };
                }
                e.to_errno()
            }
        }
    }
}

impl<'a> Iterator for WrList<'a, bindings::ib_send_wr> {
    type Item = Result<SendWr<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let wr = self.advance()?;
        // SAFETY: A valid request of the list (invariant), at any alignment: copied out.
        let w = unsafe { core::ptr::read_unaligned(wr) };
        // SAFETY: `wr_id` and `wr_cqe` share 8 bytes; any bit pattern is a valid `u64`.
        let id = unsafe { w.__bindgen_anon_1.wr_id };
        let op = match w.opcode {
            bindings::ib_wr_opcode_IB_WR_RDMA_WRITE
            | bindings::ib_wr_opcode_IB_WR_RDMA_READ
            | bindings::ib_wr_opcode_IB_WR_RDMA_READ_WITH_INV => {
                // SAFETY: RDMA opcodes come in an `ib_rdma_wr`, whose first field is `wr`
                // (the verbs contract for those opcodes); copied out at any alignment.
                let r = unsafe { core::ptr::read_unaligned(wr.cast::<bindings::ib_rdma_wr>()) };
                let (remote_addr, rkey) = (r.remote_addr, r.rkey);
                match w.opcode {
                    bindings::ib_wr_opcode_IB_WR_RDMA_WRITE => {
                        SendOp::RdmaWrite { remote_addr, rkey }
                    }
                    bindings::ib_wr_opcode_IB_WR_RDMA_READ => {
                        SendOp::RdmaRead { remote_addr, rkey }
                    }
                    _ => SendOp::RdmaReadWithInv { remote_addr, rkey },
                }
            }
            bindings::ib_wr_opcode_IB_WR_LOCAL_INV => SendOp::LocalInv {
                // SAFETY: A Local Invalidate sets `ex.invalidate_rkey`; any bits are a `u32`.
                rkey: unsafe { w.ex.invalidate_rkey },
            },
            bindings::ib_wr_opcode_IB_WR_REG_MR => {
                // SAFETY: `IB_WR_REG_MR` comes in an `ib_reg_wr`, whose first field is `wr`
                // (the verbs contract for that opcode); copied out at any alignment.
                let r = unsafe { core::ptr::read_unaligned(wr.cast::<bindings::ib_reg_wr>()) };
                if r.mr.is_null() {
                    return Some(Err(EINVAL));
                }
                // SAFETY: The consumer's live MR, which it hands over for registration; the
                // fields read are plain integers it set up before posting.
                let (mr, iova, length) = unsafe { ((*r.mr).lkey, (*r.mr).iova, (*r.mr).length) };
                let Ok(access) = u32::try_from(r.access) else {
                    return Some(Err(EINVAL));
                };
                SendOp::RegMr {
                    mr,
                    key: r.key,
                    access: AccessFlags::from_raw(access),
                    iova,
                    length,
                }
            }
            bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM => {
                // SAFETY: As for `IB_WR_RDMA_WRITE`: an `ib_rdma_wr`, whose first field is `wr`.
                let r = unsafe { core::ptr::read_unaligned(wr.cast::<bindings::ib_rdma_wr>()) };
                SendOp::RdmaWriteWithImm {
                    remote_addr: r.remote_addr,
                    rkey: r.rkey,
                    // SAFETY: A request with immediate data sets `ex.imm_data`; any bits are
                    // a `__be32`.
                    imm: unsafe { w.ex.imm_data }.to_ne_bytes(),
                }
            }
            bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP
            | bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD
            | bindings::ib_wr_opcode_IB_WR_MASKED_ATOMIC_CMP_AND_SWP
            | bindings::ib_wr_opcode_IB_WR_MASKED_ATOMIC_FETCH_AND_ADD => {
                // SAFETY: Atomic opcodes come in an `ib_atomic_wr`, whose first field is
                // `wr` (the verbs contract for those opcodes); copied out at any alignment.
                let a = unsafe { core::ptr::read_unaligned(wr.cast::<bindings::ib_atomic_wr>()) };
                let (remote_addr, rkey) = (a.remote_addr, a.rkey);
                SendOp::Atomic(match w.opcode {
                    bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP => AtomicWr {
                        remote_addr,
                        rkey,
                        cmp_swap: true,
                        add_swap: a.swap,
                        add_swap_mask: !0,
                        compare: a.compare_add,
                        compare_mask: !0,
                    },
                    bindings::ib_wr_opcode_IB_WR_MASKED_ATOMIC_CMP_AND_SWP => AtomicWr {
                        remote_addr,
                        rkey,
                        cmp_swap: true,
                        add_swap: a.swap,
                        add_swap_mask: a.swap_mask,
                        compare: a.compare_add,
                        compare_mask: a.compare_add_mask,
                    },
                    bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => AtomicWr {
                        remote_addr,
                        rkey,
                        cmp_swap: false,
                        add_swap: a.compare_add,
                        add_swap_mask: 0,
                        compare: 0,
                        compare_mask: !0,
                    },
                    _ => AtomicWr {
                        remote_addr,
                        rkey,
                        cmp_swap: false,
                        add_swap: a.compare_add,
                        add_swap_mask: a.compare_add_mask,
                        compare: 0,
                        compare_mask: !0,
                    },
                })
            }
            bindings::ib_wr_opcode_IB_WR_SEND => SendOp::Send,
            bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV => SendOp::SendWithInv {
                // SAFETY: A Send with Invalidate sets `ex.invalidate_rkey`; any bits are a
                // `u32`.
                rkey: unsafe { w.ex.invalidate_rkey },
            },
            other => SendOp::Other(other),
        };
        // SAFETY: `sg_list` holds `num_sge` entries (the verbs contract), valid for `'a`.
        let sge = match unsafe { wr_sges(w.sg_list, w.num_sge) } {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(SendWr {
            id,
            op,
            flags: SendFlags(w.send_flags as u32),
            sge,
            kernel: self.kernel,
        }))
    }
}

impl<'a> Iterator for WrList<'a, bindings::ib_recv_wr> {
    type Item = Result<RecvWr<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let wr = self.advance()?;
        // SAFETY: A valid request of the list (invariant), at any alignment: copied out.
        let w = unsafe { core::ptr::read_unaligned(wr) };
        // SAFETY: `wr_id` and `wr_cqe` share 8 bytes; any bit pattern is a valid `u64`.
        let id = unsafe { w.__bindgen_anon_1.wr_id };
        // SAFETY: `sg_list` holds `num_sge` entries (the verbs contract), valid for `'a`.
        Some(unsafe { wr_sges(w.sg_list, w.num_sge) }.map(|sge| RecvWr { id, sge }))
    }
}

/// A user memory region to register.
pub(crate) struct UserMr {
    /// The pinned pages.
    pub(crate) umem: Umem,
    /// The user virtual address of the start.
    #[allow(
        dead_code,
        reason = "not every driver needs it (siw addresses by iova alone)"
    )]
    pub(crate) start: u64,
    /// The length in bytes.
    pub(crate) len: u64,
    /// The address the region is known by to the peer (iova).
    pub(crate) virt: u64,
    /// The access rights.
    pub(crate) access: AccessFlags,
}

/// A work completion's status (`enum ib_wc_status`), as far as a software device reports.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) enum WcStatus {
    #[default]
    Success,
    LocLenErr,
    LocQpOpErr,
    LocProtErr,
    WrFlushErr,
    BadRespErr,
    LocAccessErr,
    RemAccessErr,
    RemInvReqErr,
    GeneralErr,
}

impl WcStatus {
    fn to_c(self) -> bindings::ib_wc_status {
        match self {
            Self::Success => bindings::ib_wc_status_IB_WC_SUCCESS,
            Self::LocLenErr => bindings::ib_wc_status_IB_WC_LOC_LEN_ERR,
            Self::LocQpOpErr => bindings::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
            Self::LocProtErr => bindings::ib_wc_status_IB_WC_LOC_PROT_ERR,
            Self::WrFlushErr => bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR,
            Self::BadRespErr => bindings::ib_wc_status_IB_WC_BAD_RESP_ERR,
            Self::LocAccessErr => bindings::ib_wc_status_IB_WC_LOC_ACCESS_ERR,
            Self::RemAccessErr => bindings::ib_wc_status_IB_WC_REM_ACCESS_ERR,
            Self::RemInvReqErr => bindings::ib_wc_status_IB_WC_REM_INV_REQ_ERR,
            Self::GeneralErr => bindings::ib_wc_status_IB_WC_GENERAL_ERR,
        }
    }
}

/// A work completion's operation (`enum ib_wc_opcode`).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) enum WcOpcode {
    #[default]
    Send,
    RdmaWrite,
    RdmaRead,
    LocalInv,
    RegMr,
    Recv,
    /// `IB_WC_COMP_SWAP`.
    CompSwap,
    /// `IB_WC_FETCH_ADD`.
    FetchAdd,
    /// `IB_WC_RECV_RDMA_WITH_IMM`: the peer's RDMA Write with Immediate Data.
    RecvRdmaWithImm,
}

impl WcOpcode {
    fn to_c(self) -> bindings::ib_wc_opcode {
        match self {
            Self::Send => bindings::ib_wc_opcode_IB_WC_SEND,
            Self::RdmaWrite => bindings::ib_wc_opcode_IB_WC_RDMA_WRITE,
            Self::RdmaRead => bindings::ib_wc_opcode_IB_WC_RDMA_READ,
            Self::LocalInv => bindings::ib_wc_opcode_IB_WC_LOCAL_INV,
            Self::RegMr => bindings::ib_wc_opcode_IB_WC_REG_MR,
            Self::Recv => bindings::ib_wc_opcode_IB_WC_RECV,
            Self::CompSwap => bindings::ib_wc_opcode_IB_WC_COMP_SWAP,
            Self::FetchAdd => bindings::ib_wc_opcode_IB_WC_FETCH_ADD,
            Self::RecvRdmaWithImm => bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM,
        }
    }
}

/// Where a driver writes its details of an object (`rdma resource show ... -dd`): named
/// values in a netlink message being built.
///
/// # Invariants
///
/// `msg` is a message under construction, with an open `RDMA_NLDEV_ATTR_DRIVER` nest, for
/// `'a`.
pub(crate) struct ResDetails<'a> {
    msg: *mut bindings::sk_buff,
    _msg: PhantomData<&'a mut bindings::sk_buff>,
}

impl ResDetails<'_> {
    /// Adds `name`: `value`. Fails with `EMSGSIZE` when the message is full.
    pub(crate) fn u32(&mut self, name: &CStr, value: u32) -> Result {
        // SAFETY: By the type invariant; `name` is NUL-terminated and copied.
        to_result(unsafe { bindings::rdma_nl_put_driver_u32(self.msg, name.as_char_ptr(), value) })
    }

    /// Adds `name`: `value`.
    pub(crate) fn u64(&mut self, name: &CStr, value: u64) -> Result {
        // SAFETY: As in `u32`.
        to_result(unsafe { bindings::rdma_nl_put_driver_u64(self.msg, name.as_char_ptr(), value) })
    }

    /// Adds `name`: `value`.
    pub(crate) fn str(&mut self, name: &CStr, value: &CStr) -> Result {
        // SAFETY: As in `u32`; `value` is NUL-terminated and copied too.
        to_result(unsafe {
            bindings::rdma_nl_put_driver_string(self.msg, name.as_char_ptr(), value.as_char_ptr())
        })
    }
}

/// A QP as a kernel consumer's work completion names it (`ib_wc.qp`), to be stored with
/// the completion until it is polled.
///
/// # Invariants
///
/// Made (by [`Qp::kernel_handle`]) from a QP that was live then. Only handed back to the
/// consumer that owns the QP, never dereferenced here, so it may outlive the QP.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct KernelQp(NonNull<bindings::ib_qp>);

// SAFETY: Only an address, never dereferenced by this layer.
unsafe impl Send for KernelQp {}
// SAFETY: As above.
unsafe impl Sync for KernelQp {}

/// A work completion taken from a kernel CQ (`struct ib_wc`).
#[derive(Clone, Copy, Default)]
pub(crate) struct Wc {
    pub(crate) id: u64,
    pub(crate) status: WcStatus,
    pub(crate) opcode: WcOpcode,
    pub(crate) byte_len: u32,
    /// The QP, as [`Qp::kernel_handle`] named it (a real one: a driver cannot make one up).
    pub(crate) qp: Option<KernelQp>,
    /// The local STag a received Send with Invalidate invalidated (`IB_WC_WITH_INVALIDATE`).
    pub(crate) invalidated: Option<u32>,
    /// The immediate data received (`IB_WC_WITH_IMM`), as its bytes sit in `ex.imm_data`.
    pub(crate) imm: Option<[u8; 4]>,
}

/// Which completions wake an armed CQ (`enum ib_cq_notify_flags`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum CqNotify {
    /// The next solicited completion (`IB_CQ_SOLICITED`).
    Solicited,
    /// The next completion (`IB_CQ_NEXT_COMP`).
    NextComp,
}

/// A registered memory region's keys.
#[derive(Clone, Copy)]
pub(crate) struct MrKeys {
    pub(crate) lkey: u32,
    pub(crate) rkey: u32,
}

// SAFETY (for every trampoline below): the RDMA core calls them with valid objects of this
// driver's devices, allocated with `Adapter::<T>::OPS`'s sizes, and serialises create and
// destroy of each object against every other callback on it.
impl<T: Driver> Adapter<T> {
    /// The `alloc_pd` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.alloc_pd` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn alloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core sets `device` before calling `alloc_pd`.
            let dev = unsafe { Device::<T>::from_raw((*pd).device) };
            // SAFETY: A fresh `size_ib_pd` allocation; the data is dropped in `dealloc_pd`.
            unsafe { Pd::<T>::init(pd, T::alloc_pd(dev)) }?;
            Ok(0)
        })
    }

    /// The `dealloc_pd` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.dealloc_pd` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn dealloc_pd(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: `alloc_pd` succeeded for `pd`; this is its last callback.
        unsafe {
            let dev = Device::<T>::from_raw((*pd).device);
            T::dealloc_pd(dev, Pd::<T>::from_raw(pd).data());
            Pd::<T>::drop_data(pd);
        }
        0
    }

    /// The `create_cq` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.create_cq` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn create_cq(
        cq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core sets `device` first; `attr` is valid for the call.
            let (dev, attr) = unsafe { (Device::<T>::from_raw((*cq).device), &*attr) };
            if attr.flags != 0 {
                return Err(EOPNOTSUPP);
            }
            // SAFETY: `attrs` is NULL for kernel CQs (the helper then gives NULL), else the
            // command's bundle.
            let mut user = unsafe { User::<T>::from_udata(bindings::attrs_to_udata(attrs)) };
            let cqe = i32::try_from(attr.cqe).map_err(|_| EINVAL)?;
            let (init, n) = T::create_cq(dev, cqe, user.as_mut())?;
            // SAFETY: A fresh `size_ib_cq` allocation; the data is dropped in `destroy_cq`.
            unsafe { Cq::<T>::init(cq, init) }?;
            // SAFETY: `cq` is ours to set up; `cqe` is what consumers read as the CQ size.
            unsafe { (*cq).cqe = n };
            Ok(0)
        })
    }

    /// The `destroy_cq` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.destroy_cq` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn destroy_cq(
        cq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: `create_cq` succeeded for `cq`; the core destroys a CQ only once no QP
        // uses it, and this is its last callback.
        unsafe {
            let dev = Device::<T>::from_raw((*cq).device);
            T::destroy_cq(dev, Cq::<T>::from_raw(cq).data());
            Cq::<T>::drop_data(cq);
        }
        0
    }

    /// The `create_srq` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.create_srq` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn create_srq(
        srq: *mut bindings::ib_srq,
        init: *mut bindings::ib_srq_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core sets `device` and `pd` first; `init` is valid for the call.
            let (pd, init) = unsafe { (Pd::<T>::from_raw((*srq).pd), &mut *init) };
            if init.srq_type != bindings::ib_srq_type_IB_SRQT_BASIC {
                return Err(EOPNOTSUPP);
            }
            let a = SrqAttr {
                max_wr: init.attr.max_wr,
                max_sge: init.attr.max_sge,
                srq_limit: init.attr.srq_limit,
            };
            // SAFETY: `udata` is NULL or the command's.
            let mut user = unsafe { User::<T>::from_udata(udata) };
            let (data, out) = T::create_srq(pd, &a, user.as_mut())?;
            // SAFETY: A fresh `size_ib_srq` allocation; dropped in `destroy_srq`.
            unsafe { Srq::<T>::init(srq, data) }?;
            init.attr.max_wr = out.max_wr;
            init.attr.max_sge = out.max_sge;
            Ok(0)
        })
    }

    /// The `modify_srq` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.modify_srq` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn modify_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
        mask: bindings::ib_srq_attr_mask,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: A live SRQ; `attr` is valid for the call.
            let (s, attr) = unsafe { (Srq::<T>::from_raw(srq), &*attr) };
            let known = SrqAttrMask::from(SrqAttrBit::MaxWr) | SrqAttrBit::Limit;
            if mask & !u32::from(known) != 0 {
                return Err(EOPNOTSUPP);
            }
            let m = SrqAttrMask(mask);
            let a = SrqAttr {
                max_wr: attr.max_wr,
                max_sge: attr.max_sge,
                srq_limit: attr.srq_limit,
            };
            T::modify_srq(s, &a, m)?;
            Ok(0)
        })
    }

    /// The `query_srq` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.query_srq` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn query_srq(
        srq: *mut bindings::ib_srq,
        attr: *mut bindings::ib_srq_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: A live SRQ.
            let a = T::query_srq(unsafe { Srq::<T>::from_raw(srq) })?;
            // SAFETY: `attr` is a writable `ib_srq_attr`.
            let out = unsafe { &mut *attr };
            out.max_wr = a.max_wr;
            out.max_sge = a.max_sge;
            out.srq_limit = a.srq_limit;
            Ok(0)
        })
    }

    /// The `destroy_srq` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.destroy_srq` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn destroy_srq(
        srq: *mut bindings::ib_srq,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: `create_srq` succeeded; no QP uses the SRQ any more (core `usecnt`).
        unsafe {
            T::destroy_srq(Srq::<T>::from_raw(srq));
            Srq::<T>::drop_data(srq);
        }
        0
    }

    /// The `create_qp` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.create_qp` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn create_qp(
        qp: *mut bindings::ib_qp,
        init: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core sets `device` and `pd` first; `init` is valid for the call.
            let (pd, init) = unsafe { (Pd::<T>::from_raw((*qp).pd), &mut *init) };
            // SAFETY: Non-null CQ and SRQ pointers name live objects of this device, which the
            // core keeps alive (their `usecnt`) for the QP's whole life.
            let (send_cq, recv_cq, srq) = unsafe {
                (
                    NonNull::new(init.send_cq).map(|p| Cq::<T>::from_raw(p.as_ptr())),
                    NonNull::new(init.recv_cq).map(|p| Cq::<T>::from_raw(p.as_ptr())),
                    NonNull::new(init.srq).map(|p| Srq::<T>::from_raw(p.as_ptr())),
                )
            };
            let a = QpInit {
                qp_type: match init.qp_type {
                    bindings::ib_qp_type_IB_QPT_RC => QpType::Rc,
                    other => QpType::Other(other),
                },
                create_flags: init.create_flags,
                sq_sig_type: match init.sq_sig_type {
                    bindings::ib_sig_type_IB_SIGNAL_ALL_WR => Some(SigType::AllWr),
                    bindings::ib_sig_type_IB_SIGNAL_REQ_WR => Some(SigType::ReqWr),
                    _ => None,
                },
                cap: QpCap::from_c(&init.cap),
                send_cq,
                recv_cq,
                srq,
            };
            // SAFETY: `udata` is NULL or the command's.
            let mut user = unsafe { User::<T>::from_udata(udata) };
            let (data, qpn) = T::create_qp(pd, &a, user.as_mut())?;
            // SAFETY: `qp` is ours to set up until we return.
            unsafe { (*qp).qp_num = qpn };
            // SAFETY: A fresh `size_ib_qp` allocation; dropped in `destroy_qp`.
            unsafe { Qp::<T>::init(qp, data) }?;
            // SAFETY: Just initialised.
            let q = unsafe { Qp::<T>::from_raw(qp) };
            if let Err(e) = T::qp_created(q) {
                // SAFETY: Initialised above and unknown to anyone else; the core frees the
                // memory when we fail.
                unsafe { Qp::<T>::drop_data(qp) };
                return Err(e);
            }
            Ok(0)
        })
    }

    /// The `modify_qp` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.modify_qp` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn modify_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: c_int,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            let mask = u32::try_from(mask).map_err(|_| EINVAL)?;
            if mask & !bindings::ib_qp_attr_mask_IB_QP_ATTR_STANDARD_BITS != 0 {
                return Err(EOPNOTSUPP);
            }
            // SAFETY: A live QP; `attr` is valid for the call.
            let (q, attr) = unsafe { (Qp::<T>::from_raw(qp), &*attr) };
            let mut m = QpModify::default();
            if mask & bindings::ib_qp_attr_mask_IB_QP_STATE != 0 {
                m.state = Some(QpState::from_c(attr.qp_state)?);
            }
            if mask & bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS != 0 {
                let raw = u32::try_from(attr.qp_access_flags).map_err(|_| EINVAL)?;
                m.access_flags = Some(AccessFlags::from_raw(raw));
            }
            if mask & bindings::ib_qp_attr_mask_IB_QP_AV != 0 {
                m.av = Some(Av {
                    grh: Self::grh(&attr.ah_attr)?,
                });
            }
            if mask & bindings::ib_qp_attr_mask_IB_QP_DEST_QPN != 0 {
                m.dest_qpn = Some(attr.dest_qp_num);
            }
            if mask & bindings::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC != 0 {
                m.max_dest_rd_atomic = Some(attr.max_dest_rd_atomic);
            }
            if mask & bindings::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC != 0 {
                m.max_rd_atomic = Some(attr.max_rd_atomic);
            }
            if mask & bindings::ib_qp_attr_mask_IB_QP_TIMEOUT != 0 {
                m.timeout = Some(attr.timeout);
            }
            if mask & bindings::ib_qp_attr_mask_IB_QP_RETRY_CNT != 0 {
                m.retry_cnt = Some(attr.retry_cnt);
            }
            if mask & bindings::ib_qp_attr_mask_IB_QP_SQ_PSN != 0 {
                m.sq_psn = Some(attr.sq_psn);
            }
            if mask & bindings::ib_qp_attr_mask_IB_QP_RQ_PSN != 0 {
                m.rq_psn = Some(attr.rq_psn);
            }
            T::modify_qp(q, &m)?;
            Ok(0)
        })
    }

    /// The global route of `ah`, if it has one.
    fn grh(ah: &bindings::rdma_ah_attr) -> Result<Option<Grh>> {
        if u32::from(ah.ah_flags) & bindings::ib_ah_flags_IB_AH_GRH == 0 {
            return Ok(None);
        }
        let g = &ah.grh;
        // The core resolves `sgid_attr` from `sgid_index` before calling the driver
        // (`rdma_fill_sgid_attr`), and fails the call when the index names no GID.
        if g.sgid_attr.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: `sgid_attr` is a GID table entry the core holds a reference on for the
        // call; `ib_gid` is a union of plain bytes, valid for any bits.
        let (sgid, dgid) = unsafe { ((*g.sgid_attr).gid.raw, g.dgid.raw) };
        Ok(Some(Grh {
            sgid_index: u32::from(g.sgid_index),
            sgid,
            dgid,
        }))
    }

    /// The `fill_res_qp_entry` callback: the driver's details of a QP, in a nest of
    /// `RDMA_NLDEV_ATTR_DRIVER` entries.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.fill_res_qp_entry` of a device of
    /// driver `T`, with a message being built and a QP it holds a reference on.
    pub(super) unsafe extern "C" fn fill_res_qp_entry(
        msg: *mut bindings::sk_buff,
        qp: *mut bindings::ib_qp,
    ) -> c_int {
        // SAFETY: `msg` is a message under construction; the helper only appends to it.
        let nest = unsafe {
            bindings::nla_nest_start_noflag(
                msg,
                bindings::rdma_nldev_attr_RDMA_NLDEV_ATTR_DRIVER as c_int,
            )
        };
        if nest.is_null() {
            return EMSGSIZE.to_errno();
        }
        // SAFETY: A live QP.
        let q = unsafe { Qp::<T>::from_raw(qp) };
        let mut out = ResDetails {
            msg,
            _msg: PhantomData,
        };
        match T::qp_details(q, &mut out) {
            Ok(()) => {
                // SAFETY: `nest` was opened in `msg` above and is closed once. It returns the
                // message's length, which the core would take for an error: 0 is success.
                unsafe { bindings::nla_nest_end(msg, nest) };
                0
            }
            Err(e) => {
                // SAFETY: As above; cancelling trims the message back to before the nest.
                unsafe { bindings::nla_nest_cancel(msg, nest) };
                e.to_errno()
            }
        }
    }

    /// The `query_qp` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.query_qp` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn query_qp(
        qp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        _mask: c_int,
        init: *mut bindings::ib_qp_init_attr,
    ) -> c_int {
        from_result(|| {
            if attr.is_null() || init.is_null() {
                return Err(EINVAL);
            }
            // SAFETY: A live QP.
            let q = unsafe { Qp::<T>::from_raw(qp) };
            // SAFETY: As in `query_device`: the QP's device is live.
            let dev = unsafe { Device::<T>::from_raw((*qp).device) };
            let mtu = dev.with_netdev(|nd| nd.mtu())?;
            let r = T::query_qp(q)?;
            // SAFETY: Both out pointers are valid, writable and distinct (checked non-null).
            let (attr, init) = unsafe { (&mut *attr, &mut *init) };
            // uverbs allocates both without zeroing them (`ib_uverbs_query_qp`), and copies
            // every field to user space: clear them, or the fields an iWARP QP does not set
            // would carry stale kernel heap to the process (the C siw leaks them).
            *attr = pin_init::zeroed();
            *init = pin_init::zeroed();
            attr.qp_state = r.state.to_c();
            r.cap.to_c(&mut attr.cap);
            attr.path_mtu = super::device::ib_mtu(mtu);
            attr.max_rd_atomic = r.max_rd_atomic;
            attr.max_dest_rd_atomic = r.max_dest_rd_atomic;
            attr.qp_access_flags = c_int::try_from(r.access_flags.bits()).unwrap_or(0);
            // SAFETY: The base QP's fields are set by the core and stable.
            unsafe {
                init.qp_type = (*qp).qp_type;
                init.send_cq = (*qp).send_cq;
                init.recv_cq = (*qp).recv_cq;
                init.srq = (*qp).srq;
            }
            init.cap = attr.cap;
            Ok(0)
        })
    }

    /// The `destroy_qp` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.destroy_qp` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn destroy_qp(
        qp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: `create_qp` succeeded; this is the QP's last callback.
        unsafe {
            T::destroy_qp(Qp::<T>::from_raw(qp));
            Qp::<T>::drop_data(qp);
        }
        0
    }

    /// The `post_send` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.post_send` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn post_send(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> c_int {
        // SAFETY: A live QP.
        let q = unsafe { Qp::<T>::from_raw(qp) };
        // SAFETY: The core's list of valid work requests, valid for the call (uverbs copies
        // a process's requests into kernel memory first).
        let mut list = unsafe { SendWrs::new(wr, q.is_kernel()) };
        let r = T::post_send(q, &mut list);
        // SAFETY: The core's out pointer.
        unsafe { list.finish(r, bad_wr) }
    }

    /// The `post_recv` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.post_recv` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn post_recv(
        qp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> c_int {
        // SAFETY: A live QP.
        let q = unsafe { Qp::<T>::from_raw(qp) };
        // SAFETY: The core's list of valid work requests, valid for the call.
        let mut list = unsafe { RecvWrs::new(wr, q.is_kernel()) };
        let r = T::post_recv(q, &mut list);
        // SAFETY: The core's out pointer.
        unsafe { list.finish(r, bad_wr) }
    }

    /// The `post_srq_recv` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.post_srq_recv` of a device of driver
    /// `T`, with the arguments that callback documents.
    pub(super) unsafe extern "C" fn post_srq_recv(
        srq: *mut bindings::ib_srq,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> c_int {
        // SAFETY: A live SRQ.
        let s = unsafe { Srq::<T>::from_raw(srq) };
        // SAFETY: A live SRQ; `uobject` is set at creation for a process's SRQ only.
        let kernel = unsafe { (*srq).uobject }.is_null();
        // SAFETY: The core's list of valid work requests, valid for the call.
        let mut list = unsafe { RecvWrs::new(wr, kernel) };
        let r = T::post_srq_recv(s, &mut list);
        // SAFETY: The core's out pointer.
        unsafe { list.finish(r, bad_wr) }
    }

    /// The `reg_user_mr` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.reg_user_mr` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn reg_user_mr(
        pd: *mut bindings::ib_pd,
        start: u64,
        len: u64,
        virt: u64,
        access: c_int,
        dmah: *mut bindings::ib_dmah,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        let r = (|| -> Result<*mut bindings::ib_mr> {
            if !dmah.is_null() {
                return Err(EOPNOTSUPP);
            }
            if len == 0 {
                return Err(EINVAL);
            }
            // SAFETY: A live PD of this device.
            let pdo = unsafe { Pd::<T>::from_raw(pd) };
            // SAFETY: The PD's device is live; `ib_umem_get_va` pins the user range or
            // returns an error pointer.
            let umem = from_err_ptr(unsafe {
                bindings::ib_umem_get_va(
                    (*pd).device,
                    usize::try_from(start).map_err(|_| EINVAL)?,
                    usize::try_from(len).map_err(|_| EINVAL)?,
                    access,
                )
            })?;
            let umem = NonNull::new(umem).ok_or(EFAULT)?;
            // SAFETY: Just pinned for this PD's device; only `Umem` releases it.
            let umem = unsafe { Umem::new(umem, (*pd).device)? };
            let mr = UserMr {
                umem,
                start,
                len,
                virt,
                access: AccessFlags::from_raw(u32::try_from(access).map_err(|_| EINVAL)?),
            };
            // SAFETY: `udata` is NULL or the command's.
            let mut user = unsafe { User::<T>::from_udata(udata) };
            let (data, keys) = T::reg_user_mr(pdo, mr, user.as_mut())?;
            MrAlloc::<T>::publish(data, keys)
        })();
        match r {
            Ok(p) => p,
            Err(e) => e.to_ptr(),
        }
    }

    /// The `poll_cq` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.poll_cq` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn poll_cq(
        cq: *mut bindings::ib_cq,
        num: c_int,
        wc: *mut bindings::ib_wc,
    ) -> c_int {
        // SAFETY: A live CQ.
        let q = unsafe { Cq::<T>::from_raw(cq) };
        let want = usize::try_from(num).unwrap_or(0);
        let mut buf = [Wc::default(); 16];
        let mut done = 0usize;
        while done < want {
            let k = want.saturating_sub(done).min(buf.len());
            let got = T::poll_cq(q, buf.get_mut(..k).unwrap_or(&mut []));
            for (i, w) in buf.iter().take(got).enumerate() {
                let mut out: bindings::ib_wc = pin_init::zeroed();
                out.__bindgen_anon_1.wr_id = w.id;
                out.status = w.status.to_c();
                out.opcode = w.opcode.to_c();
                out.byte_len = w.byte_len;
                out.qp = w.qp.map_or(core::ptr::null_mut(), |q| q.0.as_ptr());
                if let Some(stag) = w.invalidated {
                    out.wc_flags = bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE as c_int;
                    out.ex.invalidate_rkey = stag;
                }
                if let Some(imm) = w.imm {
                    out.wc_flags |= bindings::ib_wc_flags_IB_WC_WITH_IMM as c_int;
                    out.ex.imm_data = u32::from_ne_bytes(imm);
                }
                // SAFETY: The core passes room for `num` entries; `done + i < num`.
                unsafe { wc.add(done.saturating_add(i)).write(out) };
            }
            done = done.saturating_add(got);
            if got < k {
                break;
            }
        }
        c_int::try_from(done).unwrap_or(0)
    }

    /// The `req_notify_cq` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.req_notify_cq` of a device of driver
    /// `T`, with the arguments that callback documents.
    pub(super) unsafe extern "C" fn req_notify_cq(
        cq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> c_int {
        // SAFETY: A live CQ.
        let q = unsafe { Cq::<T>::from_raw(cq) };
        let notify = if flags & bindings::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK
            == bindings::ib_cq_notify_flags_IB_CQ_SOLICITED
        {
            CqNotify::Solicited
        } else {
            CqNotify::NextComp
        };
        let pending = T::req_notify_cq(q, notify);
        c_int::from(pending && flags & bindings::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0)
    }

    /// The `get_dma_mr` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.get_dma_mr` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn get_dma_mr(
        pd: *mut bindings::ib_pd,
        access: c_int,
    ) -> *mut bindings::ib_mr {
        let r = (|| -> Result<*mut bindings::ib_mr> {
            // SAFETY: A live PD of this device.
            let pdo = unsafe { Pd::<T>::from_raw(pd) };
            // INVARIANT: This is the consumer's DMA MR: it grants access to its memory.
            let mem = KernelMem(());
            let access = AccessFlags::from_raw(u32::try_from(access).map_err(|_| EINVAL)?);
            let (data, keys) = T::get_dma_mr(pdo, access, mem)?;
            MrAlloc::<T>::publish(data, keys)
        })();
        match r {
            Ok(p) => p,
            Err(e) => e.to_ptr(),
        }
    }

    /// The `alloc_mr` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.alloc_mr` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn alloc_mr(
        pd: *mut bindings::ib_pd,
        mr_type: bindings::ib_mr_type,
        max_num_sg: u32,
    ) -> *mut bindings::ib_mr {
        let r = (|| -> Result<*mut bindings::ib_mr> {
            // Gapped and integrity MRs are not offered (no `IB_DEVICE_SG_GAPS_REG`, no
            // integrity handover).
            if mr_type != bindings::ib_mr_type_IB_MR_TYPE_MEM_REG {
                return Err(EINVAL);
            }
            // SAFETY: A live PD of this device.
            let pdo = unsafe { Pd::<T>::from_raw(pd) };
            let (data, keys) = T::alloc_mr(pdo, max_num_sg)?;
            MrAlloc::<T>::publish(data, keys)
        })();
        match r {
            Ok(p) => p,
            Err(e) => e.to_ptr(),
        }
    }

    /// The `map_mr_sg` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.map_mr_sg` of a device of driver `T`
    /// for an MR of its `alloc_mr`, with the arguments that callback documents.
    pub(super) unsafe extern "C" fn map_mr_sg(
        mr: *mut bindings::ib_mr,
        sg: *mut bindings::scatterlist,
        sg_nents: c_int,
        sg_offset: *mut c_uint,
    ) -> c_int {
        // SAFETY: `mr` came from `MrAlloc::publish` (the `ib_mr` at offset 0) and lives for
        // the call.
        let obj = unsafe { &*mr.cast::<MrAlloc<T>>() };
        let map = MrMap {
            mr,
            sg,
            sg_nents,
            sg_offset,
            _p: PhantomData,
        };
        match T::map_mr_sg(&obj.data, map) {
            Ok(n) => c_int::try_from(n).unwrap_or(c_int::MAX),
            Err(e) => e.to_errno(),
        }
    }

    /// `ib_sg_to_pages`'s `set_page` callback for [`MrMap::map`].
    ///
    /// # Safety
    ///
    /// Called only by `ib_sg_to_pages` within [`MrMap::map`], for an MR of `alloc_mr`.
    unsafe extern "C" fn set_page(mr: *mut bindings::ib_mr, addr: u64) -> c_int {
        // SAFETY: As in `map_mr_sg`, whose call this is part of.
        let obj = unsafe { &*mr.cast::<MrAlloc<T>>() };
        // INVARIANT (of `MappedPage`): the consumer maps this page onto its MR.
        match T::set_page(&obj.data, MappedPage(addr)) {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        }
    }

    /// The `dereg_mr` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.dereg_mr` of a device of driver `T`,
    /// with the arguments that callback documents.
    pub(super) unsafe extern "C" fn dereg_mr(
        mr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: `mr` came from `MrAlloc::publish`, the `into_foreign` of a
        // `KBox<MrAlloc<T>>` with the `ib_mr` at offset 0; this is its last callback.
        let obj = unsafe { KBox::<MrAlloc<T>>::from_foreign(mr.cast()) };
        T::dereg_mr(&obj.data);
        drop(obj);
        0
    }
}

/// Where a mapped MR's pages start and what they span, as `ib_sg_to_pages` left them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MrLayout {
    /// The address of the first byte (`ib_mr.iova`).
    pub(crate) iova: u64,
    /// The size of each page (`ib_mr.page_size`), a power of two.
    pub(crate) page_size: u64,
}

/// A `map_mr_sg` call in progress: the MR and the scatterlist to map onto it.
///
/// # Invariants
///
/// `mr` is a live MR of `alloc_mr` of driver `T`; `sg`, `sg_nents` and `sg_offset` are the
/// core's arguments of the `map_mr_sg` call this value lives in.
pub(crate) struct MrMap<'a, T: Driver> {
    mr: *mut bindings::ib_mr,
    sg: *mut bindings::scatterlist,
    sg_nents: c_int,
    sg_offset: *mut c_uint,
    _p: PhantomData<&'a T>,
}

impl<T: Driver> MrMap<'_, T> {
    /// Runs `ib_sg_to_pages`, which calls [`Driver::set_page`] for each page; returns the
    /// number of entries mapped and the layout.
    pub(crate) fn map(self) -> Result<(usize, MrLayout)> {
        // SAFETY: The core's arguments (invariant); `set_page` matches the callback type
        // and treats `mr` as an MR of `T`. The helper sets `iova` and `length` of the MR.
        let n = unsafe {
            bindings::ib_sg_to_pages(
                self.mr,
                self.sg,
                self.sg_nents,
                self.sg_offset,
                Some(Adapter::<T>::set_page),
            )
        };
        let n = usize::try_from(n).map_err(|_| Error::from_errno(n))?;
        // SAFETY: A live MR (invariant); plain integers the core and the helper set.
        let layout = unsafe {
            MrLayout {
                iova: (*self.mr).iova,
                page_size: u64::from((*self.mr).page_size),
            }
        };
        Ok((n, layout))
    }
}

/// The memory behind an [`Mr`]: the driver allocates MRs itself.
#[repr(C)]
struct MrAlloc<T: Driver> {
    ib: bindings::ib_mr,
    data: T::Mr,
}

impl<T: Driver> MrAlloc<T> {
    /// Allocates the MR for `data` with `keys`; the core fills in the rest of the `ib_mr`,
    /// and `dereg_mr` frees it.
    fn publish(data: T::Mr, keys: MrKeys) -> Result<*mut bindings::ib_mr> {
        let obj = KBox::new(
            Self {
                ib: pin_init::zeroed(),
                data,
            },
            GFP_KERNEL,
        )?;
        let raw = obj.into_foreign().cast::<bindings::ib_mr>();
        // SAFETY: `raw` is the freshly allocated MR (the `ib_mr` at offset 0), ours alone.
        unsafe {
            (*raw).lkey = keys.lkey;
            (*raw).rkey = keys.rkey;
        }
        Ok(raw)
    }
}
