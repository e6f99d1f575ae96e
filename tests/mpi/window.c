/* SPDX-License-Identifier: MIT */
/*
 * Many messages in flight at once, more than a peer has send slots and
 * eager buffers (16 each): every rank streams windows of nonblocking
 * sends to its right neighbour while receiving from its left one.
 * Regression test: with RDMA completions reaped inside a full send ring,
 * a completion was once attributed to the wrong slot and a receive never
 * finished (a hang under VIADUCT_MPI_PROTOCOL=get).
 */
#include "mpitest.h"

#include <stdio.h>
#include <stdlib.h>

#define WIN 100
#define ROUNDS 30

static unsigned char pattern(int round, int k, size_t i)
{
	return (unsigned char)(round * 31 + k * 7 + (int)i);
}

/* Which message's bytes a wrong one holds, to tell a message delivered
 * twice or to the wrong receive from bytes overwritten. */
static const char *whose(const unsigned char *m, size_t len, int round)
{
	static char buf[64];

	for (int r = round - 2; r <= round + 2; r++)
		for (int k = 0; k < WIN && r >= 0; k++) {
			size_t i = 0;

			while (i < len && m[i] == pattern(r, k, i))
				i++;
			if (i == len) {
				snprintf(buf, sizeof(buf), "all of round %d's message %d", r, k);
				return buf;
			}
		}
	return "no message's bytes";
}

static void one_round(int round, size_t len, unsigned char *sb, unsigned char *rb)
{
	MPI_Request req[2 * WIN];
	int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;

	for (int k = 0; k < WIN; k++) {
		for (size_t i = 0; i < len; i++)
			sb[(size_t)k * len + i] = pattern(round, k, i);
		MPI_OK(MPI_Irecv(rb + (size_t)k * len, (int)len, MPI_BYTE, left, k, MPI_COMM_WORLD,
				 &req[k]));
	}
	for (int k = 0; k < WIN; k++)
		MPI_OK(MPI_Isend(sb + (size_t)k * len, (int)len, MPI_BYTE, right, k,
				 MPI_COMM_WORLD, &req[WIN + k]));
	MPI_OK(MPI_Waitall(2 * WIN, req, MPI_STATUSES_IGNORE));
	for (int k = 0; k < WIN; k++)
		for (size_t i = 0; i < len; i++) {
			const unsigned char *m = rb + (size_t)k * len;

			if (!CHECK(m[i] == pattern(round, k, i),
				   "round %d message %d byte %zu: %#x, not %#x (%s)", round, k,
				   i, m[i], pattern(round, k, i), whose(m, len, round)))
				return;
		}
}

int main(int argc, char **argv)
{
	static const size_t lens[] = { 16, 4096, 20000 };

	mt_init(&argc, &argv, 60);
	for (unsigned s = 0; s < sizeof(lens) / sizeof(lens[0]); s++) {
		unsigned char *sb = malloc(WIN * lens[s]), *rb = malloc(WIN * lens[s]);
		for (int round = 0; round < ROUNDS; round++)
			one_round(round, lens[s], sb, rb);
		free(sb);
		free(rb);
	}
	return mt_finish("window");
}
