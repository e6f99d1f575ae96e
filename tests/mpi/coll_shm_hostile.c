/* SPDX-License-Identifier: MIT */
/*
 * A hostile member of a node-local collective's shared segment.
 *
 *   coll_shm_hostile COLL ATTACK AFTER HOSTILE [now]
 *
 * Every rank runs ROUNDS rounds of COLL on MPI_COMM_WORLD (barrier,
 * bcast, bcast_large, reduce, reduce_large, allreduce, allreduce_large,
 * allgather, allgather_large, alltoall, alltoall_large (several phases),
 * alltoall_strided (a strided send type: the packed copy),
 * reduce_scatter (counts 1, 2, 3, ...  times 50), reduce_scatter_large,
 * reduce_scatter_block), each result checked.  Rank HOSTILE plays
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
 *   sigs            random bytes over every member's signature words
 *                   (Alltoall's and Reduce_scatter's sizes)
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
 * line per member (phase counter, its sleeper count, then a signature
 * word per data area, and at byte 48 the address the member maps the
 * segment at, read once when the segment is made) in the first page,
 * then the data areas (whose slots may hold only where a member's buffer
 * is, for blocks read directly).
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
#define CTL_SIGS 8              /* signature words after counter and sleepers */
#define MAXN 100000             /* ints per buffer (Allgather: all pieces) */

enum coll { BARRIER, BCAST, BCAST_LARGE, REDUCE, REDUCE_LARGE, ALLREDUCE, ALLREDUCE_LARGE,
	    ALLGATHER, ALLGATHER_LARGE, ALLTOALL, ALLTOALL_LARGE, ALLTOALL_STRIDED,
	    REDUCE_SCATTER, REDUCE_SCATTER_LARGE, REDUCE_SCATTER_BLOCK, NCOLL };
static const char *const coll_names[NCOLL] = {
	"barrier", "bcast", "bcast_large", "reduce", "reduce_large", "allreduce",
	"allreduce_large", "allgather", "allgather_large", "alltoall", "alltoall_large",
	"alltoall_strided", "reduce_scatter", "reduce_scatter_large", "reduce_scatter_block"
};
/* Elements (ints) per call -- per member for Allgather, Alltoall (per
 * destination) and Reduce_scatter (its piece; "reduce_scatter": times
 * 1, 2, 3 ...): the large ones take several chunks (32 KiB slots and
 * Bcast chunks), Bcast's more than the 8 areas. */
static const int coll_count[NCOLL] = { 0, 100, 60000, 500, 40000, 500, 40000, 300, 20000,
				       100, 6000, 300, 50, 10000, 100 };

static int *buf_a, *buf_b;

static int value(int round, int rank, int i)
{
	return (round * 131 + rank * 17 + i) % 1000;
}

/* ---- the collectives, checked ---------------------------------------------- */

/* Alltoall of n ints per destination; strided: sent as every other int
 * of a buffer twice the size (a vector type: the packed copy). */
static int alltoall_round(int n, int round, bool strided)
{
	MPI_Datatype vec = MPI_DATATYPE_NULL, sent = MPI_INT;
	int step = strided ? 2 : 1, wrong = 0;

	if (strided) {
		MPI_Type_vector(n, 1, 2, MPI_INT, &vec);
		MPI_Type_create_resized(vec, 0, 2 * n * (MPI_Aint)sizeof(int), &sent);
		MPI_Type_commit(&sent);
	}
	for (int d = 0; d < mt_size; d++)
		for (int i = 0; i < n; i++) {
			buf_a[(d * n + i) * step] = value(round, mt_rank, d * n + i);
			buf_b[d * n + i] = -1;
		}
	MPI_Alltoall(buf_a, strided ? 1 : n, sent, buf_b, n, MPI_INT, MPI_COMM_WORLD);
	for (int k = 0; k < mt_size; k++)
		for (int i = 0; i < n; i++)
			wrong += buf_b[k * n + i] != value(round, k, mt_rank * n + i);
	if (strided) {
		MPI_Type_free(&sent);
		MPI_Type_free(&vec);
	}
	return wrong;
}

/* Reduce_scatter with pieces of n ints each (block), or n, 2n, 3n ... */
static int reduce_scatter_round(int n, int round, bool block)
{
	int counts[64], total = 0, before = 0, wrong = 0;

	for (int k = 0; k < mt_size; k++) {
		counts[k] = block ? n : n * (k + 1);
		before += k < mt_rank ? counts[k] : 0;
		total += counts[k];
	}
	for (int i = 0; i < total; i++)
		buf_a[i] = value(round, mt_rank, i);
	for (int i = 0; i < counts[mt_rank]; i++)
		buf_b[i] = -1;
	if (block)
		MPI_Reduce_scatter_block(buf_a, buf_b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	else
		MPI_Reduce_scatter(buf_a, buf_b, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < counts[mt_rank]; i++) {
		int want = 0;

		for (int k = 0; k < mt_size; k++)
			want += value(round, k, before + i);
		wrong += buf_b[i] != want;
	}
	return wrong;
}

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
	case ALLTOALL:
	case ALLTOALL_LARGE:
	case ALLTOALL_STRIDED:
		return alltoall_round(n, round, c == ALLTOALL_STRIDED);
	case REDUCE_SCATTER:
	case REDUCE_SCATTER_LARGE:
	case REDUCE_SCATTER_BLOCK:
		return reduce_scatter_round(n, round, c != REDUCE_SCATTER);
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
			random_bytes((char *)word(seg, i, 2 + CTL_SIGS),
				     CTL_LINE - (2 + CTL_SIGS) * sizeof(uint32_t));
		}
	} else if (!strcmp(how, "sigs")) {
		for (int i = 0; i < n; i++)
			random_bytes((char *)word(seg, i, 2), CTL_SIGS * sizeof(uint32_t));
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
	/* the most any collective holds in one buffer: Reduce_scatter's
	 * counts up to n * count for n = 64 */
	if (c == NCOLL || !buf_a || !buf_b || mt_size > 64 ||
	    coll_count[c] * (c >= ALLGATHER ? mt_size : 1) * (c >= ALLTOALL ? 2 : 1) > MAXN ||
	    (c == REDUCE_SCATTER && coll_count[c] * mt_size * (mt_size + 1) / 2 > MAXN))
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
