// SPDX-License-Identifier: GPL-2.0
/*
 * kfuzz_target: the kernel consumer that selftests/lib/frame_fuzz.py (a hostile iWARP peer)
 * fuzzes, as selftests/hostile/fuzz_target.c is the user-space one. It listens with rdma_cm
 * on addr:port (default 7181) in the loading process's network namespace and takes every
 * connection request as kernel ULPs do: a PD, a CQ (completions in softirq), a QP,
 * receives into kmalloc'd memory through the PD's local DMA lkey, and a 64 KiB MR made by
 * fast registration. It accepts with the private data fuzz_target.c sends (big endian):
 *
 *   u64 addr, u32 rkey, u32 len     the fast-registration MR (its bytes (i * 31 + 7) & 0xff),
 *                                   open to remote Write and Read;
 *   u32 dead_rkey                   the STag of a second fast-registration MR, registered
 *                                   and then invalidated (LOCAL_INV) before any traffic;
 *   u32 recv_size, u32 recv_count   the receives posted, never reposted (so that a Send
 *                                   beyond them must be Terminated);
 *   u32 flags                       3: a Send "ready" follows the MPA reply, once both
 *                                   registrations and the invalidation have been done; the
 *                                   MR may be invalidated by the peer's Send with Invalidate
 *                                   (1); the receives are not reposted (2).
 *
 * On ESTABLISHED it posts REG_MR, REG_MR, LOCAL_INV and the signalled Send "ready" as one
 * list (the send queue runs them in order, so the MRs are in their states before the peer
 * is told to go). Every connection is released by a work item (ib_drain_qp, then the QP,
 * CQ, MRs, PD and cm_id) at its ending event; rmmod releases what is left. The counters
 * are read-only parameters: requests, established, ended, open (connections not released
 * yet), recvs, invalidated (receives that invalidated the MR), error_wcs (completions with
 * an error status, flushes included), and failures (verbs calls that failed where they
 * must not; the kernel log says which).
 */
#include <linux/module.h>
#include <linux/inet.h>
#include <linux/slab.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/workqueue.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/scatterlist.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#define MR_LEN (64 * 1024)
#define RECV_SIZE 1024
#define RECV_COUNT 16
#define READY "ready"
/* Remote atomics too: the fuzzer's RFC 7306 connections use them. */
#define ACCESS_REMOTE (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | \
		       IB_ACCESS_REMOTE_ATOMIC)

static char *addr = "192.168.77.2";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "The IPv4 address to listen on");
static int port = 7181;
module_param(port, int, 0444);
static int ird = 4;
module_param(ird, int, 0444);
MODULE_PARM_DESC(ird, "The accept's responder_resources");

static atomic_long_t requests, established, ended, open, recvs, invalidated, error_wcs,
	failures;

static int get_counter(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%ld\n", atomic_long_read(kp->arg));
}

static const struct kernel_param_ops counter_ops = { .get = get_counter };
#define COUNTER(name) module_param_cb(name, &counter_ops, &name, 0444)
COUNTER(requests);
COUNTER(established);
COUNTER(ended);
COUNTER(open);
COUNTER(recvs);
COUNTER(invalidated);
COUNTER(error_wcs);
COUNTER(failures);

struct advert {
	__be64 addr;
	__be32 rkey, len, dead_rkey, recv_size, recv_count, flags;
} __packed;

struct kconn {
	struct list_head node;
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_mr *mr, *dead;
	/* The MRs' pages, DMA-mapped while the MRs are. */
	struct scatterlist mr_sg, dead_sg;
	bool mr_mapped, dead_mapped;
	u8 *buf, *rbuf, *msg;
	u64 rbuf_dma, msg_dma;
	struct ib_cqe recv_cqe, send_cqe;
	/* Its release is queued (under k.lock): no second one, no event handled. */
	bool ending;
	struct work_struct release;
};

static struct {
	struct mutex lock;
	struct list_head conns;
	struct rdma_cm_id *listen;
	struct workqueue_struct *wq;
} k;

static void failed(const char *what, int rv)
{
	atomic_long_inc(&failures);
	pr_err("kfuzz_target: %s failed: %d\n", what, rv);
}

static int post_recv(struct kconn *c, int i)
{
	struct ib_sge sge = {
		.addr = c->rbuf_dma + i * RECV_SIZE, .length = RECV_SIZE,
		.lkey = c->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = { .wr_cqe = &c->recv_cqe, .sg_list = &sge, .num_sge = 1 };

	return ib_post_recv(c->id->qp, &wr, NULL);
}

static void recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kconn *c = container_of(wc->wr_cqe, struct kconn, recv_cqe);

	if (wc->status != IB_WC_SUCCESS) {
		atomic_long_inc(&error_wcs);
		return;
	}
	atomic_long_inc(&recvs);
	if (wc->wc_flags & IB_WC_WITH_INVALIDATE) {
		/* Only this PD's fast-registration MRs may be invalidated by the peer (the
		 * dead one again, harmlessly): anything else is another PD's or no STag. */
		if (wc->ex.invalidate_rkey != c->mr->rkey &&
		    wc->ex.invalidate_rkey != c->dead->rkey)
			failed("a receive invalidated an STag not of its PD",
			       (int)wc->ex.invalidate_rkey);
		atomic_long_inc(&invalidated);
	}
}

static void send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	if (wc->status != IB_WC_SUCCESS)
		atomic_long_inc(&error_wcs);
}

/* DMA-maps len bytes at buf (sg, until release) and maps them onto mr; 0 or an errno. */
static int map(struct kconn *c, struct ib_mr *mr, struct scatterlist *sg, bool *mapped,
	       u8 *buf, size_t len)
{
	int n;

	sg_init_one(sg, buf, len);
	if (ib_dma_map_sg(c->id->device, sg, 1, DMA_BIDIRECTIONAL) != 1)
		return -EIO;
	*mapped = true;
	n = ib_map_mr_sg(mr, sg, 1, NULL, PAGE_SIZE);
	if (n != 1)
		return n < 0 ? n : -EIO;
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	return 0;
}

/* Everything but the cm_id. */
static void release_res(struct kconn *c)
{
	struct ib_device *dev = c->id->device;

	if (c->id->qp) {
		ib_drain_qp(c->id->qp);
		rdma_destroy_qp(c->id);
	}
	if (c->cq)
		ib_free_cq(c->cq);
	if (!IS_ERR_OR_NULL(c->mr))
		ib_dereg_mr(c->mr);
	if (!IS_ERR_OR_NULL(c->dead))
		ib_dereg_mr(c->dead);
	if (c->mr_mapped)
		ib_dma_unmap_sg(dev, &c->mr_sg, 1, DMA_BIDIRECTIONAL);
	if (c->dead_mapped)
		ib_dma_unmap_sg(dev, &c->dead_sg, 1, DMA_BIDIRECTIONAL);
	if (c->rbuf_dma)
		ib_dma_unmap_single(dev, c->rbuf_dma, RECV_SIZE * RECV_COUNT, DMA_FROM_DEVICE);
	if (c->msg_dma)
		ib_dma_unmap_single(dev, c->msg_dma, PAGE_SIZE, DMA_TO_DEVICE);
	if (c->pd)
		ib_dealloc_pd(c->pd);
	kfree(c->buf);
	kfree(c->rbuf);
	kfree(c->msg);
}

static void release_work(struct work_struct *w)
{
	struct kconn *c = container_of(w, struct kconn, release);

	mutex_lock(&k.lock);
	list_del(&c->node);
	mutex_unlock(&k.lock);
	release_res(c);
	rdma_destroy_id(c->id);
	kfree(c);
	atomic_long_inc(&ended);
	atomic_long_dec(&open);
}

/* Queues c's release once; under k.lock. */
static void end_locked(struct kconn *c)
{
	if (c->ending)
		return;
	c->ending = true;
	queue_work(k.wq, &c->release);
}

/* A connection request: the resources, the receives, then the accept. A non-zero return
 * has rdma_cm reject the request and destroy the cm_id. */
static int take(struct rdma_cm_id *id)
{
	struct ib_qp_init_attr qa = {
		.cap = { .max_send_wr = 8, .max_recv_wr = RECV_COUNT,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
	};
	struct rdma_conn_param cp = { .responder_resources = ird, .initiator_depth = 1 };
	struct advert adv;
	struct kconn *c;
	int i, rv;

	atomic_long_inc(&requests);
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->id = id;
	INIT_WORK(&c->release, release_work);
	c->recv_cqe.done = recv_done;
	c->send_cqe.done = send_done;
	c->buf = kmalloc(MR_LEN, GFP_KERNEL);
	c->rbuf = kzalloc(RECV_SIZE * RECV_COUNT, GFP_KERNEL);
	c->msg = kzalloc(PAGE_SIZE, GFP_KERNEL);
	rv = -ENOMEM;
	if (!c->buf || !c->rbuf || !c->msg)
		goto out;
	for (i = 0; i < MR_LEN; i++)
		c->buf[i] = (u8)(i * 31 + 7);
	strscpy(c->msg, READY, PAGE_SIZE);
	c->pd = ib_alloc_pd(id->device, 0);
	if (IS_ERR(c->pd)) {
		rv = PTR_ERR(c->pd);
		c->pd = NULL;
		goto out;
	}
	c->cq = ib_alloc_cq(id->device, c, RECV_COUNT + 8, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(c->cq)) {
		rv = PTR_ERR(c->cq);
		c->cq = NULL;
		goto out;
	}
	qa.send_cq = qa.recv_cq = c->cq;
	rv = rdma_create_qp(id, c->pd, &qa);
	if (rv)
		goto out;
	c->mr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, MR_LEN / PAGE_SIZE);
	c->dead = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, 1);
	rv = IS_ERR(c->mr) ? PTR_ERR(c->mr) : IS_ERR(c->dead) ? PTR_ERR(c->dead) : 0;
	if (!rv)
		rv = map(c, c->mr, &c->mr_sg, &c->mr_mapped, c->buf, MR_LEN);
	if (!rv)
		rv = map(c, c->dead, &c->dead_sg, &c->dead_mapped, c->msg, PAGE_SIZE);
	if (rv)
		goto out;
	c->rbuf_dma = ib_dma_map_single(id->device, c->rbuf, RECV_SIZE * RECV_COUNT,
					DMA_FROM_DEVICE);
	c->msg_dma = ib_dma_map_single(id->device, c->msg, PAGE_SIZE, DMA_TO_DEVICE);
	rv = -EIO;
	if (ib_dma_mapping_error(id->device, c->rbuf_dma) ||
	    ib_dma_mapping_error(id->device, c->msg_dma))
		goto out;
	for (i = 0; i < RECV_COUNT; i++) {
		rv = post_recv(c, i);
		if (rv)
			goto out;
	}
	adv = (struct advert){
		.addr = cpu_to_be64(c->mr->iova), .rkey = cpu_to_be32(c->mr->rkey),
		.len = cpu_to_be32(MR_LEN), .dead_rkey = cpu_to_be32(c->dead->rkey),
		.recv_size = cpu_to_be32(RECV_SIZE), .recv_count = cpu_to_be32(RECV_COUNT),
		.flags = cpu_to_be32(3),
	};
	cp.private_data = &adv;
	cp.private_data_len = sizeof(adv);
	id->context = c;
	mutex_lock(&k.lock);
	list_add(&c->node, &k.conns);
	atomic_long_inc(&open);
	mutex_unlock(&k.lock);
	/* The peer may be gone already: then the accept fails, or an event ends it. */
	rv = rdma_accept(id, &cp);
	if (rv) {
		mutex_lock(&k.lock);
		end_locked(c);
		mutex_unlock(&k.lock);
	}
	return 0;
out:
	if (rv != -ENOMEM)
		failed("setting up a connection", rv);
	release_res(c);
	kfree(c);
	return rv;
}

/* The connection is up: the registrations, the invalidation, then "ready". */
static void go(struct kconn *c)
{
	struct ib_reg_wr reg = {
		.wr = { .opcode = IB_WR_REG_MR }, .mr = c->mr, .key = c->mr->rkey,
		.access = ACCESS_REMOTE,
	};
	struct ib_reg_wr reg_dead = {
		.wr = { .opcode = IB_WR_REG_MR }, .mr = c->dead, .key = c->dead->rkey,
		.access = ACCESS_REMOTE,
	};
	struct ib_send_wr inv = { .opcode = IB_WR_LOCAL_INV,
				  .ex.invalidate_rkey = c->dead->rkey };
	struct ib_sge sge = { .addr = c->msg_dma, .length = sizeof(READY) - 1,
			      .lkey = c->pd->local_dma_lkey };
	struct ib_send_wr ready = { .wr_cqe = &c->send_cqe, .opcode = IB_WR_SEND,
				    .send_flags = IB_SEND_SIGNALED, .sg_list = &sge,
				    .num_sge = 1 };
	int rv;

	reg.wr.wr_cqe = reg_dead.wr.wr_cqe = inv.wr_cqe = &c->send_cqe;
	reg.wr.next = &reg_dead.wr;
	reg_dead.wr.next = &inv;
	inv.next = &ready;
	rv = ib_post_send(c->id->qp, &reg.wr, NULL);
	/* The peer may have ended the connection already (the QP is in ERROR): then the post
	 * completes flushed, or fails when the QP is gone from RTS. */
	if (rv && rv != -ENOTCONN)
		failed("posting the registrations", rv);
}

static int cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct kconn *c = id->context;

	if (!c && ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		/* The listener. The device waits for every cm_id on it: on its removal
		 * rdma_cm destroys the listener for us, unless module exit took it first. */
		int ours = 0;

		if (ev->event != RDMA_CM_EVENT_DEVICE_REMOVAL)
			return 0;
		mutex_lock(&k.lock);
		if (k.listen == id) {
			k.listen = NULL;
			ours = 1;
		}
		mutex_unlock(&k.lock);
		return ours;
	}
	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return take(id);
	mutex_lock(&k.lock);
	if (c->ending) {
		mutex_unlock(&k.lock);
		return 0;
	}
	switch (ev->event) {
	case RDMA_CM_EVENT_ESTABLISHED:
		atomic_long_inc(&established);
		go(c);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
	case RDMA_CM_EVENT_ADDR_CHANGE:
		end_locked(c);
		break;
	default:
		break;
	}
	mutex_unlock(&k.lock);
	return 0;
}

static int __init kfuzz_init(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct rdma_cm_id *id;
	int rv;

	if (!in4_pton(addr, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL))
		return -EINVAL;
	mutex_init(&k.lock);
	INIT_LIST_HEAD(&k.conns);
	k.wq = alloc_workqueue("kfuzz_target", WQ_UNBOUND, 0);
	if (!k.wq)
		return -ENOMEM;
	id = rdma_create_id(current->nsproxy->net_ns, cm_handler, NULL, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		destroy_workqueue(k.wq);
		return PTR_ERR(id);
	}
	k.listen = id;
	rv = rdma_bind_addr(id, (struct sockaddr *)&sin);
	if (!rv)
		rv = rdma_listen(id, 64);
	if (rv) {
		rdma_destroy_id(id);
		destroy_workqueue(k.wq);
	}
	return rv;
}

static void __exit kfuzz_exit(void)
{
	struct rdma_cm_id *listen;
	struct kconn *c;

	mutex_lock(&k.lock);
	listen = k.listen;
	k.listen = NULL;
	mutex_unlock(&k.lock);
	if (listen)
		rdma_destroy_id(listen);
	mutex_lock(&k.lock);
	list_for_each_entry(c, &k.conns, node)
		end_locked(c);
	mutex_unlock(&k.lock);
	/* Releases run here; none queues another. */
	drain_workqueue(k.wq);
	destroy_workqueue(k.wq);
}

module_init(kfuzz_init);
module_exit(kfuzz_exit);
MODULE_DESCRIPTION("siw_rs selftests: the kernel consumer a hostile peer fuzzes");
MODULE_LICENSE("GPL");
