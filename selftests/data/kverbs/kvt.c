// SPDX-License-Identifier: GPL-2.0
/*
 * kvt: a kernel verbs consumer for siw_rs's selftests, built as kvt_server.ko and
 * kvt_client.ko (KVT_SERVER). It uses what kernel ULPs use: rdma_cm in the loading
 * process's network namespace, ib_alloc_cq (completions through wr_cqe->done, the server's
 * in softirq), the PD's local DMA lkey, work request lists, inline data, multi-SGE, and
 * ib_drain_qp at teardown. Write and Read target the server's kmalloc'd buffer through the
 * PD's unsafe global rkey (the only remote key a DMA-MR-only consumer has).
 *
 * The exchange, after the server accepted with two receives posted:
 *   server -> client  Send: its buffer's address, rkey and length
 *   client            one posted list: RDMA Write (the whole buffer, pattern), RDMA Read
 *                     (back into a second buffer), Send of two SGEs (3000 + 5000 bytes),
 *                     inline solicited Send "done"
 *   server            checks the two-SGE Send (received into two separate SGEs) and, on
 *                     "done", its buffer, byte for byte; replies with a status Send
 *                     (posted from its softirq completion handler)
 *   client            checks the Read data byte for byte and the server's status
 * The client does all of this in module init: insmod fails unless everything verified.
 * The server reports in its `result` parameter: 1 verified, negative errno on failure;
 * with srq=1 it receives through a shared receive queue (ib_post_srq_recv).
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/completion.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "kverbs.h"

#define KVT_PORT 7472
#define BUF_LEN (256 * 1024)
/* The client's two-SGE Send: pattern bytes [0, A) and [B_OFF, B_OFF + B). */
#define SEND_A 3000
#define SEND_B_OFF 10000
#define SEND_B 5000
/* The server receives it into two separate 4 KiB SGEs of buf2: [0, 4K) and [8K, 12K). */
#define RSGE 4096
#define MSG_LEN 64

static char *addr = "192.168.77.2";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "The server's IPv4 address");

static u8 pattern(size_t i)
{
	return (u8)(i * 131 + (i >> 9) + 7);
}

static int check(const u8 *p, size_t off, size_t n, const char *what)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] != pattern(off + i)) {
			pr_err("kvt: %s: byte %zu is %#x, expected %#x\n", what, i, p[i],
			       pattern(off + i));
			return -EIO;
		}
	}
	return 0;
}

struct kvt_info {
	__be64 addr;
	__be32 rkey;
	__be32 len;
};

struct kvt_conn {
	struct rdma_cm_id *id;
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_srq *srq;
	u8 *buf, *buf2, *msg;
	u64 buf_dma, buf2_dma, msg_dma;
	struct ib_cqe cqe_recv0, cqe_recv1, cqe_send, cqe_read;
	/* Client: signalled completions seen, first error status. */
	atomic_t completions;
	int status;
	struct completion progress;
	/* Client: the connection manager's last event and its status. */
	struct kv_cm cm;
	struct work_struct teardown;
};

static u8 *msg_at(struct kvt_conn *c, int i)
{
	return c->msg + i * MSG_LEN;
}

static u64 msg_dma(struct kvt_conn *c, int i)
{
	return c->msg_dma + i * MSG_LEN;
}

static int __maybe_unused post_recv(struct kvt_conn *c, struct ib_cqe *cqe, u64 a0, u32 l0, u64 a1, u32 l1)
{
	struct ib_sge sge[2] = {
		{ .addr = a0, .length = l0, .lkey = c->pd->local_dma_lkey },
		{ .addr = a1, .length = l1, .lkey = c->pd->local_dma_lkey },
	};
	struct ib_recv_wr wr = { .wr_cqe = cqe, .sg_list = sge, .num_sge = l1 ? 2 : 1 };

	return ib_post_recv(c->id->qp, &wr, NULL);
}

static int __maybe_unused post_msg(struct kvt_conn *c, int i, u32 len)
{
	struct ib_sge sge = { .addr = msg_dma(c, i), .length = len, .lkey = c->pd->local_dma_lkey };
	struct ib_send_wr wr = {
		.wr_cqe = &c->cqe_send, .sg_list = &sge, .num_sge = 1,
		.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED,
	};

	return ib_post_send(c->id->qp, &wr, NULL);
}

/* Buffers, PD, CQ, SRQ (with_srq) and QP of a connection on c->id. */
static int setup(struct kvt_conn *c, enum ib_poll_context poll, unsigned int pd_flags,
		 bool with_srq)
{
	struct ib_qp_init_attr qa = {};
	int rv;

	c->dev = c->id->device;
	c->buf = kmalloc(BUF_LEN, GFP_KERNEL);
	c->buf2 = kzalloc(BUF_LEN, GFP_KERNEL);
	c->msg = kzalloc(4 * MSG_LEN, GFP_KERNEL);
	if (!c->buf || !c->buf2 || !c->msg)
		return -ENOMEM;
	c->buf_dma = ib_dma_map_single(c->dev, c->buf, BUF_LEN, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(c->dev, c->buf_dma))
		return -EIO;
	c->buf2_dma = ib_dma_map_single(c->dev, c->buf2, BUF_LEN, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(c->dev, c->buf2_dma))
		return -EIO;
	c->msg_dma = ib_dma_map_single(c->dev, c->msg, 4 * MSG_LEN, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(c->dev, c->msg_dma))
		return -EIO;
	c->pd = ib_alloc_pd(c->dev, pd_flags);
	if (IS_ERR(c->pd)) {
		rv = PTR_ERR(c->pd);
		c->pd = NULL;
		return rv;
	}
	c->cq = ib_alloc_cq(c->dev, c, 32, 0, poll);
	if (IS_ERR(c->cq)) {
		rv = PTR_ERR(c->cq);
		c->cq = NULL;
		return rv;
	}
	if (with_srq) {
		struct ib_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 2 } };

		c->srq = ib_create_srq(c->pd, &sa);
		if (IS_ERR(c->srq)) {
			rv = PTR_ERR(c->srq);
			c->srq = NULL;
			return rv;
		}
		qa.srq = c->srq;
	}
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IB_QPT_RC;
	qa.sq_sig_type = IB_SIGNAL_REQ_WR;
	qa.cap.max_send_wr = 8;
	qa.cap.max_recv_wr = 4;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 2;
	qa.cap.max_inline_data = 32;
	return rdma_create_qp(c->id, c->pd, &qa);
}

/* Everything but the cm_id. ib_drain_qp moves the QP to ERROR and waits for the flush
 * completions of a send and a receive it posts then. */
static void teardown(struct kvt_conn *c)
{
	if (c->id && c->id->qp) {
		ib_drain_qp(c->id->qp);
		rdma_destroy_qp(c->id);
	}
	if (c->srq)
		ib_destroy_srq(c->srq);
	if (c->cq)
		ib_free_cq(c->cq);
	if (c->pd)
		ib_dealloc_pd(c->pd);
	if (c->dev) {
		if (c->buf_dma && !ib_dma_mapping_error(c->dev, c->buf_dma))
			ib_dma_unmap_single(c->dev, c->buf_dma, BUF_LEN, DMA_BIDIRECTIONAL);
		if (c->buf2_dma && !ib_dma_mapping_error(c->dev, c->buf2_dma))
			ib_dma_unmap_single(c->dev, c->buf2_dma, BUF_LEN, DMA_BIDIRECTIONAL);
		if (c->msg_dma && !ib_dma_mapping_error(c->dev, c->msg_dma))
			ib_dma_unmap_single(c->dev, c->msg_dma, 4 * MSG_LEN, DMA_BIDIRECTIONAL);
	}
	kfree(c->buf);
	kfree(c->buf2);
	kfree(c->msg);
}

#if KVT_SERVER

static bool srq;
module_param(srq, bool, 0444);
MODULE_PARM_DESC(srq, "Receive through a shared receive queue");

static int result;
module_param(result, int, 0444);
MODULE_PARM_DESC(result, "0 while waiting, 1 once a client's data verified, negative errno on failure");

static struct rdma_cm_id *listen_id;
/* The one connection; freed at module exit. Its teardown (at DISCONNECTED, or at exit if
 * the peer never disconnected) runs once, under conn_lock. */
static struct kvt_conn *conn;
static DEFINE_MUTEX(conn_lock);

static void fail(int rv, const char *why)
{
	pr_err("kvt_server: %s (%d)\n", why, rv);
	if (result == 0)
		WRITE_ONCE(result, rv);
}

/* Received byte k of the client's two-SGE Send sits in one of our two receive SGEs. */
static int check_two_sge(struct kvt_conn *c, u32 len)
{
	u32 k;

	if (len != SEND_A + SEND_B) {
		pr_err("kvt_server: two-SGE Send of %u bytes, expected %u\n", len, SEND_A + SEND_B);
		return -EIO;
	}
	for (k = 0; k < len; k++) {
		u8 got = k < RSGE ? c->buf2[k] : c->buf2[2 * RSGE + k - RSGE];
		u8 want = k < SEND_A ? pattern(k) : pattern(SEND_B_OFF + k - SEND_A);

		if (got != want) {
			pr_err("kvt_server: two-SGE Send: byte %u is %#x, expected %#x\n", k, got, want);
			return -EIO;
		}
	}
	return 0;
}

static void srv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kvt_conn *c = cq->cq_context;
	int rv;

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			fail(-EIO, ib_wc_status_msg(wc->status));
		return;
	}
	if (wc->wr_cqe == &c->cqe_recv0) {
		rv = check_two_sge(c, wc->byte_len);
		if (rv)
			fail(rv, "two-SGE Send");
	} else if (wc->wr_cqe == &c->cqe_recv1) {
		/* "done": the client's Write was placed before this Send completed. */
		rv = memcmp(msg_at(c, 1), "done", 5) ? -EIO : check(c->buf, 0, BUF_LEN, "written buffer");
		if (rv)
			fail(rv, "written buffer or done message");
		else if (READ_ONCE(result) == 0)
			WRITE_ONCE(result, 1);
		*(__be32 *)msg_at(c, 2) = cpu_to_be32(READ_ONCE(result) == 1 ? 0 : EIO);
		/* Posted from this softirq completion handler, as ULPs do. */
		rv = post_msg(c, 2, 4);
		if (rv)
			fail(rv, "posting the status from softirq");
		pr_info("kvt_server: verified %u written bytes and the two-SGE Send; status sent\n",
			BUF_LEN);
	}
}

static void srv_teardown(struct work_struct *w)
{
	struct kvt_conn *c = container_of(w, struct kvt_conn, teardown);

	mutex_lock(&conn_lock);
	if (c->id) {
		teardown(c);
		rdma_destroy_id(c->id);
		c->id = NULL;
	}
	mutex_unlock(&conn_lock);
}

static int srv_connect_request(struct rdma_cm_id *id)
{
	struct rdma_conn_param p = { .responder_resources = 4, .initiator_depth = 4 };
	struct kvt_conn *c;
	int rv;

	if (conn)
		return -EBUSY;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->id = id;
	id->context = c;
	c->cqe_recv0.done = srv_done;
	c->cqe_recv1.done = srv_done;
	c->cqe_send.done = srv_done;
	INIT_WORK(&c->teardown, srv_teardown);
	rv = setup(c, IB_POLL_SOFTIRQ, IB_PD_UNSAFE_GLOBAL_RKEY, srq);
	if (!rv) {
		/* Both receives in one list. */
		struct ib_sge s0[2] = {
			{ .addr = c->buf2_dma, .length = RSGE, .lkey = c->pd->local_dma_lkey },
			{ .addr = c->buf2_dma + 2 * RSGE, .length = RSGE,
			  .lkey = c->pd->local_dma_lkey },
		};
		struct ib_sge s1 = { .addr = msg_dma(c, 1), .length = MSG_LEN,
				     .lkey = c->pd->local_dma_lkey };
		struct ib_recv_wr r1 = { .wr_cqe = &c->cqe_recv1, .sg_list = &s1, .num_sge = 1 };
		struct ib_recv_wr r0 = { .next = &r1, .wr_cqe = &c->cqe_recv0, .sg_list = s0,
					 .num_sge = 2 };

		rv = c->srq ? ib_post_srq_recv(c->srq, &r0, NULL) : ib_post_recv(id->qp, &r0, NULL);
	}
	if (!rv)
		rv = rdma_accept(id, &p);
	if (rv) {
		fail(rv, "accepting");
		teardown(c);
		kfree(c);
		id->context = NULL;
		/* Non-zero: the core destroys the id. */
		return rv;
	}
	conn = c;
	return 0;
}

static int srv_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct kvt_conn *c = id->context;
	struct kvt_info *info;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return srv_connect_request(id);
	case RDMA_CM_EVENT_ESTABLISHED:
		info = (struct kvt_info *)msg_at(c, 0);
		info->addr = cpu_to_be64(c->buf_dma);
		info->rkey = cpu_to_be32(c->pd->unsafe_global_rkey);
		info->len = cpu_to_be32(BUF_LEN);
		if (post_msg(c, 0, sizeof(*info)))
			fail(-EIO, "posting the buffer info");
		return 0;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (c && c == conn)
			schedule_work(&c->teardown);
		return 0;
	default:
		if (id != listen_id)
			pr_info("kvt_server: event %s (%d)\n", rdma_event_msg(ev->event), ev->status);
		return 0;
	}
}

static int __init kvt_init(void)
{
	listen_id = kv_listen(srv_handler, addr, KVT_PORT);
	return PTR_ERR_OR_ZERO(listen_id);
}

static void __exit kvt_exit(void)
{
	rdma_destroy_id(listen_id);
	if (!conn)
		return;
	mutex_lock(&conn_lock);
	if (conn->id)
		rdma_disconnect(conn->id);
	mutex_unlock(&conn_lock);
	srv_teardown(&conn->teardown);
	cancel_work_sync(&conn->teardown);
	kfree(conn);
}

#else /* client */

static void cli_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct kvt_conn *c = cq->cq_context;

	if (wc->status != IB_WC_SUCCESS && !c->status) {
		pr_err("kvt_client: completion %s\n", ib_wc_status_msg(wc->status));
		c->status = -EIO;
	}
	atomic_inc(&c->completions);
	complete(&c->progress);
}

/* Waits until `n` completions arrived in all. */
static int wait_completions(struct kvt_conn *c, int n, const char *what)
{
	while (atomic_read(&c->completions) < n) {
		if (!wait_for_completion_timeout(&c->progress, KV_TMO)) {
			pr_err("kvt_client: %s: %d of %d completions after 30 s\n", what,
			       atomic_read(&c->completions), n);
			return -ETIMEDOUT;
		}
	}
	return c->status;
}

static int cli_run(struct kvt_conn *c)
{
	struct rdma_conn_param p = { .responder_resources = 4, .initiator_depth = 4,
				     .retry_count = 7 };
	struct kvt_info *info;
	u64 raddr;
	u32 rkey, rlen;
	size_t i;
	int rv;

	rv = kv_resolve(c->id, &c->cm, addr, KVT_PORT, "kvt_client");
	if (!rv)
		rv = setup(c, IB_POLL_WORKQUEUE, 0, false);
	if (rv)
		return rv;
	for (i = 0; i < BUF_LEN; i++)
		c->buf[i] = pattern(i);
	/* The server's info and, at the end, its status. */
	rv = post_recv(c, &c->cqe_recv0, msg_dma(c, 0), MSG_LEN, 0, 0);
	if (!rv)
		rv = post_recv(c, &c->cqe_recv1, msg_dma(c, 1), MSG_LEN, 0, 0);
	if (!rv)
		rv = rdma_connect(c->id, &p);
	if (!rv)
		rv = kv_wait(&c->cm, RDMA_CM_EVENT_ESTABLISHED, "kvt_client");
	if (!rv)
		rv = wait_completions(c, 1, "the server's buffer info");
	if (rv)
		return rv;
	info = (struct kvt_info *)msg_at(c, 0);
	raddr = be64_to_cpu(info->addr);
	rkey = be32_to_cpu(info->rkey);
	rlen = be32_to_cpu(info->len);
	if (rlen != BUF_LEN) {
		pr_err("kvt_client: server buffer of %u bytes\n", rlen);
		return -EIO;
	}
	memcpy(msg_at(c, 2), "done", 5);
	{
		struct ib_sge ws = { .addr = c->buf_dma, .length = BUF_LEN,
				     .lkey = c->pd->local_dma_lkey };
		struct ib_sge rs = { .addr = c->buf2_dma, .length = BUF_LEN,
				     .lkey = c->pd->local_dma_lkey };
		struct ib_sge ss[2] = {
			{ .addr = c->buf_dma, .length = SEND_A, .lkey = c->pd->local_dma_lkey },
			{ .addr = c->buf_dma + SEND_B_OFF, .length = SEND_B,
			  .lkey = c->pd->local_dma_lkey },
		};
		/* Inline: copied at post time from a kernel address. */
		struct ib_sge ds = { .addr = (uintptr_t)msg_at(c, 2), .length = 5,
				     .lkey = c->pd->local_dma_lkey };
		struct ib_send_wr done = {
			.wr_cqe = &c->cqe_send, .sg_list = &ds, .num_sge = 1, .opcode = IB_WR_SEND,
			.send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE | IB_SEND_SOLICITED,
		};
		struct ib_send_wr send = {
			.next = &done, .wr_cqe = &c->cqe_send, .sg_list = ss, .num_sge = 2,
			.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED,
		};
		struct ib_rdma_wr read = {
			.wr = { .next = &send, .wr_cqe = &c->cqe_read, .sg_list = &rs, .num_sge = 1,
				.opcode = IB_WR_RDMA_READ, .send_flags = IB_SEND_SIGNALED },
			.remote_addr = raddr, .rkey = rkey,
		};
		/* Unsignalled: it completes nothing; the Read behind it returns its data. */
		struct ib_rdma_wr write = {
			.wr = { .next = &read.wr, .wr_cqe = &c->cqe_send, .sg_list = &ws,
				.num_sge = 1, .opcode = IB_WR_RDMA_WRITE },
			.remote_addr = raddr, .rkey = rkey,
		};

		rv = ib_post_send(c->id->qp, &write.wr, NULL);
	}
	/* Info, Read, two Sends, and the server's status. */
	if (!rv)
		rv = wait_completions(c, 5, "Write/Read/Send and the server's status");
	if (rv)
		return rv;
	rv = check(c->buf2, 0, BUF_LEN, "Read data");
	if (rv)
		return rv;
	if (*(__be32 *)msg_at(c, 1) != 0) {
		pr_err("kvt_client: the server reports a mismatch (%u)\n",
		       be32_to_cpu(*(__be32 *)msg_at(c, 1)));
		return -EIO;
	}
	pr_info("kvt_client: wrote, read back and verified %u bytes; server verified its data\n",
		BUF_LEN);
	return 0;
}

static int __init kvt_init(void)
{
	struct kvt_conn *c = kzalloc(sizeof(*c), GFP_KERNEL);
	int rv;

	if (!c)
		return -ENOMEM;
	init_completion(&c->progress);
	c->cqe_recv0.done = cli_done;
	c->cqe_recv1.done = cli_done;
	c->cqe_send.done = cli_done;
	c->cqe_read.done = cli_done;
	c->id = kv_client_id(&c->cm);
	if (IS_ERR(c->id)) {
		rv = PTR_ERR(c->id);
		kfree(c);
		return rv;
	}
	rv = cli_run(c);
	if (c->id->qp)
		rdma_disconnect(c->id);
	teardown(c);
	rdma_destroy_id(c->id);
	kfree(c);
	return rv;
}

static void __exit kvt_exit(void)
{
}

#endif

module_init(kvt_init);
module_exit(kvt_exit);
MODULE_DESCRIPTION("siw_rs selftests: a kernel verbs consumer");
MODULE_LICENSE("GPL");
