/* SPDX-License-Identifier: MIT */
/*
 * One-sided communication: windows of every flavor, each synchronisation
 * mode with all ranks as concurrent origins (disjoint and overlapping
 * targets), atomics (fetch-and-op counters, a compare-and-swap spin lock),
 * request forms, and the error classes under MPI_ERRORS_RETURN.  Every
 * result is checked against what a serial computation gives.
 */
#include "mpitest.h"

#include <stdint.h>

#define N 64                    /* ints per rank in the small windows */
#define BIG (1 << 18)           /* ints in the large transfers (1 MiB) */

static int val(int src, int dst, int i)
{
	return src * 100000 + dst * 1000 + i;
}

/* ---- creation, attributes, names ----------------------------------------------- */

static void test_create(void)
{
	int buf[N], *attr_unit, *flavor, *model, flag, len, gsize, cmp;
	MPI_Aint *attr_size;
	void *attr_base;
	char name[MPI_MAX_OBJECT_NAME];
	MPI_Win win;
	MPI_Group wg, cg;

	mt_phase = "create";
	MPI_OK(MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MPI_OK(MPI_Win_get_attr(win, MPI_WIN_BASE, &attr_base, &flag));
	CHECK(flag && attr_base == buf, "base %p, want %p", attr_base, (void *)buf);
	MPI_OK(MPI_Win_get_attr(win, MPI_WIN_SIZE, &attr_size, &flag));
	CHECK(flag && *attr_size == (MPI_Aint)sizeof(buf), "size");
	MPI_OK(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &attr_unit, &flag));
	CHECK(flag && *attr_unit == (int)sizeof(int), "disp unit");
	MPI_OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
	CHECK(flag && *flavor == MPI_WIN_FLAVOR_CREATE, "flavor");
	MPI_OK(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
	CHECK(flag && *model == MPI_WIN_UNIFIED, "model");
	MPI_OK(MPI_Win_get_name(win, name, &len));
	CHECK(len == 0 && name[0] == '\0', "default name '%s'", name);
	MPI_OK(MPI_Win_set_name(win, "my window"));
	MPI_OK(MPI_Win_get_name(win, name, &len));
	CHECK(len == 9 && !strcmp(name, "my window"), "name '%s'", name);
	MPI_OK(MPI_Win_get_group(win, &wg));
	MPI_OK(MPI_Group_size(wg, &gsize));
	CHECK(gsize == mt_size, "group size %d", gsize);
	MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &cg));
	MPI_OK(MPI_Group_rank(wg, &cmp));
	CHECK(cmp == mt_rank, "group rank %d", cmp);
	MPI_OK(MPI_Group_free(&wg));
	MPI_OK(MPI_Group_free(&cg));
	MPI_OK(MPI_Win_free(&win));
	CHECK(win == MPI_WIN_NULL, "handle after free");
}

/* ---- fence --------------------------------------------------------------------- */

/* Every rank puts its row into every target (disjoint parts), then gets
 * them back in the next epoch; accumulates overlap on one part. */
static void test_fence(void)
{
	int *base, src[N], got[N * 8];
	MPI_Win win;
	int n = mt_size, per = N / 8;

	mt_phase = "fence";
	MPI_OK(MPI_Win_allocate((MPI_Aint)(N * 8 * sizeof(int)), sizeof(int), MPI_INFO_NULL,
				MPI_COMM_WORLD, &base, &win));
	for (int i = 0; i < N * 8; i++)
		base[i] = -1;
	MPI_OK(MPI_Win_fence(0, win));
	/* An origin buffer may not change before its epoch ends: one row
	 * per target. */
	int *rows = mt_malloc((size_t)n * per * sizeof(int));
	for (int t = 0; t < n; t++) {
		for (int i = 0; i < per; i++)
			rows[t * per + i] = val(mt_rank, t, i);
		MPI_OK(MPI_Put(rows + t * per, per, MPI_INT, t, mt_rank * per, per, MPI_INT, win));
	}
	MPI_OK(MPI_Win_fence(0, win));
	free(rows);
	for (int s = 0; s < n; s++)
		for (int i = 0; i < per; i++)
			CHECK(base[s * per + i] == val(s, mt_rank, i), "put from %d [%d] = %d",
			      s, i, base[s * per + i]);
	/* Overlapping accumulates into the last part, and Gets of the puts. */
	for (int i = 0; i < per; i++)
		src[i] = mt_rank + 1 + i;
	if (mt_rank == 0)
		for (int i = 0; i < per; i++)
			base[7 * per + i] = 0;
	MPI_OK(MPI_Win_fence(0, win));
	for (int t = 0; t < n; t++)
		MPI_OK(MPI_Accumulate(src, per, MPI_INT, t, 7 * per, per, MPI_INT, MPI_SUM, win));
	int right = (mt_rank + 1) % n;
	MPI_OK(MPI_Get(got, n * per, MPI_INT, right, 0, n * per, MPI_INT, win));
	MPI_OK(MPI_Win_fence(0, win));
	for (int s = 0; s < n; s++)
		for (int i = 0; i < per; i++)
			CHECK(got[s * per + i] == val(s, right, i), "get [%d][%d] = %d", s, i,
			      got[s * per + i]);
	if (mt_rank == 0)
		for (int i = 0; i < per; i++)
			CHECK(base[7 * per + i] == n * (n + 1) / 2 + n * i, "acc [%d] = %d", i,
			      base[7 * per + i]);
	MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
	MPI_OK(MPI_Win_free(&win));
}

/* A Put and a Get in one epoch (different places), both complete at the
 * fence; the Get of what the Put wrote comes in the next epoch. */
static void test_put_then_get(void)
{
	int buf[4] = { 0, 0, 0, 0 }, v = 1000 + mt_rank, old = -1, again = -1;
	int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
	MPI_Win win;

	mt_phase = "put then get";
	buf[1] = 500 + mt_rank;
	MPI_OK(MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MPI_OK(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
	MPI_OK(MPI_Put(&v, 1, MPI_INT, right, 0, 1, MPI_INT, win));
	MPI_OK(MPI_Get(&old, 1, MPI_INT, right, 1, 1, MPI_INT, win));
	MPI_OK(MPI_Win_fence(0, win));
	CHECK(old == 500 + right, "get in the put's epoch %d", old);
	CHECK(buf[0] == 1000 + left, "put %d", buf[0]);
	MPI_OK(MPI_Get(&again, 1, MPI_INT, right, 0, 1, MPI_INT, win));
	MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
	CHECK(again == 1000 + mt_rank, "get after put %d", again);
	MPI_OK(MPI_Win_free(&win));
}

/* Derived datatypes on both sides, and a transfer large enough to be
 * split. */
static void test_datatypes_big(void)
{
	int *base, *src = mt_malloc(BIG * sizeof(int)), *back = mt_malloc(BIG * sizeof(int));
	int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size;
	MPI_Datatype vec;
	MPI_Win win;

	mt_phase = "datatypes and size";
	MPI_OK(MPI_Type_vector(BIG / 2, 1, 2, MPI_INT, &vec));
	MPI_OK(MPI_Type_commit(&vec));
	MPI_OK(MPI_Win_allocate((MPI_Aint)(BIG * sizeof(int)), sizeof(int), MPI_INFO_NULL,
				MPI_COMM_WORLD, &base, &win));
	for (int i = 0; i < BIG; i++) {
		base[i] = -7;
		src[i] = val(mt_rank, 0, i);
	}
	MPI_OK(MPI_Win_fence(0, win));
	/* even target slots from the first half of src; odd ones by accumulate */
	MPI_OK(MPI_Put(src, BIG / 2, MPI_INT, right, 0, 1, vec, win));
	MPI_OK(MPI_Accumulate(src, 1, vec, right, 1, 1, vec, MPI_REPLACE, win));
	MPI_OK(MPI_Win_fence(0, win));
	for (int i = 0; i < BIG / 2; i++) {
		if (!CHECK(base[2 * i] == val(left, 0, i), "even [%d] = %d", i, base[2 * i]))
			break;
		if (!CHECK(base[2 * i + 1] == val(left, 0, 2 * i), "odd [%d] = %d", i,
			   base[2 * i + 1]))
			break;
	}
	MPI_OK(MPI_Get(back, BIG, MPI_INT, right, 0, BIG, MPI_INT, win));
	MPI_OK(MPI_Win_fence(0, win));
	for (int i = 0; i < BIG / 2; i++)
		if (!CHECK(back[2 * i] == val(mt_rank, 0, i), "big get [%d] = %d", 2 * i,
			   back[2 * i]))
			break;
	/* strided Get into a strided origin buffer */
	for (int i = 0; i < BIG; i++)
		back[i] = -1;
	MPI_OK(MPI_Get(back, 1, vec, right, 0, 1, vec, win));
	MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
	for (int i = 0; i < BIG / 2; i++)
		if (!CHECK(back[2 * i] == val(mt_rank, 0, i) && back[2 * i + 1] == -1,
			   "strided get [%d]", i))
			break;
	MPI_OK(MPI_Win_free(&win));
	MPI_OK(MPI_Type_free(&vec));
	free(src);
	free(back);
}

/* ---- post / start / complete / wait ---------------------------------------------- */

static void test_pscw(void)
{
	int buf[N], src[N], flag = 0;
	MPI_Group world;
	MPI_Win win;

	mt_phase = "pscw";
	for (int i = 0; i < N; i++)
		buf[i] = 0;
	MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &world));
	MPI_OK(MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < N; i++)
			src[i] = mt_rank + 1 + round;
		MPI_OK(MPI_Win_post(world, 0, win));
		MPI_OK(MPI_Win_start(world, 0, win));
		for (int t = 0; t < mt_size; t++) {
			MPI_OK(MPI_Put(&src[0], 1, MPI_INT, t, 1 + mt_rank, 1, MPI_INT, win));
			MPI_OK(MPI_Accumulate(src, 1, MPI_INT, t, 0, 1, MPI_INT, MPI_SUM, win));
		}
		MPI_OK(MPI_Win_complete(win));
		if (round == 2) {
			while (!flag)
				MPI_OK(MPI_Win_test(win, &flag));
		} else {
			MPI_OK(MPI_Win_wait(win));
		}
		int want = 0;
		for (int s = 0; s < mt_size; s++) {
			want += s + 1 + round;
			CHECK(buf[1 + s] == s + 1 + round, "round %d from %d: %d", round, s,
			      buf[1 + s]);
		}
		CHECK(buf[0] == want, "round %d sum %d want %d", round, buf[0], want);
		buf[0] = 0;
		MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	}
	MPI_OK(MPI_Win_free(&win));
	MPI_OK(MPI_Group_free(&world));
}

/* ---- passive target ---------------------------------------------------------------- */

/* Read-modify-write with Get and Put under an exclusive lock: lost
 * updates would show if the lock did not exclude. */
static void test_lock_exclusive(void)
{
	int counter = 0, rounds = 20;
	MPI_Win win;

	mt_phase = "exclusive lock";
	MPI_OK(MPI_Win_create(&counter, sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
			      &win));
	for (int k = 0; k < rounds; k++) {
		int v = -1;
		MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
		MPI_OK(MPI_Get(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
		MPI_OK(MPI_Win_flush(0, win));
		v++;
		MPI_OK(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
		MPI_OK(MPI_Win_unlock(0, win));
	}
	/* Rank 0 only sits in the barrier meanwhile: the locks still go. */
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	if (mt_rank == 0) {
		MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
		CHECK(counter == rounds * mt_size, "counter %d want %d", counter, rounds * mt_size);
		MPI_OK(MPI_Win_unlock(0, win));
	}
	MPI_OK(MPI_Win_free(&win));
}

/* Shared locks, accumulates from everyone into everyone, and a target
 * that waits in MPI_Win_free. */
static void test_lock_shared(void)
{
	long buf[N];
	long src[N];
	MPI_Win win;

	mt_phase = "shared lock";
	for (int i = 0; i < N; i++) {
		buf[i] = 0;
		src[i] = mt_rank + i;
	}
	MPI_OK(MPI_Win_create(buf, sizeof(buf), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD,
			      &win));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	for (int t = 0; t < mt_size; t++) {
		MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
		MPI_OK(MPI_Accumulate(src, N, MPI_LONG, t, 0, N, MPI_LONG, MPI_SUM, win));
		MPI_OK(MPI_Win_unlock(t, win));
	}
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	for (int i = 0; i < N; i++)
		CHECK(buf[i] == (long)mt_size * (mt_size - 1) / 2 + (long)mt_size * i,
		      "[%d] = %ld", i, buf[i]);
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	/* Rank 0 goes straight to Win_free while the others lock it. */
	if (mt_rank != 0) {
		long one = 1;
		MPI_OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
		MPI_OK(MPI_Accumulate(&one, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM, win));
		MPI_OK(MPI_Win_unlock(0, win));
	}
	MPI_OK(MPI_Win_free(&win));
	if (mt_rank == 0)
		CHECK(buf[0] == (long)mt_size * (mt_size - 1) / 2 + mt_size - 1, "after free %ld",
		      buf[0]);
}

/* Fetch_and_op tickets are all different; the counter ends at the sum. */
static void test_fetch_and_op(void)
{
	enum { K = 25 };
	long counter = 0, one = 1, tickets[K], *all = mt_malloc(sizeof(long) * K * mt_size);
	MPI_Win win;

	mt_phase = "fetch_and_op";
	MPI_OK(MPI_Win_create(&counter, sizeof(long), sizeof(long), MPI_INFO_NULL,
			      MPI_COMM_WORLD, &win));
	MPI_OK(MPI_Win_lock_all(0, win));
	for (int k = 0; k < K; k++) {
		MPI_OK(MPI_Fetch_and_op(&one, &tickets[k], MPI_LONG, 0, 0, MPI_SUM, win));
		MPI_OK(MPI_Win_flush(0, win));
	}
	MPI_OK(MPI_Win_unlock_all(win));
	MPI_OK(MPI_Allgather(tickets, K, MPI_LONG, all, K, MPI_LONG, MPI_COMM_WORLD));
	char *seen = calloc((size_t)K * mt_size, 1);
	for (int i = 0; i < K * mt_size; i++)
		if (CHECK(all[i] >= 0 && all[i] < K * mt_size && !seen[all[i]], "ticket %ld",
			  all[i]))
			seen[all[i]] = 1;
	for (int k = 1; k < K; k++)
		CHECK(tickets[k] > tickets[k - 1], "tickets not increasing");
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	if (mt_rank == 0)
		CHECK(counter == (long)K * mt_size, "counter %ld", counter);
	long fetched = -1;
	MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
	MPI_OK(MPI_Fetch_and_op(NULL, &fetched, MPI_LONG, 0, 0, MPI_NO_OP, win));
	MPI_OK(MPI_Win_unlock(0, win));
	CHECK(fetched == (long)K * mt_size, "no_op fetch %ld", fetched);
	MPI_OK(MPI_Win_free(&win));
	free(seen);
	free(all);
}

/* A spin lock made of Compare_and_swap guards a plain Get/Put counter. */
static void test_cas_lock(void)
{
	enum { K = 10 };
	int mem[2] = { 0, 0 };          /* [0] the lock, [1] the counter */
	MPI_Win win;

	mt_phase = "cas lock";
	MPI_OK(MPI_Win_create(mem, sizeof(mem), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MPI_OK(MPI_Win_lock_all(0, win));
	for (int k = 0; k < K; k++) {
		int zero = 0, me = mt_rank + 1, prev = -1, v = -1;
		do {
			MPI_OK(MPI_Compare_and_swap(&me, &zero, &prev, MPI_INT, 0, 0, win));
			MPI_OK(MPI_Win_flush(0, win));
		} while (prev != 0);
		MPI_OK(MPI_Get(&v, 1, MPI_INT, 0, 1, 1, MPI_INT, win));
		MPI_OK(MPI_Win_flush(0, win));
		v++;
		MPI_OK(MPI_Put(&v, 1, MPI_INT, 0, 1, 1, MPI_INT, win));
		MPI_OK(MPI_Win_flush(0, win));
		MPI_OK(MPI_Compare_and_swap(&zero, &me, &prev, MPI_INT, 0, 0, win));
		MPI_OK(MPI_Win_flush(0, win));
		CHECK(prev == me, "lock held by %d, not me", prev);
	}
	MPI_OK(MPI_Win_unlock_all(win));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	if (mt_rank == 0)
		CHECK(mem[1] == K * mt_size && mem[0] == 0, "counter %d lock %d", mem[1], mem[0]);
	MPI_OK(MPI_Win_free(&win));
}

/* lock_all + flush: puts to everyone, request forms, get_accumulate. */
static void test_lock_all_requests(void)
{
	int buf[N], src[N], got[N], old[N];
	MPI_Request req[4];
	MPI_Win win;

	mt_phase = "lock_all, requests";
	for (int i = 0; i < N; i++)
		buf[i] = 0;
	MPI_OK(MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_OK(MPI_Win_lock_all(0, win));
	for (int t = 0; t < mt_size; t++) {
		src[t] = val(mt_rank, t, 0);    /* untouched until the flush */
		MPI_OK(MPI_Put(&src[t], 1, MPI_INT, t, 1 + mt_rank, 1, MPI_INT, win));
	}
	MPI_OK(MPI_Win_flush_all(win));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	int right = (mt_rank + 1) % mt_size;
	for (int i = 0; i < N; i++)
		src[i] = 1;
	MPI_OK(MPI_Rget(got, mt_size, MPI_INT, right, 1, mt_size, MPI_INT, win, &req[0]));
	MPI_OK(MPI_Raccumulate(src, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_SUM, win, &req[1]));
	MPI_OK(MPI_Rput(src, 1, MPI_INT, right, N - 1, 1, MPI_INT, win, &req[2]));
	MPI_OK(MPI_Rget_accumulate(src, 1, MPI_INT, old, 1, MPI_INT, right, N - 2, 1, MPI_INT,
				   MPI_SUM, win, &req[3]));
	MPI_OK(MPI_Waitall(4, req, MPI_STATUSES_IGNORE));
	for (int s = 0; s < mt_size; s++)
		CHECK(got[s] == val(s, right, 0), "rget [%d] = %d", s, got[s]);
	CHECK(old[0] >= 0 && old[0] < mt_size, "rget_accumulate old %d", old[0]);
	MPI_OK(MPI_Win_flush_local_all(win));
	MPI_OK(MPI_Win_flush_local(right, win));
	MPI_OK(MPI_Win_sync(win));
	MPI_OK(MPI_Win_unlock_all(win));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	CHECK(buf[0] == 1 && buf[N - 1] == 1 && buf[N - 2] == 1, "requests: %d %d %d", buf[0],
	      buf[N - 1], buf[N - 2]);
	MPI_OK(MPI_Win_free(&win));
}

/* ---- dynamic and shared windows ----------------------------------------------------- */

static void test_dynamic(void)
{
	int *mem = mt_malloc(N * sizeof(int)), *more = mt_malloc(N * sizeof(int)), v[N];
	MPI_Aint addr, *addrs = mt_malloc(sizeof(MPI_Aint) * mt_size);
	int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size, *flavor;
	int flag, err;
	MPI_Win win;

	mt_phase = "dynamic";
	for (int i = 0; i < N; i++)
		mem[i] = 0;
	MPI_OK(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	MPI_OK(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
	CHECK(flag && *flavor == MPI_WIN_FLAVOR_DYNAMIC, "flavor");
	MPI_OK(MPI_Win_attach(win, mem, N * sizeof(int)));
	CHECK(MPI_Win_attach(win, mem + 4, 4) == MPI_ERR_RMA_ATTACH, "overlapping attach");
	MPI_OK(MPI_Win_attach(win, more, N * sizeof(int)));
	addr = (MPI_Aint)(intptr_t)mem;   /* MPI_Get_address, for this test */
	MPI_OK(MPI_Allgather(&addr, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD));
	MPI_OK(MPI_Win_fence(0, win));
	for (int i = 0; i < N; i++)
		v[i] = val(mt_rank, right, i);
	MPI_OK(MPI_Put(v, N / 2, MPI_INT, right, addrs[right], N / 2, MPI_INT, win));
	for (int t = 0; t < mt_size; t++)
		MPI_OK(MPI_Accumulate(v, 1, MPI_INT, t, addrs[t] + (N - 1) * (MPI_Aint)sizeof(int),
				      1, MPI_INT, MPI_SUM, win));
	MPI_OK(MPI_Win_fence(0, win));
	for (int i = 0; i < N / 2; i++)
		CHECK(mem[i] == val(left, mt_rank, i), "dynamic put [%d] = %d", i, mem[i]);
	int want = 0;
	for (int s = 0; s < mt_size; s++)
		want += val(s, (s + 1) % mt_size, 0);
	CHECK(mem[N - 1] == want, "dynamic acc %d want %d", mem[N - 1], want);
	MPI_OK(MPI_Get(v, N / 2, MPI_INT, left, addrs[left], N / 2, MPI_INT, win));
	MPI_OK(MPI_Win_fence(0, win));
	for (int i = 0; i < N / 2; i++)
		CHECK(v[i] == val((left + mt_size - 1) % mt_size, left, i), "dynamic get [%d] = %d",
		      i, v[i]);
	/* An address nobody attached: the target refuses, the epoch says so. */
	MPI_OK(MPI_Put(v, 1, MPI_INT, right, addrs[right] + N * (MPI_Aint)sizeof(int) * 1000000,
		       1, MPI_INT, win));
	err = MPI_Win_fence(0, win);
	CHECK(err == MPI_ERR_RMA_RANGE, "unattached put: %d", err);
	MPI_OK(MPI_Win_detach(win, more));
	CHECK(MPI_Win_detach(win, more) == MPI_ERR_RMA_ATTACH, "double detach");
	MPI_OK(MPI_Win_detach(win, mem));
	MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
	MPI_OK(MPI_Win_free(&win));
	free(mem);
	free(more);
	free(addrs);
}

/* Ranks on several hosts cannot share memory: the call says so. */
static void test_shared_refused(void)
{
	int *mine = NULL, err;
	MPI_Win win = MPI_WIN_NULL;

	mt_phase = "shared across hosts";
	MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	err = MPI_Win_allocate_shared(64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &win);
	CHECK(err == MPI_ERR_RMA_SHARED && win == MPI_WIN_NULL, "allocate_shared: %d", err);
	MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

static void test_shared(void)
{
	int *mine, *other, unit;
	MPI_Aint size;
	MPI_Win win;
	int per = 8 + mt_rank;          /* different sizes per rank */

	mt_phase = "shared";
	MPI_OK(MPI_Win_allocate_shared((MPI_Aint)(per * sizeof(int)), sizeof(int), MPI_INFO_NULL,
				       MPI_COMM_WORLD, &mine, &win));
	MPI_OK(MPI_Win_lock_all(0, win));
	for (int i = 0; i < per; i++)
		mine[i] = val(mt_rank, 0, i);
	MPI_OK(MPI_Win_sync(win));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_OK(MPI_Win_sync(win));
	for (int r = 0; r < mt_size; r++) {
		MPI_OK(MPI_Win_shared_query(win, r, &size, &unit, &other));
		CHECK(size == (MPI_Aint)((8 + r) * sizeof(int)) && unit == (int)sizeof(int),
		      "query %d: %ld %d", r, (long)size, unit);
		for (int i = 0; i < 8 + r; i++)
			CHECK(other[i] == val(r, 0, i), "load from %d [%d] = %d", r, i, other[i]);
	}
	/* direct stores into the right neighbour, seen by it; RMA still works */
	int right = (mt_rank + 1) % mt_size, left = (mt_rank + mt_size - 1) % mt_size, got = -1;
	MPI_OK(MPI_Win_shared_query(win, right, &size, &unit, &other));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	other[0] = -mt_rank - 1;
	MPI_OK(MPI_Win_sync(win));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_OK(MPI_Win_sync(win));
	CHECK(mine[0] == -left - 1, "store from the left: %d", mine[0]);
	MPI_OK(MPI_Get(&got, 1, MPI_INT, right, 1, 1, MPI_INT, win));
	MPI_OK(MPI_Win_flush(right, win));
	CHECK(got == val(right, 0, 1), "get from shared %d", got);
	MPI_OK(MPI_Win_unlock_all(win));
	MPI_OK(MPI_Win_shared_query(win, MPI_PROC_NULL, &size, &unit, &other));
	CHECK(size == 8 * (MPI_Aint)sizeof(int), "PROC_NULL query");
	MPI_OK(MPI_Win_free(&win));
}

/* ---- errors -------------------------------------------------------------------------- */

static void expect(int got, int want, const char *what)
{
	int cls = -1;

	if (got != MPI_SUCCESS)
		MPI_Error_class(got, &cls);
	CHECK(cls == want, "%s: got %d, want class %d", what, got, want);
}

static void test_errors(void)
{
	int buf[N], v[4] = { 1, 2, 3, 4 }, *dummy, unit, len;
	MPI_Win win, freed;
	MPI_Aint size;
	MPI_Errhandler eh;
	char text[MPI_MAX_ERROR_STRING];

	mt_phase = "errors";
	for (int i = 0; i < N; i++)
		buf[i] = 7;
	MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	MPI_OK(MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
	MPI_OK(MPI_Win_get_errhandler(win, &eh));
	CHECK(eh == MPI_ERRORS_ARE_FATAL, "default window handler");
	MPI_OK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
	expect(MPI_Put(v, 1, MPI_INT, 0, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC, "no epoch");
	MPI_OK(MPI_Win_fence(0, win));
	int right = (mt_rank + 1) % mt_size;
	expect(MPI_Put(v, 4, MPI_INT, right, N - 2, 4, MPI_INT, win), MPI_ERR_RMA_RANGE,
	       "past the end");
	expect(MPI_Put(v, 1, MPI_INT, right, -1, 1, MPI_INT, win), MPI_ERR_RMA_RANGE,
	       "before the start");
	expect(MPI_Get(v, 1, MPI_INT, right, N, 1, MPI_INT, win), MPI_ERR_RMA_RANGE, "get past");
	expect(MPI_Accumulate(v, 2, MPI_INT, right, N - 1, 2, MPI_INT, MPI_SUM, win),
	       MPI_ERR_RMA_RANGE, "accumulate past");
	expect(MPI_Put(v, 1, MPI_INT, mt_size, 0, 1, MPI_INT, win), MPI_ERR_RANK, "bad rank");
	expect(MPI_Put(v, -1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_COUNT, "count");
	expect(MPI_Put(v, 1, MPI_DATATYPE_NULL, right, 0, 1, MPI_INT, win), MPI_ERR_TYPE, "type");
	expect(MPI_Accumulate(v, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_OP_NULL, win), MPI_ERR_OP,
	       "op");
	MPI_OK(MPI_Put(v, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win));
	MPI_OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
	for (int i = 0; i < N; i++)
		CHECK(buf[i] == 7, "a refused access wrote [%d] = %d", i, buf[i]);
	expect(MPI_Win_lock(12345, 0, 0, win), MPI_ERR_LOCKTYPE, "lock type");
	expect(MPI_Win_unlock(0, win), MPI_ERR_RMA_SYNC, "unlock without lock");
	expect(MPI_Win_fence(1, win), MPI_ERR_ASSERT, "assert");
	expect(MPI_Win_complete(win), MPI_ERR_RMA_SYNC, "complete without start");
	expect(MPI_Win_wait(win), MPI_ERR_RMA_SYNC, "wait without post");
	expect(MPI_Win_shared_query(win, 0, &size, &unit, &dummy), MPI_ERR_RMA_FLAVOR,
	       "shared_query");
	expect(MPI_Win_attach(win, buf, 4), MPI_ERR_RMA_FLAVOR, "attach");
	MPI_OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
	expect(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win), MPI_ERR_RMA_SYNC, "lock twice");
	expect(MPI_Rput(v, 1, MPI_INT, right, N, 1, MPI_INT, win, &(MPI_Request){ 0 }),
	       MPI_ERR_RMA_RANGE, "rput past");
	MPI_OK(MPI_Win_unlock(right, win));
	/* An epoch on one window is no epoch on another. */
	MPI_Win other;
	MPI_OK(MPI_Win_create(buf, sizeof(buf), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD,
			      &other));
	MPI_OK(MPI_Win_set_errhandler(other, MPI_ERRORS_RETURN));
	MPI_OK(MPI_Win_lock_all(0, win));
	expect(MPI_Put(v, 1, MPI_INT, right, 0, 1, MPI_INT, other), MPI_ERR_RMA_SYNC,
	       "put on the other window");
	expect(MPI_Win_flush(right, other), MPI_ERR_RMA_SYNC, "flush on the other window");
	MPI_OK(MPI_Win_unlock_all(win));
	MPI_OK(MPI_Win_free(&other));
	freed = win;
	MPI_OK(MPI_Win_free(&win));
	expect(MPI_Put(v, 1, MPI_INT, 0, 0, 1, MPI_INT, freed), MPI_ERR_WIN, "freed window");
	expect(MPI_Win_fence(0, freed), MPI_ERR_WIN, "fence on a freed window");
	expect(MPI_Win_free(&freed), MPI_ERR_WIN, "double free");
	expect(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, MPI_WIN_NULL), MPI_ERR_WIN, "MPI_WIN_NULL");
	expect(MPI_Win_create(buf, -1, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_ERR_SIZE,
	       "negative size");
	expect(MPI_Win_create(buf, 4, 0, MPI_INFO_NULL, MPI_COMM_WORLD, &win), MPI_ERR_DISP,
	       "disp unit");
	expect(MPI_Win_create(buf, 4, 1, MPI_INFO_NULL, MPI_COMM_NULL, &win), MPI_ERR_COMM,
	       "comm");
	MPI_OK(MPI_Error_string(MPI_ERR_RMA_RANGE, text, &len));
	CHECK(len > 0 && strstr(text, "window"), "error string '%s'", text);
	MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* Argument "hosts": the ranks are spread over several hosts. */
int main(int argc, char **argv)
{
	int hosts = argc > 1 && !strcmp(argv[1], "hosts");

	mt_init(&argc, &argv, 60);
	test_create();
	test_fence();
	test_put_then_get();
	test_datatypes_big();
	test_pscw();
	test_lock_exclusive();
	test_lock_shared();
	test_fetch_and_op();
	test_cas_lock();
	test_lock_all_requests();
	test_dynamic();
	if (hosts)
		test_shared_refused();
	else
		test_shared();
	test_errors();
	return mt_finish("rma");
}
