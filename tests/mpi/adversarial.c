/* SPDX-License-Identifier: MIT */
/*
 * Adversarial checks across the MPI families: bad input where families
 * meet must give the right error class under MPI_ERRORS_RETURN and leave
 * the library working -- never a crash, a hang or a lost object.  Each
 * section also checks the results of the correct calls around the bad
 * ones.  Optional argument: the one section to run.
 */
#include "mpitest.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#define EXPECT(cls, call)                                                     \
	do {                                                                  \
		int rc_ = (call), c_ = -1;                                    \
		MPI_Error_class(rc_, &c_);                                    \
		CHECK(rc_ != MPI_SUCCESS && c_ == (cls),                      \
		      "%s: rc %d class %d, expected %s (%d)", #call, rc_, c_, \
		      #cls, cls);                                             \
	} while (0)

static inline int left_of(int r) { return (r + mt_size - 1) % mt_size; }
static inline int right_of(int r) { return (r + 1) % mt_size; }

/* MPI_IN_PLACE is a marker, not memory: where the standard does not allow
 * it, it is a wrong buffer (it was read or written as data). */
static void test_in_place_refused(void)
{
	int x[4] = { 1, 2, 3, 4 }, y[4] = { 0 }, sum = -1;
	int *counts = mt_malloc(sizeof(int) * (size_t)mt_size);
	int *displs = mt_malloc(sizeof(int) * (size_t)mt_size);
	MPI_Request q = MPI_REQUEST_NULL;

	for (int i = 0; i < mt_size; i++) {
		counts[i] = 1;
		displs[i] = i;
	}
	EXPECT(MPI_ERR_BUFFER, MPI_Send(MPI_IN_PLACE, 1, MPI_INT, MPI_PROC_NULL, 0,
					MPI_COMM_WORLD));
	EXPECT(MPI_ERR_BUFFER, MPI_Recv(MPI_IN_PLACE, 1, MPI_INT, MPI_PROC_NULL, 0,
					MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	EXPECT(MPI_ERR_BUFFER, MPI_Isend(MPI_IN_PLACE, 1, MPI_INT, right_of(mt_rank), 0,
					 MPI_COMM_WORLD, &q));
	EXPECT(MPI_ERR_BUFFER, MPI_Send_init(MPI_IN_PLACE, 1, MPI_INT, MPI_PROC_NULL, 0,
					     MPI_COMM_WORLD, &q));
	CHECK(q == MPI_REQUEST_NULL, "a refused call made a request");
	EXPECT(MPI_ERR_BUFFER, MPI_Pack(MPI_IN_PLACE, 1, MPI_INT, y, (int)sizeof(y),
					&(int){ 0 }, MPI_COMM_WORLD));
	/* Every rank refuses these (each rank's own buffer is wrong), so no
	 * rank is left waiting in the collective. */
	EXPECT(MPI_ERR_BUFFER, MPI_Bcast(MPI_IN_PLACE, 1, MPI_INT, 0, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_BUFFER, MPI_Ibcast(MPI_IN_PLACE, 1, MPI_INT, 0, MPI_COMM_WORLD, &q));
	EXPECT(MPI_ERR_BUFFER, MPI_Allreduce(x, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM,
					     MPI_COMM_WORLD));
	EXPECT(MPI_ERR_BUFFER, MPI_Iallreduce(x, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM,
					      MPI_COMM_WORLD, &q));
	EXPECT(MPI_ERR_BUFFER, MPI_Allreduce(MPI_IN_PLACE, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM,
					     MPI_COMM_WORLD));
	EXPECT(MPI_ERR_BUFFER, MPI_Scan(x, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_BUFFER, MPI_Iscan(x, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
					 &q));
	EXPECT(MPI_ERR_BUFFER, MPI_Reduce_scatter_block(x, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM,
							MPI_COMM_WORLD));
	EXPECT(MPI_ERR_BUFFER, MPI_Alltoall(MPI_IN_PLACE, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT,
					    MPI_COMM_WORLD));
	EXPECT(MPI_ERR_BUFFER, MPI_Allgatherv(x, 1, MPI_INT, MPI_IN_PLACE, counts, displs,
					      MPI_INT, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_BUFFER, MPI_Iallgatherv(x, 1, MPI_INT, MPI_IN_PLACE, counts, displs,
					       MPI_INT, MPI_COMM_WORLD, &q));
	CHECK(q == MPI_REQUEST_NULL, "a refused collective made a request");
	/* The library still works, in place where that is allowed. */
	sum = mt_rank;
	MPI_OK(MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	CHECK(sum == mt_size * (mt_size - 1) / 2, "allreduce in place: %d", sum);
	free(counts);
	free(displs);
}

/* One-sided operations on a window of a split communicator: bad origin,
 * result and compare buffers are refused (they were read or written as
 * memory), then a put and a get with derived datatypes on both sides
 * still move the right elements. */
static void test_rma_buffers(void)
{
	int win_buf[8], got[8], one = 1, res = 0, cmp = 0;
	MPI_Comm half;
	MPI_Win w;
	MPI_Datatype every_other;
	int hr, hs;

	MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, mt_size - mt_rank, &half));
	MPI_Comm_rank(half, &hr);
	MPI_Comm_size(half, &hs);
	for (int i = 0; i < 8; i++)
		win_buf[i] = -1;
	MPI_OK(MPI_Win_create(win_buf, sizeof(win_buf), sizeof(int), MPI_INFO_NULL, half, &w));
	MPI_OK(MPI_Comm_free(&half));   /* the window keeps its own */
	MPI_OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
	MPI_OK(MPI_Type_vector(4, 1, 2, MPI_INT, &every_other));
	MPI_OK(MPI_Type_commit(&every_other));
	MPI_OK(MPI_Win_lock_all(0, w));
	EXPECT(MPI_ERR_BUFFER, MPI_Put(MPI_IN_PLACE, 1, MPI_INT, 0, 0, 1, MPI_INT, w));
	EXPECT(MPI_ERR_BUFFER, MPI_Put(NULL, 1, MPI_INT, 0, 0, 1, MPI_INT, w));
	EXPECT(MPI_ERR_BUFFER, MPI_Get(MPI_IN_PLACE, 1, MPI_INT, 0, 0, 1, MPI_INT, w));
	EXPECT(MPI_ERR_BUFFER, MPI_Accumulate(MPI_IN_PLACE, 1, MPI_INT, 0, 0, 1, MPI_INT,
					      MPI_SUM, w));
	EXPECT(MPI_ERR_BUFFER, MPI_Get_accumulate(&one, 1, MPI_INT, NULL, 1, MPI_INT, 0, 0, 1,
						  MPI_INT, MPI_SUM, w));
	EXPECT(MPI_ERR_BUFFER, MPI_Fetch_and_op(&one, MPI_IN_PLACE, MPI_INT, 0, 0, MPI_SUM, w));
	EXPECT(MPI_ERR_BUFFER, MPI_Compare_and_swap(&one, MPI_IN_PLACE, &res, MPI_INT, 0, 0, w));
	EXPECT(MPI_ERR_BUFFER, MPI_Compare_and_swap(&one, &cmp, NULL, MPI_INT, 0, 0, w));
	/* MPI_NO_OP ignores the origin: no buffer needed. */
	MPI_OK(MPI_Fetch_and_op(NULL, &res, MPI_INT, hr, 7, MPI_NO_OP, w));
	MPI_OK(MPI_Win_unlock_all(w));
	CHECK(res == -1, "fetch of an untouched element: %d", res);

	/* Every rank puts its 4 values into the even slots of its right
	 * neighbour (in the half), then reads the odd ones back whole. */
	int mine[8], right = (hr + 1) % hs;
	for (int i = 0; i < 8; i++)
		mine[i] = i % 2 ? 100 * mt_rank + i : -7;
	MPI_OK(MPI_Win_fence(0, w));
	MPI_OK(MPI_Put(mine + 1, 1, every_other, right, 0, 1, every_other, w));
	MPI_OK(MPI_Win_fence(0, w));
	for (int i = 0; i < 8; i++)
		got[i] = -9;
	MPI_OK(MPI_Get(got, 4, MPI_INT, right, 0, 1, every_other, w));
	MPI_OK(MPI_Win_fence(0, w));
	for (int i = 0; i < 4; i++)
		CHECK(got[i] == 100 * mt_rank + 2 * i + 1, "got[%d] = %d", i, got[i]);
	for (int i = 1; i < 8; i += 2)
		CHECK(win_buf[i] == -1, "odd slot %d written: %d", i, win_buf[i]);
	MPI_OK(MPI_Type_free(&every_other));
	MPI_OK(MPI_Win_free(&w));
}

/* Sendrecv_replace packs its buffer before it sends: every argument is
 * checked first (a NULL or MPI_IN_PLACE buffer was packed from, a bad
 * communicator cost a pack first). */
static void test_sendrecv_replace_args(void)
{
	int v[3] = { mt_rank, mt_rank + 1, mt_rank + 2 };
	int l = left_of(mt_rank), r = right_of(mt_rank);
	MPI_Status st;

	EXPECT(MPI_ERR_BUFFER, MPI_Sendrecv_replace(NULL, 3, MPI_INT, r, 0, l, 0,
						    MPI_COMM_WORLD, &st));
	EXPECT(MPI_ERR_BUFFER, MPI_Sendrecv_replace(MPI_IN_PLACE, 3, MPI_INT, r, 0, l, 0,
						    MPI_COMM_WORLD, &st));
	EXPECT(MPI_ERR_COMM, MPI_Sendrecv_replace(v, 3, MPI_INT, r, 0, l, 0, MPI_COMM_NULL,
						  &st));
	EXPECT(MPI_ERR_RANK, MPI_Sendrecv_replace(v, 3, MPI_INT, mt_size, 0, l, 0,
						  MPI_COMM_WORLD, &st));
	EXPECT(MPI_ERR_TAG, MPI_Sendrecv_replace(v, 3, MPI_INT, r, 0, l, -2, MPI_COMM_WORLD,
						 &st));
	EXPECT(MPI_ERR_COUNT, MPI_Sendrecv_replace(v, -3, MPI_INT, r, 0, l, 0,
						   MPI_COMM_WORLD, &st));
	MPI_OK(MPI_Sendrecv_replace(v, 3, MPI_INT, r, 4, l, 4, MPI_COMM_WORLD, &st));
	for (int i = 0; i < 3; i++)
		CHECK(v[i] == l + i, "v[%d] = %d from %d", i, v[i], l);
	CHECK(st.MPI_SOURCE == l && mt_get_count(&st, MPI_INT) == 3, "status %d %d",
	      st.MPI_SOURCE, mt_get_count(&st, MPI_INT));
	MPI_OK(MPI_Sendrecv_replace(NULL, 0, MPI_INT, MPI_PROC_NULL, 0, MPI_PROC_NULL, 0,
				    MPI_COMM_WORLD, &st));
	CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "PROC_NULL source %d", st.MPI_SOURCE);
}

/* Persistent requests outlive their communicator's handle: after
 * MPI_Comm_free they still run on that communicator -- not on a newer one
 * that got the same handle -- with a struct-of-subarray datatype the
 * program freed too. */
static void test_persistent_freed_comm(void)
{
	int sizes[1] = { 10 }, sub[1] = { 4 }, start[1] = { 3 };
	int sbuf[10], rbuf[10], other = -1, flag = 0;
	int bl[2] = { 1, 1 };
	MPI_Aint disp[2] = { 0, 0 };
	MPI_Datatype piece, two[2], both;
	MPI_Comm dup, newer;
	MPI_Request pr[2], oq;
	MPI_Status st;
	int l = left_of(mt_rank), r = right_of(mt_rank);

	MPI_OK(MPI_Type_create_subarray(1, sizes, sub, start, MPI_ORDER_C, MPI_INT, &piece));
	two[0] = piece;
	two[1] = MPI_INT;               /* and the element right after it */
	disp[1] = (MPI_Aint)sizeof(int) * 7;
	MPI_OK(MPI_Type_create_struct(2, bl, disp, two, &both));
	MPI_OK(MPI_Type_commit(&both));
	MPI_OK(MPI_Type_free(&piece));
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
	MPI_OK(MPI_Send_init(sbuf, 1, both, r, 21, dup, &pr[0]));
	MPI_OK(MPI_Recv_init(rbuf, 1, both, l, 21, dup, &pr[1]));
	MPI_OK(MPI_Type_free(&both));
	MPI_OK(MPI_Comm_free(&dup));
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &newer));   /* may reuse the handle */
	MPI_OK(MPI_Irecv(&other, 1, MPI_INT, l, 21, newer, &oq));
	for (int it = 0; it < 3; it++) {
		for (int i = 0; i < 10; i++) {
			sbuf[i] = 1000 * mt_rank + 10 * it + i;
			rbuf[i] = -1;
		}
		MPI_OK(MPI_Startall(2, pr));
		MPI_OK(MPI_Wait(&pr[0], MPI_STATUS_IGNORE));
		MPI_OK(MPI_Wait(&pr[1], &st));
		for (int i = 0; i < 10; i++) {
			int want = i >= 3 && i <= 7 ? 1000 * l + 10 * it + i : -1;
			CHECK(rbuf[i] == want, "iteration %d: rbuf[%d] = %d, want %d", it, i,
			      rbuf[i], want);
		}
		CHECK(mt_get_count(&st, MPI_INT) == 5, "count %d", mt_get_count(&st, MPI_INT));
	}
	/* Nobody sends on the newer one before everyone has looked. */
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_OK(MPI_Test(&oq, &flag, MPI_STATUS_IGNORE));
	CHECK(!flag, "a receive on the newer communicator got the freed one's message");
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_OK(MPI_Send(&mt_rank, 1, MPI_INT, r, 21, newer));
	MPI_OK(MPI_Wait(&oq, MPI_STATUS_IGNORE));
	CHECK(other == l, "newer communicator's message: %d", other);
	MPI_OK(MPI_Request_free(&pr[0]));
	MPI_OK(MPI_Request_free(&pr[1]));
	MPI_OK(MPI_Comm_free(&newer));
}

/* A request's error goes to its own communicator's or window's error
 * handler: here those return errors while MPI_COMM_WORLD's would end the
 * job (Testsome/Waitsome raised on MPI_COMM_WORLD, a one-sided request's
 * wait on the communicator of nobody). */
static void test_errors_on_request_owner(void)
{
	int small = -1, big[4] = { 1, 2, 3, 4 }, out = 0, idx[1];
	MPI_Comm mine;
	MPI_Request q;
	MPI_Status st[1];
	MPI_Win w;
	int r = right_of(mt_rank);

	MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &mine));
	MPI_OK(MPI_Comm_set_errhandler(mine, MPI_ERRORS_RETURN));

	MPI_OK(MPI_Irecv(&small, 1, MPI_INT, mt_rank, 3, mine, &q));
	MPI_OK(MPI_Send(big, 4, MPI_INT, mt_rank, 3, mine));
	int rc;
	do
		rc = MPI_Testsome(1, &q, &out, idx, st);
	while (rc == MPI_SUCCESS && out == 0);
	EXPECT(MPI_ERR_IN_STATUS, rc);
	CHECK(out == 1 && st[0].MPI_ERROR == MPI_ERR_TRUNCATE, "testsome: %d, status error %d",
	      out, st[0].MPI_ERROR);

	MPI_OK(MPI_Irecv(&small, 1, MPI_INT, mt_rank, 4, mine, &q));
	MPI_OK(MPI_Send(big, 2, MPI_INT, mt_rank, 4, mine));
	EXPECT(MPI_ERR_IN_STATUS, MPI_Waitsome(1, &q, &out, idx, st));
	CHECK(out == 1 && st[0].MPI_ERROR == MPI_ERR_TRUNCATE, "waitsome: %d, status error %d",
	      out, st[0].MPI_ERROR);
	CHECK(small == 1, "truncated receive kept %d", small);

	/* Nothing is attached at the target: the target refuses, the wait
	 * reports it through the window. */
	MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, mine, &w));
	MPI_OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
	MPI_OK(MPI_Win_lock_all(0, w));
	MPI_OK(MPI_Rput(big, 1, MPI_INT, r, 4096, 1, MPI_INT, w, &q));
	EXPECT(MPI_ERR_RMA_RANGE, MPI_Wait(&q, MPI_STATUS_IGNORE));
	MPI_OK(MPI_Rget(&small, 1, MPI_INT, r, 4096, 1, MPI_INT, w, &q));
	int index = -1;
	EXPECT(MPI_ERR_RMA_RANGE, MPI_Waitany(1, &q, &index, MPI_STATUS_IGNORE));
	MPI_OK(MPI_Win_unlock_all(w));
	MPI_OK(MPI_Win_free(&w));

	MPI_OK(MPI_Comm_free(&mine));
	MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
}

/* Bytes the heap holds now, or 0 where that cannot be told. */
static size_t heap_in_use(void)
{
#ifdef __GLIBC__
	return mallinfo2().uordblks;
#else
	return 0;
#endif
}

/* Windows created and freed over and over: each freed one's memory goes
 * (the handle table grew by a slot per window ever made), a freed
 * window's handle stays invalid although a newer window took its place,
 * and the newer one works. */
static void test_window_churn(void)
{
	enum { ROUNDS = 1000 };
	int buf[2] = { 0, 0 }, one = 1;
	MPI_Win w, stale;
	size_t before, after;

	for (int i = 0; i < 50; i++) {          /* let every table reach its size */
		MPI_OK(MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL,
				      MPI_COMM_WORLD, &w));
		MPI_OK(MPI_Win_free(&w));
	}
	before = heap_in_use();
	for (int i = 0; i < ROUNDS; i++) {
		MPI_OK(MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL,
				      MPI_COMM_WORLD, &w));
		MPI_OK(MPI_Win_free(&w));
	}
	after = heap_in_use();
	CHECK(after < before + ROUNDS * 2, "%zu bytes more after %d windows", after - before,
	      ROUNDS);

	MPI_OK(MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
			      &stale));
	MPI_Win old = stale;
	MPI_OK(MPI_Win_free(&stale));
	MPI_OK(MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w));
	MPI_OK(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
	EXPECT(MPI_ERR_WIN, MPI_Win_fence(0, old));
	EXPECT(MPI_ERR_WIN, MPI_Put(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, old));
	MPI_OK(MPI_Win_fence(0, w));
	MPI_OK(MPI_Accumulate(&one, 1, MPI_INT, right_of(mt_rank), 1, 1, MPI_INT, MPI_SUM, w));
	MPI_OK(MPI_Win_fence(0, w));
	CHECK(buf[0] == 0 && buf[1] == 1, "window after churn: %d %d", buf[0], buf[1]);
	MPI_OK(MPI_Win_free(&w));
}

/* Datatype attributes meet MPI_Type_dup: the copy callbacks run (the
 * duplicate had no attributes at all), a callback may call MPI, and a
 * failing one fails the duplicate. */
static int copy_plus_size(MPI_Datatype old, int keyval, void *extra, void *in, void *out,
			  int *flag)
{
	int size = 0;

	(void)keyval, (void)extra;
	MPI_Type_size(old, &size);
	*(void **)out = (char *)in + size;
	*flag = 1;
	return MPI_SUCCESS;
}

static int copy_refuse(MPI_Datatype old, int keyval, void *extra, void *in, void *out,
		       int *flag)
{
	(void)old, (void)keyval, (void)extra, (void)in, (void)out, (void)flag;
	return MPI_ERR_OTHER;
}

static void test_type_dup_attributes(void)
{
	int kv_dup, kv_plus, kv_refuse, flag = 0;
	MPI_Datatype pair, twin = MPI_DATATYPE_NULL, failed = 12345;
	void *v = NULL;

	MPI_OK(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &kv_dup, NULL));
	MPI_OK(MPI_Type_create_keyval(copy_plus_size, MPI_TYPE_NULL_DELETE_FN, &kv_plus, NULL));
	MPI_OK(MPI_Type_create_keyval(copy_refuse, MPI_TYPE_NULL_DELETE_FN, &kv_refuse, NULL));
	MPI_OK(MPI_Type_contiguous(2, MPI_INT, &pair));
	MPI_OK(MPI_Type_set_attr(pair, kv_dup, (void *)(size_t)11));
	MPI_OK(MPI_Type_set_attr(pair, kv_plus, (void *)(size_t)100));
	MPI_OK(MPI_Type_dup(pair, &twin));
	MPI_OK(MPI_Type_get_attr(twin, kv_dup, &v, &flag));
	CHECK(flag && v == (void *)(size_t)11, "MPI_TYPE_DUP_FN: flag %d value %p", flag, v);
	flag = 0;
	MPI_OK(MPI_Type_get_attr(twin, kv_plus, &v, &flag));
	CHECK(flag && v == (void *)(size_t)(100 + 2 * sizeof(int)), "copy callback: flag %d %p",
	      flag, v);
	MPI_OK(MPI_Type_free(&twin));

	MPI_OK(MPI_Type_set_attr(pair, kv_refuse, (void *)(size_t)1));
	EXPECT(MPI_ERR_OTHER, MPI_Type_dup(pair, &failed));
	CHECK(failed == MPI_DATATYPE_NULL, "a failed duplicate is %d", (int)failed);
	MPI_OK(MPI_Type_delete_attr(pair, kv_refuse));
	MPI_OK(MPI_Type_dup(pair, &twin));
	MPI_OK(MPI_Type_free(&twin));
	MPI_OK(MPI_Type_free(&pair));
	MPI_OK(MPI_Type_free_keyval(&kv_dup));
	MPI_OK(MPI_Type_free_keyval(&kv_plus));
	MPI_OK(MPI_Type_free_keyval(&kv_refuse));
}

struct section {
	const char *name;
	void (*run)(void);
};

static const struct section sections[] = {
	{ "in_place_refused", test_in_place_refused },
	{ "rma_buffers", test_rma_buffers },
	{ "sendrecv_replace_args", test_sendrecv_replace_args },
	{ "persistent_freed_comm", test_persistent_freed_comm },
	{ "errors_on_request_owner", test_errors_on_request_owner },
	{ "window_churn", test_window_churn },
	{ "type_dup_attributes", test_type_dup_attributes },
};

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;

	mt_init(&argc, &argv, 30);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		if (only && strcmp(only, sections[i].name))
			continue;
		mt_phase = sections[i].name;
		sections[i].run();
		MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	}
	return mt_finish("adversarial");
}
