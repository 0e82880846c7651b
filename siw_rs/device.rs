// SPDX-License-Identifier: GPL-2.0

//! The siw device: identity, attributes and ports, as the C siw reports them.
//!
//! C reference: `drivers/infiniband/sw/siw/siw_main.c` and `siw_verbs.c`. Every value here
//! equals the C siw's, so that `ibv_devinfo` cannot tell the two apart and libsiw works
//! unmodified. This is the driver's vocabulary (the device type, its data, its limits);
//! [`crate::verbs`] dispatches the RDMA core's ops to the objects.

use crate::{
    gid::{
        Gids,
        GID_TBL_LEN, //
    },
    glue::{
        net::netdev::{
            self,
            Event,
            LinkType,
            NetDev,
            ETH_ALEN, //
        },
        rdma::{
            device::{
                self as ibdev,
                Device,
                DeviceAttr,
                DeviceInfo,
                DeviceRef,
                NodeType,
                PortAttr,
                PortState, //
            },
            link::Link,
            object::Udata,
        },
        siw_abi::{
            self,
            UrespAllocCtx, //
        },
    },
    limit::{
        Counted,
        Counts,
        Kind, //
    },
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
pub(crate) const MAX_IRD: u32 = 128;
/// `SIW_MAX_SGE`: the one limit on scatter/gather elements, of work requests and queue
/// elements alike.
pub(crate) const MAX_SGE: u32 = siw_abi::MAX_SGE as u32;
/// `SIW_MAX_SGE_RD`: an iWARP Read sink is one SGE.
const MAX_SGE_RD: u32 = 1;
/// `SIW_MAX_SGE_PBL`.
pub(crate) const MAX_SGE_PBL: u32 = 256;
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

/// The link variant of `type siw_rs` (and `type siw`): connections over TCP with MPA.
pub(crate) const LINK_TCP: u8 = 0;
/// The link variant of `type siw_rs_sctp` ([`SCTP_LINK_TYPE`]): DDP over SCTP.
pub(crate) const LINK_SCTP: u8 = 1;
/// The link type of devices whose connections run over SCTP (RFC 5043).
pub(crate) const SCTP_LINK_TYPE: &CStr = c"siw_rs_sctp";

/// The lower layer under DDP on a device's connections, chosen per device by its link type.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Llp {
    /// TCP with MPA framing (RFC 5044): what the C siw speaks.
    Mpa,
    /// SCTP, one association per connection (RFC 5043).
    Sctp,
}

/// Per-device state.
pub(crate) struct SiwDev {
    /// The netdev's MAC (or a random one): the node GUID, and GID 0 (bytes 0..6).
    raw_gid: [u8; ETH_ALEN],
    /// The port's GID table and the listeners of connections made by `modify_qp`.
    pub(crate) gids: Arc<Gids>,
    /// The netdev's identity ([`NetDev::id`]), to find the device from its netdev even while
    /// the device is being unregistered.
    netdev: usize,
    /// `vendor_part_id`.
    part_id: u32,
    /// Object counts, against the device limits.
    pub(crate) counts: Arc<Counts>,
    /// QP and MR lookup.
    pub(crate) tables: Arc<crate::table::Tables>,
    /// The lower layer of its connections.
    pub(crate) llp: Llp,
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

    fn newlink(name: &CStr, netdev: &NetDev, variant: u8) -> Result {
        // The C siw accepts these link types (`siw_dev_qualified`), loopback included.
        match netdev.link_type() {
            LinkType::Ether | LinkType::Ieee802 | LinkType::None | LinkType::Loopback => {}
            LinkType::Other(t) => {
                pr_err!(
                    "cannot attach to a netdev of link type {} (ARPHRD_*); \
                     supported: Ethernet, IEEE 802, none, loopback\n",
                    t
                );
                return Err(EINVAL);
            }
        }
        let raw_gid = netdev.hw_addr().unwrap_or_else(netdev::random_mac);
        let tables = crate::table::Tables::new(name)?;
        let llp = if variant == LINK_SCTP {
            Llp::Sctp
        } else {
            Llp::Mpa
        };
        let data = SiwDev {
            raw_gid,
            gids: Gids::new(mac_gid(&raw_gid), netdev, tables.clone(), llp == Llp::Mpa)?,
            netdev: netdev.id(),
            part_id: NEXT_PART_ID.fetch_add(1, Ordering::Relaxed),
            counts: Arc::new(Counts::default(), GFP_KERNEL)?,
            tables,
            llp,
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
                pr_err!("{:?} already has a siw device\n", name);
            }
        })?;
        // An address that came while the device registered told no one: read them again.
        <Siw as netdev::AddrNotifier>::addr_changed(netdev);
        Ok(())
    }
}

impl netdev::Notifier for Siw {
    fn event(event: Event, dev: &NetDev) {
        if event == Event::Unregister {
            // The listeners go now, under RTNL: a netdev leaving a namespace that is being
            // torn down takes the namespace's TCP with it right after. Found in the module's
            // own list, as the device may be in its own unregistration already (`rdma link
            // delete`), where the core no longer finds it by netdev.
            let id = dev.id();
            let gids = Device::<Siw>::find_ours(|d| {
                let data: &SiwDev = d.data();
                (data.netdev == id).then(|| data.gids.clone())
            });
            if let Some(g) = gids {
                g.shutdown();
            }
        }
        if event == Event::Other {
            return;
        }
        let Some(sdev) = DeviceRef::find_by_netdev(dev, siw_abi::DRIVER_ID) else {
            return;
        };
        // A C siw device on this netdev is the C siw's business.
        if sdev.as_driver::<Siw>().is_none() {
            return;
        }
        match event {
            Event::Unregister => sdev.unregister_queued(),
            Event::ChangeAddr => sdev.dispatch_lid_change(),
            Event::Other => {}
        }
    }
}

impl netdev::AddrNotifier for Siw {
    fn addr_changed(dev: &NetDev) {
        let Some(sdev) = DeviceRef::find_by_netdev(dev, siw_abi::DRIVER_ID) else {
            return;
        };
        let Some(gids) = sdev.as_driver::<Siw>().map(|d| d.data().gids.clone()) else {
            return;
        };
        // The clone goes to the refresh work: this call never drops the last reference.
        Gids::changed(gids, sdev);
    }
}

/// GID 0: the MAC in bytes 0..6, the rest zero, as in the C siw.
fn mac_gid(mac: &[u8; ETH_ALEN]) -> [u8; 16] {
    let mut gid = [0u8; 16];
    gid[..ETH_ALEN].copy_from_slice(mac);
    gid
}

impl SiwDev {
    /// The device attributes (`query_device`), the C siw's.
    pub(crate) fn attr(&self) -> DeviceAttr {
        DeviceAttr {
            // None, though kernel consumers get RFC 7306 atomics where both ends agreed
            // (`rfc7306`): these attributes reach user space too (the legacy query copies
            // what registration stored), and libsiw cannot post an atomic.
            atomic_glob: false,
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
            vendor_part_id: self.part_id,
            sys_image_guid: u64::from_ne_bytes(eui64_of_mac(&self.raw_gid)),
        }
    }

    /// The attributes of the port on `nd` (`query_port`).
    pub(crate) fn port_attr(nd: &NetDev) -> PortAttr {
        PortAttr {
            state: if nd.port_active() {
                PortState::Active
            } else {
                PortState::Down
            },
            max_mtu: nd.max_mtu(),
            active_mtu: nd.mtu(),
            gid_tbl_len: GID_TBL_LEN as i32,
            port_cap_flags: ibdev::PORT_CM_SUP | ibdev::PORT_DEVICE_MGMT_SUP,
            max_msg_sz: u32::MAX,
        }
    }

    /// GID `index` of the port: 0 is the C siw's (the MAC), the others the netdev's
    /// addresses (see [`crate::gid`]); all zero for an empty or unknown entry.
    pub(crate) fn gid(&self, index: i32) -> [u8; 16] {
        usize::try_from(index).map_or([0; 16], |i| self.gids.gid(i))
    }
}

impl SiwUContext {
    /// A process opens the device: counted against `MAX_CONTEXT`; the response names the
    /// device.
    pub(crate) fn new(dev: &SiwDev, udata: &mut Udata) -> Result<Self> {
        let count = Counted::new(&dev.counts, Kind::Ctx, MAX_CONTEXT)?;
        udata.respond(&UrespAllocCtx {
            dev_id: dev.part_id,
            pad: 0,
        })?;
        Ok(Self { _count: count })
    }
}
