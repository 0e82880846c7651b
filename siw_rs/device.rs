// SPDX-License-Identifier: GPL-2.0

//! The siw device: identity, attributes and ports, as the C siw reports them.
//!
//! C reference: `drivers/infiniband/sw/siw/siw_main.c` and `siw_verbs.c`. Every value here
//! equals the C siw's, so that `ibv_devinfo` cannot tell the two apart and libsiw works
//! unmodified; the `#[vtable] impl` below is safe code over the glue in [`crate::ib`].

use crate::glue::{
    net::netdev::{
        self,
        Event,
        LinkType,
        NetDev,
        ETH_ALEN, //
    },
    rdma::{
        cm::{
            CmId,
            ConnParam,
            QpHandle,
            RequestCookie, //
        },
        device::{
            self as ibdev,
            Device,
            DeviceAttr,
            DeviceInfo,
            DeviceRef,
            DriverId,
            NodeType,
            PortAttr,
            PortImmutable,
            PortState, //
        },
        link::Link,
        object::{
            Udata,
            User, //
        },
        umem::KernelMem,
        verbs::{
            AccessFlags,
            Cq,
            CqNotify,
            MrKeys,
            Pd,
            Qp,
            QpInit,
            QpModify,
            QpQuery,
            RecvWrs,
            SendWrs,
            Srq,
            SrqAttr,
            SrqAttrMask,
            UserMr,
            Wc, //
        },
    },
    siw_abi::{
        self,
        UrespAllocCtx, //
    },
};
use crate::{
    cq::SiwCq,
    limit::{
        Counted,
        Counts,
        Kind, //
    },
    mr::SiwMr,
    pd::SiwPd,
    qp::SiwQp,
    srq::SiwSrq,
};
use core::sync::atomic::{
    AtomicU32,
    Ordering, //
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

/// `SIW_VENDOR_ID`: ASCII "bmt".
const VENDOR_ID: u32 = 0x626d74;
/// `SIW_NODE_DESC_COMMON`.
const NODE_DESC: &[u8] = b"Software iWARP stack";
/// `SIW_MAX_QP`.
pub(crate) const MAX_QP: u32 = 1024 * 100;
/// `SIW_MAX_QP_WR`.
pub(crate) const MAX_QP_WR: u32 = 1024 * 32;
/// `SIW_MAX_ORD_QP`.
const MAX_ORD: u32 = 128;
/// `SIW_MAX_IRD_QP`.
const MAX_IRD: u32 = 128;
/// `SIW_MAX_SGE`: the one limit on scatter/gather elements, of work requests and queue
/// elements alike.
pub(crate) const MAX_SGE: u32 = siw_abi::MAX_SGE as u32;
/// `SIW_MAX_SGE_RD`: an iWARP Read sink is one SGE.
const MAX_SGE_RD: u32 = 1;
/// `SIW_MAX_SGE_PBL`.
const MAX_SGE_PBL: u32 = 256;
/// `SIW_MAX_CQ`.
pub(crate) const MAX_CQ: u32 = 1024 * 100;
/// `SIW_MAX_CQE`.
pub(crate) const MAX_CQE: u32 = MAX_QP_WR * 100;
/// `SIW_MAX_MR`.
pub(crate) const MAX_MR: u32 = MAX_QP * 10;
/// `SIW_MAX_PD`.
pub(crate) const MAX_PD: u32 = MAX_QP;
/// `SIW_MAX_MW`: no memory windows.
const MAX_MW: u32 = 0;
/// `SIW_MAX_SRQ`.
pub(crate) const MAX_SRQ: u32 = MAX_QP;
/// `SIW_MAX_SRQ_WR`.
pub(crate) const MAX_SRQ_WR: u32 = MAX_QP_WR * 10;
/// `SIW_MAX_CONTEXT`: user contexts per device.
const MAX_CONTEXT: u32 = MAX_PD;
/// The page size the kernel was built with (`PAGE_SIZE`).
const PAGE_SIZE: u64 = kernel::page::PAGE_SIZE as u64;

/// Part ids are handed out per registered device, starting at 1, as in the C siw.
static NEXT_PART_ID: AtomicU32 = AtomicU32::new(1);

/// The siw_rs driver.
pub(crate) struct Siw;

/// Per-device state.
pub(crate) struct SiwDev {
    /// The GID: the netdev's MAC (or a random one), as bytes 0..6 of the GID.
    raw_gid: [u8; ETH_ALEN],
    /// `vendor_part_id`.
    part_id: u32,
    /// Object counts, against the device limits.
    pub(crate) counts: Arc<Counts>,
    /// QP and MR lookup.
    pub(crate) tables: Arc<crate::table::Tables>,
}

/// Per-process (user context) state.
pub(crate) struct SiwUContext {
    _count: Counted,
}

/// `addrconf_addr_eui48`: the modified EUI-64 of a MAC (RFC 4291 appendix A), in wire order.
fn eui64_of_mac(mac: &[u8; ETH_ALEN]) -> [u8; 8] {
    [
        mac[0] ^ 0x02,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ]
}

impl Link for Siw {
    const TYPE: &'static CStr = c"siw_rs";

    fn newlink(name: &CStr, netdev: &NetDev) -> Result {
        // The C siw accepts these link types (`siw_dev_qualified`), loopback included.
        match netdev.link_type() {
            LinkType::Ether | LinkType::Ieee802 | LinkType::None | LinkType::Loopback => {}
            LinkType::Other(t) => {
                pr_err!(
                    "siw_rs: cannot attach to a netdev of link type {} (ARPHRD_*); \
                     supported: Ethernet, IEEE 802, none, loopback\n",
                    t
                );
                return Err(EINVAL);
            }
        }
        let raw_gid = netdev.hw_addr().unwrap_or_else(netdev::random_mac);
        let data = SiwDev {
            raw_gid,
            part_id: NEXT_PART_ID.fetch_add(1, Ordering::Relaxed),
            counts: Arc::new(Counts::default(), GFP_KERNEL)?,
            tables: crate::table::Tables::new()?,
        };
        let info = DeviceInfo {
            node_guid: eui64_of_mac(&raw_gid),
            node_desc: NODE_DESC,
            netdev,
            node_type: NodeType::Rnic,
            // libsiw rings its send queue doorbell with POST_SEND.
            uverbs_post_send: true,
            // siw binds real kernel sockets: the iWARP port mapper must not map ports.
            iw_no_port_map: true,
        };
        Device::<Siw>::register(name, info, data).inspect_err(|e| {
            if *e == EEXIST {
                pr_err!("siw_rs: {:?} already has a siw device\n", name);
            }
        })
    }
}

impl netdev::Notifier for Siw {
    fn event(event: Event, dev: &NetDev) {
        if event == Event::Other {
            return;
        }
        let Some(sdev) = DeviceRef::find_by_netdev(dev, siw_abi::DRIVER_ID) else {
            return;
        };
        // A C siw device on this netdev is the C siw's business.
        if !sdev.is_ours() {
            return;
        }
        match event {
            Event::Unregister => sdev.unregister_queued(),
            Event::ChangeAddr => sdev.dispatch_lid_change(),
            Event::Other => {}
        }
    }
}

/// How completions name `qp`.
fn qp_ids(qp: &Qp<Siw>) -> crate::qp::QpIds {
    crate::qp::QpIds {
        qpn: qp.qp_num(),
        handle: qp.kernel_handle(),
    }
}

#[vtable]
impl ibdev::Driver for Siw {
    const DRIVER_ID: DriverId = siw_abi::DRIVER_ID;
    const UVERBS_ABI_VER: u32 = siw_abi::ABI_VERSION;

    type Data = SiwDev;
    type UContext = SiwUContext;
    type Pd = SiwPd;
    type Cq = SiwCq;
    type Srq = SiwSrq;
    type Qp = SiwQp;
    type Mr = SiwMr;
    type Listener = crate::cm::Ep;

    fn query_device(dev: &Device<Self>) -> Result<DeviceAttr> {
        let d = dev.data();
        Ok(DeviceAttr {
            // Revisit atomics if RFC 7306 gets supported.
            device_cap_flags: ibdev::DEVICE_MEM_MGT_EXTENSIONS,
            kernel_cap_flags: ibdev::KERNEL_ALLOW_USER_UNREG,
            max_cq: MAX_CQ,
            max_cqe: MAX_CQE,
            max_fast_reg_page_list_len: MAX_SGE_PBL,
            max_mr: MAX_MR,
            max_mw: MAX_MW,
            max_mr_size: u64::MAX,
            max_pd: MAX_PD,
            max_qp: MAX_QP,
            max_qp_init_rd_atom: MAX_IRD,
            max_qp_rd_atom: MAX_ORD,
            max_qp_wr: MAX_QP_WR,
            max_recv_sge: MAX_SGE,
            max_res_rd_atom: MAX_QP * MAX_IRD,
            max_send_sge: MAX_SGE,
            max_sge_rd: MAX_SGE_RD,
            max_srq: MAX_SRQ,
            max_srq_sge: MAX_SGE,
            max_srq_wr: MAX_SRQ_WR,
            page_size_cap: PAGE_SIZE,
            vendor_id: VENDOR_ID,
            vendor_part_id: d.part_id,
            sys_image_guid: u64::from_ne_bytes(eui64_of_mac(&d.raw_gid)),
        })
    }

    fn query_port(dev: &Device<Self>, _port: u32) -> Result<PortAttr> {
        dev.with_netdev(|nd| PortAttr {
            state: if nd.port_active() {
                PortState::Active
            } else {
                PortState::Down
            },
            max_mtu: nd.max_mtu(),
            active_mtu: nd.mtu(),
            gid_tbl_len: 1,
            port_cap_flags: ibdev::PORT_CM_SUP | ibdev::PORT_DEVICE_MGMT_SUP,
            max_msg_sz: u32::MAX,
        })
    }

    fn port_immutable(dev: &Device<Self>, port: u32) -> Result<PortImmutable> {
        let attr = Self::query_port(dev, port)?;
        Ok(PortImmutable {
            gid_tbl_len: attr.gid_tbl_len,
            core_cap_flags: ibdev::CORE_PORT_IWARP,
        })
    }

    fn query_gid(dev: &Device<Self>, _port: u32, _index: i32) -> Result<[u8; 16]> {
        // subnet_prefix == interface_id == 0 but for the MAC in bytes 0..6, as in the C siw.
        let mut gid = [0u8; 16];
        gid[..ETH_ALEN].copy_from_slice(&dev.data().raw_gid);
        Ok(gid)
    }

    fn alloc_ucontext(
        dev: &Device<Self>,
        udata: &mut Udata,
    ) -> Result<impl PinInit<SiwUContext, Error>> {
        let d = dev.data();
        let count = Counted::new(&d.counts, Kind::Ctx, MAX_CONTEXT)?;
        udata.respond(&UrespAllocCtx {
            dev_id: d.part_id,
            pad: 0,
        })?;
        Ok(Ok::<_, Error>(SiwUContext { _count: count }))
    }

    fn alloc_pd(dev: &Device<Self>) -> impl PinInit<SiwPd, Error> {
        SiwPd::new(dev.data())
    }

    fn create_cq(
        dev: &Device<Self>,
        cqe: i32,
        user: Option<&mut User<'_, Self>>,
    ) -> Result<(impl PinInit<SiwCq, Error>, i32)> {
        SiwCq::new(dev.data(), cqe, user)
    }

    fn create_srq(
        pd: &Pd<Self>,
        attr: &SrqAttr,
        user: Option<&mut User<'_, Self>>,
    ) -> Result<(impl PinInit<SiwSrq, Error>, SrqAttr)> {
        let (srq, out) = SiwSrq::new(pd.device::<Self>().data(), attr, user)?;
        Ok((Ok::<_, Error>(srq), out))
    }

    fn modify_srq(srq: &Srq<Self>, attr: &SrqAttr, mask: SrqAttrMask) -> Result {
        srq.data().modify(attr, mask)
    }

    fn query_srq(srq: &Srq<Self>) -> Result<SrqAttr> {
        Ok(srq.data().query())
    }

    fn create_qp(
        pd: &Pd<Self>,
        attr: &QpInit<'_, Self>,
        user: Option<&mut User<'_, Self>>,
    ) -> Result<(impl PinInit<SiwQp, Error>, u32)> {
        let (qp, qpn) = SiwQp::new(pd.device::<Self>().data(), pd.id(), attr, user)?;
        Ok((Ok::<_, Error>(qp), qpn))
    }

    fn qp_created(qp: &Qp<Self>) -> Result {
        qp.data().created(qp_ids(qp), qp.cm_handle())
    }

    fn modify_qp(qp: &Qp<Self>, attr: &QpModify) -> Result {
        qp.data().modify(attr)
    }

    fn query_qp(qp: &Qp<Self>) -> Result<QpQuery> {
        Ok(qp.data().query())
    }

    fn destroy_qp(qp: &Qp<Self>) {
        qp.data().destroy();
    }

    fn post_send(qp: &Qp<Self>, wrs: &mut SendWrs<'_>) -> Result {
        qp.data().post_send(wrs)
    }

    fn post_recv(qp: &Qp<Self>, wrs: &mut RecvWrs<'_>) -> Result {
        qp.data().post_recv(wrs)
    }

    fn post_srq_recv(srq: &Srq<Self>, wrs: &mut RecvWrs<'_>) -> Result {
        srq.data().post_recv(wrs)
    }

    fn reg_user_mr(
        pd: &Pd<Self>,
        mr: UserMr,
        user: Option<&mut User<'_, Self>>,
    ) -> Result<(SiwMr, MrKeys)> {
        SiwMr::new(pd.device::<Self>().data(), pd.id(), mr, user)
    }

    fn get_dma_mr(pd: &Pd<Self>, access: AccessFlags, mem: KernelMem) -> Result<(SiwMr, MrKeys)> {
        SiwMr::dma(pd.device::<Self>().data(), pd.id(), access, mem)
    }

    fn poll_cq(cq: &Cq<Self>, out: &mut [Wc]) -> usize {
        cq.data().poll(out)
    }

    fn req_notify_cq(cq: &Cq<Self>, notify: CqNotify) -> bool {
        cq.data().arm(notify)
    }

    fn iw_connect(dev: &Device<Self>, id: CmId, p: &ConnParam<'_>) -> Result {
        crate::cm::connect(dev, id, p)
    }

    fn iw_accept(dev: &Device<Self>, id: CmId, req: RequestCookie, p: &ConnParam<'_>) -> Result {
        crate::cm::accept(dev, id, req, p)
    }

    fn iw_reject(dev: &Device<Self>, req: RequestCookie, private_data: &[u8]) {
        crate::cm::reject(dev, req, private_data)
    }

    fn iw_create_listen(dev: &Device<Self>, id: CmId, backlog: i32) -> Result<Arc<crate::cm::Ep>> {
        crate::cm::listen(dev, id, backlog)
    }

    fn iw_destroy_listen(ep: Arc<crate::cm::Ep>) {
        crate::cm::destroy_listen(ep)
    }

    fn iw_get_qp(dev: &Device<Self>, qpn: u32) -> Option<QpHandle> {
        // Called under the connection manager's spinlock: no sleeping locks here.
        dev.data().tables.cm_handle(qpn)
    }

    fn iw_add_ref(qp: &Qp<Self>) {
        qp.data().core.cm_get();
    }

    fn iw_rem_ref(qp: &Qp<Self>) {
        qp.data().core.cm_put();
    }
}
