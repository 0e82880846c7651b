// SPDX-License-Identifier: GPL-2.0
/*
 * gid_wait: the responder of a connection made by modify_qp, for the listener's selftest
 * (gid/07-listener.sh): one RC QP waiting for its peer, one left in INIT beside it.
 *
 *   gid_wait -d DEV -g GIDX -D DGID -q DQPN -r RQ_PSN -s SQ_PSN -n BYTES -w MS [-R]
 *   -d DEV     the device
 *   -g GIDX    the index in port 1's GID table of the own IPv4 address
 *   -D DGID    the peer's IPv4 address
 *   -q DQPN    the peer's QP number
 *   -r, -s     the QP's rq_psn and sq_psn
 *   -n BYTES   the size of the one receive posted
 *   -w MS      how long to wait for it, after the QP is ready
 *   -R         stop in RTR (no RTS)
 *
 * Prints "qpn WAIT INIT" (the waiting QP's number, the INIT one's), then "ready" once the
 * QP is in RTR (-R) or RTS, then one of: "received N bytes, pattern ok" (byte i is
 * (7 * i + 3) & 0xff, as hostile_peer.py gid-request --send sends), "received N bytes,
 * pattern WRONG at I", "receive completed with STATUS", or "no receive in MS ms". It
 * then waits for a line on stdin (or its end) before it destroys the QPs and exits, so
 * that the caller can look at the listeners first. Exits 0 after any of these; 1 when a
 * setup step fails.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

static struct ibv_qp *make_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE,
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	if (!qp)
		die("ibv_create_qp");
	errno = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			      IBV_QP_ACCESS_FLAGS);
	if (errno)
		die("modify_qp INIT");
	return qp;
}

static void usage(void)
{
	fprintf(stderr, "usage: gid_wait -d DEV -g GIDX -D DGID -q DQPN -r RQ_PSN -s SQ_PSN "
			"-n BYTES -w MS [-R]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	int gidx = -1, opt, rtr_only = 0, wait_ms = 0, i;
	uint32_t dqpn = 0, rq_psn = 0, sq_psn = 0, len = 0;
	struct in_addr da = { 0 };
	union ibv_gid dgid = { 0 };
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp *qp, *idle;
	struct ibv_wc wc;
	unsigned char *buf;
	char line[16];
	double end;
	int n;

	while ((opt = getopt(argc, argv, "d:g:D:q:r:s:n:w:R")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'D':
			if (inet_pton(AF_INET, optarg, &da) != 1)
				usage();
			break;
		case 'q': dqpn = strtoul(optarg, NULL, 0); break;
		case 'r': rq_psn = strtoul(optarg, NULL, 0); break;
		case 's': sq_psn = strtoul(optarg, NULL, 0); break;
		case 'n': len = strtoul(optarg, NULL, 0); break;
		case 'w': wait_ms = atoi(optarg); break;
		case 'R': rtr_only = 1; break;
		default: usage();
		}
	}
	if (!dev || gidx < 0 || !da.s_addr || !len || wait_ms <= 0 || optind != argc)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(NULL);
	if (!list)
		die("ibv_get_device_list");
	for (i = 0; list[i] && strcmp(ibv_get_device_name(list[i]), dev); i++)
		;
	if (!list[i]) {
		fprintf(stderr, "FAIL: no RDMA device %s\n", dev);
		return 1;
	}
	ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("ibv_open_device");
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 8, NULL, NULL, 0) : NULL;
	buf = calloc(1, len);
	if (!cq || !buf)
		die("pd, cq or buffer");
	mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	qp = make_qp(pd, cq);
	idle = make_qp(pd, cq);
	printf("qpn %u %u\n", qp->qp_num, idle->qp_num);

	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;

	errno = ibv_post_recv(qp, &rwr, &bad);
	if (errno)
		die("ibv_post_recv");
	dgid.raw[10] = 0xff;
	dgid.raw[11] = 0xff;
	memcpy(&dgid.raw[12], &da, 4);
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = dqpn,
		.rq_psn = rq_psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = dgid, .sgid_index = gidx, .hop_limit = 1 } },
	};
	errno = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			      IBV_QP_MIN_RNR_TIMER);
	if (errno)
		die("modify_qp RTR");
	if (!rtr_only) {
		struct ibv_qp_attr r = {
			.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
			.sq_psn = sq_psn, .max_rd_atomic = 1,
		};
		errno = ibv_modify_qp(qp, &r, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
		if (errno)
			die("modify_qp RTS");
	}
	printf("ready\n");
	end = now_ms() + wait_ms;
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0 && now_ms() < end)
		usleep(1000);
	if (n < 0) {
		errno = -n;
		die("ibv_poll_cq");
	}
	if (!n) {
		printf("no receive in %d ms\n", wait_ms);
	} else if (wc.status != IBV_WC_SUCCESS) {
		printf("receive completed with %s\n", ibv_wc_status_str(wc.status));
	} else {
		for (i = 0; i < (int)wc.byte_len; i++)
			if (buf[i] != ((7 * i + 3) & 0xff))
				break;
		if (i == (int)wc.byte_len)
			printf("received %u bytes, pattern ok\n", wc.byte_len);
		else
			printf("received %u bytes, pattern WRONG at %d\n", wc.byte_len, i);
	}
	if (!fgets(line, sizeof(line), stdin) && ferror(stdin))
		die("stdin");
	ibv_destroy_qp(idle);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
