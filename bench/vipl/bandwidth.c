// SPDX-License-Identifier: MIT
/*
 * bandwidth.c -- the CLAN VIA paper's figure 6: bandwidth against message size, a
 * 10 MB transfer per point, four receive buffers at the receiver, and
 * credit-based flow control the classic way: the sender starts with one
 * credit per receive buffer, spends one per message, and the receiver
 * returns credits in small messages (immediate data = credits, sent
 * every CREDIT_BATCH receives).  Cases: PIO forced, DMA forced, AUTO,
 * and AUTO with viaduct's flow-control extension instead of credits
 * (the sender just keeps posting; sends wait for receives in the
 * provider).
 *
 * In the AUTO job, the VIPL runs of every size are followed by as many raw
 * runs: the client process_vm_writev()s the same number of messages of
 * the same size straight into the server's four registered receive
 * buffers, with no VIPL at all -- the same processes, CPUs and memory,
 * moments apart, so that AUTO / raw compares like with like.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bench_vipl.h"

#define NR_BUFS 4               /* receive buffers (the CLAN VIA paper: four) */
#define CREDIT_BATCH 2          /* receiver returns credits in pairs */
#define NR_CREDIT_RECVS 8       /* sender's receives for credit messages */
#define NR_SENDS 8              /* send descriptors in flight at most */
#define SMALL_BUF 64
#define MIN_BW_SIZE 4096        /* never skip sizes below this */

struct bw_case_info {
	const char *name;
	const char *title;
	enum viaduct_xfer_mode mode;
	bool fc;                /* VIADUCT_VI_FLOW_CONTROL, no credits */
};

static const struct bw_case_info cases[NR_BW_CASES] = {
	[BW_PIO] = { "pio", "PIO", VIADUCT_XFER_PIO, false },
	[BW_DMA] = { "dma", "DMA", VIADUCT_XFER_DMA, false },
	[BW_AUTO] = { "auto", "AUTO", VIADUCT_XFER_AUTO, false },
	[BW_AUTO_FC] = { "auto_fc", "AUTO+FC", VIADUCT_XFER_AUTO, true },
};

struct bw_point {
	struct samples mbs;
	struct samples raw_mbs;         /* AUTO job only */
	uint64_t pio, dma;              /* the sender's sends, all runs */
};

struct bw_out {
	struct bw_point pt[MAX_SIZES];
	_Atomic uint64_t srv_bufs;      /* server's receive buffers' address */
};

struct bw_job {
	enum bw_case c;
	int first, last;                /* size indices, inclusive */
	uint32_t job;
};


struct bw_side {
	struct ep e;
	struct area data;               /* receive buffers or send buffer */
	struct area ctl;                /* descriptors and small buffers */
	VIP_VI_HANDLE vi;
	size_t stride;                  /* bytes per receive buffer */
	uint64_t posted, reaped;        /* send ring */
	const struct bw_job *j;
	enum role role;
};

static size_t job_stride(const struct bw_job *j)
{
	return sizes[j->last];
}

static int msgs_for(size_t size)
{
	size_t n = opt.bw_bytes / size;

	return n < (size_t)opt.bw_min_msgs ? opt.bw_min_msgs : (int)n;
}

/* ---- descriptors ---------------------------------------------------------- */

/* ctl area: [0, NR_SENDS) send descriptors, then the receives, then one
 * SMALL_BUF per receive. */
static VIP_DESCRIPTOR *send_desc(struct bw_side *s, uint64_t i)
{
	return area_desc(&s->ctl, i % NR_SENDS);
}

static int nr_recvs(const struct bw_side *s)
{
	return s->role == ROLE_SERVER ? NR_BUFS : NR_CREDIT_RECVS;
}

static int post_receives(struct bw_side *s)
{
	char *small = s->ctl.base + (NR_SENDS + NR_CREDIT_RECVS) *
		sizeof(VIP_DESCRIPTOR);

	for (int i = 0; i < nr_recvs(s); i++) {
		VIP_DESCRIPTOR *d = area_desc(&s->ctl, NR_SENDS + i);

		if (s->role == ROLE_SERVER)
			desc_fill(d, s->data.base + i * s->stride, s->data.mh,
				  (uint32_t)s->stride);
		else
			desc_fill(d, small + i * SMALL_BUF, s->ctl.mh, SMALL_BUF);
		if (post_recv(s->vi, d, s->ctl.mh))
			return -1;
	}
	return 0;
}

/* Wait for the oldest send when the ring is full (or for all: drain). */
static int reap_sends(struct bw_side *s, bool drain)
{
	VIP_DESCRIPTOR *d;

	while (s->posted - s->reaped >= (drain ? 1u : NR_SENDS)) {
		if (send_poll(s->vi, &d))
			return -1;
		s->reaped++;
	}
	return 0;
}

static int send_msg(struct bw_side *s, void *buf, struct area *a, size_t len,
		    bool imm, uint32_t value)
{
	VIP_DESCRIPTOR *d;

	if (reap_sends(s, false))
		return -1;
	d = send_desc(s, s->posted);
	desc_fill(d, len ? buf : NULL, a->mh, (uint32_t)len);
	if (imm)
		desc_imm(d, value);
	if (post_send(s->vi, d, s->ctl.mh))
		return -1;
	s->posted++;
	return 0;
}

/* ---- setup --------------------------------------------------------------------- */

static int bw_setup(struct bw_side *s, const struct bw_job *j)
{
	struct bw_out *out = (struct bw_out *)sh->result;
	struct viaduct_vi_ext ext = {
		.flags = cases[j->c].fc ? VIADUCT_VI_FLOW_CONTROL : 0,
		.xfer_mode = cases[j->c].mode,
	};
	size_t nbufs = s->role == ROLE_SERVER ? NR_BUFS : 1;

	s->j = j;
	s->stride = job_stride(j);
	if (ep_open(&s->e, s->role, j->job) ||
	    area_alloc(&s->e, &s->data, nbufs * s->stride) ||
	    area_alloc(&s->e, &s->ctl, (NR_SENDS + NR_CREDIT_RECVS) *
		       (sizeof(VIP_DESCRIPTOR) + SMALL_BUF)) ||
	    ep_vi(&s->e, NULL, NULL, &ext, &s->vi) || post_receives(s))
		return -1;
	if (s->role == ROLE_CLIENT)
		return ep_connect(&s->e, s->vi);
	/* Release: the client reads it (acquire) once connected. */
	atomic_store_explicit(&out->srv_bufs, (uint64_t)(uintptr_t)s->data.base,
			      memory_order_release);
	return ep_accept(&s->e, s->vi);
}

static void bw_teardown(struct bw_side *s)
{
	if (s->vi) {
		VipDisconnect(s->vi);
		VipDestroyVi(s->vi);
	}
	area_free(&s->e, &s->ctl);
	area_free(&s->e, &s->data);
	ep_close(&s->e);
}

/* ---- receiver (server) ----------------------------------------------------- */

/* The first message of a run carries the run's pattern at both ends: proof
 * that the bytes really moved, whatever the path. */
static int check_pattern(VIP_DESCRIPTOR *d, size_t size, unsigned char pat)
{
	const unsigned char *p = d->DS[0].Local.Data.Address;

	if (d->CS.Length != size)
		return fail("received %u bytes, expected %zu",
			    (unsigned)d->CS.Length, size);
	if (size && (p[0] != pat || p[size - 1] != pat))
		return fail("%zu-byte message: data not delivered (0x%02x/0x%02x,"
			    " expected 0x%02x)", size, p[0], p[size - 1], pat);
	return 0;
}

static int recv_run(struct bw_side *s, size_t size, int nmsg, unsigned char pat)
{
	bool fc = cases[s->j->c].fc;
	uint32_t pending = 0;
	VIP_DESCRIPTOR *d;

	for (int got = 1; got <= nmsg; got++) {
		if (recv_poll(s->vi, &d))
			return -1;
		if ((got == 1 || d->CS.Length != size) &&
		    check_pattern(d, size, pat))
			return -1;
		desc_rearm(d);
		if (post_recv(s->vi, d, s->ctl.mh))
			return -1;
		pending++;
		if (fc ? got == nmsg : (pending == CREDIT_BATCH || got == nmsg)) {
			if (send_msg(s, NULL, &s->ctl, 0, true, pending))
				return -1;
			pending = 0;
		}
	}
	return 0;
}

/* ---- sender (client) ----------------------------------------------------- */

/* Take one credit message (or the final acknowledgement); its count. */
static int take_credits(struct bw_side *s, uint32_t *credits)
{
	VIP_DESCRIPTOR *d;

	if (recv_poll(s->vi, &d))
		return -1;
	if (!(d->CS.Status & VIP_STATUS_IMMEDIATE))
		return fail("credit message without immediate data");
	*credits += d->CS.ImmediateData;
	desc_rearm(d);
	return post_recv(s->vi, d, s->ctl.mh);
}

static int send_run_credits(struct bw_side *s, size_t size, int nmsg)
{
	uint32_t credits = NR_BUFS;

	for (int sent = 0; sent < nmsg; sent++) {
		while (credits == 0)
			if (take_credits(s, &credits))
				return -1;
		if (send_msg(s, s->data.base, &s->data, size, false, 0))
			return -1;
		credits--;
	}
	/* All credits back: the receiver holds every message. */
	while (credits < NR_BUFS)
		if (take_credits(s, &credits))
			return -1;
	return reap_sends(s, true);
}

/* Flow-control extension: no credits; the provider holds back a send
 * until the receiver has posted a receive for it. */
static int send_run_fc(struct bw_side *s, size_t size, int nmsg)
{
	uint32_t acked = 0;

	for (int sent = 0; sent < nmsg; sent++)
		if (send_msg(s, s->data.base, &s->data, size, false, 0))
			return -1;
	if (reap_sends(s, true) || take_credits(s, &acked))
		return -1;
	return acked == (uint32_t)nmsg ? 0 : fail("acknowledged %u of %d",
						   acked, nmsg);
}

/* The same messages with nothing but process_vm_writev, into the server's
 * receive buffers in turn. */
static int raw_run(struct bw_side *s, size_t size, int nmsg, double *mbs)
{
	struct bw_out *out = (struct bw_out *)sh->result;
	/* Acquire: pairs with the server's release store in bw_setup(). */
	char *dst = (char *)(uintptr_t)atomic_load_explicit(
		&out->srv_bufs, memory_order_acquire);
	pid_t server = getppid();
	uint64_t t0 = now_ns();

	for (int k = 0; k < nmsg; k++) {
		struct iovec l = { s->data.base, size };
		struct iovec r = { dst + (size_t)(k % NR_BUFS) * s->stride, size };

		if (process_vm_writev(server, &l, 1, &r, 1, 0) != (ssize_t)size)
			return fail("raw process_vm_writev: %s", strerror(errno));
	}
	*mbs = (double)size * nmsg / (double)(now_ns() - t0) * 1e3;
	return 0;
}

/* Run -1 is an untimed warm-up at the start of every point, a quarter of
 * the messages: the first messages at a new size, and the first after
 * the previous point's raw runs (which sweep the receiver's caches), pay
 * for cold caches and queue state that a short run cannot amortise. */
#define WARMUP_RUN (-1)

static int run_msgs(size_t size, int run)
{
	int n = msgs_for(size);

	if (run != WARMUP_RUN)
		return n;
	return n / 4 < opt.bw_min_msgs ? opt.bw_min_msgs : n / 4;
}

static unsigned char pattern(int si, int run)
{
	return (unsigned char)(0x11 + si * 7 + run);
}

static int send_one_run(struct bw_side *s, int si, int run, double *mbs)
{
	size_t size = sizes[si];
	int nmsg = run_msgs(size, run), rc;
	uint64_t t0;

	s->data.base[0] = s->data.base[size - 1] = (char)pattern(si, run);
	t0 = now_ns();
	rc = cases[s->j->c].fc ? send_run_fc(s, size, nmsg)
			       : send_run_credits(s, size, nmsg);
	*mbs = (double)size * nmsg / (double)(now_ns() - t0) * 1e3;
	return rc;
}

/* Warm-up, the timed VIPL runs, then (AUTO) as many raw runs. */
static int send_point(struct bw_side *s, int si)
{
	struct bw_point *pt = &((struct bw_out *)sh->result)->pt[si];
	struct viaduct_vi_stats before, after;
	double mbs;

	if (send_one_run(s, si, WARMUP_RUN, &mbs))
		return -1;
	viaduct_vi_get_stats(s->vi, &before);
	for (int run = 0; run < opt.bw_runs; run++) {
		if (send_one_run(s, si, run, &mbs))
			return -1;
		samples_add(&pt->mbs, mbs);
	}
	viaduct_vi_get_stats(s->vi, &after);
	pt->pio = after.pio_sends - before.pio_sends;
	pt->dma = after.dma_sends - before.dma_sends;
	for (int run = 0; s->j->c == BW_AUTO && run < opt.bw_runs; run++) {
		if (raw_run(s, sizes[si], msgs_for(sizes[si]), &mbs))
			return -1;
		samples_add(&pt->raw_mbs, mbs);
	}
	return 0;
}

/* ---- the two roles --------------------------------------------------------- */

static int bw_side_run(struct bw_side *s)
{
	for (int si = s->j->first; si <= s->j->last; si++) {
		for (int run = WARMUP_RUN; s->role == ROLE_SERVER &&
		     run < opt.bw_runs; run++)
			if (recv_run(s, sizes[si], run_msgs(sizes[si], run),
				     pattern(si, run)))
				return -1;
		if (s->role == ROLE_CLIENT) {
			if (send_point(s, si))
				return -1;
			/* Release: the parent reads it after the child exits,
			 * the server before it unmaps its buffers. */
			atomic_store_explicit(&sh->progress, (uint32_t)si + 1,
					      memory_order_release);
		}
	}
	return 0;
}

/* The client's raw runs write into our receive buffers after the last
 * VIPL message: keep them mapped until it has finished its last point. */
static int await_client(const struct bw_job *j)
{
	/* Acquire: pairs with the client's release store of progress. */
	while (atomic_load_explicit(&sh->progress, memory_order_acquire) <
	       (uint32_t)j->last + 1)
		if (should_stop())
			return -1;
	return 0;
}

static int bw_server(void *arg)
{
	struct bw_side s = { .role = ROLE_SERVER };
	int rc = bw_setup(&s, arg);

	if (rc == 0)
		rc = bw_side_run(&s);
	if (rc == 0)
		rc = await_client(arg);
	bw_teardown(&s);
	return rc;
}

static int bw_client(void *arg)
{
	struct bw_side s = { .role = ROLE_CLIENT };
	int rc = bw_setup(&s, arg);

	if (rc == 0)
		rc = bw_side_run(&s);
	bw_teardown(&s);
	return rc;
}

/* ---- driver and output ------------------------------------------------------ */

#define BW_JOB_LIMIT_S 300
#define MAX_FRUITLESS 2         /* failed jobs in a row before giving up */

static double dma_share[MAX_SIZES];  /* AUTO: share of sends moved by DMA */

static void collect_point(enum bw_case c, int si, const struct bw_point *pt)
{
	res.bw_mbs[c][si] = samples_median(&pt->mbs);
	if (c != BW_AUTO)
		return;
	res.bw_raw_mbs[si] = samples_median(&pt->raw_mbs);
	res.bw_auto_ratio[si] = res.bw_mbs[c][si] / res.bw_raw_mbs[si];
	dma_share[si] = pt->pio + pt->dma ?
		100.0 * (double)pt->dma / (double)(pt->pio + pt->dma) : NAN;
}

/* One job per case; a job that fails at some size is restarted (new
 * processes, new connection) from the next size, so that one refused
 * size does not cost the rest of the curve. */
static void run_bw_case(enum bw_case c)
{
	struct bw_out *out = (struct bw_out *)sh->result;
	int first = 0, fruitless = 0;

	while (first < res.nr_bw_sizes && fruitless < MAX_FRUITLESS) {
		struct bw_job j = { c, first, res.nr_bw_sizes - 1, next_job() };
		int rc, done;
		char label[32];

		memset(out, 0, sizeof(*out));
		rc = pair_run(bw_server, bw_client, &j, BW_JOB_LIMIT_S);
		/* The child has exited: waitpid() ordered its last store. */
		done = (int)atomic_load(&sh->progress);
		for (int si = first; si < done; si++)
			collect_point(c, si, &out->pt[si]);
		if (rc == 0)
			return;
		first = done > first ? done : first;
		fruitless = done > j.first ? 0 : fruitless + 1;
		printf("  (%s, %s: failed; continuing with the next size)\n",
		       cases[c].title, size_label(sizes[first], label,
						  sizeof(label)));
		first++;
	}
	if (first < res.nr_bw_sizes)
		printf("  (%s: giving up after %d failed jobs in a row)\n",
		       cases[c].title, fruitless);
}

static void print_mbs(double v)
{
	if (isnan(v))
		printf(" %9s", "-");
	else
		printf(" %9.0f", v);
}

static void print_bw_row(int si)
{
	char label[32];

	printf("  %-9s", size_label(sizes[si], label, sizeof(label)));
	for (int c = 0; c < NR_BW_CASES; c++) {
		print_mbs(res.bw_mbs[c][si]);
		if (!isnan(res.bw_mbs[c][si]))
			csv_row("bandwidth", cases[c].name, sizes[si], "mb_per_s",
				res.bw_mbs[c][si]);
	}
	print_mbs(res.bw_raw_mbs[si]);
	printf(" %8.3f %7.0f%%\n", res.bw_auto_ratio[si], dma_share[si]);
	if (isnan(res.bw_raw_mbs[si]))
		return;
	csv_row("bandwidth", "raw_pvw", sizes[si], "mb_per_s",
		res.bw_raw_mbs[si]);
	csv_row("bandwidth", "auto", sizes[si], "ratio_raw",
		res.bw_auto_ratio[si]);
	csv_row("bandwidth", "auto", sizes[si], "dma_share_pct", dma_share[si]);
}

/* The receiver registers NR_BUFS buffers of the largest size; keep that
 * within half the memlock budget (the provider registers memory too). */
static size_t largest_registrable(void)
{
	size_t budget = memlock_budget(), max = BW_MAX_SIZE;

	while (budget != SIZE_MAX && max > MIN_BW_SIZE &&
	       NR_BUFS * max > budget / 2)
		max /= 2;
	return max;
}

void section_bandwidth(void)
{
	size_t max = largest_registrable();
	char label[32];

	res.nr_bw_sizes = 0;
	while (res.nr_bw_sizes < nr_sizes && sizes[res.nr_bw_sizes] <= max)
		res.nr_bw_sizes++;
	for (int si = 0; si < MAX_SIZES; si++) {
		for (int c = 0; c < NR_BW_CASES; c++)
			res.bw_mbs[c][si] = NAN;
		res.bw_raw_mbs[si] = res.bw_auto_ratio[si] = dma_share[si] = NAN;
	}
	printf("\n[3] the CLAN VIA paper's figure 6: bandwidth, %zu MiB (at least %d "
	       "messages) per run, %d receive buffers,\n    credits returned "
	       "every %d receives; AUTO+FC: VIADUCT_VI_FLOW_CONTROL instead of "
	       "credits;\n    raw pvw: the same messages by process_vm_writev "
	       "into the same buffers, right after\n    the AUTO runs of each "
	       "size; DMA: share of AUTO sends moved by DMA; each size starts\n"
	       "    with an untimed warm-up run. MB/s = 10^6 bytes/s, median of "
	       "%d runs\n", opt.bw_bytes / MIB,
	       opt.bw_min_msgs, NR_BUFS, CREDIT_BATCH, opt.bw_runs);
	if (max < BW_MAX_SIZE)
		printf("  sizes above %s skipped: RLIMIT_MEMLOCK without "
		       "CAP_IPC_LOCK\n", size_label(max, label, sizeof(label)));
	for (int c = 0; c < NR_BW_CASES; c++)
		run_bw_case((enum bw_case)c);
	printf("  %-9s %9s %9s %9s %9s %9s %8s %8s\n", "size", "PIO", "DMA",
	       "AUTO", "AUTO+FC", "raw pvw", "AUTO/raw", "DMA");
	for (int si = 0; si < res.nr_bw_sizes; si++)
		print_bw_row(si);
}
