// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz_target: the listener that selftests/lib/frame_fuzz.py (a hostile iWARP peer) sends
 * its frames to.
 *
 *   fuzz_target -a ADDR [-p PORT] [-i IRD] [-n] [-v]
 *
 * Listens with rdma_cm on ADDR:PORT (default 7180) and accepts every connection request
 * with a QP of its own and, in the accept's private data (all big endian):
 *
 *   u64 addr, u32 rkey, u32 len     a 64 KiB MR open to remote Write and Read, its bytes
 *                                   set to (i * 31 + 7) & 0xff, so that the peer can check
 *                                   what its Read Requests return, byte for byte;
 *   u32 dead_rkey                   the STag of an MR deregistered before the accept;
 *   u32 recv_size, u32 recv_count   the receives posted (and reposted as they complete).
 *
 * With -n the MR is not open to remote atomics (IBV_ACCESS_REMOTE_ATOMIC), so that a peer's
 * atomic on it must be refused. IRD (default 4) is the accept's responder_resources. It serves connections one event
 * at a time, polls their CQs, and releases each one at its DISCONNECTED (or error) event.
 * With -v it prints a line as each connection is established and as it ends:
 *
 *   fuzz_target: established K
 *   fuzz_target: ended K by EVENT
 *
 * On SIGTERM or SIGINT, or when the device goes away (DEVICE_REMOVAL: then it says so,
 * "fuzz_target: device removed"), it releases everything and prints one line:
 *
 *   fuzz_target: requests R established E ended N open O recvs C error-wcs W
 *
 * and exits 0; O is how many connections had no ending event yet. It exits 1 with a FAIL
 * line if a verbs call fails where it must not.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define MR_LEN (64 * 1024)
#define RECV_SIZE 1024
#define RECV_COUNT 16
#define MAX_CONNS 1024

struct advert {
	uint64_t addr;
	uint32_t rkey, len, dead_rkey, recv_size, recv_count;
} __attribute__((packed));

struct conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr, *rmr;
	uint8_t *buf, *rbuf;
	int live;
	unsigned long n;
};

static struct conn *conns[MAX_CONNS];
static volatile sig_atomic_t stop;
static int verbose;
/* -n: the MR without remote atomic rights. */
static int no_atomic;
static unsigned long requests, established, ended, recvs, error_wcs;

static void die(const char *what)
{
	fprintf(stderr, "FAIL: fuzz_target: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void post_recv(struct conn *c, int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)c->rbuf + i * RECV_SIZE,
		.length = RECV_SIZE,
		.lkey = c->rmr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

	/* A QP in ERROR takes no more receives: that is how a connection ends. */
	if (ibv_post_recv(c->id->qp, &wr, &bad) && c->live)
		c->live = 0;
}

static void release(struct conn *c)
{
	if (c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->mr && ibv_dereg_mr(c->mr))
		die("ibv_dereg_mr");
	if (c->rmr && ibv_dereg_mr(c->rmr))
		die("ibv_dereg_mr (receives)");
	if (c->cq && ibv_destroy_cq(c->cq))
		die("ibv_destroy_cq");
	if (c->pd && ibv_dealloc_pd(c->pd))
		die("ibv_dealloc_pd");
	free(c->buf);
	free(c->rbuf);
	if (rdma_destroy_id(c->id))
		die("rdma_destroy_id");
	free(c);
}

static void forget(struct conn *c)
{
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i] == c)
			conns[i] = NULL;
}

/* A connection request: a QP, the MRs, the receives, then the accept (or a reject when
 * the table is full). */
static void take(struct rdma_cm_id *id, int ird)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = RECV_COUNT,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_conn_param cp = { .responder_resources = ird, .initiator_depth = 1 };
	struct advert adv;
	struct ibv_mr *dead;
	struct conn *c;
	int slot = -1;

	requests++;
	for (int i = 0; i < MAX_CONNS && slot < 0; i++)
		if (!conns[i])
			slot = i;
	c = calloc(1, sizeof(*c));
	if (!c || slot < 0) {
		rdma_reject(id, NULL, 0);
		rdma_destroy_id(id);
		free(c);
		return;
	}
	c->id = id;
	c->n = requests;
	id->context = c;
	c->pd = ibv_alloc_pd(id->verbs);
	if (!c->pd)
		die("ibv_alloc_pd");
	c->cq = ibv_create_cq(id->verbs, RECV_COUNT + 8, NULL, NULL, 0);
	if (!c->cq)
		die("ibv_create_cq");
	qa.send_cq = qa.recv_cq = c->cq;
	if (rdma_create_qp(id, c->pd, &qa))
		die("rdma_create_qp");
	if (posix_memalign((void **)&c->buf, 4096, MR_LEN) ||
	    posix_memalign((void **)&c->rbuf, 4096, RECV_SIZE * RECV_COUNT))
		die("posix_memalign");
	for (int i = 0; i < MR_LEN; i++)
		c->buf[i] = (uint8_t)(i * 31 + 7);
	/* Remote atomics too (but with -n): the fuzzer's RFC 7306 connections use them. */
	c->mr = ibv_reg_mr(c->pd, c->buf, MR_LEN,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   (no_atomic ? 0 : IBV_ACCESS_REMOTE_ATOMIC));
	c->rmr = ibv_reg_mr(c->pd, c->rbuf, RECV_SIZE * RECV_COUNT, IBV_ACCESS_LOCAL_WRITE);
	dead = ibv_reg_mr(c->pd, c->rbuf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!c->mr || !c->rmr || !dead)
		die("ibv_reg_mr");
	adv = (struct advert){
		.addr = htobe64((uintptr_t)c->buf), .rkey = htobe32(c->mr->rkey),
		.len = htobe32(MR_LEN), .dead_rkey = htobe32(dead->rkey),
		.recv_size = htobe32(RECV_SIZE), .recv_count = htobe32(RECV_COUNT),
	};
	if (ibv_dereg_mr(dead))
		die("ibv_dereg_mr (dead)");
	c->live = 1;
	for (int i = 0; i < RECV_COUNT; i++)
		post_recv(c, i);
	cp.private_data = &adv;
	cp.private_data_len = sizeof(adv);
	conns[slot] = c;
	/* The peer may be gone already: then the accept fails, or an event ends it. */
	if (rdma_accept(id, &cp)) {
		forget(c);
		release(c);
		ended++;
	}
}

static void poll_cqs(void)
{
	struct ibv_wc wc[16];

	for (int i = 0; i < MAX_CONNS; i++) {
		struct conn *c = conns[i];
		int n;

		if (!c)
			continue;
		while ((n = ibv_poll_cq(c->cq, 16, wc)) > 0) {
			for (int k = 0; k < n; k++) {
				if (wc[k].status != IBV_WC_SUCCESS) {
					error_wcs++;
					c->live = 0;
					continue;
				}
				recvs++;
				if (c->live)
					post_recv(c, (int)wc[k].wr_id);
			}
		}
		if (n < 0)
			die("ibv_poll_cq");
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(7180) };
	struct rdma_event_channel *ec;
	struct rdma_cm_id *listen_id;
	struct sigaction sa = { .sa_handler = on_signal };
	int opt, ird = 4;
	unsigned long open = 0;

	while ((opt = getopt(argc, argv, "a:p:i:nv")) != -1) {
		switch (opt) {
		case 'a':
			if (inet_pton(AF_INET, optarg, &sin.sin_addr) != 1)
				return 2;
			break;
		case 'p': sin.sin_port = htons(atoi(optarg)); break;
		case 'i': ird = atoi(optarg); break;
		case 'n': no_atomic = 1; break;
		case 'v': verbose = 1; break;
		default: return 2;
		}
	}
	if (!sin.sin_addr.s_addr)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	ec = rdma_create_event_channel();
	if (!ec)
		die("rdma_create_event_channel");
	if (rdma_create_id(ec, &listen_id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	if (rdma_bind_addr(listen_id, (struct sockaddr *)&sin))
		die("rdma_bind_addr");
	if (rdma_listen(listen_id, 64))
		die("rdma_listen");
	printf("fuzz_target: listening\n");
	while (!stop) {
		struct pollfd p = { .fd = ec->fd, .events = POLLIN };
		struct rdma_cm_event *ev;
		struct rdma_cm_id *id;
		struct conn *c;
		int r = poll(&p, 1, 5);

		poll_cqs();
		if (r <= 0)
			continue;
		if (rdma_get_cm_event(ec, &ev)) {
			if (errno == EINTR)
				continue;
			die("rdma_get_cm_event");
		}
		id = ev->id;
		c = id->context;
		switch (ev->event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			rdma_ack_cm_event(ev);
			take(id, ird);
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			established++;
			if (verbose && c)
				printf("fuzz_target: established %lu\n", c->n);
			rdma_ack_cm_event(ev);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
		case RDMA_CM_EVENT_CONNECT_ERROR:
		case RDMA_CM_EVENT_UNREACHABLE:
		case RDMA_CM_EVENT_REJECTED:
			if (verbose && c)
				printf("fuzz_target: ended %lu by %s\n", c->n, rdma_event_str(ev->event));
			rdma_ack_cm_event(ev);
			if (c) {
				forget(c);
				release(c);
				ended++;
			}
			break;
		case RDMA_CM_EVENT_DEVICE_REMOVAL:
			/* The device waits for every cm_id on it to be destroyed. */
			rdma_ack_cm_event(ev);
			printf("fuzz_target: device removed\n");
			stop = 1;
			break;
		default:
			rdma_ack_cm_event(ev);
			break;
		}
	}
	poll_cqs();
	for (int i = 0; i < MAX_CONNS; i++) {
		if (conns[i]) {
			open++;
			release(conns[i]);
			conns[i] = NULL;
		}
	}
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ec);
	printf("fuzz_target: requests %lu established %lu ended %lu open %lu recvs %lu "
	       "error-wcs %lu\n", requests, established, ended, open, recvs, error_wcs);
	return 0;
}
