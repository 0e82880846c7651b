// SPDX-License-Identifier: GPL-2.0
/*
 * gid_many: many connections made by modify_qp at once, on one device in one process
 * (gid/09-many.sh): N pairs of RC QPs, each pair connected through the device's own IPv4
 * GID with PSNs of its own, and one 64-byte Send each way per pair, every byte checked.
 *
 *   gid_many -d DEV -g GIDX -n PAIRS -t MS
 *   -d DEV    the device
 *   -g GIDX   the index in port 1's GID table of the device's IPv4 address
 *   -n PAIRS  how many pairs
 *   -t MS     how long all of them may take to connect and exchange
 *
 * Prints "connected N pairs in T ms" once every Send of every pair has arrived intact
 * (or "FAIL: ..." and exits 1), then waits for a line on stdin (or its end), with every
 * connection up, before it destroys everything and exits 0.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MSG 64

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

/* The byte `i` of the message QP `n` sends. */
static unsigned char pattern(int n, int i)
{
	return (unsigned char)(n * 31 + i * 7 + 1);
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	int gidx = -1, pairs = 0, ms = 0, opt, i, n, got = 0;
	struct ibv_device **list;
	struct ibv_context *ctx;
	union ibv_gid gid;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	struct ibv_qp **qp;
	uint32_t *psn;
	unsigned char *buf;
	struct ibv_wc wc[32];
	char line[16];
	double t0, end;

	while ((opt = getopt(argc, argv, "d:g:n:t:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'g': gidx = atoi(optarg); break;
		case 'n': pairs = atoi(optarg); break;
		case 't': ms = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (!dev || gidx < 0 || pairs <= 0 || ms <= 0 || optind != argc)
		goto usage;
	setvbuf(stdout, NULL, _IOLBF, 0);
	srand48(getpid());
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
	if (!ctx || ibv_query_gid(ctx, 1, gidx, &gid))
		die("open or query_gid");
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 4 * pairs + 8, NULL, NULL, 0) : NULL;
	qp = calloc(2 * pairs, sizeof(*qp));
	psn = calloc(2 * pairs, sizeof(*psn));
	/* Per QP: a send buffer, then a receive buffer. */
	buf = calloc(2 * pairs, 2 * MSG);
	if (!cq || !qp || !psn || !buf)
		die("pd, cq or memory");
	mr = ibv_reg_mr(pd, buf, (size_t)4 * pairs * MSG, IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		die("ibv_reg_mr");
	for (n = 0; n < 2 * pairs; n++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1,
				 .max_recv_sge = 1 },
		};
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
			.qp_access_flags = IBV_ACCESS_LOCAL_WRITE,
		};
		unsigned char *rb = buf + (size_t)n * 2 * MSG + MSG;
		struct ibv_sge sge = { .addr = (uintptr_t)rb, .length = MSG, .lkey = mr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 2 * n + 1, .sg_list = &sge, .num_sge = 1 };
		struct ibv_recv_wr *bad;

		qp[n] = ibv_create_qp(pd, &ia);
		if (!qp[n])
			die("ibv_create_qp");
		errno = ibv_modify_qp(qp[n], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS);
		if (errno)
			die("modify_qp INIT");
		errno = ibv_post_recv(qp[n], &rwr, &bad);
		if (errno)
			die("ibv_post_recv");
		psn[n] = lrand48() & 0xffffff;
		for (i = 0; i < MSG; i++)
			buf[(size_t)n * 2 * MSG + i] = pattern(n, i);
	}
	t0 = now_ms();
	for (n = 0; n < 2 * pairs; n++) {
		int peer = n ^ 1;
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
			.dest_qp_num = qp[peer]->qp_num, .rq_psn = psn[peer],
			.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
			.ah_attr = { .is_global = 1, .port_num = 1,
				     .grh = { .dgid = gid, .sgid_index = gidx, .hop_limit = 1 } },
		};
		struct ibv_qp_attr r = {
			.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
			.sq_psn = psn[n], .max_rd_atomic = 1,
		};
		struct ibv_sge sge = { .addr = (uintptr_t)(buf + (size_t)n * 2 * MSG),
				       .length = MSG, .lkey = mr->lkey };
		struct ibv_send_wr swr = { .wr_id = 2 * n, .sg_list = &sge, .num_sge = 1,
					   .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr *bad;

		errno = ibv_modify_qp(qp[n], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
		if (errno)
			die("modify_qp RTR");
		errno = ibv_modify_qp(qp[n], &r, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				      IBV_QP_MAX_QP_RD_ATOMIC);
		if (errno)
			die("modify_qp RTS");
		/* Waits for the connection, in siw_rs, then goes. */
		errno = ibv_post_send(qp[n], &swr, &bad);
		if (errno)
			die("ibv_post_send");
	}
	end = t0 + ms;
	while (got < 4 * pairs) {
		int k = ibv_poll_cq(cq, 32, wc);

		if (k < 0) {
			errno = -k;
			die("ibv_poll_cq");
		}
		for (i = 0; i < k; i++) {
			int q = wc[i].wr_id / 2, peer = q ^ 1, j;
			unsigned char *rb = buf + (size_t)q * 2 * MSG + MSG;

			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "FAIL: QP %d (%u): %s %s\n", q, qp[q]->qp_num,
					wc[i].wr_id & 1 ? "receive" : "send",
					ibv_wc_status_str(wc[i].status));
				return 1;
			}
			if (wc[i].wr_id & 1) {
				for (j = 0; j < MSG && rb[j] == pattern(peer, j); j++)
					;
				if (wc[i].byte_len != MSG || j != MSG) {
					fprintf(stderr, "FAIL: QP %d received %u bytes, wrong at %d\n",
						q, wc[i].byte_len, j);
					return 1;
				}
			}
			got++;
		}
		if (!k && now_ms() > end) {
			fprintf(stderr, "FAIL: %d of %d completions in %d ms\n", got, 4 * pairs, ms);
			return 1;
		}
		if (!k)
			usleep(1000);
	}
	printf("connected %d pairs in %.0f ms\n", pairs, now_ms() - t0);
	if (!fgets(line, sizeof(line), stdin) && ferror(stdin))
		die("stdin");
	for (n = 0; n < 2 * pairs; n++)
		ibv_destroy_qp(qp[n]);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
usage:
	fprintf(stderr, "usage: gid_many -d DEV -g GIDX -n PAIRS -t MS\n");
	return 2;
}
