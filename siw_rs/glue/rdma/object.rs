// SPDX-License-Identifier: GPL-2.0

//! RDMA objects the core allocates for the driver, and the uverbs request and response
//! buffer.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h) (`INIT_RDMA_OBJ_SIZE`),
//! [`include/rdma/uverbs_ioctl.h`](srctree/include/rdma/uverbs_ioctl.h).

use super::{
    device::Driver,
    mmap::{
        MmapEntry,
        SharedMem, //
    },
};
use crate::glue::bindings;
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

    /// Initialises the driver data of the object around `raw` in place: the core's
    /// allocation does not move, so the data may hold pinned fields (locks, work items).
    ///
    /// # Safety
    ///
    /// `raw` is the C part of a core allocation of `size_of::<Self>()` bytes whose data is not
    /// initialised.
    pub(super) unsafe fn init(raw: *mut C, init: impl PinInit<D, Error>) -> Result {
        // SAFETY: By the caller's guarantee the field is in bounds, uninitialised, and never
        // moves until the destroy callback drops it in place; on error the slot stays
        // uninitialised and the core frees the memory.
        unsafe { pin_init::raw_try_init(core::ptr::addr_of_mut!((*raw.cast::<Self>()).data), init) }
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
    /// Registers `mem` for `mmap()` by this context's process, at a key of at least `min_key`.
    pub(crate) fn mmap_insert(&self, mem: &Arc<SharedMem>, min_key: u64) -> Result<MmapEntry> {
        // SAFETY: `self` is a live context; the core destroys a context's objects, which own
        // their entries, before the context itself.
        unsafe { MmapEntry::insert(self.as_ptr().cast(), mem, min_key) }
    }
}

/// The driver-private input and output of a uverbs command (`struct ib_udata`).
///
/// # Invariants
///
/// Points to the valid udata of the command being executed.
pub(crate) struct Udata(NonNull<bindings::ib_udata>);

/// A driver's uverbs request or response structure (its `include/uapi/rdma/*-abi.h`).
///
/// # Safety
///
/// The type is plain old data: `repr(C)`, every byte part of a field (no implicit padding
/// that could leak kernel memory), valid for any bit pattern.
pub(crate) unsafe trait Abi: Sized + Default {}

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
        unsafe { bindings::udata_to_ucontext(self.0.as_ptr()) }
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
