// SPDX-License-Identifier: GPL-2.0

//! RDMA objects the core allocates for the driver, and the uverbs response buffer.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h) (`INIT_RDMA_OBJ_SIZE`),
//! [`include/rdma/uverbs_ioctl.h`](srctree/include/rdma/uverbs_ioctl.h).

use super::{
    bindings,
    device::Driver,
    mem::{
        MmapEntry,
        SharedMem, //
    },
};
use core::ptr::NonNull;
use kernel::{
    error::to_result,
    prelude::*,
    sync::Arc,
    types::Opaque, //
};

/// An object the RDMA core allocated with the C struct `C` at offset 0 and room for the
/// driver's data `D` behind it (`INIT_RDMA_OBJ_SIZE`): PDs, CQs, QPs, SRQs, user contexts.
///
/// # Invariants
///
/// `ib` is at offset 0 (`repr(C)`, first field) of a core allocation of
/// `size_of::<Obj<C, D>>()` bytes; `data` is initialised from a successful create callback
/// until the matching destroy callback.
#[repr(C)]
pub(crate) struct Obj<C, D> {
    ib: Opaque<C>,
    data: D,
}

// SAFETY: The C part is synchronised by the core; the driver part is `D`, which is `Send`
// and `Sync` for every driver type (the `Driver` trait requires it).
unsafe impl<C, D: Send> Send for Obj<C, D> {}
// SAFETY: As above.
unsafe impl<C, D: Sync> Sync for Obj<C, D> {}

impl<C, D> Obj<C, D> {
    /// The driver data.
    pub(crate) fn data(&self) -> &D {
        &self.data
    }

    /// The object's identity (its address), to compare objects by.
    pub(crate) fn id(&self) -> usize {
        self.as_ptr() as usize
    }

    /// The C object.
    pub(super) fn as_ptr(&self) -> *mut C {
        self.ib.get()
    }

    /// Borrows the object around `raw`.
    ///
    /// # Safety
    ///
    /// `raw` is the C part of an `Obj<C, D>` whose data is initialised and stays so for `'a`.
    pub(super) unsafe fn from_raw<'a>(raw: *mut C) -> &'a Self {
        // SAFETY: `ib` is at offset 0, so `raw` is also the address of the `Obj`; the caller
        // guarantees the rest.
        unsafe { &*raw.cast::<Self>() }
    }

    /// Initialises the driver data of the object around `raw`.
    ///
    /// # Safety
    ///
    /// `raw` is the C part of a core allocation of `size_of::<Self>()` bytes whose data is not
    /// initialised.
    pub(super) unsafe fn init(raw: *mut C, data: D) {
        // SAFETY: By the caller's guarantee the field is in bounds and uninitialised.
        unsafe { core::ptr::addr_of_mut!((*raw.cast::<Self>()).data).write(data) };
    }

    /// Drops the driver data of the object around `raw`.
    ///
    /// # Safety
    ///
    /// The data is initialised and nothing uses it afterwards.
    pub(super) unsafe fn drop_data(raw: *mut C) {
        // SAFETY: By the caller's guarantee.
        unsafe { core::ptr::drop_in_place(core::ptr::addr_of_mut!((*raw.cast::<Self>()).data)) };
    }
}

/// A user context (`struct ib_ucontext`) of driver `T`.
pub(crate) type UContext<T> = Obj<bindings::ib_ucontext, <T as Driver>::UContext>;

impl<D> Obj<bindings::ib_ucontext, D> {
    /// Registers `mem` for `mmap()` by this context's process.
    pub(crate) fn mmap_insert(&self, mem: &Arc<SharedMem>) -> Result<MmapEntry> {
        // SAFETY: `self` is a live context; the core destroys a context's objects, which own
        // their entries, before the context itself.
        unsafe { MmapEntry::insert(self.as_ptr().cast(), mem) }
    }
}

/// The driver-private input and output of a uverbs command (`struct ib_udata`).
///
/// # Invariants
///
/// Points to the valid udata of the command being executed.
pub(crate) struct Udata(NonNull<bindings::ib_udata>);

/// A driver request or response structure from `include/uapi/rdma/siw-abi.h`.
///
/// # Safety
///
/// The type is plain old data: `repr(C)`, every byte part of a field (no implicit padding
/// that could leak kernel memory), valid for any bit pattern.
pub(crate) unsafe trait Abi: Sized + Default {}

macro_rules! abi_types {
    ($($(#[$m:meta])* $name:ident = $c:ident;)*) => {$(
        $(#[$m])*
        pub(crate) type $name = bindings::$c;
        // SAFETY: A uapi struct of `__u8`/`__u32`/`__aligned_u64` fields laid out without
        // implicit padding (explicit `pad`/`reserved` fields fill the gaps).
        unsafe impl Abi for $name {}
    )*};
}

abi_types! {
    /// `struct siw_uresp_alloc_ctx`, the response to GET_CONTEXT.
    UrespAllocCtx = siw_uresp_alloc_ctx;
    /// `struct siw_uresp_create_cq`.
    UrespCreateCq = siw_uresp_create_cq;
    /// `struct siw_uresp_create_qp`.
    UrespCreateQp = siw_uresp_create_qp;
    /// `struct siw_uresp_create_srq`.
    UrespCreateSrq = siw_uresp_create_srq;
    /// `struct siw_ureq_reg_mr`.
    UreqRegMr = siw_ureq_reg_mr;
    /// `struct siw_uresp_reg_mr`.
    UrespRegMr = siw_uresp_reg_mr;
}

impl Udata {
    /// Wraps the udata pointer the core passed, if any.
    ///
    /// # Safety
    ///
    /// `raw` is NULL or the valid udata of the command being executed, which outlives the
    /// returned value.
    pub(super) unsafe fn from_raw(raw: *mut bindings::ib_udata) -> Option<Self> {
        // INVARIANT: By the caller's guarantee.
        NonNull::new(raw).map(Self)
    }

    /// Bytes user space has room for.
    pub(crate) fn outlen(&self) -> usize {
        // SAFETY: By the type invariant.
        unsafe { (*self.0.as_ptr()).outlen }
    }

    /// Copies `resp` to user space (failing with `EINVAL` if it does not fit), zero-filling any
    /// remaining room.
    pub(crate) fn respond<R: Abi>(&mut self, resp: &R) -> Result {
        if self.outlen() < core::mem::size_of::<R>() {
            return Err(EINVAL);
        }
        // SAFETY: By the type invariant; `resp` is `size_of::<R>()` readable bytes of plain
        // data (`R: Abi`).
        to_result(unsafe {
            bindings::_ib_respond_udata(
                self.0.as_ptr(),
                core::ptr::from_ref(resp).cast(),
                core::mem::size_of::<R>(),
            )
        })
    }

    /// Reads the request `R` from user space, checking that any bytes user space sent beyond
    /// the fields this kernel knows are zero (`ib_copy_validate_udata_in`).
    pub(crate) fn request<R: Abi>(&mut self) -> Result<R> {
        let mut req = R::default();
        // SAFETY: By the type invariant; `req` is `size_of::<R>()` writable bytes of plain
        // data.
        to_result(unsafe {
            bindings::_ib_copy_validate_udata_in(
                self.0.as_ptr(),
                core::ptr::from_mut(&mut req).cast(),
                core::mem::size_of::<R>(),
                core::mem::size_of::<R>(),
            )
        })?;
        Ok(req)
    }

    /// The user context the command runs in.
    pub(super) fn ucontext(&self) -> *mut bindings::ib_ucontext {
        // SAFETY: By the type invariant; the helper follows `udata` to its attribute bundle.
        unsafe { bindings::siw_rs_udata_to_ucontext(self.0.as_ptr()) }
    }
}

/// A command from a user process: its context and its udata.
pub(crate) struct User<'a, T: Driver> {
    /// The process's context.
    pub(crate) ctx: &'a UContext<T>,
    /// The command's driver-private input and output.
    pub(crate) udata: Udata,
}

impl<'a, T: Driver> User<'a, T> {
    /// The user side of a command, or `None` for a kernel caller (NULL udata).
    ///
    /// # Safety
    ///
    /// `udata` is NULL or the valid udata of a command of one of `T`'s user contexts, which
    /// outlives `'a`.
    pub(super) unsafe fn from_udata(udata: *mut bindings::ib_udata) -> Option<Self> {
        // SAFETY: By the caller's guarantee.
        let udata = unsafe { Udata::from_raw(udata) }?;
        let ctx = udata.ucontext();
        if ctx.is_null() {
            return None;
        }
        // SAFETY: A command's context is live while the command runs, and belongs to `T`.
        let ctx = unsafe { UContext::<T>::from_raw(ctx) };
        Some(Self { ctx, udata })
    }
}

/// Size of a send queue element (`struct siw_sqe`).
pub(crate) const SQE_SIZE: usize = core::mem::size_of::<bindings::siw_sqe>();
/// Size of a receive queue element (`struct siw_rqe`).
pub(crate) const RQE_SIZE: usize = core::mem::size_of::<bindings::siw_rqe>();
/// Size of a completion queue element (`struct siw_cqe`).
pub(crate) const CQE_SIZE: usize = core::mem::size_of::<bindings::siw_cqe>();
/// Size of the CQ control word behind the last CQE (`struct siw_cq_ctrl`).
pub(crate) const CQ_CTRL_SIZE: usize = core::mem::size_of::<bindings::siw_cq_ctrl>();
/// Inline data capacity of an SQE (`SIW_MAX_INLINE`).
pub(crate) const MAX_INLINE: u32 =
    (core::mem::size_of::<bindings::siw_sge>() * (bindings::SIW_MAX_SGE as usize - 1)) as u32;

/// `SIW_WQE_VALID`: the slot belongs to its consumer.
pub(crate) const WQE_VALID: u8 = bindings::siw_wqe_flags_SIW_WQE_VALID as u8;
/// `SIW_OP_RECEIVE`, the CQE opcode of a receive.
pub(crate) const OP_RECEIVE: u8 = bindings::siw_opcode_SIW_OP_RECEIVE as u8;
/// `SIW_WC_WR_FLUSH_ERR`.
pub(crate) const WC_WR_FLUSH_ERR: u16 = bindings::siw_wc_status_SIW_WC_WR_FLUSH_ERR as u16;

/// `enum siw_opcode` values siw_rs handles.
pub(crate) mod op {
    use super::bindings;
    pub(crate) const WRITE: u8 = bindings::siw_opcode_SIW_OP_WRITE as u8;
    pub(crate) const READ: u8 = bindings::siw_opcode_SIW_OP_READ as u8;
    pub(crate) const SEND: u8 = bindings::siw_opcode_SIW_OP_SEND as u8;
    pub(crate) const SEND_REMOTE_INV: u8 = bindings::siw_opcode_SIW_OP_SEND_REMOTE_INV as u8;
}

/// `enum siw_wqe_flags`.
pub(crate) mod wqe {
    use super::bindings;
    pub(crate) const VALID: u16 = bindings::siw_wqe_flags_SIW_WQE_VALID as u16;
    pub(crate) const INLINE: u16 = bindings::siw_wqe_flags_SIW_WQE_INLINE as u16;
    pub(crate) const SIGNALLED: u16 = bindings::siw_wqe_flags_SIW_WQE_SIGNALLED as u16;
    pub(crate) const SOLICITED: u16 = bindings::siw_wqe_flags_SIW_WQE_SOLICITED as u16;
    pub(crate) const READ_FENCE: u16 = bindings::siw_wqe_flags_SIW_WQE_READ_FENCE as u16;
}

/// `enum siw_wc_status`.
pub(crate) mod wc {
    use super::bindings;
    pub(crate) const SUCCESS: u16 = bindings::siw_wc_status_SIW_WC_SUCCESS as u16;
    pub(crate) const LOC_LEN_ERR: u16 = bindings::siw_wc_status_SIW_WC_LOC_LEN_ERR as u16;
    pub(crate) const LOC_PROT_ERR: u16 = bindings::siw_wc_status_SIW_WC_LOC_PROT_ERR as u16;
    pub(crate) const LOC_QP_OP_ERR: u16 = bindings::siw_wc_status_SIW_WC_LOC_QP_OP_ERR as u16;
}
