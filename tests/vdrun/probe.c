/* SPDX-License-Identifier: MIT */
/*
 * vdrun_probe: a rank for the launcher tests (tests/test_vdrun_*.sh).  It
 * speaks PMI through src/mpi/pmi.c alone, so the launcher is tested
 * without the MPI engine.
 *
 *   vdrun_probe kvs [VALUE_LEN]   every rank puts a value derived from its
 *                                 rank and the job id, and 80 more keys,
 *                                 fences, and checks every other rank's;
 *                                 prints
 *                                 "rank R size S jobid J ok"
 *   vdrun_probe singleton         without a launcher: rank 0 of 1
 *   vdrun_probe exit R CODE       rank R exits CODE after init; the others
 *                                 wait in a PMI barrier
 *   vdrun_probe kill R            rank R is killed by SIGKILL after init
 *   vdrun_probe abort R CODE      rank R calls vd_pmi_abort(CODE, ...)
 *   vdrun_probe nofinalize R      rank R exits 0 without finalize, the
 *                                 others sleep
 *   vdrun_probe sleep             every rank sleeps after init
 * A trailing "stubborn" makes the waiting ranks ignore SIGTERM.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_internal.h"

static int rank, size;
static char jobid[64];

static void die(const char *what, int err)
{
	fprintf(stderr, "vdrun_probe: rank %d: %s: %s\n", rank, what, strerror(-err));
	exit(1);
}

/* The value rank r puts: hex digits that depend on r and the job id. */
static void value_of(int r, char *out, size_t len)
{
	unsigned long h = 1469598103UL * (unsigned long)(r + 1);
	static const char hex[] = "0123456789abcdef";

	for (const char *s = jobid; *s; s++)
		h = h * 31 + (unsigned char)*s;
	for (size_t i = 0; i + 1 < len; i++) {
		h = h * 6364136223846793005UL + 1442695040888963407UL;
		out[i] = hex[(h >> 60) & 15];
	}
	out[len - 1] = '\0';
}

/* Enough keys per rank that the launcher's store grows several times. */
#define PROBE_MANY 80

static int put_many(void)
{
	char key[48], val[96];
	int err = 0;

	for (int k = 0; k < PROBE_MANY && !err; k++) {
		snprintf(key, sizeof(key), "many-%d-%d", rank, k);
		snprintf(val, sizeof(val), "%d:%d:%s", rank, k, jobid);
		err = vd_pmi_put(key, val);
	}
	return err;
}

static int get_many(void)
{
	char key[48], want[96], got[96];

	for (int r = 0; r < size; r++)
		for (int k = 0; k < PROBE_MANY; k++) {
			snprintf(key, sizeof(key), "many-%d-%d", r, k);
			snprintf(want, sizeof(want), "%d:%d:%s", r, k, jobid);
			if (vd_pmi_get(key, got, sizeof(got)) != 0 || strcmp(got, want) != 0) {
				fprintf(stderr, "vdrun_probe: rank %d: wrong or no value for %s\n",
					rank, key);
				return 1;
			}
		}
	return 0;
}

static int mode_kvs(size_t vlen)
{
	char key[32], want[1100], got[1100];
	int err;

	if (vlen < 1 || vlen > 1000)
		vlen = 64;
	value_of(rank, want, vlen + 1);
	snprintf(key, sizeof(key), "probe-%d", rank);
	if ((err = vd_pmi_put(key, want)) != 0)
		die("put", err);
	if ((err = put_many()) != 0)
		die("put of many keys", err);
	if ((err = vd_pmi_fence()) != 0)
		die("fence", err);
	if (get_many() != 0)
		return 1;
	for (int r = 0; r < size; r++) {
		snprintf(key, sizeof(key), "probe-%d", r);
		value_of(r, want, vlen + 1);
		if ((err = vd_pmi_get(key, got, sizeof(got))) != 0)
			die("get", err);
		if (strcmp(got, want) != 0) {
			fprintf(stderr, "vdrun_probe: rank %d: wrong value for %s\n", rank, key);
			return 1;
		}
	}
	if (vd_pmi_get("no-such-key", got, sizeof(got)) != -ENOENT) {
		fprintf(stderr, "vdrun_probe: rank %d: a missing key was found\n", rank);
		return 1;
	}
	if ((err = vd_pmi_fence()) != 0)
		die("second fence", err);
	vd_pmi_finalize();
	printf("rank %d size %d jobid %s ok\n", rank, size, jobid);
	return 0;
}

static int mode_singleton(void)
{
	char want[80], got[80];

	snprintf(want, sizeof(want), "singleton-%ld", (long)getpid());
	if (rank != 0 || size != 1 || strcmp(jobid, want) != 0) {
		fprintf(stderr, "vdrun_probe: singleton is rank %d of %d, job %s\n", rank, size, jobid);
		return 1;
	}
	if (vd_pmi_put("k", "v1") || vd_pmi_fence() || vd_pmi_get("k", got, sizeof(got)) ||
	    strcmp(got, "v1") != 0 || vd_pmi_get("x", got, sizeof(got)) != -ENOENT) {
		fprintf(stderr, "vdrun_probe: singleton put/get failed\n");
		return 1;
	}
	vd_pmi_finalize();
	printf("singleton ok\n");
	return 0;
}

/* What the ranks that do not fail do meanwhile. */
static void wait_for_the_end(bool in_barrier)
{
	if (in_barrier)
		vd_pmi_fence();
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int who = argc > 2 ? atoi(argv[2]) : 0, code = argc > 3 ? atoi(argv[3]) : 1;
	int err;

	/* Before init: the launcher may stop the job as soon as any rank
	 * has done init. */
	if (strcmp(argv[argc - 1], "stubborn") == 0)
		signal(SIGTERM, SIG_IGN);
	err = vd_pmi_init(&rank, &size, jobid, sizeof(jobid));
	if (err)
		die("init", err);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(mode, "kvs") == 0)
		return mode_kvs(argc > 2 ? (size_t)atoi(argv[2]) : 64);
	if (strcmp(mode, "singleton") == 0)
		return mode_singleton();
	if (strcmp(mode, "sleep") == 0)
		wait_for_the_end(false);
	if (rank != who)
		wait_for_the_end(strcmp(mode, "nofinalize") != 0);
	if (strcmp(mode, "exit") == 0)
		exit(code);
	if (strcmp(mode, "kill") == 0)
		raise(SIGKILL);
	if (strcmp(mode, "abort") == 0)
		vd_pmi_abort(code, "probe abort, as asked");
	if (strcmp(mode, "nofinalize") == 0)
		exit(0);
	fprintf(stderr, "vdrun_probe: unknown mode '%s'\n", mode);
	return 2;
}
