/* SPDX-License-Identifier: MIT */
/*
 * Nonblocking point to point and the send modes: Isend/Irecv with Wait,
 * Waitall, Waitany, Waitsome, Test, Testall, Testany; Issend/Ssend (no
 * completion before the receive is posted), Rsend, Bsend with
 * Buffer_attach/detach, Cancel of a receive, Request_free, and posted vs
 * unexpected receives for every protocol.
 */
#include "mpitest.h"

static int left, right;

/* Many Irecvs from the left, Isends to the right, Waitall with statuses. */
static void test_waitall(void)
{
	enum { K = 16 };
	static const int len[K] = { 0, 1, 8, 100, 1000, 5000, 9000, 16384,
				    40000, 65537, 100000, 200000, 3, 1 << 20, 0, 12 };
	unsigned char *s[K], *r[K];
	MPI_Request q[2 * K];
	MPI_Status st[2 * K];

	mt_phase = "waitall";
	for (int j = 0; j < K; j++) {
		s[j] = mt_malloc((size_t)len[j]);
		r[j] = mt_malloc((size_t)len[j]);
		mt_fill(s[j], (size_t)len[j], mt_rank, j);
		MPI_OK(MPI_Irecv(r[j], len[j], MPI_BYTE, left, j, MPI_COMM_WORLD, &q[j]));
	}
	for (int j = K - 1; j >= 0; j--)   /* send in the other order */
		MPI_OK(MPI_Isend(s[j], len[j], MPI_BYTE, right, j, MPI_COMM_WORLD, &q[K + j]));
	MPI_OK(MPI_Waitall(2 * K, q, st));
	for (int j = 0; j < K; j++) {
		CHECK(q[j] == MPI_REQUEST_NULL && q[K + j] == MPI_REQUEST_NULL,
		      "Waitall left request %d active", j);
		CHECK(st[j].MPI_SOURCE == left && st[j].MPI_TAG == j &&
		      mt_get_count(&st[j], MPI_BYTE) == len[j],
		      "recv %d: status %d/%d/%d", j, st[j].MPI_SOURCE, st[j].MPI_TAG,
		      mt_get_count(&st[j], MPI_BYTE));
		CHECK(mt_verify(r[j], (size_t)len[j], left, j) < 0, "recv %d: wrong data", j);
		free(s[j]);
		free(r[j]);
	}
}

/* One message from every rank (self included) to every rank; receives
 * completed with `how` = 0 Waitany, 1 Waitsome, 2 Testany, 3 Testsome-ish
 * (Test on each), 4 Testall. */
static void all_to_all(int how)
{
	int n = mt_size, len = 20000, done = 0;
	unsigned char *s = mt_malloc((size_t)len), *r = mt_malloc((size_t)len * (size_t)n);
	MPI_Request *rq = mt_malloc(sizeof(MPI_Request) * (size_t)n);
	MPI_Request *sq = mt_malloc(sizeof(MPI_Request) * (size_t)n);
	MPI_Status *sts = mt_malloc(sizeof(MPI_Status) * (size_t)n);
	int *idx = mt_malloc(sizeof(int) * (size_t)n), *seen = mt_malloc(sizeof(int) * (size_t)n);

	mt_fill(s, (size_t)len, mt_rank, 40 + how);
	for (int i = 0; i < n; i++) {
		seen[i] = 0;
		MPI_OK(MPI_Irecv(r + (size_t)i * (size_t)len, len, MPI_BYTE, i, 3, MPI_COMM_WORLD,
				 &rq[i]));
	}
	for (int i = 0; i < n; i++)
		MPI_OK(MPI_Isend(s, len, MPI_BYTE, (mt_rank + i) % n, 3, MPI_COMM_WORLD, &sq[i]));
	while (done < n) {
		int cnt = 0, flag = 0;

		if (how == 0) {
			MPI_OK(MPI_Waitany(n, rq, &idx[0], &sts[0]));
			cnt = 1;
		} else if (how == 1) {
			MPI_OK(MPI_Waitsome(n, rq, &cnt, idx, sts));
			CHECK(cnt >= 1 && cnt <= n - done, "Waitsome outcount %d", cnt);
		} else if (how == 2) {
			MPI_OK(MPI_Testany(n, rq, &idx[0], &flag, &sts[0]));
			cnt = flag ? 1 : 0;
			CHECK(flag || idx[0] == MPI_UNDEFINED, "Testany: no flag, index %d",
			      idx[0]);
		} else if (how == 3) {
			for (int i = 0; i < n; i++) {
				if (rq[i] == MPI_REQUEST_NULL || seen[i])
					continue;
				MPI_OK(MPI_Test(&rq[i], &flag, &sts[cnt]));
				if (flag)
					idx[cnt++] = i;
			}
		} else {
			MPI_OK(MPI_Testall(n, rq, &flag, sts));
			if (flag)
				for (int i = 0; i < n; i++)
					idx[cnt++] = i;
		}
		for (int k = 0; k < cnt; k++) {
			int i = idx[k];

			if (!CHECK(i >= 0 && i < n && !seen[i], "how %d: index %d bad or repeated",
				   how, i))
				continue;
			seen[i] = 1;
			CHECK(rq[i] == MPI_REQUEST_NULL, "how %d: completed request %d not freed",
			      how, i);
			CHECK(sts[k].MPI_SOURCE == i && sts[k].MPI_TAG == 3,
			      "how %d: index %d status source %d tag %d", how, i,
			      sts[k].MPI_SOURCE, sts[k].MPI_TAG);
			CHECK(mt_verify(r + (size_t)i * (size_t)len, (size_t)len, i, 40 + how) < 0,
			      "how %d: data from %d wrong", how, i);
		}
		done += cnt;
	}
	MPI_OK(MPI_Waitall(n, sq, MPI_STATUSES_IGNORE));
	free(s);
	free(r);
	free(rq);
	free(sq);
	free(sts);
	free(idx);
	free(seen);
}

/* The calls on arrays of null requests, and on a null request. */
static void test_null_requests(void)
{
	MPI_Request q[3] = { MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL };
	MPI_Status st;
	int idx = 5, flag = 0, cnt = 5, ids[3];

	mt_phase = "null_requests";
	MPI_OK(MPI_Waitany(3, q, &idx, &st));
	CHECK(idx == MPI_UNDEFINED, "Waitany on null requests: index %d", idx);
	MPI_OK(MPI_Testany(3, q, &idx, &flag, &st));
	CHECK(flag && idx == MPI_UNDEFINED, "Testany on null requests: flag %d index %d",
	      flag, idx);
	MPI_OK(MPI_Waitsome(3, q, &cnt, ids, MPI_STATUSES_IGNORE));
	CHECK(cnt == MPI_UNDEFINED, "Waitsome on null requests: outcount %d", cnt);
	flag = 0;
	MPI_OK(MPI_Testall(3, q, &flag, MPI_STATUSES_IGNORE));
	CHECK(flag, "Testall on null requests: flag 0");
	flag = 0;
	st.MPI_SOURCE = 55;
	st.MPI_TAG = 55;
	MPI_OK(MPI_Test(&q[0], &flag, &st));
	CHECK(flag, "Test(MPI_REQUEST_NULL): flag 0");
	/* An empty status: source ANY_SOURCE, tag ANY_TAG, count 0. */
	CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG &&
	      mt_get_count(&st, MPI_BYTE) == 0, "Test(MPI_REQUEST_NULL) status %d/%d/%d",
	      st.MPI_SOURCE, st.MPI_TAG, mt_get_count(&st, MPI_BYTE));
	MPI_OK(MPI_Wait(&q[1], &st));
	CHECK(st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG,
	      "Wait(MPI_REQUEST_NULL) status %d/%d", st.MPI_SOURCE, st.MPI_TAG);
}

static void test_completion_calls(void)
{
	static const char *names[] = { "waitany", "waitsome", "testany", "test", "testall" };

	for (int how = 0; how < 5; how++) {
		mt_phase = names[how];
		all_to_all(how);
	}
	test_null_requests();
}

/* Posted-first and unexpected-first receives at every size class: the
 * sender's Isend is started before or after the receiver's Irecv exists
 * (ordered by a barrier). */
static void test_posted_unexpected(void)
{
	static const int len[] = { 0, 1, 4096, 16385, 65536, 1 << 20, (4 << 20) + 13 };

	mt_phase = "posted_unexpected";
	for (int k = 0; k < 7; k++)
		for (int posted = 0; posted < 2; posted++) {
			unsigned char *s = mt_malloc((size_t)len[k]), *r = mt_malloc((size_t)len[k]);
			MPI_Request q[2];
			MPI_Status st;
			int id = 2 * k + posted;

			mt_fill(s, (size_t)len[k], mt_rank, id);
			if (posted)
				MPI_OK(MPI_Irecv(r, len[k], MPI_BYTE, left, id, MPI_COMM_WORLD, &q[0]));
			else
				MPI_OK(MPI_Isend(s, len[k], MPI_BYTE, right, id, MPI_COMM_WORLD, &q[1]));
			MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
			mt_sleep_ms(1);
			if (posted)
				MPI_OK(MPI_Isend(s, len[k], MPI_BYTE, right, id, MPI_COMM_WORLD, &q[1]));
			else
				MPI_OK(MPI_Irecv(r, len[k], MPI_BYTE, left, id, MPI_COMM_WORLD, &q[0]));
			MPI_OK(MPI_Wait(&q[0], &st));
			MPI_OK(MPI_Wait(&q[1], MPI_STATUS_IGNORE));
			CHECK(mt_get_count(&st, MPI_BYTE) == len[k] &&
			      mt_verify(r, (size_t)len[k], left, id) < 0,
			      "%s receive of %d bytes: wrong count or data",
			      posted ? "posted" : "unexpected", len[k]);
			free(s);
			free(r);
		}
}

/* A receive posted after its large message announced itself starts its
 * copy at the next progress call, not inside MPI_Irecv: MPI_Test alone
 * must complete it (bounded: 10 s). */
static void test_unexpected_by_test(void)
{
	int len = 1 << 20, flag = 0;
	unsigned char *s = mt_malloc((size_t)len), *r = mt_malloc((size_t)len);
	MPI_Request q[2];
	double t0;

	mt_phase = "unexpected_by_test";
	mt_fill(s, (size_t)len, mt_rank, 81);
	MPI_OK(MPI_Isend(s, len, MPI_BYTE, right, 81, MPI_COMM_WORLD, &q[1]));
	/* Probed: the announcement is in the unexpected queue, not still in
	 * the ring, when the receive is posted. */
	for (t0 = MPI_Wtime(); !flag && MPI_Wtime() - t0 < 10.0;)
		MPI_OK(MPI_Iprobe(left, 81, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
	CHECK(flag, "the message did not arrive in 10 s");
	flag = 0;
	MPI_OK(MPI_Irecv(r, len, MPI_BYTE, left, 81, MPI_COMM_WORLD, &q[0]));
	t0 = MPI_Wtime();
	while (!flag && MPI_Wtime() - t0 < 10.0)
		MPI_OK(MPI_Test(&q[0], &flag, MPI_STATUS_IGNORE));
	CHECK(flag, "MPI_Test did not complete an unexpected receive in 10 s");
	if (!flag)
		MPI_OK(MPI_Wait(&q[0], MPI_STATUS_IGNORE));
	MPI_OK(MPI_Wait(&q[1], MPI_STATUS_IGNORE));
	CHECK(mt_verify(r, (size_t)len, left, 81) < 0, "unexpected receive by Test: data");
	free(s);
	free(r);
}

/* Synchronous mode: the send completes only after the matching receive is
 * posted.  Rank 0 sends to `peer` (itself when alone), which posts its
 * receive only after a delay. */
static void ssend_one(int bytes, int blocking)
{
	int peer = mt_size > 1 ? 1 : 0;
	unsigned char *b = mt_malloc((size_t)bytes + 1);
	const int delay = 150;

	mt_fill(b, (size_t)bytes, mt_rank, 50);
	if (mt_rank == 0) {
		MPI_Request q, rq = MPI_REQUEST_NULL;
		int flag = 0;
		double t0 = MPI_Wtime(), t;

		if (blocking && peer != 0) {
			double posted;

			/* MPI_Wtime is the node's monotonic clock in every rank,
			 * so the return is compared with the moment the peer
			 * posted its receive, not with our own start (which a
			 * busy machine may delay past the peer's). */
			MPI_OK(MPI_Ssend(b, bytes, MPI_BYTE, peer, 50, MPI_COMM_WORLD));
			t = MPI_Wtime();
			MPI_OK(MPI_Recv(&posted, 1, MPI_DOUBLE, peer, 51, MPI_COMM_WORLD,
					MPI_STATUS_IGNORE));
			CHECK(t >= posted, "Ssend of %d bytes returned %.3f s before the receive "
			      "was posted", bytes, posted - t);
			free(b);
			return;
		}
		MPI_OK(MPI_Issend(b, bytes, MPI_BYTE, peer, 50, MPI_COMM_WORLD, &q));
		while (MPI_Wtime() - t0 < 0.1 && !flag) {
			MPI_OK(MPI_Test(&q, &flag, MPI_STATUS_IGNORE));
			mt_sleep_ms(1);
		}
		CHECK(!flag, "Issend of %d bytes completed before the receive was posted",
		      bytes);
		if (peer == 0) {        /* alone: now post the receive ourselves */
			unsigned char *r = mt_malloc((size_t)bytes + 1);

			MPI_OK(MPI_Irecv(r, bytes, MPI_BYTE, 0, 50, MPI_COMM_WORLD, &rq));
			MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
			CHECK(mt_verify(r, (size_t)bytes, 0, 50) < 0, "Issend to self: data");
			free(r);
		}
		MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
	} else if (mt_rank == peer) {
		MPI_Status st;

		double posted;

		mt_sleep_ms(delay);
		posted = MPI_Wtime();
		MPI_OK(MPI_Recv(b, bytes, MPI_BYTE, 0, 50, MPI_COMM_WORLD, &st));
		CHECK(mt_verify(b, (size_t)bytes, 0, 50) < 0 && mt_get_count(&st, MPI_BYTE) == bytes,
		      "Ssend data of %d bytes wrong", bytes);
		if (blocking && peer != 0)
			MPI_OK(MPI_Send(&posted, 1, MPI_DOUBLE, 0, 51, MPI_COMM_WORLD));
	}
	free(b);
}

static void test_ssend(void)
{
	mt_phase = "ssend";
	ssend_one(8, 0);
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	ssend_one(0, 1);
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	ssend_one(100000, 1);
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	/* And plain Ssend around a ring, all sizes (receivers post first). */
	for (int len = 1; len <= (1 << 20); len *= 32) {
		unsigned char *s = mt_malloc((size_t)len), *r = mt_malloc((size_t)len);
		MPI_Request q;

		mt_fill(s, (size_t)len, mt_rank, 51);
		MPI_OK(MPI_Irecv(r, len, MPI_BYTE, left, 51, MPI_COMM_WORLD, &q));
		MPI_OK(MPI_Ssend(s, len, MPI_BYTE, right, 51, MPI_COMM_WORLD));
		MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
		CHECK(mt_verify(r, (size_t)len, left, 51) < 0, "Ssend ring %d bytes: data", len);
		free(s);
		free(r);
	}
}

/* Ready mode: the receive is known to be posted (barrier in between). */
static void test_rsend(void)
{
	static const int len[] = { 0, 8, 20000, 1 << 20 };

	mt_phase = "rsend";
	for (int k = 0; k < 4; k++) {
		unsigned char *s = mt_malloc((size_t)len[k]), *r = mt_malloc((size_t)len[k]);
		MPI_Request q;
		MPI_Status st;

		mt_fill(s, (size_t)len[k], mt_rank, 60 + k);
		MPI_OK(MPI_Irecv(r, len[k], MPI_BYTE, left, 60 + k, MPI_COMM_WORLD, &q));
		MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
		MPI_OK(MPI_Rsend(s, len[k], MPI_BYTE, right, 60 + k, MPI_COMM_WORLD));
		MPI_OK(MPI_Wait(&q, &st));
		CHECK(mt_get_count(&st, MPI_BYTE) == len[k] &&
		      mt_verify(r, (size_t)len[k], left, 60 + k) < 0, "Rsend %d bytes: data",
		      len[k]);
		free(s);
		free(r);
	}
}

/* Buffered mode: Bsend returns at once (the receiver has not posted yet),
 * the user buffer may be reused immediately, detach waits for delivery. */
static void test_bsend(void)
{
	static const int len[] = { 0, 100, 30000, 200000 };
	int total = 0, got_size = 0;
	char *pool, *got = NULL;
	unsigned char *s = mt_malloc(200000), *r = mt_malloc(200000);

	mt_phase = "bsend";
	for (int k = 0; k < 4; k++)
		total += len[k] + MPI_BSEND_OVERHEAD;
	pool = mt_malloc((size_t)total);
	MPI_OK(MPI_Buffer_attach(pool, total));
	for (int k = 0; k < 4; k++) {
		mt_fill(s, (size_t)len[k], mt_rank, 70 + k);
		MPI_OK(MPI_Bsend(s, len[k], MPI_BYTE, right, 70 + k, MPI_COMM_WORLD));
		memset(s, 0x5A, 200000);    /* buffered: must not affect the message */
	}
	/* The receiver takes them only now, in reverse order. */
	for (int k = 3; k >= 0; k--) {
		MPI_Status st;

		MPI_OK(MPI_Recv(r, len[k], MPI_BYTE, left, 70 + k, MPI_COMM_WORLD, &st));
		CHECK(mt_get_count(&st, MPI_BYTE) == len[k] &&
		      mt_verify(r, (size_t)len[k], left, 70 + k) < 0, "Bsend %d bytes: data",
		      len[k]);
	}
	MPI_OK(MPI_Buffer_detach(&got, &got_size));
	CHECK(got == pool && got_size == total, "Buffer_detach returned %p/%d, attached %p/%d",
	      (void *)got, got_size, (void *)pool, total);
	/* Reattach and send again: the attach/detach cycle is reusable. */
	MPI_OK(MPI_Buffer_attach(pool, total));
	mt_fill(s, 30000, mt_rank, 75);
	MPI_OK(MPI_Bsend(s, 30000, MPI_BYTE, right, 75, MPI_COMM_WORLD));
	MPI_OK(MPI_Recv(r, 30000, MPI_BYTE, left, 75, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	CHECK(mt_verify(r, 30000, left, 75) < 0, "Bsend after reattach: data");
	MPI_OK(MPI_Buffer_detach(&got, &got_size));
	free(pool);
	free(s);
	free(r);
}

/* Cancel of a receive nobody matches; Test_cancelled; a completed
 * receive is not cancelled; Request_free on a send. */
static void test_cancel_free(void)
{
	int buf[4] = { 0 }, val = 1234 + mt_rank, got = -1, flag = 0;
	MPI_Request q;
	MPI_Status st;

	mt_phase = "cancel";
	MPI_OK(MPI_Irecv(buf, 4, MPI_INT, MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &q));
	MPI_OK(MPI_Cancel(&q));
	MPI_OK(MPI_Wait(&q, &st));
	MPI_OK(MPI_Test_cancelled(&st, &flag));
	CHECK(flag, "cancelled receive: Test_cancelled false");
	CHECK(q == MPI_REQUEST_NULL, "cancelled receive: request not freed by Wait");
	/* Nobody sends tag 999 before every rank has cancelled. */
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	/* A later message with that tag is not swallowed by the dead request. */
	MPI_OK(MPI_Irecv(&got, 1, MPI_INT, left, 999, MPI_COMM_WORLD, &q));
	MPI_OK(MPI_Send(&val, 1, MPI_INT, right, 999, MPI_COMM_WORLD));
	MPI_OK(MPI_Wait(&q, &st));
	CHECK(got == 1234 + left, "receive after cancel got %d", got);
	/* Cancel after completion has no effect. */
	MPI_OK(MPI_Irecv(&got, 1, MPI_INT, left, 998, MPI_COMM_WORLD, &q));
	MPI_OK(MPI_Send(&val, 1, MPI_INT, right, 998, MPI_COMM_WORLD));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	mt_sleep_ms(5);
	MPI_OK(MPI_Cancel(&q));
	MPI_OK(MPI_Wait(&q, &st));
	MPI_OK(MPI_Test_cancelled(&st, &flag));
	/* Either outcome is legal; a cancelled receive leaves the message
	 * to be received again. */
	if (flag)
		MPI_OK(MPI_Recv(&got, 1, MPI_INT, left, 998, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	CHECK(got == 1234 + left, "receive cancelled=%d after completion got %d", flag, got);

	mt_phase = "request_free";
	{
		static int big[100000];
		int *r = mt_malloc(sizeof(big));

		for (int i = 0; i < 100000; i++)
			big[i] = i ^ mt_rank;
		MPI_OK(MPI_Isend(big, 100000, MPI_INT, right, 997, MPI_COMM_WORLD, &q));
		MPI_OK(MPI_Request_free(&q));
		CHECK(q == MPI_REQUEST_NULL, "Request_free did not reset the handle");
		MPI_OK(MPI_Recv(r, 100000, MPI_INT, left, 997, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		for (int i = 0; i < 100000; i++)
			if (!CHECK(r[i] == (i ^ left), "freed Isend: r[%d] = %d", i, r[i]))
				break;
		free(r);
		/* The send completes in the background; a barrier after the
		 * receive means every such send has been matched. */
		MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	}
}

/* Small standard sends are complete as they start (they share one
 * request, req.c), unless a protocol is forced: every completion call
 * treats them as complete sends, one handle at a time; the data arrives
 * in order. */
static void test_sent_at_once(void)
{
	enum { N = 8 };
	const char *forced = getenv("VIADUCT_MPI_PROTOCOL");
	int at_once = !forced || !strcmp(forced, "auto") || !strcmp(forced, "eager");
	static int v[N];        /* a freed send may still read it on return */
	int got[N], ids[N], flag = 0, idx = -1, out = -1;
	MPI_Request q[N], rq[N];
	MPI_Status st[N];

	mt_phase = "sent at once";
	for (int i = 0; i < N; i++) {
		v[i] = mt_rank * 100 + i;
		got[i] = -1;
		MPI_OK(MPI_Irecv(&got[i], 1, MPI_INT, left, 996, MPI_COMM_WORLD, &rq[i]));
	}
	for (int i = 0; i < N; i++)
		MPI_OK(MPI_Isend(&v[i], 1, MPI_INT, right, 996, MPI_COMM_WORLD, &q[i]));
	/* To another rank (connected by the tests before) they share one. */
	for (int i = 1; i < N && at_once && mt_size > 1; i++)
		CHECK(q[i] == q[0], "send %d did not take the short cut", i);
	MPI_OK(MPI_Request_get_status(q[0], &flag, &st[0]));
	CHECK(q[0] != MPI_REQUEST_NULL, "get_status freed the request");
	CHECK(flag || !at_once, "a small send is not complete as it starts");
	MPI_OK(MPI_Cancel(&q[0]));      /* a send completes normally */
	MPI_OK(MPI_Wait(&q[0], &st[0]));
	MPI_OK(MPI_Test_cancelled(&st[0], &flag));
	CHECK(!flag && q[0] == MPI_REQUEST_NULL, "send, then cancel: cancelled %d", flag);
	MPI_OK(MPI_Test(&q[1], &flag, MPI_STATUS_IGNORE));
	CHECK(flag || !at_once, "Test of a sent message: %d", flag);
	CHECK(!flag || q[1] == MPI_REQUEST_NULL, "Test: complete, handle kept");
	MPI_OK(MPI_Waitany(N, q, &idx, &st[0]));
	CHECK(idx >= 1 && idx < N && q[idx] == MPI_REQUEST_NULL, "Waitany: index %d", idx);
	MPI_OK(MPI_Testsome(N, q, &out, ids, st));
	CHECK(out >= 0 && (out == N - 3 || !at_once), "Testsome: %d of %d", out, N - 3);
	MPI_OK(MPI_Waitall(N, q, st));
	for (int i = 0; i < N; i++)
		CHECK(q[i] == MPI_REQUEST_NULL, "handle %d left after Waitall", i);
	MPI_OK(MPI_Waitall(N, rq, st));
	for (int i = 0; i < N; i++)
		CHECK(got[i] == left * 100 + i, "message %d: %d", i, got[i]);
	MPI_OK(MPI_Isend(&v[1], 1, MPI_INT, right, 995, MPI_COMM_WORLD, &q[0]));
	MPI_OK(MPI_Request_free(&q[0]));
	CHECK(q[0] == MPI_REQUEST_NULL, "Request_free kept the handle");
	MPI_OK(MPI_Recv(&got[0], 1, MPI_INT, left, 995, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	CHECK(got[0] == left * 100 + 1, "after Request_free: %d", got[0]);
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));    /* every freed send matched */
}

/* Nonblocking with Test loops, the only progress being our Test calls. */
static void test_test_loop(void)
{
	int len = 300000, flag = 0, spins = 0;
	unsigned char *s = mt_malloc((size_t)len), *r = mt_malloc((size_t)len);
	MPI_Request q[2];

	mt_phase = "test_loop";
	mt_fill(s, (size_t)len, mt_rank, 80);
	MPI_OK(MPI_Irecv(r, len, MPI_BYTE, left, 80, MPI_COMM_WORLD, &q[0]));
	MPI_OK(MPI_Isend(s, len, MPI_BYTE, right, 80, MPI_COMM_WORLD, &q[1]));
	while (!flag) {
		MPI_OK(MPI_Testall(2, q, &flag, MPI_STATUSES_IGNORE));
		if (++spins % 64 == 0)
			mt_sleep_ms(0);
	}
	CHECK(mt_verify(r, (size_t)len, left, 80) < 0, "Testall loop: data");
	free(s);
	free(r);
}

/* A window of eager sends larger than the peer's message ring: those that
 * wait for room are sent from the user's buffer, so each request may
 * complete only once its message is out -- a buffer overwritten the
 * moment its request completes must still arrive intact.  The receives
 * are posted first, so every protocol completes the sends. */
static void test_window_reuse(void)
{
	enum { W = 64, LEN = 8000 };
	unsigned char *s = mt_malloc((size_t)W * LEN), *r = mt_malloc((size_t)W * LEN);
	MPI_Request q[W], rq[W];
	int open = W;

	mt_phase = "window_reuse";
	for (int j = 0; j < W; j++)
		MPI_OK(MPI_Irecv(r + (size_t)j * LEN, LEN, MPI_BYTE, left, 100 + j,
				 MPI_COMM_WORLD, &rq[j]));
	for (int j = 0; j < W; j++) {
		mt_fill(s + (size_t)j * LEN, LEN, mt_rank, 100 + j);
		MPI_OK(MPI_Isend(s + (size_t)j * LEN, LEN, MPI_BYTE, right, 100 + j,
				 MPI_COMM_WORLD, &q[j]));
	}
	while (open) {
		int idx, flag;
		MPI_OK(MPI_Testany(W, q, &idx, &flag, MPI_STATUS_IGNORE));
		if (flag && idx != MPI_UNDEFINED) {
			memset(s + (size_t)idx * LEN, 0xee, LEN);
			open--;
		}
	}
	MPI_OK(MPI_Waitall(W, rq, MPI_STATUSES_IGNORE));
	for (int j = 0; j < W; j++)
		CHECK(mt_verify(r + (size_t)j * LEN, LEN, left, 100 + j) < 0,
		      "window message %d: wrong data", j);
	free(s);
	free(r);
}

int main(int argc, char **argv)
{
	static void (*const tests[])(void) = {
		test_waitall, test_window_reuse, test_completion_calls, test_posted_unexpected, test_ssend,
		test_rsend, test_bsend, test_cancel_free, test_test_loop, test_unexpected_by_test,
		test_sent_at_once,
	};

	mt_init(&argc, &argv, 60);
	left = (mt_rank + mt_size - 1) % mt_size;
	right = (mt_rank + 1) % mt_size;
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		tests[i]();
		MPI_Barrier(MPI_COMM_WORLD);
	}
	return mt_finish("p2p_nb");
}
