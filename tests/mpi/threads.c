/* SPDX-License-Identifier: MIT */
/*
 * MPI_THREAD_MULTIPLE: four threads per rank use the library at once.
 * Each thread t, on the world communicator with tags of its own and on a
 * communicator of its own:
 *   - a ring exchange (Irecv + Send + Wait) at 8 B, 64 KiB and 1 MiB
 *     (eager, and the large-message protocols), data checked;
 *   - blocking receives from MPI_ANY_SOURCE while the other threads'
 *     messages arrive (a thread asleep in the library must be woken for
 *     its own message, not starve the others);
 *   - Probe then Recv;
 *   - Allreduce and Iallreduce + Wait on its own communicator, results
 *     checked against the closed form.
 * The main thread checks MPI_Query_thread / MPI_Is_thread_main, and the
 * world agrees on the failures at the end.  Run under TSan in CI.
 */
#include "mpitest.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define NTHREADS 4
#define ROUNDS 60

static atomic_int failures;
static MPI_Comm tcomm[NTHREADS];

#define TCHECK(cond, ...)                                                     \
	do {                                                                  \
		if (!(cond)) {                                                \
			fprintf(stderr, "FAIL rank %d: ", mt_rank);           \
			fprintf(stderr, __VA_ARGS__);                         \
			fputc('\n', stderr);                                  \
			atomic_fetch_add(&failures, 1);                       \
		}                                                             \
	} while (0)

static size_t round_len(int i)
{
	if (i % 20 == 19)
		return 1 << 20;
	return i % 5 == 4 ? 64 * 1024 : 8;
}

static void ring(int t, unsigned char *sbuf, unsigned char *rbuf)
{
	int left = (mt_rank + mt_size - 1) % mt_size, right = (mt_rank + 1) % mt_size;

	for (int i = 0; i < ROUNDS; i++) {
		size_t len = round_len(i);
		MPI_Request rq;
		MPI_Status st;
		long bad;

		mt_fill(sbuf, len, mt_rank, t * 1000 + i);
		MPI_OK(MPI_Irecv(rbuf, (int)len, MPI_BYTE, left, t, MPI_COMM_WORLD, &rq));
		MPI_OK(MPI_Send(sbuf, (int)len, MPI_BYTE, right, t, MPI_COMM_WORLD));
		MPI_OK(MPI_Wait(&rq, &st));
		bad = mt_verify(rbuf, len, left, t * 1000 + i);
		TCHECK(bad < 0 && st.MPI_TAG == t, "thread %d ring %d (%zu B): byte %ld, tag %d",
		       t, i, len, bad, st.MPI_TAG);
	}
}

static void any_source(int t)
{
	int right = (mt_rank + 1) % mt_size, tag = 100 + t;

	for (int i = 0; i < ROUNDS; i++) {
		int out[2] = { mt_rank, i }, in[2] = { -1, -1 };
		MPI_Request rq;
		MPI_Status st;

		MPI_OK(MPI_Isend(out, 2, MPI_INT, right, tag, MPI_COMM_WORLD, &rq));
		MPI_OK(MPI_Recv(in, 2, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st));
		MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
		TCHECK(in[0] == (mt_rank + mt_size - 1) % mt_size && in[1] == i &&
			       st.MPI_SOURCE == in[0],
		       "thread %d any-source %d: got (%d, %d) from %d", t, i, in[0], in[1],
		       st.MPI_SOURCE);
	}
}

static void probe(int t)
{
	int left = (mt_rank + mt_size - 1) % mt_size, right = (mt_rank + 1) % mt_size;
	int tag = 200 + t, out = mt_rank * 10 + t, in = -1, count = -1;
	MPI_Request rq;
	MPI_Status st;

	MPI_OK(MPI_Isend(&out, 1, MPI_INT, right, tag, MPI_COMM_WORLD, &rq));
	MPI_OK(MPI_Probe(left, tag, MPI_COMM_WORLD, &st));
	MPI_OK(MPI_Get_count(&st, MPI_INT, &count));
	MPI_OK(MPI_Recv(&in, 1, MPI_INT, left, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	TCHECK(count == 1 && in == left * 10 + t, "thread %d probe: count %d, value %d", t,
	       count, in);
}

static void reductions(int t)
{
	long want = (long)mt_size * (mt_size - 1) / 2 + (long)mt_size * t;

	for (int i = 0; i < ROUNDS / 4; i++) {
		long mine = mt_rank + t, sum = -1, isum = -1;
		MPI_Request rq;

		MPI_OK(MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, tcomm[t]));
		MPI_OK(MPI_Iallreduce(&mine, &isum, 1, MPI_LONG, MPI_SUM, tcomm[t], &rq));
		MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
		TCHECK(sum == want && isum == want, "thread %d allreduce %d: %ld / %ld, want %ld",
		       t, i, sum, isum, want);
	}
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg, flag = -1;
	unsigned char *sbuf = mt_malloc(1 << 20), *rbuf = mt_malloc(1 << 20);

	MPI_OK(MPI_Is_thread_main(&flag));
	TCHECK(flag == 0, "thread %d: MPI_Is_thread_main says %d", t, flag);
	ring(t, sbuf, rbuf);
	any_source(t);
	probe(t);
	reductions(t);
	free(sbuf);
	free(rbuf);
	return NULL;
}

int main(int argc, char **argv)
{
	int provided = -1, queried = -1, flag = -1, total = 0;
	pthread_t th[NTHREADS];

	alarm(240);
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
	MPI_Query_thread(&queried);
	MPI_Is_thread_main(&flag);
	TCHECK(provided == MPI_THREAD_MULTIPLE && queried == MPI_THREAD_MULTIPLE && flag == 1,
	       "provided %d, queried %d, main %d", provided, queried, flag);
	for (int t = 0; t < NTHREADS; t++)
		MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &tcomm[t]));
	for (int t = 0; t < NTHREADS; t++)
		if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) != 0) {
			fprintf(stderr, "rank %d: pthread_create failed\n", mt_rank);
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < NTHREADS; t++)
		MPI_OK(MPI_Comm_free(&tcomm[t]));
	mt_errors += atomic_load(&failures);
	MPI_Allreduce(&mt_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (mt_rank == 0)
		printf("threads: %d ranks x %d threads: %s (%d failed checks)\n", mt_size,
		       NTHREADS, total ? "FAIL" : "ok", total);
	MPI_Finalize();
	return total ? 1 : 0;
}
