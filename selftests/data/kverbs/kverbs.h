/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kverbs.h: the rdma_cm steps the kernel-verbs test consumers (kvt.c, k7306.c) share, done
 * as kernel ULPs do them, in the network namespace of the process that loads the module.
 */
#ifndef KVERBS_H
#define KVERBS_H

#include <linux/completion.h>
#include <linux/inet.h>
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <net/net_namespace.h>
#include <rdma/rdma_cm.h>

#define KV_TMO (30 * HZ)

/* A client cm_id's last event, for kv_wait(); the cm_id's context. */
struct kv_cm {
	struct completion done;
	enum rdma_cm_event_type event;
	int status;
};

static inline int kv_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct kv_cm *cm = id->context;

	cm->event = ev->event;
	cm->status = ev->status;
	complete(&cm->done);
	return 0;
}

/* A client's cm_id, whose events kv_wait() takes. */
static inline struct rdma_cm_id *kv_client_id(struct kv_cm *cm)
{
	init_completion(&cm->done);
	return rdma_create_id(current->nsproxy->net_ns, kv_cm_handler, cm, RDMA_PS_TCP,
			      IB_QPT_RC);
}

/* Waits for the client's next event, which must be `want`. */
static inline int kv_wait(struct kv_cm *cm, enum rdma_cm_event_type want, const char *who)
{
	if (!wait_for_completion_timeout(&cm->done, KV_TMO)) {
		pr_err("%s: no %s within 30 s\n", who, rdma_event_msg(want));
		return -ETIMEDOUT;
	}
	if (cm->event != want) {
		pr_err("%s: %s (%d), expected %s\n", who, rdma_event_msg(cm->event), cm->status,
		       rdma_event_msg(want));
		return cm->status ? cm->status : -ECONNREFUSED;
	}
	return 0;
}

/* Resolves the address and the route to IPv4 address `addr`, port `port`. */
static inline int kv_resolve(struct rdma_cm_id *id, struct kv_cm *cm, const char *addr,
			     u16 port, const char *who)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(port) };
	int rv;

	if (!in4_pton(addr, -1, (u8 *)&dst.sin_addr.s_addr, -1, NULL))
		return -EINVAL;
	rv = rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 5000);
	if (!rv)
		rv = kv_wait(cm, RDMA_CM_EVENT_ADDR_RESOLVED, who);
	if (!rv)
		rv = rdma_resolve_route(id, 5000);
	if (!rv)
		rv = kv_wait(cm, RDMA_CM_EVENT_ROUTE_RESOLVED, who);
	return rv;
}

/* A listener on IPv4 address `addr`, port `port`, whose events go to `handler`. */
static inline struct rdma_cm_id *kv_listen(rdma_cm_event_handler handler, const char *addr,
					   u16 port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct rdma_cm_id *id;
	int rv;

	if (!in4_pton(addr, -1, (u8 *)&sin.sin_addr.s_addr, -1, NULL))
		return ERR_PTR(-EINVAL);
	id = rdma_create_id(current->nsproxy->net_ns, handler, NULL, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		return id;
	rv = rdma_bind_addr(id, (struct sockaddr *)&sin);
	if (!rv)
		rv = rdma_listen(id, 1);
	if (rv) {
		rdma_destroy_id(id);
		return ERR_PTR(rv);
	}
	return id;
}

#endif
