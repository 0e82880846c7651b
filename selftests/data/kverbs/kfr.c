// SPDX-License-Identifier: GPL-2.0
/*
 * kfr: fast registration (FRWR) as kernel ULPs use it, and its error paths, from a kernel
 * consumer of siw_rs's selftests. Both ends live in this module, on one device: a client
 * connects over rdma_cm to the device's own address (addr=), the module accepts. Each
 * check that must end the connection gets a connection of its own. Completions are polled
 * (IB_POLL_DIRECT), so every step runs in order in module init: insmod fails unless all
 * checks passed, and the kernel log names the one that did not.
 *
 *  1. ib_alloc_mr beyond max_fast_reg_page_list_len fails; ib_map_mr_sg of more pages
 *     than the MR was allocated for maps less than asked.
 *  2. REG_MR (with ib_update_fast_reg_key); a peer's RDMA Write into it, checked byte for
 *     byte; RDMA Read with Invalidate into a fast-registered sink, checked byte for byte,
 *     after which the sink registers again (a REG_MR of a valid MR fails, see 5); Send with
 *     Invalidate: the receive completes with IB_WC_WITH_INVALIDATE and the STag; a Write
 *     to the invalidated STag is refused: nothing placed, the connection terminated.
 *  3. LOCAL_INV, then a peer's Write to the STag: refused, nothing placed.
 *  4. REG_MR of an MR that is valid: an error completion.
 *  5. Send with Invalidate naming another PD's STag, and one naming a DMA MR (which cannot
 *     be invalidated): refused, the connection terminated.
 */
#include <linux/module.h>
#include <linux/inet.h>
#include <linux/slab.h>
#include <linux/delay.h>
#include <linux/completion.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <linux/scatterlist.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#define KFR_PORT 7473
#define LEN (16 * 1024)
#define PAGES (LEN / PAGE_SIZE)
#define MSG 64
#define TMO (30 * HZ)
#define ACCESS_ALL (IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ)

static char *addr = "192.168.77.1";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "An IPv4 address of the device under test");

struct end {
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	u8 *buf, *buf2, *msg;
	struct ib_mr *mr, *mr2;
};

static struct {
	struct rdma_cm_id *listen;
	struct end cli, srv;
	struct completion cli_ev, req;
	enum rdma_cm_event_type cli_event;
	int cli_status;
} k;

static u8 pat(size_t i, u8 salt)
{
	return (u8)(i * 131 + (i >> 9) + 7) ^ salt;
}

static int cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	if (id == k.listen || (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)) {
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST && !k.srv.id) {
			k.srv.id = id;
			complete(&k.req);
			return 0;
		}
		/* A second request while one is served: refuse (destroys the new id). */
		return ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ? -EBUSY : 0;
	}
	/* The client's events drive the test; the server side's need no answer. */
	if (id == k.cli.id) {
		k.cli_event = ev->event;
		k.cli_status = ev->status;
		complete(&k.cli_ev);
	}
	return 0;
}

static int wait_cli(enum rdma_cm_event_type want)
{
	if (!wait_for_completion_timeout(&k.cli_ev, TMO))
		return -ETIMEDOUT;
	reinit_completion(&k.cli_ev);
	if (k.cli_event != want) {
		pr_err("kfr: cm event %s (%d), expected %s\n", rdma_event_msg(k.cli_event),
		       k.cli_status, rdma_event_msg(want));
		return -EIO;
	}
	return 0;
}

/* One completion from cq within ms milliseconds: 0, or -ETIMEDOUT. */
static int poll_one(struct ib_cq *cq, struct ib_wc *wc, int ms)
{
	unsigned long end = jiffies + msecs_to_jiffies(ms);

	do {
		if (ib_poll_cq(cq, 1, wc) == 1)
			return 0;
		usleep_range(500, 1000);
	} while (time_before(jiffies, end));
	return -ETIMEDOUT;
}

/* The completion of the request just posted with id `what`: its status, or -ETIMEDOUT. */
static int done(struct end *e, u64 what, struct ib_wc *wc)
{
	int rv = poll_one(e->cq, wc, 10000);

	if (rv)
		return rv;
	if (wc->wr_id != what) {
		pr_err("kfr: completion of wr %llu, expected %llu\n", wc->wr_id, what);
		return -EIO;
	}
	return wc->status;
}

static int setup_end(struct end *e, unsigned int pd_flags)
{
	struct ib_qp_init_attr qa = {};
	struct ib_device *dev = e->id->device;
	int rv;

	e->buf = kzalloc(LEN, GFP_KERNEL);
	e->buf2 = kzalloc(LEN, GFP_KERNEL);
	e->msg = kzalloc(MSG, GFP_KERNEL);
	if (!e->buf || !e->buf2 || !e->msg)
		return -ENOMEM;
	e->pd = ib_alloc_pd(dev, pd_flags);
	if (IS_ERR(e->pd)) {
		rv = PTR_ERR(e->pd);
		e->pd = NULL;
		return rv;
	}
	e->cq = ib_alloc_cq(dev, e, 32, 0, IB_POLL_DIRECT);
	if (IS_ERR(e->cq)) {
		rv = PTR_ERR(e->cq);
		e->cq = NULL;
		return rv;
	}
	qa.send_cq = e->cq;
	qa.recv_cq = e->cq;
	qa.qp_type = IB_QPT_RC;
	qa.sq_sig_type = IB_SIGNAL_REQ_WR;
	qa.cap.max_send_wr = 16;
	qa.cap.max_recv_wr = 8;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	return rdma_create_qp(e->id, e->pd, &qa);
}

static void teardown_end(struct end *e)
{
	struct ib_wc wc;

	if (e->id && e->id->qp) {
		struct ib_qp_attr a = { .qp_state = IB_QPS_ERR };

		ib_modify_qp(e->id->qp, &a, IB_QP_STATE);
		/* Take the flushes (direct CQs cannot be drained by ib_drain_qp). */
		while (poll_one(e->cq, &wc, 200) == 0)
			;
		rdma_destroy_qp(e->id);
	}
	if (e->mr)
		ib_dereg_mr(e->mr);
	if (e->mr2)
		ib_dereg_mr(e->mr2);
	if (e->cq)
		ib_free_cq(e->cq);
	if (e->pd)
		ib_dealloc_pd(e->pd);
	if (e->id)
		rdma_destroy_id(e->id);
	kfree(e->buf);
	kfree(e->buf2);
	kfree(e->msg);
	memset(e, 0, sizeof(*e));
}

static void disconnect(void)
{
	if (k.cli.id)
		rdma_disconnect(k.cli.id);
	teardown_end(&k.cli);
	teardown_end(&k.srv);
	reinit_completion(&k.cli_ev);
	reinit_completion(&k.req);
}

/* A fresh connection: k.cli connected to k.srv. The server's PD has a global rkey (a DMA
 * MR) only with srv_pd_flags = IB_PD_UNSAFE_GLOBAL_RKEY. */
static int connect(unsigned int srv_pd_flags)
{
	struct rdma_conn_param p = { .responder_resources = 4, .initiator_depth = 4,
				     .retry_count = 7 };
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(KFR_PORT) };
	int rv;

	dst.sin_addr.s_addr = in_aton(addr);
	k.cli.id = rdma_create_id(current->nsproxy->net_ns, cm_handler, NULL, RDMA_PS_TCP,
				  IB_QPT_RC);
	if (IS_ERR(k.cli.id)) {
		rv = PTR_ERR(k.cli.id);
		k.cli.id = NULL;
		return rv;
	}
	rv = rdma_resolve_addr(k.cli.id, NULL, (struct sockaddr *)&dst, 5000);
	if (!rv)
		rv = wait_cli(RDMA_CM_EVENT_ADDR_RESOLVED);
	if (!rv)
		rv = rdma_resolve_route(k.cli.id, 5000);
	if (!rv)
		rv = wait_cli(RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (!rv)
		rv = setup_end(&k.cli, 0);
	if (!rv)
		rv = rdma_connect(k.cli.id, &p);
	if (rv)
		return rv;
	if (!wait_for_completion_timeout(&k.req, TMO))
		return -ETIMEDOUT;
	rv = setup_end(&k.srv, srv_pd_flags);
	if (!rv) {
		/* Outside the event handler, accept holds the id's handler lock. */
		rdma_lock_handler(k.srv.id);
		rv = rdma_accept(k.srv.id, &p);
		rdma_unlock_handler(k.srv.id);
	}
	if (!rv)
		rv = wait_cli(RDMA_CM_EVENT_ESTABLISHED);
	return rv;
}

static int post_recv(struct end *e, u64 id)
{
	struct ib_sge s = { .addr = (u64)(uintptr_t)e->msg, .length = MSG,
			    .lkey = e->pd->local_dma_lkey };
	struct ib_recv_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1 };

	return ib_post_recv(e->id->qp, &wr, NULL);
}

/* Send (with Invalidate of inv if inv != 0) of a short message. */
static int post_send(struct end *e, u64 id, u32 inv)
{
	struct ib_sge s = { .addr = (u64)(uintptr_t)e->msg, .length = 8,
			    .lkey = e->pd->local_dma_lkey };
	struct ib_send_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1,
				 .opcode = inv ? IB_WR_SEND_WITH_INV : IB_WR_SEND,
				 .send_flags = IB_SEND_SIGNALED };

	wr.ex.invalidate_rkey = inv;
	return ib_post_send(e->id->qp, &wr, NULL);
}

/* RDMA Write of e->buf (LEN bytes) to iova/rkey. */
static int post_write(struct end *e, u64 id, u64 iova, u32 rkey)
{
	struct ib_sge s = { .addr = (u64)(uintptr_t)e->buf, .length = LEN,
			    .lkey = e->pd->local_dma_lkey };
	struct ib_rdma_wr wr = { .wr = { .wr_id = id, .sg_list = &s, .num_sge = 1,
					 .opcode = IB_WR_RDMA_WRITE,
					 .send_flags = IB_SEND_SIGNALED },
				 .remote_addr = iova, .rkey = rkey };

	return ib_post_send(e->id->qp, &wr.wr, NULL);
}

/* Maps buf (LEN bytes) onto mr: the number of scatterlist entries mapped (1) or an errno. */
static int map(struct end *e, struct ib_mr *mr, u8 *buf)
{
	struct scatterlist sg;
	int n;

	sg_init_one(&sg, buf, LEN);
	if (ib_dma_map_sg(e->id->device, &sg, 1, DMA_BIDIRECTIONAL) != 1)
		return -EIO;
	n = ib_map_mr_sg(mr, &sg, 1, NULL, PAGE_SIZE);
	ib_dma_unmap_sg(e->id->device, &sg, 1, DMA_BIDIRECTIONAL);
	return n;
}

/* REG_MR of mr with a new key: the completion status. */
static int reg(struct end *e, struct ib_mr *mr, int access)
{
	struct ib_reg_wr wr = { .wr = { .wr_id = 100, .opcode = IB_WR_REG_MR,
					.send_flags = IB_SEND_SIGNALED },
				.mr = mr, .access = access };
	struct ib_wc wc;
	int rv;

	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	wr.key = mr->rkey;
	rv = ib_post_send(e->id->qp, &wr.wr, NULL);
	if (rv)
		return rv;
	rv = done(e, 100, &wc);
	if (rv == IB_WC_SUCCESS && wc.opcode != IB_WC_REG_MR) {
		pr_err("kfr: REG_MR completed as opcode %d\n", wc.opcode);
		return -EIO;
	}
	return rv;
}

/* A fast-registration MR of e's PD over buf, mapped and registered with access. */
static struct ib_mr *fast_mr(struct end *e, u8 *buf, int access)
{
	struct ib_mr *mr = ib_alloc_mr(e->pd, IB_MR_TYPE_MEM_REG, PAGES);
	int rv;

	if (IS_ERR(mr))
		return mr;
	rv = map(e, mr, buf);
	if (rv != 1) {
		pr_err("kfr: ib_map_mr_sg mapped %d of 1\n", rv);
		ib_dereg_mr(mr);
		return ERR_PTR(-EIO);
	}
	rv = reg(e, mr, access);
	if (rv) {
		pr_err("kfr: REG_MR: status %d\n", rv);
		ib_dereg_mr(mr);
		return ERR_PTR(-EIO);
	}
	return mr;
}

static int check(const u8 *p, u8 salt, const char *what)
{
	size_t i;

	for (i = 0; i < LEN; i++) {
		if (p[i] != pat(i, salt)) {
			pr_err("kfr: %s: byte %zu is %#x, expected %#x\n", what, i, p[i],
			       pat(i, salt));
			return -EIO;
		}
	}
	return 0;
}

static void fill(u8 *p, u8 salt)
{
	size_t i;

	for (i = 0; i < LEN; i++)
		p[i] = pat(i, salt);
}

/* A Send from the client must arrive: the server's receive completes successfully. */
static int ping(void)
{
	struct ib_wc wc;
	int rv = post_recv(&k.srv, 1);

	if (!rv)
		rv = post_send(&k.cli, 2, 0);
	if (!rv)
		rv = done(&k.cli, 2, &wc);
	if (!rv)
		rv = done(&k.srv, 1, &wc);
	if (rv)
		pr_err("kfr: ping: %d\n", rv);
	return rv;
}

/* What the client just posted was refused by the server: a Send after it never arrives
 * (the server's receive completes flushed, not successfully) as the server terminated the
 * connection, and the server's buffer still holds `salt`'s pattern (0: zeroes). */
static int refused(const char *what, int zero_salt, u8 salt)
{
	struct ib_wc wc;
	int rv;

	rv = post_send(&k.cli, 4, 0);
	if (rv && rv != -EINVAL && rv != -ENOTCONN)
		return rv;
	rv = poll_one(k.srv.cq, &wc, 15000);
	while (!rv && wc.wr_id != 3)
		rv = poll_one(k.srv.cq, &wc, 15000);
	if (rv) {
		pr_err("kfr: %s: the server's receive never completed (%d)\n", what, rv);
		return -EIO;
	}
	if (wc.status == IB_WC_SUCCESS) {
		pr_err("kfr: %s: accepted, expected a Terminate\n", what);
		return -EIO;
	}
	if (zero_salt) {
		size_t i;

		for (i = 0; i < LEN; i++) {
			if (k.srv.buf[i]) {
				pr_err("kfr: %s: byte %zu placed\n", what, i);
				return -EIO;
			}
		}
	} else if (check(k.srv.buf, salt, what)) {
		return -EIO;
	}
	pr_info("kfr: %s: refused (%s), nothing placed\n", what, ib_wc_status_msg(wc.status));
	return 0;
}

/* The server's buffer behind a fast-registered STag with every right, as k.srv.mr. */
static int srv_fast_mr(void)
{
	k.srv.mr = fast_mr(&k.srv, k.srv.buf, ACCESS_ALL);
	if (IS_ERR(k.srv.mr)) {
		int rv = PTR_ERR(k.srv.mr);

		k.srv.mr = NULL;
		return rv;
	}
	return 0;
}

/* The client writes a new pattern to the server's STag, which is no longer valid: the
 * write must be refused and the server's buffer keep what it held (zeroes if zero). */
static int write_refused(const char *what, int zero)
{
	int rv = post_recv(&k.srv, 3);

	if (rv)
		return rv;
	fill(k.cli.buf, 0x5a);
	rv = post_write(&k.cli, 14, k.srv.mr->iova, k.srv.mr->rkey);
	if (rv)
		return rv;
	return refused(what, zero, 0);
}

static int test_limits(void)
{
	struct ib_device *dev = k.cli.id->device;
	u32 max = dev->attrs.max_fast_reg_page_list_len;
	struct ib_mr *mr;
	int n;

	mr = ib_alloc_mr(k.cli.pd, IB_MR_TYPE_MEM_REG, max + 1);
	if (!IS_ERR(mr)) {
		pr_err("kfr: ib_alloc_mr of %u pages (max %u) succeeded\n", max + 1, max);
		ib_dereg_mr(mr);
		return -EIO;
	}
	mr = ib_alloc_mr(k.cli.pd, IB_MR_TYPE_MEM_REG, PAGES / 2);
	if (IS_ERR(mr))
		return PTR_ERR(mr);
	n = map(&k.cli, mr, k.cli.buf);
	ib_dereg_mr(mr);
	if (n == 1) {
		pr_err("kfr: ib_map_mr_sg of %lu pages onto an MR of %lu succeeded\n", PAGES,
		       PAGES / 2);
		return -EIO;
	}
	pr_info("kfr: page list too long: alloc beyond %u refused, map of %lu pages onto %lu refused (%d)\n",
		max, PAGES, PAGES / 2, n);
	return 0;
}

static int test_data_and_remote_inv(void)
{
	struct ib_wc wc;
	struct ib_rdma_wr rd = {};
	struct ib_sge s;
	int rv;

	/* The server exposes buf through a fast-registered STag; the client writes it. */
	rv = srv_fast_mr();
	if (rv)
		return rv;
	fill(k.cli.buf, 0);
	rv = post_write(&k.cli, 10, k.srv.mr->iova, k.srv.mr->rkey);
	if (!rv)
		rv = done(&k.cli, 10, &wc);
	if (!rv)
		rv = ping();
	if (!rv)
		rv = check(k.srv.buf, 0, "RDMA Write into a fast-registered STag");
	if (rv)
		return rv;
	pr_info("kfr: RDMA Write into a fast-registered STag: %d bytes verified\n", LEN);

	/* Read it back with Invalidate into a fast-registered sink of the client. */
	k.cli.mr = fast_mr(&k.cli, k.cli.buf2, IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE);
	if (IS_ERR(k.cli.mr)) {
		rv = PTR_ERR(k.cli.mr);
		k.cli.mr = NULL;
		return rv;
	}
	s = (struct ib_sge){ .addr = k.cli.mr->iova, .length = LEN, .lkey = k.cli.mr->lkey };
	rd.wr.wr_id = 11;
	rd.wr.sg_list = &s;
	rd.wr.num_sge = 1;
	rd.wr.opcode = IB_WR_RDMA_READ_WITH_INV;
	rd.wr.send_flags = IB_SEND_SIGNALED;
	rd.wr.ex.invalidate_rkey = k.cli.mr->lkey;
	rd.remote_addr = k.srv.mr->iova;
	rd.rkey = k.srv.mr->rkey;
	rv = ib_post_send(k.cli.id->qp, &rd.wr, NULL);
	if (!rv)
		rv = done(&k.cli, 11, &wc);
	if (!rv && wc.opcode != IB_WC_RDMA_READ)
		rv = -EIO;
	if (!rv)
		rv = check(k.cli.buf2, 0, "RDMA Read with Invalidate");
	if (rv) {
		pr_err("kfr: RDMA Read with Invalidate: %d\n", rv);
		return rv;
	}
	/* The sink was invalidated: it registers again (REG_MR of a valid MR fails). */
	rv = reg(&k.cli, k.cli.mr, IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE);
	if (rv) {
		pr_err("kfr: REG_MR after Read with Invalidate: status %d (sink not invalidated?)\n",
		       rv);
		return -EIO;
	}
	pr_info("kfr: RDMA Read with Invalidate: %d bytes verified, sink invalidated\n", LEN);

	/* Send with Invalidate of the server's STag. */
	rv = post_recv(&k.srv, 12);
	if (!rv)
		rv = post_send(&k.cli, 13, k.srv.mr->rkey);
	if (!rv)
		rv = done(&k.cli, 13, &wc);
	if (!rv)
		rv = done(&k.srv, 12, &wc);
	if (rv)
		return rv;
	if (!(wc.wc_flags & IB_WC_WITH_INVALIDATE) || wc.ex.invalidate_rkey != k.srv.mr->rkey) {
		pr_err("kfr: Send with Invalidate: wc_flags %#x, invalidate_rkey %#x, expected %#x\n",
		       wc.wc_flags, wc.ex.invalidate_rkey, k.srv.mr->rkey);
		return -EIO;
	}
	pr_info("kfr: Send with Invalidate: completion carries IB_WC_WITH_INVALIDATE and the STag\n");

	/* A Write to the invalidated STag; the buffer keeps the first Write's pattern. */
	return write_refused("RDMA Write after remote invalidation", 0);
}

static int test_local_inv(void)
{
	struct ib_send_wr inv = { .wr_id = 20, .opcode = IB_WR_LOCAL_INV,
				  .send_flags = IB_SEND_SIGNALED };
	struct ib_wc wc;
	int rv;

	rv = srv_fast_mr();
	if (rv)
		return rv;
	rv = ping();
	if (rv)
		return rv;
	inv.ex.invalidate_rkey = k.srv.mr->rkey;
	rv = ib_post_send(k.srv.id->qp, &inv, NULL);
	if (!rv)
		rv = done(&k.srv, 20, &wc);
	if (!rv && wc.opcode != IB_WC_LOCAL_INV)
		rv = -EIO;
	if (rv) {
		pr_err("kfr: LOCAL_INV: %d\n", rv);
		return rv;
	}
	/* Nothing was written before: the buffer stays zero. */
	return write_refused("RDMA Write after LOCAL_INV", 1);
}

static int test_reg_valid(void)
{
	int rv;

	rv = srv_fast_mr();
	if (rv)
		return rv;
	rv = reg(&k.srv, k.srv.mr, ACCESS_ALL);
	if (rv == IB_WC_SUCCESS) {
		pr_err("kfr: REG_MR of a valid MR succeeded\n");
		return -EIO;
	}
	if (rv < 0)
		return rv;
	pr_info("kfr: REG_MR of a valid MR: %s\n", ib_wc_status_msg(rv));
	return 0;
}

/* Send with Invalidate of an STag the server must not invalidate: the receive completes
 * with IB_WC_REM_INV_REQ_ERR (as from the C siw), the connection is terminated. */
static int test_bad_remote_inv(const char *what, u32 stag)
{
	struct ib_wc wc;
	int rv = ping();

	if (rv)
		return rv;
	rv = post_recv(&k.srv, 3);
	if (!rv)
		rv = post_send(&k.cli, 30, stag);
	if (rv)
		return rv;
	rv = poll_one(k.srv.cq, &wc, 15000);
	if (rv || wc.wr_id != 3 || wc.status != IB_WC_REM_INV_REQ_ERR) {
		pr_err("kfr: %s: receive completed with %s (%d), expected %s\n", what,
		       rv ? "nothing" : ib_wc_status_msg(wc.status), rv,
		       ib_wc_status_msg(IB_WC_REM_INV_REQ_ERR));
		return -EIO;
	}
	/* And the server terminated the connection: the client sees it close. */
	rv = wait_cli(RDMA_CM_EVENT_DISCONNECTED);
	if (rv) {
		pr_err("kfr: %s: the client's connection did not close (%d)\n", what, rv);
		return rv;
	}
	pr_info("kfr: %s: refused (%s), connection terminated\n", what,
		ib_wc_status_msg(wc.status));
	return 0;
}

static int test_limits_data_remote_inv(void)
{
	int rv = test_limits();

	return rv ? rv : test_data_and_remote_inv();
}

/* An STag of another PD of the server's device (a fast-registration MR, never registered). */
static int test_foreign_pd(void)
{
	struct ib_pd *other = ib_alloc_pd(k.srv.id->device, 0);
	struct ib_mr *foreign;
	int rv;

	if (IS_ERR(other))
		return PTR_ERR(other);
	foreign = ib_alloc_mr(other, IB_MR_TYPE_MEM_REG, PAGES);
	if (IS_ERR(foreign)) {
		rv = PTR_ERR(foreign);
	} else {
		rv = test_bad_remote_inv("Send with Invalidate of another PD's STag",
					 foreign->rkey);
		ib_dereg_mr(foreign);
	}
	ib_dealloc_pd(other);
	return rv;
}

/* The STag of the server PD's DMA MR (its unsafe global rkey): registered memory. */
static int test_dma_mr(void)
{
	return test_bad_remote_inv("Send with Invalidate of a DMA MR's STag",
				   k.srv.pd->unsafe_global_rkey);
}

static const struct {
	int (*test)(void);
	unsigned int srv_pd_flags;
} tests[] = {
	{ test_limits_data_remote_inv, 0 },
	{ test_local_inv, 0 },
	{ test_reg_valid, 0 },
	{ test_foreign_pd, 0 },
	{ test_dma_mr, IB_PD_UNSAFE_GLOBAL_RKEY },
};

static int run(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(KFR_PORT) };
	size_t i;
	int rv;

	init_completion(&k.cli_ev);
	init_completion(&k.req);
	a.sin_addr.s_addr = in_aton(addr);
	k.listen = rdma_create_id(current->nsproxy->net_ns, cm_handler, NULL, RDMA_PS_TCP,
				  IB_QPT_RC);
	if (IS_ERR(k.listen)) {
		rv = PTR_ERR(k.listen);
		k.listen = NULL;
		return rv;
	}
	rv = rdma_bind_addr(k.listen, (struct sockaddr *)&a);
	if (!rv)
		rv = rdma_listen(k.listen, 4);
	/* A connection of its own for each: the error paths end theirs. */
	for (i = 0; !rv && i < ARRAY_SIZE(tests); i++) {
		rv = connect(tests[i].srv_pd_flags);
		if (!rv)
			rv = tests[i].test();
		disconnect();
	}
	return rv;
}

static int __init kfr_init(void)
{
	int rv = run();

	if (k.listen)
		rdma_destroy_id(k.listen);
	if (rv) {
		pr_err("kfr: failed (%d)\n", rv);
		return rv < 0 ? rv : -EIO;
	}
	pr_info("kfr: all fast-registration checks passed\n");
	return 0;
}

static void __exit kfr_exit(void)
{
}

module_init(kfr_init);
module_exit(kfr_exit);
MODULE_DESCRIPTION("siw_rs selftest: fast registration and its error paths");
MODULE_LICENSE("GPL");
