// SPDX-License-Identifier: GPL-2.0
/*
 * k7306: RFC 7306 (atomics, RDMA Write with Immediate Data) from a kernel consumer, for
 * siw_rs's selftests; built as k7306_server.ko and k7306_client.ko (K7306_SERVER), one per
 * network namespace, connected over rdma_cm.
 *
 * The server's target: four zeroed pages, registered by fast registration (REG_MR) with
 * remote read, write and (ext=1) atomic rights. Words 0..3 start as W0..W3; the Writes go
 * to the second page. It accepts with receives posted and sends the target's address and
 * STag.
 *
 * ext=1 (both ends siw_rs, which agree on RFC 7306):
 *   client  one list: Fetch-and-Add on word 0 twice, Compare-and-Swap on word 1 (a match,
 *           then a miss), a masked Fetch-and-Add on word 2 (two 32-bit fields, the carry
 *           out of the low one dropped), a masked Compare-and-Swap on word 3 (compare the
 *           low byte, swap the high half), and an RDMA Read of the four words; checks each
 *           original value returned, each completion's opcode and length, and the words
 *           read back. Then RDMA Write with Immediate Data three times: 4096 bytes from two
 *           SGEs, 40 bytes inline, and zero bytes (solicited); then a Send "done".
 *   server  each Write with Immediate completes one receive as IB_WC_RECV_RDMA_WITH_IMM,
 *           with IB_WC_WITH_IMM, the immediate data sent and the Write's length, its bytes
 *           already in place (checked then, byte for byte); on "done" it checks the four
 *           words and replies with its status.
 *   client  last, an atomic on a misaligned word: the server's siw_rs must refuse it with
 *           a Terminate (RFC 7306 section 8.2), so it completes in error here.
 * ext=0 (a peer without RFC 7306, the C siw): posting an atomic or a Write with Immediate
 *   Data fails (post_err, the errno expected) and sends nothing; a plain Write and a Send
 *   still work, and the server checks the written bytes.
 * Send with Immediate Data is refused to post (EINVAL): RFC 7306 defines no such message.
 *
 * The client does all of this in module init: insmod fails unless everything checked out.
 * The server reports in its `result` parameter: 1 verified, negative errno on failure.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/gfp.h>
#include <linux/scatterlist.h>
#include <linux/completion.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "kverbs.h"

#define K7306_PORT 7473
/* The server's target: order-1 pages. */
#define TORDER 2
#define TLEN (PAGE_SIZE << TORDER)
#define WAREA PAGE_SIZE
#define WLEN 4096
#define INLINE_LEN 40
#define MSG_LEN 64
#define NRECV 4

#define W0 0x1000ULL
#define W1 0xaaaaULL
#define W2 0x00000000ffffffffULL
#define W3 0x1122334455667788ULL
/* The words after the client's six atomics. */
#define W0_END (W0 + 5 + 7)
#define W1_END 0xbbbbULL
#define W2_END 0x0000000100000000ULL
#define W3_END 0xaabbccdd55667788ULL
#define IMM1 0x12345678
#define IMM2 0x9abcdef0
#define IMM3 0x0badcafe

static char *addr = "192.168.77.2";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "The server's IPv4 address");

static bool ext = true;
module_param(ext, bool, 0444);
MODULE_PARM_DESC(ext, "The peers agree on RFC 7306 (both siw_rs); else only the refusals and plain traffic are checked");

static u8 pattern(size_t i)
{
	return (u8)(i * 151 + (i >> 8) + 3);
}

struct k7306_info {
	__be64 addr;
	__be32 rkey;
	__be32 len;
};

struct k7306_conn {
	struct rdma_cm_id *id;
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *cq;
	struct ib_mr *mr;
	u8 *tgt, *buf, *msg;
	u64 tgt_dma, buf_dma, msg_dma;
	struct ib_cqe cqe_recv, cqe_send, cqe_reg;
	/* Receive completions seen (server). */
	int nrecv;
	/* Completions seen, their opcodes and lengths, the first error (client). */
	atomic_t completions;
	enum ib_wc_opcode op[16];
	u32 len[16];
	enum ib_wc_status first_err;
	struct completion progress;
	struct kv_cm cm;
	struct work_struct teardown;
};

static u8 *msg_at(struct k7306_conn *c, int i)
{
	return c->msg + i * MSG_LEN;
}

static u64 msg_dma(struct k7306_conn *c, int i)
{
	return c->msg_dma + i * MSG_LEN;
}

static int setup(struct k7306_conn *c, enum ib_poll_context poll)
{
	struct ib_qp_init_attr qa = {};
	int rv;

	c->dev = c->id->device;
	c->tgt = (u8 *)__get_free_pages(GFP_KERNEL | __GFP_ZERO, TORDER);
	c->buf = kzalloc(2 * WLEN, GFP_KERNEL);
	c->msg = kzalloc((NRECV + 4) * MSG_LEN, GFP_KERNEL);
	if (!c->tgt || !c->buf || !c->msg)
		return -ENOMEM;
	c->tgt_dma = ib_dma_map_single(c->dev, c->tgt, TLEN, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(c->dev, c->tgt_dma))
		return -EIO;
	c->buf_dma = ib_dma_map_single(c->dev, c->buf, 2 * WLEN, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(c->dev, c->buf_dma))
		return -EIO;
	c->msg_dma = ib_dma_map_single(c->dev, c->msg, (NRECV + 4) * MSG_LEN,
				       DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(c->dev, c->msg_dma))
		return -EIO;
	c->pd = ib_alloc_pd(c->dev, 0);
	if (IS_ERR(c->pd)) {
		rv = PTR_ERR(c->pd);
		c->pd = NULL;
		return rv;
	}
	c->cq = ib_alloc_cq(c->dev, c, 64, 0, poll);
	if (IS_ERR(c->cq)) {
		rv = PTR_ERR(c->cq);
		c->cq = NULL;
		return rv;
	}
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IB_QPT_RC;
	qa.sq_sig_type = IB_SIGNAL_REQ_WR;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = NRECV;
	qa.cap.max_send_sge = 2;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = 64;
	return rdma_create_qp(c->id, c->pd, &qa);
}

static void teardown(struct k7306_conn *c)
{
	if (c->id && c->id->qp) {
		ib_drain_qp(c->id->qp);
		rdma_destroy_qp(c->id);
	}
	if (c->mr)
		ib_dereg_mr(c->mr);
	if (c->cq)
		ib_free_cq(c->cq);
	if (c->pd)
		ib_dealloc_pd(c->pd);
	if (c->dev) {
		if (c->tgt_dma && !ib_dma_mapping_error(c->dev, c->tgt_dma))
			ib_dma_unmap_single(c->dev, c->tgt_dma, TLEN, DMA_BIDIRECTIONAL);
		if (c->buf_dma && !ib_dma_mapping_error(c->dev, c->buf_dma))
			ib_dma_unmap_single(c->dev, c->buf_dma, 2 * WLEN, DMA_BIDIRECTIONAL);
		if (c->msg_dma && !ib_dma_mapping_error(c->dev, c->msg_dma))
			ib_dma_unmap_single(c->dev, c->msg_dma, (NRECV + 4) * MSG_LEN,
					    DMA_BIDIRECTIONAL);
	}
	if (c->tgt)
		free_pages((unsigned long)c->tgt, TORDER);
	kfree(c->buf);
	kfree(c->msg);
}

static int __maybe_unused post_msg(struct k7306_conn *c, int i, u32 len)
{
	struct ib_sge sge = { .addr = msg_dma(c, i), .length = len, .lkey = c->pd->local_dma_lkey };
	struct ib_send_wr wr = {
		.wr_cqe = &c->cqe_send, .sg_list = &sge, .num_sge = 1,
		.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED,
	};

	return ib_post_send(c->id->qp, &wr, NULL);
}

#if K7306_SERVER

static int result;
module_param(result, int, 0444);
MODULE_PARM_DESC(result, "0 while waiting, 1 once everything verified, negative errno on failure");

static struct rdma_cm_id *listen_id;
static struct k7306_conn *conn;
static DEFINE_MUTEX(conn_lock);

static void fail(int rv, const char *why)
{
	pr_err("k7306_server: %s (%d)\n", why, rv);
	if (READ_ONCE(result) == 0)
		WRITE_ONCE(result, rv);
}

static int check_area(struct k7306_conn *c, size_t off, size_t n, size_t pat_off)
{
	size_t i;

	for (i = 0; i < n; i++) {
		u8 got = c->tgt[WAREA + off + i], want = pattern(pat_off + i);

		if (got != want) {
			pr_err("k7306_server: written byte %zu is %#x, expected %#x\n", off + i,
			       got, want);
			return -EIO;
		}
	}
	return 0;
}

/* Receive k (0-based) of the ext=1 exchange: a Write with Immediate Data. */
static int check_imm(struct k7306_conn *c, struct ib_wc *wc, int k)
{
	static const u32 imm[] = { IMM1, IMM2, IMM3 };
	static const u32 len[] = { WLEN, INLINE_LEN, 0 };
	int rv;

	if (wc->opcode != IB_WC_RECV_RDMA_WITH_IMM || !(wc->wc_flags & IB_WC_WITH_IMM)) {
		pr_err("k7306_server: receive %d: opcode %d flags %#x, expected RECV_RDMA_WITH_IMM\n",
		       k, wc->opcode, wc->wc_flags);
		return -EIO;
	}
	if (wc->ex.imm_data != cpu_to_be32(imm[k]) || wc->byte_len != len[k]) {
		pr_err("k7306_server: receive %d: imm %#x len %u, expected %#x %u\n", k,
		       be32_to_cpu(wc->ex.imm_data), wc->byte_len, imm[k], len[k]);
		return -EIO;
	}
	/* The Write's bytes are in place once its Immediate Data completes. */
	if (k == 0)
		return check_area(c, 0, WLEN, 0);
	if (k == 1) {
		rv = check_area(c, WLEN, INLINE_LEN, 0);
		if (rv)
			return rv;
	}
	return 0;
}

static int check_words(struct k7306_conn *c)
{
	static const u64 want[] = { W0_END, W1_END, W2_END, W3_END };
	u64 *w = (u64 *)c->tgt;
	int i;

	for (i = 0; i < 4; i++) {
		if (w[i] != want[i]) {
			pr_err("k7306_server: word %d is %#llx, expected %#llx\n", i, w[i], want[i]);
			return -EIO;
		}
	}
	return 0;
}

static void srv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct k7306_conn *c = cq->cq_context;
	int k, rv = 0;

	if (wc->status != IB_WC_SUCCESS) {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			fail(-EIO, ib_wc_status_msg(wc->status));
		return;
	}
	if (wc->wr_cqe != &c->cqe_recv)
		return;
	k = c->nrecv++;
	if (ext && k < 3) {
		rv = check_imm(c, wc, k);
		if (rv)
			fail(rv, "Write with Immediate Data");
		return;
	}
	/* "done" */
	if (wc->opcode != IB_WC_RECV || (wc->wc_flags & IB_WC_WITH_IMM) ||
	    memcmp(msg_at(c, k), "done", 5)) {
		fail(-EIO, "the done message");
	} else {
		rv = ext ? check_words(c) : check_area(c, 0, WLEN, 0);
		if (rv)
			fail(rv, ext ? "the atomic words" : "the written bytes");
		else if (READ_ONCE(result) == 0)
			WRITE_ONCE(result, 1);
	}
	*(__be32 *)msg_at(c, NRECV) = cpu_to_be32(READ_ONCE(result) == 1 ? 0 : EIO);
	rv = post_msg(c, NRECV, 4);
	if (rv)
		fail(rv, "posting the status");
	pr_info("k7306_server: %s verified; status sent\n",
		ext ? "atomic words and three Writes with Immediate Data" : "the plain Write");
}

static void srv_teardown(struct work_struct *w)
{
	struct k7306_conn *c = container_of(w, struct k7306_conn, teardown);

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
	struct rdma_conn_param p = { .responder_resources = 8, .initiator_depth = 8 };
	struct k7306_conn *c;
	u64 *w;
	int i, rv;

	if (conn)
		return -EBUSY;
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	if (!c)
		return -ENOMEM;
	c->id = id;
	id->context = c;
	c->cqe_recv.done = srv_done;
	c->cqe_send.done = srv_done;
	c->cqe_reg.done = srv_done;
	INIT_WORK(&c->teardown, srv_teardown);
	rv = setup(c, IB_POLL_SOFTIRQ);
	if (!rv) {
		w = (u64 *)c->tgt;
		w[0] = W0;
		w[1] = W1;
		w[2] = W2;
		w[3] = W3;
		c->mr = ib_alloc_mr(c->pd, IB_MR_TYPE_MEM_REG, 1 << TORDER);
		if (IS_ERR(c->mr)) {
			rv = PTR_ERR(c->mr);
			c->mr = NULL;
		}
	}
	if (!rv) {
		struct scatterlist sg;

		sg_init_one(&sg, c->tgt, TLEN);
		sg_dma_address(&sg) = c->tgt_dma;
		sg_dma_len(&sg) = TLEN;
		rv = ib_map_mr_sg(c->mr, &sg, 1, NULL, PAGE_SIZE) == 1 ? 0 : -EIO;
	}
	for (i = 0; !rv && i < NRECV; i++) {
		struct ib_sge s = { .addr = msg_dma(c, i), .length = MSG_LEN,
				    .lkey = c->pd->local_dma_lkey };
		struct ib_recv_wr r = { .wr_cqe = &c->cqe_recv, .sg_list = &s, .num_sge = 1 };

		rv = ib_post_recv(id->qp, &r, NULL);
	}
	if (!rv)
		rv = rdma_accept(id, &p);
	if (rv) {
		fail(rv, "accepting");
		teardown(c);
		kfree(c);
		id->context = NULL;
		return rv;
	}
	conn = c;
	return 0;
}

/* Registers the target (REG_MR) and sends its address and STag, in one list. */
static void srv_established(struct k7306_conn *c)
{
	struct k7306_info *info = (struct k7306_info *)msg_at(c, NRECV + 1);
	struct ib_sge s = { .addr = msg_dma(c, NRECV + 1), .length = sizeof(*info),
			    .lkey = c->pd->local_dma_lkey };
	struct ib_send_wr send = { .wr_cqe = &c->cqe_send, .sg_list = &s, .num_sge = 1,
				   .opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED };
	struct ib_reg_wr reg = {
		.wr = { .next = &send, .wr_cqe = &c->cqe_reg, .opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED },
		.mr = c->mr,
		.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
			  (ext ? IB_ACCESS_REMOTE_ATOMIC : 0),
	};

	ib_update_fast_reg_key(c->mr, ib_inc_rkey(c->mr->rkey));
	reg.key = c->mr->rkey;
	info->addr = cpu_to_be64(c->mr->iova);
	info->rkey = cpu_to_be32(c->mr->rkey);
	info->len = cpu_to_be32(TLEN);
	if (ib_post_send(c->id->qp, &reg.wr, NULL))
		fail(-EIO, "posting REG_MR and the target info");
}

static int srv_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct k7306_conn *c = id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return srv_connect_request(id);
	case RDMA_CM_EVENT_ESTABLISHED:
		srv_established(c);
		return 0;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (c && c == conn)
			schedule_work(&c->teardown);
		return 0;
	default:
		if (id != listen_id)
			pr_info("k7306_server: event %s (%d)\n", rdma_event_msg(ev->event),
				ev->status);
		return 0;
	}
}

static int __init k7306_init(void)
{
	listen_id = kv_listen(srv_handler, addr, K7306_PORT);
	return PTR_ERR_OR_ZERO(listen_id);
}

static void __exit k7306_exit(void)
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

static int post_err = -EOPNOTSUPP;
module_param(post_err, int, 0444);
MODULE_PARM_DESC(post_err, "With ext=0: the errno posting an atomic or a Write with Immediate Data must fail with");

/*
 * The C siw's siw_post_send() leaves a refused request's flags in its send queue slot, and
 * takes a slot with flags as a full queue: after one refused post, every later one fails
 * with ENOMEM. On the C siw the refused posts are therefore skipped (try_refused=0).
 */
static bool try_refused = true;
module_param(try_refused, bool, 0444);
MODULE_PARM_DESC(try_refused, "Post the requests that must be refused (0 on the C siw, whose queue a refused post jams)");

static void cli_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct k7306_conn *c = cq->cq_context;
	int n = atomic_read(&c->completions);

	if (n < ARRAY_SIZE(c->op)) {
		c->op[n] = wc->opcode;
		c->len[n] = wc->byte_len;
	}
	if (wc->status != IB_WC_SUCCESS && c->first_err == IB_WC_SUCCESS)
		c->first_err = wc->status;
	atomic_inc(&c->completions);
	complete(&c->progress);
}

/* Waits until `n` completions arrived in all; `err` whether one may have failed. */
static int wait_completions(struct k7306_conn *c, int n, bool err, const char *what)
{
	while (atomic_read(&c->completions) < n) {
		if (!wait_for_completion_timeout(&c->progress, KV_TMO)) {
			pr_err("k7306_client: %s: %d of %d completions after 30 s\n", what,
			       atomic_read(&c->completions), n);
			return -ETIMEDOUT;
		}
	}
	if (!err && c->first_err != IB_WC_SUCCESS) {
		pr_err("k7306_client: %s: completion %s\n", what, ib_wc_status_msg(c->first_err));
		return -EIO;
	}
	return 0;
}

static int expect_ops(struct k7306_conn *c, int from, const enum ib_wc_opcode *op,
		      const u32 *len, int n, const char *what)
{
	int i;

	for (i = 0; i < n; i++) {
		if (c->op[from + i] != op[i] || c->len[from + i] != len[i]) {
			pr_err("k7306_client: %s: completion %d: opcode %d len %u, expected %d %u\n",
			       what, i, c->op[from + i], c->len[from + i], op[i], len[i]);
			return -EIO;
		}
	}
	return 0;
}

static struct ib_atomic_wr new_atomic(struct k7306_conn *c, enum ib_wr_opcode opcode,
				      u64 raddr, u32 rkey)
{
	struct ib_atomic_wr a = {
		.wr = { .wr_cqe = &c->cqe_send, .opcode = opcode, .send_flags = IB_SEND_SIGNALED,
			.num_sge = 1 },
		.remote_addr = raddr,
		.rkey = rkey,
	};

	return a;
}

/* The six atomics and the Read of the words, in one list (ext=1). */
static int run_atomics(struct k7306_conn *c, u64 raddr, u32 rkey)
{
	static const u64 orig[] = { W0, W0 + 5, W1, W1_END, W2, W3 };
	static const u64 end[] = { W0_END, W1_END, W2_END, W3_END };
	static const enum ib_wc_opcode ops[] = {
		IB_WC_FETCH_ADD, IB_WC_FETCH_ADD, IB_WC_COMP_SWAP, IB_WC_COMP_SWAP,
		IB_WC_FETCH_ADD, IB_WC_COMP_SWAP, IB_WC_RDMA_READ,
	};
	static const u32 lens[] = { 8, 8, 8, 8, 8, 8, 32 };
	u64 *sink = (u64 *)c->buf;
	struct ib_sge s[7];
	struct ib_atomic_wr a[6];
	struct ib_rdma_wr read = {
		.wr = { .wr_cqe = &c->cqe_send, .sg_list = &s[6], .num_sge = 1,
			.opcode = IB_WR_RDMA_READ, .send_flags = IB_SEND_SIGNALED },
		.remote_addr = raddr, .rkey = rkey,
	};
	int i, rv;

	memset(c->buf, 0xee, 2 * WLEN);
	for (i = 0; i < 7; i++)
		s[i] = (struct ib_sge){ .addr = c->buf_dma + 8 * i, .length = i < 6 ? 8 : 32,
					.lkey = c->pd->local_dma_lkey };
	/* The Read's sink: after the six originals. */
	s[6].addr = c->buf_dma + 64;
	a[0] = new_atomic(c, IB_WR_ATOMIC_FETCH_AND_ADD, raddr, rkey);
	a[0].compare_add = 5;
	a[1] = new_atomic(c, IB_WR_ATOMIC_FETCH_AND_ADD, raddr, rkey);
	a[1].compare_add = 7;
	a[2] = new_atomic(c, IB_WR_ATOMIC_CMP_AND_SWP, raddr + 8, rkey);
	a[2].compare_add = W1;
	a[2].swap = W1_END;
	a[3] = new_atomic(c, IB_WR_ATOMIC_CMP_AND_SWP, raddr + 8, rkey);
	a[3].compare_add = W1;
	a[3].swap = 0xccccULL;
	/* Two 32-bit fields (bit 31 tops the low one), 1 added to each: the low one wraps
	 * from 0xffffffff to 0 and its carry is dropped, the high one goes from 0 to 1. */
	a[4] = new_atomic(c, IB_WR_MASKED_ATOMIC_FETCH_AND_ADD, raddr + 16, rkey);
	a[4].compare_add = 0x0000000100000001ULL;
	a[4].compare_add_mask = 1ULL << 31;
	/* Compare the low byte (0x88), swap the high half. */
	a[5] = new_atomic(c, IB_WR_MASKED_ATOMIC_CMP_AND_SWP, raddr + 24, rkey);
	a[5].compare_add = 0x88;
	a[5].compare_add_mask = 0xff;
	a[5].swap = 0xaabbccdd00000000ULL;
	a[5].swap_mask = 0xffffffff00000000ULL;
	for (i = 0; i < 6; i++) {
		a[i].wr.sg_list = &s[i];
		a[i].wr.next = i < 5 ? &a[i + 1].wr : &read.wr;
	}
	rv = ib_post_send(c->id->qp, &a[0].wr, NULL);
	if (rv) {
		pr_err("k7306_client: posting the atomics: %d\n", rv);
		return rv;
	}
	rv = wait_completions(c, 8, false, "atomics and Read");
	if (!rv)
		rv = expect_ops(c, 1, ops, lens, 7, "atomics and Read");
	if (rv)
		return rv;
	for (i = 0; i < 6; i++) {
		if (sink[i] != orig[i]) {
			pr_err("k7306_client: atomic %d returned %#llx, expected %#llx\n", i, sink[i],
			       orig[i]);
			return -EIO;
		}
	}
	for (i = 0; i < 4; i++) {
		if (sink[8 + i] != end[i]) {
			pr_err("k7306_client: word %d read back as %#llx, expected %#llx\n", i,
			       sink[8 + i], end[i]);
			return -EIO;
		}
	}
	pr_info("k7306_client: six atomics returned the original values, the words read back as expected\n");
	return 0;
}

/* Three Writes with Immediate Data and "done" (ext=1). */
static int run_imm(struct k7306_conn *c, u64 raddr, u32 rkey)
{
	static const enum ib_wc_opcode ops[] = {
		IB_WC_RDMA_WRITE, IB_WC_RDMA_WRITE, IB_WC_RDMA_WRITE, IB_WC_RECV,
	};
	static const u32 lens[] = { WLEN, INLINE_LEN, 0, 4 };
	struct ib_sge ws[2] = {
		{ .addr = c->buf_dma, .length = WLEN / 2, .lkey = c->pd->local_dma_lkey },
		{ .addr = c->buf_dma + WLEN / 2, .length = WLEN / 2,
		  .lkey = c->pd->local_dma_lkey },
	};
	/* Inline: copied at post time from a kernel address. */
	struct ib_sge is = { .addr = (uintptr_t)(c->buf + WLEN), .length = INLINE_LEN };
	struct ib_sge ds = { .addr = (uintptr_t)msg_at(c, NRECV + 2), .length = 5 };
	/* Unsignalled: the server's status answers it. */
	struct ib_send_wr done = {
		.wr_cqe = &c->cqe_send, .sg_list = &ds, .num_sge = 1, .opcode = IB_WR_SEND,
		.send_flags = IB_SEND_INLINE,
	};
	struct ib_rdma_wr w3 = {
		.wr = { .next = &done, .wr_cqe = &c->cqe_send, .num_sge = 0,
			.opcode = IB_WR_RDMA_WRITE_WITH_IMM,
			.send_flags = IB_SEND_SIGNALED | IB_SEND_SOLICITED,
			.ex.imm_data = cpu_to_be32(IMM3) },
		.remote_addr = raddr + WAREA + WLEN + INLINE_LEN, .rkey = rkey,
	};
	struct ib_rdma_wr w2 = {
		.wr = { .next = &w3.wr, .wr_cqe = &c->cqe_send, .sg_list = &is, .num_sge = 1,
			.opcode = IB_WR_RDMA_WRITE_WITH_IMM,
			.send_flags = IB_SEND_SIGNALED | IB_SEND_INLINE,
			.ex.imm_data = cpu_to_be32(IMM2) },
		.remote_addr = raddr + WAREA + WLEN, .rkey = rkey,
	};
	struct ib_rdma_wr w1 = {
		.wr = { .next = &w2.wr, .wr_cqe = &c->cqe_send, .sg_list = ws, .num_sge = 2,
			.opcode = IB_WR_RDMA_WRITE_WITH_IMM, .send_flags = IB_SEND_SIGNALED,
			.ex.imm_data = cpu_to_be32(IMM1) },
		.remote_addr = raddr + WAREA, .rkey = rkey,
	};
	size_t i;
	int rv;

	for (i = 0; i < WLEN; i++)
		c->buf[i] = pattern(i);
	for (i = 0; i < INLINE_LEN; i++)
		c->buf[WLEN + i] = pattern(i);
	memcpy(msg_at(c, NRECV + 2), "done", 5);
	rv = ib_post_send(c->id->qp, &w1.wr, NULL);
	if (rv) {
		pr_err("k7306_client: posting the Writes with Immediate Data: %d\n", rv);
		return rv;
	}
	/* Three Writes and the server's status. */
	rv = wait_completions(c, 12, false, "Writes with Immediate Data and the status");
	if (!rv)
		rv = expect_ops(c, 8, ops, lens, 4, "Writes with Immediate Data and the status");
	return rv;
}

/* ext=0: the RFC 7306 operations fail to post, a plain Write and "done" go through. */
static int run_refused(struct k7306_conn *c, u64 raddr, u32 rkey)
{
	struct ib_sge s8 = { .addr = c->buf_dma, .length = 8, .lkey = c->pd->local_dma_lkey };
	struct ib_atomic_wr a = new_atomic(c, IB_WR_ATOMIC_FETCH_AND_ADD, raddr, rkey);
	struct ib_rdma_wr wi = {
		.wr = { .wr_cqe = &c->cqe_send, .sg_list = &s8, .num_sge = 1,
			.opcode = IB_WR_RDMA_WRITE_WITH_IMM, .send_flags = IB_SEND_SIGNALED,
			.ex.imm_data = cpu_to_be32(IMM1) },
		.remote_addr = raddr + WAREA, .rkey = rkey,
	};
	struct ib_sge ws = { .addr = c->buf_dma, .length = WLEN, .lkey = c->pd->local_dma_lkey };
	struct ib_sge ds = { .addr = (uintptr_t)msg_at(c, NRECV + 2), .length = 5 };
	struct ib_send_wr done = {
		.wr_cqe = &c->cqe_send, .sg_list = &ds, .num_sge = 1, .opcode = IB_WR_SEND,
		.send_flags = IB_SEND_INLINE,
	};
	struct ib_rdma_wr w = {
		.wr = { .next = &done, .wr_cqe = &c->cqe_send, .sg_list = &ws, .num_sge = 1,
			.opcode = IB_WR_RDMA_WRITE, .send_flags = IB_SEND_SIGNALED },
		.remote_addr = raddr + WAREA, .rkey = rkey,
	};
	const struct ib_send_wr *bad;
	size_t i;
	int rv;

	a.wr.sg_list = &s8;
	a.compare_add = 1;
	if (try_refused) {
		rv = ib_post_send(c->id->qp, &a.wr, &bad);
		if (rv != post_err) {
			pr_err("k7306_client: posting an atomic: %d, expected %d\n", rv, post_err);
			return -EIO;
		}
		rv = ib_post_send(c->id->qp, &wi.wr, &bad);
		if (rv != post_err) {
			pr_err("k7306_client: posting a Write with Immediate Data: %d, expected %d\n",
			       rv, post_err);
			return -EIO;
		}
	}
	for (i = 0; i < WLEN; i++)
		c->buf[i] = pattern(i);
	memcpy(msg_at(c, NRECV + 2), "done", 5);
	rv = ib_post_send(c->id->qp, &w.wr, NULL);
	if (!rv)
		rv = wait_completions(c, 3, false, "the plain Write and the status");
	if (!rv && *(__be32 *)msg_at(c, 1) != 0) {
		pr_err("k7306_client: the server reports a mismatch\n");
		rv = -EIO;
	}
	if (!rv && try_refused)
		pr_info("k7306_client: atomic and Write with Immediate Data refused to post (%d); a plain Write went through\n",
			post_err);
	else if (!rv)
		pr_info("k7306_client: a plain Write went through\n");
	return rv;
}

/* ext=1, last: an atomic on a misaligned word, which the server must refuse. */
static int run_misaligned(struct k7306_conn *c, u64 raddr, u32 rkey)
{
	struct ib_sge s = { .addr = c->buf_dma, .length = 8, .lkey = c->pd->local_dma_lkey };
	struct ib_atomic_wr a = new_atomic(c, IB_WR_ATOMIC_FETCH_AND_ADD, raddr + 4, rkey);
	int n = atomic_read(&c->completions), rv;

	a.wr.sg_list = &s;
	a.compare_add = 1;
	rv = ib_post_send(c->id->qp, &a.wr, NULL);
	if (rv) {
		pr_err("k7306_client: posting the misaligned atomic: %d\n", rv);
		return rv;
	}
	rv = wait_completions(c, n + 1, true, "the misaligned atomic");
	if (rv)
		return rv;
	if (c->first_err == IB_WC_SUCCESS) {
		pr_err("k7306_client: the misaligned atomic succeeded\n");
		return -EIO;
	}
	pr_info("k7306_client: the misaligned atomic completed with %s\n",
		ib_wc_status_msg(c->first_err));
	return 0;
}

static int cli_run(struct k7306_conn *c)
{
	struct rdma_conn_param p = { .responder_resources = 8, .initiator_depth = 8,
				     .retry_count = 7 };
	struct k7306_info *info;
	u64 raddr;
	u32 rkey;
	int i, rv;

	rv = kv_resolve(c->id, &c->cm, addr, K7306_PORT, "k7306_client");
	if (!rv)
		rv = setup(c, IB_POLL_WORKQUEUE);
	/* The server's info and its status. */
	for (i = 0; !rv && i < 2; i++) {
		struct ib_sge s = { .addr = msg_dma(c, i), .length = MSG_LEN,
				    .lkey = c->pd->local_dma_lkey };
		struct ib_recv_wr r = { .wr_cqe = &c->cqe_recv, .sg_list = &s, .num_sge = 1 };

		rv = ib_post_recv(c->id->qp, &r, NULL);
	}
	if (!rv)
		rv = rdma_connect(c->id, &p);
	if (!rv)
		rv = kv_wait(&c->cm, RDMA_CM_EVENT_ESTABLISHED, "k7306_client");
	if (!rv)
		rv = wait_completions(c, 1, false, "the server's target info");
	if (rv)
		return rv;
	info = (struct k7306_info *)msg_at(c, 0);
	raddr = be64_to_cpu(info->addr);
	rkey = be32_to_cpu(info->rkey);
	if (be32_to_cpu(info->len) != TLEN) {
		pr_err("k7306_client: target of %u bytes\n", be32_to_cpu(info->len));
		return -EIO;
	}
	/* RFC 7306 has no Send with Immediate Data: refused, whatever the peer. */
	if (try_refused) {
		struct ib_sge s = { .addr = c->buf_dma, .length = 8, .lkey = c->pd->local_dma_lkey };
		struct ib_send_wr si = { .wr_cqe = &c->cqe_send, .sg_list = &s, .num_sge = 1,
					 .opcode = IB_WR_SEND_WITH_IMM,
					 .send_flags = IB_SEND_SIGNALED };
		const struct ib_send_wr *bad;

		rv = ib_post_send(c->id->qp, &si, &bad);
		if (rv != -EINVAL) {
			pr_err("k7306_client: posting a Send with Immediate Data: %d, expected %d\n",
			       rv, -EINVAL);
			return -EIO;
		}
	}
	if (!ext)
		return run_refused(c, raddr, rkey);
	rv = run_atomics(c, raddr, rkey);
	if (!rv)
		rv = run_imm(c, raddr, rkey);
	if (rv)
		return rv;
	if (*(__be32 *)msg_at(c, 1) != 0) {
		pr_err("k7306_client: the server reports a mismatch (%u)\n",
		       be32_to_cpu(*(__be32 *)msg_at(c, 1)));
		return -EIO;
	}
	pr_info("k7306_client: three Writes with Immediate Data sent; the server verified them and the words\n");
	return run_misaligned(c, raddr, rkey);
}

static int __init k7306_init(void)
{
	struct k7306_conn *c = kzalloc(sizeof(*c), GFP_KERNEL);
	int rv;

	if (!c)
		return -ENOMEM;
	init_completion(&c->progress);
	c->cqe_recv.done = cli_done;
	c->cqe_send.done = cli_done;
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

static void __exit k7306_exit(void)
{
}

#endif

module_init(k7306_init);
module_exit(k7306_exit);
MODULE_DESCRIPTION("siw_rs selftests: RFC 7306 from a kernel consumer");
MODULE_LICENSE("GPL");
