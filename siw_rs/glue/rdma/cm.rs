// SPDX-License-Identifier: GPL-2.0

//! The iWARP connection manager interface (`iw_cm`): the provider ops the core calls, the
//! connection identifiers (`struct iw_cm_id`) and the events a provider reports to them.
//!
//! C header: [`include/rdma/iw_cm.h`](srctree/include/rdma/iw_cm.h).

use super::{
    device::{
        Adapter,
        Device,
        Driver, //
    },
    verbs::Qp,
};
use crate::glue::{
    bindings,
    net::tcp::SockAddr, //
};
use core::{
    ffi::c_int,
    ptr::NonNull, //
};
use kernel::{
    error::from_result,
    prelude::*,
    sync::{
        aref::{
            ARef,
            AlwaysRefCounted, //
        },
        Arc,
    },
    types::{
        ForeignOwnable,
        Opaque, //
    },
};

/// A connection identifier of the iWARP connection manager (`struct iw_cm_id`).
///
/// # Invariants
///
/// Only ever borrowed from a live cm_id the iw_cm handed to the provider, and kept alive by
/// its reference count (`add_ref`/`rem_ref`, which the iw_cm sets before that).
#[repr(transparent)]
pub(crate) struct IwCmId(Opaque<bindings::iw_cm_id>);

/// A counted reference to a cm_id.
pub(crate) type CmId = ARef<IwCmId>;

// SAFETY: The reference count is atomic; events may be reported from any thread.
unsafe impl Send for IwCmId {}
// SAFETY: As above; the fields read here are set before the provider sees the cm_id.
unsafe impl Sync for IwCmId {}

// SAFETY: The iw_cm frees a cm_id only after the last `rem_ref` matching an `add_ref`.
unsafe impl AlwaysRefCounted for IwCmId {
    fn inc_ref(&self) {
        let id = self.as_ptr();
        // SAFETY: A live cm_id (invariant), whose `add_ref` is set.
        if let Some(f) = unsafe { (*id).add_ref } {
            // SAFETY: As above.
            unsafe { f(id) };
        }
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        let id = obj.as_ptr().cast::<bindings::iw_cm_id>();
        // SAFETY: The caller holds a reference, which `rem_ref` drops.
        if let Some(f) = unsafe { (*id).rem_ref } {
            // SAFETY: As above.
            unsafe { f(id) };
        }
    }
}

/// Names a connection request reported to the core: the core keeps it as the new cm_id's
/// `provider_data` and hands it back with `iw_accept` or `iw_reject`.
///
/// The core may also drop a request without a word (its listener is being destroyed, or
/// it is out of memory), so a cookie owns nothing: the driver keeps the request and looks
/// it up by cookie, and a cookie that finds nothing is simply stale. Cookies are never
/// reused, so a stale one cannot name a newer request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct RequestCookie(core::num::NonZeroU64);

impl RequestCookie {
    /// A cookie never handed out before.
    pub(crate) fn new() -> Self {
        static NEXT: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(1);
        let n = NEXT.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        // 2^64 requests never happen; should the counter wrap, 0 still is no cookie.
        Self(core::num::NonZeroU64::new(n).unwrap_or(core::num::NonZeroU64::MIN))
    }
}

/// Events reported to the connection manager.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum CmEvent {
    /// A connection request arrived on a listener.
    ConnectRequest = bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REQUEST as isize,
    /// The reply to our request arrived (or the attempt failed).
    ConnectReply = bindings::iw_cm_event_type_IW_CM_EVENT_CONNECT_REPLY as isize,
    /// An accepted connection is in RTS.
    Established = bindings::iw_cm_event_type_IW_CM_EVENT_ESTABLISHED as isize,
    /// The peer closed.
    Disconnect = bindings::iw_cm_event_type_IW_CM_EVENT_DISCONNECT as isize,
    /// The connection is gone.
    Close = bindings::iw_cm_event_type_IW_CM_EVENT_CLOSE as isize,
}

/// What an event carries besides its type.
#[derive(Default)]
pub(crate) struct EventData<'a> {
    /// 0 or a negative errno.
    pub(crate) status: i32,
    /// The ULP's private data.
    pub(crate) private_data: &'a [u8],
    pub(crate) ird: u8,
    pub(crate) ord: u8,
}

impl EventData<'_> {
    /// A failed connect (CONNECT_REPLY with status `-e`), nothing else.
    pub(crate) fn failed(e: Error) -> Self {
        Self {
            status: e.to_errno(),
            ..Default::default()
        }
    }
}

impl IwCmId {
    /// Takes a reference on `raw`.
    ///
    /// # Safety
    ///
    /// `raw` is a live cm_id the iw_cm handed to this provider.
    unsafe fn get(raw: *mut bindings::iw_cm_id) -> Result<CmId> {
        let p = NonNull::new(raw).ok_or(EINVAL)?;
        // SAFETY: `IwCmId` is a transparent wrapper of the live cm_id (invariant).
        let id = unsafe { &*p.as_ptr().cast::<Self>() };
        Ok(ARef::from(id))
    }

    /// Whether the caller of this cm_id's `connect` or `accept` may bind `qp` to it.
    ///
    /// A kernel consumer's cm_id binds only the QP it created on it (`rdma_create_qp()`);
    /// a user cm_id (ucma's, which never has one) binds only a user QP whose uverbs file
    /// the calling process holds. So a process cannot name another process's QP, nor a
    /// kernel consumer's, by number. Call it in the context of the `connect` or `accept`
    /// call (ucma's calls run in the process that made them).
    pub(crate) fn may_bind(&self, qp: &QpHandle) -> bool {
        let qp = qp.0.as_ptr();
        // The rdma_cm is the iw_cm's only user and makes every iw_cm_id with its
        // `rdma_id_private` as the context (`iw_create_cm_id(..., id_priv)` in `cma.c`),
        // whose first member is the `rdma_cm_id` (`cma_priv.h`), outliving the iw_cm_id.
        // SAFETY: A live cm_id (invariant), whose context is therefore an `rdma_cm_id`.
        let rid = unsafe { (*self.as_ptr()).context }.cast::<bindings::rdma_cm_id>();
        if rid.is_null() {
            return false;
        }
        // SAFETY: As above: a live `rdma_cm_id`.
        let own = unsafe { (*rid).qp };
        if !own.is_null() {
            return own == qp;
        }
        // The core sets `uobject` and `pd` before the driver creates a QP, `uobject` NULL
        // for a kernel consumer's. A user QP's PD is a user PD of the same uverbs file
        // (uverbs looks it up there), whose `uobject` is set at allocation and names it.
        // SAFETY: `qp` is a live QP of this driver (`QpHandle`'s invariant); see above.
        let ufile = unsafe {
            if (*qp).uobject.is_null() || (*(*qp).pd).uobject.is_null() {
                return false;
            }
            (*(*(*qp).pd).uobject).ufile
        }
        .cast::<core::ffi::c_void>();
        current_holds(ufile)
    }

    /// The address the ULP bound (a listener's, or a connection's before mapping).
    pub(crate) fn local_addr(&self) -> SockAddr {
        // SAFETY: A live cm_id; the address is set before the provider is called.
        SockAddr::from_raw(unsafe { (*self.as_ptr()).local_addr })
    }

    /// The local address to connect from (after port mapping).
    pub(crate) fn mapped_local_addr(&self) -> SockAddr {
        // SAFETY: As above.
        SockAddr::from_raw(unsafe { (*self.as_ptr()).m_local_addr })
    }

    /// The remote address to connect to (after port mapping).
    pub(crate) fn mapped_remote_addr(&self) -> SockAddr {
        // SAFETY: As above.
        SockAddr::from_raw(unsafe { (*self.as_ptr()).m_remote_addr })
    }

    /// Whether an IPv6 address takes IPv6 connections only (`afonly`).
    pub(crate) fn afonly(&self) -> bool {
        // SAFETY: As above.
        unsafe { (*self.as_ptr()).afonly() }
    }

    pub(in crate::glue) fn as_ptr(&self) -> *mut bindings::iw_cm_id {
        self.0.get()
    }

    /// Reports `ev`, with the connection's local and remote address for requests and
    /// replies.
    pub(crate) fn event(
        &self,
        ev: CmEvent,
        addrs: Option<(SockAddr, SockAddr)>,
        d: &EventData<'_>,
    ) -> Result {
        self.raw_event(ev, addrs, d, core::ptr::null_mut())
    }

    fn raw_event(
        &self,
        ev: CmEvent,
        addrs: Option<(SockAddr, SockAddr)>,
        d: &EventData<'_>,
        provider: *mut core::ffi::c_void,
    ) -> Result {
        let mut e: bindings::iw_cm_event = pin_init::zeroed();
        e.event = ev as bindings::iw_cm_event_type;
        e.status = d.status;
        // The core copies the private data before the handler returns, and never writes it.
        e.private_data = d.private_data.as_ptr().cast_mut().cast();
        e.private_data_len = u8::try_from(d.private_data.len()).map_err(|_| EINVAL)?;
        e.ird = d.ird;
        e.ord = d.ord;
        e.provider_data = provider;
        if let Some((local, remote)) = addrs {
            e.local_addr = local.raw();
            e.remote_addr = remote.raw();
        }
        let id = self.as_ptr();
        // SAFETY: A live cm_id (invariant); the iw_cm sets its handler before handing the
        // cm_id to a provider.
        let handler = unsafe { (*id).event_handler }.ok_or(EINVAL)?;
        // SAFETY: A live cm_id and an event valid for the call.
        kernel::error::to_result(unsafe { handler(id, &mut e) })
    }

    /// Reports a connection request on this listener; the core hands `req` back with the
    /// `accept` or `reject` of the new connection, or never (see [`RequestCookie`]).
    pub(crate) fn connect_request(
        &self,
        addrs: (SockAddr, SockAddr),
        d: &EventData<'_>,
        req: RequestCookie,
    ) -> Result {
        // Only a number: the core stores it and gives it back, nothing dereferences it.
        let cookie = usize::try_from(req.0.get()).map_err(|_| EINVAL)?;
        self.raw_event(
            CmEvent::ConnectRequest,
            Some(addrs),
            d,
            core::ptr::without_provenance_mut(cookie),
        )
    }
}

/// Connection parameters of `connect` and `accept` (`struct iw_cm_conn_param`).
pub(crate) struct ConnParam<'a> {
    pub(crate) private_data: &'a [u8],
    pub(crate) ord: u32,
    pub(crate) ird: u32,
    pub(crate) qpn: u32,
}

/// A QP as the connection manager names it (the `ib_qp` it passes to `modify_qp`).
///
/// # Invariants
///
/// Points to the `ib_qp` of a QP of this driver while the QP is in its device's table.
#[derive(Clone, Copy)]
pub(crate) struct QpHandle(NonNull<bindings::ib_qp>);

// SAFETY: Only an address; using it is unsafe and done by the glue alone.
unsafe impl Send for QpHandle {}
// SAFETY: As above.
unsafe impl Sync for QpHandle {}

impl<D> super::object::Obj<bindings::ib_qp, D> {
    /// The handle the connection manager will name this QP by.
    pub(crate) fn cm_handle(&self) -> QpHandle {
        // INVARIANT: The driver keeps it in its table only while the QP lives.
        // SAFETY: `as_ptr` of a live object is not null.
        QpHandle(unsafe { NonNull::new_unchecked(self.as_ptr()) })
    }
}

impl QpHandle {
    /// Reports `IB_EVENT_QP_FATAL` to the QP's consumer.
    pub(crate) fn fatal_event(&self) {
        self.qp_event(bindings::ib_event_type_IB_EVENT_QP_FATAL);
    }

    /// Reports `IB_EVENT_QP_LAST_WQE_REACHED` to the QP's consumer: the QP, attached to an
    /// SRQ, went to ERROR and takes no more receives from it. `ib_drain_qp()` of such a QP
    /// waits for it (60 s, then it gives up).
    pub(crate) fn last_wqe_event(&self) {
        self.qp_event(bindings::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED);
    }

    fn qp_event(&self, event: bindings::ib_event_type) {
        let qp = self.0.as_ptr();
        let mut ev: bindings::ib_event = pin_init::zeroed();
        ev.event = event;
        ev.element.qp = qp;
        // SAFETY: By the type invariant the QP is live; the core sets `device`,
        // `event_handler` and `qp_context` at creation; `ev` is valid for the call.
        unsafe {
            ev.device = (*qp).device;
            if let Some(f) = (*qp).event_handler {
                f(&mut ev, (*qp).qp_context);
            }
        }
    }

    /// Reports `IB_EVENT_SRQ_LIMIT_REACHED` to the consumer of the QP's SRQ.
    pub(crate) fn srq_limit_event(&self) {
        let qp = self.0.as_ptr();
        // SAFETY: By the type invariant the QP is live, and a live QP keeps its SRQ.
        let srq = unsafe { (*qp).srq };
        if srq.is_null() {
            return;
        }
        let mut ev: bindings::ib_event = pin_init::zeroed();
        ev.event = bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED;
        ev.element.srq = srq;
        // SAFETY: The SRQ is live (above); the core sets its `event_handler` and
        // `srq_context` at creation; `ev` is valid for the call.
        unsafe {
            ev.device = (*qp).device;
            if let Some(f) = (*srq).event_handler {
                f(&mut ev, (*srq).srq_context);
            }
        }
    }
}

/// Parameters from C.
///
/// # Safety
///
/// `p` is valid for `'a`.
unsafe fn conn_param<'a>(p: *const bindings::iw_cm_conn_param) -> Result<ConnParam<'a>> {
    // SAFETY: By the caller's guarantee.
    let p = unsafe { p.as_ref() }.ok_or(EINVAL)?;
    let pd = if p.private_data_len == 0 || p.private_data.is_null() {
        &[][..]
    } else {
        // SAFETY: The core passes `private_data_len` readable bytes.
        unsafe {
            core::slice::from_raw_parts(p.private_data.cast(), usize::from(p.private_data_len))
        }
    };
    Ok(ConnParam {
        private_data: pd,
        ord: p.ord,
        ird: p.ird,
        qpn: p.qpn,
    })
}

/// Takes the request cookie out of a new connection's cm_id (its provider data, set by
/// the core from our CONNECT_REQUEST).
///
/// # Safety
///
/// `id` is a live cm_id of a connection request.
unsafe fn take_request(id: *mut bindings::iw_cm_id) -> Option<RequestCookie> {
    // SAFETY: A live cm_id, whose provider data belongs to the provider.
    let p = unsafe { core::mem::take(&mut (*id).provider_data) };
    let n = u64::try_from(p.addr()).ok()?;
    core::num::NonZeroU64::new(n).map(RequestCookie)
}

/// Takes back the listener stored in `id`'s provider data.
///
/// # Safety
///
/// The provider data is NULL or the `into_foreign` of an `Arc<T::Listener>` stored by
/// `iw_create_listen`, which this call then owns.
unsafe fn take_listener<T: Driver>(id: *mut bindings::iw_cm_id) -> Option<Arc<T::Listener>> {
    // SAFETY: A live cm_id, whose provider data belongs to the provider.
    let p = unsafe { core::mem::take(&mut (*id).provider_data) };
    // SAFETY: By the caller's guarantee, NULL or ours to take back.
    unsafe { Arc::<T::Listener>::try_from_foreign(p) }
}

// SAFETY (for every trampoline below): the iw_cm core calls them with live cm_ids of this
// driver's devices.
impl<T: Driver> Adapter<T> {
    /// # Safety
    ///
    /// `ib_device_ops.iw_connect`.
    pub(super) unsafe extern "C" fn iw_connect(
        id: *mut bindings::iw_cm_id,
        p: *mut bindings::iw_cm_conn_param,
    ) -> c_int {
        from_result(|| {
            // SAFETY: A live cm_id and parameters valid for the call.
            let (cm, p) = unsafe { (IwCmId::get(id)?, conn_param(p)?) };
            // SAFETY: The cm_id's device is a live device of this driver.
            let dev = unsafe { Device::<T>::from_raw((*id).device) };
            T::iw_connect(dev, cm, &p)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ib_device_ops.iw_accept`.
    pub(super) unsafe extern "C" fn iw_accept(
        id: *mut bindings::iw_cm_id,
        p: *mut bindings::iw_cm_conn_param,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core accepts a connection request's cm_id.
            let req = unsafe { take_request(id) }.ok_or(ECONNRESET)?;
            // SAFETY: A live cm_id and parameters valid for the call.
            let (cm, p) = unsafe { (IwCmId::get(id)?, conn_param(p)?) };
            // SAFETY: The cm_id's device is a live device of this driver.
            let dev = unsafe { Device::<T>::from_raw((*id).device) };
            T::iw_accept(dev, cm, req, &p)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ib_device_ops.iw_reject`.
    pub(super) unsafe extern "C" fn iw_reject(
        id: *mut bindings::iw_cm_id,
        pd: *const core::ffi::c_void,
        len: u8,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core rejects a connection request's cm_id.
            let req = unsafe { take_request(id) }.ok_or(ECONNRESET)?;
            // SAFETY: The cm_id's device is a live device of this driver.
            let dev = unsafe { Device::<T>::from_raw((*id).device) };
            let pd = if pd.is_null() || len == 0 {
                &[][..]
            } else {
                // SAFETY: The core passes `len` readable bytes.
                unsafe { core::slice::from_raw_parts(pd.cast::<u8>(), usize::from(len)) }
            };
            T::iw_reject(dev, req, pd);
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ib_device_ops.iw_create_listen`.
    pub(super) unsafe extern "C" fn iw_create_listen(
        id: *mut bindings::iw_cm_id,
        backlog: c_int,
    ) -> c_int {
        from_result(|| {
            // SAFETY: A live cm_id.
            let cm = unsafe { IwCmId::get(id)? };
            // SAFETY: The cm_id's device is a live device of this driver.
            let dev = unsafe { Device::<T>::from_raw((*id).device) };
            let listener = T::iw_create_listen(dev, cm, backlog)?;
            // SAFETY: A live cm_id, whose provider data belongs to the provider;
            // `iw_destroy_listen` takes the listener back.
            unsafe { (*id).provider_data = listener.into_foreign() };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ib_device_ops.iw_destroy_listen`.
    pub(super) unsafe extern "C" fn iw_destroy_listen(id: *mut bindings::iw_cm_id) -> c_int {
        // SAFETY: `iw_create_listen` stored the listener there.
        if let Some(listener) = unsafe { take_listener::<T>(id) } {
            T::iw_destroy_listen(listener);
        }
        0
    }

    /// # Safety
    ///
    /// `ib_device_ops.iw_get_qp`.
    pub(super) unsafe extern "C" fn iw_get_qp(
        dev: *mut bindings::ib_device,
        qpn: c_int,
    ) -> *mut bindings::ib_qp {
        // SAFETY: A live device of this driver.
        let dev = unsafe { Device::<T>::from_raw(dev) };
        u32::try_from(qpn)
            .ok()
            .and_then(|n| T::iw_get_qp(dev, n))
            .map_or(core::ptr::null_mut(), |h| h.0.as_ptr())
    }

    /// # Safety
    ///
    /// `ib_device_ops.iw_add_ref`.
    pub(super) unsafe extern "C" fn iw_add_ref(qp: *mut bindings::ib_qp) {
        // SAFETY: The core passes a QP it got from `iw_get_qp` (or holds a reference on).
        T::iw_add_ref(unsafe { Qp::<T>::from_raw(qp) });
    }

    /// # Safety
    ///
    /// `ib_device_ops.iw_rem_ref`.
    pub(super) unsafe extern "C" fn iw_rem_ref(qp: *mut bindings::ib_qp) {
        // SAFETY: The core drops a reference it holds, so the QP is live.
        T::iw_rem_ref(unsafe { Qp::<T>::from_raw(qp) });
    }
}

/// Whether the current process has an open file whose `private_data` is `priv_`: for a
/// uverbs file, the `ib_uverbs_file` (`ib_uverbs_open()` puts it there).
fn current_holds(priv_: *const core::ffi::c_void) -> bool {
    // SAFETY: Reads the current task's own file table under its lock; `priv_` is only
    // compared.
    !priv_.is_null() && unsafe { bindings::siw_rs_current_holds(priv_) }
}
