/* SPDX-License-Identifier: MIT */
/*
 * The size up to which a message to a rank on the same host goes through
 * the message ring (eager, then pipelined), measured on this machine at
 * MPI_Init instead of fixed.
 *
 * The ring copies a message twice, once on each core (the sender's copy
 * in, the receiver's copy out); get copies it once (process_vm_readv)
 * after a request and before an answer.  Where one protocol overtakes
 * the other depends on how fast the machine moves data between two cores
 * against what the system call costs: on one VM pipelining won to 128 KiB,
 * on another get won from 8 KiB, 1.3-2.2x (docs/bench-mpi.md).  So the
 * host's first two ranks time both with a short ping-pong at the sizes in
 * between, the first publishes the largest size at which the ring was not
 * beaten, and every rank of the host reads it after a PMI fence.
 *
 * The two fences happen whenever some host has two ranks or more, so that
 * every rank of the job takes part whatever its environment says: before
 * the first the pair say whether they would measure (one may opt out,
 * with VIADUCT_MPI_TUNE=0 or a switch point set by hand, without the
 * other waiting for it), before the second the first publishes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"

#define TAG_DATA 1              /* MPI_Finalize uses 2 on this context (init.c) */

#define TUNE_SIZES 6            /* 4 KiB to 128 KiB */
#define TUNE_MIN (4u * 1024)
#define TUNE_PASSES 3
#define TUNE_RUN 6              /* round trips in a row, the first not timed */
#define TUNE_SAMPLES (TUNE_PASSES * (TUNE_RUN - 1))
/* get must be this much faster to move the switch point: a system call
 * costs the kernel more than a copy does, and noise is not a reason. */
#define TUNE_MARGIN 0.95

static size_t tune_size(int i)
{
	return (size_t)TUNE_MIN << i;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The host's two lowest world ranks (b -1 when alone). */
static void host_pair(int *a, int *b)
{
	int node = vd_place_node(vd_mpi.rank);

	*a = *b = -1;
	for (int r = 0; r < vd_mpi.size && *b < 0; r++) {
		if (vd_place_node(r) != node)
			continue;
		if (*a < 0)
			*a = r;
		else
			*b = r;
	}
}

/* This rank's environment leaves the switch points to the measurement:
 * none set by hand, no protocol forced, VIADUCT_MPI_TUNE not 0. */
static bool env_allows_tuning(void)
{
	static const char *const by_hand[] = {
		"VIADUCT_MPI_LARGE", "VIADUCT_MPI_EAGER_MAX", "VIADUCT_MPI_PIPELINE_MAX",
		"VIADUCT_MPI_SPLIT_MIN",
	};
	uint64_t on = 1, forced = 0;

	if (viaduct_param_uint("VIADUCT_MPI_TUNE", 1, &on) || !on ||
	    viaduct_param_uint("VIADUCT_MPI_PROTOCOL", 0, &forced) || forced)
		return false;           /* forced: index 0 is auto */
	for (size_t i = 0; i < sizeof(by_hand) / sizeof(by_hand[0]); i++)
		if (getenv(by_hand[i]))
			return false;
	return true;
}

/* This rank of the pair would measure: its environment allows it and
 * the peer is reached through shm. */
static bool want_tuning(int peer)
{
	return env_allows_tuning() && vd_place_via(peer) == VD_T_SHM;
}

static int send_bytes(const void *buf, size_t len, int peer, int tag)
{
	MPI_Request req;
	int err = vd_isend(buf, (int)len, MPI_BYTE, peer, tag, vd_comm_get(MPI_COMM_WORLD),
			   VD_CTX_TUNE, VD_SEND_STD, &req);

	if (err)
		return err;
	return vd_wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS ? 0 : -EIO;
}

static int recv_bytes(void *buf, size_t len, int peer, int tag)
{
	MPI_Request req;
	int err = vd_irecv(buf, (int)len, MPI_BYTE, peer, tag, vd_comm_get(MPI_COMM_WORLD),
			   VD_CTX_TUNE, &req);

	if (err)
		return err;
	return vd_wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS ? 0 : -EIO;
}

/* One round trip of len bytes with protocol f (the echoing side answers
 * in kind); its time in us on the timing side.  Sent from buf, received
 * into the half above it, as the field's benchmarks do: a buffer that is
 * both is also the one the peer last read, and every copy into it first
 * takes its lines back from the other core (get twice as slow at 32 KiB
 * here, the ring hardly). */
static int round_trip(bool timing, int peer, enum vd_proto_force f, char *buf, size_t len,
		      double *us)
{
	char *in = buf + tune_size(TUNE_SIZES - 1);
	double t0 = now_us();
	int err;

	vd_proto_force(f);
	if (timing) {
		err = send_bytes(buf, len, peer, TAG_DATA);
		if (!err)
			err = recv_bytes(in, len, peer, TAG_DATA);
	} else {
		err = recv_bytes(in, len, peer, TAG_DATA);
		if (!err)
			err = send_bytes(buf, len, peer, TAG_DATA);
	}
	vd_proto_force(VD_FORCE_NONE);
	*us = now_us() - t0;
	return err;
}

static double lowest(const double *v, int n)
{
	double m = v[0];

	for (int i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

/* What the pair measured: the fastest round trips (us) by protocol and size,
 * split only from SPLIT_FIRST (two halves of a few KiB gain nothing). */
enum { T_RING, T_GET, T_SPLIT, T_N };
#define SPLIT_FIRST 2           /* 16 KiB */
struct timings {
	double us[T_N][TUNE_SIZES];
};

/* The switch points the host uses; 0: the built-in one stays. */
struct choice {
	size_t ring_max, split_min;
};

static bool measured(int proto, int i)
{
	return proto != T_SPLIT || i >= SPLIT_FIRST;
}

/* What a message of size i would use instead of the ring: split where
 * it will be used (from split_min, 0: not in the measured range), else
 * get. */
static double read_us(const struct timings *t, int i, size_t split_min)
{
	return split_min && tune_size(i) >= split_min ? t->us[T_SPLIT][i] : t->us[T_GET][i];
}

/* Split from the smallest size from which on it beat get by the margin
 * at every size measured; then the ring up to the size below the first
 * one where what replaces it beat it by the margin -- but never below
 * the smallest size measured (below it nothing says get would win). */
static struct choice choose(const struct timings *t)
{
	struct choice c = { 0, 0 };

	for (int i = TUNE_SIZES - 1; i >= SPLIT_FIRST; i--) {
		if (!(t->us[T_SPLIT][i] < t->us[T_GET][i] * TUNE_MARGIN))
			break;
		c.split_min = tune_size(i);
	}
	for (int i = 0; i < TUNE_SIZES; i++)
		if (read_us(t, i, c.split_min) < t->us[T_RING][i] * TUNE_MARGIN) {
			c.ring_max = tune_size(i > 0 ? i - 1 : 0);
			break;
		}
	return c;
}

static bool debugging(void)
{
	uint64_t dbg = 0;

	return viaduct_param_uint("VIADUCT_DEBUG", 0, &dbg) == 0 && dbg;
}

/* One write for the whole line: the pairs of other hosts report at the
 * same moment into the same stream, and pieces of lines would mix. */
static void report(const struct timings *t)
{
	char line[512] = "";
	size_t n = 0;

	if (!debugging())
		return;
	for (int i = 0; i < TUNE_SIZES && n < sizeof(line); i++) {
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %zuK %.1f/%.1f",
				      tune_size(i) / 1024, t->us[T_RING][i], t->us[T_GET][i]);
		if (measured(T_SPLIT, i) && n < sizeof(line))
			n += (size_t)snprintf(line + n, sizeof(line) - n, "/%.1f",
					      t->us[T_SPLIT][i]);
	}
	fprintf(stderr, "viaduct MPI: rank %d: round trips inside this host, "
		"ring / get / split, us:%s\n", vd_mpi.rank, line);
}

/* Both sides walk the same schedule: TUNE_PASSES passes over the sizes,
 * each size a run of TUNE_RUN round trips with each protocol in turn,
 * the first of each run not counted (it finds the other protocol's state
 * in the caches; the field's benchmarks time a protocol in a run too).
 * The timing side keeps the fastest of each: what the protocol costs in
 * a steady state, as a latency benchmark sees it; noise (the peer not
 * yet running, an interrupt) only ever adds. */
static int measure(bool timing, int peer, char *buf, struct timings *out)
{
	static const enum vd_proto_force force[T_N] = {
		VD_FORCE_RING, VD_FORCE_GET, VD_FORCE_SPLIT,
	};
	double t[T_N][TUNE_SIZES][TUNE_SAMPLES];
	int err = 0;

	for (int k = 0; k < TUNE_PASSES; k++)
		for (int i = 0; i < TUNE_SIZES; i++)
			for (int p = 0; p < T_N; p++)
				for (int j = 0; j < TUNE_RUN && measured(p, i); j++) {
					double us;

					err = round_trip(timing, peer, force[p], buf, tune_size(i), &us);
					if (err)
						return err;
					if (j > 0)
						t[p][i][k * (TUNE_RUN - 1) + j - 1] = us;
				}
	for (int p = 0; p < T_N; p++)
		for (int i = 0; i < TUNE_SIZES; i++)
			out->us[p][i] = measured(p, i) ? lowest(t[p][i], TUNE_SAMPLES) : 0;
	return 0;
}

/* Whether the pair's other rank wants to measure: it said so before the
 * fence that precedes this. */
static int peer_wants(int peer, bool *yes)
{
	char key[32], val[8];
	int err;

	snprintf(key, sizeof(key), "vd-tune-want-%d", peer);
	if ((err = vd_pmi_get_from(peer, key, val, sizeof(val))))
		return err;
	*yes = strcmp(val, "1") == 0;
	return 0;
}

/* The pair's part, after both said what they want: measure if both do;
 * the first of them chooses. */
static int tune_pair(bool first, int peer, struct choice *c)
{
	struct timings t;
	bool theirs = false;
	char *buf;
	int err;

	if ((err = peer_wants(peer, &theirs)) || !theirs || !want_tuning(peer))
		return err;
	buf = calloc(2, tune_size(TUNE_SIZES - 1));
	if (!buf)
		return -ENOMEM;
	err = measure(first, peer, buf, &t);
	free(buf);
	if (!err && first) {
		*c = choose(&t);
		report(&t);
	}
	return err;
}

/* 0 or one of the sizes the pair measures. */
static bool size_measured(unsigned long long v)
{
	for (int i = 0; i < TUNE_SIZES; i++)
		if (v == tune_size(i))
			return true;
	return v == 0;
}

/* The pair's first rank publishes; the host's other ranks (the pair's
 * second too) read it after the fence. */
static int share(int a, int b, struct choice *c)
{
	char key[32], val[48];
	unsigned long long rmax, smin;
	int err, end = 0;

	snprintf(key, sizeof(key), "vd-switch-%d", vd_place_node(vd_mpi.rank));
	if (vd_mpi.rank == a && b >= 0) {
		snprintf(val, sizeof(val), "%zu,%zu", c->ring_max, c->split_min);
		if ((err = vd_pmi_put(key, val)))
			return err;
	}
	if ((err = vd_pmi_fence()) || vd_mpi.rank == a || b < 0)
		return err;
	if ((err = vd_pmi_get_from(a, key, val, sizeof(val))))
		return err;
	/* The launcher's key-value space is the job's own: still, anything
	 * but two measured sizes (or 0) and nothing after them is refused. */
	if (sscanf(val, "%llu,%llu%n", &rmax, &smin, &end) != 2 || val[end] != '\0' ||
	    !size_measured(rmax) || !size_measured(smin))
		return -EPROTO;
	*c = (struct choice){ (size_t)rmax, (size_t)smin };
	return 0;
}

/* VIADUCT_DEBUG=1: what every rank of a host with a pair uses. */
static void report_choice(struct choice c)
{
	char split[64] = "split from the built-in size";

	if (!debugging())
		return;
	if (c.split_min)
		snprintf(split, sizeof(split), "split from %zu bytes (measured)", c.split_min);
	if (c.ring_max)
		fprintf(stderr, "viaduct MPI: rank %d: inside this host, the ring up to %zu bytes "
			"(measured), get above, %s\n", vd_mpi.rank, c.ring_max, split);
	else
		fprintf(stderr, "viaduct MPI: rank %d: inside this host, the built-in switch "
			"points, %s\n", vd_mpi.rank, split);
}

/* Every rank takes part in both fences, whatever it wants: the pair says
 * whether it would measure (its environment may differ from the other's),
 * measures if both would, and the first publishes. */
int vd_tune_init(void)
{
	struct choice c = { 0, 0 };
	int a, b, peer, err = 0;
	bool pair;

	/* Every rank skips the fences alike: the node map is the job's. */
	if (vd_place_most_local() < 2)
		return 0;
	host_pair(&a, &b);
	pair = b >= 0 && (vd_mpi.rank == a || vd_mpi.rank == b);
	peer = vd_mpi.rank == a ? b : a;
	if (pair) {
		char key[32];

		snprintf(key, sizeof(key), "vd-tune-want-%d", vd_mpi.rank);
		err = vd_pmi_put(key, want_tuning(peer) ? "1" : "0");
	}
	if (!err)
		err = vd_pmi_fence();
	if (!err && pair)
		err = tune_pair(vd_mpi.rank == a, peer, &c);
	if (!err)
		err = share(a, b, &c);
	if (err)
		return err;
	/* A rank whose own environment sets the switch points keeps them,
	 * whatever the pair measured. */
	if (!env_allows_tuning())
		c = (struct choice){ 0, 0 };
	if (c.ring_max)
		vd_proto_ring_max(c.ring_max);
	if (c.split_min)
		vd_proto_split_min(c.split_min);
	if (b >= 0)
		report_choice(c);
	return 0;
}
