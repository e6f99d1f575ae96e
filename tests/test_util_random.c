/* SPDX-License-Identifier: MIT */
/*
 * util: vd_siphash24 gives the SipHash paper's test vector, and
 * vd_random64 -- a keyed counter, not a system call per value -- never
 * repeats within a process, and a child made by fork() -- or by _Fork(),
 * which runs no atfork handler -- draws values its parent does not (it
 * takes a key of its own).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vdtest.h"
#include "util/siphash.h"
#include "util/sys.h"

#define N 200000
#define FORKED 1000

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Appendix A of the SipHash paper: key 00..0f, message 00..0e. */
static void siphash_vector(void)
{
	uint64_t key[2];
	uint8_t k[16], m[15];

	for (int i = 0; i < 16; i++)
		k[i] = (uint8_t)i;
	for (int i = 0; i < 15; i++)
		m[i] = (uint8_t)i;
	memcpy(key, k, sizeof(key));    /* little-endian words, as the paper */
	VDT_CHECK(vd_siphash24(key, m, sizeof(m)) == 0xa129ca6149be45e5ull);
}

static void no_repeats(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	for (size_t i = 1; i < n; i++)
		VDT_CHECK(v[i] != v[i - 1]);
}

/* The child's values go back through a pipe; none may be among the
 * parent's next ones (without a key of its own the child would draw
 * exactly those). */
static void fork_diverges(pid_t (*make)(void))
{
	uint64_t *mine = malloc(2 * FORKED * sizeof(uint64_t));
	int fd[2], status;
	pid_t pid;

	VDT_CHECK(mine && pipe(fd) == 0);
	pid = make();
	VDT_CHECK(pid >= 0);
	if (pid == 0) {
		for (int i = 0; i < FORKED; i++) {
			uint64_t x = vd_random64();

			if (write(fd[1], &x, sizeof(x)) != (ssize_t)sizeof(x))
				_exit(1);
		}
		_exit(0);
	}
	close(fd[1]);
	for (int i = 0; i < FORKED; i++)
		mine[i] = vd_random64();
	for (int i = 0; i < FORKED; i++)
		VDT_CHECK(read(fd[0], &mine[FORKED + i], sizeof(uint64_t)) == (ssize_t)sizeof(uint64_t));
	VDT_CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && !WEXITSTATUS(status));
	close(fd[0]);
	no_repeats(mine, 2 * FORKED);
	free(mine);
}

int main(void)
{
	uint64_t *v = malloc(N * sizeof(uint64_t)), ones = 0;

	siphash_vector();
	VDT_CHECK(v);
	for (size_t i = 0; i < N; i++) {
		v[i] = vd_random64();
		ones += (uint64_t)__builtin_popcountll(v[i]);
	}
	/* Every bit carries: about 32 of 64 set on average. */
	VDT_CHECK(ones > (uint64_t)N * 31 && ones < (uint64_t)N * 33);
	no_repeats(v, N);
	free(v);
	fork_diverges(fork);
	fork_diverges(_Fork);
	printf("ok: siphash vector, %d values without a repeat, a child's differ after fork and _Fork\n", N);
	return VDT_PASS;
}
