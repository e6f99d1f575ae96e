// SPDX-License-Identifier: MIT
/*
 * latency.c -- the CLAN VIA paper's Table 1: half round trip of 0, 4 and 40 bytes,
 * reliable delivery, receives pre-posted, with the data path forced to
 * PIO (inline in the transfer queue), forced to DMA (process_vm_writev
 * into the receive buffer), or chosen by the provider (AUTO); completion
 * by polling VipRecvDone, and once more with blocking VipRecvWait (the
 * futex "tripwire"); and through the message ring extension
 * (viaduct_ring_send / viaduct_ring_peek), which has no descriptors.
 *
 * Each run of VIPL round trips is preceded by a run of busy-poll round
 * trips between the same two processes on the same CPUs, and the ratio
 * to that floor is taken per run pair: a noisy neighbour then slows
 * both halves of the pair alike.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench_vipl.h"

#define NR_RECVS 4              /* receives kept posted */
#define BUF_BYTES 64            /* >= the largest message, 40 */
#define WARMUP_RTS 1000

const size_t lat_sizes[NR_LAT_SIZES] = { 0, 4, 40 };

struct lat_case_info {
	const char *name;       /* CSV case */
	const char *title;
	enum viaduct_xfer_mode mode;
	bool wait;              /* VipRecvWait instead of VipRecvDone */
	bool ring;              /* message ring instead of descriptors */
};

static const struct lat_case_info cases[NR_LAT_CASES] = {
	[LAT_PIO] = { "pio", "PIO forced, VipRecvDone", VIADUCT_XFER_PIO, false },
	[LAT_DMA] = { "dma", "DMA forced, VipRecvDone", VIADUCT_XFER_DMA, false },
	[LAT_AUTO] = { "auto", "AUTO, VipRecvDone", VIADUCT_XFER_AUTO, false },
	[LAT_AUTO_WAIT] = { "auto_wait", "AUTO, VipRecvWait", VIADUCT_XFER_AUTO,
			    true },
	[LAT_RING] = { "ring", "message ring, polling", VIADUCT_XFER_AUTO, false, true },
};

/* What the client hands back through sh->result, per message size. */
struct lat_out {
	struct samples half_ns[NR_LAT_SIZES];
	struct samples ratio[NR_LAT_SIZES];
	struct samples floor_ns[NR_LAT_SIZES];
	struct viaduct_vi_stats delta[NR_LAT_SIZES];
	int sizes_done;
};

struct lat_job {
	enum lat_case c;
	uint32_t job;
};

/* One side's connection: a VI, NR_RECVS receives and one send. */
struct lat_side {
	struct ep e;
	struct area a;
	VIP_VI_HANDLE vi;
	VIP_DESCRIPTOR *sd;
	char *sbuf;
	enum role role;
	bool wait, ring;
	struct viaduct_vi_stats server_delta[NR_LAT_SIZES];
};

static int lat_setup(struct lat_side *s, const struct lat_job *j)
{
	struct viaduct_vi_ext ext = { .xfer_mode = cases[j->c].mode };
	char *bufs;

	if (ep_open(&s->e, s->role, j->job) ||
	    area_alloc(&s->e, &s->a, (NR_RECVS + 1) * (sizeof(VIP_DESCRIPTOR) +
							BUF_BYTES)) ||
	    ep_vi(&s->e, NULL, NULL, &ext, &s->vi))
		return -1;
	bufs = s->a.base + (NR_RECVS + 1) * sizeof(VIP_DESCRIPTOR);
	/* Receives are posted before the connection exists, as VIA allows. */
	for (int i = 0; i < NR_RECVS; i++) {
		VIP_DESCRIPTOR *d = area_desc(&s->a, i);

		desc_fill(d, bufs + i * BUF_BYTES, s->a.mh, BUF_BYTES);
		if (post_recv(s->vi, d, s->a.mh))
			return -1;
	}
	s->sd = area_desc(&s->a, NR_RECVS);
	s->sbuf = bufs + NR_RECVS * BUF_BYTES;
	memset(s->sbuf, 0xa5, BUF_BYTES);
	return s->role == ROLE_SERVER ? ep_accept(&s->e, s->vi)
				      : ep_connect(&s->e, s->vi);
}

static void lat_teardown(struct lat_side *s)
{
	if (s->vi) {
		VipDisconnect(s->vi);
		VipDestroyVi(s->vi);
	}
	area_free(&s->e, &s->a);
	ep_close(&s->e);
}

static int ring_recv(struct lat_side *s, size_t size)
{
	const void *m;
	VIP_UINT32 len;
	VIP_RETURN r;

	while ((r = viaduct_ring_peek(s->vi, &m, &len)) == VIP_NOT_DONE)
		if (should_stop())
			return fail("no message in the ring");
	if (r != VIP_SUCCESS)
		return vip_fail("viaduct_ring_peek", r);
	if (len != size)
		return fail("ring message of %u bytes, expected %zu", (unsigned)len, size);
	return viaduct_ring_release(s->vi) == VIP_SUCCESS ? 0 : -1;
}

static int lat_recv(struct lat_side *s, size_t size)
{
	VIP_DESCRIPTOR *d;

	if (s->ring)
		return ring_recv(s, size);
	if ((s->wait ? recv_wait(s->vi, &d) : recv_poll(s->vi, &d)) != 0)
		return -1;
	if (d->CS.Length != size)
		return fail("received %u bytes, expected %zu",
			    (unsigned)d->CS.Length, size);
	desc_rearm(d);
	return post_recv(s->vi, d, s->a.mh);
}

static int lat_send(struct lat_side *s, size_t size)
{
	if (s->ring) {
		VIP_RETURN r = viaduct_ring_send(s->vi, s->sbuf, (VIP_UINT32)size, NULL, 0);
		return r == VIP_SUCCESS ? 0 : vip_fail("viaduct_ring_send", r);
	}
	desc_fill(s->sd, size ? s->sbuf : NULL, s->a.mh, (uint32_t)size);
	return post_send(s->vi, s->sd, s->a.mh);
}

static int lat_reap(struct lat_side *s)
{
	VIP_DESCRIPTOR *d;

	if (s->ring)
		return 0;       /* nothing to reap */
	return s->wait ? send_wait(s->vi, &d) : send_poll(s->vi, &d);
}

/* `rts` round trips; the client initiates and returns ns per half. */
static double pingpong(struct lat_side *s, size_t size, int rts)
{
	uint64_t t0 = now_ns();

	for (int i = 0; i < rts; i++) {
		if (s->role == ROLE_CLIENT) {
			if (lat_send(s, size) || lat_recv(s, size) || lat_reap(s))
				return NAN;
		} else {
			if (lat_recv(s, size) || lat_send(s, size) || lat_reap(s))
				return NAN;
		}
	}
	return (double)(now_ns() - t0) / rts / 2;
}

static void stats_delta(const struct viaduct_vi_stats *a,
			const struct viaduct_vi_stats *b,
			struct viaduct_vi_stats *d)
{
	d->pio_sends = b->pio_sends - a->pio_sends;
	d->dma_sends = b->dma_sends - a->dma_sends;
	d->sends = b->sends - a->sends;
	d->waits_slept = b->waits_slept - a->waits_slept;
	d->wakes_sent = b->wakes_sent - a->wakes_sent;
}

/* Runs of (busy-poll floor, VIPL) pairs for one message size. */
static int lat_size(struct lat_side *s, int si, uint64_t *seq)
{
	struct lat_out *out = (struct lat_out *)sh->result;
	struct viaduct_vi_stats before, after;
	int iters = s->wait ? opt.lat_wait_iters : opt.lat_iters;

	if (isnan(pingpong(s, lat_sizes[si], WARMUP_RTS)))
		return -1;
	viaduct_vi_get_stats(s->vi, &before);
	for (int run = 0; run < opt.runs; run++) {
		double fl = busy_ping(s->role, seq, iters);
		double half = pingpong(s, lat_sizes[si], iters);

		if (isnan(fl) || isnan(half))
			return -1;
		if (s->role == ROLE_CLIENT) {
			samples_add(&out->floor_ns[si], fl);
			samples_add(&out->half_ns[si], half);
			samples_add(&out->ratio[si], half / fl);
		}
	}
	viaduct_vi_get_stats(s->vi, &after);
	stats_delta(&before, &after, s->role == ROLE_CLIENT ?
		    &out->delta[si] : &s->server_delta[si]);
	if (s->role == ROLE_CLIENT)
		out->sizes_done = si + 1;
	return 0;
}

static struct lat_side server_side; /* the parent's, read after the job */

static int lat_run(struct lat_side *s, const struct lat_job *j)
{
	uint64_t seq = 0;
	int rc = lat_setup(s, j);

	s->wait = cases[j->c].wait;
	s->ring = cases[j->c].ring;
	for (int si = 0; rc == 0 && si < NR_LAT_SIZES; si++)
		rc = lat_size(s, si, &seq);
	lat_teardown(s);
	return rc;
}

static int lat_server(void *arg)
{
	memset(&server_side, 0, sizeof(server_side));
	server_side.role = ROLE_SERVER;
	return lat_run(&server_side, arg);
}

static int lat_client(void *arg)
{
	struct lat_side s = { .role = ROLE_CLIENT };

	return lat_run(&s, arg);
}

/* ---- output ------------------------------------------------------------------ */

static double share(uint64_t part, uint64_t total)
{
	return total ? 100.0 * (double)part / (double)total : NAN;
}

static void print_lat_row(enum lat_case c, int si, const struct lat_out *out)
{
	const struct viaduct_vi_stats *cd = &out->delta[si];
	const struct viaduct_vi_stats *sd = &server_side.server_delta[si];
	uint64_t moved = cd->pio_sends + cd->dma_sends;
	double rts = (double)(opt.runs * (cases[c].wait ? opt.lat_wait_iters
						       : opt.lat_iters));
	double sleeps = (double)(cd->waits_slept + sd->waits_slept) / rts;
	double half = samples_median(&out->half_ns[si]);
	double ratio = samples_median(&out->ratio[si]);

	res.lat_ns[c][si] = half;
	res.lat_ratio[c][si] = ratio;
	res.lat_floor_ns[c][si] = samples_median(&out->floor_ns[si]);
	printf("  %-26s %5zu %11.1f %9.1f %8.2fx %6.0f%% %6.0f%% %9.3f\n",
	       cases[c].title, lat_sizes[si], half,
	       samples_median(&out->floor_ns[si]), ratio,
	       share(cd->pio_sends, moved), share(cd->dma_sends, moved), sleeps);
	csv_row("latency", cases[c].name, lat_sizes[si], "half_rtt_ns", half);
	csv_row("latency", cases[c].name, lat_sizes[si], "floor_ns",
		samples_median(&out->floor_ns[si]));
	csv_row("latency", cases[c].name, lat_sizes[si], "ratio_floor", ratio);
	csv_row("latency", cases[c].name, lat_sizes[si], "pio_share_pct",
		share(cd->pio_sends, moved));
	csv_row("latency", cases[c].name, lat_sizes[si], "sleeps_per_rt",
		sleeps);
}

static void run_lat_case(enum lat_case c)
{
	struct lat_out *out = (struct lat_out *)sh->result;
	struct lat_job j = { .c = c, .job = next_job() };

	memset(out, 0, sizeof(*out));
	for (int si = 0; si < NR_LAT_SIZES; si++)
		res.lat_ns[c][si] = res.lat_ratio[c][si] =
			res.lat_floor_ns[c][si] = NAN;
	if (pair_run(lat_server, lat_client, &j, 300) != 0 &&
	    out->sizes_done == 0)
		return;
	for (int si = 0; si < out->sizes_done; si++)
		print_lat_row(c, si, out);
}

void section_latency(void)
{
	printf("\n[2] the CLAN VIA paper's Table 1: half round trip, reliable delivery, %d "
	       "receives pre-posted;\n    median of %d runs of %d round trips "
	       "(%d with VipRecvWait); each run paired with a\n    busy-poll run "
	       "of as many round trips (\"floor\"); \"x floor\" is the median "
	       "per-pair ratio.\n    PIO/DMA: how the client's sends moved "
	       "(viaduct_vi_get_stats); sleeps: futex sleeps\n    per round trip, "
	       "both sides\n", NR_RECVS, opt.runs, opt.lat_iters,
	       opt.lat_wait_iters);
	printf("  %-26s %5s %11s %9s %9s %7s %7s %9s\n", "case", "bytes",
	       "half-RTT ns", "floor ns", "x floor", "PIO", "DMA", "sleeps/RT");
	for (int c = 0; c < NR_LAT_CASES; c++)
		run_lat_case((enum lat_case)c);
}
