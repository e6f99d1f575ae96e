/* SPDX-License-Identifier: MIT */
/*
 * A hostile member of a node-local collective's shared segment.
 *
 *   coll_shm_hostile COLL ATTACK AFTER HOSTILE [now]
 *
 * Every rank runs ROUNDS rounds of COLL on MPI_COMM_WORLD (barrier,
 * bcast, bcast_large, reduce, reduce_large, allreduce, allreduce_large,
 * allgather, allgather_large), each result checked.  Rank HOSTILE plays
 * fair until round ATTACK_ROUND; there it stays out of the collective
 * for a moment, so the others are inside it waiting ("now": at once,
 * between two collectives, whatever the others are doing), finds the
 * segment's mapping in its own /proc/self/maps and writes into it
 * (ATTACK):
 *
 *   ahead, behind   every member's phase counter moved 2^30 phases
 *   max             counters 0xffffffff, 0x7fffffff, 0x80000000, 0 in
 *                   turn, every sleeper count 0xffffffff
 *   random          random bytes over every member's control line
 *   own_ahead       its own counter 2^30 phases ahead
 *   plus1, minus1   its own counter one phase ahead / behind
 *   sleepers        every sleeper count and the lines' spare bytes
 *                   (0, 0xffffffff, random)
 *   data            random bytes over all data areas
 *   remove          every page of the segment dropped (MADV_REMOVE: the
 *                   others find zeros where the counters were)
 *   truncate        the segment's file cut to length 0 (through
 *                   /proc/self/map_files, which needs CAP_SYS_ADMIN)
 *
 * then (AFTER) stops participating but stays alive ("stop", for 30 s),
 * ends its process ("exit") or goes on with the remaining rounds
 * ("continue").  The other ranks must end, with the library's message,
 * or finish; each honest rank that finishes prints
 * "RESULT rank R wrong W of C" (wrong results: what the library cannot
 * detect); the runner (tests/test_mpi_coll_shm_hostile.sh) judges.
 *
 * The layout is white-box knowledge of src/mpi/coll_shm.c: one 64-byte
 * line per member (phase counter, then its sleeper count) in the first
 * page, then the data areas.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "mpitest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/random.h>

#define ROUNDS 24
#define ATTACK_ROUND 8
#define CTL_LINE 64             /* src/mpi/coll_shm.c: SHM_LINE */
#define CTL_LEN 4096            /* the lines, page aligned (up to 64 members) */
#define MAXN 100000             /* ints per buffer (Allgather: all pieces) */

enum coll { BARRIER, BCAST, BCAST_LARGE, REDUCE, REDUCE_LARGE, ALLREDUCE, ALLREDUCE_LARGE,
	    ALLGATHER, ALLGATHER_LARGE, NCOLL };
static const char *const coll_names[NCOLL] = {
	"barrier", "bcast", "bcast_large", "reduce", "reduce_large", "allreduce",
	"allreduce_large", "allgather", "allgather_large"
};
/* Elements (ints) per call: the large ones take several chunks (32 KiB
 * slots and Bcast chunks), Bcast's more than the 8 areas. */
static const int coll_count[NCOLL] = { 0, 100, 60000, 500, 40000, 500, 40000, 300, 20000 };

static int *buf_a, *buf_b;

static int value(int round, int rank, int i)
{
	return (round * 131 + rank * 17 + i) % 1000;
}

/* ---- the collectives, checked ---------------------------------------------- */

/* One round: the number of wrong elements this rank received. */
static int run_round(enum coll c, int round)
{
	int n = coll_count[c], root = round % mt_size, wrong = 0;

	switch (c) {
	case BARRIER:
		MPI_Barrier(MPI_COMM_WORLD);
		return 0;
	case BCAST:
	case BCAST_LARGE:
		for (int i = 0; i < n; i++)
			buf_a[i] = mt_rank == root ? value(round, root, i) : -1;
		MPI_Bcast(buf_a, n, MPI_INT, root, MPI_COMM_WORLD);
		for (int i = 0; i < n; i++)
			wrong += buf_a[i] != value(round, root, i);
		return wrong;
	case REDUCE:
	case REDUCE_LARGE:
	case ALLREDUCE:
	case ALLREDUCE_LARGE:
		for (int i = 0; i < n; i++) {
			buf_a[i] = value(round, mt_rank, i);
			buf_b[i] = -1;
		}
		if (c == REDUCE || c == REDUCE_LARGE)
			MPI_Reduce(buf_a, buf_b, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
		else
			MPI_Allreduce(buf_a, buf_b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		if ((c == REDUCE || c == REDUCE_LARGE) && mt_rank != root)
			return 0;
		for (int i = 0; i < n; i++) {
			int want = 0;

			for (int k = 0; k < mt_size; k++)
				want += value(round, k, i);
			wrong += buf_b[i] != want;
		}
		return wrong;
	default:
		for (int k = 0; k < mt_size; k++)
			for (int i = 0; i < n; i++)
				buf_a[k * n + i] = k == mt_rank ? value(round, k, i) : -1;
		MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf_a, n, MPI_INT,
			      MPI_COMM_WORLD);
		for (int k = 0; k < mt_size; k++)
			for (int i = 0; i < n; i++)
				wrong += buf_a[k * n + i] != value(round, k, i);
		return wrong;
	}
}

/* ---- the hostile member ------------------------------------------------------ */

struct segment {
	char *base;
	size_t len;
	char range[64];         /* "start-end" as in /proc/self/maps */
};

/* The segment's mapping in this process: the memfd (or the named object
 * of the fallback) the library made for MPI_COMM_WORLD. */
static bool find_segment(struct segment *seg)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (!strstr(line, "vd-mpi-coll") || sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		seg->base = (char *)lo;
		seg->len = hi - lo;
		snprintf(seg->range, sizeof(seg->range), "%lx-%lx", lo, hi);
		found = true;
	}
	if (f)
		fclose(f);
	return found;
}

static _Atomic uint32_t *word(const struct segment *seg, int member, int k)
{
	return (_Atomic uint32_t *)(seg->base + (size_t)member * CTL_LINE) + k;
}

static void random_bytes(char *p, size_t len)
{
	while (len > 0) {
		ssize_t got = getrandom(p, len < 256 ? len : 256, 0);

		if (got <= 0)
			continue;
		p += got;
		len -= (size_t)got;
	}
}

static void shift_counters(const struct segment *seg, int first, int last, uint32_t by)
{
	for (int i = first; i <= last; i++)
		atomic_fetch_add(word(seg, i, 0), by);
}

static void cut_file(const struct segment *seg)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/map_files/%s", seg->range);
	fd = open(path, O_RDWR);
	if (fd < 0) {
		printf("SKIP truncate: cannot open %s: %s\n", path, strerror(errno));
		return;
	}
	if (ftruncate(fd, 0) == 0)
		printf("TRUNCATED the segment to 0 bytes\n");
	else
		printf("TRUNCATE refused: %s\n", strerror(errno));
	close(fd);
}

static void attack(const char *how, const struct segment *seg)
{
	static const uint32_t extremes[] = { 0xffffffffu, 0x7fffffffu, 0x80000000u, 0 };
	int n = mt_size;

	/* Said first: the others may end the job before this rank gets on. */
	printf("HOSTILE rank %d: %s on %zu bytes at %s\n", mt_rank, how, seg->len, seg->range);
	fflush(stdout);

	if (!strcmp(how, "ahead")) {
		shift_counters(seg, 0, n - 1, 1u << 30);
	} else if (!strcmp(how, "behind")) {
		shift_counters(seg, 0, n - 1, -(1u << 30));
	} else if (!strcmp(how, "max")) {
		for (int i = 0; i < n; i++) {
			atomic_store(word(seg, i, 0), extremes[i % 4]);
			atomic_store(word(seg, i, 1), 0xffffffffu);
		}
	} else if (!strcmp(how, "random")) {
		random_bytes(seg->base, (size_t)n * CTL_LINE);
	} else if (!strcmp(how, "own_ahead")) {
		shift_counters(seg, mt_rank, mt_rank, 1u << 30);
	} else if (!strcmp(how, "plus1")) {
		shift_counters(seg, mt_rank, mt_rank, 1);
	} else if (!strcmp(how, "minus1")) {
		shift_counters(seg, mt_rank, mt_rank, (uint32_t)-1);
	} else if (!strcmp(how, "sleepers")) {
		for (int i = 0; i < n; i++) {
			atomic_store(word(seg, i, 1), i % 2 ? 0xffffffffu : 0);
			random_bytes((char *)word(seg, i, 2), CTL_LINE - 2 * sizeof(uint32_t));
		}
	} else if (!strcmp(how, "data")) {
		random_bytes(seg->base + CTL_LEN, seg->len - CTL_LEN);
	} else if (!strcmp(how, "remove")) {
		if (madvise(seg->base, seg->len, MADV_REMOVE) != 0)
			printf("MADV_REMOVE failed: %s\n", strerror(errno));
	} else if (!strcmp(how, "truncate")) {
		cut_file(seg);
	} else {
		fprintf(stderr, "unknown attack %s\n", how);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	fflush(stdout);
}

/* Stay out of round `round` while the others wait in it, then attack;
 * true when this rank goes on with the rounds. */
static bool turn_hostile(const char *how, const char *after, bool now)
{
	struct segment seg;

	if (!find_segment(&seg)) {
		fprintf(stderr, "FAIL rank %d: no vd-mpi-coll mapping in /proc/self/maps "
			"(the shared segment is not in use)\n", mt_rank);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	if (!now)
		mt_sleep_ms(30);
	attack(how, &seg);
	if (!strcmp(after, "stop")) {
		mt_sleep_ms(30000);
		_exit(0);
	}
	if (!strcmp(after, "exit"))
		_exit(0);
	return true;
}

int main(int argc, char **argv)
{
	enum coll c = NCOLL;
	int hostile = -1, wrong = 0, checks = 0;

	mt_init(&argc, &argv, 60);
	if (argc < 5 || argc > 6 || (hostile = atoi(argv[4])) < 0 || hostile >= mt_size) {
		fprintf(stderr, "usage: %s COLL ATTACK stop|exit|continue HOSTILE [now]\n",
			argv[0]);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (int k = 0; k < NCOLL; k++)
		if (!strcmp(argv[1], coll_names[k]))
			c = (enum coll)k;
	buf_a = malloc(sizeof(int) * MAXN);
	buf_b = malloc(sizeof(int) * MAXN);
	if (c == NCOLL || !buf_a || !buf_b ||
	    coll_count[c] * (c >= ALLGATHER ? mt_size : 1) > MAXN)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (int r = 0; r < ROUNDS; r++) {
		if (r == ATTACK_ROUND && mt_rank == hostile)
			turn_hostile(argv[2], argv[3], argc > 5 && !strcmp(argv[5], "now"));
		wrong += run_round(c, r) > 0;
		checks++;
	}
	if (mt_rank != hostile)
		printf("RESULT rank %d wrong %d of %d rounds\n", mt_rank, wrong, checks);
	fflush(stdout);
	free(buf_a);
	free(buf_b);
	MPI_Finalize();
	return 0;
}
