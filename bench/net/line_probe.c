// SPDX-License-Identifier: MIT
/*
 * line_probe -- how far apart the two CPUs are right now: two processes,
 * pinned to CPUs A and B, hand one cache line back and forth (as bench_vipl's
 * limits do) and the median half round trip is printed in ns.  It takes
 * about 10 ms, so the benchmarks run it before and after every program.
 *
 * On a virtual machine the answer moves while you watch: this 2-vCPU VM
 * read 34 ns (two hardware threads of one core), about 60 ns (one L3) and
 * 200-420 ns (different core complexes) within one minute, and every MPI
 * figure between two ranks moves with it, up to 2x.
 *
 *   line_probe [CPU_A CPU_B]     (default 0 1)
 * Prints "line_half_rtt_ns N"; exit 1 when it cannot pin or fork.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "benchlib.h"

#define ROUND_TRIPS 4000
#define RUNS 5
/* A peer that stopped (killed, or never scheduled) must not hang us:
 * give up after this many spins without news. */
#define SPIN_LIMIT (1ull << 31)

struct line {
	_Alignas(64) _Atomic uint64_t ping;
	_Atomic uint32_t gave_up;       /* the side on CPU B cannot run there */
};

static int wait_for(struct line *l, uint64_t want)
{
	for (uint64_t n = 0; n < SPIN_LIMIT; n++) {
		/* Acquire: pairs with the other side's release store. */
		if (atomic_load_explicit(&l->ping, memory_order_acquire) == want)
			return 0;
		/* Relaxed: only a stop sign, nothing to read behind it. */
		if (atomic_load_explicit(&l->gave_up, memory_order_relaxed))
			return -1;
	}
	return -1;
}

/* Side 0 starts each round trip, side 1 answers; seq counts stores. */
static int play(struct line *l, int side, uint64_t *seq, int trips)
{
	for (int i = 0; i < trips; i++) {
		if (side == 0) {
			/* Release: pairs with the acquire in wait_for. */
			atomic_store_explicit(&l->ping, *seq + 1, memory_order_release);
			if (wait_for(l, *seq + 2))
				return -1;
		} else {
			if (wait_for(l, *seq + 1))
				return -1;
			atomic_store_explicit(&l->ping, *seq + 2, memory_order_release);
		}
		*seq += 2;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int a = 0, b = 1, status;
	struct line *l = mmap(NULL, sizeof(*l), PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t seq = 0;
	double half[RUNS];
	pid_t pid;

	if (argc != 1 && argc != 3) {
		fprintf(stderr, "usage: line_probe [CPU_A CPU_B]\n");
		return 2;
	}
	if (argc == 3) {
		a = atoi(argv[1]);
		b = atoi(argv[2]);
	}
	if (l == MAP_FAILED || (pid = fork()) < 0) {
		perror("line_probe");
		return 1;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);       /* never outlive the probe */
		if (pin_to_cpu(b)) {
			atomic_store_explicit(&l->gave_up, 1, memory_order_relaxed);
			_exit(2);
		}
		_exit(play(l, 1, &seq, ROUND_TRIPS * (RUNS + 1)) ? 1 : 0);
	}
	if (pin_to_cpu(a)) {
		perror("line_probe: pinning");
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return 1;
	}
	for (int r = -1; r < RUNS; r++) {       /* run -1: the warm-up */
		uint64_t t0 = now_ns();

		if (play(l, 0, &seq, ROUND_TRIPS)) {
			fprintf(stderr, "line_probe: the side on CPU %d stopped answering "
				"(could it be pinned there?)\n", b);
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			return 1;
		}
		if (r >= 0)
			half[r] = (double)(now_ns() - t0) / ROUND_TRIPS / 2;
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "line_probe: the side on CPU %d failed (could it be pinned?)\n", b);
		return 1;
	}
	qsort(half, RUNS, sizeof(half[0]), cmp_double);
	printf("line_half_rtt_ns %.1f\n", half[RUNS / 2]);
	return 0;
}
