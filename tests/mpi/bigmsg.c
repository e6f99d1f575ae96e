/* SPDX-License-Identifier: MIT */
/*
 * One large message each way between ranks 0 and 1 (argv[1] MiB, default
 * 64), every byte checked.  Run under a small RLIMIT_MEMLOCK: message
 * buffers must not need to be pinned on a provider that copies by
 * virtual address.
 */
#include "mpitest.h"

#include <stdint.h>
#include <stdlib.h>

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 131 + seed + (i >> 12));
}

static size_t first_bad(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(i * 131 + seed + (i >> 12)))
			return i;
	return SIZE_MAX;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64, n = mib << 20, bad;
	unsigned char *buf;
	int peer;

	mt_init(&argc, &argv, 120);
	buf = malloc(n);
	CHECK(buf != NULL, "no memory for %zu bytes", n);
	peer = 1 - mt_rank;
	if (mt_rank <= 1) {
		for (int round = 0; round < 2; round++) {
			if (mt_rank == round) {
				fill(buf, n, (unsigned)round);
				MPI_OK(MPI_Send(buf, (int)n, MPI_BYTE, peer, round, MPI_COMM_WORLD));
			} else {
				MPI_OK(MPI_Recv(buf, (int)n, MPI_BYTE, peer, round, MPI_COMM_WORLD,
						MPI_STATUS_IGNORE));
				bad = first_bad(buf, n, (unsigned)round);
				CHECK(bad == SIZE_MAX, "byte %zu of %zu differs", bad, n);
			}
		}
	}
	free(buf);
	return mt_finish("bigmsg");
}
