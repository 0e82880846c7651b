// SPDX-License-Identifier: GPL-2.0
/*
 * verbs_objects DEVICE: exercise every connection-less verbs object path of a
 * siw-ABI device through unmodified libibverbs + libsiw, and print a canonical
 * transcript: one line per check, "what -> outcome".
 *
 * The transcript is meant to be diffed between the kernel's C siw and siw_rs,
 * so it prints nothing that legitimately differs between two devices or two
 * runs: no device or netdev names, no pointers, no lkeys/rkeys, no QP numbers,
 * no GID/GUID/MAC values, no vendor_part_id, no timings. Such values are only
 * compared against each other ("lkey==rkey", "node_guid == EUI-64(netdev MAC)").
 *
 * Conventions in the outcome column:
 *   ok             the call succeeded (plus the values it returned)
 *   EINVAL         the call failed with that errno (pointer verbs: errno;
 *                  int verbs: the positive return value)
 *   ret=-EINVAL    libsiw's post_send/post_recv/post_srq_recv return negative
 *                  errno values (rdma-core providers/siw/siw.c)
 *   ret=-1 errno=X the call returned -1 (libsiw's doorbell write(2) failed)
 *
 * Also left out on purpose:
 *  - ibv_query_qp fields the C siw does not fill in (siw_query_qp): the core
 *    kmalloc()s the attributes (ib_uverbs_query_qp), so cur_qp_state, qkey,
 *    PSNs, port_num, timeouts, sq_sig_all, ... are uninitialized kernel memory
 *    and differ from run to run. Only state, caps, path_mtu, access flags and
 *    the two rd_atomic values are printed.
 *  - ibv_post_recv on a QP with an SRQ (libsiw has no RQ mapping for it and
 *    would crash), polling a CQ after a failed ibv_destroy_cq (libsiw unmaps
 *    the CQ ring before it asks the kernel).
 *
 * What libsiw never sends to the kernel (QUERY_SRQ: libsiw has no query_srq;
 * POST_RECV, POLL_CQ, ... which the C siw leaves disabled) is checked with raw
 * uverbs write(2) commands.
 *
 * The program exits 0 when it ran to the end (the last line is "end"),
 * whatever the outcomes were; the test script judges the transcript.
 * VERBS_OBJECTS_TIMING=1 prints the time of each section to stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

/* The C siw's limits (siw.h), used only if ibv_query_device fails. */
#define SIW_MAX_CQE_DEFAULT (32768 * 100)
#define SIW_MAX_QP_WR_DEFAULT 32768
#define SIW_MAX_SRQ_WR_DEFAULT (32768 * 10)

static const char *devname;
static struct ibv_device *dev;
static struct ibv_context *ctx;
static struct ibv_device_attr dattr;

static void out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

#define NBUF 16
static char *sbuf(void)
{
	static char bufs[NBUF][160];
	static unsigned int k;

	return bufs[k++ % NBUF];
}

static const char *ename(int e)
{
	const char *n = e > 0 ? strerrorname_np(e) : NULL;
	char *b;

	if (n)
		return n;
	b = sbuf();
	snprintf(b, 160, "errno%d", e);
	return b;
}

/* Outcome of an int-returning verb; err is errno right after the call. */
static const char *rcs(int rc, int err)
{
	char *b;

	if (rc == 0)
		return "ok";
	if (rc > 0)
		return ename(rc);
	b = sbuf();
	if (rc == -1)
		snprintf(b, 160, "ret=-1 errno=%s", ename(err));
	else
		snprintf(b, 160, "ret=-%s", ename(-rc));
	return b;
}

static const char *qps(int s)
{
	static const char *const n[] = { "RESET", "INIT", "RTR", "RTS",
					 "SQD",	  "SQE",  "ERR", "UNKNOWN" };
	char *b;

	if (s >= 0 && s < 8)
		return n[s];
	b = sbuf();
	snprintf(b, 160, "state%d", s);
	return b;
}

static const char *qptype(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
	case IBV_QPT_RAW_PACKET: return "RAW_PACKET";
	default: return "other";
	}
}

static const char *accs(int a)
{
	static const struct { int bit; const char *n; } t[] = {
		{ IBV_ACCESS_LOCAL_WRITE, "LW" },
		{ IBV_ACCESS_REMOTE_WRITE, "RW" },
		{ IBV_ACCESS_REMOTE_READ, "RR" },
		{ IBV_ACCESS_REMOTE_ATOMIC, "RA" },
		{ IBV_ACCESS_MW_BIND, "MW_BIND" },
		{ IBV_ACCESS_ON_DEMAND, "ON_DEMAND" },
		{ IBV_ACCESS_RELAXED_ORDERING, "RELAXED_ORDERING" },
	};
	char *b = sbuf();
	size_t i;

	b[0] = 0;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (a & t[i].bit) {
			if (b[0])
				strcat(b, "|");
			strcat(b, t[i].n);
		}
	if (!b[0])
		strcpy(b, "0");
	return b;
}

static const char *masks(int m)
{
	static const struct { int bit; const char *n; } t[] = {
		{ IBV_QP_STATE, "STATE" },
		{ IBV_QP_CUR_STATE, "CUR_STATE" },
		{ IBV_QP_ACCESS_FLAGS, "ACCESS_FLAGS" },
		{ IBV_QP_PKEY_INDEX, "PKEY_INDEX" },
		{ IBV_QP_PORT, "PORT" },
		{ IBV_QP_AV, "AV" },
		{ IBV_QP_PATH_MTU, "PATH_MTU" },
		{ IBV_QP_TIMEOUT, "TIMEOUT" },
		{ IBV_QP_RETRY_CNT, "RETRY_CNT" },
		{ IBV_QP_RNR_RETRY, "RNR_RETRY" },
		{ IBV_QP_RQ_PSN, "RQ_PSN" },
		{ IBV_QP_MAX_QP_RD_ATOMIC, "MAX_QP_RD_ATOMIC" },
		{ IBV_QP_MIN_RNR_TIMER, "MIN_RNR_TIMER" },
		{ IBV_QP_SQ_PSN, "SQ_PSN" },
		{ IBV_QP_MAX_DEST_RD_ATOMIC, "MAX_DEST_RD_ATOMIC" },
		{ IBV_QP_DEST_QPN, "DEST_QPN" },
	};
	char *b = sbuf();
	size_t i;

	b[0] = 0;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (m & t[i].bit) {
			if (b[0])
				strcat(b, "|");
			strcat(b, t[i].n);
		}
	if (!b[0])
		strcpy(b, "0");
	return b;
}

static const char *capstr(const struct ibv_qp_cap *c)
{
	char *b = sbuf();

	snprintf(b, 160, "[sw=%u rw=%u ss=%u rs=%u inl=%u]", c->max_send_wr,
		 c->max_recv_wr, c->max_send_sge, c->max_recv_sge,
		 c->max_inline_data);
	return b;
}

/*
 * Resource tracking counts of the device, as `rdma resource show` reports
 * them (the RDMA core's restrack, independent of the driver).
 */
static void restrack(const char *when)
{
	char line[512], name[64], *rest, *tok, *save;
	long pd = -1, cq = -1, qp = -1, mr = -1, srq = -1, uctx = -1;
	int idx, found = 0, fds[2], st;
	pid_t pid;
	FILE *f;

	/* `rdma resource show`, without a shell (exec is slow under TCG) */
	fflush(stdout);
	if (pipe(fds) || (pid = fork()) < 0) {
		out("restrack %s: unavailable", when);
		return;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(fds[1], 1);
		if (null >= 0)
			dup2(null, 2);
		close(fds[0]);
		close(fds[1]);
		execlp("rdma", "rdma", "resource", "show", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%d: %63[^:]:", &idx, name) != 2 ||
		    strcmp(name, devname))
			continue;
		rest = strchr(line, ':');
		rest = strchr(rest + 1, ':') + 1;
		found = 1;
		for (tok = strtok_r(rest, " \n", &save); tok;
		     tok = strtok_r(NULL, " \n", &save)) {
			char *v = strtok_r(NULL, " \n", &save);
			long n = v ? strtol(v, NULL, 10) : -1;

			if (!strcmp(tok, "pd"))
				pd = n;
			else if (!strcmp(tok, "cq"))
				cq = n;
			else if (!strcmp(tok, "qp"))
				qp = n;
			else if (!strcmp(tok, "mr"))
				mr = n;
			else if (!strcmp(tok, "srq"))
				srq = n;
			else if (!strcmp(tok, "ctx"))
				uctx = n;
		}
	}
	if (f)
		fclose(f);
	else
		close(fds[0]);
	waitpid(pid, &st, 0);
	if (!found)
		out("restrack %s: device not listed", when);
	else
		out("restrack %s: pd=%ld cq=%ld qp=%ld mr=%ld srq=%ld ctx=%ld",
		    when, pd, cq, qp, mr, srq, uctx);
}

/* ------------------------------------------------------------------ */
/* Device, port, GID                                                   */

static int read_file(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

/* The netdev of port 1: from the GID entry, sysfs, or `rdma link`. */
static int port_netdev(struct ibv_gid_entry *ge, int ge_ok, char *nd)
{
	char path[256], line[256], *p;
	FILE *f;

	if (ge_ok && ge->ndev_ifindex && if_indextoname(ge->ndev_ifindex, nd))
		return 0;
	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs/0", devname);
	if (!read_file(path, nd, IF_NAMESIZE) && nd[0])
		return 0;
	snprintf(path, sizeof(path), "rdma link show %s/1 2>/dev/null", devname);
	f = popen(path, "r");
	if (!f)
		return -1;
	nd[0] = 0;
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, " netdev ");
		if (p && sscanf(p + 8, "%15s", nd) == 1)
			break;
	}
	pclose(f);
	return nd[0] ? 0 : -1;
}

static void test_device(void)
{
	struct ibv_device_attr_ex dx;
	struct ibv_port_attr pa;
	struct ibv_gid_entry ge;
	union ibv_gid gid;
	uint8_t mac[6], eui[8];
	char nd[IF_NAMESIZE + 1], path[256], macs[64];
	__be64 guid;
	uint16_t pkey;
	int rc, e, ge_ok, i, mac_ok = 0, zero;

	out("device.info node_type=%s transport=%d",
	    ibv_node_type_str(dev->node_type), dev->transport_type);
	out("context num_comp_vectors=%d", ctx->num_comp_vectors);

	errno = 0;
	rc = ibv_query_device(ctx, &dattr);
	e = errno;
	out("device.query -> %s", rcs(rc, e));
	if (!rc) {
		out("  fw_ver=%s hw_ver=%u vendor_id=0x%x phys_port_cnt=%u",
		    dattr.fw_ver, dattr.hw_ver, dattr.vendor_id,
		    dattr.phys_port_cnt);
		out("  max_qp=%d max_qp_wr=%d max_sge=%d max_sge_rd=%d max_cq=%d max_cqe=%d",
		    dattr.max_qp, dattr.max_qp_wr, dattr.max_sge,
		    dattr.max_sge_rd, dattr.max_cq, dattr.max_cqe);
		out("  max_mr=%d max_mr_size=0x%llx max_pd=%d max_mw=%d page_size_cap=0x%llx",
		    dattr.max_mr, (unsigned long long)dattr.max_mr_size,
		    dattr.max_pd, dattr.max_mw,
		    (unsigned long long)dattr.page_size_cap);
		out("  max_srq=%d max_srq_wr=%d max_srq_sge=%d max_qp_rd_atom=%d max_qp_init_rd_atom=%d max_res_rd_atom=%d",
		    dattr.max_srq, dattr.max_srq_wr, dattr.max_srq_sge,
		    dattr.max_qp_rd_atom, dattr.max_qp_init_rd_atom,
		    dattr.max_res_rd_atom);
		out("  atomic_cap=%d device_cap_flags=0x%x max_ah=%d max_mcast_grp=%d max_pkeys=%u max_fmr=%d max_ee=%d max_rdd=%d local_ca_ack_delay=%u",
		    dattr.atomic_cap, dattr.device_cap_flags, dattr.max_ah,
		    dattr.max_mcast_grp, dattr.max_pkeys, dattr.max_fmr,
		    dattr.max_ee, dattr.max_rdd, dattr.local_ca_ack_delay);
	} else {
		dattr.max_cqe = SIW_MAX_CQE_DEFAULT;
		dattr.max_qp_wr = SIW_MAX_QP_WR_DEFAULT;
		dattr.max_srq_wr = SIW_MAX_SRQ_WR_DEFAULT;
	}

	memset(&dx, 0, sizeof(dx));
	rc = ibv_query_device_ex(ctx, NULL, &dx);
	e = errno;
	out("device.query_ex -> %s", rcs(rc, e));
	if (!rc)
		out("  atomic_cap_ex=%d device_cap_flags_ex=0x%llx odp_general_caps=0x%llx completion_timestamp_mask=0x%llx hca_core_clock=%llu max_wq_type_rq=%u max_dm_size=%llu",
		    dx.orig_attr.atomic_cap,
		    (unsigned long long)dx.device_cap_flags_ex,
		    (unsigned long long)dx.odp_caps.general_caps,
		    (unsigned long long)dx.completion_timestamp_mask,
		    (unsigned long long)dx.hca_core_clock, dx.max_wq_type_rq,
		    (unsigned long long)dx.max_dm_size);

	memset(&pa, 0, sizeof(pa));
	rc = ibv_query_port(ctx, 1, &pa);
	e = errno;
	if (rc) {
		out("port.query port=1 -> %s", rcs(rc, e));
	} else {
		out("port.query port=1 -> ok state=%s phys_state=%u max_mtu=%d active_mtu=%d gid_tbl_len=%d pkey_tbl_len=%u",
		    ibv_port_state_str(pa.state), pa.phys_state, pa.max_mtu,
		    pa.active_mtu, pa.gid_tbl_len, pa.pkey_tbl_len);
		out("  port_cap_flags=0x%x port_cap_flags2=0x%x max_msg_sz=0x%x link_layer=%u lid=%u sm_lid=%u lmc=%u max_vl_num=%u active_speed=%u active_width=%u flags=0x%x",
		    pa.port_cap_flags, pa.port_cap_flags2, pa.max_msg_sz,
		    pa.link_layer, pa.lid, pa.sm_lid, pa.lmc, pa.max_vl_num,
		    pa.active_speed, pa.active_width, pa.flags);
	}
	for (i = 0; i <= 2; i += 2) {
		/* port 1 is the only port */
		rc = ibv_query_port(ctx, i, &pa);
		e = errno;
		out("port.query port=%d -> %s", i, rcs(rc, e));
	}

	rc = ibv_query_gid(ctx, 1, 0, &gid);
	e = errno;
	out("gid.query port=1 index=0 -> %s", rcs(rc, e));
	rc = ibv_query_gid(ctx, 1, 1, &gid);
	e = errno;
	out("gid.query port=1 index=1 -> %s", rcs(rc, e));
	rc = ibv_query_gid(ctx, 1, 0, &gid);
	memset(&ge, 0, sizeof(ge));
	ge_ok = !ibv_query_gid_ex(ctx, 1, 0, &ge, 0);
	e = errno;
	if (ge_ok)
		out("gid.query_ex port=1 index=0 -> ok gid_type=%u ndev_ifindex_set=%s gid_equals_query_gid=%s",
		    ge.gid_type, ge.ndev_ifindex ? "yes" : "no",
		    !rc && !memcmp(&ge.gid, &gid, sizeof(gid)) ? "yes" : "no");
	else
		out("gid.query_ex port=1 index=0 -> %s", ename(e));

	/* GID and GUIDs are derived from the netdev MAC: compare, don't print. */
	if (!port_netdev(&ge, ge_ok, nd)) {
		snprintf(path, sizeof(path), "/sys/class/net/%s/address", nd);
		if (!read_file(path, macs, sizeof(macs)) &&
		    sscanf(macs, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0],
			   &mac[1], &mac[2], &mac[3], &mac[4], &mac[5]) == 6)
			mac_ok = 1;
	}
	if (!mac_ok) {
		out("netdev MAC: not found");
	} else {
		zero = 1;
		for (i = 6; i < 16; i++)
			zero &= gid.raw[i] == 0;
		out("gid[0] bytes 0-5 == netdev MAC: %s, bytes 6-15 zero: %s",
		    !rc && !memcmp(gid.raw, mac, 6) ? "yes" : "no",
		    !rc && zero ? "yes" : "no");
		eui[0] = mac[0] ^ 2;
		eui[1] = mac[1];
		eui[2] = mac[2];
		eui[3] = 0xff;
		eui[4] = 0xfe;
		eui[5] = mac[3];
		eui[6] = mac[4];
		eui[7] = mac[5];
		guid = ibv_get_device_guid(dev);
		out("node_guid == EUI-64(netdev MAC): %s",
		    !memcmp(&guid, eui, 8) ? "yes" : "no");
		out("sys_image_guid == node_guid: %s",
		    dattr.sys_image_guid == guid ? "yes" : "no");
	}

	rc = ibv_query_pkey(ctx, 1, 0, &pkey);
	e = errno;
	out("pkey.query port=1 index=0 -> %s", rcs(rc, e));
}

/* ------------------------------------------------------------------ */
/* PD                                                                  */

static void test_pd(void)
{
	struct ibv_pd *pds[100];
	int i, ok = 0, rc, e, fails = 0;

	for (i = 0; i < 3; i++) {
		errno = 0;
		pds[i] = ibv_alloc_pd(ctx);
		e = errno;
		out("pd.alloc #%d -> %s", i, pds[i] ? "ok" : ename(e));
	}
	for (i = 2; i >= 0; i--) {
		if (!pds[i])
			continue;
		rc = ibv_dealloc_pd(pds[i]);
		e = errno;
		out("pd.dealloc #%d -> %s", i, rcs(rc, e));
	}
	for (i = 0; i < 100; i++) {
		pds[i] = ibv_alloc_pd(ctx);
		ok += !!pds[i];
	}
	for (i = 0; i < 100; i++)
		if (pds[i] && ibv_dealloc_pd(pds[i]))
			fails++;
	out("pd.alloc x100 -> %d ok; pd.dealloc -> %d failed", ok, fails);
}

/* ------------------------------------------------------------------ */
/* CQ                                                                  */

static struct ibv_cq *mkcq(int cqe, const char *label,
			   struct ibv_comp_channel *ch, int vec,
			   const char *veclabel)
{
	struct ibv_cq *cq;
	int e;

	errno = 0;
	cq = ibv_create_cq(ctx, cqe, NULL, ch, vec);
	e = errno;
	if (cq)
		out("cq.create cqe=%s%s%s -> ok cqe=%d", label,
		    ch ? " channel" : "", veclabel, cq->cqe);
	else
		out("cq.create cqe=%s%s%s -> %s", label, ch ? " channel" : "",
		    veclabel, ename(e));
	return cq;
}

static void rmcq(struct ibv_cq *cq, const char *what)
{
	int rc, e;

	if (!cq)
		return;
	rc = ibv_destroy_cq(cq);
	e = errno;
	out("cq.destroy%s -> %s", what, rcs(rc, e));
}

static void test_cq(void)
{
	static const int sizes[] = { 1, 2, 3, 100, 4096, 4097 };
	struct ibv_wc wc[4];
	struct ibv_cq *cq;
	char label[64];
	size_t i;
	int rc, e;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		snprintf(label, sizeof(label), "%d", sizes[i]);
		cq = mkcq(sizes[i], label, NULL, 0, "");
		if (!cq)
			continue;
		if (sizes[i] == 1) {
			out("cq.poll n=4 on empty CQ -> %d",
			    ibv_poll_cq(cq, 4, wc));
			out("cq.poll n=0 on empty CQ -> %d",
			    ibv_poll_cq(cq, 0, wc));
			rc = ibv_req_notify_cq(cq, 0);
			e = errno;
			out("cq.req_notify solicited_only=0 -> %s", rcs(rc, e));
			rc = ibv_req_notify_cq(cq, 1);
			e = errno;
			out("cq.req_notify solicited_only=1 -> %s", rcs(rc, e));
		}
		rmcq(cq, "");
	}

	snprintf(label, sizeof(label), "max_cqe(%d)", dattr.max_cqe);
	rmcq(mkcq(dattr.max_cqe, label, NULL, 0, ""), "");
	snprintf(label, sizeof(label), "max_cqe+1(%d)", dattr.max_cqe + 1);
	rmcq(mkcq(dattr.max_cqe + 1, label, NULL, 0, ""), "");
	rmcq(mkcq(0, "0", NULL, 0, ""), "");
	rmcq(mkcq(-1, "-1", NULL, 0, ""), "");
	rmcq(mkcq(8, "8", NULL, ctx->num_comp_vectors - 1,
		  " comp_vector=num_comp_vectors-1"),
	     "");
	rmcq(mkcq(8, "8", NULL, ctx->num_comp_vectors,
		  " comp_vector=num_comp_vectors"),
	     "");
}

/* ------------------------------------------------------------------ */
/* Raw uverbs write() commands, for what libsiw never sends            */

/*
 * QUERY_SRQ: libsiw has no query_srq (ibv_query_srq fails with EOPNOTSUPP in
 * libibverbs), so the kernel's query_srq is reached with the raw command.
 */
static int raw_query_srq(struct ibv_srq *srq,
			 struct ib_uverbs_query_srq_resp *resp)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_query_srq cmd;
	} req;

	memset(&req, 0, sizeof(req));
	memset(resp, 0, sizeof(*resp));
	req.hdr.command = IB_USER_VERBS_CMD_QUERY_SRQ;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(*resp) / 4;
	req.cmd.response = (uintptr_t)resp;
	req.cmd.srq_handle = srq->handle;
	if (write(srq->context->cmd_fd, &req, sizeof(req)) != sizeof(req))
		return errno ? errno : EIO;
	return 0;
}

static const char *srqq(struct ibv_srq *srq)
{
	struct ib_uverbs_query_srq_resp r;
	char *b = sbuf();
	int rc = raw_query_srq(srq, &r);

	if (rc)
		snprintf(b, 160, "query(raw) %s", ename(rc));
	else
		snprintf(b, 160, "query(raw) max_wr=%u max_sge=%u limit=%u",
			 r.max_wr, r.max_sge, r.srq_limit);
	return b;
}

/* write(2) a raw command; "ok" or the errno. */
static const char *raw_write(struct ibv_context *c, void *req, size_t len)
{
	errno = 0;
	if (write(c->cmd_fd, req, len) == (ssize_t)len)
		return "ok";
	return ename(errno);
}

/*
 * The write() commands a driver enables: the core's default mask plus, for
 * siw, POST_SEND (the doorbell). POST_RECV, POST_SRQ_RECV, POLL_CQ and
 * REQ_NOTIFY_CQ stay disabled; a user WR list on POST_SEND is refused.
 */
static void test_raw(struct ibv_qp *qp, struct ibv_cq *cq, struct ibv_srq *srq)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
		struct ib_uverbs_send_wr wr;
	} ps;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_recv cmd;
		struct ib_uverbs_recv_wr wr;
	} pr;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_srq_recv cmd;
		struct ib_uverbs_recv_wr wr;
	} psr;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_poll_cq cmd;
	} pc;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_req_notify_cq cmd;
	} rn;
	struct {
		struct ib_uverbs_poll_cq_resp r;
		struct ib_uverbs_wc wc[1];
	} pcr;
	struct ib_uverbs_post_send_resp psresp;
	struct ib_uverbs_post_recv_resp prresp;

	if (!qp || !cq || !srq) {
		out("raw uverbs -> skipped (no qp/cq/srq)");
		return;
	}
	memset(&ps, 0, sizeof(ps));
	ps.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	ps.hdr.in_words = sizeof(ps) / 4;
	ps.hdr.out_words = sizeof(psresp) / 4;
	ps.cmd.response = (uintptr_t)&psresp;
	ps.cmd.qp_handle = qp->handle;
	ps.cmd.wr_count = 1;
	ps.cmd.wqe_size = sizeof(ps.wr);
	ps.wr.wr_id = 1;
	ps.wr.opcode = IB_UVERBS_WR_SEND;
	out("raw POST_SEND with 1 WR on a user QP -> %s",
	    raw_write(qp->context, &ps, sizeof(ps)));
	ps.cmd.wr_count = 0;
	ps.hdr.in_words = (sizeof(ps) - sizeof(ps.wr)) / 4;
	out("raw POST_SEND with 0 WRs (doorbell) on an INIT QP -> %s",
	    raw_write(qp->context, &ps, sizeof(ps) - sizeof(ps.wr)));

	memset(&pr, 0, sizeof(pr));
	pr.hdr.command = IB_USER_VERBS_CMD_POST_RECV;
	pr.hdr.in_words = sizeof(pr) / 4;
	pr.hdr.out_words = sizeof(prresp) / 4;
	pr.cmd.response = (uintptr_t)&prresp;
	pr.cmd.qp_handle = qp->handle;
	pr.cmd.wr_count = 1;
	pr.cmd.wqe_size = sizeof(pr.wr);
	out("raw POST_RECV with 1 WR -> %s",
	    raw_write(qp->context, &pr, sizeof(pr)));

	memset(&psr, 0, sizeof(psr));
	psr.hdr.command = IB_USER_VERBS_CMD_POST_SRQ_RECV;
	psr.hdr.in_words = sizeof(psr) / 4;
	psr.hdr.out_words = sizeof(prresp) / 4;
	psr.cmd.response = (uintptr_t)&prresp;
	psr.cmd.srq_handle = srq->handle;
	psr.cmd.wr_count = 1;
	psr.cmd.wqe_size = sizeof(psr.wr);
	out("raw POST_SRQ_RECV with 1 WR -> %s",
	    raw_write(qp->context, &psr, sizeof(psr)));

	memset(&pc, 0, sizeof(pc));
	pc.hdr.command = IB_USER_VERBS_CMD_POLL_CQ;
	pc.hdr.in_words = sizeof(pc) / 4;
	pc.hdr.out_words = sizeof(pcr) / 4;
	pc.cmd.response = (uintptr_t)&pcr;
	pc.cmd.cq_handle = cq->handle;
	pc.cmd.ne = 1;
	out("raw POLL_CQ -> %s", raw_write(qp->context, &pc, sizeof(pc)));

	memset(&rn, 0, sizeof(rn));
	rn.hdr.command = IB_USER_VERBS_CMD_REQ_NOTIFY_CQ;
	rn.hdr.in_words = sizeof(rn) / 4;
	rn.cmd.cq_handle = cq->handle;
	out("raw REQ_NOTIFY_CQ -> %s", raw_write(qp->context, &rn, sizeof(rn)));
	out("raw QUERY_SRQ -> %s", srqq(srq));
}

/* ------------------------------------------------------------------ */
/* QP                                                                  */

static struct ibv_qp *mkqp(struct ibv_pd *pd, enum ibv_qp_type type,
			   struct ibv_cq *scq, struct ibv_cq *rcq,
			   struct ibv_srq *srq, unsigned int sw,
			   unsigned int rw, unsigned int ss, unsigned int rs,
			   unsigned int inl, int sig_all, const char *note)
{
	struct ibv_qp_init_attr ia, qia;
	struct ibv_qp_attr qa;
	struct ibv_qp *qp;
	int rc, e;

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = type;
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.srq = srq;
	ia.sq_sig_all = sig_all;
	ia.cap.max_send_wr = sw;
	ia.cap.max_recv_wr = rw;
	ia.cap.max_send_sge = ss;
	ia.cap.max_recv_sge = rs;
	ia.cap.max_inline_data = inl;
	if (!pd || !scq || !rcq) {
		out("qp.create %s sw=%u rw=%u ss=%u rs=%u inl=%u%s%s%s -> skipped (no pd/cq)",
		    qptype(type), sw, rw, ss, rs, inl, srq ? " srq" : "",
		    sig_all ? " sq_sig_all" : "", note);
		return NULL;
	}
	errno = 0;
	qp = ibv_create_qp(pd, &ia);
	e = errno;
	if (!qp) {
		out("qp.create %s sw=%u rw=%u ss=%u rs=%u inl=%u%s%s%s -> %s",
		    qptype(type), sw, rw, ss, rs, inl, srq ? " srq" : "",
		    sig_all ? " sq_sig_all" : "", note, ename(e));
		return NULL;
	}
	out("qp.create %s sw=%u rw=%u ss=%u rs=%u inl=%u%s%s%s -> ok qpn>0=%s cap=%s",
	    qptype(type), sw, rw, ss, rs, inl, srq ? " srq" : "",
	    sig_all ? " sq_sig_all" : "", note, qp->qp_num > 0 ? "yes" : "no",
	    capstr(&ia.cap));
	memset(&qa, 0, sizeof(qa));
	memset(&qia, 0, sizeof(qia));
	rc = ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &qia);
	e = errno;
	if (rc)
		out("  qp.query -> %s", rcs(rc, e));
	else
		out("  qp.query -> ok state=%s cap=%s init_cap=%s qp_type=%s",
		    qps(qa.qp_state), capstr(&qa.cap), capstr(&qia.cap),
		    qptype(qia.qp_type));
	return qp;
}

static void rmqp(struct ibv_qp *qp, const char *what)
{
	int rc, e;

	if (!qp)
		return;
	rc = ibv_destroy_qp(qp);
	e = errno;
	out("qp.destroy%s -> %s", what, rcs(rc, e));
}

static struct ibv_srq *mksrq(struct ibv_pd *pd, unsigned int max_wr,
			     unsigned int max_sge, unsigned int limit)
{
	struct ibv_srq_init_attr ia;
	struct ibv_srq *srq;
	int e;

	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = max_wr;
	ia.attr.max_sge = max_sge;
	ia.attr.srq_limit = limit;
	if (!pd) {
		out("srq.create max_wr=%u max_sge=%u limit=%u -> skipped (no pd)",
		    max_wr, max_sge, limit);
		return NULL;
	}
	errno = 0;
	srq = ibv_create_srq(pd, &ia);
	e = errno;
	if (!srq) {
		out("srq.create max_wr=%u max_sge=%u limit=%u -> %s", max_wr,
		    max_sge, limit, ename(e));
		return NULL;
	}
	out("srq.create max_wr=%u max_sge=%u limit=%u -> ok attr=[max_wr=%u max_sge=%u limit=%u]",
	    max_wr, max_sge, limit, ia.attr.max_wr, ia.attr.max_sge,
	    ia.attr.srq_limit);
	out("  srq.%s", srqq(srq));
	return srq;
}

static void rmsrq(struct ibv_srq *srq, const char *what)
{
	int rc, e;

	if (!srq)
		return;
	rc = ibv_destroy_srq(srq);
	e = errno;
	out("srq.destroy%s -> %s", what, rcs(rc, e));
}

static void test_qp_create(struct ibv_pd *pd)
{
	struct ibv_cq *cq, *cq2;
	struct ibv_srq *srq;
	struct ibv_pd *pd2;
	struct ibv_qp *qps_[4];
	int i, distinct = 1, n = 0;

	cq = mkcq(64, "64", NULL, 0, "");
	cq2 = mkcq(64, "64", NULL, 0, "");

	/* SGE counts 1..6 with a spread of queue depths and inline sizes. */
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 1, 1, 1, 1, 0, 0, ""), "");
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq2, NULL, 64, 64, 2, 2, 80, 0, ""), "");
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 100, 100, 3, 3, 0, 0, ""), "");
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 5, 3, 4, 4, 16, 0, ""), "");
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq, NULL, dattr.max_qp_wr,
		  dattr.max_qp_wr, 5, 5, 0, 0, " (max_qp_wr)"),
	     "");
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 2, 7, 6, 6, 80, 1, ""), "");
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 1, 1, 0, 0, 0, 0, ""), "");
	/* Limits. */
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 1, 1, 7, 1, 0, 0, ""), "");
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 1, 1, 1, 7, 0, 0, ""), "");
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 1, 1, 1, 1, 81, 0, ""), "");
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 0, 1, 1, 1, 0, 0, ""), "");
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq, NULL, dattr.max_qp_wr + 1, 1, 1, 1,
		  0, 0, " (max_qp_wr+1)"),
	     "");
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 1, dattr.max_qp_wr + 1, 1, 1,
		  0, 0, " (max_qp_wr+1)"),
	     "");
	/* No receive queue at all: the kernel accepts it, libsiw cannot map it. */
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 1, 0, 1, 1, 0, 0, ""), "");
	/* Other QP types. */
	rmqp(mkqp(pd, IBV_QPT_UD, cq, cq, NULL, 1, 1, 1, 1, 0, 0, ""), "");
	rmqp(mkqp(pd, IBV_QPT_UC, cq, cq, NULL, 1, 1, 1, 1, 0, 0, ""), "");
	rmqp(mkqp(pd, IBV_QPT_RAW_PACKET, cq, cq, NULL, 1, 1, 1, 1, 0, 0, ""),
	     "");

	/* With an SRQ: the RQ size is ignored. */
	srq = mksrq(pd, 16, 2, 0);
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq, srq, 4, 0, 2, 0, 0, 0, ""), "");
	rmqp(mkqp(pd, IBV_QPT_RC, cq, cq, srq, 4, 64, 2, 3, 0, 0, ""), "");
	pd2 = pd ? ibv_alloc_pd(ctx) : NULL;
	rmqp(mkqp(pd2, IBV_QPT_RC, cq, cq, srq, 4, 0, 1, 1, 0, 0,
		  " (srq of another pd)"),
	     "");
	if (pd2)
		ibv_dealloc_pd(pd2);
	rmsrq(srq, "");

	/* Several QPs at once: distinct, nonzero QP numbers. */
	for (i = 0; i < 4; i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 2, .max_recv_wr = 2,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qps_[i] = pd && cq ? ibv_create_qp(pd, &ia) : NULL;
		n += !!qps_[i];
	}
	for (i = 0; i < 4; i++) {
		int j;

		if (!qps_[i] || !qps_[i]->qp_num)
			distinct = 0;
		for (j = 0; j < i; j++)
			if (qps_[i] && qps_[j] &&
			    qps_[i]->qp_num == qps_[j]->qp_num)
				distinct = 0;
	}
	out("qp.create x4 -> %d ok, qp numbers distinct and nonzero: %s", n,
	    distinct ? "yes" : "no");
	for (i = 0; i < 4; i++)
		if (qps_[i])
			ibv_destroy_qp(qps_[i]);
	rmcq(cq, "");
	rmcq(cq2, "");
}

/* ------------------------------------------------------------------ */
/* QP state machine, receive queue, send queue, completion channel     */

static char rbuf[65536] __attribute__((aligned(4096)));
static uint32_t rbuf_lkey;

static void query_state(struct ibv_qp *qp, char *b, size_t len)
{
	struct ibv_qp_init_attr qia;
	struct ibv_qp_attr qa;
	int rc;

	memset(&qa, 0, sizeof(qa));
	rc = ibv_query_qp(qp, &qa, IBV_QP_STATE, &qia);
	if (rc)
		snprintf(b, len, "query %s", rcs(rc, errno));
	else
		snprintf(b, len, "query state=%s", qps(qa.qp_state));
}

static int modqp(struct ibv_qp *qp, int state, int mask, struct ibv_qp_attr *a,
		 const char *note)
{
	struct ibv_qp_attr attr;
	char st[64];
	int rc, e;

	if (!qp)
		return -1;
	if (!a) {
		memset(&attr, 0, sizeof(attr));
		a = &attr;
	}
	a->qp_state = state;
	errno = 0;
	rc = ibv_modify_qp(qp, a, mask);
	e = errno;
	query_state(qp, st, sizeof(st));
	out("qp.modify qp_state=%s mask=%s%s -> %s | %s", qps(state), masks(mask),
	    note, rcs(rc, e), st);
	return rc;
}

static int post_recv(struct ibv_qp *qp, uint64_t wr_id, int nsge)
{
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge[8];
	int i;

	for (i = 0; i < 8; i++) {
		sge[i].addr = (uintptr_t)rbuf + 512 * i;
		sge[i].length = 512;
		sge[i].lkey = rbuf_lkey;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	return ibv_post_recv(qp, &wr, &bad);
}

static int post_srq(struct ibv_srq *srq, uint64_t wr_id, int nsge)
{
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge[8];
	int i;

	for (i = 0; i < 8; i++) {
		sge[i].addr = (uintptr_t)rbuf + 512 * i;
		sge[i].length = 512;
		sge[i].lkey = rbuf_lkey;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	return ibv_post_srq_recv(srq, &wr, &bad);
}

static const char *opname(enum ibv_wc_opcode o)
{
	switch (o) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_RECV: return "RECV";
	default: {
		char *b = sbuf();

		snprintf(b, 160, "op%d", o);
		return b;
	}
	}
}

/* Poll up to max completions and print them, one line each. */
static int drain(struct ibv_cq *cq, const char *what, uint32_t self_qpn)
{
	struct ibv_wc wc[64];
	int n, i;

	if (!cq)
		return -1;
	memset(wc, 0, sizeof(wc));
	n = ibv_poll_cq(cq, 64, wc);
	out("cq.poll %s -> %d", what, n);
	for (i = 0; i < n && i < 64; i++)
		out("  wc wr_id=%llu status=%s opcode=%s byte_len=%u qp_num=%s wc_flags=0x%x vendor_err=%u",
		    (unsigned long long)wc[i].wr_id,
		    ibv_wc_status_str(wc[i].status), opname(wc[i].opcode),
		    wc[i].byte_len,
		    wc[i].qp_num == self_qpn ? "self" : "other",
		    wc[i].wc_flags, wc[i].vendor_err);
	return n;
}

/* Is a completion event pending on the channel? Consume and ack it. */
static void chan_event(struct ibv_comp_channel *ch, struct ibv_cq *expect,
		       const char *what)
{
	struct pollfd p = { .fd = ch ? ch->fd : -1, .events = POLLIN };
	struct ibv_cq *cq;
	void *cctx;
	int n;

	if (!ch) {
		out("channel %s -> skipped", what);
		return;
	}
	n = poll(&p, 1, 200);
	if (n <= 0) {
		out("channel %s -> no event", what);
		return;
	}
	if (ibv_get_cq_event(ch, &cq, &cctx)) {
		out("channel %s -> readable, get_cq_event %s", what,
		    ename(errno));
		return;
	}
	ibv_ack_cq_events(cq, 1);
	out("channel %s -> event, cq=%s", what,
	    cq == expect ? "expected" : "other");
}

static void async_event(const char *what, struct ibv_cq *expect_cq)
{
	struct pollfd p = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	if (poll(&p, 1, 200) <= 0) {
		out("async %s -> no event", what);
		return;
	}
	if (ibv_get_async_event(ctx, &ev)) {
		out("async %s -> readable, get_async_event %s", what,
		    ename(errno));
		return;
	}
	out("async %s -> event %s%s", what, ibv_event_type_str(ev.event_type),
	    ev.event_type == IBV_EVENT_CQ_ERR ?
		    (ev.element.cq == expect_cq ? " cq=expected" : " cq=other") :
		    "");
	ibv_ack_async_event(&ev);
}

static void test_qp_modify_rq(struct ibv_pd *pd)
{
	struct ibv_comp_channel *ch;
	struct ibv_cq *ccq, *scq;
	struct ibv_qp *qp, *qn[3];
	struct ibv_qp_attr a;
	struct ibv_recv_wr w[3], *bad;
	struct ibv_sge sge = { (uintptr_t)rbuf, 64, 0 };
	int rc, e, i, n;

	errno = 0;
	ch = ibv_create_comp_channel(ctx);
	e = errno;
	out("channel.create -> %s", ch ? "ok" : ename(e));
	ccq = mkcq(16, "16", ch, 0, "");
	scq = mkcq(16, "16", NULL, 0, "");

	qp = mkqp(pd, IBV_QPT_RC, scq, ccq, NULL, 4, 8, 2, 6, 0, 0, "");

	/* The attribute masks applications use on the way to INIT. */
	modqp(qp, IBV_QPS_INIT, 0, NULL, " (attr_mask 0)");
	memset(&a, 0, sizeof(a));
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ;
	modqp(qp, IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS, &a,
	      " access=LW|RW|RR");
	a.pkey_index = 0;
	a.port_num = 1;
	modqp(qp, IBV_QPS_INIT,
	      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		      IBV_QP_ACCESS_FLAGS,
	      &a, " port=1 access=LW|RW|RR");
	a.port_num = 2;
	modqp(qp, IBV_QPS_INIT, IBV_QP_STATE | IBV_QP_PORT, &a, " port=2");
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
	modqp(qp, IBV_QPS_INIT, IBV_QP_ACCESS_FLAGS, &a, " access=RR");
	modqp(qp, 7, IBV_QP_STATE, NULL, " (beyond ERR)");
	if (qp) {
		struct ibv_qp_init_attr qia;

		memset(&a, 0, sizeof(a));
		rc = ibv_query_qp(qp, &a,
				  IBV_QP_STATE | IBV_QP_PATH_MTU |
					  IBV_QP_ACCESS_FLAGS |
					  IBV_QP_MAX_QP_RD_ATOMIC |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_CAP,
				  &qia);
		e = errno;
		if (rc)
			out("qp.query -> %s", rcs(rc, e));
		else
			out("qp.query -> ok state=%s path_mtu=%d access=%s max_rd_atomic=%u max_dest_rd_atomic=%u",
			    qps(a.qp_state), a.path_mtu,
			    accs(a.qp_access_flags), a.max_rd_atomic,
			    a.max_dest_rd_atomic);
	}

	/* Receive queue of 8 (rounded: 8), 6 SGEs; libsiw writes the ring only. */
	if (qp) {
		rc = post_recv(qp, 100, 0);
		out("qp.post_recv INIT num_sge=0 -> %s", rcs(rc, errno));
		for (i = 1; i <= 7; i++) {
			rc = post_recv(qp, 100 + (i <= 6 ? i : 99), i);
			out("qp.post_recv INIT num_sge=%d -> %s", i,
			    rcs(rc, errno));
		}
		/* A chain whose second WR is bad: the first is posted. */
		memset(w, 0, sizeof(w));
		for (i = 0; i < 3; i++) {
			w[i].wr_id = 107 + 10 * i;
			w[i].sg_list = &sge;
			w[i].num_sge = i == 1 ? 0 : 1;
			w[i].next = i < 2 ? &w[i + 1] : NULL;
		}
		bad = NULL;
		rc = ibv_post_recv(qp, w, &bad);
		out("qp.post_recv chain of 3, #1 has num_sge=0 -> %s bad_wr=#%d",
		    rcs(rc, errno), bad ? (int)(bad - w) : -1);
		for (i = 0; i < 64; i++) {
			rc = post_recv(qp, 108 + i, 1);
			if (rc)
				break;
		}
		out("qp.post_recv until full -> %d more posted, then %s", i,
		    rcs(rc, errno));
	}

	/* Transitions an iWARP QP cannot make without the CM. */
	modqp(qp, IBV_QPS_RTR, IBV_QP_STATE, NULL, "");
	memset(&a, 0, sizeof(a));
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 1;
	a.rq_psn = 0;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = 1;
	modqp(qp, IBV_QPS_RTR,
	      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
		      IBV_QP_MIN_RNR_TIMER,
	      &a, " (IB-style)");
	modqp(qp, IBV_QPS_RTS, IBV_QP_STATE, NULL, "");
	memset(&a, 0, sizeof(a));
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = 0;
	a.max_rd_atomic = 1;
	modqp(qp, IBV_QPS_RTS,
	      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
		      IBV_QP_MAX_QP_RD_ATOMIC,
	      &a, " (IB-style)");
	modqp(qp, IBV_QPS_SQD, IBV_QP_STATE, NULL, "");
	modqp(qp, IBV_QPS_SQE, IBV_QP_STATE, NULL, "");
	modqp(qp, IBV_QPS_RESET, IBV_QP_STATE, NULL, "");
	drain(ccq, "recv CQ before ERR", qp ? qp->qp_num : 0);

	/* ERR flushes the RQ into the receive CQ and fires the armed channel. */
	if (ccq) {
		rc = ibv_req_notify_cq(ccq, 0);
		out("cq.req_notify solicited_only=0 -> %s", rcs(rc, errno));
	}
	modqp(qp, IBV_QPS_ERR, IBV_QP_STATE, NULL, "");
	drain(ccq, "recv CQ after ERR", qp ? qp->qp_num : 0);
	drain(scq, "send CQ after ERR", qp ? qp->qp_num : 0);
	chan_event(ch, ccq, "after ERR flush (armed)");

	if (qp) {
		rc = post_recv(qp, 300, 1);
		out("qp.post_recv ERR num_sge=1 -> %s", rcs(rc, errno));
	}
	drain(ccq, "recv CQ after post_recv in ERR", qp ? qp->qp_num : 0);
	modqp(qp, IBV_QPS_RESET, IBV_QP_STATE, NULL, " (from ERR)");
	modqp(qp, IBV_QPS_INIT, IBV_QP_STATE, NULL, " (from ERR)");
	modqp(qp, IBV_QPS_RTS, IBV_QP_STATE, NULL, " (from ERR)");
	rmqp(qp, "");

	/* Notification: unarmed, armed for solicited only, armed for any. */
	for (i = 0; i < 3; i++) {
		static const char *const what[] = {
			"after flush (not armed)",
			"after flush (armed solicited_only=1)",
			"after flush (armed solicited_only=0)",
		};
		qn[i] = mkqp(pd, IBV_QPT_RC, scq, ccq, NULL, 1, 2, 1, 1, 0, 0,
			     "");
		if (!qn[i] || !ccq)
			continue;
		rc = post_recv(qn[i], 400 + i, 1);
		out("qp.post_recv INIT -> %s", rcs(rc, errno));
		if (i) {
			rc = ibv_req_notify_cq(ccq, i == 1);
			out("cq.req_notify solicited_only=%d -> %s", i == 1,
			    rcs(rc, errno));
		}
		modqp(qn[i], IBV_QPS_ERR, IBV_QP_STATE, NULL, "");
		n = drain(ccq, "recv CQ", qn[i]->qp_num);
		(void)n;
		chan_event(ch, ccq, what[i]);
	}
	for (i = 0; i < 3; i++)
		rmqp(qn[i], "");

	/* Completion channel still in use by a CQ. */
	if (ch) {
		rc = ibv_destroy_comp_channel(ch);
		out("channel.destroy with a CQ attached -> %s", rcs(rc, errno));
	}
	rmcq(ccq, "");
	rmcq(scq, "");
	if (ch) {
		rc = ibv_destroy_comp_channel(ch);
		out("channel.destroy -> %s", rcs(rc, errno));
	}

	/* CQ overflow on flush: 1 CQE fits, the rest raise CQ_ERR. */
	ccq = mkcq(1, "1", NULL, 0, "");
	qp = mkqp(pd, IBV_QPT_RC, ccq, ccq, NULL, 1, 4, 1, 1, 0, 0, "");
	if (qp && ccq) {
		for (i = 0, n = 0; i < 4; i++)
			n += !post_recv(qp, 500 + i, 1);
		out("qp.post_recv x4 -> %d ok", n);
		modqp(qp, IBV_QPS_ERR, IBV_QP_STATE, NULL, " (CQ of 1)");
		drain(ccq, "CQ of 1", qp->qp_num);
		async_event("after overflow", ccq);
		drain(ccq, "CQ of 1 again", qp->qp_num);
	}
	rmqp(qp, "");
	rmcq(ccq, "");
	async_event("at end of QP tests", NULL);
}

static int post_send(struct ibv_qp *qp, uint64_t wr_id, enum ibv_wr_opcode op,
		     int nsge, int flags, int inl_len, int *badidx)
{
	static char data[256];
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge[8];
	int i, rc;

	for (i = 0; i < 8; i++) {
		sge[i].addr = (uintptr_t)rbuf + 512 * i;
		sge[i].length = 512;
		sge[i].lkey = rbuf_lkey;
	}
	if (flags & IBV_SEND_INLINE) {
		sge[0].addr = (uintptr_t)data;
		sge[0].length = inl_len;
	}
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	wr.wr.rdma.remote_addr = 0x10000;
	wr.wr.rdma.rkey = 0x100;
	rc = ibv_post_send(qp, &wr, &bad);
	if (badidx)
		*badidx = bad ? (bad == &wr ? 0 : 99) : -1;
	return rc;
}

static void test_post_send(struct ibv_pd *pd)
{
	struct ibv_send_wr w[3], *bad;
	struct ibv_sge sge = { (uintptr_t)rbuf, 64, 0 };
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int rc, e, bi, i;

	cq = mkcq(32, "32", NULL, 0, "");

	/* A QP in INIT: libsiw writes the SQ ring and rings the doorbell. */
	qp = mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 4, 1, 6, 1, 80, 0, "");
	if (qp) {
		errno = 0;
		rc = post_send(qp, 1, IBV_WR_RDMA_WRITE_WITH_IMM, 1,
			       IBV_SEND_SIGNALED, 0, &bi);
		e = errno;
		out("qp.post_send INIT opcode=RDMA_WRITE_WITH_IMM -> %s bad_wr=#%d",
		    rcs(rc, e), bi);
		rc = post_send(qp, 2, IBV_WR_SEND, 1,
			       IBV_SEND_SIGNALED | IBV_SEND_INLINE, 81, &bi);
		e = errno;
		out("qp.post_send INIT SEND inline 81 bytes -> %s bad_wr=#%d",
		    rcs(rc, e), bi);
		rc = post_send(qp, 3, IBV_WR_SEND, 7, IBV_SEND_SIGNALED, 0,
			       &bi);
		e = errno;
		out("qp.post_send INIT SEND num_sge=7 -> %s bad_wr=#%d",
		    rcs(rc, e), bi);
		errno = 0;
		rc = post_send(qp, 4, IBV_WR_SEND, 1, IBV_SEND_SIGNALED, 0,
			       &bi);
		e = errno;
		out("qp.post_send INIT SEND num_sge=1 (doorbell) -> %s bad_wr=#%d",
		    rcs(rc, e), bi);
		rc = post_send(qp, 5, IBV_WR_RDMA_WRITE, 6, IBV_SEND_SIGNALED,
			       0, &bi);
		e = errno;
		out("qp.post_send INIT RDMA_WRITE num_sge=6 (no doorbell: previous SQE still valid) -> %s",
		    rcs(rc, e));
		rc = post_send(qp, 6, IBV_WR_RDMA_READ, 1, IBV_SEND_SIGNALED,
			       0, &bi);
		e = errno;
		out("qp.post_send INIT RDMA_READ -> %s", rcs(rc, e));
		rc = post_send(qp, 7, IBV_WR_SEND, 1,
			       IBV_SEND_SIGNALED | IBV_SEND_INLINE, 80, &bi);
		e = errno;
		out("qp.post_send INIT SEND inline 80 bytes -> %s", rcs(rc, e));
		rc = post_send(qp, 8, IBV_WR_SEND_WITH_INV, 1,
			       IBV_SEND_SIGNALED, 0, &bi);
		e = errno;
		out("qp.post_send INIT SEND_WITH_INV (SQ of 4 full) -> %s bad_wr=#%d",
		    rcs(rc, e), bi);
		drain(cq, "after posts to INIT QP", qp->qp_num);
		modqp(qp, IBV_QPS_ERR, IBV_QP_STATE, NULL, "");
		drain(cq, "after ERR (SQ of a never-connected QP)",
		      qp->qp_num);
	}
	rmqp(qp, "");

	/* A chain whose second WR has an opcode libsiw rejects. */
	qp = mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 8, 1, 1, 1, 0, 0, "");
	if (qp) {
		memset(w, 0, sizeof(w));
		for (i = 0; i < 3; i++) {
			w[i].wr_id = 20 + i;
			w[i].opcode = i == 1 ? IBV_WR_ATOMIC_FETCH_AND_ADD :
					       IBV_WR_SEND;
			w[i].sg_list = &sge;
			w[i].num_sge = 1;
			w[i].send_flags = IBV_SEND_SIGNALED;
			w[i].next = i < 2 ? &w[i + 1] : NULL;
		}
		bad = NULL;
		errno = 0;
		rc = ibv_post_send(qp, w, &bad);
		e = errno;
		out("qp.post_send INIT chain of 3, #1 ATOMIC_FETCH_AND_ADD -> %s bad_wr=#%d",
		    rcs(rc, e), bad ? (int)(bad - w) : -1);
		drain(cq, "after chain", qp->qp_num);
	}
	rmqp(qp, "");

	/* A QP in ERR: the doorbell succeeds and nothing completes. */
	qp = mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 2, 1, 1, 1, 0, 1, "");
	if (qp) {
		modqp(qp, IBV_QPS_ERR, IBV_QP_STATE, NULL, "");
		errno = 0;
		rc = post_send(qp, 30, IBV_WR_SEND, 1, 0, 0, &bi);
		e = errno;
		out("qp.post_send ERR SEND (doorbell) -> %s bad_wr=#%d",
		    rcs(rc, e), bi);
		drain(cq, "after post_send in ERR", qp->qp_num);
	}
	rmqp(qp, "");
	rmcq(cq, "");
}

/* ------------------------------------------------------------------ */
/* SRQ                                                                 */

static void test_srq(struct ibv_pd *pd)
{
	struct ibv_srq_attr a;
	struct ibv_srq *s;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	char lbl[64];
	int rc, e, i;

	rmsrq(mksrq(pd, 1, 1, 0), "");
	rmsrq(mksrq(pd, 100, 6, 0), "");
	rmsrq(mksrq(pd, 100, 2, 100), "");
	rmsrq(mksrq(pd, 0, 1, 0), "");
	rmsrq(mksrq(pd, 4, 7, 0), "");
	rmsrq(mksrq(pd, 100, 1, 101), "");
	rmsrq(mksrq(pd, dattr.max_srq_wr, 1, 0), " (max_srq_wr)");
	rmsrq(mksrq(pd, dattr.max_srq_wr + 1, 1, 0), "");

	/* One slot. */
	s = mksrq(pd, 1, 1, 0);
	if (s) {
		struct ibv_srq_attr qa;

		rc = ibv_query_srq(s, &qa);
		out("srq.query (libibverbs) -> %s", rcs(rc, errno));
		rc = post_srq(s, 1, 1);
		out("srq.post_recv #0 -> %s", rcs(rc, errno));
		rc = post_srq(s, 2, 1);
		out("srq.post_recv #1 (SRQ of 1 full) -> %s", rcs(rc, errno));
	}
	rmsrq(s, "");

	s = mksrq(pd, 100, 4, 10);
	if (s) {
		static const struct { int mask, max_wr, limit; } m[] = {
			{ IBV_SRQ_LIMIT, 0, 50 },
			{ IBV_SRQ_LIMIT, 0, 128 },
			{ IBV_SRQ_LIMIT, 0, 129 },
			{ IBV_SRQ_LIMIT, 0, 0 },
			{ IBV_SRQ_MAX_WR, 200, 0 },
			{ IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT, 200, 5 },
		};

		for (i = 0; i < (int)(sizeof(m) / sizeof(m[0])); i++) {
			memset(&a, 0, sizeof(a));
			a.max_wr = m[i].max_wr;
			a.srq_limit = m[i].limit;
			rc = ibv_modify_srq(s, &a, m[i].mask);
			e = errno;
			snprintf(lbl, sizeof(lbl), "%s%s",
				 m[i].mask & IBV_SRQ_MAX_WR ? "MAX_WR" : "",
				 m[i].mask == (IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT) ?
					 "|LIMIT" :
				 m[i].mask == IBV_SRQ_LIMIT ? "LIMIT" : "");
			out("srq.modify mask=%s max_wr=%d limit=%d -> %s | %s",
			    lbl, m[i].max_wr, m[i].limit, rcs(rc, e),
			    srqq(s));
		}
		rc = post_srq(s, 1, 0);
		out("srq.post_recv num_sge=0 -> %s", rcs(rc, errno));
		rc = post_srq(s, 1, 7);
		out("srq.post_recv num_sge=7 -> %s", rcs(rc, errno));
		rc = post_srq(s, 1, 6);
		out("srq.post_recv num_sge=6 (SRQ max_sge=4; libsiw does not check) -> %s",
		    rcs(rc, errno));
		for (i = 1; i < 1000; i++)
			if ((rc = post_srq(s, 1000 + i, 1)))
				break;
		out("srq.post_recv until full -> %d more posted, then %s", i - 1,
		    rcs(rc, errno));

		/* A QP on the SRQ going to ERR does not flush the SRQ. */
		cq = mkcq(8, "8", NULL, 0, "");
		qp = mkqp(pd, IBV_QPT_RC, cq, cq, s, 1, 0, 1, 0, 0, 0, "");
		rmsrq(s, " (in use by a QP)");
		if (qp) {
			modqp(qp, IBV_QPS_ERR, IBV_QP_STATE, NULL, "");
			drain(cq, "after ERR of a QP on an SRQ", qp->qp_num);
		}
		rmqp(qp, "");
		rmcq(cq, "");
		rmsrq(s, "");
	}
}

/* ------------------------------------------------------------------ */
/* MR                                                                  */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static struct ibv_mr *regmr(struct ibv_pd *pd, void *buf, size_t len,
			    int access, const char *what, int keep)
{
	struct ibv_mr *mr;
	int e, rc;

	if (!pd) {
		out("mr.reg %s len=%zu access=%s -> skipped (no pd)", what, len,
		    accs(access));
		return NULL;
	}
	errno = 0;
	mr = ibv_reg_mr(pd, buf, len, access);
	e = errno;
	if (!mr) {
		out("mr.reg %s len=%zu access=%s -> %s", what, len,
		    accs(access), ename(e));
		return NULL;
	}
	if (keep) {
		out("mr.reg %s len=%zu access=%s -> ok lkey==rkey=%s lkey!=0=%s key_byte=0x%02x",
		    what, len, accs(access), mr->lkey == mr->rkey ? "yes" : "no",
		    mr->lkey ? "yes" : "no", mr->lkey & 0xff);
		return mr;
	}
	rc = ibv_dereg_mr(mr);
	e = errno;
	out("mr.reg %s len=%zu access=%s -> ok lkey==rkey=%s lkey!=0=%s key_byte=0x%02x | dereg -> %s",
	    what, len, accs(access), mr->lkey == mr->rkey ? "yes" : "no",
	    mr->lkey ? "yes" : "no", mr->lkey & 0xff, rcs(rc, e));
	return NULL;
}

static void test_mr(struct ibv_pd *pd)
{
	static const int acc[] = {
		0,
		IBV_ACCESS_LOCAL_WRITE,
		IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ,
		IBV_ACCESS_REMOTE_ATOMIC,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			IBV_ACCESS_MW_BIND,
	};
	struct { const char *what; void *buf; size_t len; } b[5];
	struct ibv_mr *mr, *mr2, **many;
	uint32_t *keys;
	size_t i, j, nb = 0;
	char *big, *ro, *gone, *pages;
	int ok, same, distinct, fails, e;

	b[nb++] = (typeof(b[0])){ "malloc", malloc(1), 1 };
	b[nb++] = (typeof(b[0])){ "malloc", malloc(4096), 4096 };
	b[nb++] = (typeof(b[0])){ "page-aligned", aligned_alloc(4096, 4096),
				  4096 };
	b[nb++] = (typeof(b[0])){ "page-aligned", aligned_alloc(4096, 1 << 20),
				  1 << 20 };
	big = mmap(NULL, 64 << 20, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (big != MAP_FAILED)
		b[nb++] = (typeof(b[0])){ "mmap", big, 64 << 20 };
	else
		out("mmap 64 MiB -> %s (skipping that size)", ename(errno));

	for (i = 0; i < nb; i++)
		for (j = 0; j < sizeof(acc) / sizeof(acc[0]); j++)
			regmr(pd, b[i].buf, b[i].len, acc[j], b[i].what, 0);

	/* Access flags the core treats specially. */
	regmr(pd, b[2].buf, 4096,
	      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING,
	      "page-aligned", 0);
	regmr(pd, b[2].buf, 4096,
	      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND, "page-aligned",
	      0);

	/* Length and address errors. */
	regmr(pd, b[2].buf, 0, IBV_ACCESS_LOCAL_WRITE, "page-aligned", 0);
	gone = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (gone != MAP_FAILED) {
		munmap(gone, 1 << 20);
		regmr(pd, gone, 4096, IBV_ACCESS_LOCAL_WRITE, "unmapped", 0);
		regmr(pd, gone, 4096, 0, "unmapped", 0);
	}
	regmr(pd, NULL, 4096, IBV_ACCESS_LOCAL_WRITE, "NULL", 0);
	ro = mmap(NULL, 1 << 16, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ro != MAP_FAILED) {
		regmr(pd, ro, 1 << 16, 0, "PROT_READ", 0);
		regmr(pd, ro, 1 << 16, IBV_ACCESS_REMOTE_READ, "PROT_READ", 0);
		regmr(pd, ro, 1 << 16, IBV_ACCESS_LOCAL_WRITE, "PROT_READ", 0);
		munmap(ro, 1 << 16);
	}
	/* A range that starts in mapped memory and runs into a hole. */
	gone = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (gone != MAP_FAILED) {
		munmap(gone + 4096, 4096);
		regmr(pd, gone, 8192, IBV_ACCESS_LOCAL_WRITE,
		      "runs-into-hole", 0);
		regmr(pd, gone, 4096, IBV_ACCESS_LOCAL_WRITE,
		      "before-hole", 0);
		munmap(gone, 4096);
	}

	/* iova: the page offset must match the address's. */
	if (pd) {
		errno = 0;
		mr = ibv_reg_mr_iova(pd, b[3].buf, 4096, 0x100000,
				     IBV_ACCESS_LOCAL_WRITE);
		e = errno;
		out("mr.reg_iova page-aligned len=4096 iova=0x100000 -> %s",
		    mr ? "ok" : ename(e));
		if (mr)
			ibv_dereg_mr(mr);
		errno = 0;
		mr = ibv_reg_mr_iova(pd, b[3].buf, 4096, 0x100010,
				     IBV_ACCESS_LOCAL_WRITE);
		e = errno;
		out("mr.reg_iova page-aligned len=4096 iova=0x100010 -> %s",
		    mr ? "ok" : ename(e));
		if (mr)
			ibv_dereg_mr(mr);
	}

	/* The same buffer twice: two MRs with different keys. */
	mr = regmr(pd, b[3].buf, 1 << 20, IBV_ACCESS_LOCAL_WRITE,
		   "page-aligned", 1);
	mr2 = regmr(pd, b[3].buf, 1 << 20, IBV_ACCESS_LOCAL_WRITE,
		    "page-aligned (again)", 1);
	if (mr && mr2)
		out("mr same buffer twice: keys differ=%s",
		    mr->lkey != mr2->lkey ? "yes" : "no");
	if (mr)
		out("mr.dereg -> %s", rcs(ibv_dereg_mr(mr), errno));
	if (mr2)
		out("mr.dereg -> %s", rcs(ibv_dereg_mr(mr2), errno));

	/* Many MRs, one page each. */
	pages = mmap(NULL, 1000 * 4096, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	many = calloc(1000, sizeof(*many));
	keys = calloc(1000, sizeof(*keys));
	if (pd && pages != MAP_FAILED && many && keys) {
		ok = 0;
		same = 1;
		for (i = 0; i < 1000; i++) {
			many[i] = ibv_reg_mr(pd, pages + 4096 * i, 4096,
					     IBV_ACCESS_LOCAL_WRITE |
						     IBV_ACCESS_REMOTE_READ);
			if (!many[i])
				continue;
			keys[ok++] = many[i]->lkey;
			same &= many[i]->lkey == many[i]->rkey;
		}
		qsort(keys, ok, sizeof(*keys), cmp_u32);
		distinct = 1;
		for (i = 1; i < (size_t)ok; i++)
			distinct &= keys[i] != keys[i - 1];
		out("mr.reg x1000 (4 KiB each) -> %d ok, lkeys distinct=%s, all lkey==rkey=%s",
		    ok, distinct ? "yes" : "no", same ? "yes" : "no");
		fails = 0;
		for (i = 0; i < 1000; i++)
			if (many[i] && ibv_dereg_mr(many[i]))
				fails++;
		out("mr.dereg x1000 -> %d failed", fails);
	}
	free(many);
	free(keys);
	if (pages != MAP_FAILED)
		munmap(pages, 1000 * 4096);
	for (i = 0; i < 4; i++)
		free(b[i].buf);
	if (big != MAP_FAILED)
		munmap(big, 64 << 20);
}

/* ------------------------------------------------------------------ */
/* Teardown order                                                      */

static void test_teardown(void)
{
	struct ibv_pd *pd;
	struct ibv_cq *cq, *cq2;
	struct ibv_qp *qp, *qp2;
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	int rc, e;

	errno = 0;
	pd = ibv_alloc_pd(ctx);
	e = errno;
	out("pd.alloc -> %s", pd ? "ok" : ename(e));

	/* A CQ in use by a QP. (libsiw unmaps the CQ ring even when the
	 * destroy fails, so the CQ is destroyed right after its QP.) */
	cq = mkcq(8, "8", NULL, 0, "");
	cq2 = mkcq(8, "8", NULL, 0, "");
	qp = mkqp(pd, IBV_QPT_RC, cq, cq2, NULL, 1, 1, 1, 1, 0, 0, "");
	if (qp) {
		rc = ibv_destroy_cq(cq);
		e = errno;
		out("cq.destroy (send CQ of a QP) -> %s", rcs(rc, e));
		if (!rc)
			cq = NULL;
		rc = ibv_destroy_cq(cq2);
		e = errno;
		out("cq.destroy (recv CQ of a QP) -> %s", rcs(rc, e));
		if (!rc)
			cq2 = NULL;
	}
	rmqp(qp, "");
	rmcq(cq, "");
	rmcq(cq2, "");

	/* A PD in use by a QP, an SRQ and an MR; an SRQ in use by a QP. */
	cq = mkcq(8, "8", NULL, 0, "");
	qp = mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 1, 1, 1, 1, 0, 0, "");
	srq = mksrq(pd, 4, 1, 0);
	qp2 = mkqp(pd, IBV_QPT_RC, cq, cq, srq, 1, 0, 1, 0, 0, 0, "");
	mr = regmr(pd, rbuf, 4096, IBV_ACCESS_LOCAL_WRITE, "static", 1);
	if (pd) {
		rc = ibv_dealloc_pd(pd);
		e = errno;
		out("pd.dealloc (QPs, SRQ and MR on it) -> %s", rcs(rc, e));
		if (!rc)
			pd = NULL;
	}
	rmsrq(srq, " (in use by a QP)");
	rmqp(qp2, "");
	rmsrq(srq, "");
	rmqp(qp, "");
	rmcq(cq, "");
	if (pd) {
		rc = ibv_dealloc_pd(pd);
		e = errno;
		out("pd.dealloc (MR on it) -> %s", rcs(rc, e));
		if (!rc)
			pd = NULL;
	}
	if (mr)
		out("mr.dereg -> %s", rcs(ibv_dereg_mr(mr), errno));
	if (pd) {
		rc = ibv_dealloc_pd(pd);
		e = errno;
		out("pd.dealloc -> %s", rcs(rc, e));
	}
}

/* ------------------------------------------------------------------ */
/* Process exit with live objects                                       */

static int child(void)
{
	struct ibv_comp_channel *ch;
	struct ibv_context *c;
	struct ibv_pd *pd;
	struct ibv_cq *cq, *cq2;
	struct ibv_srq *srq;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *m1, *m2;
	struct ibv_qp_attr at;
	struct ibv_send_wr sw, *sbad;
	struct ibv_recv_wr rw, *rbad;
	struct ibv_sge sge = { (uintptr_t)rbuf, 64, 0 };
	static char mbuf[1 << 20] __attribute__((aligned(4096)));
	int fails = 0, i;

	alarm(120);
	c = ibv_open_device(dev);
	if (!c)
		return 100;
	ch = ibv_create_comp_channel(c);
	pd = ibv_alloc_pd(c);
	cq = ibv_create_cq(c, 16, NULL, ch, 0);
	cq2 = ibv_create_cq(c, 4, NULL, NULL, 0);
	fails += !ch + !pd + !cq + !cq2;
	if (!pd || !cq || !cq2)
		return fails;
	{
		struct ibv_srq_init_attr si = { .attr = { .max_wr = 8,
							  .max_sge = 1 } };
		struct ibv_qp_init_attr ia = {
			.send_cq = cq2, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = 8,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		srq = ibv_create_srq(pd, &si);
		qb = ibv_create_qp(pd, &ia);
		ia.srq = srq;
		ia.cap.max_recv_wr = 0;
		qa = srq ? ibv_create_qp(pd, &ia) : NULL;
	}
	m1 = ibv_reg_mr(pd, mbuf, sizeof(mbuf),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	m2 = ibv_reg_mr(pd, rbuf, 4096, IBV_ACCESS_LOCAL_WRITE);
	fails += !srq + !qa + !qb + !m1 + !m2;
	/* Leave work everywhere: RQEs, SRQEs, SQEs, CQEs, an unread event. */
	memset(&rw, 0, sizeof(rw));
	rw.sg_list = &sge;
	rw.num_sge = 1;
	for (i = 0; i < 4; i++) {
		if (qb)
			fails += !!ibv_post_recv(qb, &rw, &rbad);
		if (srq)
			fails += !!ibv_post_srq_recv(srq, &rw, &rbad);
	}
	memset(&sw, 0, sizeof(sw));
	sw.opcode = IBV_WR_SEND;
	sw.sg_list = &sge;
	sw.num_sge = 1;
	if (qa) {
		ibv_post_send(qa, &sw, &sbad); /* doorbell: ENOTCONN */
		ibv_post_send(qa, &sw, &sbad);
	}
	ibv_req_notify_cq(cq, 0);
	memset(&at, 0, sizeof(at));
	at.qp_state = IBV_QPS_ERR;
	if (qb)
		fails += !!ibv_modify_qp(qb, &at, IBV_QP_STATE);
	restrack("in child before exit");
	out("fork.child: objects created (%d failures), exiting without cleanup",
	    fails);
	return fails > 99 ? 99 : fails;
}

static void test_exit_cleanup(void)
{
	int st = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		out("fork -> %s", ename(errno));
		return;
	}
	if (pid == 0) {
		int rc = child();

		fflush(stdout);
		_exit(rc);
	}
	if (waitpid(pid, &st, 0) < 0) {
		out("fork.child -> waitpid %s", ename(errno));
		return;
	}
	if (WIFEXITED(st))
		out("fork.child -> exited status=%d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		out("fork.child -> killed by signal %d", WTERMSIG(st));
	restrack("after child exit");
}

/*
 * A section header. With VERBS_OBJECTS_TIMING set, the time the previous
 * section took goes to stderr (never into the transcript).
 */
static void section(const char *name)
{
	static struct timespec last;
	static const char *prev;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (getenv("VERBS_OBJECTS_TIMING") && prev)
		fprintf(stderr, "timing: %s %.2f s\n", prev,
			(now.tv_sec - last.tv_sec) +
				(now.tv_nsec - last.tv_nsec) / 1e9);
	last = now;
	prev = name;
	if (name && strcmp(name, "end"))
		out("== %s", name);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	int n, i, e, rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s RDMA_DEVICE\n", argv[0]);
		return 2;
	}
	devname = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), devname))
			dev = list[i];
	out("device.find by name -> %s", dev ? "ok" : "not found");
	if (!dev)
		return 1;
	errno = 0;
	ctx = ibv_open_device(dev);
	e = errno;
	out("device.open -> %s", ctx ? "ok" : ename(e));
	if (!ctx)
		return 1;
	restrack("after open");
	section(NULL);

	section("device");
	test_device();
	section("pd");
	test_pd();

	pd = ibv_alloc_pd(ctx);
	out("pd.alloc (for the tests below) -> %s", pd ? "ok" : ename(errno));
	mr = pd ? ibv_reg_mr(pd, rbuf, sizeof(rbuf),
			     IBV_ACCESS_LOCAL_WRITE) : NULL;
	out("mr.reg (receive buffer for the tests below) -> %s",
	    mr ? "ok" : ename(errno));
	rbuf_lkey = mr ? mr->lkey : 0;

	section("cq");
	test_cq();
	section("qp create");
	test_qp_create(pd);
	section("qp modify, post_recv, completion channel");
	test_qp_modify_rq(pd);
	section("qp post_send");
	test_post_send(pd);
	section("srq");
	test_srq(pd);
	section("raw uverbs commands");
	{
		struct ibv_cq *cq = mkcq(4, "4", NULL, 0, "");
		struct ibv_srq *srq = mksrq(pd, 4, 1, 3);
		struct ibv_qp *qp = mkqp(pd, IBV_QPT_RC, cq, cq, NULL, 2, 2, 1,
					 1, 0, 0, "");

		test_raw(qp, cq, srq);
		rmqp(qp, "");
		rmsrq(srq, "");
		rmcq(cq, "");
	}
	section("mr");
	test_mr(pd);
	if (mr)
		out("mr.dereg (receive buffer) -> %s",
		    rcs(ibv_dereg_mr(mr), errno));
	if (pd) {
		rc = ibv_dealloc_pd(pd);
		out("pd.dealloc (for the tests above) -> %s", rcs(rc, errno));
	}
	section("teardown order");
	test_teardown();
	restrack("after cleanup");

	section("process exit with live objects");
	test_exit_cleanup();
	rc = ibv_close_device(ctx);
	out("device.close -> %s", rcs(rc, errno));
	restrack("after close");
	ibv_free_device_list(list);
	section("end");
	out("end");
	return 0;
}
