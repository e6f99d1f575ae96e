/* SPDX-License-Identifier: MIT */
/*
 * Pipelined messages inside a host: larger than the eager limit and up to
 * VIADUCT_MPI_PIPELINE_MAX, they travel as an EAGER that announces the
 * whole length, then PARTs.  Each rank sends to its right and receives
 * from its left.
 *  - Caught while its parts arrive: the receiver polls MPI_Iprobe (or
 *    MPI_Improbe) and receives the moment the first part shows, so the
 *    receive takes an unexpected message that is still being filled --
 *    into a contiguous buffer, through a strided type, with MPI_Mrecv,
 *    and into a buffer too small (MPI_ERR_TRUNCATE, the prefix intact).
 *  - Posted first: the receive is waiting when the parts come; or posted
 *    after the whole message arrived.
 *  - Sizes at the edges: one byte above the eager limit, a whole number
 *    of parts and one byte more, the pipeline's limit and one byte more
 *    (which goes by get).
 *  - Both directions at once (the sender then has a receive posted and
 *    uses get): the data still arrives whole.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

#define EAGER 32728
#define PART 16384
#define BIG (128 * 1024)

static int left, right;
static bool pipelining;         /* VIADUCT_MPI_PIPELINE_MAX is not 0 */

static void wait_for(int tag, MPI_Status *st)
{
	int flag = 0;

	while (!flag)
		MPI_OK(MPI_Iprobe(left, tag, MPI_COMM_WORLD, &flag, st));
}

/* Contiguous receive of a message caught while arriving. */
static void caught_contig(int it, unsigned char *buf)
{
	MPI_Status st;

	wait_for(it, &st);
	CHECK(mt_get_count(&st, MPI_BYTE) == BIG, "probe count %d", mt_get_count(&st, MPI_BYTE));
	MPI_OK(MPI_Recv(buf, BIG, MPI_BYTE, left, it, MPI_COMM_WORLD, &st));
	CHECK(mt_verify(buf, BIG, left, it) < 0, "iteration %d: contiguous data wrong", it);
}

/* Through a type with gaps: every other 4-byte word. */
static void caught_strided(int it, unsigned char *buf)
{
	unsigned char *wide = mt_malloc(2 * BIG), *flat = mt_malloc(BIG);
	MPI_Datatype vec;
	MPI_Status st;

	MPI_OK(MPI_Type_vector(BIG / 4, 1, 2, MPI_INT, &vec));
	MPI_OK(MPI_Type_commit(&vec));
	wait_for(it, &st);
	MPI_OK(MPI_Recv(wide, 1, vec, left, it, MPI_COMM_WORLD, &st));
	for (size_t w = 0; w < BIG / 4; w++)
		memcpy(flat + 4 * w, wide + 8 * w, 4);
	CHECK(mt_verify(flat, BIG, left, it) < 0, "iteration %d: strided data wrong", it);
	MPI_OK(MPI_Type_free(&vec));
	free(wide);
	free(flat);
	(void)buf;
}

static void caught_mrecv(int it, unsigned char *buf)
{
	MPI_Message msg;
	MPI_Status st;
	int flag = 0;

	while (!flag)
		MPI_OK(MPI_Improbe(left, it, MPI_COMM_WORLD, &flag, &msg, &st));
	MPI_OK(MPI_Mrecv(buf, BIG, MPI_BYTE, &msg, &st));
	CHECK(mt_get_count(&st, MPI_BYTE) == BIG, "Mrecv count %d", mt_get_count(&st, MPI_BYTE));
	CHECK(mt_verify(buf, BIG, left, it) < 0, "iteration %d: Mrecv data wrong", it);
}

static void caught_truncated(int it, unsigned char *buf)
{
	MPI_Status st;
	int err;

	wait_for(it, &st);
	memset(buf + BIG / 2, 0xee, BIG / 2);
	err = MPI_Recv(buf, BIG / 2, MPI_BYTE, left, it, MPI_COMM_WORLD, &st);
	CHECK(err != MPI_SUCCESS, "iteration %d: truncated receive succeeded", it);
	CHECK(mt_verify(buf, BIG / 2, left, it) < 0, "iteration %d: prefix wrong", it);
	CHECK(buf[BIG / 2] == 0xee && buf[BIG - 1] == 0xee,
	      "iteration %d: written past the receive buffer", it);
}

static void test_caught(void)
{
	static void (*const recv_kind[])(int, unsigned char *) = {
		caught_contig, caught_strided, caught_mrecv, caught_truncated,
	};
	unsigned char *out = mt_malloc(BIG), *in = mt_malloc(BIG);

	mt_phase = "caught while arriving";
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	for (int it = 0; it < 40; it++) {
		MPI_Request q;

		mt_fill(out, BIG, mt_rank, it);
		MPI_OK(MPI_Isend(out, BIG, MPI_BYTE, right, it, MPI_COMM_WORLD, &q));
		recv_kind[it % 4](it, in);
		MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
	free(out);
	free(in);
}

/* Every size at an edge, received by a posted receive and as unexpected. */
static void test_edges(void)
{
	static const int sizes[] = {
		EAGER + 1, 2 * PART, 2 * PART + 1, 5 * PART - 1, BIG, BIG + 1,
	};
	int n = (int)(sizeof(sizes) / sizeof(sizes[0]));
	unsigned char *out = mt_malloc(BIG + 1), *in = mt_malloc(BIG + 1);

	mt_phase = "sizes at the edges";
	for (int i = 0; i < 2 * n; i++) {
		int len = sizes[i % n], posted = i < n, sent = 0;
		MPI_Request rq, sq;
		MPI_Status st;

		mt_fill(out, (size_t)len, mt_rank, 100 + i);
		if (posted)
			MPI_OK(MPI_Irecv(in, len, MPI_BYTE, left, 100 + i, MPI_COMM_WORLD, &rq));
		MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
		MPI_OK(MPI_Isend(out, len, MPI_BYTE, right, 100 + i, MPI_COMM_WORLD, &sq));
		if (!posted) {
			/* A pipelined send completes once all of it is in the
			 * peer's ring (or its unexpected queue), so its parts have
			 * all arrived before the receive; above the pipeline's
			 * limit (get) a send waits for its receive. */
			if (pipelining && len <= BIG) {
				MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
				sent = 1;
			} else {
				wait_for(100 + i, &st);
			}
			MPI_OK(MPI_Irecv(in, len, MPI_BYTE, left, 100 + i, MPI_COMM_WORLD, &rq));
		}
		MPI_OK(MPI_Wait(&rq, &st));
		if (!sent)      /* before `out` is filled again */
			MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
		CHECK(mt_get_count(&st, MPI_BYTE) == len, "%d bytes: count %d", len,
		      mt_get_count(&st, MPI_BYTE));
		CHECK(mt_verify(in, (size_t)len, left, 100 + i) < 0, "%d bytes (%s): data wrong",
		      len, posted ? "posted" : "unexpected");
	}
	free(out);
	free(in);
}

/* Messages both ways at once, several in flight. */
static void test_both_ways(void)
{
	enum { N = 6 };
	unsigned char *out[N], *in[N];
	MPI_Request q[2 * N];

	mt_phase = "both ways";
	for (int i = 0; i < N; i++) {
		out[i] = mt_malloc(BIG);
		in[i] = mt_malloc(BIG);
		mt_fill(out[i], BIG, mt_rank, 200 + i);
		MPI_OK(MPI_Irecv(in[i], BIG, MPI_BYTE, left, 200 + i, MPI_COMM_WORLD, &q[i]));
	}
	for (int i = 0; i < N; i++)
		MPI_OK(MPI_Isend(out[i], BIG, MPI_BYTE, right, 200 + i, MPI_COMM_WORLD, &q[N + i]));
	MPI_OK(MPI_Waitall(2 * N, q, MPI_STATUSES_IGNORE));
	for (int i = 0; i < N; i++) {
		CHECK(mt_verify(in[i], BIG, left, 200 + i) < 0, "message %d: data wrong", i);
		free(out[i]);
		free(in[i]);
	}
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, 60);
	left = (mt_rank + mt_size - 1) % mt_size;
	right = (mt_rank + 1) % mt_size;
	pipelining = !getenv("VIADUCT_MPI_PIPELINE_MAX") ||
		     strcmp(getenv("VIADUCT_MPI_PIPELINE_MAX"), "0") != 0;
	if (mt_size > 1) {
		test_caught();
		MPI_Barrier(MPI_COMM_WORLD);
		test_edges();
		MPI_Barrier(MPI_COMM_WORLD);
		test_both_ways();
	}
	return mt_finish("p2p_pipe");
}
