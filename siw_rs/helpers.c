// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for siw_rs: static inline functions and macros, wrapped so Rust can call them.
 * Each one does exactly what its name says; every decision is made in Rust.
 */
#include <linux/netdevice.h>
#include <linux/etherdevice.h>
#include <linux/cpumask.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>
#include <rdma/ib_umem.h>
#include <rdma/uverbs_ioctl.h>
#include <linux/net.h>
#include <linux/crc32c.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <net/ipv6.h>
#include <linux/namei.h>
#include <linux/inetdevice.h>
#include <net/addrconf.h>
#include <net/if_inet6.h>

#include "siw_rs_helpers.h"

/* RDMA core --------------------------------------------------------------------------------- */

struct ib_device *siw_rs_ib_alloc_device(size_t size)
{
	return _ib_alloc_device(size, &init_net);
}

/* Whether /sys/module/NAME exists: the module NAME is loaded (or built in with parameters). */
bool siw_rs_module_present(const char *name)
{
	char buf[64];
	struct path path;

	if (snprintf(buf, sizeof(buf), "/sys/module/%s", name) >= sizeof(buf))
		return false;
	if (kern_path(buf, LOOKUP_FOLLOW, &path))
		return false;
	path_put(&path);
	return true;
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

void siw_rs_get_ib_device(struct ib_device *ibdev)
{
	get_device(&ibdev->dev);
}

void siw_rs_put_ib_device(struct ib_device *ibdev)
{
	put_device(&ibdev->dev);
}

bool siw_rs_ib_device_try_get(struct ib_device *dev)
{
	return ib_device_try_get(dev);
}

void siw_rs_ib_mark_name_assigned_by_user(struct ib_device *ibdev)
{
	ib_mark_name_assigned_by_user(ibdev);
}

struct ib_ucontext *siw_rs_udata_to_ucontext(struct ib_udata *udata)
{
	return rdma_udata_to_uverbs_attr_bundle(udata)->context;
}

struct ib_udata *siw_rs_attrs_to_udata(struct uverbs_attr_bundle *attrs)
{
	return &attrs->driver_udata;
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

struct ib_umem *siw_rs_ib_umem_get_va(struct ib_device *dev, unsigned long addr, size_t size,
				      int access)
{
	return ib_umem_get_va(dev, addr, size, access);
}

unsigned long siw_rs_umem_offset(struct ib_umem *umem)
{
	return ib_umem_offset(umem);
}

size_t siw_rs_umem_num_pages(struct ib_umem *umem)
{
	return ib_umem_num_pages(umem);
}

/* for_each_sgtable_page(): the first @n pages of @umem into @out; returns how many. */
size_t siw_rs_umem_pages(struct ib_umem *umem, struct page **out, size_t n)
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

/* Memory -------------------------------------------------------------------------------------- */

void *siw_rs_vmalloc_user(unsigned long size)
{
	return vmalloc_user(size);
}

void *siw_rs_vzalloc(unsigned long size)
{
	return vzalloc(size);
}

void *siw_rs_page_address(struct page *page)
{
	return page_address(page);
}

struct page *siw_rs_virt_to_page(const void *addr)
{
	return virt_to_page(addr);
}

bool siw_rs_virt_addr_valid(const void *addr)
{
	return virt_addr_valid(addr);
}

bool siw_rs_sendpage_ok(struct page *page)
{
	return sendpage_ok(page);
}

u32 siw_rs_crc32c(u32 crc, const void *p, size_t len)
{
	return crc32c(crc, p, len);
}

unsigned int siw_rs_num_possible_cpus(void)
{
	return num_possible_cpus();
}

struct workqueue_struct *siw_rs_wq_alloc(const char *name)
{
	return alloc_workqueue("%s", WQ_UNBOUND | WQ_MEM_RECLAIM, 0, name);
}

void siw_rs_wq_destroy(struct workqueue_struct *wq)
{
	destroy_workqueue(wq);
}

bool siw_rs_cancel_delayed_work(struct work_struct *work)
{
	return cancel_delayed_work(to_delayed_work(work));
}

/* Network devices ------------------------------------------------------------------------------ */

struct net_device *siw_rs_netdev_notifier_info_to_dev(void *info)
{
	return netdev_notifier_info_to_dev(info);
}

void siw_rs_eth_random_addr(u8 *addr)
{
	eth_random_addr(addr);
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

struct net *siw_rs_dev_net(const struct net_device *ndev)
{
	return dev_net(ndev);
}

int siw_rs_netdev_ifindex(const struct net_device *ndev)
{
	return ndev->ifindex;
}

struct net_device *siw_rs_inetaddr_dev(void *ifa)
{
	return ((struct in_ifaddr *)ifa)->ifa_dev->dev;
}

struct net_device *siw_rs_inet6addr_dev(void *ifa)
{
	return ((struct inet6_ifaddr *)ifa)->idev->dev;
}

/*
 * Copies up to @max of @ndev's addresses to @out, IPv4 ones mapped into IPv6 (::ffff:a.b.c.d),
 * and returns how many: the address lists are walked with their own macros, under their own
 * locks. Addresses that failed duplicate address detection are left out.
 */
size_t siw_rs_netdev_ip_addrs(struct net_device *ndev, u8 (*out)[16], size_t max)
{
	const struct in_ifaddr *ifa;
	struct in_device *in_dev;
	struct in6_addr a;
	size_t n = 0;

	rcu_read_lock();
	in_dev = __in_dev_get_rcu(ndev);
	if (in_dev) {
		in_dev_for_each_ifa_rcu(ifa, in_dev) {
			if (n == max)
				break;
			ipv6_addr_set_v4mapped(ifa->ifa_local, &a);
			memcpy(out[n++], &a, sizeof(a));
		}
	}
	rcu_read_unlock();
#if IS_ENABLED(CONFIG_IPV6)
	{
		struct inet6_dev *idev = in6_dev_get(ndev);
		struct inet6_ifaddr *ifp;

		if (idev) {
			read_lock_bh(&idev->lock);
			list_for_each_entry(ifp, &idev->addr_list, if_list) {
				if (n == max)
					break;
				if (ifp->flags & IFA_F_DADFAILED)
					continue;
				memcpy(out[n++], &ifp->addr, sizeof(ifp->addr));
			}
			read_unlock_bh(&idev->lock);
			in6_dev_put(idev);
		}
	}
#endif
	return n;
}

/* Sockets -------------------------------------------------------------------------------------- */

#ifdef CONFIG_DEBUG_LOCK_ALLOC
static struct lock_class_key siw_rs_sk_key[2];
static struct lock_class_key siw_rs_slock_key[2];
#endif

/*
 * sock_lock_init_class_and_name(): the socket lock classes of RDMA sockets of the address
 * family of @s (their own, so that lockdep does not mix them up with user-space sockets).
 */
void siw_rs_sock_set_rdma_lock_class(struct socket *s)
{
#ifdef CONFIG_DEBUG_LOCK_ALLOC
	struct sock *sk = s->sk;

	if (WARN_ON_ONCE(!sock_allow_reclassification(sk)))
		return;
	if (sk->sk_family == AF_INET)
		sock_lock_init_class_and_name(sk, "slock-AF_INET-RDMA-SIW_RS", &siw_rs_slock_key[0],
					      "sk_lock-AF_INET-RDMA-SIW_RS", &siw_rs_sk_key[0]);
	else
		sock_lock_init_class_and_name(sk, "slock-AF_INET6-RDMA-SIW_RS", &siw_rs_slock_key[1],
					      "sk_lock-AF_INET6-RDMA-SIW_RS", &siw_rs_sk_key[1]);
#endif
}

int siw_rs_ip6_sock_set_v6only(struct sock *sk)
{
	return ip6_sock_set_v6only(sk);
}

struct net *siw_rs_sock_net(const struct sock *sk)
{
	return sock_net(sk);
}

void siw_rs_lock_sock(struct sock *sk)
{
	lock_sock(sk);
}

void siw_rs_read_lock_bh(rwlock_t *lock)
{
	read_lock_bh(lock);
}

void siw_rs_read_unlock_bh(rwlock_t *lock)
{
	read_unlock_bh(lock);
}

void siw_rs_write_lock_bh(rwlock_t *lock)
{
	write_lock_bh(lock);
}

void siw_rs_write_unlock_bh(rwlock_t *lock)
{
	write_unlock_bh(lock);
}

unsigned int siw_rs_tcp_mss(struct sock *sk)
{
	return tcp_sk(sk)->mss_cache;
}

/* Bytes written but not acknowledged by the peer yet (SIOCOUTQ, read as tcp_ioctl does). */
u32 siw_rs_tcp_unacked(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);

	return READ_ONCE(tp->write_seq) - READ_ONCE(tp->snd_una);
}

/*
 * Fields of struct sock, whose layout bindgen does not reproduce (it comes out 64 bytes
 * short before sk_callback_lock), so Rust never touches the struct directly.
 */
rwlock_t *siw_rs_sk_callback_lock(struct sock *sk)
{
	return &sk->sk_callback_lock;
}

void *siw_rs_sk_user_data(const struct sock *sk)
{
	return sk->sk_user_data;
}

void siw_rs_sk_set_user_data(struct sock *sk, void *data)
{
	sk->sk_user_data = data;
}

void siw_rs_sk_callbacks(const struct sock *sk, struct siw_rs_sk_callbacks *cb)
{
	cb->data_ready = sk->sk_data_ready;
	cb->write_space = sk->sk_write_space;
	cb->state_change = sk->sk_state_change;
}

void siw_rs_sk_set_callbacks(struct sock *sk, const struct siw_rs_sk_callbacks *cb)
{
	sk->sk_data_ready = cb->data_ready;
	sk->sk_write_space = cb->write_space;
	sk->sk_state_change = cb->state_change;
}

int siw_rs_sk_err(const struct sock *sk)
{
	return READ_ONCE(sk->sk_err);
}

int siw_rs_sk_state(const struct sock *sk)
{
	return READ_ONCE(sk->sk_state);
}

/* Makes @sk hold a reference on its namespace, if it does not (a socket accepted from a
 * kernel listener); false if the namespace is already going away. */
bool siw_rs_sk_hold_net(struct sock *sk)
{
	struct net *net = sock_net(sk);

	if (sk->sk_net_refcnt)
		return true;
	if (!maybe_get_net(net))
		return false;
	sk_net_refcnt_upgrade(sk);
	put_net(net);
	return true;
}

/* A reference on @net, unless it is already going away (maybe_get_net). */
bool siw_rs_maybe_get_net(struct net *net)
{
	return maybe_get_net(net) != NULL;
}

void siw_rs_put_net(struct net *net)
{
	put_net(net);
}

void siw_rs_sk_set_bound_dev_if(struct sock *sk, int ifindex)
{
	sk->sk_bound_dev_if = ifindex;
}

/* The layout check (siw_rs/glue/layout.rs) ------------------------------------------------- */

#include <linux/uio.h>
#include <rdma/iw_cm.h>

#define SIW_RS_SIZE(t) sizeof(t),
#define SIW_RS_OFFSET(t, f) offsetof(t, f),
static const unsigned long siw_rs_c_layout[] = {
#include "siw_rs_layout.h"
};
#undef SIW_RS_SIZE
#undef SIW_RS_OFFSET

/* Entry @i of the C side of the layout list; ~0UL past its end. */
unsigned long siw_rs_layout(unsigned int i)
{
	return i < ARRAY_SIZE(siw_rs_c_layout) ? siw_rs_c_layout[i] : ~0UL;
}
