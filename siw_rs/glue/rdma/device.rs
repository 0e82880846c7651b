// SPDX-License-Identifier: GPL-2.0

//! `struct ib_device`: allocation, the ops table, registration and the device registry.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h).
//!
//! The RDMA core allocates driver objects itself, with the C struct at offset 0 and the
//! driver's part behind it (`INIT_RDMA_OBJ_SIZE`). [`Device<T>`] and [`UContext<T>`] are such
//! objects: `#[repr(C)]` with the C struct first and `T`'s data after it, initialised in
//! place by the trampolines here and dropped in place when the core releases them.
//!
//! A Rust driver may share its driver id with a C driver (siw_rs shares `RDMA_DRIVER_SIW`
//! with the C siw, as libsiw matches on it), so the core's per-driver helpers such as
//! `ib_unregister_driver()` could reach the other driver's devices. Each driver therefore
//! keeps a [`Registry`] in its module data, which tears down that driver's devices alone.

use super::{
    cm::{
        CmId,
        ConnParam,
        QpHandle,
        RequestCookie, //
    },
    mmap,
    object::{
        UContext,
        Udata,
        User, //
    },
    umem::{
        KernelMem,
        MappedPage, //
    },
    verbs::{
        AccessFlags,
        Cq,
        CqNotify,
        MrKeys,
        MrMap,
        Pd,
        Qp,
        QpInit,
        QpModify,
        QpQuery,
        RecvWrs,
        ResDetails,
        SendWrs,
        Srq,
        SrqAttr,
        SrqAttrMask,
        UserMr,
        Wc, //
    },
};
use crate::glue::{
    bindings,
    net::netdev::NetDev, //
};
use core::{
    marker::PhantomData,
    ptr::NonNull,
    sync::atomic::{
        AtomicU8,
        Ordering, //
    }, //
};
use kernel::{
    error::{
        from_result,
        to_result,
        VTABLE_DEFAULT_ERROR, //
    },
    prelude::*,
    sync::Arc,
    types::Opaque,
    ModuleMetadata, //
};

/// A driver id (`enum rdma_driver_id`): user-space providers match devices on it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct DriverId(bindings::rdma_driver_id);

impl DriverId {
    /// The id with C value `raw`, one of `RDMA_DRIVER_*`.
    pub(in crate::glue) const fn from_raw(raw: bindings::rdma_driver_id) -> Self {
        Self(raw)
    }
}

/// Device capability flag: memory management extensions (fast registration, invalidation).
pub(crate) const DEVICE_MEM_MGT_EXTENSIONS: u64 =
    bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64;
/// Kernel capability flag: `rdma link delete` may unregister the device.
pub(crate) const KERNEL_ALLOW_USER_UNREG: u64 =
    bindings::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG as u64;
/// Port capability flags: connection management supported.
pub(crate) const PORT_CM_SUP: u32 = bindings::ib_port_capability_mask_bits_IB_PORT_CM_SUP;
/// Port capability flags: device management supported.
pub(crate) const PORT_DEVICE_MGMT_SUP: u32 =
    bindings::ib_port_capability_mask_bits_IB_PORT_DEVICE_MGMT_SUP;
/// Core capability flags of an iWARP port.
pub(crate) const CORE_PORT_IWARP: u32 = bindings::RDMA_CORE_PORT_IWARP;

/// The device attributes reported by `query_device` (a subset of `struct ib_device_attr`;
/// every field not named here reads as zero).
#[derive(Default)]
pub(crate) struct DeviceAttr {
    pub(crate) sys_image_guid: u64,
    pub(crate) max_mr_size: u64,
    pub(crate) page_size_cap: u64,
    pub(crate) vendor_id: u32,
    pub(crate) vendor_part_id: u32,
    pub(crate) max_qp: u32,
    pub(crate) max_qp_wr: u32,
    pub(crate) device_cap_flags: u64,
    pub(crate) kernel_cap_flags: u64,
    pub(crate) max_send_sge: u32,
    pub(crate) max_recv_sge: u32,
    pub(crate) max_sge_rd: u32,
    pub(crate) max_cq: u32,
    pub(crate) max_cqe: u32,
    pub(crate) max_mr: u32,
    pub(crate) max_pd: u32,
    pub(crate) max_qp_rd_atom: u32,
    pub(crate) max_res_rd_atom: u32,
    pub(crate) max_qp_init_rd_atom: u32,
    pub(crate) max_mw: u32,
    pub(crate) max_srq: u32,
    pub(crate) max_srq_wr: u32,
    pub(crate) max_srq_sge: u32,
    pub(crate) max_fast_reg_page_list_len: u32,
    /// Atomic operations are atomic against the CPUs too (`IB_ATOMIC_GLOB`, also for the
    /// masked ones); else `IB_ATOMIC_NONE`.
    pub(crate) atomic_glob: bool,
}

/// Logical port state (`enum ib_port_state`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum PortState {
    /// The link is down.
    Down,
    /// The link is up.
    Active,
}

/// The port attributes reported by `query_port` (a subset of `struct ib_port_attr`).
pub(crate) struct PortAttr {
    pub(crate) state: PortState,
    pub(crate) max_mtu: u32,
    pub(crate) active_mtu: u32,
    pub(crate) gid_tbl_len: i32,
    pub(crate) port_cap_flags: u32,
    pub(crate) max_msg_sz: u32,
}

/// What never changes about a port (`struct ib_port_immutable`).
pub(crate) struct PortImmutable {
    pub(crate) gid_tbl_len: i32,
    pub(crate) core_cap_flags: u32,
}

/// Identity of a new device, set before it is registered.
///
/// The device gets one port, on `netdev`, and one completion vector per possible CPU.
pub(crate) struct DeviceInfo<'a> {
    /// `node_guid`, in wire (big-endian) byte order.
    pub(crate) node_guid: [u8; 8],
    /// `node_desc`, e.g. "Software iWARP stack".
    pub(crate) node_desc: &'a [u8],
    /// The network device the single port sits on.
    pub(crate) netdev: &'a NetDev,
    /// The node type.
    pub(crate) node_type: NodeType,
    /// Serve the uverbs POST_SEND command (for a provider whose user library rings a
    /// doorbell with it, rather than posting in user space alone).
    pub(crate) uverbs_post_send: bool,
    /// iWARP only: the device binds real ports itself, so the iWARP port mapper must not
    /// map them (`IW_F_NO_PORT_MAP`).
    pub(crate) iw_no_port_map: bool,
}

/// A node type (`enum rdma_node_type`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum NodeType {
    /// An iWARP RDMA NIC (`RDMA_NODE_RNIC`).
    Rnic,
}

/// The body of an optional op the driver does not implement: never called (its table entry
/// is NULL), and a build error if it were.
fn not_implemented<R>() -> Result<R> {
    build_error!(VTABLE_DEFAULT_ERROR)
}

/// A driver for RDMA devices: the operations the RDMA core calls.
///
/// Implemented in safe code by the driver; [`Adapter`] turns it into an `ib_device_ops`.
/// The ops the core requires of every device have no default. The others are optional: an op
/// the implementation leaves out stays NULL in the table (`#[vtable]`'s `HAS_*`), and the
/// core answers for it (`EOPNOTSUPP`, or no iWARP connection manager). Objects the core
/// allocates (contexts, PDs, CQs, SRQs, QPs) are initialised in place from the [`PinInit`]
/// the create op returns, and dropped in place after the matching destroy op.
#[vtable]
pub(crate) trait Driver: Sized + Send + Sync + 'static {
    /// The module the driver's code lives in: it owns the driver's devices (`ops.owner`),
    /// so it stays loaded while the core or a process uses one.
    type Module: ModuleMetadata;
    /// The driver id user space matches on (`ib_device_ops.driver_id`).
    const DRIVER_ID: DriverId;
    /// The names of the port counters (`rdma statistic show`), in the order
    /// [`Driver::port_counters`] reports them.
    const PORT_COUNTERS: &'static [&'static CStr] = &[];
    /// The uverbs ABI version of the driver's user-space provider.
    const UVERBS_ABI_VER: u32;

    /// Driver data of each device, stored behind the `ib_device`.
    type Data: Send + Sync;
    /// Driver data of each user context.
    type UContext: Send + Sync;
    /// Driver data of each protection domain.
    type Pd: Send + Sync;
    /// Driver data of each completion queue.
    type Cq: Send + Sync;
    /// Driver data of each shared receive queue.
    type Srq: Send + Sync;
    /// Driver data of each queue pair.
    type Qp: Send + Sync;
    /// Driver data of each memory region.
    type Mr: Send + Sync;
    /// Driver data of each listening endpoint (the provider data of a listening cm_id).
    type Listener: Send + Sync;

    /// Device attributes (`ibv_query_device`).
    fn query_device(dev: &Device<Self>) -> Result<DeviceAttr>;
    /// Attributes of port `port` (`ibv_query_port`).
    fn query_port(dev: &Device<Self>, port: u32) -> Result<PortAttr>;
    /// Immutable attributes of port `port`, read once at registration.
    fn port_immutable(dev: &Device<Self>, port: u32) -> Result<PortImmutable>;
    /// The values of port `port`'s counters, one per name of [`Driver::PORT_COUNTERS`], into
    /// `out`. Called in process context.
    fn port_counters(_dev: &Device<Self>, _port: u32, _out: &mut [u64]) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// GID `index` of port `port`.
    fn query_gid(_dev: &Device<Self>, _port: u32, _index: i32) -> Result<[u8; 16]> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// A process opens the device: the context's data; the driver's response goes through
    /// `udata`.
    fn alloc_ucontext(
        _dev: &Device<Self>,
        _udata: &mut Udata,
    ) -> Result<impl PinInit<Self::UContext, Error>> {
        not_implemented::<Result<Self::UContext>>()
    }
    /// The context is gone; its data is dropped after this returns.
    fn dealloc_ucontext(_dev: &Device<Self>, _ctx: &Self::UContext) {}

    /// A new protection domain.
    fn alloc_pd(dev: &Device<Self>) -> impl PinInit<Self::Pd, Error>;
    /// The PD is gone; its data is dropped after this returns.
    fn dealloc_pd(_dev: &Device<Self>, _pd: &Self::Pd) {}

    /// A new CQ of at least `cqe` entries: its data and its real size.
    fn create_cq(
        dev: &Device<Self>,
        cqe: i32,
        user: Option<&mut User<'_, Self>>,
    ) -> Result<(impl PinInit<Self::Cq, Error>, i32)>;
    /// The CQ is gone (no QP uses it); its data is dropped after this returns.
    fn destroy_cq(_dev: &Device<Self>, _cq: &Self::Cq) {}

    /// A new SRQ: its data and its real attributes.
    fn create_srq(
        _pd: &Pd<Self>,
        _attr: &SrqAttr,
        _user: Option<&mut User<'_, Self>>,
    ) -> Result<(impl PinInit<Self::Srq, Error>, SrqAttr)> {
        not_implemented::<(Result<Self::Srq>, SrqAttr)>()
    }
    /// Changes the attributes `mask` names.
    fn modify_srq(_srq: &Srq<Self>, _attr: &SrqAttr, _mask: SrqAttrMask) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// The SRQ's attributes.
    fn query_srq(_srq: &Srq<Self>) -> Result<SrqAttr> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// The SRQ is gone; its data is dropped after this returns.
    fn destroy_srq(_srq: &Srq<Self>) {}
    /// Receives posted to an SRQ.
    fn post_srq_recv(_srq: &Srq<Self>, _wrs: &mut RecvWrs<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// A new QP: its data and its QP number.
    fn create_qp(
        pd: &Pd<Self>,
        attr: &QpInit<'_, Self>,
        user: Option<&mut User<'_, Self>>,
    ) -> Result<(impl PinInit<Self::Qp, Error>, u32)>;
    /// The core finished setting the QP up (it has its number and `ib_qp`); an error undoes
    /// the creation.
    fn qp_created(_qp: &Qp<Self>) -> Result {
        Ok(())
    }
    /// Modifies the QP.
    fn modify_qp(qp: &Qp<Self>, attr: &QpModify) -> Result;
    /// The driver's details of the QP, for `rdma resource show qp -dd`. Called in process
    /// context.
    fn qp_details(_qp: &Qp<Self>, _out: &mut ResDetails<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// The QP's attributes.
    fn query_qp(_qp: &Qp<Self>) -> Result<QpQuery> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Destroys the QP; its data is dropped after this returns.
    fn destroy_qp(qp: &Qp<Self>);
    /// Send work requests posted to the QP (`ibv_post_send`, `ib_post_send`; for a process
    /// the list is what uverbs copied in, possibly empty).
    fn post_send(qp: &Qp<Self>, wrs: &mut SendWrs<'_>) -> Result;
    /// Receive work requests posted to the QP.
    fn post_recv(qp: &Qp<Self>, wrs: &mut RecvWrs<'_>) -> Result;

    /// Registers user memory: the MR's data and keys.
    fn reg_user_mr(
        pd: &Pd<Self>,
        mr: UserMr,
        user: Option<&mut User<'_, Self>>,
    ) -> Result<(Self::Mr, MrKeys)>;
    /// The MR is being deregistered; its data is dropped after this returns.
    fn dereg_mr(_mr: &Self::Mr) {}
    /// A kernel consumer's DMA MR (all of memory, by kernel address, through `mem`).
    fn get_dma_mr(pd: &Pd<Self>, access: AccessFlags, mem: KernelMem)
        -> Result<(Self::Mr, MrKeys)>;
    /// A kernel consumer's fast-registration MR (`ib_alloc_mr`, `IB_MR_TYPE_MEM_REG`) for up
    /// to `max_pages` pages: its data and keys. It names no memory until an `IB_WR_REG_MR`
    /// registers the pages `map_mr_sg` gave it.
    fn alloc_mr(_pd: &Pd<Self>, _max_pages: u32) -> Result<(Self::Mr, MrKeys)> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Maps a scatterlist onto an MR of `alloc_mr` (`ib_map_mr_sg`): [`MrMap::map`] runs the
    /// core's `ib_sg_to_pages`, which calls [`Driver::set_page`] for each page. Returns the
    /// number of scatterlist entries mapped. May be called in atomic context.
    fn map_mr_sg(_mr: &Self::Mr, _map: MrMap<'_, Self>) -> Result<usize> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// The next page of a [`Driver::map_mr_sg`] in progress; an error ends the mapping
    /// there.
    fn set_page(_mr: &Self::Mr, _page: MappedPage) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Takes completions from a kernel CQ into `out`; returns how many.
    fn poll_cq(cq: &Cq<Self>, out: &mut [Wc]) -> usize;
    /// Arms a kernel CQ; returns whether completions are already waiting.
    fn req_notify_cq(cq: &Cq<Self>, notify: CqNotify) -> bool;

    /// Connects to `id`'s remote address with the QP `p.qpn` (iWARP, MPA initiator).
    fn iw_connect(_dev: &Device<Self>, _id: CmId, _p: &ConnParam<'_>) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Accepts the connection request `req` on the QP `p.qpn`.
    fn iw_accept(
        _dev: &Device<Self>,
        _id: CmId,
        _req: RequestCookie,
        _p: &ConnParam<'_>,
    ) -> Result {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Rejects the connection request `req`, sending `private_data` to the peer.
    fn iw_reject(_dev: &Device<Self>, _req: RequestCookie, _private_data: &[u8]) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Listens on `id`'s local address.
    fn iw_create_listen(
        _dev: &Device<Self>,
        _id: CmId,
        _backlog: i32,
    ) -> Result<Arc<Self::Listener>> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Stops listening.
    fn iw_destroy_listen(_listener: Arc<Self::Listener>) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// The QP numbered `qpn`.
    fn iw_get_qp(_dev: &Device<Self>, _qpn: u32) -> Option<QpHandle> {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// The connection manager takes a reference on the QP.
    fn iw_add_ref(_qp: &Qp<Self>) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// The connection manager drops a reference on the QP.
    fn iw_rem_ref(_qp: &Qp<Self>) {
        build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// An RDMA device owned by driver `T`.
///
/// # Invariants
///
/// - `ib` is an `ib_device` allocated by `_ib_alloc_device` with room for `Self`, and `ops`
///   set to [`Adapter<T>`]'s table; `data` and `counters` are initialised from then until
///   `dealloc_driver`.
/// - `counters` has one descriptor per name of `T::PORT_COUNTERS`, naming it.
/// - `ib` is at offset 0 (`repr(C)`, first field), so a pointer to the `ib_device` is a
///   pointer to the `Device<T>`.
#[repr(C)]
pub(crate) struct Device<T: Driver> {
    ib: Opaque<bindings::ib_device>,
    /// The port counters' descriptors, which every `rdma_hw_stats` of the device points to.
    counters: KVec<bindings::rdma_stat_desc>,
    data: T::Data,
}

// SAFETY: The `ib_device` part is shared with the RDMA core, which synchronises its own
// accesses; the driver part is `T::Data: Send + Sync`.
unsafe impl<T: Driver> Send for Device<T> {}
// SAFETY: As above.
unsafe impl<T: Driver> Sync for Device<T> {}

impl<T: Driver> Device<T> {
    /// Borrows the `Device<T>` around an `ib_device` the RDMA core handed us.
    ///
    /// # Safety
    ///
    /// `ptr` is the `ib_device` of a live `Device<T>` whose data is initialised, and it stays
    /// so for `'a` (true inside every device op until `dealloc_driver`).
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: By the type invariants `ib` is at offset 0, so the cast is to the
        // containing `Device<T>`; the caller guarantees liveness.
        unsafe { &*ptr.cast::<Self>() }
    }

    fn as_ptr(&self) -> *mut bindings::ib_device {
        self.ib.get()
    }

    /// The driver data.
    pub(crate) fn data(&self) -> &T::Data {
        &self.data
    }
    /// A reference of its own on the device, while it is registered.
    pub(crate) fn get_ref(&self) -> Option<DeviceRef> {
        // SAFETY: `self` is a live device; the call takes a reference only if it is
        // registered and not being unregistered.
        if !unsafe { bindings::ib_device_try_get(self.as_ptr()) } {
            return None;
        }
        // INVARIANT: The reference just taken.
        NonNull::new(self.as_ptr()).map(DeviceRef)
    }

    /// The network device of port 1, with a reference held while the closure runs.
    pub(crate) fn with_netdev<R>(&self, f: impl FnOnce(&NetDev) -> R) -> Result<R> {
        // SAFETY: `self` is a registered device; `ib_device_get_netdev` returns a held
        // reference or NULL.
        let ndev = unsafe { bindings::ib_device_get_netdev(self.as_ptr(), 1) };
        if ndev.is_null() {
            return Err(ENODEV);
        }
        // SAFETY: We hold a reference on `ndev` until the `dev_put` below.
        let r = f(unsafe { NetDev::from_raw(ndev) });
        // SAFETY: Drops the reference `ib_device_get_netdev` took.
        unsafe { bindings::dev_put(ndev) };
        Ok(r)
    }

    /// Link speed and width of `port`, as `ib_get_eth_speed` derives them from the netdev.
    fn eth_speed(&self, port: u32) -> Result<(u16, u8)> {
        let (mut speed, mut width) = (0u16, 0u8);
        // SAFETY: `self` is a live device; the out pointers are valid locals.
        to_result(unsafe {
            bindings::ib_get_eth_speed(self.as_ptr(), port, &mut speed, &mut width)
        })?;
        Ok((speed, width))
    }

    /// The first of this module's devices of driver `T` that `f` picks something from, in
    /// whatever state of registration or unregistration (unlike [`DeviceRef::find_by_netdev`],
    /// which cannot find a device whose unregistration has begun). `f` runs under the
    /// module's device list lock: it must be quick and take no lock that is held around
    /// device registration or release.
    pub(crate) fn find_ours<R>(f: impl Fn(&Self) -> Option<R>) -> Option<R> {
        let list = DEVICES.lock();
        for d in list.devices.iter() {
            if !d.is_of::<T>() {
                continue;
            }
            let raw = d.0.as_ptr();
            // SAFETY: `T` made the device, so it is the `ib` of a `Device<T>`; its data lives
            // until `dealloc_driver`, which takes it off this list, under this lock, first.
            if let Some(r) = f(unsafe { Self::from_raw(raw) }) {
                return Some(r);
            }
        }
        None
    }

    /// Creates, registers and records a device named `name`.
    ///
    /// Fails with `EEXIST` if `info.netdev` already carries a device of `T::DRIVER_ID`, this
    /// module's or another's: drivers of one id look their devices up by netdev.
    pub(crate) fn register(name: &CStr, info: DeviceInfo<'_>, data: T::Data) -> Result {
        if let Some(existing) = DeviceRef::find_by_netdev(info.netdev, T::DRIVER_ID) {
            drop(existing);
            return Err(EEXIST);
        }
        const {
            // The core's `kzalloc` guarantees `ARCH_KMALLOC_MINALIGN` (8 on every arch we
            // build for); anything stricter would misplace `data`.
            assert!(core::mem::align_of::<Self>() <= 8);
        }
        let mut counters = KVec::with_capacity(T::PORT_COUNTERS.len(), GFP_KERNEL)?;
        for name in T::PORT_COUNTERS {
            let mut d: bindings::rdma_stat_desc = pin_init::zeroed();
            d.name = name.as_char_ptr();
            counters.push(d, GFP_KERNEL)?;
        }
        // SAFETY: Allocates a zeroed `ib_device` with room for `Self` behind it.
        let raw = unsafe { bindings::ib_alloc_device(core::mem::size_of::<Self>()) };
        if raw.is_null() {
            return Err(ENOMEM);
        }
        let dev = raw.cast::<Self>();
        // SAFETY: `raw` has room for a `Self`; `data` is not initialised yet, so we write it
        // without dropping the zeroes. From here `dealloc_driver` (which runs on every path
        // that frees the device, `ib_dealloc_device` included) drops it.
        unsafe {
            core::ptr::addr_of_mut!((*dev).data).write(data);
            core::ptr::addr_of_mut!((*dev).counters).write(counters);
        }
        // INVARIANT: `ops` is set to our table right after `data` is initialised.
        let mut ops = Adapter::<T>::OPS;
        ops.owner = kernel::module::this_module::<T::Module>().as_ptr().cast();
        // SAFETY: `raw` is a valid, not yet registered device; `ib_set_device_ops` copies the
        // table.
        unsafe { bindings::ib_set_device_ops(raw, &ops) };

        // SAFETY: Not registered yet, so nothing else accesses the device; we set the
        // identity fields the core reads at registration.
        unsafe {
            let ib = &mut *raw;
            ib.node_guid = u64::from_ne_bytes(info.node_guid);
            ib.node_type = match info.node_type {
                NodeType::Rnic => bindings::RDMA_NODE_RNIC as u8,
            };
            for (d, s) in ib.node_desc.iter_mut().zip(info.node_desc.iter().take(63)) {
                *d = *s as c_char;
            }
            ib.phys_port_cnt = 1;
            ib.num_comp_vectors = bindings::num_possible_cpus() as c_int;
            if info.uverbs_post_send {
                ib.uverbs_cmd_mask |=
                    1u64 << bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND;
            }
            let ifname = info.netdev.name_bytes();
            for (d, s) in ib.iw_ifname.iter_mut().zip(ifname.iter()) {
                *d = *s as c_char;
            }
            if info.iw_no_port_map {
                ib.iw_driver_flags = bindings::iw_flags_IW_F_NO_PORT_MAP;
            }
        }

        // SAFETY: `raw` is valid; `netdev` is alive (see `NetDev`'s invariants) and the core
        // takes its own reference.
        let ret = unsafe { bindings::ib_device_set_netdev(raw, info.netdev.as_ptr(), 1) };
        if let Err(e) = to_result(ret) {
            // SAFETY: Not registered; `ib_dealloc_device` calls `dealloc_driver`, which drops
            // `data`, then frees the device.
            unsafe { bindings::ib_dealloc_device(raw) };
            return Err(e);
        }
        // SAFETY: `raw` is valid and not registered.
        unsafe { bindings::ib_mark_name_assigned_by_user(raw) };

        // SAFETY: `raw` is valid; `name` is NUL-terminated; a NULL DMA device selects virtual
        // DMA (kernel virtual addresses as DMA addresses), as the C siw does.
        let ret =
            unsafe { bindings::ib_register_device(raw, name.as_char_ptr(), core::ptr::null_mut()) };
        if let Err(e) = to_result(ret) {
            // SAFETY: Registration failed, so the device is ours to free, as above.
            unsafe { bindings::ib_dealloc_device(raw) };
            return Err(e);
        }
        // Record it, so module unload can find it. If even that small allocation fails, undo
        // the registration rather than leave a device that unload would not know about.
        let pushed = DEVICES.lock().devices.push(RegRef::get(raw), GFP_KERNEL);
        if let Err(e) = pushed {
            // SAFETY: The device is registered and the core's registration reference keeps it
            // alive; unregistering it frees it (our `RegRef` was dropped by the failed push).
            unsafe { bindings::ib_unregister_device(raw) };
            return Err(e.into());
        }
        Ok(())
    }
}

/// A reference on the `struct device` inside an `ib_device` (`get_device`/`put_device`).
///
/// # Invariants
///
/// Holds one reference on the device's `struct device`, so its memory stays valid (even past
/// unregistration) until the value is dropped.
struct RegRef(NonNull<bindings::ib_device>);

// SAFETY: `struct device` references may be taken and dropped from any thread.
unsafe impl Send for RegRef {}

impl RegRef {
    /// Takes a reference on `raw`, which must be a live, allocated `ib_device`.
    fn get(raw: *mut bindings::ib_device) -> Self {
        // SAFETY: Callers pass a device they just allocated and registered.
        unsafe { bindings::ib_device_get_ref(raw) };
        // INVARIANT: We took the reference just above.
        // SAFETY: `raw` is non-null: it was checked after allocation.
        Self(unsafe { NonNull::new_unchecked(raw) })
    }

    /// Whether driver `T` made the device.
    fn is_of<T: Driver>(&self) -> bool {
        // SAFETY: A recorded device is alive (we hold a reference) and its ops are set
        // before it is recorded.
        let dealloc = unsafe { (*self.0.as_ptr()).ops.dealloc_driver };
        // Each driver type has its own `dealloc_driver` (the adapter is generic over it).
        let ours = Adapter::<T>::dealloc_driver as unsafe extern "C" fn(_) as usize;
        dealloc.map(|f| f as usize) == Some(ours)
    }

    /// Unregisters the device and waits until it is gone; a no-op if already unregistered.
    fn unregister(&self) {
        // SAFETY: By the type invariant the memory is valid; `ib_unregister_device` is
        // idempotent and fenced by the device's unregistration lock.
        unsafe { bindings::ib_unregister_device(self.0.as_ptr()) };
    }
}

impl Drop for RegRef {
    fn drop(&mut self) {
        // SAFETY: Drops the reference this value holds.
        unsafe { bindings::ib_device_put_ref(self.0.as_ptr()) };
    }
}

/// The `RegRef`s of every device a driver of this layer registered and has not seen
/// released, whichever driver it is: each entry knows its driver by its ops.
struct DeviceList {
    devices: KVec<RegRef>,
}

kernel::sync::global_lock! {
    // SAFETY: `Registry::new` initialises it, once, before any device can be registered
    // (every driver creates its registry in module init, before it registers anything).
    unsafe(uninit) static DEVICES: Mutex<DeviceList> = DeviceList { devices: KVec::new() };
}

/// Whether `DEVICES` is initialised: 0 no, 1 being initialised, 2 yes.
static DEVICES_STATE: AtomicU8 = AtomicU8::new(0);

/// Driver `T`'s registry of its devices, kept in its module data; dropping it (module exit)
/// unregisters every device of `T` still present, and only those.
pub(crate) struct Registry<T: Driver>(PhantomData<fn() -> T>);

impl<T: Driver> Registry<T> {
    /// The registry; created in module init, before the driver registers any device.
    pub(crate) fn new() -> Self {
        match DEVICES_STATE.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => {
                // SAFETY: The exchange above lets exactly one caller get here, and nobody
                // uses `DEVICES` before the state below says it is ready.
                unsafe { DEVICES.init() };
                DEVICES_STATE.store(2, Ordering::Release);
            }
            // Another driver's registry is initialising it right now.
            Err(_) => {
                while DEVICES_STATE.load(Ordering::Acquire) != 2 {
                    core::hint::spin_loop();
                }
            }
        }
        Registry(PhantomData)
    }

    /// Forgets `raw` (called from `dealloc_driver`); returns its reference, if recorded.
    fn remove(raw: *mut bindings::ib_device) -> Option<RegRef> {
        let mut list = DEVICES.lock();
        let pos = list.devices.iter().position(|d| d.0.as_ptr() == raw)?;
        list.devices.remove(pos).ok()
    }
}

impl<T: Driver> Drop for Registry<T> {
    fn drop(&mut self) {
        // Take `T`'s entries out one at a time under the lock, and unregister each without
        // it: `dealloc_driver` takes the lock too. Each entry is put exactly once: by us for
        // the ones we took, by `dealloc_driver` for the ones it removed first.
        loop {
            let taken = {
                let mut list = DEVICES.lock();
                match list.devices.iter().position(RegRef::is_of::<T>) {
                    Some(pos) => list.devices.remove(pos).ok(),
                    None => None,
                }
            };
            let Some(d) = taken else { break };
            d.unregister();
        }
        // The static is never dropped: give its buffer back once no driver has devices (the
        // last driver's module is about to unload).
        let mut list = DEVICES.lock();
        if list.devices.is_empty() {
            list.devices = KVec::new();
        }
    }
}

/// A registered device of some driver id, this module's or another's, found by netdev, with a
/// core reference (`ib_device_get_by_netdev`/`ib_device_put`).
///
/// # Invariants
///
/// Holds an `ib_device_put`-able reference on a registered device.
pub(crate) struct DeviceRef(NonNull<bindings::ib_device>);

// SAFETY: The reference may be put from any thread and context (`ib_device_put` only drops a
// count and completes); the device itself is shared with the RDMA core, which locks.
unsafe impl Send for DeviceRef {}
// SAFETY: `&DeviceRef` only reads the device's ops and dispatches events, both callable
// concurrently from any thread.
unsafe impl Sync for DeviceRef {}

impl DeviceRef {
    /// The device of driver id `id` on `netdev`, if any.
    pub(crate) fn find_by_netdev(netdev: &NetDev, id: DriverId) -> Option<Self> {
        // SAFETY: `netdev` is alive; the call returns a held reference or NULL.
        let raw = unsafe { bindings::ib_device_get_by_netdev(netdev.as_ptr(), id.0) };
        // INVARIANT: A non-null result carries a reference.
        NonNull::new(raw).map(Self)
    }

    /// Schedules unregistration (for callers that hold RTNL, like the netdev notifier).
    pub(crate) fn unregister_queued(&self) {
        // SAFETY: The device is registered and we hold a reference; the core takes its own
        // for the queued work.
        unsafe { bindings::ib_unregister_device_queued(self.0.as_ptr()) };
    }

    /// Reports a LID (here: address) change on port 1 to the device's consumers.
    pub(crate) fn dispatch_lid_change(&self) {
        // SAFETY: A registered device we hold a reference on.
        unsafe {
            dispatch_port_event(self.0.as_ptr(), bindings::ib_event_type_IB_EVENT_LID_CHANGE)
        };
    }

    /// Tells the core that the GID table of port 1 changed (`IB_EVENT_GID_CHANGE`): its GID
    /// cache reads the table again through `query_gid`.
    pub(crate) fn dispatch_gid_change(&self) {
        // SAFETY: A registered device we hold a reference on.
        unsafe {
            dispatch_port_event(self.0.as_ptr(), bindings::ib_event_type_IB_EVENT_GID_CHANGE)
        };
    }

    /// The device as driver `T`'s, if `T` made it (with [`Device::register`]), rather than
    /// another driver of its id.
    pub(crate) fn as_driver<T: Driver>(&self) -> Option<&Device<T>> {
        // SAFETY: By the type invariant the device is registered and its ops are set.
        let dealloc = unsafe { (*self.0.as_ptr()).ops.dealloc_driver };
        // Each driver type has its own `dealloc_driver` (the adapter is generic over it).
        let ours = Adapter::<T>::dealloc_driver as unsafe extern "C" fn(_) as usize;
        if dealloc.map(|f| f as usize) != Some(ours) {
            return None;
        }
        // SAFETY: `T` registered this device, so it is the `ib` of a `Device<T>` whose data is
        // initialised; our reference keeps it registered (unregistration waits for it), so
        // the data lives as long as the borrow of `self`.
        Some(unsafe { Device::<T>::from_raw(self.0.as_ptr()) })
    }
}

/// Dispatches `event` for port 1 of `ib`.
///
/// # Safety
///
/// `ib` is a registered device, kept so for the call.
unsafe fn dispatch_port_event(ib: *mut bindings::ib_device, event: bindings::ib_event_type) {
    let mut ev: bindings::ib_event = pin_init::zeroed();
    ev.device = ib;
    ev.element.port_num = 1;
    ev.event = event;
    // SAFETY: `ev` is a valid event for a registered device (the caller's guarantee).
    unsafe { bindings::ib_dispatch_event(&ev) };
}

impl Drop for DeviceRef {
    fn drop(&mut self) {
        // SAFETY: Drops the reference this value holds.
        unsafe { bindings::ib_device_put(self.0.as_ptr()) };
    }
}

/// Trampolines from `ib_device_ops` to [`Driver`], and the ops table.
pub(crate) struct Adapter<T: Driver>(PhantomData<T>);

impl<T: Driver> Adapter<T> {
    /// The ops table (`owner` is filled in at registration). Ops the driver leaves out stay
    /// NULL; the destroy op of an object the driver may create is always there, as it drops
    /// the object's data.
    const OPS: bindings::ib_device_ops = {
        let mut ops: bindings::ib_device_ops = pin_init::zeroed();
        ops.driver_id = T::DRIVER_ID.0;
        ops.uverbs_abi_ver = T::UVERBS_ABI_VER;
        ops.dealloc_driver = Some(Self::dealloc_driver);
        ops.query_device = Some(Self::query_device);
        ops.query_port = Some(Self::query_port);
        ops.get_port_immutable = Some(Self::get_port_immutable);
        if T::HAS_QUERY_GID {
            ops.query_gid = Some(Self::query_gid);
        }
        if T::HAS_QP_DETAILS {
            ops.fill_res_qp_entry = Some(Self::fill_res_qp_entry);
        }
        if T::HAS_PORT_COUNTERS {
            ops.alloc_hw_port_stats = Some(Self::alloc_hw_port_stats);
            ops.get_hw_stats = Some(Self::get_hw_stats);
        }
        if T::HAS_ALLOC_UCONTEXT {
            ops.alloc_ucontext = Some(Self::alloc_ucontext);
            ops.dealloc_ucontext = Some(Self::dealloc_ucontext);
            ops.size_ib_ucontext = core::mem::size_of::<UContext<T>>();
            ops.mmap = Some(mmap::mmap);
            ops.mmap_free = Some(mmap::mmap_free);
        }
        ops.alloc_pd = Some(Self::alloc_pd);
        ops.dealloc_pd = Some(Self::dealloc_pd);
        ops.size_ib_pd = core::mem::size_of::<Pd<T>>();
        ops.create_cq = Some(Self::create_cq);
        ops.destroy_cq = Some(Self::destroy_cq);
        ops.size_ib_cq = core::mem::size_of::<Cq<T>>();
        ops.poll_cq = Some(Self::poll_cq);
        ops.req_notify_cq = Some(Self::req_notify_cq);
        if T::HAS_CREATE_SRQ {
            ops.create_srq = Some(Self::create_srq);
            ops.destroy_srq = Some(Self::destroy_srq);
            ops.size_ib_srq = core::mem::size_of::<Srq<T>>();
        }
        if T::HAS_MODIFY_SRQ {
            ops.modify_srq = Some(Self::modify_srq);
        }
        if T::HAS_QUERY_SRQ {
            ops.query_srq = Some(Self::query_srq);
        }
        if T::HAS_POST_SRQ_RECV {
            ops.post_srq_recv = Some(Self::post_srq_recv);
        }
        ops.create_qp = Some(Self::create_qp);
        ops.modify_qp = Some(Self::modify_qp);
        if T::HAS_QUERY_QP {
            ops.query_qp = Some(Self::query_qp);
        }
        ops.destroy_qp = Some(Self::destroy_qp);
        ops.post_send = Some(Self::post_send);
        ops.post_recv = Some(Self::post_recv);
        ops.size_ib_qp = core::mem::size_of::<Qp<T>>();
        ops.reg_user_mr = Some(Self::reg_user_mr);
        ops.dereg_mr = Some(Self::dereg_mr);
        ops.get_dma_mr = Some(Self::get_dma_mr);
        if T::HAS_ALLOC_MR {
            ops.alloc_mr = Some(Self::alloc_mr);
            ops.map_mr_sg = Some(Self::map_mr_sg);
        }
        if T::HAS_IW_CONNECT {
            ops.iw_connect = Some(Self::iw_connect);
        }
        if T::HAS_IW_ACCEPT {
            ops.iw_accept = Some(Self::iw_accept);
        }
        if T::HAS_IW_REJECT {
            ops.iw_reject = Some(Self::iw_reject);
        }
        if T::HAS_IW_CREATE_LISTEN {
            ops.iw_create_listen = Some(Self::iw_create_listen);
        }
        if T::HAS_IW_DESTROY_LISTEN {
            ops.iw_destroy_listen = Some(Self::iw_destroy_listen);
        }
        if T::HAS_IW_GET_QP {
            ops.iw_get_qp = Some(Self::iw_get_qp);
        }
        if T::HAS_IW_ADD_REF {
            ops.iw_add_ref = Some(Self::iw_add_ref);
        }
        if T::HAS_IW_REM_REF {
            ops.iw_rem_ref = Some(Self::iw_rem_ref);
        }
        ops
    };

    /// # Safety
    ///
    /// Called by the core exactly once per device, last, before it frees the memory.
    pub(super) unsafe extern "C" fn dealloc_driver(ib: *mut bindings::ib_device) {
        // Drop the registry's reference, if the registry still held it (module unload
        // takes the references out first and drops them itself).
        drop(Registry::<T>::remove(ib));
        // SAFETY: By `Device<T>`'s invariants `data` is initialised until now; the core never
        // calls into the device again, so nothing can observe it after the drop.
        unsafe {
            let dev = ib.cast::<Device<T>>();
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*dev).data));
            core::ptr::drop_in_place(core::ptr::addr_of_mut!((*dev).counters));
        };
    }

    /// The `query_device` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.query_device` of a device of driver `T`,
    /// with the arguments that callback documents.
    unsafe extern "C" fn query_device(
        ib: *mut bindings::ib_device,
        attr: *mut bindings::ib_device_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            if !udata.is_null() {
                // SAFETY: `udata` is the command's valid udata.
                to_result(unsafe { bindings::ib_no_udata_io(udata) })?;
            }
            // SAFETY: The core calls device ops only on live devices with initialised data.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let a = T::query_device(dev)?;
            // SAFETY: `attr` points to a writable `ib_device_attr` the core zeroed.
            let out = unsafe { &mut *attr };
            out.sys_image_guid = a.sys_image_guid;
            out.max_mr_size = a.max_mr_size;
            out.page_size_cap = a.page_size_cap;
            out.vendor_id = a.vendor_id;
            out.vendor_part_id = a.vendor_part_id;
            out.max_qp = a.max_qp;
            out.max_qp_wr = a.max_qp_wr;
            out.device_cap_flags = a.device_cap_flags;
            out.kernel_cap_flags = a.kernel_cap_flags;
            out.max_send_sge = a.max_send_sge;
            out.max_recv_sge = a.max_recv_sge;
            out.max_sge_rd = a.max_sge_rd;
            out.max_cq = a.max_cq;
            out.max_cqe = a.max_cqe;
            out.max_mr = a.max_mr;
            out.max_pd = a.max_pd;
            out.max_qp_rd_atom = a.max_qp_rd_atom;
            out.max_res_rd_atom = a.max_res_rd_atom;
            out.max_qp_init_rd_atom = a.max_qp_init_rd_atom;
            let atomic = if a.atomic_glob {
                bindings::ib_atomic_cap_IB_ATOMIC_GLOB
            } else {
                bindings::ib_atomic_cap_IB_ATOMIC_NONE
            };
            out.atomic_cap = atomic;
            out.masked_atomic_cap = atomic;
            out.max_mw = a.max_mw;
            out.max_srq = a.max_srq;
            out.max_srq_wr = a.max_srq_wr;
            out.max_srq_sge = a.max_srq_sge;
            out.max_fast_reg_page_list_len = a.max_fast_reg_page_list_len;
            Ok(0)
        })
    }

    /// The `query_port` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.query_port` of a device of driver `T`,
    /// with the arguments that callback documents.
    unsafe extern "C" fn query_port(
        ib: *mut bindings::ib_device,
        port: u32,
        attr: *mut bindings::ib_port_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As in `query_device`.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let (speed, width) = dev.eth_speed(port)?;
            let a = T::query_port(dev, port)?;
            let mut out: bindings::ib_port_attr = pin_init::zeroed();
            out.active_speed = speed;
            out.active_width = width;
            out.state = match a.state {
                PortState::Active => bindings::ib_port_state_IB_PORT_ACTIVE,
                PortState::Down => bindings::ib_port_state_IB_PORT_DOWN,
            };
            out.phys_state = match a.state {
                PortState::Active => bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_LINK_UP,
                PortState::Down => bindings::ib_port_phys_state_IB_PORT_PHYS_STATE_DISABLED,
            } as u8;
            out.max_mtu = ib_mtu(a.max_mtu);
            out.active_mtu = ib_mtu(a.active_mtu);
            out.gid_tbl_len = a.gid_tbl_len;
            out.port_cap_flags = a.port_cap_flags;
            out.max_msg_sz = a.max_msg_sz;
            // SAFETY: `attr` points to a writable `ib_port_attr`.
            unsafe { attr.write(out) };
            Ok(0)
        })
    }

    /// The `alloc_hw_port_stats` callback: a stats struct over the device's descriptors.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.alloc_hw_port_stats` of a device of
    /// driver `T`, with the arguments that callback documents.
    unsafe extern "C" fn alloc_hw_port_stats(
        ib: *mut bindings::ib_device,
        _port: u32,
    ) -> *mut bindings::rdma_hw_stats {
        // SAFETY: As in `query_device`.
        let dev = unsafe { Device::<T>::from_raw(ib) };
        let Ok(n) = c_int::try_from(dev.counters.len()) else {
            return core::ptr::null_mut();
        };
        // The descriptors stay allocated until `dealloc_driver`, after unregistration: the
        // core reads no stats struct of the device after that (it only frees them).
        // SAFETY: `counters` holds `n` descriptors, each naming a `'static` string.
        unsafe {
            bindings::rdma_alloc_hw_stats_struct(
                dev.counters.as_ptr(),
                n,
                bindings::RDMA_HW_STATS_DEFAULT_LIFESPAN as usize,
            )
        }
    }

    /// The `get_hw_stats` callback: every counter of port `port`.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.get_hw_stats` of a device of driver
    /// `T`, with a stats struct that `alloc_hw_port_stats` made, under its lock.
    unsafe extern "C" fn get_hw_stats(
        ib: *mut bindings::ib_device,
        stats: *mut bindings::rdma_hw_stats,
        port: u32,
        _index: c_int,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As in `query_device`.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            if stats.is_null() || port == 0 {
                return Err(EINVAL);
            }
            // SAFETY: `stats` is a live stats struct of `alloc_hw_port_stats` (above).
            let num = unsafe { (*stats).num_counters };
            let n = usize::try_from(num)
                .map_err(|_| EINVAL)?
                .min(dev.counters.len());
            // SAFETY: The struct has `num_counters >= n` values behind it, and the core holds
            // its lock, so nothing else writes them during the call.
            let values = unsafe {
                core::slice::from_raw_parts_mut(
                    core::ptr::addr_of_mut!((*stats).value).cast::<u64>(),
                    n,
                )
            };
            T::port_counters(dev, port, values)?;
            Ok(c_int::try_from(n).unwrap_or(0))
        })
    }

    /// The `get_port_immutable` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.get_port_immutable` of a device of driver `T`,
    /// with the arguments that callback documents.
    unsafe extern "C" fn get_port_immutable(
        ib: *mut bindings::ib_device,
        port: u32,
        imm: *mut bindings::ib_port_immutable,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As in `query_device`.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let p = T::port_immutable(dev, port)?;
            // SAFETY: `imm` points to a writable `ib_port_immutable`.
            let out = unsafe { &mut *imm };
            out.gid_tbl_len = p.gid_tbl_len;
            out.core_cap_flags = p.core_cap_flags;
            Ok(0)
        })
    }

    /// The `query_gid` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.query_gid` of a device of driver `T`,
    /// with the arguments that callback documents.
    unsafe extern "C" fn query_gid(
        ib: *mut bindings::ib_device,
        port: u32,
        index: c_int,
        gid: *mut bindings::ib_gid,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As in `query_device`.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let raw = T::query_gid(dev, port, index)?;
            // SAFETY: `gid` points to a writable 16-byte `union ib_gid`.
            unsafe { (*gid).raw = raw };
            Ok(0)
        })
    }

    /// The `alloc_ucontext` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.alloc_ucontext` of a device of driver `T`,
    /// with the arguments that callback documents.
    unsafe extern "C" fn alloc_ucontext(
        uctx: *mut bindings::ib_ucontext,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: `udata` is the GET_CONTEXT command's udata.
            let mut udata = unsafe { Udata::from_raw(udata) }.ok_or(EINVAL)?;
            // SAFETY: The core sets `device` before calling `alloc_ucontext`.
            let dev = unsafe { Device::<T>::from_raw((*uctx).device) };
            let init = T::alloc_ucontext(dev, &mut udata)?;
            // SAFETY: A fresh `size_ib_ucontext` allocation; dropped in `dealloc_ucontext`.
            unsafe { UContext::<T>::init(uctx, init) }?;
            Ok(0)
        })
    }

    /// The `dealloc_ucontext` callback.
    ///
    /// # Safety
    ///
    /// Called only by the RDMA core, as `ib_device_ops.dealloc_ucontext` of a device of driver `T`,
    /// with the arguments that callback documents.
    unsafe extern "C" fn dealloc_ucontext(uctx: *mut bindings::ib_ucontext) {
        // SAFETY: `alloc_ucontext` succeeded for `uctx`; this is its last callback, after
        // every object of the context was destroyed.
        unsafe {
            let dev = Device::<T>::from_raw((*uctx).device);
            T::dealloc_ucontext(dev, UContext::<T>::from_raw(uctx).data());
            UContext::<T>::drop_data(uctx);
        }
    }
}

/// The `enum ib_mtu` for an MTU in bytes (`ib_mtu_int_to_enum`: the largest IB MTU that fits).
pub(super) fn ib_mtu(mtu: u32) -> bindings::ib_mtu {
    let mtu = c_int::try_from(mtu).unwrap_or(c_int::MAX);
    // SAFETY: A pure function of its argument.
    let e = unsafe { bindings::ib_mtu_int_to_enum(mtu) };
    // The result is one of the positive `IB_MTU_*` values.
    e as bindings::ib_mtu
}
