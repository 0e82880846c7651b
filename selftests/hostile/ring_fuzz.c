// SPDX-License-Identifier: GPL-2.0
/*
 * ring_fuzz: a process that lies (issue 13). A process owns the queues the driver maps
 * into it, and nothing stops it from writing anything there at any time: send and receive
 * queue elements that make no sense, elements changed after the doorbell, completion
 * entries and the CQ control word scribbled over, doorbells and receive posts full of
 * nonsense, verbs calls with out-of-range arguments, and real traffic into all of it. The
 * kernel may answer only with an errno or an error completion: nothing in the kernel log
 * (no warning, BUG, oops, KASAN or lockdep report) and no effect on other processes' QPs.
 * The harness checks that; this program checks nothing about the kernel, it reports what
 * it did, and it must never crash itself, whatever the kernel does.
 *
 *   ring_fuzz -d DEV -g GIDX -s SEED -n ROUNDS [-v]
 *   -d DEV     the device
 *   -g GIDX    the index in port 1's GID table of the device's own IP address: the two
 *              QPs connect to each other through it (connections without rdma_cm); all
 *              address vectors, random ones included, stay on this device
 *   -s SEED    seed of the PRNG (xorshift64*) that picks the actions (0x... accepted)
 *   -n ROUNDS  the number of actions
 *   -v         details of the setup, of every action and of every CQE taken (stdout)
 *
 * Setup: a PD, a 64 KiB buffer registered for local write, remote read and remote write,
 * CQ A and CQ B (100 CQEs asked for), QP q1 on CQ A and q2 on CQ B (RC, 64 send and 16
 * receive WRs, 6 SGEs each way, 64 bytes inline), connected to each other by modify_qp
 * (INIT, RTR with an address vector naming the other's GID and QPN, RTS). libsiw maps each
 * ring from the context's cmd_fd; the rings are found without its private structures:
 * /proc/self/maps is read before and after each creation, and the new mappings of
 * /dev/infiniband/uverbs* are the rings (a CQ: one, its CQEs and the control word; a QP:
 * two, the SQ and the RQ, told apart by their length). One honest exchange through the
 * rings (a 4096-byte Send from q1 into a receive on q2, both CQEs successful within 10 s,
 * the bytes intact) proves the pair works before the lies start.
 *
 * From then on libsiw's post and poll paths are never used (they would parse what we
 * scribble): work queue elements are written into the rings directly (the element first,
 * then its flags with VALID, a release store), the SQ doorbell is a raw POST_SEND without
 * work requests written to cmd_fd, and CQEs are taken from the ring directly (VALID: ours;
 * clearing the flags gives the slot back). Each round does one action, picked at random:
 *
 *   sqe      garbage SQEs (random bytes, or structured nonsense: random opcodes, SGE counts
 *            and flags, lengths 0 to 0xffffffff, addresses inside, around and far from the
 *            region, NULL, kernel addresses, the rings themselves, right and wrong keys,
 *            inline data longer than allowed) at the producer slot or at a random one,
 *            then the doorbell
 *   rqe      garbage RQEs likewise (no doorbell: the next inbound Send takes them)
 *   honest   a well-formed Send (with a receive posted at the peer, not always big
 *            enough), Write or Read to the other QP, of a random length that may run
 *            past the region, so traffic really flows into the garbage
 *   rewrite  an element posted, the doorbell rung, then the element changed at once
 *            (opcode, lengths, addresses, SGE count, flags, VALID withdrawn, all of it)
 *   cq       CQE slots and the CQ control word scribbled over: fake VALID entries,
 *            random bytes, flags cleared under the kernel's feet
 *   verbs    modify_qp to random states with random masks and attributes, req_notify_cq,
 *            query_qp, reg_mr of odd ranges (dereg at once) or of a ring itself (kept and
 *            used as a key), raw POST_SEND with nonsense counts and sizes or a real work
 *            request, raw POST_RECV with a work request (a user QP must refuse both),
 *            create_cq of odd sizes (destroyed at once)
 *   drain    take every VALID CQE of both CQs (after a short pause, at times)
 *   renew    destroy both QPs, whatever they are doing, and connect a new pair
 *
 * A QP that goes to ERROR (seen with query_qp after every round) is expected: counted, and
 * the rounds go on (its doorbells flush); ERROR is final, so "renew" brings live QPs back.
 * Errnos are counted, never acted upon. Async events are read and acknowledged.
 *
 * Output (stdout): the seed; with -v the rings found and every action; "round N: ..." every
 * 50 rounds and after the last (actions done, CQEs taken by status, QPs seen in ERROR);
 * "ring_fuzz: N rounds, ... done" with the totals, then "ring_fuzz: teardown done". stderr
 * has nothing but "FAIL: ..." lines.
 *
 * Exit status: 0 after the rounds and the teardown (whatever the errnos and completions);
 * 1 if the setup fails ("FAIL: ...", the honest exchange included, or a new pair cannot
 * be created); 3 if the kernel hangs: a round takes more than 10 s, 30 s for "renew"
 * ("FAIL: round N hangs (ACTION)"), a setup or teardown step more than 30 s ("FAIL: setup
 * hangs in STEP", "FAIL: teardown hangs in STEP"); 2 on a usage error. A SIGSEGV or
 * SIGBUS while touching a ring is caught and counted ("ring faults" in the totals; the
 * mappings stay the process's while the objects live, so it should be 0), never a crash.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#define BUF_LEN		(64u << 10)	/* the registered region */
#define CQ_WANT		100
#define SQ_WANT		64
#define RQ_WANT		16
#define INLINE_WANT	64
#define ROUND_SECS	10		/* watchdog of one round */
#define STEP_SECS	30		/* watchdog of one setup or teardown step */
#define EXCHANGE_MS	10000		/* the honest exchange before the rounds */
#define PROGRESS	50		/* rounds between progress lines */
#define UVERBS_PATH	"/dev/infiniband/uverbs"
#define MAX_MAPS	64

/* Work request ids: what the honest exchange waits for, and tags for the -v output. */
#define SETUP_SEND_ID	0x5e7e000000000001ull
#define SETUP_RECV_ID	0x5e7e000000000002ull
#define HONEST_TAG	0x0c00000000000000ull
#define GARBAGE_TAG	0xbad0000000000000ull

/* ---- the siw user ABI (include/uapi/rdma/siw-abi.h), little-endian x86_64 ---- */

#define SIW_MAX_SGE	6
#define SIW_MAX_INLINE	(16 * (SIW_MAX_SGE - 1))	/* sge[1..] */

enum {
	WQE_VALID = 0x1,
	WQE_INLINE = 0x2,
	WQE_SIGNALLED = 0x4,
	WQE_SOLICITED = 0x8,
	WQE_READ_FENCE = 0x10,
	WQE_REM_INVAL = 0x20,
	WQE_COMPLETED = 0x40,
};

enum {
	OP_WRITE = 0,
	OP_READ = 1,
	OP_READ_LOCAL_INV = 2,
	OP_SEND = 3,
	OP_SEND_WITH_IMM = 4,
	OP_SEND_REMOTE_INV = 5,
	OP_FETCH_AND_ADD = 6,
	OP_COMP_AND_SWAP = 7,
	OP_RECEIVE = 8,
	OP_READ_RESPONSE = 9,
	OP_INVAL_STAG = 10,
	OP_REG_MR = 11,
};

/*
 * The layouts, with natural alignment: they have no implicit padding, so they are the
 * header's byte for byte (checked below), and the flags can be accessed atomically.
 */
struct r_sge {
	uint64_t laddr;
	uint32_t length;
	uint32_t lkey;
};

struct r_sqe {
	uint64_t id;
	uint16_t flags;
	uint8_t num_sge;
	uint8_t opcode;
	uint32_t rkey;
	uint64_t raddr;				/* or base_mr */
	struct r_sge sge[SIW_MAX_SGE];		/* or access; inline data from sge[1] on */
};

struct r_rqe {
	uint64_t id;
	uint16_t flags;
	uint8_t num_sge;
	uint8_t opcode;
	uint32_t unused;
	struct r_sge sge[SIW_MAX_SGE];
};

struct r_cqe {
	uint64_t id;
	uint8_t flags;
	uint8_t opcode;
	uint16_t status;
	uint32_t bytes;
	uint64_t imm_data;			/* or inval_stag */
	uint64_t qp_id;				/* or base_qp */
};

struct r_cq_ctrl {
	uint32_t flags;
	uint32_t pad;
};

#define WQE_FLAGS_OFF	8

_Static_assert(sizeof(struct r_sge) == 16, "struct siw_sge");
_Static_assert(sizeof(struct r_sqe) == 120 && offsetof(struct r_sqe, flags) == WQE_FLAGS_OFF &&
	       offsetof(struct r_sqe, rkey) == 12 && offsetof(struct r_sqe, raddr) == 16 &&
	       offsetof(struct r_sqe, sge) == 24, "struct siw_sqe");
_Static_assert(sizeof(struct r_rqe) == 112 && offsetof(struct r_rqe, flags) == WQE_FLAGS_OFF &&
	       offsetof(struct r_rqe, sge) == 16, "struct siw_rqe");
_Static_assert(sizeof(struct r_cqe) == 32 && offsetof(struct r_cqe, flags) == 8 &&
	       offsetof(struct r_cqe, status) == 10 && offsetof(struct r_cqe, bytes) == 12 &&
	       offsetof(struct r_cqe, imm_data) == 16 && offsetof(struct r_cqe, qp_id) == 24,
	       "struct siw_cqe");
_Static_assert(sizeof(struct r_cq_ctrl) == 8, "struct siw_cq_ctrl");
_Static_assert(SIW_MAX_INLINE == 80, "SIW_MAX_INLINE");

/* enum siw_wc_status; the last counter holds any other value. */
static const char *const status_name[] = {
	"success", "loc_len", "loc_prot", "loc_qp_op", "flush", "bad_resp", "loc_access",
	"rem_access", "rem_inv_req", "general", "other",
};
#define NSTATUS		(int)(sizeof(status_name) / sizeof(status_name[0]) - 1)

/* ---- objects ---- */

/* A ring mapped from cmd_fd. */
struct ring {
	uint8_t *base;
	size_t map_len;		/* the mapping's length (page-rounded) */
	unsigned long off;	/* its offset in cmd_fd: the kernel's key */
	uint32_t num;		/* elements */
	uint32_t esize;		/* bytes per element */
	uint32_t idx;		/* our producer (SQ, RQ) or consumer (CQ) index, < num */
};

struct fcq {
	const char *name;
	struct ibv_cq *cq;
	struct ring r;		/* the CQEs, then the control word */
};

struct fqp {
	const char *name;
	struct ibv_qp *qp;
	struct fcq *cq;		/* its send and receive CQ */
	struct ring sq, rq;
	int state;		/* as last queried */
	int in_error;		/* seen in ERROR (counted once) */
};

static struct ibv_device **dev_list;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static struct ibv_mr *ring_mr;		/* a region registered over a ring, if any */
static uint8_t *buf;
static union ibv_gid my_gid;
static int gidx = -1, verbose;
static size_t page;
static struct fcq cqs[2] = { { .name = "CQ A" }, { .name = "CQ B" } };
static struct fqp qps[2] = { { .name = "q1" }, { .name = "q2" } };
static unsigned long round_no;		/* 0 during the setup */
static int in_rounds;
static uint64_t rng;
static uint64_t next_id = 1;

/* ---- counters ---- */

enum act { A_SQE, A_RQE, A_HONEST, A_REWRITE, A_CQ, A_VERBS, A_DRAIN, A_RENEW, NACT };
static const char *const act_name[NACT] = {
	"sqe", "rqe", "honest", "rewrite", "cq", "verbs", "drain", "renew",
};
/* Out of 100. */
static const unsigned int act_weight[NACT] = { 18, 10, 22, 8, 8, 14, 16, 4 };

enum verb {
	V_DOORBELL, V_MODIFY, V_NOTIFY, V_QUERY, V_REG_MR, V_RING_MR, V_POST_SEND, V_POST_RECV,
	V_CREATE_CQ, V_DESTROY, NVERB
};
static const char *const verb_name[NVERB] = {
	"doorbell", "modify_qp", "req_notify_cq", "query_qp", "reg_mr", "ring_mr",
	"raw_post_send", "raw_post_recv", "create_cq", "destroy",
};

#define NERRNO		256		/* errno counters; [0]: anything larger */

static unsigned long n_act[NACT], n_cqe[NSTATUS + 1], n_cqe_all;
static unsigned long v_ok[NVERB], v_fail[NVERB], n_errno[NERRNO];
static unsigned long n_qp_err, n_pairs = 1, n_busy, n_events, n_faults, n_connect_fail;
static unsigned long n_ev_type[32];

static volatile sig_atomic_t armed, fault_sig;	/* see on_fault() */

/* ---- helpers ---- */

static void __attribute__((format(printf, 1, 2), noreturn)) fail(const char *fmt, ...)
{
	va_list ap;

	armed = 0;
	fflush(stdout);
	fputs("FAIL: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* -v: one line about what this round (or the setup) does. */
static void __attribute__((format(printf, 1, 2))) say(const char *fmt, ...)
{
	va_list ap;

	if (!verbose)
		return;
	if (round_no)
		printf("r%lu: ", round_no);
	else
		printf("setup: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* A bounded string being built. */
struct sbuf {
	char b[2048];
	size_t n;
};

static void __attribute__((format(printf, 2, 3))) sb_add(struct sbuf *s, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (s->n >= sizeof(s->b) - 1)
		return;
	va_start(ap, fmt);
	k = vsnprintf(s->b + s->n, sizeof(s->b) - s->n, fmt, ap);
	va_end(ap);
	if (k > 0)
		s->n = s->n + k < sizeof(s->b) ? s->n + k : sizeof(s->b) - 1;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static void sleep_us(unsigned int us)
{
	struct timespec t = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000L };

	nanosleep(&t, NULL);
}

static size_t page_round(size_t n)
{
	return (n + page - 1) & ~(page - 1);
}

/* A verb's int result as an errno, 0 on success: libibverbs returns errno values, some
 * paths -1 with errno set, some negative errnos. */
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
	static char b[32];
	const char *s;

	if (!e)
		return "ok";
	s = strerrorname_np(e);
	if (s)
		return s;
	snprintf(b, sizeof(b), "errno %d", e);
	return b;
}

/* Counts a verb's result; returns it. */
static int note(enum verb v, int err)
{
	if (!err) {
		v_ok[v]++;
	} else {
		v_fail[v]++;
		n_errno[err > 0 && err < NERRNO ? err : 0]++;
	}
	return err;
}

static const char *state_name(int st)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return st >= 0 && st < (int)(sizeof(names) / sizeof(names[0])) ? names[st] : "UNKNOWN";
}

/* ---- the PRNG: xorshift64* ---- */

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

/* 0 .. n-1 (n > 0). */
static uint32_t rn(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

static int one_in(uint32_t n)
{
	return rn(n) == 0;
}

static void random_bytes(void *p, size_t n)
{
	uint8_t *b = p;

	while (n) {
		uint64_t v = rnd();
		size_t k = n < sizeof(v) ? n : sizeof(v);

		memcpy(b, &v, k);
		b += k;
		n -= k;
	}
}

/* ---- watchdogs ---- */

static char wd_msg[128];
static size_t wd_len;

static void on_alarm(int sig)
{
	ssize_t r;

	(void)sig;
	r = write(STDERR_FILENO, wd_msg, wd_len);
	(void)r;
	_exit(3);
}

/* Arms the watchdog: if not disarmed within `secs`, prints the message and exits with 3. */
static void __attribute__((format(printf, 2, 3))) watch(unsigned int secs, const char *fmt, ...)
{
	va_list ap;
	int n;

	alarm(0);
	va_start(ap, fmt);
	n = vsnprintf(wd_msg, sizeof(wd_msg), fmt, ap);
	va_end(ap);
	wd_len = n < 0 ? 0 : (size_t)n < sizeof(wd_msg) ? (size_t)n : sizeof(wd_msg) - 1;
	alarm(secs);
}

static void unwatch(void)
{
	alarm(0);
}

/* A setup step (outside the rounds, which have their own watchdog). */
static void step(const char *what)
{
	if (!in_rounds)
		watch(STEP_SECS, "FAIL: setup hangs in %s\n", what);
}

static void step_done(void)
{
	if (!in_rounds)
		unwatch();
}

/*
 * Faults. The rings are the process's own memory while their objects live, so touching
 * them cannot fault; should the kernel make it fault anyway, the action touching a ring
 * (`armed`) ends there instead of the process.
 */
static sigjmp_buf fault_jb;

static void on_fault(int sig)
{
	if (armed) {
		armed = 0;
		fault_sig = sig;
		siglongjmp(fault_jb, 1);
	}
	/* Not ours to survive (a bug here): die of it. */
	signal(sig, SIG_DFL);
}

/* Runs fn with `arm` as `armed`; a fault while armed ends it: returns the signal, else 0. */
static int guarded(void (*fn)(void), int arm)
{
	if (sigsetjmp(fault_jb, 1))
		return fault_sig;
	armed = arm;
	fn();
	armed = 0;
	return 0;
}

/* ---- rings ---- */

static void *slot_at(const struct ring *r, uint32_t i)
{
	return r->base + (size_t)(i % r->num) * r->esize;
}

static uint16_t *wqe_flags(const struct ring *r, uint32_t i)
{
	return (uint16_t *)((uint8_t *)slot_at(r, i) + WQE_FLAGS_OFF);
}

static struct r_cq_ctrl *cq_ctrl(const struct fcq *c)
{
	return (struct r_cq_ctrl *)(c->r.base + (size_t)c->r.num * sizeof(struct r_cqe));
}

/* Writes a work queue element (SQE or RQE) into slot i: all but its flags, then the flags
 * with a release store, as a producer publishes an element. */
static void put_wqe(const struct ring *r, uint32_t i, const void *elem)
{
	uint8_t *dst = slot_at(r, i);
	const uint8_t *src = elem;
	uint16_t flags;

	memcpy(dst, src, WQE_FLAGS_OFF);
	memcpy(dst + WQE_FLAGS_OFF + 2, src + WQE_FLAGS_OFF + 2, r->esize - WQE_FLAGS_OFF - 2);
	memcpy(&flags, src + WQE_FLAGS_OFF, sizeof(flags));
	__atomic_store_n(wqe_flags(r, i), flags, __ATOMIC_RELEASE);
}

/* Whether the producer slot is free (its flags are 0). */
static int slot_free(const struct ring *r)
{
	return !__atomic_load_n(wqe_flags(r, r->idx), __ATOMIC_ACQUIRE);
}

/* Puts an element at the producer index; the index moves on if it was posted (VALID). */
static uint32_t post_wqe(struct ring *r, const void *elem)
{
	uint32_t slot = r->idx;
	uint16_t flags;

	memcpy(&flags, (const uint8_t *)elem + WQE_FLAGS_OFF, sizeof(flags));
	put_wqe(r, slot, elem);
	if (flags & WQE_VALID)
		r->idx = (slot + 1) % r->num;
	return slot;
}

/* Takes the CQE in slot i if it is VALID: copies it out, gives the slot back, counts it. */
static int take_cqe(struct fcq *c, uint32_t i, struct r_cqe *out)
{
	struct r_cqe *e = slot_at(&c->r, i);
	uint8_t f = __atomic_load_n(&e->flags, __ATOMIC_ACQUIRE);

	if (!(f & WQE_VALID))
		return 0;
	memcpy(out, e, sizeof(*out));
	out->flags = f;
	__atomic_store_n(&e->flags, 0, __ATOMIC_RELEASE);
	n_cqe[out->status < NSTATUS ? out->status : NSTATUS]++;
	n_cqe_all++;
	if (verbose)
		say("  %s slot %u: id 0x%llx flags 0x%x opcode %u status %u (%s) bytes %u qp %llu",
		    c->name, i % c->r.num, (unsigned long long)out->id, f, out->opcode,
		    out->status, status_name[out->status < NSTATUS ? out->status : NSTATUS],
		    out->bytes, (unsigned long long)out->qp_id);
	return 1;
}

/* The next CQE in order, if VALID. */
static int take_next(struct fcq *c, struct r_cqe *out)
{
	if (!take_cqe(c, c->r.idx, out))
		return 0;
	c->r.idx = (c->r.idx + 1) % c->r.num;
	return 1;
}

/* Takes every VALID CQE, from the consumer index round the ring; the consumer index then
 * follows the last one taken (our scribbles may have put it out of step). */
static unsigned int drain_cq(struct fcq *c)
{
	struct r_cqe e;
	unsigned int n = 0;
	uint32_t k, last = 0;

	for (k = 0; k < c->r.num; k++) {
		if (take_cqe(c, c->r.idx + k, &e)) {
			n++;
			last = k;
		}
	}
	if (n)
		c->r.idx = (c->r.idx + last + 1) % c->r.num;
	return n;
}

/* ---- finding the rings ---- */

struct map {
	unsigned long start, end, off;
	char perms[8];
};

/* The mappings of uverbs devices in this process, by address; -1 if unreadable. */
static int uverbs_maps(struct map *v)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char *line = NULL;
	size_t cap = 0;
	int n = 0;

	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0) {
		struct map m;

		if (!strstr(line, UVERBS_PATH))
			continue;
		if (sscanf(line, "%lx-%lx %7s %lx", &m.start, &m.end, m.perms, &m.off) != 4)
			continue;
		if (n == MAX_MAPS) {
			n = -1;
			break;
		}
		v[n++] = m;
	}
	free(line);
	fclose(f);
	return n;
}

static int snapshot(struct map *v)
{
	int n = uverbs_maps(v);

	if (n < 0)
		fail("cannot read the uverbs mappings in /proc/self/maps");
	return n;
}

/* The mappings in a[] that are not in b[]. */
static int new_maps(const struct map *b, int nb, const struct map *a, int na, struct map *out)
{
	int i, j, n = 0;

	for (i = 0; i < na; i++) {
		for (j = 0; j < nb; j++)
			if (a[i].start == b[j].start && a[i].end == b[j].end)
				break;
		if (j == nb)
			out[n++] = a[i];
	}
	return n;
}

static void show_maps(struct sbuf *s, const struct map *v, int n)
{
	int i;

	sb_add(s, "%d new uverbs mapping%s", n, n == 1 ? "" : "s");
	for (i = 0; i < n; i++)
		sb_add(s, "%s%#lx-%#lx %s off %#lx (%lu bytes)", i ? ", " : ": ", v[i].start,
		       v[i].end, v[i].perms, v[i].off, v[i].end - v[i].start);
}

/* Writable and shared, as libsiw maps the rings. */
static int map_usable(const struct map *m)
{
	return m->perms[0] == 'r' && m->perms[1] == 'w' && m->perms[3] == 's';
}

static void set_ring(struct ring *r, const struct map *m, uint32_t num, uint32_t esize)
{
	r->base = (uint8_t *)m->start;
	r->map_len = m->end - m->start;
	r->off = m->off;
	r->num = num;
	r->esize = esize;
	r->idx = 0;
}

static void make_cq(struct fcq *c)
{
	struct map b[MAX_MAPS], a[MAX_MAPS], n[MAX_MAPS];
	struct sbuf s = { .n = 0 };
	int nb, na, nn;
	uint32_t num;
	size_t want;

	nb = snapshot(b);
	step("ibv_create_cq");
	c->cq = ibv_create_cq(ctx, CQ_WANT, NULL, NULL, 0);
	step_done();
	if (!c->cq)
		fail("ibv_create_cq(%s, %d): %s", c->name, CQ_WANT, errname(errno));
	na = snapshot(a);
	nn = new_maps(b, nb, a, na, n);
	show_maps(&s, n, nn);
	num = c->cq->cqe > 0 ? (uint32_t)c->cq->cqe : 0;
	want = page_round((size_t)num * sizeof(struct r_cqe) + sizeof(struct r_cq_ctrl));
	say("%s: %u CQEs, %s", c->name, num, s.b);
	if (!num || nn != 1 || n[0].end - n[0].start != want || !map_usable(&n[0]))
		fail("%s has %u CQEs: expected one shared writable mapping of %zu bytes, found %s",
		     c->name, num, want, s.b);
	set_ring(&c->r, &n[0], num, sizeof(struct r_cqe));
}

static void make_qp(struct fqp *q, struct fcq *c)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = c->cq,
		.recv_cq = c->cq,
		.cap = {
			.max_send_wr = SQ_WANT,
			.max_recv_wr = RQ_WANT,
			.max_send_sge = SIW_MAX_SGE,
			.max_recv_sge = SIW_MAX_SGE,
			.max_inline_data = INLINE_WANT,
		},
		.qp_type = IBV_QPT_RC,
	};
	struct map b[MAX_MAPS], a[MAX_MAPS], n[MAX_MAPS];
	struct ibv_qp_init_attr qi;
	struct ibv_qp_attr qa;
	struct sbuf s = { .n = 0 };
	int nb, na, nn, e, isq = -1;
	uint32_t nsq, nrq;
	size_t sq_len, rq_len;

	nb = snapshot(b);
	step("ibv_create_qp");
	q->qp = ibv_create_qp(pd, &ia);
	step_done();
	if (!q->qp)
		fail("ibv_create_qp(%s)%s: %s", q->name, in_rounds ? " for a new pair" : "",
		     errname(errno));
	na = snapshot(a);
	nn = new_maps(b, nb, a, na, n);
	show_maps(&s, n, nn);
	step("ibv_query_qp");
	e = verr(ibv_query_qp(q->qp, &qa, IBV_QP_CAP, &qi));
	step_done();
	if (e)
		fail("ibv_query_qp(%s): %s", q->name, errname(e));
	nsq = qa.cap.max_send_wr;
	nrq = qa.cap.max_recv_wr;
	sq_len = page_round((size_t)nsq * sizeof(struct r_sqe));
	rq_len = page_round((size_t)nrq * sizeof(struct r_rqe));
	say("%s: QPN %u, %u SQEs, %u RQEs, %s", q->name, q->qp->qp_num, nsq, nrq, s.b);
	if (nn == 2 && sq_len != rq_len) {
		if (n[0].end - n[0].start == sq_len && n[1].end - n[1].start == rq_len)
			isq = 0;
		else if (n[1].end - n[1].start == sq_len && n[0].end - n[0].start == rq_len)
			isq = 1;
	}
	if (nsq < SQ_WANT || nrq < RQ_WANT || isq < 0 || !map_usable(&n[0]) ||
	    !map_usable(&n[1]))
		fail("%s has %u SQEs and %u RQEs: expected two shared writable mappings of %zu "
		     "(SQ) and %zu (RQ) bytes, found %s", q->name, nsq, nrq, sq_len, rq_len, s.b);
	set_ring(&q->sq, &n[isq], nsq, sizeof(struct r_sqe));
	set_ring(&q->rq, &n[1 - isq], nrq, sizeof(struct r_rqe));
	q->cq = c;
	q->state = IBV_QPS_RESET;
	q->in_error = 0;
}

/* ---- connecting (modify_qp with an address vector) ---- */

static int to_init(struct fqp *q)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_WRITE,
	};

	return verr(ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS));
}

static int to_rtr(struct fqp *q, uint32_t dqpn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = dqpn,
		.rq_psn = 0,
		.max_dest_rd_atomic = 8,
		.min_rnr_timer = 12,
		.ah_attr = {
			.is_global = 1,
			.port_num = 1,
			.grh = { .dgid = my_gid, .sgid_index = gidx, .hop_limit = 1 },
		},
	};

	return verr(ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER));
}

static int to_rts(struct fqp *q)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTS,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.sq_psn = 0,
		.max_rd_atomic = 8,
	};

	return verr(ibv_modify_qp(q->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC));
}

/* Both QPs to INIT, each to RTR naming the other, both to RTS: 0, or the errno of the
 * first step that failed (named in *what). */
static int connect_pair(const char **what)
{
	static const char *const steps[] = {
		"q1 to INIT", "q2 to INIT", "q1 to RTR", "q2 to RTR", "q1 to RTS", "q2 to RTS",
	};
	int i, e = 0;

	for (i = 0; i < 6 && !e; i++) {
		struct fqp *q = &qps[i % 2];

		*what = steps[i];
		step(steps[i]);
		if (i < 2)
			e = to_init(q);
		else if (i < 4)
			e = to_rtr(q, qps[1 - i % 2].qp->qp_num);
		else
			e = to_rts(q);
		step_done();
	}
	return e;
}

/* ---- raw commands on cmd_fd ---- */

static int cmd_write(const void *p, size_t len)
{
	ssize_t n = write(ctx->cmd_fd, p, len);

	if (n < 0)
		return errno ? errno : EIO;
	return (size_t)n == len ? 0 : EIO;
}

/* The SQ doorbell as libsiw rings it: POST_SEND without work requests. */
static int doorbell(struct fqp *q)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} db;
	struct ib_uverbs_post_send_resp resp;
	int e;

	memset(&db, 0, sizeof(db));
	db.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	db.hdr.in_words = sizeof(db) / 4;
	db.hdr.out_words = sizeof(resp) / 4;
	db.cmd.response = (uintptr_t)&resp;
	db.cmd.qp_handle = q->qp->handle;
	db.cmd.wqe_size = sizeof(struct ib_uverbs_send_wr);
	e = note(V_DOORBELL, cmd_write(&db, sizeof(db)));
	say("  doorbell %s: %s", q->name, errname(e));
	return e;
}

/* ---- the honest exchange before the rounds ---- */

static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	uint32_t s = seed | 1;

	for (uint32_t i = 0; i < len; i++) {
		s ^= s << 13;
		s ^= s >> 17;
		s ^= s << 5;
		p[i] = (uint8_t)s;
	}
}

static const char *exchange_wrong;

#define SETUP_READ_ID	0x5e7e000000000003ull

/* An RDMA Read of 8 KiB whose sink is its source: q1 reads q2's bytes at buf + 8192 into
 * buf + 8192. The Read Response (4 KiB and more) is sent from the pinned pages themselves
 * (MSG_SPLICE_PAGES), so the skbs the receiver copies from reference the very pages it
 * copies into: source and destination of each copy are the same bytes. It must complete,
 * the bytes unchanged (and the kernel log clean: a copy assuming the two apart is
 * undefined behaviour, which Rust's debug assertions report). */
static void read_onto_itself(void)
{
	struct fqp *a = &qps[0];
	struct r_sqe sqe = { 0 };
	struct r_cqe c, rd = { 0 };
	uint8_t *at = buf + 8192;
	static uint8_t want[8192];
	int got = 0;
	double t0 = now_ms();

	fill(want, sizeof(want), 0x0ead);
	memcpy(at, want, sizeof(want));
	sqe.id = SETUP_READ_ID;
	sqe.opcode = OP_READ;
	sqe.num_sge = 1;
	sqe.sge[0] = (struct r_sge){ (uintptr_t)at, sizeof(want), mr->lkey };
	sqe.rkey = mr->rkey;
	sqe.raddr = (uintptr_t)at;
	sqe.flags = WQE_VALID | WQE_SIGNALLED;
	if (!slot_free(&a->sq)) {
		exchange_wrong = "no free SQ slot for the Read";
		return;
	}
	post_wqe(&a->sq, &sqe);
	doorbell(a);
	say("SQE Read of 8192 bytes onto themselves on q1");
	while (!got && now_ms() - t0 <= EXCHANGE_MS) {
		while (take_next(a->cq, &c))
			if (c.id == SETUP_READ_ID) {
				rd = c;
				got = 1;
			}
		if (!got)
			sleep_us(1000);
	}
	if (!got)
		exchange_wrong = "no CQE for the Read onto itself within 10 s";
	else if (rd.status)
		exchange_wrong = "the Read onto itself completed with an error";
	else if (memcmp(at, want, sizeof(want)))
		exchange_wrong = "the Read onto itself changed the bytes";
	if (exchange_wrong)
		say("Read: status %u", rd.status);
}

static void exchange(void)
{
	struct fqp *a = &qps[0], *b = &qps[1];
	struct r_sqe sqe = { 0 };
	struct r_rqe rqe = { 0 };
	struct r_cqe c, sc = { 0 }, rc = { 0 };
	uint8_t *src = buf, *dst = buf + 4096;
	static uint8_t want[4096];
	int got_s = 0, got_r = 0;
	double t0 = now_ms(), db = -1e9;

	exchange_wrong = NULL;
	fill(want, sizeof(want), 0x5eed);
	memcpy(src, want, sizeof(want));
	memset(dst, 0, 4096);
	rqe.id = SETUP_RECV_ID;
	rqe.num_sge = 1;
	rqe.sge[0] = (struct r_sge){ (uintptr_t)dst, 4096, mr->lkey };
	rqe.flags = WQE_VALID;
	sqe.id = SETUP_SEND_ID;
	sqe.opcode = OP_SEND;
	sqe.num_sge = 1;
	sqe.sge[0] = (struct r_sge){ (uintptr_t)src, 4096, mr->lkey };
	sqe.flags = WQE_VALID | WQE_SIGNALLED;
	if (!slot_free(&b->rq) || !slot_free(&a->sq)) {
		exchange_wrong = "the first ring slots are not free";
		return;
	}
	post_wqe(&b->rq, &rqe);
	post_wqe(&a->sq, &sqe);
	say("RQE on q2, SQE Send of 4096 bytes on q1");
	while (!got_s || !got_r) {
		/* The connection may come up after the first doorbell: ring again meanwhile. */
		if (!got_s && now_ms() - db >= 100) {
			doorbell(a);
			db = now_ms();
		}
		while (take_next(a->cq, &c))
			if (c.id == SETUP_SEND_ID) {
				sc = c;
				got_s = 1;
			}
		while (take_next(b->cq, &c))
			if (c.id == SETUP_RECV_ID) {
				rc = c;
				got_r = 1;
			}
		if (now_ms() - t0 > EXCHANGE_MS)
			break;
		sleep_us(1000);
	}
	if (!got_s)
		exchange_wrong = "no CQE for the Send within 10 s";
	else if (!got_r)
		exchange_wrong = "no CQE for the receive within 10 s";
	else if (sc.status)
		exchange_wrong = "the Send completed with an error";
	else if (rc.status)
		exchange_wrong = "the receive completed with an error";
	else if (rc.bytes != 4096)
		exchange_wrong = "the receive reports another length than 4096";
	else if (memcmp(dst, want, sizeof(want)))
		exchange_wrong = "the bytes received differ from those sent";
	if (exchange_wrong) {
		say("Send: status %u, receive: status %u, %u bytes", sc.status, rc.status,
		    rc.bytes);
		return;
	}
	read_onto_itself();
}

/* ---- picking values ---- */

static struct fqp *pick_qp(void)
{
	return &qps[rn(2)];
}

static struct fqp *peer_of(const struct fqp *q)
{
	return q == &qps[0] ? &qps[1] : &qps[0];
}

static const struct ring *pick_ring(void)
{
	switch (rn(6)) {
	case 0:
		return &cqs[0].r;
	case 1:
		return &cqs[1].r;
	case 2:
		return &qps[0].sq;
	case 3:
		return &qps[0].rq;
	case 4:
		return &qps[1].sq;
	default:
		return &qps[1].rq;
	}
}

static uint64_t pick_addr(void)
{
	const struct ring *r;

	switch (rn(12)) {
	case 0:
		return rnd();
	case 1:
		return 0;
	case 2:		/* just past the region */
		return (uintptr_t)buf + BUF_LEN + rn(64);
	case 3:		/* just before it */
		return (uintptr_t)buf - 1 - rn(4096);
	case 4:		/* the kernel's direct map */
		return 0xffff888000000000ull + ((uint64_t)rn(1u << 20) << 12) + rn(4096);
	case 5:		/* kernel text */
		return 0xffffffff81000000ull + rn(1u << 24);
	case 6:		/* a ring */
		r = pick_ring();
		return (uintptr_t)r->base + rn((uint32_t)r->map_len);
	case 7:		/* the last bytes of the region */
		return (uintptr_t)buf + BUF_LEN - 1 - rn(16);
	default:	/* inside */
		return (uintptr_t)buf + rn(BUF_LEN);
	}
}

static uint32_t pick_len(void)
{
	switch (rn(12)) {
	case 0:
		return 0;
	case 1:
		return 0xffffffff;
	case 2:
		return 0x80000000u;
	case 3:
		return (uint32_t)rnd();
	case 4:
		return BUF_LEN;
	case 5:
		return BUF_LEN + 1 + rn(4096);
	case 6:
		return 1 + rn(SIW_MAX_INLINE + 16);
	case 7:
	case 8:
		return 1 + rn(4096);
	default:
		return 1 + rn(BUF_LEN);
	}
}

/* A key: mostly the region's, else a wrong one of some kind. */
static uint32_t pick_key(int remote)
{
	uint32_t k = remote ? mr->rkey : mr->lkey;

	switch (rn(10)) {
	case 0:
		return (uint32_t)rnd();
	case 1:
		return 0;
	case 2:		/* the region's index, another key byte */
		return k ^ (1 + rn(255));
	case 3:		/* a neighbouring index */
		return k + 0x100;
	case 4:
		return ring_mr ? (remote ? ring_mr->rkey : ring_mr->lkey) : k;
	case 5:
		return 0xffffffff;
	default:
		return k;
	}
}

static uint16_t pick_wqe_flags(void)
{
	switch (rn(6)) {
	case 0:
		return (uint16_t)rnd() | WQE_VALID;
	case 1:		/* not posted, yet not free either */
		return ((uint16_t)rnd() & ~WQE_VALID) | WQE_SIGNALLED;
	case 2:
		return WQE_VALID | WQE_INLINE | (rn(2) ? WQE_SIGNALLED : 0);
	default:
		return WQE_VALID | ((uint16_t)rnd() & 0x7e);
	}
}

/* An inline length: allowed, above the 64 asked for, above SIW_MAX_INLINE, anything. */
static uint32_t pick_inline_len(void)
{
	switch (rn(4)) {
	case 0:
		return rn(SIW_MAX_INLINE + 1);
	case 1:
		return INLINE_WANT + 1 + rn(SIW_MAX_INLINE - INLINE_WANT);
	case 2:
		return SIW_MAX_INLINE + 1 + rn(64);
	default:
		return pick_len();
	}
}

static void describe_sqe(struct sbuf *s, const struct r_sqe *e)
{
	sb_add(s, "id 0x%llx flags 0x%x op %u n_sge %u rkey 0x%x raddr 0x%llx sge0 0x%llx+%u "
	       "key 0x%x", (unsigned long long)e->id, e->flags, e->opcode, e->num_sge, e->rkey,
	       (unsigned long long)e->raddr, (unsigned long long)e->sge[0].laddr,
	       e->sge[0].length, e->sge[0].lkey);
}

static void describe_rqe(struct sbuf *s, const struct r_rqe *e)
{
	sb_add(s, "id 0x%llx flags 0x%x n_sge %u sge0 0x%llx+%u key 0x%x",
	       (unsigned long long)e->id, e->flags, e->num_sge,
	       (unsigned long long)e->sge[0].laddr, e->sge[0].length, e->sge[0].lkey);
}

/* A garbage SQE: random bytes, or structured nonsense. */
static const char *garbage_sqe(struct r_sqe *e)
{
	int i;

	if (one_in(4)) {
		random_bytes(e, sizeof(*e));
		if (!one_in(4))
			e->flags |= WQE_VALID;
		return "random";
	}
	memset(e, 0, sizeof(*e));
	e->id = GARBAGE_TAG | next_id++;
	e->flags = pick_wqe_flags();
	e->opcode = one_in(4) ? (uint8_t)rnd() : (uint8_t)rn(16);
	e->num_sge = one_in(4) ? (uint8_t)rnd() : (uint8_t)rn(SIW_MAX_SGE + 1);
	e->rkey = pick_key(1);
	e->raddr = one_in(2) ? (uintptr_t)buf + rn(BUF_LEN) : pick_addr();
	for (i = 0; i < SIW_MAX_SGE; i++)
		e->sge[i] = (struct r_sge){ pick_addr(), pick_len(), pick_key(0) };
	if (e->flags & WQE_INLINE) {
		random_bytes(&e->sge[1], sizeof(e->sge) - sizeof(e->sge[0]));
		e->sge[0].length = pick_inline_len();
	}
	return "structured";
}

static const char *garbage_rqe(struct r_rqe *e)
{
	int i;

	if (one_in(4)) {
		random_bytes(e, sizeof(*e));
		if (!one_in(4))
			e->flags |= WQE_VALID;
		return "random";
	}
	memset(e, 0, sizeof(*e));
	e->id = GARBAGE_TAG | next_id++;
	e->flags = pick_wqe_flags();
	e->opcode = (uint8_t)rnd();
	e->unused = one_in(2) ? (uint32_t)rnd() : 0;
	e->num_sge = one_in(4) ? (uint8_t)rnd() : (uint8_t)rn(SIW_MAX_SGE + 1);
	for (i = 0; i < SIW_MAX_SGE; i++)
		e->sge[i] = (struct r_sge){ pick_addr(), pick_len(), pick_key(0) };
	return "structured";
}

/* A message length: mostly moderate, at times 0, large, or more than the region. */
static uint32_t pick_msg_len(void)
{
	switch (rn(8)) {
	case 0:
		return 0;
	case 1:
		return BUF_LEN / 2 + rn(BUF_LEN / 2 + 1);
	case 2:
		return BUF_LEN + 1 + rn(BUF_LEN);
	case 3:
		return 1 + rn(SIW_MAX_INLINE);
	default:
		return 1 + rn(8192);
	}
}

/* An offset in the region for `len` bytes: mostly where they fit, at times anywhere. */
static uint32_t pick_off(uint32_t len)
{
	if (len <= BUF_LEN && !one_in(8))
		return rn(BUF_LEN - len + 1);
	return rn(BUF_LEN);
}

/*
 * A well-formed element from q to its peer: a Send (a receive posted at the peer first,
 * when its slot is free, not always big enough), a Write or a Read, signalled, of a
 * random length that may run past the region; at times split over two SGEs, inline, or
 * aimed at the region registered over a ring.
 */
static void build_honest(struct fqp *q, struct r_sqe *e)
{
	struct fqp *p = peer_of(q);
	uint32_t len = pick_msg_len(), k = rn(4);
	struct sbuf s = { .n = 0 };

	memset(e, 0, sizeof(*e));
	e->id = HONEST_TAG | next_id++;
	e->flags = WQE_VALID | WQE_SIGNALLED;
	if (one_in(8))
		e->flags |= WQE_SOLICITED;
	if (one_in(8))
		e->flags |= WQE_READ_FENCE;
	e->opcode = k < 2 ? OP_SEND : k == 2 ? OP_WRITE : OP_READ;
	e->num_sge = 1;
	e->sge[0] = (struct r_sge){ (uintptr_t)buf + pick_off(len), len, mr->lkey };
	e->rkey = mr->rkey;
	e->raddr = (uintptr_t)buf + pick_off(len);
	if (ring_mr && one_in(8)) {
		e->rkey = ring_mr->rkey;
		e->raddr = (uintptr_t)ring_mr->addr + rn((uint32_t)ring_mr->length);
	}
	if (e->opcode != OP_READ && len <= SIW_MAX_INLINE && one_in(3)) {
		e->flags |= WQE_INLINE;
		memcpy(&e->sge[1], buf + rn(BUF_LEN - SIW_MAX_INLINE), len);
	} else if (len > 1 && one_in(4)) {
		uint32_t a = rn(len + 1);

		e->num_sge = 2;
		e->sge[0].length = a;
		e->sge[1] = (struct r_sge){ (uintptr_t)buf + pick_off(len - a), len - a, mr->lkey };
	}
	if (e->opcode == OP_SEND) {
		struct r_rqe r = { 0 };
		uint32_t rlen = one_in(4) ? rn(len + 1) : len + rn(64);

		r.id = HONEST_TAG | next_id++;
		r.num_sge = 1;
		r.sge[0] = (struct r_sge){ (uintptr_t)buf + pick_off(rlen), rlen, mr->lkey };
		r.flags = WQE_VALID;
		if (slot_free(&p->rq)) {
			uint32_t slot = post_wqe(&p->rq, &r);

			describe_rqe(&s, &r);
			say("  RQE on %s slot %u: %s", p->name, slot, s.b);
		} else {
			n_busy++;
			say("  no free RQE slot on %s", p->name);
		}
	}
}

/* ---- the actions ---- */

static void act_sqe(void)
{
	struct fqp *q = pick_qp();
	int i, n = one_in(4) ? 1 + (int)rn(4) : 1;

	for (i = 0; i < n; i++) {
		struct sbuf s = { .n = 0 };
		struct r_sqe e;
		const char *how = garbage_sqe(&e), *where;
		uint32_t slot;

		if (one_in(3)) {
			slot = rn(q->sq.num);
			put_wqe(&q->sq, slot, &e);
			where = "random";
		} else {
			slot = post_wqe(&q->sq, &e);
			where = "producer";
		}
		describe_sqe(&s, &e);
		say("garbage SQE (%s) on %s, %s slot %u: %s", how, q->name, where, slot, s.b);
	}
	doorbell(q);
	if (one_in(4))
		doorbell(q);
}

static void act_rqe(void)
{
	struct fqp *q = pick_qp();
	int i, n = one_in(4) ? 1 + (int)rn(4) : 1;

	for (i = 0; i < n; i++) {
		struct sbuf s = { .n = 0 };
		struct r_rqe e;
		const char *how = garbage_rqe(&e), *where;
		uint32_t slot;

		if (one_in(3)) {
			slot = rn(q->rq.num);
			put_wqe(&q->rq, slot, &e);
			where = "random";
		} else {
			slot = post_wqe(&q->rq, &e);
			where = "producer";
		}
		describe_rqe(&s, &e);
		say("garbage RQE (%s) on %s, %s slot %u: %s", how, q->name, where, slot, s.b);
	}
}

static void act_honest(void)
{
	struct fqp *q = pick_qp();
	struct sbuf s = { .n = 0 };
	struct r_sqe e;
	uint32_t slot;

	build_honest(q, &e);
	describe_sqe(&s, &e);
	if (!slot_free(&q->sq)) {
		n_busy++;
		say("honest SQE on %s: producer slot %u busy (%s)", q->name, q->sq.idx, s.b);
		return;
	}
	slot = post_wqe(&q->sq, &e);
	say("honest SQE on %s slot %u: %s", q->name, slot, s.b);
	doorbell(q);
}

/* An honest element at the producer slot (whatever the slot still holds), the doorbell,
 * then the element changed while the kernel may be reading it. */
static void act_rewrite(void)
{
	static const char *const what[] = {
		"opcode", "length", "num_sge", "VALID withdrawn", "VALID again", "all random",
		"address and key", "inline, too long",
	};
	struct fqp *q = pick_qp();
	struct sbuf s = { .n = 0 };
	struct r_sqe e, *x;
	uint32_t slot, k;
	volatile uint32_t spin;

	build_honest(q, &e);
	slot = post_wqe(&q->sq, &e);
	x = slot_at(&q->sq, slot);
	describe_sqe(&s, &e);
	say("rewrite on %s slot %u: %s", q->name, slot, s.b);
	doorbell(q);
	/* Vary the window between the doorbell and the rewrite. */
	for (spin = rn(1u << rn(14)); spin; spin--)
		;
	k = rn(8);
	switch (k) {
	case 0:
		x->opcode = (uint8_t)rnd();
		break;
	case 1:
		x->sge[0].length = pick_len();
		break;
	case 2:
		x->num_sge = (uint8_t)rnd();
		break;
	case 3:
		__atomic_store_n(&x->flags, 0, __ATOMIC_RELEASE);
		break;
	case 4:
		__atomic_store_n(&x->flags, WQE_VALID | WQE_SIGNALLED, __ATOMIC_RELEASE);
		break;
	case 5:
		random_bytes(&e, sizeof(e));
		e.flags |= WQE_VALID;
		put_wqe(&q->sq, slot, &e);
		break;
	case 6:
		x->sge[0].laddr = pick_addr();
		x->sge[0].lkey = pick_key(0);
		break;
	default:
		x->sge[0].length = INLINE_WANT + 1 + rn(256);
		__atomic_store_n(&x->flags, WQE_VALID | WQE_INLINE | WQE_SIGNALLED,
				 __ATOMIC_RELEASE);
		break;
	}
	say("  changed after the doorbell: %s", what[k]);
	if (one_in(2))
		doorbell(q);
}

static void act_cq(void)
{
	struct fcq *c = &cqs[rn(2)];
	struct r_cq_ctrl *ctrl = cq_ctrl(c);
	uint32_t slot = rn(c->r.num), i, n;
	struct r_cqe *x = slot_at(&c->r, slot), e;

	switch (rn(8)) {
	case 0:
		random_bytes(&e, sizeof(e));
		memcpy(x, &e, sizeof(e));
		say("%s slot %u: random bytes, flags 0x%x", c->name, slot, e.flags);
		break;
	case 1:
		__atomic_store_n(&x->flags, WQE_VALID, __ATOMIC_RELEASE);
		say("%s slot %u: fake VALID", c->name, slot);
		break;
	case 2:
		__atomic_store_n(&x->flags, (uint8_t)(rnd() | 2) & ~WQE_VALID, __ATOMIC_RELEASE);
		say("%s slot %u: flags without VALID", c->name, slot);
		break;
	case 3:
		n = 1 + rn(8);
		for (i = 0; i < n; i++)
			__atomic_store_n(&((struct r_cqe *)slot_at(&c->r, rn(c->r.num)))->flags, 0,
					 __ATOMIC_RELEASE);
		say("%s: flags of %u random slots cleared", c->name, n);
		break;
	case 4:
		for (i = 0; i < c->r.num; i++)
			__atomic_store_n(&((struct r_cqe *)slot_at(&c->r, i))->flags, 0,
					 __ATOMIC_RELEASE);
		say("%s: every slot given back unread", c->name);
		break;
	case 5:
		__atomic_store_n(&ctrl->flags, (uint32_t)rnd(), __ATOMIC_RELEASE);
		say("%s: control word 0x%x", c->name, ctrl->flags);
		break;
	case 6:
		__atomic_store_n(&ctrl->flags, rn(8), __ATOMIC_RELEASE);
		say("%s: control word 0x%x", c->name, ctrl->flags);
		break;
	default:
		ctrl->pad = (uint32_t)rnd();
		say("%s: control pad 0x%x", c->name, ctrl->pad);
		break;
	}
}

/*
 * A destination GID for a random address vector: ours, none, multicast, or ours with the
 * IPv4-mapped prefix broken. Never another host's: the lies stay on this device.
 */
static void pick_dgid(union ibv_gid *g)
{
	switch (rn(4)) {
	case 0:
		memset(g, 0, sizeof(*g));
		break;
	case 1:
		memset(g, 0, sizeof(*g));
		g->raw[0] = 0xff;
		g->raw[1] = 0x02;
		g->raw[15] = 1;
		break;
	case 2:
		*g = my_gid;
		g->raw[10] ^= 0xff;
		break;
	default:
		*g = my_gid;
		break;
	}
}

static void v_modify(void)
{
	struct fqp *q = pick_qp();
	struct ibv_qp_attr a;
	const int av = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	int mask, e;

	random_bytes(&a, sizeof(a));
	a.qp_state = one_in(8) ? (enum ibv_qp_state)(uint32_t)rnd() : (enum ibv_qp_state)rn(8);
	switch (rn(4)) {
	case 0:
		mask = IBV_QP_STATE;
		break;
	case 1:
		mask = IBV_QP_STATE | (int)(rnd() & ((IBV_QP_DEST_QPN << 1) - 1));
		break;
	case 2:
		mask = (int)rnd();
		break;
	default:	/* RTR with an address vector of some kind */
		mask = av;
		if (!one_in(4))
			a.qp_state = IBV_QPS_RTR;
		memset(&a.ah_attr, 0, sizeof(a.ah_attr));
		a.ah_attr.is_global = !one_in(4);
		a.ah_attr.port_num = one_in(8) ? (uint8_t)rnd() : 1;
		a.ah_attr.grh.sgid_index = one_in(4) ? (uint8_t)rnd() : gidx;
		a.ah_attr.grh.hop_limit = 1;
		a.dest_qp_num = rn(3) == 0 ? q->qp->qp_num :
				rn(2) ? peer_of(q)->qp->qp_num : rn(1u << 24);
		a.path_mtu = IBV_MTU_1024;
		break;
	}
	/* Whatever else is random, no address vector names a host that might exist. */
	if (mask & IBV_QP_AV)
		pick_dgid(&a.ah_attr.grh.dgid);
	e = note(V_MODIFY, verr(ibv_modify_qp(q->qp, &a, mask)));
	say("modify_qp %s to %s (%d), mask 0x%x: %s", q->name, state_name(a.qp_state),
	    (int)a.qp_state, mask, errname(e));
}

static void v_notify(void)
{
	struct fcq *c = &cqs[rn(2)];
	int sol = rn(2), e;

	armed = 1;	/* libsiw writes the control word */
	e = note(V_NOTIFY, verr(ibv_req_notify_cq(c->cq, sol)));
	armed = 0;
	say("req_notify_cq %s solicited=%d: %s", c->name, sol, errname(e));
}

static void v_query(void)
{
	struct fqp *q = pick_qp();
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int mask = one_in(2) ? (int)rnd() : (int)(rnd() & ((IBV_QP_RATE_LIMIT << 1) - 1));
	int e = note(V_QUERY, verr(ibv_query_qp(q->qp, &a, mask, &ia)));

	say("query_qp %s mask 0x%x: %s", q->name, mask, errname(e));
}

static int pick_access(void)
{
	switch (rn(6)) {
	case 0:
		return 0;
	case 1:		/* remote write without local write: invalid */
		return IBV_ACCESS_REMOTE_WRITE;
	case 2:
		return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND;
	case 3:
		return (int)(rnd() & 0xfff);
	default:
		return IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	}
}

/* reg_mr of an odd range, deregistered at once. */
static void v_reg_mr(void)
{
	uint8_t stack[256];
	const struct ring *r;
	uint8_t *addr;
	size_t len;
	uint64_t iova = 0;
	int access = pick_access(), use_iova = one_in(4), e;
	struct ibv_mr *m;

	switch (rn(10)) {
	case 0:
		addr = NULL;
		break;
	case 1:
		addr = (uint8_t *)(uintptr_t)1;
		break;
	case 2:
		addr = buf + 1 + rn(4095);
		break;
	case 3:
		addr = buf + BUF_LEN - 1 - rn(64);
		break;
	case 4:
		addr = buf + BUF_LEN;
		break;
	case 5:
		r = pick_ring();
		addr = r->base + rn((uint32_t)r->map_len);
		break;
	case 6:
		addr = stack + rn(sizeof(stack));
		break;
	case 7:
		addr = (uint8_t *)(uintptr_t)(0xffff888000000000ull +
					      ((uint64_t)rn(1u << 20) << 12));
		break;
	case 8:
		addr = (uint8_t *)(uintptr_t)rnd();
		break;
	default:
		addr = buf + rn(BUF_LEN);
		break;
	}
	switch (rn(10)) {
	case 0:
		len = 0;
		break;
	case 1:
		len = 1;
		break;
	case 2:
		len = 4095 + rn(3);
		break;
	case 3:
		len = BUF_LEN + rn(2);
		break;
	case 4:
		len = 1ul << 30;
		break;
	case 5:
		len = SIZE_MAX - rn(4096);
		break;
	case 6:
		len = (size_t)rnd();
		break;
	default:
		len = 1 + rn(2 * BUF_LEN);
		break;
	}
	if (use_iova)
		iova = one_in(2) ? rnd() : UINT64_MAX - rn(4096);
	m = use_iova ? ibv_reg_mr_iova(pd, addr, len, iova, access) :
		       ibv_reg_mr(pd, addr, len, access);
	e = note(V_REG_MR, m ? 0 : errno ? errno : EIO);
	if (use_iova)
		say("reg_mr %p+%zu iova 0x%llx access 0x%x: %s", (void *)addr, len,
		    (unsigned long long)iova, access, errname(e));
	else
		say("reg_mr %p+%zu access 0x%x: %s", (void *)addr, len, access, errname(e));
	if (m) {
		e = note(V_DESTROY, verr(ibv_dereg_mr(m)));
		say("  dereg_mr: %s", errname(e));
	}
}

/* A region over a ring (kept, and used as a key by later actions), or the old one gone. */
static void v_ring_mr(void)
{
	const struct ring *r = pick_ring();
	struct ibv_mr *m;
	int e;

	if (ring_mr && one_in(4)) {
		e = note(V_DESTROY, verr(ibv_dereg_mr(ring_mr)));
		say("dereg_mr of the ring region: %s", errname(e));
		if (!e)
			ring_mr = NULL;
		return;
	}
	m = ibv_reg_mr(pd, r->base, r->map_len, one_in(4) ? pick_access() :
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	e = note(V_RING_MR, m ? 0 : errno ? errno : EIO);
	say("reg_mr over a ring at %p (%zu bytes): %s%s", (void *)r->base, r->map_len,
	    errname(e), m ? ", kept" : "");
	if (!m)
		return;
	if (ring_mr) {
		e = note(V_DESTROY, verr(ibv_dereg_mr(ring_mr)));
		say("  dereg_mr of the previous one: %s", errname(e));
		if (e) {
			/* Keep the one we still hold; drop the new one. */
			note(V_DESTROY, verr(ibv_dereg_mr(m)));
			return;
		}
	}
	ring_mr = m;
}

static uint32_t pick_count(void)
{
	static const uint32_t v[] = { 0, 0, 1, 2, 64, 0xffff, 0x10000, 0xffffffff };

	return one_in(4) ? (uint32_t)rnd() : v[rn(sizeof(v) / sizeof(v[0]))];
}

/* The kernel kmallocs wqe_size bytes: nonsense, but nothing that could make it warn. */
static uint32_t pick_wqe_size(void)
{
	static const uint32_t v[] = {
		0, 1, sizeof(struct ib_uverbs_send_wr) - 1, sizeof(struct ib_uverbs_send_wr),
		sizeof(struct ib_uverbs_send_wr) + 8, 4096, 65536,
	};

	return one_in(4) ? 1 + rn(65536) : v[rn(sizeof(v) / sizeof(v[0]))];
}

static uint64_t pick_response(void *resp)
{
	switch (rn(10)) {
	case 0:
		return 0;
	case 1:
		return 0xffff888000000000ull;
	default:
		return (uintptr_t)resp;
	}
}

#define RAW_CMD_WORDS	32	/* a raw command's buffer, in u64 */

_Static_assert(RAW_CMD_WORDS * 8 >= sizeof(struct ib_uverbs_cmd_hdr) +
	       sizeof(struct ib_uverbs_post_send) + sizeof(struct ib_uverbs_send_wr) +
	       sizeof(struct ib_uverbs_sge) + 4 * 8, "raw POST_SEND, with a longer write");
_Static_assert(RAW_CMD_WORDS * 8 >= sizeof(struct ib_uverbs_cmd_hdr) +
	       sizeof(struct ib_uverbs_post_recv) + sizeof(struct ib_uverbs_recv_wr) +
	       sizeof(struct ib_uverbs_sge), "raw POST_RECV");

/* POST_SEND on cmd_fd with nonsense in it, or with a real work request (which a user QP's
 * driver must refuse: its work requests go through the ring). */
static void v_post_send(void)
{
	struct fqp *q = pick_qp();
	struct ib_uverbs_cmd_hdr hdr = { .command = IB_USER_VERBS_CMD_POST_SEND };
	struct ib_uverbs_post_send ps;
	struct ib_uverbs_send_wr wr;
	struct ib_uverbs_sge sge = { (uintptr_t)buf, 64, mr->lkey };
	struct ib_uverbs_post_send_resp resp = { 0 };
	uint64_t cmd[RAW_CMD_WORDS];
	uint8_t *p = (uint8_t *)cmd;
	size_t len, wlen;
	const char *what;
	int e;

	memset(&ps, 0, sizeof(ps));
	memset(&wr, 0, sizeof(wr));
	ps.response = (uintptr_t)&resp;
	ps.qp_handle = q->qp->handle;
	ps.wqe_size = sizeof(wr);
	wr.wr_id = HONEST_TAG | next_id++;
	wr.num_sge = 1;
	wr.opcode = rn(2) ? IB_UVERBS_WR_SEND : IB_UVERBS_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;	/* the same bits in the uverbs ABI */
	wr.wr.rdma.remote_addr = (uintptr_t)buf + BUF_LEN / 2;
	wr.wr.rdma.rkey = mr->rkey;
	len = sizeof(hdr) + sizeof(ps);
	switch (rn(5)) {
	case 0:
	case 1:
		what = "nonsense counts";
		ps.wr_count = pick_count();
		ps.sge_count = pick_count();
		ps.wqe_size = pick_wqe_size();
		break;
	case 2:
		what = "a real work request";
		ps.wr_count = 1;
		ps.sge_count = 1;
		if (one_in(4))
			wr.num_sge = (uint32_t)rnd();
		if (one_in(4))
			wr.opcode = (uint32_t)rnd();
		len += sizeof(wr) + sizeof(sge);
		break;
	case 3:
		what = "another object's handle";
		ps.qp_handle = one_in(2) ? cqs[rn(2)].cq->handle : (uint32_t)rnd();
		break;
	default:
		what = "a doorbell with the wrong length";
		break;
	}
	ps.response = pick_response(&resp);
	hdr.in_words = len / 4;
	hdr.out_words = one_in(8) ? 0 : sizeof(resp) / 4;
	memset(cmd, 0, sizeof(cmd));
	memcpy(p, &hdr, sizeof(hdr));
	memcpy(p + sizeof(hdr), &ps, sizeof(ps));
	memcpy(p + sizeof(hdr) + sizeof(ps), &wr, sizeof(wr));
	memcpy(p + sizeof(hdr) + sizeof(ps) + sizeof(wr), &sge, sizeof(sge));
	wlen = len;
	if (!strcmp(what, "a doorbell with the wrong length"))
		wlen = rn(2) ? len - 4 * (1 + rn(len / 4)) : len + 4 * (1 + rn(8));
	e = note(V_POST_SEND, cmd_write(cmd, wlen));
	say("raw POST_SEND on %s, %s: wr_count %u sge_count %u wqe_size %u, %zu of %zu bytes: %s",
	    q->name, what, ps.wr_count, ps.sge_count, ps.wqe_size, wlen, len, errname(e));
}

/* POST_RECV on cmd_fd: with one work request a user QP must refuse it. */
static void v_post_recv(void)
{
	struct fqp *q = pick_qp();
	struct ib_uverbs_cmd_hdr hdr = { .command = IB_USER_VERBS_CMD_POST_RECV };
	struct ib_uverbs_post_recv pr;
	struct ib_uverbs_recv_wr wr = { .wr_id = HONEST_TAG | next_id++, .num_sge = 1 };
	struct ib_uverbs_sge sge = { (uintptr_t)buf + BUF_LEN / 2, 4096, mr->lkey };
	struct ib_uverbs_post_recv_resp resp = { 0 };
	uint64_t cmd[RAW_CMD_WORDS];
	uint8_t *p = (uint8_t *)cmd;
	size_t len = sizeof(hdr) + sizeof(pr) + sizeof(wr) + sizeof(sge);
	int e;

	memset(&pr, 0, sizeof(pr));
	pr.response = pick_response(&resp);
	pr.qp_handle = q->qp->handle;
	pr.wr_count = one_in(4) ? 0 : 1;
	pr.sge_count = 1;
	pr.wqe_size = sizeof(wr);
	if (one_in(4))
		wr.num_sge = one_in(2) ? 255 : 0;
	if (one_in(8))
		pr.wqe_size = pick_wqe_size();
	hdr.in_words = len / 4;
	hdr.out_words = sizeof(resp) / 4;
	memcpy(p, &hdr, sizeof(hdr));
	memcpy(p + sizeof(hdr), &pr, sizeof(pr));
	memcpy(p + sizeof(hdr) + sizeof(pr), &wr, sizeof(wr));
	memcpy(p + sizeof(hdr) + sizeof(pr) + sizeof(wr), &sge, sizeof(sge));
	e = note(V_POST_RECV, cmd_write(cmd, len));
	say("raw POST_RECV on %s: wr_count %u num_sge %u wqe_size %u: %s", q->name, pr.wr_count,
	    wr.num_sge, pr.wqe_size, errname(e));
}

/* create_cq of an odd size (the driver allows up to 3276800 CQEs; nothing here makes it
 * allocate more than a few MiB, which could fail with a warning in a small VM). */
static void v_create_cq(void)
{
	static const int sizes[] = {
		0, -1, 1, 2, 3, 100, 4095, 4096, 4097, 65536, 3276801, INT_MAX, INT_MIN,
	};
	int n, vec = one_in(4) ? (int)rnd() : 0, e;
	struct ibv_cq *c;

	if (one_in(4))
		n = (int)(rnd() | 0x00400000);	/* negative, or above the driver's limit */
	else
		n = sizes[rn(sizeof(sizes) / sizeof(sizes[0]))];
	armed = 1;	/* libsiw writes the new CQ's control word */
	c = ibv_create_cq(ctx, n, NULL, NULL, vec);
	armed = 0;
	e = note(V_CREATE_CQ, c ? 0 : errno ? errno : EIO);
	say("create_cq of %d CQEs, vector %d: %s", n, vec, errname(e));
	if (c) {
		e = note(V_DESTROY, verr(ibv_destroy_cq(c)));
		say("  destroy_cq: %s", errname(e));
	}
}

static void act_verbs(void)
{
	switch (rn(10)) {
	case 0:
	case 1:
		v_modify();
		break;
	case 2:
		v_notify();
		break;
	case 3:
		v_query();
		break;
	case 4:
		v_reg_mr();
		break;
	case 5:
		v_ring_mr();
		break;
	case 6:
	case 7:
		v_post_send();
		break;
	case 8:
		v_post_recv();
		break;
	default:
		v_create_cq();
		break;
	}
}

static void act_drain(void)
{
	unsigned int a, b;

	if (one_in(2))
		sleep_us(rn(5000));
	a = drain_cq(&cqs[0]);
	b = drain_cq(&cqs[1]);
	say("drain: %u CQEs from CQ A, %u from CQ B", a, b);
}

static void destroy_qp(struct fqp *q)
{
	int e;

	/* libsiw unmaps the rings first, whatever the result. */
	memset(&q->sq, 0, sizeof(q->sq));
	memset(&q->rq, 0, sizeof(q->rq));
	e = note(V_DESTROY, verr(ibv_destroy_qp(q->qp)));
	say("destroy_qp %s (%s): %s", q->name, state_name(q->state), errname(e));
	q->qp = NULL;
}

static void act_renew(void)
{
	const char *what = "";
	int first = rn(2), e;

	destroy_qp(&qps[first]);
	destroy_qp(&qps[1 - first]);
	make_qp(&qps[0], &cqs[0]);
	make_qp(&qps[1], &cqs[1]);
	n_pairs++;
	e = connect_pair(&what);
	if (e)
		n_connect_fail++;
	say("new pair q1 QPN %u, q2 QPN %u: %s%s%s", qps[0].qp->qp_num, qps[1].qp->qp_num,
	    e ? what : "connecting", e ? ": " : "", e ? errname(e) : "");
}

static void (*const actions[NACT])(void) = {
	act_sqe, act_rqe, act_honest, act_rewrite, act_cq, act_verbs, act_drain, act_renew,
};

/* Whether an action touches the rings only (armed against faults throughout); the others
 * call into libibverbs, which must not be left half-way, and arm where they need to. */
static const int act_armed[NACT] = { 1, 1, 1, 1, 1, 0, 1, 0 };

static enum act pick_action(void)
{
	uint32_t r = rn(100);
	int a;

	for (a = 0; a < NACT - 1; a++) {
		if (r < act_weight[a])
			break;
		r -= act_weight[a];
	}
	return (enum act)a;
}

/* ---- after every round ---- */

static void read_events(void)
{
	struct ibv_async_event ev;

	while (!ibv_get_async_event(ctx, &ev)) {
		n_events++;
		n_ev_type[(unsigned int)ev.event_type < 32 ? ev.event_type : 31]++;
		say("  async event %s", ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
}

static void check_states(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		struct fqp *q = &qps[i];
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		if (verr(ibv_query_qp(q->qp, &a, IBV_QP_STATE, &ia)))
			continue;
		if ((int)a.qp_state != q->state) {
			say("  %s: %s -> %s", q->name, state_name(q->state),
			    state_name(a.qp_state));
			q->state = a.qp_state;
		}
		if (a.qp_state == IBV_QPS_ERR && !q->in_error) {
			q->in_error = 1;
			n_qp_err++;
		}
	}
}

static void add_cqes(struct sbuf *s)
{
	int i;

	sb_add(s, "cqes %lu", n_cqe_all);
	for (i = 0; i <= NSTATUS; i++)
		if (n_cqe[i])
			sb_add(s, " %s=%lu", status_name[i], n_cqe[i]);
}

static void progress(void)
{
	struct sbuf s = { .n = 0 };
	int a;

	sb_add(&s, "round %lu:", round_no);
	for (a = 0; a < NACT; a++)
		sb_add(&s, " %s=%lu", act_name[a], n_act[a]);
	sb_add(&s, "; ");
	add_cqes(&s);
	sb_add(&s, "; QPs seen in ERROR %lu of %lu", n_qp_err, 2 * n_pairs);
	printf("%s\n", s.b);
}

static void summary(unsigned long rounds)
{
	struct sbuf s = { .n = 0 };
	int i;

	sb_add(&s, "ring_fuzz: %lu rounds, %lu pair%s (%lu failed to connect), ", rounds,
	       n_pairs, n_pairs == 1 ? "" : "s", n_connect_fail);
	add_cqes(&s);
	sb_add(&s, ", QPs seen in ERROR %lu, busy slots %lu, async events %lu", n_qp_err, n_busy,
	       n_events);
	for (i = 0; i < 32; i++)
		if (n_ev_type[i])
			sb_add(&s, " %s=%lu", ibv_event_type_str((enum ibv_event_type)i),
			       n_ev_type[i]);
	sb_add(&s, "; verbs ok/failed:");
	for (i = 0; i < NVERB; i++)
		if (v_ok[i] || v_fail[i])
			sb_add(&s, " %s %lu/%lu", verb_name[i], v_ok[i], v_fail[i]);
	sb_add(&s, "; errnos:");
	for (i = 1; i < NERRNO; i++)
		if (n_errno[i])
			sb_add(&s, " %s=%lu", errname(i), n_errno[i]);
	if (n_errno[0])
		sb_add(&s, " other=%lu", n_errno[0]);
	for (i = 0; i < NERRNO && !n_errno[i]; i++)
		;
	if (i == NERRNO)
		sb_add(&s, " none");
	sb_add(&s, "; ring faults %lu; done", n_faults);
	printf("%s\n", s.b);
}

/* ---- setup and teardown ---- */

static void open_dev(const char *name)
{
	int i, fl, e;

	step("ibv_get_device_list");
	dev_list = ibv_get_device_list(NULL);
	step_done();
	if (!dev_list)
		fail("ibv_get_device_list: %s", errname(errno));
	for (i = 0; dev_list[i]; i++)
		if (!strcmp(ibv_get_device_name(dev_list[i]), name))
			break;
	if (!dev_list[i])
		fail("no RDMA device %s", name);
	step("ibv_open_device");
	ctx = ibv_open_device(dev_list[i]);
	step_done();
	if (!ctx)
		fail("ibv_open_device(%s): %s", name, errname(errno));
	fl = fcntl(ctx->async_fd, F_GETFL);
	if (fl < 0 || fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK))
		fail("async_fd: %s", errname(errno));
	step("ibv_query_gid");
	e = verr(ibv_query_gid(ctx, 1, gidx, &my_gid));
	step_done();
	if (e)
		fail("ibv_query_gid(%s, port 1, %d): %s", name, gidx, errname(e));
	for (i = 0; i < 16 && !my_gid.raw[i]; i++)
		;
	if (i == 16)
		fail("GID %d of %s is empty", gidx, name);
	if (verbose) {
		char g[64];
		size_t n = 0;

		for (i = 0; i < 16; i++)
			n += snprintf(g + n, sizeof(g) - n, "%02x%s", my_gid.raw[i],
				      i % 2 && i < 15 ? ":" : "");
		say("%s, GID %d %s", name, gidx, g);
	}
	step("ibv_alloc_pd");
	pd = ibv_alloc_pd(ctx);
	step_done();
	if (!pd)
		fail("ibv_alloc_pd: %s", errname(errno));
	buf = aligned_alloc(4096, BUF_LEN);
	if (!buf)
		fail("aligned_alloc: %s", errname(errno));
	memset(buf, 0, BUF_LEN);
	step("ibv_reg_mr");
	mr = ibv_reg_mr(pd, buf, BUF_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			IBV_ACCESS_REMOTE_WRITE);
	step_done();
	if (!mr)
		fail("ibv_reg_mr: %s", errname(errno));
	say("region %p+%u lkey 0x%x rkey 0x%x", (void *)buf, BUF_LEN, mr->lkey, mr->rkey);
}

/* The objects, the connection, the honest exchange: touching the rings, and faulting
 * there, would be the kernel's doing (armed throughout; a fault ends the setup). */
static void setup(void)
{
	const char *what = "";
	int e;

	make_cq(&cqs[0]);
	make_cq(&cqs[1]);
	make_qp(&qps[0], &cqs[0]);
	make_qp(&qps[1], &cqs[1]);
	e = connect_pair(&what);
	if (e)
		fail("modify_qp %s: %s", what, errname(e));
	exchange();
}

static int teardown_errors;

/* One teardown step's result (the step ran under the watchdog). */
static void torn(const char *what, int e)
{
	unwatch();
	if (e) {
		teardown_errors++;
		printf("ring_fuzz: teardown: %s: %s\n", what, errname(e));
	}
}

static void teardown(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		watch(STEP_SECS, "FAIL: teardown hangs in ibv_destroy_qp(%s)\n", qps[i].name);
		torn("ibv_destroy_qp", verr(ibv_destroy_qp(qps[i].qp)));
	}
	for (i = 0; i < 2; i++) {
		watch(STEP_SECS, "FAIL: teardown hangs in ibv_destroy_cq(%s)\n", cqs[i].name);
		torn("ibv_destroy_cq", verr(ibv_destroy_cq(cqs[i].cq)));
	}
	if (ring_mr) {
		watch(STEP_SECS, "FAIL: teardown hangs in ibv_dereg_mr(ring region)\n");
		torn("ibv_dereg_mr(ring region)", verr(ibv_dereg_mr(ring_mr)));
	}
	watch(STEP_SECS, "FAIL: teardown hangs in ibv_dereg_mr\n");
	torn("ibv_dereg_mr", verr(ibv_dereg_mr(mr)));
	watch(STEP_SECS, "FAIL: teardown hangs in ibv_dealloc_pd\n");
	torn("ibv_dealloc_pd", verr(ibv_dealloc_pd(pd)));
	watch(STEP_SECS, "FAIL: teardown hangs in ibv_close_device\n");
	torn("ibv_close_device", verr(ibv_close_device(ctx)));
	ibv_free_device_list(dev_list);
	free(buf);
	printf("ring_fuzz: teardown done%s\n", teardown_errors ? " (with errors)" : "");
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "FAIL: usage: ring_fuzz -d DEV -g GIDX -s SEED -n ROUNDS [-v]\n");
	exit(2);
}

static void handle(int sig, void (*fn)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_NODEFER;
	if (sigaction(sig, &sa, NULL))
		fail("sigaction: %s", errname(errno));
}

int main(int argc, char **argv)
{
	const char *dev = NULL;
	unsigned long long seed = 0;
	unsigned long rounds = 0;
	int opt, have_seed = 0, have_rounds = 0, sig;
	char *end;

	while ((opt = getopt(argc, argv, "d:g:s:n:v")) != -1) {
		switch (opt) {
		case 'd':
			dev = optarg;
			break;
		case 'g':
			gidx = (int)strtol(optarg, &end, 0);
			if (*end || gidx < 0)
				usage();
			break;
		case 's':
			seed = strtoull(optarg, &end, 0);
			if (*end)
				usage();
			have_seed = 1;
			break;
		case 'n':
			rounds = strtoul(optarg, &end, 0);
			if (*end)
				usage();
			have_rounds = 1;
			break;
		case 'v':
			verbose = 1;
			break;
		default:
			usage();
		}
	}
	if (!dev || gidx < 0 || !have_seed || !have_rounds || optind != argc)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	page = (size_t)sysconf(_SC_PAGESIZE);
	rng = seed ? seed : 0x9e3779b97f4a7c15ull;	/* xorshift needs a non-zero state */
	handle(SIGALRM, on_alarm);
	handle(SIGSEGV, on_fault);
	handle(SIGBUS, on_fault);
	printf("ring_fuzz: seed %llu (0x%llx), %lu rounds on %s, GID index %d\n", seed, seed,
	       rounds, dev, gidx);

	open_dev(dev);
	sig = guarded(setup, 1);
	if (sig)
		fail("%s during the setup, touching the rings", strsignal(sig));
	if (exchange_wrong)
		fail("the pair does not work before fuzzing: %s", exchange_wrong);
	say("the pair works");
	memset(n_cqe, 0, sizeof(n_cqe));
	n_cqe_all = 0;
	read_events();
	check_states();

	in_rounds = 1;
	for (round_no = 1; round_no <= rounds; round_no++) {
		enum act a = pick_action();

		/* Destroying a pair gets the 30 s any destroy gets. */
		watch(a == A_RENEW ? STEP_SECS : ROUND_SECS, "FAIL: round %lu hangs (%s)\n",
		      round_no, act_name[a]);
		n_act[a]++;
		sig = guarded(actions[a], act_armed[a]);
		if (sig) {
			n_faults++;
			printf("ring_fuzz: round %lu: %s touching a ring (%s)\n", round_no,
			       strsignal(sig), act_name[a]);
		}
		read_events();
		check_states();
		unwatch();
		if (round_no % PROGRESS == 0)
			progress();
	}
	round_no = rounds;
	if (rounds % PROGRESS || !rounds)
		progress();
	in_rounds = 0;
	round_no = 0;
	summary(rounds);
	teardown();
	return 0;
}
