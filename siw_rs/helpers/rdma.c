// SPDX-License-Identifier: GPL-2.0
/*
 * RDMA core helpers.
 *
 * As in rust/helpers/: each rust_helper_NAME wraps a static inline function or macro that
 * Rust cannot call, and the bindings name it NAME (siw_rs/gen-bindings.sh). Each does exactly
 * what its name says; every decision is made in Rust.
 */
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/uverbs_ioctl.h>
#include <net/netlink.h>
#include <linux/fdtable.h>

#include "siw_rs_helpers.h"

static int siw_rs_is_priv(const void *priv, struct file *f, unsigned int fd)
{
	return f->private_data == priv;
}

/*
 * In C because Rust reaches current->files only through the kernel crate's bindgen
 * struct task_struct, whose pid and files do not sit where C has them on the test kernel.
 */
bool siw_rs_current_holds(const void *priv)
{
	return iterate_fd(current->files, 0, siw_rs_is_priv, priv);
}

struct ib_device *rust_helper_ib_alloc_device(size_t size)
{
	return _ib_alloc_device(size, &init_net);
}

int rust_helper_ib_mtu_int_to_enum(int mtu)
{
	return ib_mtu_int_to_enum(mtu);
}

int rust_helper_ib_get_curr_port_state(struct net_device *ndev)
{
	return ib_get_curr_port_state(ndev);
}

int rust_helper_ib_no_udata_io(struct ib_udata *udata)
{
	return ib_no_udata_io(udata);
}

/* get_device()/put_device() on the struct device inside @ibdev (an anonymous union's). */
void rust_helper_ib_device_get_ref(struct ib_device *ibdev)
{
	get_device(&ibdev->dev);
}

void rust_helper_ib_device_put_ref(struct ib_device *ibdev)
{
	put_device(&ibdev->dev);
}

bool rust_helper_ib_device_try_get(struct ib_device *dev)
{
	return ib_device_try_get(dev);
}

void rust_helper_ib_mark_name_assigned_by_user(struct ib_device *ibdev)
{
	ib_mark_name_assigned_by_user(ibdev);
}

struct ib_ucontext *rust_helper_udata_to_ucontext(struct ib_udata *udata)
{
	return rdma_udata_to_uverbs_attr_bundle(udata)->context;
}

/* NULL for a kernel consumer's CQ: no bundle. */
struct ib_udata *rust_helper_attrs_to_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

void rust_helper_cq_use(struct ib_cq *cq)
{
	atomic_inc(&cq->usecnt);
}

void rust_helper_cq_unuse(struct ib_cq *cq)
{
	atomic_dec(&cq->usecnt);
}

bool rust_helper_qp_is_kernel(struct ib_qp *qp)
{
	return rdma_is_kernel_res(&qp->res);
}

struct ib_umem *rust_helper_ib_umem_get_va(struct ib_device *dev, unsigned long addr, size_t size,
				      int access)
{
	return ib_umem_get_va(dev, addr, size, access);
}

unsigned long rust_helper_ib_umem_offset(struct ib_umem *umem)
{
	return ib_umem_offset(umem);
}

size_t rust_helper_ib_umem_num_pages(struct ib_umem *umem)
{
	return ib_umem_num_pages(umem);
}

/* for_each_sgtable_page(): the first @n pages of @umem into @out; returns how many. */
size_t rust_helper_umem_pages(struct ib_umem *umem, struct page **out, size_t n)
{
	struct sg_page_iter it;
	size_t i = 0;

	for_each_sgtable_page(&umem->sgt_append.sgt, &it, 0) {
		if (i == n)
			break;
		out[i++] = sg_page_iter_page(&it);
	}
	return i;
}

struct nlattr *rust_helper_nla_nest_start_noflag(struct sk_buff *skb, int attrtype)
{
	return nla_nest_start_noflag(skb, attrtype);
}

int rust_helper_nla_nest_end(struct sk_buff *skb, struct nlattr *start)
{
	return nla_nest_end(skb, start);
}

void rust_helper_nla_nest_cancel(struct sk_buff *skb, struct nlattr *start)
{
	nla_nest_cancel(skb, start);
}
