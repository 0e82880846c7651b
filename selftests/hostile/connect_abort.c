// SPDX-License-Identifier: GPL-2.0
/*
 * connect_abort: rdma_connect towards a peer that never answers (the caller gives its
 * address a neighbour entry with a MAC nobody has, so every SYN is lost).
 *
 *   connect_abort -a ADDR -w MS
 *
 * 1. wait:  rdma_connect must return at once (within 500 ms: siw_rs connects in the
 *           background, the C siw blocks until TCP gives up); the connect must then fail,
 *           as RDMA_CM_EVENT_UNREACHABLE, REJECTED or CONNECT_ERROR, within MS.
 * 2. abort: rdma_connect, then at once rdma_destroy_qp and rdma_destroy_id: both must
 *           return within 1 s (the iw_cm waits for the driver's answer to a connect in
 *           progress before it lets the cm_id go).
 *
 * Prints one line per step; exits 0 only if both went right.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void die(const char *what)
{
	fprintf(stderr, "FAIL: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* The next event on ec within ms, or NULL. */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ec, int ms)
{
	struct pollfd p = { .fd = ec->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) <= 0)
		return NULL;
	if (rdma_get_cm_event(ec, &ev))
		die("rdma_get_cm_event");
	return ev;
}

static void expect(struct rdma_event_channel *ec, enum rdma_cm_event_type t)
{
	struct rdma_cm_event *ev = next_event(ec, 10000);

	if (!ev || ev->event != t) {
		fprintf(stderr, "FAIL: expected %s, got %s\n", rdma_event_str(t),
			ev ? rdma_event_str(ev->event) : "nothing in 10 s");
		exit(1);
	}
	rdma_ack_cm_event(ev);
}

struct conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

/* A cm_id with its address and route resolved and a QP, ready to connect. */
static void prepare(struct rdma_event_channel *ec, const char *addr, struct conn *c)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct addrinfo *ai;

	if (getaddrinfo(addr, "7199", NULL, &ai))
		die("getaddrinfo");
	if (rdma_create_id(ec, &c->id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_resolve_addr(c->id, NULL, ai->ai_addr, 5000))
		die("rdma_resolve_addr");
	freeaddrinfo(ai);
	expect(ec, RDMA_CM_EVENT_ADDR_RESOLVED);
	if (rdma_resolve_route(c->id, 5000))
		die("rdma_resolve_route");
	expect(ec, RDMA_CM_EVENT_ROUTE_RESOLVED);
	c->pd = ibv_alloc_pd(c->id->verbs);
	c->cq = ibv_create_cq(c->id->verbs, 8, NULL, NULL, 0);
	if (!c->pd || !c->cq)
		die("pd/cq");
	qa.send_cq = qa.recv_cq = c->cq;
	if (rdma_create_qp(c->id, c->pd, &qa))
		die("rdma_create_qp");
}

static void release(struct conn *c)
{
	ibv_destroy_cq(c->cq);
	ibv_dealloc_pd(c->pd);
}

/* rdma_connect; returns how long it took (ms). */
static double connect_now(struct conn *c)
{
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1 };
	double t0 = now_ms();

	if (rdma_connect(c->id, &cp))
		die("rdma_connect");
	return now_ms() - t0;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *ec;
	struct rdma_cm_event *ev;
	const char *addr = NULL;
	struct conn c = { 0 };
	int opt, wait_ms = -1, bad = 0;
	double took, t0;

	while ((opt = getopt(argc, argv, "a:w:")) != -1) {
		switch (opt) {
		case 'a': addr = optarg; break;
		case 'w': wait_ms = atoi(optarg); break;
		default: return 2;
		}
	}
	if (!addr || wait_ms <= 0)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	ec = rdma_create_event_channel();
	if (!ec)
		die("rdma_create_event_channel");

	/* 1. wait */
	prepare(ec, addr, &c);
	took = connect_now(&c);
	t0 = now_ms();
	ev = next_event(ec, wait_ms);
	if (took > 500) {
		printf("wait: rdma_connect took %.0f ms: WRONG\n", took);
		bad = 1;
	}
	if (!ev) {
		printf("wait: no event in %d ms: WRONG\n", wait_ms);
		bad = 1;
	} else {
		int ok = ev->event == RDMA_CM_EVENT_UNREACHABLE || ev->event == RDMA_CM_EVENT_REJECTED ||
			 ev->event == RDMA_CM_EVENT_CONNECT_ERROR;

		printf("wait: rdma_connect returned in %.0f ms; %s (status %d) %.0f ms later: %s\n",
		       took, rdma_event_str(ev->event), ev->status, now_ms() - t0,
		       ok ? "ok" : "WRONG");
		bad |= !ok;
		rdma_ack_cm_event(ev);
	}
	rdma_destroy_qp(c.id);
	rdma_destroy_id(c.id);
	release(&c);

	/* 2. abort */
	prepare(ec, addr, &c);
	took = connect_now(&c);
	t0 = now_ms();
	rdma_destroy_qp(c.id);
	rdma_destroy_id(c.id);
	release(&c);
	t0 = now_ms() - t0;
	printf("abort: rdma_connect returned in %.0f ms, QP and cm_id destroyed %.0f ms later: %s\n",
	       took, t0, took <= 500 && t0 <= 1000 ? "ok" : "WRONG");
	bad |= took > 500 || t0 > 1000;
	rdma_destroy_event_channel(ec);
	return bad;
}
