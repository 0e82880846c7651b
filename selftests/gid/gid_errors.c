// SPDX-License-Identifier: GPL-2.0
/*
 * gid_errors: connections without rdma_cm (RC QPs moved INIT -> RTR -> RTS with an AV
 * naming the peer's GID and QPN, the driver connecting by itself), their refusals and
 * their failures, on one device in one process: every peer is another QP of the same
 * device, reached through the device's own IPv4 GID.
 *
 *   gid_errors -d DEV -g GIDX -U ADDR -t MS [-c CASE]... [-v]
 *   -d DEV    the device
 *   -g GIDX   the index in port 1's GID table of the device's IPv4 address (::ffff:a.b.c.d)
 *   -U ADDR   an IPv4 address on the device's subnet that nobody answers for
 *   -t MS     the module parameter gid_connect_timeout_ms: the bound on making a connection
 *   -c CASE   run only this case (may be given more than once); all cases without it
 *   -v        QPNs, timings and async events on stderr
 *
 * Every case has fresh QPs (RC, a CQ each, a receive posted right after INIT). Where
 * roles matter the QPs are named q1 < q2 < q3 by QP number, whatever order they were
 * created in: between two QPs with the same GID the lower QPN is the end that connects.
 *
 * "fails" below means: the QP goes to ERROR, its posted receive (and Send, when one was
 * posted) complete with IBV_WC_WR_FLUSH_ERR, and exactly one async event arrives for it,
 * IBV_EVENT_QP_FATAL. "At once" means within MS/2. "At its bound" means not before MS/2
 * and not after MS + 5 s from its RTR: every refusal is the same, whatever was wrong (a
 * scanner must learn nothing from it), so the initiator tries again until its bound, as
 * an InfiniBand RC QP retries a peer that never answers.
 *
 *   bad_sgid     RTR with sgid_index 31, an empty GID entry: fails with ENODATA or EINVAL
 *                (printed after "ok")
 *   mac_sgid     RTR with sgid_index 0, the MAC-based GID: EINVAL
 *   no_grh       RTR with is_global = 0: EINVAL
 *   zero_dgid    RTR with an all-zero dgid: EINVAL
 *   mcast_dgid   RTR with dgid ff02::1: EINVAL
 *   self         RTR with an AV naming the QP itself (own GID, own QPN): EINVAL
 *                (in these six the AV is otherwise a valid one naming a second QP, and the
 *                QP must still be in INIT after the failed RTR)
 *   unreachable  dgid ::ffff:ADDR: RTR and RTS succeed, a Send is posted; the QP fails,
 *                not before MS/2 and not after MS + 5 s from its RTR
 *   no_such_qp   the AV names the own GID and a QPN larger than any created: the QP fails
 *                at its bound
 *   wrong_peer   q1 names q2, q2 names q3, q3 stays in INIT. q1 goes to RTR first (q2 is
 *                not ready: q1 retries), then q2 (q3 is not ready: q2 retries); q2 expects
 *                q3 and refuses q1: q1 and q2 fail at their bounds; q3 stays in INIT and
 *                gets no event
 *   destroyed    q1 names q2, which stays in INIT: q1 retries and is still in RTS after
 *                300 ms; then q2 is destroyed and q1 fails at its bound
 *   same_peer    q3 < q1 < q2 (created in that order); q3 and q1 both name q2 (in that
 *                order, while q2 is in INIT), then q2 names q1: q1 and q2 connect (a 4 KiB
 *                Send each way completes and arrives intact), q3 fails at its bound, q1
 *                and q2 stay in RTS with no async event
 *   wrong_psn    q1 <-> q2, but q2's rq_psn is not q1's sq_psn: q2 refuses q1's request;
 *                both fail at their bounds, no byte is received
 *   wrong_accept q1 <-> q2, but q1's rq_psn is not q2's sq_psn: q2 accepts (q1 knows q2's
 *                rq_psn), q1 does not take the accept and fails at once after q2's RTS
 *   other_netns  (only when named with -c, and run from another network namespace than
 *                the device's netdev's) RTR with a good AV fails with ENETUNREACH; the QP
 *                stays in INIT
 *   good         q1 <-> q2: Sends of 1, 4096 and 65536 bytes each way, every byte checked,
 *                both in RTS without events; then q2 is destroyed: as an RC QP on
 *                InfiniBand whose peer went away, q1 is still in RTS 1 s later, its
 *                receive still posted (no completion), no async event; a Send posted then
 *                cannot be delivered and fails as on InfiniBand once the QP's retry time
 *                (RETRY_MS: timeout 14, retry_cnt 7) has passed, not before: the Send
 *                completes with IBV_WC_GENERAL_ERR (the siw ABI has no retry-exceeded
 *                status), the receive with IBV_WC_WR_FLUSH_ERR, without an async event
 *
 * Prints "case NAME: ok" or "case NAME: WRONG (what)" per case, then a summary line.
 * Exits 0 only if every case run was ok; 1 if not; 2 on a usage error. Every wait is
 * bounded (MS + 5 s at most); setup failures print "FAIL: ..." and exit 1.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define MAX_MSG (64u << 10)
#define RECV_ID 1
#define SEND_ID 2
#define MAX_Q 4
#define MAX_EV 64
#define MAX_WC 16
/* The retry time of to_rts()'s QPs: 8 tries (retry_cnt 7) of 4.096 us * 2^14. */
#define RETRY_MS 537.0

struct q {
	const char *name;
	struct ibv_qp *qp;
	struct ibv_cq *cq;		/* send and receive completions */
	struct ibv_mr *mr;
	char *sbuf, *rbuf;		/* MAX_MSG each, one region */
	struct ibv_wc wc[MAX_WC];	/* polled, not yet taken */
	int nwc;
	double t_err;			/* when first seen in ERROR, or < 0 */
	uint32_t rq_psn, sq_psn;	/* for RTR and RTS; 0 unless a case sets them */
};

static struct ibv_context *ctx;
static struct ibv_pd *pd;
static union ibv_gid my_gid, unreach_gid;
static int gidx = -1, bound = -1, verbose;
static uint32_t max_qpn;		/* the largest QPN created so far */

static struct q *live[MAX_Q];		/* this case's QPs */
static int nlive;

/* This case's async events, in arrival order. */
static struct {
	struct ibv_qp *qp;		/* for QP events, else NULL */
	enum ibv_event_type type;
	double t;
} evs[MAX_EV];
static int nev, ev_lost;

static char why[2048];			/* what was wrong in this case */
static char info[64];			/* printed after "ok" */

/* ---- helpers ---- */

static void die(const char *what)
{
	fprintf(stderr, "FAIL: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Adds one finding to this case's WRONG line. */
static void __attribute__((format(printf, 1, 2))) wrong(const char *fmt, ...)
{
	size_t n = strlen(why);
	va_list ap;

	if (n && n < sizeof(why) - 2) {
		strcpy(why + n, "; ");
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(why + n, sizeof(why) - n, fmt, ap);
	va_end(ap);
}

/* A verb's int result as an errno, 0 on success: libibverbs returns positive errno
 * values, libsiw's post_send/post_recv negative ones, or -1 with errno set. */
static int verr(int ret)
{
	if (ret >= 0)
		return ret;
	if (ret == -1)
		return errno ? errno : EIO;
	return -ret;
}

static const char *errname(int e)
{
	static char buf[64];

	switch (e) {
	case EINVAL: return "EINVAL";
	case ENODATA: return "ENODATA";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ENOTCONN: return "ENOTCONN";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENOENT: return "ENOENT";
	case ENETUNREACH: return "ENETUNREACH";
	}
	snprintf(buf, sizeof(buf), "errno %d (%s)", e, strerror(e));
	return buf;
}

static const char *state_name(int st)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return st >= 0 && st < (int)(sizeof(names) / sizeof(names[0])) ? names[st] : "UNKNOWN";
}

static const char *qname(struct ibv_qp *qp)
{
	for (int i = 0; i < nlive; i++)
		if (live[i]->qp == qp)
			return live[i]->name;
	return "?";
}

static uint32_t qpn(struct q *q)
{
	return q->qp->qp_num;
}

static int qstate(struct q *q)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(q->qp, &a, IBV_QP_STATE, &ia))
		die("ibv_query_qp");
	return a.qp_state;
}

static void fill(char *p, uint32_t len, uint32_t seed)
{
	uint32_t s = seed | 1;

	for (uint32_t i = 0; i < len; i++) {
		s ^= s << 13;
		s ^= s >> 17;
		s ^= s << 5;
		p[i] = (char)s;
	}
}

/* The first byte that differs from fill()'s, or -1. */
static long check(const char *p, uint32_t len, uint32_t seed)
{
	uint32_t s = seed | 1;

	for (uint32_t i = 0; i < len; i++) {
		s ^= s << 13;
		s ^= s >> 17;
		s ^= s << 5;
		if (p[i] != (char)s)
			return i;
	}
	return -1;
}

/* ---- async events ---- */

static int is_qp_event(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return 1;
	default:
		return 0;
	}
}

/* Waits up to `ms` for the (non-blocking) async fd, then records and acks every event
 * waiting. Every event is acked at once: ibv_destroy_qp waits for the acks of the events
 * read for its QP; events not read yet are dropped by the kernel when the QP goes. */
static void collect(int ms)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	if (poll(&p, 1, ms) <= 0)
		return;
	while (!ibv_get_async_event(ctx, &ev)) {
		int isq = is_qp_event(ev.event_type);

		if (verbose)
			fprintf(stderr, "  event %s%s%s (QPN %u)\n", ibv_event_type_str(ev.event_type),
				isq ? " on " : "", isq ? qname(ev.element.qp) : "",
				isq ? ev.element.qp->qp_num : 0);
		if (nev < MAX_EV) {
			evs[nev].qp = isq ? ev.element.qp : NULL;
			evs[nev].type = ev.event_type;
			evs[nev].t = now_ms();
			nev++;
		} else {
			ev_lost++;
		}
		ibv_ack_async_event(&ev);
	}
}

/* Events for q of type t; t < 0: of any type. */
static int count_ev(struct q *q, int t)
{
	int n = 0;

	for (int i = 0; i < nev; i++)
		if (evs[i].qp == q->qp && (t < 0 || evs[i].type == (enum ibv_event_type)t))
			n++;
	return n;
}

/* The names of q's events other than type `but` (-1: all), for a WRONG line. */
static const char *ev_names(struct q *q, int but)
{
	static char buf[256];
	size_t n = 0;

	buf[0] = 0;
	for (int i = 0; i < nev && n < sizeof(buf) - 1; i++)
		if (evs[i].qp == q->qp && (but < 0 || evs[i].type != (enum ibv_event_type)but))
			n += snprintf(buf + n, sizeof(buf) - n, "%s%s", n ? ", " : "",
				      ibv_event_type_str(evs[i].type));
	return buf;
}

/* Events for up to `ms`, then the state of every QP of the case: when each was first seen
 * in ERROR is noted, whatever the case is waiting for. */
static void tick(int ms)
{
	collect(ms);
	for (int i = 0; i < nlive; i++)
		if (live[i]->t_err < 0 && qstate(live[i]) == IBV_QPS_ERR) {
			live[i]->t_err = now_ms();
			if (verbose)
				fprintf(stderr, "  %s in ERROR\n", live[i]->name);
		}
}

/* tick() for `ms` in all. */
static void settle(int ms)
{
	double end = now_ms() + ms, left;

	while ((left = end - now_ms()) > 0)
		tick(left < 10 ? (int)left + 1 : 10);
}

/* ---- QPs ---- */

static struct q *make_q(void)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct q *q = calloc(1, sizeof(*q));

	if (!q || nlive == MAX_Q)
		die("make_q");
	q->cq = ibv_create_cq(ctx, 32, NULL, NULL, 0);
	if (!q->cq)
		die("ibv_create_cq");
	qa.send_cq = q->cq;
	qa.recv_cq = q->cq;
	q->qp = ibv_create_qp(pd, &qa);
	if (!q->qp)
		die("ibv_create_qp");
	q->sbuf = aligned_alloc(4096, 2 * MAX_MSG);
	if (!q->sbuf)
		die("aligned_alloc");
	memset(q->sbuf, 0, 2 * MAX_MSG);
	q->rbuf = q->sbuf + MAX_MSG;
	q->mr = ibv_reg_mr(pd, q->sbuf, 2 * MAX_MSG, IBV_ACCESS_LOCAL_WRITE);
	if (!q->mr)
		die("ibv_reg_mr");
	q->t_err = -1;
	q->name = "q?";
	if (qpn(q) > max_qpn)
		max_qpn = qpn(q);
	live[nlive++] = q;
	return q;
}

static void free_q(struct q *q)
{
	int i;

	for (i = 0; i < nlive && live[i] != q; i++)
		;
	if (i < nlive)
		live[i] = live[--nlive];
	errno = verr(ibv_destroy_qp(q->qp));
	if (errno)
		die("ibv_destroy_qp");
	ibv_dereg_mr(q->mr);
	ibv_destroy_cq(q->cq);
	free(q->sbuf);
	free(q);
}

static void post_recv(struct q *q)
{
	struct ibv_sge sge = { (uintptr_t)q->rbuf, MAX_MSG, q->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = RECV_ID, .sg_list = &sge, .num_sge = 1 }, *bad;

	errno = verr(ibv_post_recv(q->qp, &wr, &bad));
	if (errno)
		die("ibv_post_recv");
}

/* A signaled Send of the first `len` bytes of sbuf; 0 or an errno. */
static int post_send(struct q *q, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)q->sbuf, len, q->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = SEND_ID, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	return verr(ibv_post_send(q->qp, &wr, &bad));
}

/* ibv_modify_qp's result as an errno (0 on success). */
static int modify(struct q *q, struct ibv_qp_attr *a, int mask)
{
	return verr(ibv_modify_qp(q->qp, a, mask));
}

static void to_init(struct q *q)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE,
	};

	errno = modify(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		       IBV_QP_ACCESS_FLAGS);
	if (errno)
		die("modify_qp INIT");
}

static int to_rtr(struct q *q, int sgid_index, int global, const union ibv_gid *dgid,
		  uint32_t dqpn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = dqpn,
		.rq_psn = q->rq_psn, .max_dest_rd_atomic = 8, .min_rnr_timer = 12,
		.ah_attr = { .is_global = global, .port_num = 1,
			     .grh = { .dgid = *dgid, .sgid_index = sgid_index, .hop_limit = 1 } },
	};

	if (verbose)
		fprintf(stderr, "  %s (QPN %u): RTR to QPN %u\n", q->name, qpn(q), dqpn);
	return modify(q, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static int to_rts(struct q *q)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.sq_psn = q->sq_psn, .max_rd_atomic = 8,
	};

	return modify(q, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* RTR with the device's GID and an AV naming (dgid, dqpn), then RTS; -1 (and WRONG) if
 * either fails. */
static int link_qp(struct q *q, const union ibv_gid *dgid, uint32_t dqpn)
{
	int e = to_rtr(q, gidx, 1, dgid, dqpn);

	if (e) {
		wrong("%s RTR failed: %s", q->name, errname(e));
		return -1;
	}
	e = to_rts(q);
	if (e) {
		wrong("%s RTS failed: %s", q->name, errname(e));
		return -1;
	}
	return 0;
}

/* A 64-byte Send on q, which is in RTS (connected or not); 1 if posted. */
static int send64(struct q *q)
{
	int e = post_send(q, 64);

	if (e)
		wrong("%s: post_send in RTS failed: %s", q->name, errname(e));
	return !e;
}

/* n fresh QPs, sorted by QPN and named after names[] (the lowest gets names[0]), each in
 * INIT with a receive posted. */
static void make_sorted(struct q **v, int n, const char *const *names)
{
	for (int i = 0; i < n; i++)
		v[i] = make_q();
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && qpn(v[j]) < qpn(v[j - 1]); j--) {
			struct q *t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	for (int i = 0; i < n; i++) {
		v[i]->name = names[i];
		to_init(v[i]);
		post_recv(v[i]);
		if (verbose)
			fprintf(stderr, "  %s: QPN %u\n", v[i]->name, qpn(v[i]));
	}
}

/* ---- completions ---- */

/* The completion of wr_id `id` on q if it is there (others polled meanwhile are kept). */
static int take_wc(struct q *q, uint64_t id, struct ibv_wc *wc)
{
	if (q->nwc < MAX_WC) {
		int n = ibv_poll_cq(q->cq, MAX_WC - q->nwc, q->wc + q->nwc);

		if (n < 0)
			die("ibv_poll_cq");
		q->nwc += n;
	}
	for (int i = 0; i < q->nwc; i++)
		if (q->wc[i].wr_id == id) {
			*wc = q->wc[i];
			memmove(q->wc + i, q->wc + i + 1, (q->nwc - i - 1) * sizeof(*wc));
			q->nwc--;
			return 1;
		}
	return 0;
}

/* take_wc() until `deadline` (ms, monotonic); 0 if nothing came. */
static int wait_wc(struct q *q, uint64_t id, double deadline, struct ibv_wc *wc)
{
	for (;;) {
		if (take_wc(q, id, wc))
			return 1;
		if (now_ms() > deadline)
			return 0;
		tick(2);
	}
}

/* q must go to ERROR between t0 + lo and t0 + hi (ms; `since` names t0 in the WRONG
 * line), its receive completing with IBV_WC_WR_FLUSH_ERR and, if has_send, its Send with
 * send_status; with `fatal`, exactly one async event must arrive for it,
 * IBV_EVENT_QP_FATAL. */
static void expect_fail_as(struct q *q, double t0, double lo, double hi, int has_send,
			   enum ibv_wc_status send_status, int fatal, const char *since)
{
	struct ibv_wc rwc, swc;
	int got_r = 0, got_s = 0, n;

	for (;;) {
		tick(2);
		if (!got_r)
			got_r = take_wc(q, RECV_ID, &rwc);
		if (has_send && !got_s)
			got_s = take_wc(q, SEND_ID, &swc);
		if (q->t_err >= 0 && got_r && (got_s || !has_send) &&
		    (!fatal || count_ev(q, IBV_EVENT_QP_FATAL)))
			break;
		if (now_ms() > t0 + hi)
			break;
	}
	/* A second event, if any, would be here by now. */
	settle(100);
	if (q->t_err < 0)
		wrong("%s not in ERROR %.0f ms after %s (state %s)", q->name, now_ms() - t0, since,
		      state_name(qstate(q)));
	else if (q->t_err - t0 > hi)
		wrong("%s in ERROR only %.0f ms after %s, expected within %.0f", q->name,
		      q->t_err - t0, since, hi);
	else if (lo > 0 && q->t_err - t0 < lo)
		wrong("%s in ERROR %.0f ms after %s, too early (expected not before %.0f)",
		      q->name, q->t_err - t0, since, lo);
	if (verbose && q->t_err >= 0)
		fprintf(stderr, "  %s: ERROR %.0f ms after %s\n", q->name, q->t_err - t0, since);
	if (!got_r)
		wrong("%s: posted receive not completed", q->name);
	else if (rwc.status != IBV_WC_WR_FLUSH_ERR)
		wrong("%s: receive completed with %s", q->name, ibv_wc_status_str(rwc.status));
	if (has_send && !got_s)
		wrong("%s: posted Send not completed", q->name);
	else if (has_send && swc.status != send_status)
		wrong("%s: Send completed with %s, expected %s", q->name,
		      ibv_wc_status_str(swc.status), ibv_wc_status_str(send_status));
	if (!fatal)
		return;
	n = count_ev(q, IBV_EVENT_QP_FATAL);
	if (n != 1)
		wrong("%s: %d QP_FATAL events, expected 1", q->name, n);
	if (count_ev(q, -1) != n)
		wrong("%s: other async events: %s", q->name, ev_names(q, IBV_EVENT_QP_FATAL));
}

/* expect_fail_as with the Send flushed. */
static void expect_fail(struct q *q, double t0, double lo, double hi, int has_send, int fatal,
			const char *since)
{
	expect_fail_as(q, t0, lo, hi, has_send, IBV_WC_WR_FLUSH_ERR, fatal, since);
}

/* q must be in RTS, never seen in ERROR, without any async event. */
static void expect_rts(struct q *q)
{
	int st = qstate(q);

	if (st != IBV_QPS_RTS || q->t_err >= 0)
		wrong("%s in %s, expected RTS", q->name, q->t_err >= 0 ? "ERR" : state_name(st));
	if (count_ev(q, -1))
		wrong("%s: async events: %s", q->name, ev_names(q, -1));
}

/* a Sends `len` pattern bytes to b, into the receive b has posted: the Send and the
 * receive must complete successfully by `deadline`, and the bytes arrive intact (nothing
 * written past them). b's receive is posted again. 0 if all went right. */
static int exchange(struct q *a, struct q *b, uint32_t len, uint32_t seed, double deadline)
{
	struct ibv_wc wc;
	long i;
	int e;

	fill(a->sbuf, len, seed);
	e = post_send(a, len);
	if (e) {
		wrong("%s: post_send of %u bytes failed: %s", a->name, len, errname(e));
		return -1;
	}
	if (!wait_wc(a, SEND_ID, deadline, &wc)) {
		wrong("%s: Send of %u bytes not completed (state %s)", a->name, len,
		      state_name(qstate(a)));
		return -1;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_SEND) {
		wrong("%s: Send of %u bytes: %s, opcode %d", a->name, len,
		      ibv_wc_status_str(wc.status), wc.opcode);
		return -1;
	}
	if (!wait_wc(b, RECV_ID, deadline, &wc)) {
		wrong("%s: receive of %u bytes not completed (state %s)", b->name, len,
		      state_name(qstate(b)));
		return -1;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV || wc.byte_len != len) {
		wrong("%s: receive: %s, opcode %d, %u bytes, expected %u", b->name,
		      ibv_wc_status_str(wc.status), wc.opcode, wc.byte_len, len);
		return -1;
	}
	i = check(b->rbuf, len, seed);
	if (i >= 0) {
		wrong("%s: byte %ld of %u received differs", b->name, i, len);
		return -1;
	}
	if (len < MAX_MSG && b->rbuf[len]) {
		wrong("%s: receive of %u bytes wrote past them", b->name, len);
		return -1;
	}
	memset(b->rbuf, 0, len);
	post_recv(b);
	return 0;
}

/* ---- cases ---- */

/* RTR with this AV must fail with EINVAL (or ENODATA, if enodata_ok) and leave q in INIT. */
static void rtr_must_fail(struct q *q, int sgid_index, int global, const union ibv_gid *dgid,
			  uint32_t dqpn, int enodata_ok)
{
	int e = to_rtr(q, sgid_index, global, dgid, dqpn), st;

	if (!e)
		wrong("RTR succeeded");
	else if (e != EINVAL && !(enodata_ok && e == ENODATA))
		wrong("RTR failed with %s, expected EINVAL%s", errname(e),
		      enodata_ok ? " or ENODATA" : "");
	else if (enodata_ok)
		snprintf(info, sizeof(info), "%s", errname(e));
	st = qstate(q);
	if (st != IBV_QPS_INIT)
		wrong("%s in %s after the RTR, expected INIT", q->name, state_name(st));
}

static const char *const names12[] = { "q1", "q2" };
static const char *const names123[] = { "q1", "q2", "q3" };

static void case_bad_sgid(void)
{
	union ibv_gid g;
	struct q *v[2];

	make_sorted(v, 2, names12);
	if (!ibv_query_gid(ctx, 1, 31, &g) && (g.global.subnet_prefix || g.global.interface_id))
		wrong("GID 31 is not empty");
	rtr_must_fail(v[0], 31, 1, &my_gid, qpn(v[1]), 1);
}

static void case_mac_sgid(void)
{
	struct q *v[2];

	make_sorted(v, 2, names12);
	rtr_must_fail(v[0], 0, 1, &my_gid, qpn(v[1]), 0);
}

static void case_no_grh(void)
{
	struct q *v[2];

	make_sorted(v, 2, names12);
	rtr_must_fail(v[0], gidx, 0, &my_gid, qpn(v[1]), 0);
}

static void case_zero_dgid(void)
{
	union ibv_gid zero = { .raw = { 0 } };
	struct q *v[2];

	make_sorted(v, 2, names12);
	rtr_must_fail(v[0], gidx, 1, &zero, qpn(v[1]), 0);
}

static void case_mcast_dgid(void)
{
	union ibv_gid mc = { .raw = { 0xff, 0x02, [15] = 1 } };
	struct q *v[2];

	make_sorted(v, 2, names12);
	rtr_must_fail(v[0], gidx, 1, &mc, qpn(v[1]), 0);
}

static void case_self(void)
{
	struct q *v[2];

	make_sorted(v, 2, names12);
	rtr_must_fail(v[0], gidx, 1, &my_gid, qpn(v[0]), 0);
}

static void case_unreachable(void)
{
	struct q *q1;
	double t0;
	int s;

	make_sorted(&q1, 1, names12);
	t0 = now_ms();
	if (link_qp(q1, &unreach_gid, qpn(q1) + 1))
		return;
	s = send64(q1);
	expect_fail(q1, t0, bound / 2.0, bound + 5000.0, s, 1, "its RTR");
}

static void case_no_such_qp(void)
{
	struct q *q1;
	double t0;
	int e, s = 0;

	make_sorted(&q1, 1, names12);
	t0 = now_ms();
	e = to_rtr(q1, gidx, 1, &my_gid, max_qpn + 100000);
	if (e) {
		wrong("q1 RTR failed: %s", errname(e));
		return;
	}
	/* The refusal may come before RTS, or before the Send: then the QP is in ERROR
	 * already, RTS fails and no Send is posted. */
	e = to_rts(q1);
	if (e && qstate(q1) != IBV_QPS_ERR) {
		wrong("q1 RTS failed: %s", errname(e));
		return;
	}
	if (!e && qstate(q1) == IBV_QPS_RTS) {
		e = post_send(q1, 64);
		if (!e)
			s = 1;
		else if (qstate(q1) != IBV_QPS_ERR)
			wrong("q1: post_send in RTS failed: %s", errname(e));
	} else if (!e && qstate(q1) != IBV_QPS_ERR) {
		wrong("q1 in %s after RTS", state_name(qstate(q1)));
	}
	if (verbose && !s)
		fprintf(stderr, "  q1 in ERROR before a Send could be posted\n");
	expect_fail(q1, t0, bound / 2.0, bound + 5000.0, s, 1, "its RTR");
}

static void case_wrong_peer(void)
{
	struct q *v[3], *q1, *q2, *q3;
	double t0, t1;
	int s1, s2, st;

	make_sorted(v, 3, names123);
	q1 = v[0];
	q2 = v[1];
	q3 = v[2];
	/* q2 not ready yet: q1 keeps trying. */
	t1 = now_ms();
	if (link_qp(q1, &my_gid, qpn(q2)))
		return;
	s1 = send64(q1);
	t0 = now_ms();
	if (link_qp(q2, &my_gid, qpn(q3)))
		return;
	s2 = send64(q2);
	expect_fail(q1, t1, bound / 2.0, bound + 5000.0, s1, 1, "its RTR");
	expect_fail(q2, t0, bound / 2.0, bound + 5000.0, s2, 1, "its RTR");
	st = qstate(q3);
	if (st != IBV_QPS_INIT)
		wrong("q3 in %s, expected INIT", state_name(st));
	if (count_ev(q3, -1))
		wrong("q3: async events: %s", ev_names(q3, -1));
}

static void case_destroyed(void)
{
	struct q *v[2], *q1;
	double t0, t1;
	int s;

	make_sorted(v, 2, names12);
	q1 = v[0];
	t0 = now_ms();
	if (link_qp(q1, &my_gid, qpn(v[1])))
		return;
	s = send64(q1);
	settle(300);
	if (q1->t_err >= 0)
		wrong("q1 in ERROR %.0f ms after its RTR, while q2 was still there in INIT",
		      q1->t_err - t0);
	t1 = now_ms();
	free_q(v[1]);
	if (q1->t_err >= 0 && q1->t_err - t1 < 100)
		wrong("q1 in ERROR %.0f ms after q2 was destroyed: a refusal told it so",
		      q1->t_err - t1);
	expect_fail(q1, t0, bound / 2.0, bound + 5000.0, s, 1, "its RTR");
}

static void case_same_peer(void)
{
	static const char *const names[] = { "q3", "q1", "q2" };
	struct q *v[3], *q1, *q2, *q3;
	double t0, t3, dl;
	int s3;

	make_sorted(v, 3, names);
	q3 = v[0];
	q1 = v[1];
	q2 = v[2];
	t3 = now_ms();
	if (link_qp(q3, &my_gid, qpn(q2)))
		return;
	s3 = send64(q3);
	if (link_qp(q1, &my_gid, qpn(q2)))
		return;
	t0 = now_ms();
	if (link_qp(q2, &my_gid, qpn(q1)))
		return;
	dl = t0 + bound + 5000.0;
	if (!exchange(q1, q2, 4096, 101, dl))
		exchange(q2, q1, 4096, 102, dl);
	expect_fail(q3, t3, bound / 2.0, bound + 5000.0, s3, 1, "its RTR");
	settle(200);
	expect_rts(q1);
	expect_rts(q2);
}

static void case_wrong_psn(void)
{
	struct q *v[2];
	struct ibv_wc wc;
	double t0;
	int s1, s2;

	make_sorted(v, 2, names12);
	v[0]->sq_psn = 0x1234;
	v[1]->rq_psn = 0x1235;
	t0 = now_ms();
	if (link_qp(v[0], &my_gid, qpn(v[1])) || link_qp(v[1], &my_gid, qpn(v[0])))
		return;
	s1 = send64(v[0]);
	s2 = send64(v[1]);
	expect_fail(v[0], t0, bound / 2.0, bound + 5000.0, s1, 1, "its RTR");
	expect_fail(v[1], t0, bound / 2.0, bound + 5000.0, s2, 1, "its RTR");
	for (int i = 0; i < 2; i++)
		if (take_wc(v[i], RECV_ID, &wc))
			wrong("%s: a second receive completion (%s)", v[i]->name,
			      ibv_wc_status_str(wc.status));
}

static void case_wrong_accept(void)
{
	struct q *v[2];
	double t0;
	int s;

	make_sorted(v, 2, names12);
	v[0]->rq_psn = 0x4321;
	v[1]->sq_psn = 0x4320;
	if (link_qp(v[0], &my_gid, qpn(v[1])))
		return;
	s = send64(v[0]);
	t0 = now_ms();
	if (link_qp(v[1], &my_gid, qpn(v[0])))
		return;
	expect_fail(v[0], t0, 0, bound / 2.0, s, 1, "q2's RTS");
}

static void case_other_netns(void)
{
	struct q *v[2];
	int e, st;

	make_sorted(v, 2, names12);
	e = to_rtr(v[0], gidx, 1, &my_gid, qpn(v[1]));
	if (e != ENETUNREACH)
		wrong("RTR from another namespace: %s, expected ENETUNREACH",
		      e ? errname(e) : "succeeded");
	st = qstate(v[0]);
	if (st != IBV_QPS_INIT)
		wrong("q1 in %s after the RTR, expected INIT", state_name(st));
}

static void case_good(void)
{
	static const uint32_t sizes[] = { 1, 4096, MAX_MSG };
	struct q *v[2], *q1, *q2;
	struct ibv_wc wc;
	uint32_t seed = 200;
	double t1;
	int s;

	make_sorted(v, 2, names12);
	q1 = v[0];
	q2 = v[1];
	if (link_qp(q1, &my_gid, qpn(q2)) || link_qp(q2, &my_gid, qpn(q1)))
		return;
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (exchange(q1, q2, sizes[i], ++seed, now_ms() + bound + 5000.0) ||
		    exchange(q2, q1, sizes[i], ++seed, now_ms() + bound + 5000.0))
			return;
	settle(100);
	expect_rts(q1);
	expect_rts(q2);
	free_q(q2);
	/* One device: q2's close reaches q1 at once; a second is ample for it to be seen. */
	settle(1000);
	expect_rts(q1);
	if (take_wc(q1, RECV_ID, &wc))
		wrong("q1: receive completed (%s) after q2 left, before any Send",
		      ibv_wc_status_str(wc.status));
	t1 = now_ms();
	s = send64(q1);
	expect_fail_as(q1, t1, RETRY_MS - 5, RETRY_MS + bound / 2.0, s, IBV_WC_GENERAL_ERR, 0,
		       "a Send after q2 was destroyed");
	if (count_ev(q1, -1))
		wrong("q1: async events: %s", ev_names(q1, -1));
}

static const struct {
	const char *name;
	void (*run)(void);
	int named_only;		/* run only when named with -c */
} cases[] = {
	{ "bad_sgid", case_bad_sgid, 0 },
	{ "mac_sgid", case_mac_sgid, 0 },
	{ "no_grh", case_no_grh, 0 },
	{ "zero_dgid", case_zero_dgid, 0 },
	{ "mcast_dgid", case_mcast_dgid, 0 },
	{ "self", case_self, 0 },
	{ "unreachable", case_unreachable, 0 },
	{ "no_such_qp", case_no_such_qp, 0 },
	{ "wrong_peer", case_wrong_peer, 0 },
	{ "destroyed", case_destroyed, 0 },
	{ "same_peer", case_same_peer, 0 },
	{ "wrong_psn", case_wrong_psn, 0 },
	{ "wrong_accept", case_wrong_accept, 0 },
	{ "good", case_good, 0 },
	{ "other_netns", case_other_netns, 1 },
};
#define NCASES (int)(sizeof(cases) / sizeof(cases[0]))

/* ---- main ---- */

static void open_dev(const char *dev)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i, fl;

	if (!list)
		die("ibv_get_device_list");
	for (i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			break;
	if (!list[i]) {
		fprintf(stderr, "FAIL: no RDMA device %s\n", dev);
		exit(1);
	}
	ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("ibv_open_device");
	ibv_free_device_list(list);
	fl = fcntl(ctx->async_fd, F_GETFL);
	if (fl < 0 || fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK))
		die("async_fd");
	pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd");
	if (ibv_query_gid(ctx, 1, gidx, &my_gid))
		die("ibv_query_gid");
	for (i = 0; i < 10; i++)
		if (my_gid.raw[i])
			break;
	if (i < 10 || my_gid.raw[10] != 0xff || my_gid.raw[11] != 0xff) {
		fprintf(stderr, "FAIL: GID %d of %s is not an IPv4 address\n", gidx, dev);
		exit(1);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: gid_errors -d DEV -g GIDX -U ADDR -t MS [-c CASE]... [-v]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dev = NULL, *only[NCASES];
	struct in_addr ua;
	int opt, nonly = 0, nrun = 0, nbad = 0, have_u = 0;

	while ((opt = getopt(argc, argv, "d:g:U:t:c:v")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 't': bound = atoi(optarg); break;
		case 'v': verbose = 1; break;
		case 'U':
			if (inet_pton(AF_INET, optarg, &ua) != 1)
				usage();
			have_u = 1;
			break;
		case 'c':
			if (nonly == NCASES)
				usage();
			only[nonly++] = optarg;
			break;
		default: usage();
		}
	}
	if (!dev || gidx < 0 || !have_u || bound <= 0 || optind != argc)
		usage();
	for (int i = 0; i < nonly; i++) {
		int j;

		for (j = 0; j < NCASES && strcmp(cases[j].name, only[i]); j++)
			;
		if (j == NCASES) {
			fprintf(stderr, "gid_errors: no case %s\n", only[i]);
			exit(2);
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	unreach_gid.raw[10] = 0xff;
	unreach_gid.raw[11] = 0xff;
	memcpy(&unreach_gid.raw[12], &ua, 4);
	open_dev(dev);
	if (!memcmp(&unreach_gid, &my_gid, sizeof(my_gid))) {
		fprintf(stderr, "gid_errors: -U names the device's own address\n");
		exit(2);
	}
	for (int i = 0; i < NCASES; i++) {
		int j;

		for (j = 0; j < nonly && strcmp(cases[i].name, only[j]); j++)
			;
		if ((nonly || cases[i].named_only) && j == nonly)
			continue;
		if (verbose)
			fprintf(stderr, "case %s:\n", cases[i].name);
		why[0] = 0;
		info[0] = 0;
		nev = 0;
		ev_lost = 0;
		cases[i].run();
		if (ev_lost)
			wrong("%d async events lost (table full)", ev_lost);
		while (nlive)
			free_q(live[nlive - 1]);
		nrun++;
		if (why[0]) {
			nbad++;
			printf("case %s: WRONG (%s)\n", cases[i].name, why);
		} else {
			printf("case %s: ok%s%s%s\n", cases[i].name, info[0] ? " (" : "", info,
			       info[0] ? ")" : "");
		}
	}
	if (nbad)
		printf("gid_errors: %d of %d cases WRONG\n", nbad, nrun);
	else
		printf("gid_errors: all %d cases ok\n", nrun);
	return nbad ? 1 : 0;
}
