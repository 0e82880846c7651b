// SPDX-License-Identifier: GPL-2.0
/*
 * data_verify: move many megabytes of pseudo-random data over one RDMA connection
 * (librdmacm + libibverbs) with RDMA Write, RDMA Read and Send, and verify every byte;
 * then check the error paths, one fresh connection each.
 *
 *   data_verify -s ADDR [-m MB]     server (passive side)
 *   data_verify -c ADDR [-m MB]     client (active side, drives the test)
 *   -q (server)  receive through a shared receive queue, its limit armed at all the
 *                receives posted: the first receive must raise exactly one
 *                IBV_EVENT_SRQ_LIMIT_REACHED (the event disarms itself)
 *   -g GIDX -d DEV  (both sides, always together) GID mode: no rdma_cm. Each connection's
 *                QP is made with ibv_create_qp on the device named DEV and connected the
 *                way RoCE users do (ibv_rc_pingpong): the two sides swap their QP number
 *                and the GID at index GIDX of port 1 (an IP address of the device:
 *                ::ffff:a.b.c.d or IPv6) over a plain TCP connection to ADDR port 7472
 *                (the server listens there, the client connects), then move the QP
 *                INIT (the receives are posted here) -> RTR (an AV naming the peer's GID
 *                and QPN) -> RTS with ibv_modify_qp, and the driver makes the iWARP
 *                connection. There is no disconnect: the client destroys its QP when it
 *                is done with a connection, then closes the TCP connection. The server
 *                then expects its own QP in ERROR (after a Terminate) or, as an RC QP
 *                whose peer left, still in RTS until a Send fails after the QP's retry
 *                time: it posts empty Sends until one fails (30 s at most), then tears the
 *                connection down. The data and error phases and -q are the same as with
 *                rdma_cm, byte for byte.
 *   -l           (client) chains: the write phase posts its Write and the request to check
 *                it, the send phase the announcement and its Send, each pair with one
 *                ibv_post_send, so that the driver has both at once (siw_rs packs such
 *                FPDUs into shared TCP segments, RFC 5044 section 5.1)
 *   -v           progress on stderr
 *
 * Data phase (client-driven, message sizes from 1 byte to 256 KiB):
 *   write  the client fills a pattern into its buffer and RDMA Writes it to the server
 *          from 1 to 3 SGEs; a Send then asks the server to verify its buffer.
 *   read   a Send asks the server to fill a pattern; the client RDMA Reads it and
 *          verifies.
 *   send   the client Sends a pattern from 1 to 3 SGEs (inline when it fits) into a
 *          receive of 3 SGEs; the server verifies what the receive holds.
 * Every message carries its own seed, so both sides compute the expected bytes.
 *
 * Error phase (-e): for each case a new connection; the expected outcome is an error
 * completion and the QP in the ERROR state on the client:
 *   bad_rkey    RDMA Write to an rkey the server never registered
 *   bounds      RDMA Write past the end of the server's region
 *   no_right    RDMA Write to a region registered without REMOTE_WRITE
 *   read_right  RDMA Read from a region registered without REMOTE_READ
 *   flush       posted receives complete with WR_FLUSH_ERR when the QP goes to ERROR
 * -E is -e without read_right, for a peer that serves Reads from any region of the PD
 * (the kernel's C siw: anchor-siw.md O2). A -E server (the C siw) may see its info Send
 * fail although the client got it: see server_conn().
 *
 * Prints one line per phase; exits 0 only if every byte and every outcome was right.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define BUF_SIZE (1u << 20)
#define MAX_MSG (256u << 10)
#define PORT "7471"
#define GID_PORT "7472"	/* GID mode: the TCP port of the QPN/GID exchange */

enum { CMD_INFO = 1, CMD_CHECK_WRITE, CMD_FILL, CMD_SEND_NEXT, CMD_DONE, CMD_RESULT };

/* Receives are consumed in the order they were posted, whatever the message: every receive
 * is a slot big enough for any message, posted as 3 SGEs of unequal size. */
#define SLOTS 8

struct ctl {
	uint32_t cmd, len, seed, ok;
	uint64_t addr;
	uint32_t rkey, ro_rkey, wo_rkey, pad;
	uint64_t ro_addr, wo_addr;
};

struct conn {
	struct rdma_event_channel *ec;
	struct rdma_cm_id *listen, *id;	/* rdma_cm mode only */
	struct ibv_context *ctx;	/* id->verbs, or the device opened in GID mode */
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;	/* send and receive completions */
	struct ibv_qp *qp;
	struct ibv_srq *srq;
	char *buf, *rbuf;		/* data, receive slots */
	struct ibv_mr *mr, *rmr, *ctl_mr, *ro_mr, *wo_mr;
	char *ro_buf, *wo_buf;		/* read-only / write-only remote regions */
	struct ctl ctl_out;
	struct ctl peer;
	int gid_fd;			/* GID mode: the TCP connection, open until the QP is gone */
};

static int verbose, use_srq, chain;
/* 0: data phase; 1: -e; 2: -E (the peer is the kernel's C siw) */
static int error_phase;

/* GID mode (-g, -d): set when gid_dev is. */
static const char *gid_dev;
static int gid_index = -1;
static struct ibv_context *gid_ctx;
static union ibv_gid gid_local;
static int gid_lsock = -1;		/* the server's TCP listener */

/* What each side sends the other over TCP in GID mode. */
struct gid_msg {
	uint32_t qpn;			/* network byte order */
	uint8_t gid[16];
};


static void die(const char *what)
{
	fprintf(stderr, "FAIL: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void post_recv_wr(struct conn *c, struct ibv_recv_wr *wr)
{
	struct ibv_recv_wr *bad;

	if (c->srq ? ibv_post_srq_recv(c->srq, wr, &bad) : ibv_post_recv(c->qp, wr, &bad))
		die("post_recv");
}

static uint32_t xs(uint32_t *s)
{
	uint32_t x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

static void fill(char *p, uint32_t len, uint32_t seed)
{
	uint32_t s = seed | 1;

	for (uint32_t i = 0; i < len; i++)
		p[i] = (char)xs(&s);
}

static int check(const char *p, uint32_t len, uint32_t seed)
{
	uint32_t s = seed | 1;

	for (uint32_t i = 0; i < len; i++)
		if (p[i] != (char)xs(&s)) {
			fprintf(stderr, "byte %u of %u differs (seed %u)\n", i, len, seed);
			return 0;
		}
	return 1;
}

static struct rdma_cm_event *expect(struct conn *c, enum rdma_cm_event_type t)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(c->ec, &ev))
		die("rdma_get_cm_event");
	if (ev->event != t) {
		fprintf(stderr, "FAIL: cm event %s, expected %s (status %d)\n",
			rdma_event_str(ev->event), rdma_event_str(t), ev->status);
		exit(1);
	}
	return ev;
}

/* Waits for one completion on `cq`; returns its status (and fills *wc). */
static int wait_cq(struct ibv_cq *cq, struct ibv_wc *wc)
{
	struct timespec t0, t;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		n = ibv_poll_cq(cq, 1, wc);
		if (n < 0)
			die("ibv_poll_cq");
		if (n == 1)
			return wc->status;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 60) {
			fprintf(stderr, "FAIL: no completion within 60 s\n");
			exit(1);
		}
		usleep(50);
	}
}

/* Send-side and receive-side completions. */
static int wait_wc(struct conn *c, struct ibv_wc *wc)
{
	return wait_cq(c->scq, wc);
}

static int wait_rwc(struct conn *c, struct ibv_wc *wc)
{
	return wait_cq(c->rcq, wc);
}

static void wait_ok(struct conn *c, enum ibv_wc_opcode op, const char *what)
{
	struct ibv_wc wc;

	if (wait_wc(c, &wc) != IBV_WC_SUCCESS || wc.opcode != op) {
		fprintf(stderr, "FAIL: %s: status %s opcode %d\n", what,
			ibv_wc_status_str(wc.status), wc.opcode);
		exit(1);
	}
}

static void post_slot(struct conn *c, int i)
{
	char *p = c->rbuf + (size_t)i * MAX_MSG;
	struct ibv_sge sge[3] = {
		{ (uintptr_t)p, 1000, c->rmr->lkey },
		{ (uintptr_t)p + 1000, 7, c->rmr->lkey },
		{ (uintptr_t)p + 1007, MAX_MSG - 1007, c->rmr->lkey },
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = sge, .num_sge = 3 };

	post_recv_wr(c, &wr);
}

/* The next message: its slot (repost it with post_slot when done) and length. */
static int recv_msg(struct conn *c, uint32_t *len)
{
	struct ibv_wc wc;

	if (wait_rwc(c, &wc) != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV ||
	    wc.wr_id >= SLOTS) {
		fprintf(stderr, "FAIL: recv: %s, opcode %d, wr_id %" PRIu64 "\n",
			ibv_wc_status_str(wc.status), wc.opcode, wc.wr_id);
		exit(1);
	}
	*len = wc.byte_len;
	return (int)wc.wr_id;
}

static char *slot(struct conn *c, int i)
{
	return c->rbuf + (size_t)i * MAX_MSG;
}

/* The next message, which must be a control message. */
static struct ctl recv_ctl(struct conn *c)
{
	struct ctl m;
	uint32_t len;
	int i = recv_msg(c, &len);

	if (len != sizeof(m)) {
		fprintf(stderr, "FAIL: control message of %u bytes\n", len);
		exit(1);
	}
	memcpy(&m, slot(c, i), sizeof(m));
	post_slot(c, i);
	return m;
}

/* Fills *wr (and *sge) with the Send of control message m, not posted yet. */
static void ctl_wr(struct conn *c, struct ctl *m, struct ibv_send_wr *wr, struct ibv_sge *sge)
{
	*sge = (struct ibv_sge){ (uintptr_t)&c->ctl_out, sizeof(*m), c->ctl_mr->lkey };
	*wr = (struct ibv_send_wr){
		.wr_id = 1, .sg_list = sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	c->ctl_out = *m;
}

/* Posts a control message; its send completion is the caller's to take. */
static void post_ctl(struct conn *c, struct ctl *m)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;

	ctl_wr(c, m, &wr, &sge);
	if (ibv_post_send(c->qp, &wr, &bad))
		die("post_send ctl");
}

static void send_ctl(struct conn *c, struct ctl *m)
{
	post_ctl(c, m);
	wait_ok(c, IBV_WC_SEND, "ctl send");
}

/* GID mode: one ibv_modify_qp, fatal if it fails. */
static void gid_modify(struct conn *c, struct ibv_qp_attr *a, int mask, const char *what)
{
	int ret = ibv_modify_qp(c->qp, a, mask);

	if (ret) {
		if (ret > 0)
			errno = ret;
		die(what);
	}
}

/* GID mode: RESET -> INIT, after which receives may be posted. */
static void gid_init(struct conn *c)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE,
	};

	gid_modify(c, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		   IBV_QP_ACCESS_FLAGS, "modify_qp INIT");
}

/* The QP (on c->id in rdma_cm mode, already in INIT; in GID mode made here and moved to
 * INIT), the regions, and all receive slots posted. */
static void setup_qp(struct conn *c, int srq)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 6,
			 .max_recv_sge = 6, .max_inline_data = 64 },
		.qp_type = IBV_QPT_RC,
	};
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

	c->pd = ibv_alloc_pd(c->ctx);
	c->scq = ibv_create_cq(c->ctx, 256, NULL, NULL, 0);
	c->rcq = ibv_create_cq(c->ctx, 256, NULL, NULL, 0);
	if (!c->pd || !c->scq || !c->rcq)
		die("pd/cq");
	qa.send_cq = c->scq;
	qa.recv_cq = c->rcq;
	if (srq) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 6 } };

		c->srq = ibv_create_srq(c->pd, &sa);
		if (!c->srq)
			die("ibv_create_srq");
		qa.srq = c->srq;
		qa.cap.max_recv_wr = 0;
	}
	if (gid_dev) {
		c->qp = ibv_create_qp(c->pd, &qa);
		if (!c->qp)
			die("ibv_create_qp");
		gid_init(c);
	} else {
		if (rdma_create_qp(c->id, c->pd, &qa))
			die("rdma_create_qp");
		c->qp = c->id->qp;
	}
	c->buf = aligned_alloc(4096, BUF_SIZE);
	c->rbuf = aligned_alloc(4096, (size_t)SLOTS * MAX_MSG);
	c->ro_buf = aligned_alloc(4096, 4096);
	c->wo_buf = aligned_alloc(4096, 4096);
	c->mr = ibv_reg_mr(c->pd, c->buf, BUF_SIZE, acc);
	c->rmr = ibv_reg_mr(c->pd, c->rbuf, (size_t)SLOTS * MAX_MSG, acc);
	c->ctl_mr = ibv_reg_mr(c->pd, &c->ctl_out, sizeof(c->ctl_out), IBV_ACCESS_LOCAL_WRITE);
	c->ro_mr = ibv_reg_mr(c->pd, c->ro_buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	c->wo_mr = ibv_reg_mr(c->pd, c->wo_buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!c->mr || !c->rmr || !c->ctl_mr || !c->ro_mr || !c->wo_mr)
		die("ibv_reg_mr");
	for (int i = 0; i < SLOTS; i++)
		post_slot(c, i);
}

static void teardown(struct conn *c)
{
	if (gid_dev) {
		ibv_destroy_qp(c->qp);
		/* The client's close tells the server its QP is gone. */
		close(c->gid_fd);
	} else {
		rdma_disconnect(c->id);
		rdma_destroy_qp(c->id);
	}
	ibv_dereg_mr(c->mr);
	ibv_dereg_mr(c->rmr);
	ibv_dereg_mr(c->ctl_mr);
	ibv_dereg_mr(c->ro_mr);
	ibv_dereg_mr(c->wo_mr);
	if (c->srq)
		ibv_destroy_srq(c->srq);
	ibv_destroy_cq(c->scq);
	ibv_destroy_cq(c->rcq);
	ibv_dealloc_pd(c->pd);
	free(c->buf);
	free(c->rbuf);
	free(c->ro_buf);
	free(c->wo_buf);
}

static struct ctl my_info(struct conn *c)
{
	struct ctl m = {
		.cmd = CMD_INFO, .addr = (uintptr_t)c->buf, .rkey = c->mr->rkey, .len = BUF_SIZE,
		/* ro: the region without REMOTE_READ (a "write-only" one for the peer), and the
		 * other way round; named after what the peer must NOT do. */
		.ro_addr = (uintptr_t)c->ro_buf, .ro_rkey = c->ro_mr->rkey,
		.wo_addr = (uintptr_t)c->wo_buf, .wo_rkey = c->wo_mr->rkey,
	};
	return m;
}

/* ---- GID mode: no rdma_cm; QPNs and GIDs swapped over TCP, the driver connects ---- */

static void gid_open(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	static const uint8_t zero[16];
	int i;

	if (!list)
		die("ibv_get_device_list");
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), gid_dev))
			break;
	if (!list[i]) {
		fprintf(stderr, "FAIL: no RDMA device %s\n", gid_dev);
		exit(1);
	}
	gid_ctx = ibv_open_device(list[i]);
	if (!gid_ctx)
		die("ibv_open_device");
	ibv_free_device_list(list);
	if (ibv_query_gid(gid_ctx, 1, gid_index, &gid_local))
		die("ibv_query_gid");
	if (!memcmp(gid_local.raw, zero, sizeof(zero))) {
		fprintf(stderr, "FAIL: GID %d of %s is empty\n", gid_index, gid_dev);
		exit(1);
	}
}

/* Nothing waits for the peer's bytes for ever. */
static void gid_sock_timeout(int fd)
{
	struct timeval tv = { .tv_sec = 60 };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		die("SO_RCVTIMEO");
}

/* Swaps QPN and GID with the peer over the TCP connection fd, then moves the QP (in INIT,
 * its receives posted) to RTR with an AV naming the peer, and on to RTS. The driver makes
 * the connection from here on; work posted before it is up waits for it. */
static void gid_link(struct conn *c, int fd, const char *who)
{
	struct gid_msg me = { .qpn = htonl(c->qp->qp_num) }, peer;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .rq_psn = 0,
		.max_dest_rd_atomic = 8, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .sgid_index = gid_index, .hop_limit = 1 } },
	};
	size_t n;
	ssize_t r;

	memcpy(me.gid, gid_local.raw, sizeof(me.gid));
	if (send(fd, &me, sizeof(me), MSG_NOSIGNAL) != (ssize_t)sizeof(me))
		die("GID exchange: send");
	for (n = 0; n < sizeof(peer); n += r) {
		r = recv(fd, (char *)&peer + n, sizeof(peer) - n, 0);
		if (r <= 0) {
			if (!r)
				errno = ECONNRESET;
			die("GID exchange: recv");
		}
	}
	a.dest_qp_num = ntohl(peer.qpn);
	memcpy(a.ah_attr.grh.dgid.raw, peer.gid, sizeof(peer.gid));
	gid_modify(c, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
		   "modify_qp RTR");
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.sq_psn = 0, .max_rd_atomic = 8,
	};
	gid_modify(c, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		   IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC, "modify_qp RTS");
	if (verbose)
		fprintf(stderr, "%s: QP %u in RTS, peer QP %u\n", who, c->qp->qp_num,
			ntohl(peer.qpn));
}

/* The server's end of a connection, once the client has closed the TCP connection (its QP
 * destroyed). After a Terminate the server's QP is in ERROR already. Otherwise it is an RC
 * QP whose peer left: siw_rs keeps it in RTS, its receives posted, and send work fails
 * after the QP's retry time, as on InfiniBand (README, "The peer leaving"). Empty Sends are
 * posted until one fails (IBV_WC_GENERAL_ERR, or flushed) and the QP is in ERROR: one
 * posted before the driver has seen the peer's close goes out and completes. 30 s at
 * most. */
static void gid_wait_end(struct conn *c)
{
	struct ibv_send_wr wr = { .wr_id = 9, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_wc wc;
	int busy = 0, sends = 0, flushed = 0, n;
	char b;

	if (read(c->gid_fd, &b, 1) != 0) {
		fprintf(stderr, "FAIL: the client's TCP connection did not end\n");
		exit(1);
	}
	for (int i = 0; i < 600; i++) {
		if (ibv_query_qp(c->qp, &qa, IBV_QP_STATE, &qi))
			die("query_qp");
		while ((n = ibv_poll_cq(c->scq, 1, &wc)) > 0) {
			if (wc.wr_id != 9)
				continue;
			busy = 0;
			if (wc.status == IBV_WC_WR_FLUSH_ERR || wc.status == IBV_WC_GENERAL_ERR)
				flushed = 1;
			else if (wc.status != IBV_WC_SUCCESS) {
				fprintf(stderr, "FAIL: empty Send after the client's end: %s\n",
					ibv_wc_status_str(wc.status));
				exit(1);
			}
		}
		if (n < 0)
			die("poll_cq");
		if (qa.qp_state == IBV_QPS_ERR && !busy) {
			if (verbose)
				fprintf(stderr, "server: QP in ERROR after %d empty Send(s), %s\n",
					sends, flushed ? "the last failed" : "none failed");
			return;
		}
		if (qa.qp_state == IBV_QPS_RTS && !busy) {
			if (ibv_post_send(c->qp, &wr, &bad))
				die("post_send (empty)");
			busy = 1;
			sends++;
		}
		usleep(50000);
	}
	fprintf(stderr, "FAIL: the server's QP (%s) is not in ERROR 30 s after the client's end"
		" (%d empty Sends)\n", qa.qp_state == IBV_QPS_RTS ? "RTS" : "not RTS", sends);
	exit(1);
}

/* ---- server ---- */

/* The SRQ limit events for c's SRQ waiting on the (non-blocking) async fd. */
static int srq_limit_events(struct conn *c)
{
	struct ibv_async_event ev;
	int n = 0;

	while (!ibv_get_async_event(c->ctx, &ev)) {
		if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == c->srq)
			n++;
		else
			fprintf(stderr, "server: async event %s\n", ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
	return n;
}

static void cm_listen(struct conn *c, const char *addr)
{
	struct addrinfo *ai;

	c->ec = rdma_create_event_channel();
	if (!c->ec || rdma_create_id(c->ec, &c->listen, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (getaddrinfo(addr, PORT, NULL, &ai) || rdma_bind_addr(c->listen, ai->ai_addr) ||
	    rdma_listen(c->listen, 4))
		die("listen");
	freeaddrinfo(ai);
}

static void gid_listen(const char *addr)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM }, *ai;
	int one = 1;

	if (getaddrinfo(addr, GID_PORT, &hints, &ai))
		die("getaddrinfo");
	gid_lsock = socket(ai->ai_family, SOCK_STREAM, 0);
	if (gid_lsock < 0 || setsockopt(gid_lsock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(gid_lsock, ai->ai_addr, ai->ai_addrlen) || listen(gid_lsock, 8))
		die("listen");
	freeaddrinfo(ai);
}

/* With -q: the SRQ limit armed, before the connection can deliver anything. */
static void arm_srq_limit(struct conn *c)
{
	struct ibv_srq_attr sa = { .srq_limit = SLOTS };
	int fl = fcntl(c->ctx->async_fd, F_GETFL);

	if (fl < 0 || fcntl(c->ctx->async_fd, F_SETFL, fl | O_NONBLOCK))
		die("async_fd");
	if (ibv_modify_srq(c->srq, &sa, IBV_SRQ_LIMIT))
		die("ibv_modify_srq limit");
}

static void cm_accept(struct conn *c)
{
	struct rdma_cm_event *ev = expect(c, RDMA_CM_EVENT_CONNECT_REQUEST);
	struct rdma_conn_param cp = { .responder_resources = 8, .initiator_depth = 8 };

	c->id = ev->id;
	c->ctx = c->id->verbs;
	rdma_ack_cm_event(ev);
	setup_qp(c, use_srq);
	if (c->srq)
		arm_srq_limit(c);
	if (rdma_accept(c->id, &cp))
		die("rdma_accept");
	rdma_ack_cm_event(expect(c, RDMA_CM_EVENT_ESTABLISHED));
}

static void gid_accept(struct conn *c)
{
	int fd = accept(gid_lsock, NULL, NULL);

	if (fd < 0)
		die("accept");
	gid_sock_timeout(fd);
	c->ctx = gid_ctx;
	setup_qp(c, use_srq);
	if (c->srq)
		arm_srq_limit(c);
	gid_link(c, fd, "server");
	c->gid_fd = fd;
}

static int server_conn(struct conn *c)
{
	struct ctl m;
	int bad = 0;

	if (gid_dev)
		gid_accept(c);
	else
		cm_accept(c);
	c->peer = recv_ctl(c);
	m = my_info(c);
	if (error_phase == 2) {
		struct ibv_wc wc;

		/* The kernel's C siw as the server: once its Send of the info is all in TCP,
		 * siw_qp_sq_proc_tx() still fails it (LOC_QP_OP_ERR, -ECONNABORTED) if tx was
		 * suspended meanwhile, and the client's bad operation, sent as soon as the info
		 * arrived, suspends it. The client saw the info; its outcome is what counts. */
		post_ctl(c, &m);
		if (wait_wc(c, &wc) != IBV_WC_SUCCESS)
			fprintf(stderr, "server: info send completion %s (C siw: tx suspended "
				"after the last segment)\n", ibv_wc_status_str(wc.status));
	} else {
		send_ctl(c, &m);
	}
	if (verbose)
		fprintf(stderr, "server: connected\n");
	for (;;) {
		struct ibv_wc wc;
		struct ctl r = { .cmd = CMD_RESULT, .ok = 1 };
		uint32_t len;
		int i;

		if (wait_rwc(c, &wc) != IBV_WC_SUCCESS) {
			/* The error phase: the client broke the connection on purpose. */
			if (verbose)
				fprintf(stderr, "server: completion %s\n", ibv_wc_status_str(wc.status));
			break;
		}
		if (wc.opcode != IBV_WC_RECV || wc.wr_id >= SLOTS || wc.byte_len != sizeof(m)) {
			fprintf(stderr, "FAIL: expected a control message: wr_id %" PRIu64
				", %u bytes\n", wc.wr_id, wc.byte_len);
			return 1;
		}
		memcpy(&m, slot(c, wc.wr_id), sizeof(m));
		post_slot(c, wc.wr_id);
		if (m.cmd == CMD_DONE)
			break;
		if (m.cmd == CMD_CHECK_WRITE) {
			r.ok = check(c->buf + m.addr, m.len, m.seed);
		} else if (m.cmd == CMD_FILL) {
			fill(c->buf + m.addr, m.len, m.seed);
		} else if (m.cmd == CMD_SEND_NEXT) {
			/* The next message is the data. */
			i = recv_msg(c, &len);
			if (len != m.len) {
				fprintf(stderr, "recv: %u bytes, expected %u\n", len, m.len);
				r.ok = 0;
			} else {
				r.ok = check(slot(c, i), len, m.seed);
			}
			post_slot(c, i);
		}
		bad |= !r.ok;
		send_ctl(c, &r);
	}
	if (c->srq) {
		int n = srq_limit_events(c);

		printf("server: %d SRQ limit event(s)\n", n);
		if (n != 1) {
			fprintf(stderr, "FAIL: %d SRQ limit events, expected 1\n", n);
			bad = 1;
		}
	}
	if (gid_dev) {
		if (verbose)
			fprintf(stderr, "server: waiting for the client's end\n");
		gid_wait_end(c);
		teardown(c);
	} else {
		if (verbose)
			fprintf(stderr, "server: waiting for the disconnect\n");
		rdma_ack_cm_event(expect(c, RDMA_CM_EVENT_DISCONNECTED));
		if (verbose)
			fprintf(stderr, "server: disconnected\n");
		teardown(c);
		rdma_destroy_id(c->id);
	}
	if (verbose)
		fprintf(stderr, "server: connection torn down\n");
	return bad;
}

/* ---- client ---- */

static void cm_connect(struct conn *c, const char *addr)
{
	struct rdma_conn_param cp = { .responder_resources = 8, .initiator_depth = 8 };
	struct addrinfo *ai;
	struct rdma_cm_id *id;

	c->ec = rdma_create_event_channel();
	if (getaddrinfo(addr, PORT, NULL, &ai))
		die("getaddrinfo");
	if (rdma_create_id(c->ec, &id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_resolve_addr(id, NULL, ai->ai_addr, 5000))
		die("rdma_resolve_addr");
	freeaddrinfo(ai);
	rdma_ack_cm_event(expect(c, RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 5000))
		die("rdma_resolve_route");
	rdma_ack_cm_event(expect(c, RDMA_CM_EVENT_ROUTE_RESOLVED));
	c->id = id;
	c->ctx = id->verbs;
	setup_qp(c, 0);
	if (rdma_connect(id, &cp))
		die("rdma_connect");
	rdma_ack_cm_event(expect(c, RDMA_CM_EVENT_ESTABLISHED));
}

static void gid_connect(struct conn *c, const char *addr)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int fd = -1, e;

	if (getaddrinfo(addr, GID_PORT, &hints, &ai))
		die("getaddrinfo");
	/* 10 s for the server to listen. */
	for (int i = 0; i < 100 && fd < 0; i++) {
		fd = socket(ai->ai_family, SOCK_STREAM, 0);
		if (fd < 0)
			die("socket");
		if (connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			e = errno;
			close(fd);
			fd = -1;
			errno = e;
			usleep(100000);
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		die("connect to the server's TCP port " GID_PORT);
	gid_sock_timeout(fd);
	c->ctx = gid_ctx;
	setup_qp(c, 0);
	gid_link(c, fd, "client");
	c->gid_fd = fd;
}

/* Connected, and the regions known to each other. */
static void client_connect(struct conn *c, const char *addr)
{
	struct ctl m;

	if (gid_dev)
		gid_connect(c, addr);
	else
		cm_connect(c, addr);
	m = my_info(c);
	send_ctl(c, &m);
	c->peer = recv_ctl(c);
}

/* The end of a connection in the error phase. GID mode: the QP destroyed, then the TCP
 * connection closed (see gid_wait_end). */
static void client_close(struct conn *c)
{
	if (gid_dev) {
		teardown(c);
		return;
	}
	rdma_disconnect(c->id);
	teardown(c);
	rdma_destroy_id(c->id);
	rdma_destroy_event_channel(c->ec);
}

static void client_done(struct conn *c)
{
	struct ctl m = { .cmd = CMD_DONE };

	send_ctl(c, &m);
	if (gid_dev) {
		teardown(c);
		return;
	}
	rdma_disconnect(c->id);
	rdma_ack_cm_event(expect(c, RDMA_CM_EVENT_DISCONNECTED));
	teardown(c);
	rdma_destroy_id(c->id);
}

static int result(struct conn *c)
{
	return recv_ctl(c).ok;
}

/* Fills *wr (and sge[3]) with a WR whose local data is `len` bytes at buf+off, split into
 * `nsge` SGEs; not posted yet. */
static void split_wr(struct conn *c, enum ibv_wr_opcode op, uint32_t off, uint32_t len,
		     int nsge, uint64_t raddr, uint32_t rkey, int inl, struct ibv_send_wr *w,
		     struct ibv_sge *sge)
{
	struct ibv_send_wr wr = {
		.wr_id = 2, .sg_list = sge, .opcode = op, .send_flags = IBV_SEND_SIGNALED,
	};
	uint32_t a = len / 3, b = len / 2;

	if (nsge == 3 && len >= 3) {
		/* Unequal pieces from non-adjacent places are fine too, but keep them in
		 * order so the receiver's view is the plain pattern. */
		sge[0] = (struct ibv_sge){ (uintptr_t)c->buf + off, a, c->mr->lkey };
		sge[1] = (struct ibv_sge){ (uintptr_t)c->buf + off + a, b - a, c->mr->lkey };
		sge[2] = (struct ibv_sge){ (uintptr_t)c->buf + off + b, len - b, c->mr->lkey };
		wr.num_sge = 3;
	} else {
		sge[0] = (struct ibv_sge){ (uintptr_t)c->buf + off, len, c->mr->lkey };
		wr.num_sge = 1;
	}
	if (inl)
		wr.send_flags |= IBV_SEND_INLINE;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	*w = wr;
}

/* Posts a WR whose local data is `len` bytes at buf+off, split into `nsge` SGEs. */
static void post_split(struct conn *c, enum ibv_wr_opcode op, uint32_t off, uint32_t len,
		       int nsge, uint64_t raddr, uint32_t rkey, int inl)
{
	struct ibv_sge sge[3];
	struct ibv_send_wr wr, *bad;

	split_wr(c, op, off, len, nsge, raddr, rkey, inl, &wr, sge);
	if (ibv_post_send(c->qp, &wr, &bad))
		die("post_send");
}

/* -l: posts `first` and `second` with one ibv_post_send and waits for both completions,
 * in order. */
static void post_pair(struct conn *c, struct ibv_send_wr *first, struct ibv_send_wr *second,
		      const char *what)
{
	struct ibv_send_wr *bad;

	first->next = second;
	second->next = NULL;
	if (ibv_post_send(c->qp, first, &bad))
		die("post_send (chain)");
	wait_ok(c, first->opcode == IBV_WR_RDMA_WRITE ? IBV_WC_RDMA_WRITE : IBV_WC_SEND, what);
	wait_ok(c, IBV_WC_SEND, what);
}

static int client_data(const char *addr, uint64_t total)
{
	static const uint32_t sizes[] = { 1, 7, 64, 100, 1000, 4095, 4096, 4097, 65536,
					  100000, MAX_MSG };
	struct conn c = { 0 };
	uint64_t moved[3] = { 0 };
	uint32_t seed = 12345, n = 0;
	int bad = 0;

	client_connect(&c, addr);
	while (moved[0] + moved[1] + moved[2] < total) {
		uint32_t len = sizes[n % (sizeof(sizes) / sizeof(sizes[0]))];
		uint32_t off = (n * 4099u) % (BUF_SIZE - MAX_MSG);
		int nsge = 1 + 2 * (n & 1);
		struct ctl m;

		/* write */
		fill(c.buf + off, len, ++seed);
		m = (struct ctl){ .cmd = CMD_CHECK_WRITE, .addr = off, .len = len, .seed = seed };
		if (chain) {
			/* The Write and the request to check it, in one post: RDMA orders the
			 * Send behind the Write's placement (RFC 5040 section 5.5). */
			struct ibv_send_wr w, cw;
			struct ibv_sge ws[3], cs;

			split_wr(&c, IBV_WR_RDMA_WRITE, off, len, nsge, c.peer.addr + off,
				 c.peer.rkey, len <= 64 && (n & 2), &w, ws);
			ctl_wr(&c, &m, &cw, &cs);
			post_pair(&c, &w, &cw, "write and check (chain)");
		} else {
			post_split(&c, IBV_WR_RDMA_WRITE, off, len, nsge, c.peer.addr + off,
				   c.peer.rkey, len <= 64 && (n & 2));
			wait_ok(&c, IBV_WC_RDMA_WRITE, "write");
			send_ctl(&c, &m);
		}
		if (!result(&c)) {
			fprintf(stderr, "write of %u bytes (%d SGEs) corrupted\n", len, nsge);
			bad = 1;
		}
		moved[0] += len;

		/* read */
		m = (struct ctl){ .cmd = CMD_FILL, .addr = off, .len = len, .seed = ++seed };
		send_ctl(&c, &m);
		if (!result(&c))
			bad = 1;
		memset(c.buf + off, 0, len);
		post_split(&c, IBV_WR_RDMA_READ, off, len, 1, c.peer.addr + off, c.peer.rkey, 0);
		wait_ok(&c, IBV_WC_RDMA_READ, "read");
		if (!check(c.buf + off, len, seed)) {
			fprintf(stderr, "read of %u bytes corrupted\n", len);
			bad = 1;
		}
		moved[1] += len;

		/* send: announced, then sent */
		fill(c.buf + off, len, ++seed);
		m = (struct ctl){ .cmd = CMD_SEND_NEXT, .len = len, .seed = seed };
		if (chain) {
			struct ibv_send_wr cw, w;
			struct ibv_sge cs, ws[3];

			ctl_wr(&c, &m, &cw, &cs);
			split_wr(&c, IBV_WR_SEND, off, len, nsge, 0, 0, len <= 64 && (n & 2), &w,
				 ws);
			post_pair(&c, &cw, &w, "announcement and send (chain)");
		} else {
			send_ctl(&c, &m);
			post_split(&c, IBV_WR_SEND, off, len, nsge, 0, 0, len <= 64 && (n & 2));
			wait_ok(&c, IBV_WC_SEND, "send");
		}
		if (!result(&c)) {
			fprintf(stderr, "send of %u bytes (%d SGEs) corrupted\n", len, nsge);
			bad = 1;
		}
		moved[2] += len;
		n++;
	}
	client_done(&c);
	printf("data: %u rounds, write %" PRIu64 " read %" PRIu64 " send %" PRIu64
	       " bytes, %s\n", n, moved[0], moved[1], moved[2], bad ? "CORRUPTED" : "all verified");
	return bad;
}

/* One error case: posts the bad operation, then expects an error completion and the QP
 * in ERROR. */
static int client_error(const char *addr, const char *name)
{
	struct conn c = { 0 };
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_wc wc;
	int st, nflush = 0, ok;

	client_connect(&c, addr);
	if (!strcmp(name, "flush")) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
		struct ctl m = { .cmd = CMD_DONE };

		/* All SLOTS receives are posted (the one the server's info used was reposted). */
		send_ctl(&c, &m);
		if (ibv_modify_qp(c.qp, &a, IBV_QP_STATE))
			die("modify_qp ERR");
		while (nflush < SLOTS && wait_rwc(&c, &wc) == IBV_WC_WR_FLUSH_ERR)
			nflush++;
		ok = nflush == SLOTS;
		printf("error flush: %d of %d receives flushed: %s\n", nflush, SLOTS,
		       ok ? "ok" : "WRONG");
		client_close(&c);
		return !ok;
	}
	memset(c.buf, 0x5a, 64);
	if (!strcmp(name, "bad_rkey"))
		post_split(&c, IBV_WR_RDMA_WRITE, 0, 64, 1, c.peer.addr, c.peer.rkey ^ 0x80, 0);
	else if (!strcmp(name, "bounds"))
		post_split(&c, IBV_WR_RDMA_WRITE, 0, 64, 1, c.peer.addr + BUF_SIZE - 32,
			   c.peer.rkey, 0);
	else if (!strcmp(name, "no_right"))
		/* The peer's "wo" region has REMOTE_READ only. */
		post_split(&c, IBV_WR_RDMA_WRITE, 0, 64, 1, c.peer.wo_addr, c.peer.wo_rkey, 0);
	else if (!strcmp(name, "read_right"))
		/* The peer's "ro" region has REMOTE_WRITE only (O2). */
		post_split(&c, IBV_WR_RDMA_READ, 0, 64, 1, c.peer.ro_addr, c.peer.ro_rkey, 0);
	st = wait_wc(&c, &wc);
	/* A Write completes once handed to TCP, and successfully; a Read must fail. Either way
	 * the peer's Terminate then moves the QP to ERROR. (Probing with a Send instead would
	 * hang on the C siw, which leaves SQEs posted in ERROR uncompleted.) */
	for (int i = 0; i < 200; i++) {
		if (ibv_query_qp(c.qp, &qa, IBV_QP_STATE, &qi))
			die("query_qp");
		if (qa.qp_state == IBV_QPS_ERR)
			break;
		usleep(50000);
	}
	ok = qa.qp_state == IBV_QPS_ERR && (strcmp(name, "read_right") || st != IBV_WC_SUCCESS);
	printf("error %s: completion %s, QP %s: %s\n", name, ibv_wc_status_str(st),
	       qa.qp_state == IBV_QPS_ERR ? "ERR" : "not in ERR", ok ? "ok" : "WRONG");
	client_close(&c);
	return !ok;
}

int main(int argc, char **argv)
{
	const char *addr = NULL;
	uint64_t mb = 8;
	int server = -1, opt, bad = 0;

	while ((opt = getopt(argc, argv, "s:c:m:eEvqlg:d:")) != -1) {
		switch (opt) {
		case 's': server = 1; addr = optarg; break;
		case 'c': server = 0; addr = optarg; break;
		case 'm': mb = strtoull(optarg, NULL, 0); break;
		case 'e': error_phase = 1; break;
		case 'E': error_phase = 2; break;
		case 'v': verbose = 1; break;
		case 'q': use_srq = 1; break;
		case 'l': chain = 1; break;
		case 'g': gid_index = atoi(optarg); break;
		case 'd': gid_dev = optarg; break;
		default: return 2;
		}
	}
	if (server < 0 || !gid_dev != (gid_index < 0))
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (gid_dev)
		gid_open();
	if (server) {
		struct conn c = { 0 };
		int conns = error_phase == 1 ? 5 : error_phase ? 4 : 1;

		if (gid_dev)
			gid_listen(addr);
		else
			cm_listen(&c, addr);
		printf("server: listening\n");
		for (int i = 0; i < conns; i++) {
			struct conn k = { .ec = c.ec };

			bad |= server_conn(&k) && !error_phase;
		}
		if (gid_dev)
			close(gid_lsock);
		else
			rdma_destroy_id(c.listen);
		printf("server: %s\n", bad ? "CORRUPTED" : "done");
		return bad;
	}
	if (error_phase) {
		static const char *cases[] = { "bad_rkey", "bounds", "no_right", "read_right",
					       "flush" };

		for (unsigned i = 0; i < 5; i++)
			if (error_phase == 1 || strcmp(cases[i], "read_right"))
				bad |= client_error(addr, cases[i]);
		return bad;
	}
	return client_data(addr, mb << 20);
}
