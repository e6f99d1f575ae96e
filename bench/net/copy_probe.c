// SPDX-License-Identifier: MIT
/*
 * copy_probe -- how fast a copy runs depending on where its destination
 * lies in a page relative to its source (docs/bench-mpi.md, "Copies that
 * crawl").  A child pinned to CPU B fills a shared buffer each round; the
 * parent, pinned to CPU A, copies it out with the copy under test into a
 * private buffer placed DIST bytes further into its page than the source:
 *
 *   memcpy      glibc's (rep movsb from 2 KiB up where the CPU has ERMS)
 *   vd_copy     viaduct's payload copy (util/copy.h)
 *   pvread      process_vm_readv from the child's copy of the buffer
 *
 *   copy_probe [BYTES]     (default 32768; at most 4 MiB)
 * Prints one line per copy: the median ns per copy at each distance.
 * Exit 1 when it cannot map, fork or pin.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"

#include "util/copy.h"

#define ROUNDS 400
#define RUNS 5
#define MAX_BYTES (4u << 20)
/* A child that stopped must not hang the parent. */
#define SPIN_LIMIT (1ull << 31)

enum { FILL = 1, FILLED = 2, STOP = 3, GAVE_UP = 4 /* the child cannot run on CPU 1 */ };
enum copy { C_MEMCPY, C_VDCOPY, C_PVREAD, C_COUNT };
static const char *const NAMES[C_COUNT] = { "memcpy", "vd_copy", "pvread" };
static const size_t DISTS[] = { 0, 8, 16, 32, 64, 4080 };
#define NDIST (sizeof(DISTS) / sizeof(DISTS[0]))

struct shared {
	_Alignas(64) _Atomic int state;
	_Alignas(4096) char buf[];
};

/* The child: refill the buffer whenever asked, until told to stop. */
static void child(struct shared *sh, size_t bytes)
{
	unsigned char v = 1;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;) {
		uint64_t spins = 0;
		int st;

		/* Acquire: pairs with the parent's release store of FILL. */
		while ((st = atomic_load_explicit(&sh->state, memory_order_acquire)) != FILL)
			if (st == STOP || ++spins > SPIN_LIMIT)
				_exit(0);
		memset(sh->buf, v++, bytes);
		/* Release: pairs with the parent's acquire load of FILLED. */
		atomic_store_explicit(&sh->state, FILLED, memory_order_release);
	}
}

/* One copy of bytes from the freshly written buffer into dst: 0 or -1. */
static int copy_once(enum copy c, pid_t pid, char *dst, const char *src, size_t bytes)
{
	struct iovec mine = { dst, bytes }, theirs = { (void *)src, bytes };

	switch (c) {
	case C_MEMCPY:
		memcpy(dst, src, bytes);
		return 0;
	case C_VDCOPY:
		vd_copy(dst, src, bytes);
		return 0;
	default:
		return process_vm_readv(pid, &mine, 1, &theirs, 1, 0) == (ssize_t)bytes ? 0 : -1;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Median over RUNS of the mean ns per copy; 0 when the child is gone. */
static uint64_t measure(struct shared *sh, pid_t pid, enum copy c, char *dst, size_t bytes)
{
	uint64_t runs[RUNS];

	for (int r = 0; r < RUNS; r++) {
		uint64_t total = 0;

		for (int i = 0; i < ROUNDS; i++) {
			uint64_t spins = 0, t0;

			int st;

			/* Release: pairs with the child's acquire load of FILL
			 * (nothing of ours to publish, but its wait is one). */
			atomic_store_explicit(&sh->state, FILL, memory_order_release);
			/* Acquire: pairs with the child's release store of
			 * FILLED, so its fill is what gets copied. */
			while ((st = atomic_load_explicit(&sh->state, memory_order_acquire)) != FILLED)
				if (st == GAVE_UP || ++spins > SPIN_LIMIT)
					return 0;
			t0 = now_ns();
			if (copy_once(c, pid, dst, sh->buf, bytes))
				return 0;
			total += now_ns() - t0;
		}
		runs[r] = total / ROUNDS;
	}
	qsort(runs, RUNS, sizeof(runs[0]), cmp_u64);
	return runs[RUNS / 2];
}

int main(int argc, char **argv)
{
	size_t bytes = argc > 1 ? strtoul(argv[1], NULL, 0) : 32768;
	size_t len = sizeof(struct shared) + MAX_BYTES + 8192;
	struct shared *sh = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *priv = mmap(NULL, MAX_BYTES + 8192, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	pid_t pid;

	if (bytes == 0 || bytes > MAX_BYTES) {
		fprintf(stderr, "usage: copy_probe [BYTES]  (1 to %u)\n", MAX_BYTES);
		return 2;
	}
	if (sh == MAP_FAILED || priv == MAP_FAILED)
		return perror("copy_probe: mmap"), 1;
	memset(priv, 0, MAX_BYTES + 8192);
	if ((pid = fork()) < 0)
		return perror("copy_probe: fork"), 1;
	if (pid == 0) {
		if (pin_to_cpu(1)) {
			/* Relaxed: a flag the parent only compares. */
			atomic_store_explicit(&sh->state, GAVE_UP, memory_order_relaxed);
			_exit(1);
		}
		child(sh, bytes);
	}
	if (pin_to_cpu(0))
		return perror("copy_probe: pin"), kill(pid, SIGKILL), 1;
	printf("copy_probe: %zu bytes from lines CPU 1 just wrote to CPU 0; ns per copy at "
	       "destination - source offset in a page of", bytes);
	for (size_t d = 0; d < NDIST; d++)
		printf(" %zu", DISTS[d]);
	printf("\n");
	for (int c = 0; c < C_COUNT; c++) {
		printf("  %-8s", NAMES[c]);
		for (size_t d = 0; d < NDIST; d++) {
			uint64_t ns = measure(sh, pid, (enum copy)c, priv + DISTS[d], bytes);

			if (!ns) {
				fprintf(stderr, "\ncopy_probe: the side on CPU 1 failed (could it be "
					"pinned there?) or %s failed\n", NAMES[c]);
				kill(pid, SIGKILL);
				waitpid(pid, NULL, 0);
				return 1;
			}
			printf(" %8llu", (unsigned long long)ns);
		}
		printf("\n");
	}
	/* Relaxed: the child is killed next anyway; this only ends its wait. */
	atomic_store_explicit(&sh->state, STOP, memory_order_relaxed);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return 0;
}
