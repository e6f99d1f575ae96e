/* SPDX-License-Identifier: MIT */
/*
 * Lazy connections: pairs of ranks connect on their first message.
 *
 *   lazy ring   a ring exchange only (the runner counts 2 connections a rank
 *               from VIADUCT_DEBUG=1's report at MPI_Finalize)
 *   lazy init   MPI_Init and MPI_Finalize only (no connection)
 *   lazy storm  every rank sends to every other at once as its very first
 *               traffic (each pair from both sides: size - 1 connections)
 *   lazy        every first-message case: a rendezvous-sized message as the
 *               first of a pair, from both sides at once; MPI_ANY_SOURCE
 *               receives from peers that never sent; simultaneous small
 *               first sends; errors that must not connect; then
 *               collectives, a nonblocking one and a window touching all
 *               pairs (the runner then counts size - 1 connections)
 */
#include "mpitest.h"

#define BIG (1 << 20)           /* above any eager limit */

static void ring(int rounds)
{
	int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;

	mt_phase = "ring";
	for (int i = 0; i < rounds; i++) {
		int out = mt_rank * 1000 + i, in = -1;
		MPI_OK(MPI_Sendrecv(&out, 1, MPI_INT, right, i, &in, 1, MPI_INT, left, i,
				    MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		CHECK(in == left * 1000 + i, "round %d: got %d from %d", i, in, left);
	}
}

/* Ranks 0 and size-1 both send a big message to each other as the first
 * message of their pair, at the same time. */
static void big_first(void)
{
	int peer = mt_rank == 0 ? mt_size - 1 : 0;
	unsigned char *out, *in;
	MPI_Request rq[2];
	MPI_Status st;
	long bad;

	mt_phase = "big first message";
	if (mt_size < 2 || (mt_rank != 0 && mt_rank != mt_size - 1))
		return;
	out = mt_malloc(BIG);
	in = mt_malloc(BIG);
	mt_fill(out, BIG, mt_rank, 1);
	MPI_OK(MPI_Isend(out, BIG, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &rq[0]));
	MPI_OK(MPI_Irecv(in, BIG, MPI_BYTE, peer, 7, MPI_COMM_WORLD, &rq[1]));
	MPI_OK(MPI_Wait(&rq[1], &st));
	MPI_OK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE));
	CHECK(mt_get_count(&st, MPI_BYTE) == BIG, "count %d", mt_get_count(&st, MPI_BYTE));
	bad = mt_verify(in, BIG, peer, 1);
	CHECK(bad < 0, "byte %ld wrong", bad);
	free(out);
	free(in);
}

/* Every rank but 0 sends to 0, which receives from MPI_ANY_SOURCE,
 * already waiting when most of them connect. */
static void any_source(void)
{
	mt_phase = "any source";
	if (mt_rank == 0) {
		char *seen = calloc((size_t)mt_size, 1);
		for (int i = 1; i < mt_size; i++) {
			MPI_Status st;
			int v = -1;
			MPI_OK(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &st));
			if (CHECK(st.MPI_SOURCE > 0 && st.MPI_SOURCE < mt_size, "source %d",
				  st.MPI_SOURCE)) {
				CHECK(!seen[st.MPI_SOURCE], "twice from %d", st.MPI_SOURCE);
				seen[st.MPI_SOURCE] = 1;
			}
			CHECK(v == st.MPI_SOURCE * 11, "value %d from %d", v, st.MPI_SOURCE);
		}
		free(seen);
	} else {
		int v = mt_rank * 11;
		mt_sleep_ms(20 + 5 * mt_rank);  /* rank 0 sleeps in its wait */
		MPI_OK(MPI_Send(&v, 1, MPI_INT, 0, 3, MPI_COMM_WORLD));
	}
}

/* Pairs (1,2), (3,4), (5,6)... of ranks that never talked send to each
 * other first, at once. */
static void both_first(void)
{
	int peer = mt_rank % 2 ? mt_rank + 1 : mt_rank - 1;
	int out = mt_rank * 7, in = -1;
	MPI_Request rq;

	mt_phase = "both first";
	if (mt_rank == 0 || peer >= mt_size || peer < 1)
		return;
	MPI_OK(MPI_Isend(&out, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, &rq));
	MPI_OK(MPI_Recv(&in, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	CHECK(in == peer * 7, "got %d from %d", in, peer);
}

/* Bad arguments fail with the right class and connect nothing. */
static void errors(void)
{
	int v = 1, cls = -1, rc;

	mt_phase = "errors";
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	rc = MPI_Send(&v, 1, MPI_INT, mt_size, 0, MPI_COMM_WORLD);
	MPI_Error_class(rc, &cls);
	CHECK(cls == MPI_ERR_RANK, "send to rank size: class %d", cls);
	rc = MPI_Send(&v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD);
	MPI_Error_class(rc, &cls);
	CHECK(cls == MPI_ERR_COUNT, "count -1: class %d", cls);
	MPI_OK(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* All pairs from both sides at once, before anything else. */
static void storm(void)
{
	int n = mt_size, *in = mt_malloc(sizeof(int) * (size_t)n);
	int *out = mt_malloc(sizeof(int) * (size_t)n);
	MPI_Request *rq = mt_malloc(sizeof(MPI_Request) * 2 * (size_t)n);

	mt_phase = "storm";
	for (int i = 0; i < n; i++) {
		in[i] = -1;
		out[i] = mt_rank * 97 + i;
		MPI_OK(MPI_Irecv(&in[i], 1, MPI_INT, i, 9, MPI_COMM_WORLD, &rq[i]));
	}
	for (int i = 0; i < n; i++)
		MPI_OK(MPI_Isend(&out[i], 1, MPI_INT, i, 9, MPI_COMM_WORLD, &rq[n + i]));
	MPI_OK(MPI_Waitall(2 * n, rq, MPI_STATUSES_IGNORE));
	for (int i = 0; i < n; i++)
		CHECK(in[i] == i * 97 + mt_rank, "from %d: %d", i, in[i]);
	free(in);
	free(out);
	free(rq);
}

static void all_pairs(void)
{
	int n = mt_size, *out = mt_malloc(sizeof(int) * (size_t)n), *in = mt_malloc(sizeof(int) * (size_t)n);
	int sum = -1, *win_buf;
	MPI_Request rq;
	MPI_Win win;

	mt_phase = "alltoall";
	for (int i = 0; i < n; i++)
		out[i] = mt_rank * 100 + i;
	MPI_OK(MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD));
	for (int i = 0; i < n; i++)
		CHECK(in[i] == i * 100 + mt_rank, "from %d: %d", i, in[i]);
	mt_phase = "ialltoall";
	for (int i = 0; i < n; i++)
		out[i] = mt_rank * 1000 + i * 3;
	MPI_OK(MPI_Ialltoall(out, 1, MPI_INT, in, 1, MPI_INT, MPI_COMM_WORLD, &rq));
	MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	for (int i = 0; i < n; i++)
		CHECK(in[i] == i * 1000 + mt_rank * 3, "from %d: %d", i, in[i]);
	mt_phase = "allreduce";
	MPI_OK(MPI_Allreduce(&mt_rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	CHECK(sum == n * (n - 1) / 2, "sum %d", sum);
	mt_phase = "window";
	MPI_OK(MPI_Alloc_mem((MPI_Aint)sizeof(int) * n, MPI_INFO_NULL, &win_buf));
	for (int i = 0; i < n; i++)
		win_buf[i] = -1;
	MPI_OK(MPI_Win_create(win_buf, (MPI_Aint)sizeof(int) * n, sizeof(int), MPI_INFO_NULL,
			      MPI_COMM_WORLD, &win));
	MPI_OK(MPI_Win_fence(0, win));
	for (int t = 0; t < n; t++)
		MPI_OK(MPI_Put(&out[t], 1, MPI_INT, t, mt_rank, 1, MPI_INT, win));
	MPI_OK(MPI_Win_fence(0, win));
	for (int i = 0; i < n; i++)
		CHECK(win_buf[i] == i * 1000 + mt_rank * 3, "window slot %d: %d", i, win_buf[i]);
	MPI_OK(MPI_Win_free(&win));
	MPI_OK(MPI_Free_mem(win_buf));
	free(out);
	free(in);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";

	mt_init(&argc, &argv, 60);
	if (!strcmp(mode, "init") || !strcmp(mode, "ring") || !strcmp(mode, "storm")) {
		if (!strcmp(mode, "ring"))
			ring(5);
		if (!strcmp(mode, "storm"))
			storm();
		/* No collective here: it would connect more pairs. */
		if (mt_errors)
			fprintf(stderr, "lazy %s: rank %d: FAIL\n", mode, mt_rank);
		MPI_Finalize();
		return mt_errors ? 1 : 0;
	}
	big_first();
	any_source();
	both_first();
	errors();
	ring(3);
	all_pairs();
	return mt_finish("lazy");
}
