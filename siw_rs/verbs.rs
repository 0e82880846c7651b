// SPDX-License-Identifier: GPL-2.0

//! The verbs dispatcher: siw_rs's `#[vtable] impl` of the RDMA layer's driver trait. Each op
//! hands over to the object it concerns; the logic is in those modules.

use crate::{
    cq::SiwCq,
    device::{
        Siw,
        SiwDev,
        SiwUContext, //
    },
    glue::{
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
                DriverId,
                PortAttr,
                PortImmutable, //
            },
            object::{
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
        },
        siw_abi,
    },
    mr::SiwMr,
    pd::SiwPd,
    qp::SiwQp,
    srq::SiwSrq,
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

/// How completions name `qp`.
fn qp_ids(qp: &Qp<Siw>) -> crate::qp::QpIds {
    crate::qp::QpIds {
        qpn: qp.qp_num(),
        handle: Some(qp.kernel_handle()),
    }
}

#[vtable]
impl ibdev::Driver for Siw {
    type Module = crate::SiwRs;
    const PORT_COUNTERS: &'static [&'static CStr] = crate::stats::NAMES;
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
        Ok(dev.data().attr())
    }

    fn query_port(dev: &Device<Self>, _port: u32) -> Result<PortAttr> {
        dev.with_netdev(SiwDev::port_attr)
    }

    fn port_immutable(dev: &Device<Self>, port: u32) -> Result<PortImmutable> {
        let attr = Self::query_port(dev, port)?;
        Ok(PortImmutable {
            gid_tbl_len: attr.gid_tbl_len,
            core_cap_flags: ibdev::CORE_PORT_IWARP,
        })
    }

    fn qp_details(qp: &Qp<Self>, out: &mut ResDetails<'_>) -> Result {
        qp.data().details(out)
    }

    fn port_counters(dev: &Device<Self>, _port: u32, out: &mut [u64]) -> Result {
        dev.data().tables.counters(out);
        Ok(())
    }

    fn query_gid(dev: &Device<Self>, _port: u32, index: i32) -> Result<[u8; 16]> {
        Ok(dev.data().gid(index))
    }

    fn alloc_ucontext(
        dev: &Device<Self>,
        udata: &mut Udata,
    ) -> Result<impl PinInit<SiwUContext, Error>> {
        Ok(Ok::<_, Error>(SiwUContext::new(dev.data(), udata)?))
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
        qp.data().modify(qp.device::<Self>(), attr)
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

    fn alloc_mr(pd: &Pd<Self>, max_pages: u32) -> Result<(SiwMr, MrKeys)> {
        SiwMr::fast(pd.device::<Self>().data(), pd.id(), max_pages)
    }

    fn map_mr_sg(mr: &SiwMr, map: MrMap<'_, Self>) -> Result<usize> {
        mr.map_sg(map)
    }

    fn set_page(mr: &SiwMr, page: MappedPage) -> Result {
        mr.set_page(page)
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
