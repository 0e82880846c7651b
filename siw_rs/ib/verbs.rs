// SPDX-License-Identifier: GPL-2.0

//! Verbs objects: protection domains, completion queues, shared receive queues, queue pairs
//! and memory regions. Typed attributes for the driver, and the trampolines behind
//! [`Adapter`]'s ops table.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/rdma/ib_umem.h`](srctree/include/rdma/ib_umem.h).

use super::{
    bindings,
    device::{
        Adapter,
        Device,
        Driver, //
    },
    object::{
        Obj,
        User,
        MAX_INLINE, //
    },
    sock::IoVec,
};
use crate::proto::qp::VerbsState;
use core::ptr::NonNull;
use kernel::{
    error::{
        from_err_ptr,
        from_result, //
    },
    impl_has_work, new_work,
    prelude::*,
    workqueue::{
        Work,
        WorkItem, //
    },
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
        unsafe { bindings::siw_rs_cq_use(cq.as_ptr()) };
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
        unsafe { bindings::siw_rs_cq_unuse(self.get().as_ptr()) };
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
    /// Whether the QP belongs to a kernel consumer (work requests come as lists) rather than to
    /// a process (work requests come through the mapped queues).
    pub(crate) fn is_kernel(&self) -> bool {
        // SAFETY: A live QP; its restrack entry is set at creation.
        unsafe { bindings::siw_rs_qp_is_kernel(self.as_ptr()) }
    }

    /// The QP as kernel consumers name it in work completions (`wc->qp`).
    pub(crate) fn kernel_handle(&self) -> u64 {
        self.as_ptr() as usize as u64
    }

    /// The QP number.
    pub(crate) fn qp_num(&self) -> u32 {
        // SAFETY: A live QP; `qp_num` is set at creation.
        unsafe { (*self.as_ptr()).qp_num }
    }
}

/// Access flags (`IB_ACCESS_*`).
pub(crate) mod access {
    use super::bindings;
    /// Local write.
    pub(crate) const LOCAL_WRITE: u32 = bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE;
    /// Remote write.
    pub(crate) const REMOTE_WRITE: u32 = bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE;
    /// Remote read.
    pub(crate) const REMOTE_READ: u32 = bindings::ib_access_flags_IB_ACCESS_REMOTE_READ;
}

/// The verbs QP state a C `enum ib_qp_state` names.
fn state_from_c(s: bindings::ib_qp_state) -> Result<VerbsState> {
    Ok(match s {
        bindings::ib_qp_state_IB_QPS_RESET => VerbsState::Reset,
        bindings::ib_qp_state_IB_QPS_INIT => VerbsState::Init,
        bindings::ib_qp_state_IB_QPS_RTR => VerbsState::Rtr,
        bindings::ib_qp_state_IB_QPS_RTS => VerbsState::Rts,
        bindings::ib_qp_state_IB_QPS_SQD => VerbsState::Sqd,
        bindings::ib_qp_state_IB_QPS_SQE => VerbsState::Sqe,
        bindings::ib_qp_state_IB_QPS_ERR => VerbsState::Err,
        _ => return Err(EINVAL),
    })
}

/// The C `enum ib_qp_state` of a verbs QP state.
fn state_to_c(s: VerbsState) -> bindings::ib_qp_state {
    match s {
        VerbsState::Reset => bindings::ib_qp_state_IB_QPS_RESET,
        VerbsState::Init => bindings::ib_qp_state_IB_QPS_INIT,
        VerbsState::Rtr => bindings::ib_qp_state_IB_QPS_RTR,
        VerbsState::Rts => bindings::ib_qp_state_IB_QPS_RTS,
        VerbsState::Sqd => bindings::ib_qp_state_IB_QPS_SQD,
        VerbsState::Sqe => bindings::ib_qp_state_IB_QPS_SQE,
        VerbsState::Err => bindings::ib_qp_state_IB_QPS_ERR,
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

/// `create_qp` attributes.
pub(crate) struct QpInit<'a, T: Driver> {
    /// The QP type is RC (the only one iWARP has).
    pub(crate) rc: bool,
    /// `create_flags` (none are supported).
    pub(crate) create_flags: u32,
    /// Every send WR completes signalled (`IB_SIGNAL_ALL_WR`); `None` for an invalid value.
    pub(crate) sig_all: Option<bool>,
    /// Requested capacities.
    pub(crate) cap: QpCap,
    /// The send CQ.
    pub(crate) send_cq: Option<&'a Cq<T>>,
    /// The receive CQ.
    pub(crate) recv_cq: Option<&'a Cq<T>>,
    /// The SRQ, if any.
    pub(crate) srq: Option<&'a Srq<T>>,
}

/// `modify_qp` attributes: only what an iWARP QP uses; the standard attributes that do not
/// apply are accepted and ignored, as by the C siw.
#[derive(Default)]
pub(crate) struct QpModify {
    /// New state (`IB_QP_STATE`).
    pub(crate) state: Option<VerbsState>,
    /// New access flags (`IB_QP_ACCESS_FLAGS`).
    pub(crate) access_flags: Option<u32>,
}

/// What `query_qp` reports.
pub(crate) struct QpQuery {
    pub(crate) state: VerbsState,
    pub(crate) cap: QpCap,
    pub(crate) max_rd_atomic: u8,
    pub(crate) max_dest_rd_atomic: u8,
    pub(crate) access_flags: u32,
}

/// `struct ib_srq_attr`.
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct SrqAttr {
    pub(crate) max_wr: u32,
    pub(crate) max_sge: u32,
    pub(crate) srq_limit: u32,
}

/// Which SRQ attributes a `modify_srq` changes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SrqMask {
    /// `IB_SRQ_MAX_WR` (resize).
    pub(crate) max_wr: bool,
    /// `IB_SRQ_LIMIT` (arm the limit event).
    pub(crate) limit: bool,
}

/// User memory pinned for a memory region (`struct ib_umem`).
///
/// Released in process context, whatever context drops it: the last reference to a region
/// may go in the socket read actor (atomic), and `ib_umem_release` may sleep (unpinning
/// dirty pages takes the page lock). Dropping queues the release on siw_rs's workqueue,
/// with a work item allocated together with the umem, so it cannot fail. Module exit
/// drains that queue, and the umem holds a reference on its device until it is released.
pub(crate) struct Umem(Option<Pin<KBox<UmemRelease>>>);

/// A pinned umem and a reference on its device, both released on drop.
///
/// # Invariants
///
/// `umem` was returned by `ib_umem_get_va` and is not yet released; `dev` is its device,
/// on which this value holds a reference (`ib_device_try_get`).
struct UmemRef {
    umem: NonNull<bindings::ib_umem>,
    dev: NonNull<bindings::ib_device>,
}

// SAFETY: A umem may be released, and a device reference dropped, from any process context.
unsafe impl Send for UmemRef {}
// SAFETY: `&UmemRef` gives access to nothing.
unsafe impl Sync for UmemRef {}

impl Drop for UmemRef {
    fn drop(&mut self) {
        // SAFETY: By the type invariant; released exactly once, then the device reference
        // the umem needed is dropped.
        unsafe {
            bindings::ib_umem_release(self.umem.as_ptr());
            bindings::ib_device_put(self.dev.as_ptr());
        }
    }
}

/// The release of a [`UmemRef`], as work.
#[pin_data]
pub(crate) struct UmemRelease {
    held: UmemRef,
    #[pin]
    work: Work<UmemRelease>,
}

impl_has_work! {
    impl HasWork<Self> for UmemRelease { self.work }
}

impl WorkItem for UmemRelease {
    type Pointer = Pin<KBox<Self>>;

    fn run(this: Pin<KBox<Self>>) {
        drop(this);
    }
}

impl Umem {
    /// Takes ownership of `umem`, pinned on the live device `dev`.
    ///
    /// # Safety
    ///
    /// `umem` was just returned by `ib_umem_get_va` for `dev` and is released by nothing
    /// else.
    unsafe fn new(umem: NonNull<bindings::ib_umem>, dev: *mut bindings::ib_device) -> Result<Self> {
        let dev = NonNull::new(dev).ok_or(EINVAL)?;
        // SAFETY: `dev` is the PD's device, allocated while the PD lives; `try_get` only
        // reads and raises its registration count, and fails once unregistration began.
        if !unsafe { bindings::siw_rs_ib_device_try_get(dev.as_ptr()) } {
            // SAFETY: By the caller's guarantee; nothing else releases it.
            unsafe { bindings::ib_umem_release(umem.as_ptr()) };
            return Err(ENODEV);
        }
        // INVARIANT: Both held just above. Should the allocation fail, `held` is dropped
        // here, in process context, and releases them.
        let held = UmemRef { umem, dev };
        let r = KBox::pin_init(
            pin_init!(UmemRelease {
                held,
                work <- new_work!("Umem::release"),
            }),
            GFP_KERNEL,
        )?;
        Ok(Self(Some(r)))
    }

    fn as_ptr(&self) -> *mut bindings::ib_umem {
        self.0
            .as_ref()
            .map_or(core::ptr::null_mut(), |r| r.held.umem.as_ptr())
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        let Some(r) = self.0.take() else {
            return;
        };
        match super::work::queue() {
            Some(q) => q.enqueue(r),
            // Module exit, in process context.
            None => drop(r),
        }
    }
}

/// Pinned user memory, addressed by byte offset from the region's start: the umem and the
/// kernel addresses of its pages.
///
/// # Invariants
///
/// `pages` are the kernel addresses of the umem's pages, in order; the first `first` bytes
/// of the first page precede the region, which is `len` bytes long. The pages stay pinned
/// (and mapped: siw_rs needs a kernel without highmem) while `umem` lives.
pub(crate) struct UserPages {
    _umem: Umem,
    pages: KVec<usize>,
    first: usize,
    len: usize,
}

impl UserPages {
    /// The pages of `umem`, whose region is `len` bytes long.
    pub(crate) fn new(umem: Umem, len: u64) -> Result<Self> {
        let u = umem.as_ptr();
        if u.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: A live umem.
        let (n, first) = unsafe {
            (
                bindings::siw_rs_umem_num_pages(u),
                bindings::siw_rs_umem_offset(u),
            )
        };
        let mut raw: KVec<*mut bindings::page> = KVec::with_capacity(n, GFP_KERNEL)?;
        raw.resize(n, core::ptr::null_mut(), GFP_KERNEL)?;
        // SAFETY: A live umem; `raw` has room for `n` entries.
        let got = unsafe { bindings::siw_rs_umem_pages(u, raw.as_mut_ptr(), n) };
        if got != n {
            return Err(EFAULT);
        }
        let mut pages = KVec::with_capacity(n, GFP_KERNEL)?;
        for p in raw.iter() {
            // SAFETY: A pinned page of the umem.
            let a = unsafe { bindings::siw_rs_page_address(*p) };
            if a.is_null() {
                return Err(EFAULT);
            }
            pages.push(a as usize, GFP_KERNEL)?;
        }
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        if first.checked_add(len).ok_or(EINVAL)? > n.saturating_mul(kernel::page::PAGE_SIZE) {
            return Err(EINVAL);
        }
        // INVARIANT: Checked above.
        Ok(Self {
            _umem: umem,
            pages,
            first,
            len,
        })
    }

    /// The region's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Calls `f` on the page-sized (or smaller) pieces of `len` bytes at `off`.
    fn pieces(&self, off: usize, len: usize, mut f: impl FnMut(usize, usize) -> Result) -> Result {
        let end = off.checked_add(len).ok_or(EFAULT)?;
        if end > self.len {
            return Err(EFAULT);
        }
        const PS: usize = kernel::page::PAGE_SIZE;
        let mut pos = off.checked_add(self.first).ok_or(EFAULT)?;
        let mut left = len;
        while left > 0 {
            let page = *self.pages.get(pos / PS).ok_or(EFAULT)?;
            let in_page = pos % PS;
            let n = left.min(PS.wrapping_sub(in_page));
            f(page.wrapping_add(in_page), n)?;
            pos = pos.wrapping_add(n);
            left = left.wrapping_sub(n);
        }
        Ok(())
    }

    /// Copies `src` to offset `off` of the region.
    pub(crate) fn write(&self, off: usize, src: &[u8]) -> Result {
        let mut done = 0usize;
        self.pieces(off, src.len(), |addr, n| {
            let s = src.get(done..done.saturating_add(n)).ok_or(EFAULT)?;
            // SAFETY: `addr..addr + n` lies in a pinned, mapped page of the region
            // (invariant and the bounds check in `pieces`); user space may access it
            // concurrently, which a byte copy tolerates.
            unsafe { core::ptr::copy_nonoverlapping(s.as_ptr(), addr as *mut u8, n) };
            done = done.saturating_add(n);
            Ok(())
        })
    }

    /// The pieces of `len` bytes at `off`, to send; with `splice` TCP may reference the
    /// pages instead of copying them.
    pub(crate) fn iovecs<'a>(
        &'a self,
        off: usize,
        len: usize,
        splice: bool,
        mut f: impl FnMut(IoVec<'a>) -> Result,
    ) -> Result {
        self.pieces(off, len, |addr, n| {
            if splice {
                // SAFETY: `addr` is a linear-map address (no highmem, invariant), so this
                // only computes its `struct page`.
                let page = unsafe { bindings::siw_rs_virt_to_page(addr as *const c_void) };
                // SAFETY: As in `write`, the bytes lie in the pinned, mapped page `page`
                // (`pieces` never crosses a page), which stays mapped and referenced for
                // `'a` (`self` holds the pin); pinned user pages are never slab memory.
                f(unsafe { IoVec::from_page(addr as *const u8, n, page) })
            } else {
                // SAFETY: As in `write`; the pages stay mapped for `'a` (they belong to `self`).
                f(unsafe { IoVec::from_raw(addr as *const u8, n) })
            }
        })
    }
}

/// A kernel consumer's DMA region (`get_dma_mr`): memory addressed by kernel virtual
/// address (siw_rs does virtual DMA, so a consumer's DMA addresses are kernel addresses).
///
/// Every piece accessed must lie in the kernel's linear map (`virt_addr_valid`): an address
/// outside it, even one a peer names through a global rkey the consumer chose to grant
/// (`IB_PD_UNSAFE_GLOBAL_RKEY`), is an access error, never a fault. Inside it, the consumer
/// answers for what it exposed, as with any DMA MR.
///
/// # Invariants
///
/// Made only by the `get_dma_mr` trampoline, where the kernel consumer that owns the region
/// grants access to its memory through it, and for a kernel consumer's inline SGEs, which
/// it hands over for reading by posting them.
pub(crate) struct KernelMem(());

impl KernelMem {
    /// Calls `f` on the page-sized (or smaller) pieces of `len` bytes at address `addr`,
    /// each checked to lie in the linear map.
    fn pieces(&self, addr: usize, len: usize, mut f: impl FnMut(usize, usize) -> Result) -> Result {
        const PS: usize = kernel::page::PAGE_SIZE;
        addr.checked_add(len).ok_or(EFAULT)?;
        let mut pos = addr;
        let mut left = len;
        while left > 0 {
            let n = left.min(PS.wrapping_sub(pos % PS));
            // SAFETY: Only computes whether the address has a `struct page` in the linear map.
            if !unsafe { bindings::siw_rs_virt_addr_valid(pos as *const c_void) } {
                return Err(EFAULT);
            }
            f(pos, n)?;
            pos = pos.wrapping_add(n);
            left = left.wrapping_sub(n);
        }
        Ok(())
    }
}

/// The memory a region names.
pub(crate) enum MrMem {
    /// Pinned user pages.
    User(UserPages),
    /// Kernel memory by kernel address (a DMA MR).
    Kernel(KernelMem),
}

impl MrMem {
    /// The region's length in bytes (a DMA MR spans all addresses).
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::User(u) => u.len(),
            Self::Kernel(_) => usize::MAX,
        }
    }

    /// Copies `src` to offset `off` of the region (for a DMA MR, to address `off`).
    pub(crate) fn write(&self, off: usize, src: &[u8]) -> Result {
        match self {
            Self::User(u) => u.write(off, src),
            Self::Kernel(k) => {
                let mut done = 0usize;
                k.pieces(off, src.len(), |addr, n| {
                    let s = src.get(done..done.saturating_add(n)).ok_or(EFAULT)?;
                    // SAFETY: `pieces` checked that the bytes lie in linear-map pages, which
                    // are mapped; the consumer granted writing them (invariant).
                    unsafe { core::ptr::copy_nonoverlapping(s.as_ptr(), addr as *mut u8, n) };
                    done = done.saturating_add(n);
                    Ok(())
                })
            }
        }
    }

    /// The pieces of `len` bytes at `off`, to send. With `splice`, TCP may reference pinned
    /// user pages instead of copying them (kernel memory is always copied: it may be slab).
    pub(crate) fn iovecs<'a>(
        &'a self,
        off: usize,
        len: usize,
        splice: bool,
        mut f: impl FnMut(IoVec<'a>) -> Result,
    ) -> Result {
        match self {
            Self::User(u) => u.iovecs(off, len, splice, f),
            Self::Kernel(k) => k.pieces(off, len, |addr, n| {
                // SAFETY: `pieces` checked that the bytes lie in mapped linear-map pages,
                // which stay mapped; the consumer keeps the buffer while its work request
                // is outstanding (the verbs contract), and granted reading it (invariant).
                f(unsafe { IoVec::from_raw(addr as *const u8, n) })
            }),
        }
    }
}

/// The most SGEs a kernel work request may carry (`struct siw_sqe` has room for six).
pub(crate) const WR_MAX_SGE: usize = 6;

/// A scatter/gather element of a kernel work request (`struct ib_sge`).
#[derive(Clone, Copy, Default)]
pub(crate) struct WrSge {
    /// A kernel virtual address (siw_rs does virtual DMA).
    pub(crate) addr: u64,
    pub(crate) length: u32,
    pub(crate) lkey: u32,
}

/// Work request opcodes and flags (`enum ib_wr_opcode`, `enum ib_send_flags`).
pub(crate) mod wr {
    use super::bindings;
    pub(crate) const RDMA_WRITE: u32 = bindings::ib_wr_opcode_IB_WR_RDMA_WRITE;
    pub(crate) const SEND: u32 = bindings::ib_wr_opcode_IB_WR_SEND;
    pub(crate) const RDMA_READ: u32 = bindings::ib_wr_opcode_IB_WR_RDMA_READ;
    pub(crate) const SEND_WITH_INV: u32 = bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV;
    pub(crate) const FENCE: u32 = bindings::ib_send_flags_IB_SEND_FENCE as u32;
    pub(crate) const SIGNALED: u32 = bindings::ib_send_flags_IB_SEND_SIGNALED as u32;
    pub(crate) const SOLICITED: u32 = bindings::ib_send_flags_IB_SEND_SOLICITED as u32;
    pub(crate) const INLINE: u32 = bindings::ib_send_flags_IB_SEND_INLINE as u32;
}

/// A kernel consumer's send work request (`struct ib_send_wr`, with `struct ib_rdma_wr`'s
/// remote address and key for RDMA Write and Read).
#[derive(Default)]
pub(crate) struct SendWr {
    /// `wr_id` (or `wr_cqe`, which kernel completions return in the same place).
    pub(crate) id: u64,
    /// `enum ib_wr_opcode`.
    pub(crate) opcode: u32,
    /// `IB_SEND_*`.
    pub(crate) flags: u32,
    pub(crate) sge: [WrSge; WR_MAX_SGE],
    pub(crate) num_sge: usize,
    pub(crate) remote_addr: u64,
    pub(crate) rkey: u32,
    /// The STag a Send with Invalidate names.
    pub(crate) invalidate_rkey: u32,
    /// With `IB_SEND_INLINE`: the data, copied at post time, and its length.
    pub(crate) inline: Option<([u8; MAX_INLINE as usize], u32)>,
}

/// A kernel consumer's receive work request (`struct ib_recv_wr`).
#[derive(Default)]
pub(crate) struct RecvWr {
    pub(crate) id: u64,
    pub(crate) sge: [WrSge; WR_MAX_SGE],
    pub(crate) num_sge: usize,
}

/// Copies a work request's scatter/gather list.
///
/// # Safety
///
/// `list` points to `n` valid `ib_sge`s when `n > 0`.
unsafe fn wr_sges(list: *const bindings::ib_sge, n: c_int) -> Result<([WrSge; WR_MAX_SGE], usize)> {
    let n = usize::try_from(n).map_err(|_| EINVAL)?;
    if n > WR_MAX_SGE {
        return Err(EINVAL);
    }
    let mut out = [WrSge::default(); WR_MAX_SGE];
    for (i, o) in out.iter_mut().take(n).enumerate() {
        // SAFETY: `i < n`, and the caller guarantees `n` entries.
        let s = unsafe { &*list.add(i) };
        *o = WrSge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        };
    }
    Ok((out, n))
}

/// Gathers a kernel consumer's inline data from its SGEs, which name kernel virtual
/// addresses (as in the C siw, the lkey is not looked up: the data is copied now, and posting
/// may run in any context).
fn inline_data(sges: &[WrSge]) -> Result<([u8; MAX_INLINE as usize], u32)> {
    let mut data = [0u8; MAX_INLINE as usize];
    let mut n = 0usize;
    for s in sges.iter().filter(|s| s.length != 0) {
        let end = n.checked_add(s.length as usize).ok_or(EINVAL)?;
        let dst = data.get_mut(n..end).ok_or(EINVAL)?;
        let addr = usize::try_from(s.addr).map_err(|_| EINVAL)?;
        let mut done = 0usize;
        // INVARIANT (of `KernelMem`): a kernel consumer's own SGE, which it hands over for
        // reading by posting it.
        KernelMem(()).pieces(addr, dst.len(), |a, k| {
            let d = dst.get_mut(done..done.saturating_add(k)).ok_or(EINVAL)?;
            // SAFETY: `pieces` checked that the bytes lie in mapped linear-map pages; `d` is
            // ours and `k` bytes long.
            unsafe { core::ptr::copy_nonoverlapping(a as *const u8, d.as_mut_ptr(), k) };
            done = done.saturating_add(k);
            Ok(())
        })?;
        n = end;
    }
    Ok((data, n as u32))
}

impl SendWr {
    /// Copies the work request `wr` points to.
    ///
    /// # Safety
    ///
    /// `wr` is a valid `ib_send_wr` of a kernel consumer; for RDMA opcodes it is embedded in
    /// an `ib_rdma_wr` (the verbs contract for those opcodes).
    unsafe fn from_raw(wr: *const bindings::ib_send_wr) -> Result<Self> {
        // SAFETY: By the function's contract.
        let w = unsafe { &*wr };
        // SAFETY: `wr_id` and `wr_cqe` share 8 bytes; any bit pattern is a valid `u64`.
        let id = unsafe { w.__bindgen_anon_1.wr_id };
        // SAFETY: `sg_list` holds `num_sge` entries (the verbs contract).
        let (sge, num_sge) = unsafe { wr_sges(w.sg_list, w.num_sge) }?;
        let (mut remote_addr, mut rkey, mut invalidate_rkey) = (0, 0, 0);
        match w.opcode {
            wr::RDMA_WRITE | wr::RDMA_READ => {
                // SAFETY: RDMA opcodes come in an `ib_rdma_wr`, whose first field is `wr`.
                let r = unsafe { &*wr.cast::<bindings::ib_rdma_wr>() };
                remote_addr = r.remote_addr;
                rkey = r.rkey;
            }
            // SAFETY: A Send with Invalidate sets `ex.invalidate_rkey`; any bits are a `u32`.
            wr::SEND_WITH_INV => invalidate_rkey = unsafe { w.ex.invalidate_rkey },
            _ => {}
        }
        let flags = w.send_flags as u32;
        let inline = if flags & wr::INLINE != 0 && w.opcode != wr::RDMA_READ {
            Some(inline_data(sge.get(..num_sge).unwrap_or(&[]))?)
        } else {
            None
        };
        Ok(Self {
            id,
            opcode: w.opcode,
            flags,
            sge,
            num_sge,
            remote_addr,
            rkey,
            invalidate_rkey,
            inline,
        })
    }
}

impl RecvWr {
    /// Copies the work request `wr` points to.
    ///
    /// # Safety
    ///
    /// `wr` is a valid `ib_recv_wr`.
    unsafe fn from_raw(wr: *const bindings::ib_recv_wr) -> Result<Self> {
        // SAFETY: By the function's contract.
        let w = unsafe { &*wr };
        // SAFETY: `wr_id` and `wr_cqe` share 8 bytes; any bit pattern is a valid `u64`.
        let id = unsafe { w.__bindgen_anon_1.wr_id };
        // SAFETY: `sg_list` holds `num_sge` entries (the verbs contract).
        let (sge, num_sge) = unsafe { wr_sges(w.sg_list, w.num_sge) }?;
        Ok(Self { id, sge, num_sge })
    }
}

/// A node of a work request list (`ib_send_wr`, `ib_recv_wr`).
trait WrNode {
    /// The next request.
    ///
    /// # Safety
    ///
    /// `p` points to a valid request.
    unsafe fn next(p: *const Self) -> *const Self;
}

impl WrNode for bindings::ib_send_wr {
    unsafe fn next(p: *const Self) -> *const Self {
        // SAFETY: By the function's contract.
        unsafe { (*p).next }
    }
}

impl WrNode for bindings::ib_recv_wr {
    unsafe fn next(p: *const Self) -> *const Self {
        // SAFETY: By the function's contract.
        unsafe { (*p).next }
    }
}

/// Calls `post` on each request of the list `wr` until one fails; returns 0, or that
/// failure's errno with `*bad_wr` pointing to the request (as the verbs ask).
///
/// # Safety
///
/// `wr` is null or a list of valid requests; `bad_wr` is null or a valid out pointer.
unsafe fn walk<W: WrNode>(
    wr: *const W,
    bad_wr: *mut *const W,
    mut post: impl FnMut(*const W) -> Result,
) -> c_int {
    let mut cur = wr;
    while !cur.is_null() {
        if let Err(e) = post(cur) {
            if !bad_wr.is_null() {
                // SAFETY: A valid out pointer (the caller's guarantee).
                unsafe { *bad_wr = cur };
            }
            return e.to_errno();
        }
        // SAFETY: `cur` is a request of the list.
        cur = unsafe { W::next(cur) };
    }
    0
}

/// A user memory region to register.
pub(crate) struct UserMr {
    /// The pinned pages.
    pub(crate) umem: Umem,
    /// The user virtual address of the start.
    #[expect(
        dead_code,
        reason = "read by the data path (TX/RX), which arrives with the connection manager"
    )]
    pub(crate) start: u64,
    /// The length in bytes.
    pub(crate) len: u64,
    /// The address the region is known by to the peer (iova).
    pub(crate) virt: u64,
    /// `IB_ACCESS_*` rights.
    pub(crate) access: u32,
}

/// A work completion taken from a kernel CQ, with `enum siw_opcode`/`enum siw_wc_status`
/// values as the CQE holds them (mapped to the `ib_wc` ones here).
#[derive(Clone, Copy, Default)]
pub(crate) struct Wc {
    pub(crate) id: u64,
    pub(crate) opcode: u8,
    pub(crate) status: u16,
    pub(crate) bytes: u32,
    /// The `ib_qp` of a kernel CQE.
    pub(crate) qp: u64,
}

/// `map_wc_opcode` of the C siw.
fn wc_opcode(op: u8) -> bindings::ib_wc_opcode {
    match u32::from(op) {
        bindings::siw_opcode_SIW_OP_WRITE => bindings::ib_wc_opcode_IB_WC_RDMA_WRITE,
        bindings::siw_opcode_SIW_OP_SEND
        | bindings::siw_opcode_SIW_OP_SEND_WITH_IMM
        | bindings::siw_opcode_SIW_OP_SEND_REMOTE_INV => bindings::ib_wc_opcode_IB_WC_SEND,
        bindings::siw_opcode_SIW_OP_READ | bindings::siw_opcode_SIW_OP_READ_LOCAL_INV => {
            bindings::ib_wc_opcode_IB_WC_RDMA_READ
        }
        bindings::siw_opcode_SIW_OP_INVAL_STAG => bindings::ib_wc_opcode_IB_WC_LOCAL_INV,
        bindings::siw_opcode_SIW_OP_REG_MR => bindings::ib_wc_opcode_IB_WC_REG_MR,
        _ => bindings::ib_wc_opcode_IB_WC_RECV,
    }
}

/// `map_cqe_status` of the C siw.
fn wc_status(s: u16) -> bindings::ib_wc_status {
    match u32::from(s) {
        bindings::siw_wc_status_SIW_WC_SUCCESS => bindings::ib_wc_status_IB_WC_SUCCESS,
        bindings::siw_wc_status_SIW_WC_LOC_LEN_ERR => bindings::ib_wc_status_IB_WC_LOC_LEN_ERR,
        bindings::siw_wc_status_SIW_WC_LOC_PROT_ERR => bindings::ib_wc_status_IB_WC_LOC_PROT_ERR,
        bindings::siw_wc_status_SIW_WC_LOC_QP_OP_ERR => bindings::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
        bindings::siw_wc_status_SIW_WC_WR_FLUSH_ERR => bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR,
        bindings::siw_wc_status_SIW_WC_BAD_RESP_ERR => bindings::ib_wc_status_IB_WC_BAD_RESP_ERR,
        bindings::siw_wc_status_SIW_WC_LOC_ACCESS_ERR => {
            bindings::ib_wc_status_IB_WC_LOC_ACCESS_ERR
        }
        bindings::siw_wc_status_SIW_WC_REM_ACCESS_ERR => {
            bindings::ib_wc_status_IB_WC_REM_ACCESS_ERR
        }
        bindings::siw_wc_status_SIW_WC_REM_INV_REQ_ERR => {
            bindings::ib_wc_status_IB_WC_REM_INV_REQ_ERR
        }
        _ => bindings::ib_wc_status_IB_WC_GENERAL_ERR,
    }
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
            let data = T::alloc_pd(dev)?;
            // SAFETY: A fresh `size_ib_pd` allocation; the data is dropped in `dealloc_pd`.
            unsafe { Pd::<T>::init(pd, data) };
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
            // SAFETY: `attrs` is NULL for kernel CQs, else the command's bundle.
            let mut user = unsafe { User::<T>::from_udata(bindings::siw_rs_attrs_to_udata(attrs)) };
            let cqe = i32::try_from(attr.cqe).map_err(|_| EINVAL)?;
            let (data, n) = T::create_cq(dev, cqe, user.as_mut())?;
            // SAFETY: `cq` is ours to set up; `cqe` is what consumers read as the CQ size.
            unsafe { (*cq).cqe = n };
            // SAFETY: A fresh `size_ib_cq` allocation; the data is dropped in `destroy_cq`.
            unsafe { Cq::<T>::init(cq, data) };
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
            init.attr.max_wr = out.max_wr;
            init.attr.max_sge = out.max_sge;
            // SAFETY: A fresh `size_ib_srq` allocation; dropped in `destroy_srq`.
            unsafe { Srq::<T>::init(srq, data) };
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
            let known =
                bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR | bindings::ib_srq_attr_mask_IB_SRQ_LIMIT;
            if mask & !known != 0 {
                return Err(EOPNOTSUPP);
            }
            let m = SrqMask {
                max_wr: mask & bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR != 0,
                limit: mask & bindings::ib_srq_attr_mask_IB_SRQ_LIMIT != 0,
            };
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
                rc: init.qp_type == bindings::ib_qp_type_IB_QPT_RC,
                create_flags: init.create_flags,
                sig_all: match init.sq_sig_type {
                    bindings::ib_sig_type_IB_SIGNAL_ALL_WR => Some(true),
                    bindings::ib_sig_type_IB_SIGNAL_REQ_WR => Some(false),
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
            unsafe { Qp::<T>::init(qp, data) };
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
                m.state = Some(state_from_c(attr.qp_state)?);
            }
            if mask & bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS != 0 {
                m.access_flags = Some(u32::try_from(attr.qp_access_flags).map_err(|_| EINVAL)?);
            }
            T::modify_qp(q, &m)?;
            Ok(0)
        })
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
            attr.qp_state = state_to_c(r.state);
            r.cap.to_c(&mut attr.cap);
            attr.path_mtu = super::device::ib_mtu(mtu);
            attr.max_rd_atomic = r.max_rd_atomic;
            attr.max_dest_rd_atomic = r.max_dest_rd_atomic;
            attr.qp_access_flags = r.access_flags as c_int;
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
        if wr.is_null() {
            // A user QP's doorbell: the work requests are in the mapped send queue.
            return T::doorbell(q).map_or_else(|e| e.to_errno(), |()| 0);
        }
        if !q.is_kernel() {
            // A process posts through its mapped send queue, never as a list.
            // SAFETY: The core's arguments.
            return unsafe { walk(wr, bad_wr, |_| Err(EINVAL)) };
        }
        // SAFETY: The core's arguments: a kernel consumer's list of valid work requests.
        let r = unsafe {
            walk(wr, bad_wr, |w| {
                SendWr::from_raw(w).and_then(|w| T::post_send(q, &w))
            })
        };
        // What was posted before a failure stays posted.
        T::posted(q, true);
        r
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
        if !q.is_kernel() {
            // A process posts receives into its mapped receive queue.
            // SAFETY: The core's arguments.
            return unsafe { walk(wr, bad_wr, |_| Err(EINVAL)) };
        }
        // SAFETY: The core's arguments: a kernel consumer's list of valid work requests.
        let r = unsafe {
            walk(wr, bad_wr, |w| {
                RecvWr::from_raw(w).and_then(|w| T::post_recv(q, &w))
            })
        };
        T::posted(q, false);
        r
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
        if !unsafe { (*srq).uobject }.is_null() {
            // A process posts into its mapped queue.
            // SAFETY: The core's arguments.
            return unsafe { walk(wr, bad_wr, |_| Err(EINVAL)) };
        }
        // SAFETY: The core's arguments: a kernel consumer's list of valid work requests.
        unsafe {
            walk(wr, bad_wr, |w| {
                RecvWr::from_raw(w).and_then(|w| T::post_srq_recv(s, &w))
            })
        }
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
                bindings::siw_rs_ib_umem_get_va(
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
                access: u32::try_from(access).map_err(|_| EINVAL)?,
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
                out.status = wc_status(w.status);
                out.opcode = wc_opcode(w.opcode);
                out.byte_len = w.bytes;
                out.qp = w.qp as usize as *mut bindings::ib_qp;
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
        let solicited = flags & bindings::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK
            == bindings::ib_cq_notify_flags_IB_CQ_SOLICITED;
        let pending = T::req_notify_cq(q, solicited);
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
            let (data, keys) = T::get_dma_mr(pdo, u32::try_from(access).map_err(|_| EINVAL)?, mem)?;
            MrAlloc::<T>::publish(data, keys)
        })();
        match r {
            Ok(p) => p,
            Err(e) => e.to_ptr(),
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
        // SAFETY: `mr` came from `MrAlloc::publish` (a `KBox<MrAlloc<T>>` with the `ib_mr` at
        // offset 0); this is its last callback.
        let obj = unsafe { KBox::from_raw(mr.cast::<MrAlloc<T>>()) };
        T::dereg_mr(&obj.data);
        drop(obj);
        0
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
        let raw = KBox::into_raw(obj).cast::<bindings::ib_mr>();
        // SAFETY: `raw` is the freshly allocated MR (the `ib_mr` at offset 0), ours alone.
        unsafe {
            (*raw).lkey = keys.lkey;
            (*raw).rkey = keys.rkey;
        }
        Ok(raw)
    }
}
