// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for siw_rs: static inline functions and macros, wrapped so Rust can call them.
 */
#include <linux/netdevice.h>
#include <linux/etherdevice.h>
#include <linux/cpumask.h>
#include <linux/vmalloc.h>
#include <net/addrconf.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/uverbs_ioctl.h>

#include "siw_rs_helpers.h"

struct ib_device *siw_rs_ib_alloc_device(size_t size)
{
	return _ib_alloc_device(size, &init_net);
}

struct net_device *siw_rs_netdev_notifier_info_to_dev(void *info)
{
	return netdev_notifier_info_to_dev(info);
}

void siw_rs_addrconf_addr_eui48(u8 *eui, const u8 *addr)
{
	addrconf_addr_eui48(eui, addr);
}

void siw_rs_eth_random_addr(u8 *addr)
{
	eth_random_addr(addr);
}

unsigned int siw_rs_num_possible_cpus(void)
{
	return num_possible_cpus();
}

int siw_rs_ib_mtu_int_to_enum(int mtu)
{
	return ib_mtu_int_to_enum(mtu);
}

int siw_rs_ib_get_curr_port_state(struct net_device *ndev)
{
	return ib_get_curr_port_state(ndev);
}

int siw_rs_ib_no_udata_io(struct ib_udata *udata)
{
	return ib_no_udata_io(udata);
}

unsigned short siw_rs_netdev_type(const struct net_device *ndev)
{
	return ndev->type;
}

unsigned int siw_rs_netdev_mtu(const struct net_device *ndev)
{
	return READ_ONCE(ndev->mtu);
}

void siw_rs_dev_put(struct net_device *ndev)
{
	dev_put(ndev);
}

void siw_rs_get_ib_device(struct ib_device *ibdev)
{
	get_device(&ibdev->dev);
}

void siw_rs_put_ib_device(struct ib_device *ibdev)
{
	put_device(&ibdev->dev);
}

unsigned long siw_rs_page_size(void)
{
	return PAGE_SIZE;
}

void siw_rs_ib_mark_name_assigned_by_user(struct ib_device *ibdev)
{
	ib_mark_name_assigned_by_user(ibdev);
}

void *siw_rs_vmalloc_user(unsigned long size)
{
	return vmalloc_user(size);
}

void *siw_rs_vzalloc(unsigned long size)
{
	return vzalloc(size);
}

unsigned int siw_rs_page_shift(void)
{
	return PAGE_SHIFT;
}

struct ib_ucontext *siw_rs_udata_to_ucontext(struct ib_udata *udata)
{
	return udata ? rdma_udata_to_uverbs_attr_bundle(udata)->context : NULL;
}

struct ib_udata *siw_rs_attrs_to_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

struct ib_umem *siw_rs_ib_umem_get_va(struct ib_device *dev, unsigned long addr, size_t size, int access)
{
	return ib_umem_get_va(dev, addr, size, access);
}

void siw_rs_cq_use(struct ib_cq *cq)
{
	atomic_inc(&cq->usecnt);
}

void siw_rs_cq_unuse(struct ib_cq *cq)
{
	atomic_dec(&cq->usecnt);
}

bool siw_rs_qp_is_kernel(struct ib_qp *qp)
{
	return rdma_is_kernel_res(&qp->res);
}
