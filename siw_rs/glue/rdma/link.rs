// SPDX-License-Identifier: GPL-2.0

//! `rdma link add NAME type TYPE netdev DEV`: the `rdma_link_ops` registration.
//!
//! C headers: [`include/rdma/rdma_netlink.h`](srctree/include/rdma/rdma_netlink.h).

use crate::glue::{
    bindings,
    net::netdev::NetDev, //
};
use core::marker::PhantomData;
use kernel::{
    error::from_result,
    prelude::*,
    str::CString,
    types::Opaque, //
};

/// A driver that creates RDMA devices on request of `rdma link add`.
pub(crate) trait Link: Send + Sync + 'static {
    /// The link type users name in `rdma link add ... type TYPE`.
    const TYPE: &'static CStr;

    /// Creates and registers a device called `name` on `netdev`, for the registration of
    /// variant `variant` ([`Registration::with_type`]; [`Registration::new`]'s is 0).
    fn newlink(name: &CStr, netdev: &NetDev, variant: u8) -> Result;
}

/// A registered `rdma_link_ops`; unregistered on drop.
///
/// # Invariants
///
/// When `registered`, `ops` is registered with `rdma_link_register` for the whole life of
/// the value.
#[pin_data(PinnedDrop)]
pub(crate) struct Registration<T: Link> {
    #[pin]
    ops: Opaque<bindings::rdma_link_ops>,
    registered: bool,
    _link: PhantomData<T>,
}

/// Whether the kernel module `name` is loaded (its `/sys/module` directory exists).
pub(crate) fn module_present(name: &CStr) -> bool {
    let Ok(dir) = CString::try_from_fmt(fmt!("/sys/module/{}", name)) else {
        return false;
    };
    let mut path = bindings::path::default();
    // SAFETY: `dir` is NUL-terminated and `path` is a valid place for the result; the final
    // component is a directory, so no flag (`LOOKUP_FOLLOW`) is needed.
    if unsafe { bindings::kern_path(dir.as_char_ptr(), 0, &mut path) } != 0 {
        return false;
    }
    // SAFETY: `kern_path` succeeded, so `path` holds references that we drop here, once.
    unsafe { bindings::path_put(&path) };
    true
}

// SAFETY: The registration only holds the `rdma_link_ops`, whose list linkage the RDMA core
// protects with its own lock; it can be unregistered from any thread.
unsafe impl<T: Link> Send for Registration<T> {}
// SAFETY: `&Registration` gives access to nothing.
unsafe impl<T: Link> Sync for Registration<T> {}

impl<T: Link> Registration<T> {
    /// Registers `T`'s link type.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        Self::with_type::<0>(T::TYPE, true)
    }

    /// Registers `T` under the link type `ty` as well, if `register`; otherwise registers
    /// nothing. Devices made through it are of variant `V` ([`Link::newlink`]). The type
    /// must not be registered already (the core warns and ignores it).
    pub(crate) fn with_type<const V: u8>(
        ty: &'static CStr,
        register: bool,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            ops <- Opaque::ffi_init(move |slot: *mut bindings::rdma_link_ops| {
                let mut ops: bindings::rdma_link_ops = pin_init::zeroed();
                ops.type_ = ty.as_char_ptr();
                ops.newlink = Some(Self::newlink::<V>);
                // SAFETY: `slot` is valid for writes and pinned; we initialise it fully.
                unsafe { slot.write(ops) };
                if register {
                    // INVARIANT: Registered here, unregistered by `PinnedDrop`.
                    // SAFETY: `slot` is initialised and stays pinned until `drop`
                    // unregisters it; `type_` points to a `'static` string.
                    unsafe { bindings::rdma_link_register(slot) };
                }
            }),
            registered: register,
            _link: PhantomData,
        })
    }

    /// # Safety
    ///
    /// Called by the RDMA netlink code with a NUL-terminated `name` and a live `ndev` that it
    /// holds a reference on for the duration of the call.
    unsafe extern "C" fn newlink<const V: u8>(
        name: *const c_char,
        ndev: *mut bindings::net_device,
    ) -> c_int {
        from_result(|| {
            // SAFETY: `name` is a NUL-terminated string valid for the call (see above).
            let name = unsafe { CStr::from_char_ptr(name) };
            // SAFETY: `ndev` is alive for the duration of the call (see above).
            let netdev = unsafe { NetDev::from_raw(ndev) };
            T::newlink(name, netdev, V)?;
            Ok(0)
        })
    }
}

#[pinned_drop]
impl<T: Link> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        if !self.registered {
            return;
        }
        // SAFETY: By the type invariant `ops` is registered. `rdma_link_unregister` takes the
        // link-ops lock for writing, so no `newlink` call is in flight once it returns.
        unsafe { bindings::rdma_link_unregister(self.ops.get()) };
    }
}
