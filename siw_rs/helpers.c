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
#include <rdma/iw_cm.h>
#include <linux/net.h>
#include <linux/crc32c.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <net/ipv6.h>

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

/* Sockets ------------------------------------------------------------------------------ */

#ifdef CONFIG_DEBUG_LOCK_ALLOC
/*
 * As the C siw does: give RDMA sockets their own lockdep class, so lockdep does not mix
 * them up with user-space sockets of the same family (false circular dependencies).
 */
static struct lock_class_key siw_rs_sk_key[2];
static struct lock_class_key siw_rs_slock_key[2];
#endif

static void siw_rs_reclassify(struct socket *s)
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

static int siw_rs_addr_len(const struct sockaddr_storage *a)
{
	return a->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

static int siw_rs_sock_new(struct iw_cm_id *id, const struct sockaddr_storage *laddr,
			   struct socket **out)
{
	struct socket *s;
	int rv;

	if (laddr->ss_family != AF_INET && laddr->ss_family != AF_INET6)
		return -EAFNOSUPPORT;
	rv = sock_create(laddr->ss_family, SOCK_STREAM, IPPROTO_TCP, &s);
	if (rv < 0)
		return rv;
	siw_rs_reclassify(s);
	sock_set_reuseaddr(s->sk);
	if (laddr->ss_family == AF_INET6 && id->afonly) {
		rv = ip6_sock_set_v6only(s->sk);
		if (rv)
			goto err;
	}
	*out = s;
	return 0;
err:
	sock_release(s);
	return rv;
}

int siw_rs_sock_listen(struct iw_cm_id *id, int backlog, struct socket **out)
{
	struct sockaddr_storage *laddr = &id->local_addr;
	struct net_device *ndev;
	struct socket *s;
	bool any;
	int rv;

	rv = siw_rs_sock_new(id, laddr, &s);
	if (rv)
		return rv;
	any = laddr->ss_family == AF_INET ?
		ipv4_is_zeronet(((struct sockaddr_in *)laddr)->sin_addr.s_addr) :
		ipv6_addr_any(&((struct sockaddr_in6 *)laddr)->sin6_addr);
	if (any) {
		/*
		 * A wildcard listen only serves this device's netdev (as the C siw). When
		 * that netdev lives in another network namespace than the listener, no
		 * connection can reach it from here: listen on nothing (return 1), rather
		 * than binding to whatever has the same ifindex in this namespace (which
		 * the C siw does, making wildcard listens across namespaces collide).
		 */
		ndev = ib_device_get_netdev(id->device, 1);
		if (!ndev) {
			rv = -ENODEV;
			goto err;
		}
		if (!net_eq(dev_net(ndev), sock_net(s->sk))) {
			dev_put(ndev);
			sock_release(s);
			*out = NULL;
			return 1;
		}
		s->sk->sk_bound_dev_if = ndev->ifindex;
		dev_put(ndev);
	}
	rv = kernel_bind(s, (struct sockaddr_unsized *)laddr, siw_rs_addr_len(laddr));
	if (rv)
		goto err;
	rv = kernel_listen(s, backlog);
	if (rv)
		goto err;
	*out = s;
	return 0;
err:
	sock_release(s);
	return rv;
}

int siw_rs_sock_connect(struct iw_cm_id *id, struct socket **out)
{
	struct sockaddr_storage *laddr = &id->m_local_addr, *raddr = &id->m_remote_addr;
	struct socket *s;
	int rv;

	if (laddr->ss_family != raddr->ss_family)
		return -EINVAL;
	rv = siw_rs_sock_new(id, laddr, &s);
	if (rv)
		return rv;
	rv = kernel_bind(s, (struct sockaddr_unsized *)laddr, siw_rs_addr_len(laddr));
	if (rv)
		goto err;
	rv = kernel_connect(s, (struct sockaddr_unsized *)raddr, siw_rs_addr_len(raddr), 0);
	if (rv)
		goto err;
	tcp_sock_set_nodelay(s->sk);
	*out = s;
	return 0;
err:
	sock_release(s);
	return rv;
}

static void siw_rs_sk_data_ready(struct sock *sk);

int siw_rs_sock_accept(struct socket *ls, struct socket **out)
{
	struct siw_rs_sk_ctx *lctx, saved = {};
	struct sock *nsk;
	int rv = kernel_accept(ls, out, O_NONBLOCK);

	if (rv)
		return rv;
	/*
	 * The new socket is a clone of the listener, our callbacks and sk_user_data
	 * included. Give it the listener's original callbacks and no owner, until
	 * siw_rs_sock_attach() makes the new connection its owner.
	 */
	nsk = (*out)->sk;
	read_lock_bh(&ls->sk->sk_callback_lock);
	lctx = ls->sk->sk_user_data;
	if (lctx)
		saved = *lctx;
	read_unlock_bh(&ls->sk->sk_callback_lock);
	write_lock_bh(&nsk->sk_callback_lock);
	if (nsk->sk_data_ready == siw_rs_sk_data_ready && lctx) {
		nsk->sk_data_ready = saved.saved_data_ready;
		nsk->sk_write_space = saved.saved_write_space;
		nsk->sk_state_change = saved.saved_state_change;
	}
	nsk->sk_user_data = NULL;
	write_unlock_bh(&nsk->sk_callback_lock);
	tcp_sock_set_nodelay(nsk);
	return 0;
}

static void siw_rs_sk_call(struct sock *sk, int what)
{
	struct siw_rs_sk_ctx *ctx;

	read_lock_bh(&sk->sk_callback_lock);
	ctx = sk->sk_user_data;
	if (ctx) {
		/*
		 * The original callbacks first: sk_stream_write_space() clears SOCK_NOSPACE.
		 * Run after our event, it could clear the bit that our (already woken) sender
		 * has just set on a new EAGAIN, and TCP would never call us again.
		 */
		if (what == SIW_RS_SK_DATA && ctx->saved_data_ready)
			ctx->saved_data_ready(sk);
		else if (what == SIW_RS_SK_WRITE && ctx->saved_write_space)
			ctx->saved_write_space(sk);
		else if (what == SIW_RS_SK_STATE && ctx->saved_state_change)
			ctx->saved_state_change(sk);
		ctx->event(ctx->data, what);
	}
	read_unlock_bh(&sk->sk_callback_lock);
}

static void siw_rs_sk_data_ready(struct sock *sk)
{
	siw_rs_sk_call(sk, SIW_RS_SK_DATA);
}

static void siw_rs_sk_write_space(struct sock *sk)
{
	siw_rs_sk_call(sk, SIW_RS_SK_WRITE);
}

static void siw_rs_sk_state_change(struct sock *sk)
{
	siw_rs_sk_call(sk, SIW_RS_SK_STATE);
}

void siw_rs_sock_attach(struct socket *s, struct siw_rs_sk_ctx *ctx)
{
	struct sock *sk = s->sk;

	write_lock_bh(&sk->sk_callback_lock);
	ctx->saved_data_ready = sk->sk_data_ready;
	ctx->saved_write_space = sk->sk_write_space;
	ctx->saved_state_change = sk->sk_state_change;
	sk->sk_user_data = ctx;
	sk->sk_data_ready = siw_rs_sk_data_ready;
	sk->sk_write_space = siw_rs_sk_write_space;
	sk->sk_state_change = siw_rs_sk_state_change;
	write_unlock_bh(&sk->sk_callback_lock);
}

void siw_rs_sock_detach(struct socket *s)
{
	struct sock *sk = s->sk;
	struct siw_rs_sk_ctx *ctx;

	write_lock_bh(&sk->sk_callback_lock);
	ctx = sk->sk_user_data;
	if (ctx) {
		sk->sk_data_ready = ctx->saved_data_ready;
		sk->sk_write_space = ctx->saved_write_space;
		sk->sk_state_change = ctx->saved_state_change;
		sk->sk_user_data = NULL;
	}
	write_unlock_bh(&sk->sk_callback_lock);
}

void siw_rs_sock_shutdown(struct socket *s)
{
	kernel_sock_shutdown(s, SHUT_RDWR);
}

void siw_rs_sock_release(struct socket *s)
{
	sock_release(s);
}

/* Most pieces one call takes (the Rust side's MAX_IOV). */
#define SIW_RS_MAX_PIECES 16

/* A page piece TCP may reference (otherwise it is copied; splicing slab memory WARNs). */
static bool siw_rs_spliceable(const struct siw_rs_piece *p)
{
	return p->page && sendpage_ok(p->page);
}

/*
 * Sends @n pieces as one stream: runs of page pieces are spliced (MSG_SPLICE_PAGES: TCP
 * takes page references instead of copying), the others copied, all under one socket lock.
 * Returns the bytes TCP took (short when its buffer filled), or -errno if it took none.
 */
int siw_rs_sock_send(struct socket *s, const struct siw_rs_piece *p, size_t n, bool block,
		     bool more)
{
	int flags = block ? 0 : MSG_DONTWAIT;
	struct bio_vec bv[SIW_RS_MAX_PIECES];
	struct kvec kv[SIW_RS_MAX_PIECES];
	struct sock *sk = s->sk;
	size_t i = 0, j;
	int done = 0, rv = 0;

	if (n > SIW_RS_MAX_PIECES)
		return -EINVAL;
	lock_sock(sk);
	while (i < n) {
		bool splice = siw_rs_spliceable(&p[i]);
		struct msghdr msg = { .msg_flags = flags };
		size_t len = 0;

		for (j = i; j < n && siw_rs_spliceable(&p[j]) == splice; j++) {
			if (splice)
				bvec_set_page(&bv[j - i], p[j].page, p[j].len,
					      offset_in_page(p[j].base));
			else
				kv[j - i] = (struct kvec){ (void *)p[j].base, p[j].len };
			len += p[j].len;
		}
		if (splice) {
			iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, bv, j - i, len);
			msg.msg_flags |= MSG_SPLICE_PAGES;
		} else {
			iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, kv, j - i, len);
		}
		msg.msg_flags |= (j < n || more) ? MSG_MORE : MSG_EOR;
		rv = tcp_sendmsg_locked(sk, &msg, len);
		if (rv <= 0)
			break;
		done += rv;
		if ((size_t)rv < len)
			break;
		i = j;
	}
	release_sock(sk);
	return done ? done : rv;
}

struct siw_rs_read {
	void *ctx;
	size_t (*feed)(void *ctx, const u8 *p, size_t len);
};

static int siw_rs_read_actor(read_descriptor_t *desc, struct sk_buff *skb, unsigned int off,
			     size_t len)
{
	struct siw_rs_read *r = desc->arg.data;
	struct skb_seq_state st;
	unsigned int done = 0;
	const u8 *p;
	size_t n, used;

	skb_prepare_seq_read(skb, off, off + len, &st);
	while ((n = skb_seq_read(done, &p, &st)) != 0) {
		used = r->feed(r->ctx, p, n);
		done += used;
		if (used < n) {
			/* The consumer stops here; the rest stays in the socket. */
			skb_abort_seq_read(&st);
			desc->count = 0;
			break;
		}
	}
	return done;
}

long siw_rs_sock_read(struct socket *s, void *ctx, size_t (*feed)(void *ctx, const u8 *p, size_t len))
{
	struct siw_rs_read r = { .ctx = ctx, .feed = feed };
	read_descriptor_t desc = { .arg.data = &r, .count = 1 };
	long rv;

	lock_sock(s->sk);
	rv = tcp_read_sock(s->sk, &desc, siw_rs_read_actor);
	release_sock(s->sk);
	return rv;
}

int siw_rs_sock_alive(struct socket *s)
{
	struct sock *sk = s->sk;
	int err = READ_ONCE(sk->sk_err);

	if (err)
		return -err;
	switch (READ_ONCE(sk->sk_state)) {
	case TCP_ESTABLISHED:
		return 1;
	case TCP_LISTEN:
	case TCP_SYN_SENT:
	case TCP_SYN_RECV:
		return 0;
	default:
		return -ECONNRESET;
	}
}

unsigned int siw_rs_sock_mss(struct socket *s)
{
	return tcp_sk(s->sk)->mss_cache;
}

/* iw_cm ------------------------------------------------------------------------------------ */

int siw_rs_cm_upcall(struct iw_cm_id *id, struct socket *s, int event, int status,
		     const void *pd, u8 pd_len, u8 ird, u8 ord, void *provider_data)
{
	struct iw_cm_event ev = {
		.event = event,
		.status = status,
		.private_data = (void *)pd,
		.private_data_len = pd_len,
		.ird = ird,
		.ord = ord,
		.provider_data = provider_data,
	};

	if (s && (event == IW_CM_EVENT_CONNECT_REQUEST || event == IW_CM_EVENT_CONNECT_REPLY)) {
		kernel_getsockname(s, (struct sockaddr *)&ev.local_addr);
		kernel_getpeername(s, (struct sockaddr *)&ev.remote_addr);
	}
	return id->event_handler(id, &ev);
}

void siw_rs_cm_id_get(struct iw_cm_id *id)
{
	id->add_ref(id);
}

void siw_rs_cm_id_put(struct iw_cm_id *id)
{
	id->rem_ref(id);
}

void *siw_rs_cm_id_provider_data(struct iw_cm_id *id)
{
	return id->provider_data;
}

void siw_rs_cm_id_set_provider_data(struct iw_cm_id *id, void *data)
{
	id->provider_data = data;
}

/* Pinned user memory ------------------------------------------------------------------------- */

bool siw_rs_ib_device_try_get(struct ib_device *dev)
{
	return ib_device_try_get(dev);
}

unsigned long siw_rs_umem_offset(struct ib_umem *umem)
{
	return ib_umem_offset(umem);
}

size_t siw_rs_umem_num_pages(struct ib_umem *umem)
{
	return ib_umem_num_pages(umem);
}

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

u32 siw_rs_crc32c(u32 crc, const void *p, size_t len)
{
	return crc32c(crc, p, len);
}

struct workqueue_struct *siw_rs_wq_alloc(void)
{
	return alloc_workqueue("siw_rs_wq", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
}

void siw_rs_wq_destroy(struct workqueue_struct *wq)
{
	destroy_workqueue(wq);
}

void siw_rs_qp_event(struct ib_qp *qp, int event)
{
	struct ib_event ev = {
		.device = qp->device,
		.element.qp = qp,
		.event = event,
	};

	if (qp->event_handler)
		qp->event_handler(&ev, qp->qp_context);
}

/* An event of the SRQ a QP receives from (the QP keeps the SRQ in use). */
void siw_rs_qp_srq_event(struct ib_qp *qp, int event)
{
	struct ib_srq *srq = qp->srq;
	struct ib_event ev = {
		.device = qp->device,
		.event = event,
	};

	if (!srq || !srq->event_handler)
		return;
	ev.element.srq = srq;
	srq->event_handler(&ev, srq->srq_context);
}
