// SPDX-License-Identifier: GPL-2.0
/*
 * cq_flood DEVICE: a process that keeps its CQ overflowing and rings the SQ doorbell in a
 * loop (issue 13, defect 4). Each doorbell on a QP in ERROR flushes the SQ into a CQ that
 * has no room; a driver that reports every overflow queues one async event per write(2),
 * without bound. Prints the number of CQ_ERR events received and the CQEs polled:
 *   cq_size=C posted=P flush cqes=C cq_err_events=N doorbells=D
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#define DOORBELLS 2000

static void die(const char *what)
{
	fprintf(stderr, "cq_flood: %s: %s\n", what, strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_qp_init_attr ia = { 0 };
	struct ibv_qp_attr qa = { 0 };
	struct ibv_async_event ev;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} db;
	struct ib_uverbs_post_send_resp resp;
	int i, n, posted = 0, cqes = 0, events = 0, rings = 0;

	if (argc != 2)
		return 2;
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		die("open device");
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	if (!pd || !cq)
		die("pd/cq");
	ia.qp_type = IBV_QPT_RC;
	ia.send_cq = cq;
	ia.recv_cq = cq;
	ia.cap.max_send_wr = 64;
	ia.cap.max_recv_wr = 1;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(pd, &ia);
	if (!qp)
		die("create qp");
	qa.qp_state = IBV_QPS_ERR;
	if (ibv_modify_qp(qp, &qa, IBV_QP_STATE))
		die("modify qp to ERR");
	/* Fill the SQ; each post may already flush into the CQ, which holds one CQE. */
	for (i = 0; i < 64; i++) {
		wr.wr_id = i;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		if (ibv_post_send(qp, &wr, &bad))
			break;
		posted++;
	}
	/* Then ring the doorbell (POST_SEND with no work requests) again and again. */
	memset(&db, 0, sizeof(db));
	db.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	db.hdr.in_words = sizeof(db) / 4;
	db.hdr.out_words = sizeof(resp) / 4;
	db.cmd.response = (uintptr_t)&resp;
	db.cmd.qp_handle = qp->handle;
	db.cmd.wqe_size = sizeof(struct ib_uverbs_send_wr);
	for (i = 0; i < DOORBELLS; i++)
		rings += write(ctx->cmd_fd, &db, sizeof(db)) == sizeof(db);
	fcntl(ctx->async_fd, F_SETFL, fcntl(ctx->async_fd, F_GETFL) | O_NONBLOCK);
	while (!ibv_get_async_event(ctx, &ev)) {
		events += ev.event_type == IBV_EVENT_CQ_ERR;
		ibv_ack_async_event(&ev);
	}
	while (ibv_poll_cq(cq, 1, &wc) == 1)
		cqes++;
	printf("cq_size=%d posted=%d flush cqes=%d cq_err_events=%d doorbells=%d\n", cq->cqe,
	       posted, cqes, events, rings);
	ibv_destroy_qp(qp);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
