/* SPDX-License-Identifier: MIT */
/*
 * Point to point beyond the basics: persistent requests (Send_init and
 * kin, Start, Startall, inactive requests in every wait and test),
 * Testsome / Waitsome counts, Request_get_status, matched probe
 * (Mprobe / Improbe / Mrecv / Imrecv from many senders, every protocol),
 * Cancel, Ibsend / Irsend, generalized requests, the status setters and
 * Get_count, and the error classes under MPI_ERRORS_RETURN.
 */
#include "mpitest.h"

static int left, right;

static int error_class(int code)
{
	int cls = -1;

	MPI_Error_class(code, &cls);
	return cls;
}

#define EXPECT_ERR(call, cls)                                                   \
	do {                                                                    \
		int e_ = (call);                                                \
		CHECK(error_class(e_) == (cls), "%s gave %d, expected %s", #call, \
		      e_, #cls);                                                \
	} while (0)

static int is_empty_status(const MPI_Status *st)
{
	int n = -1, c = -1;

	MPI_Get_count(st, MPI_BYTE, &n);
	MPI_Test_cancelled(st, &c);
	return st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && n == 0 &&
	       c == 0;
}

/* ---- persistent requests ---------------------------------------------------------------- */

/* Complete both requests of q with completion method `how`, checking
 * they stay allocated; the receive's status goes to *rst. */
static void complete_two(MPI_Request q[2], int how, MPI_Status *rst)
{
	MPI_Status st[2];
	int flag = 0, idx[2], out = 0, got = 0;

	switch (how) {
	case 0:
		MPI_OK(MPI_Waitall(2, q, st));
		*rst = st[0];
		break;
	case 1:
		while (!flag)
			MPI_OK(MPI_Testall(2, q, &flag, st));
		*rst = st[0];
		break;
	case 2:
		MPI_OK(MPI_Wait(&q[0], rst));
		MPI_OK(MPI_Wait(&q[1], MPI_STATUS_IGNORE));
		break;
	case 3:
		for (int k = 0; k < 2; k++) {
			MPI_OK(MPI_Waitany(2, q, &idx[0], &st[0]));
			if (idx[0] == 0)
				*rst = st[0];
		}
		/* both inactive now: like null requests */
		MPI_OK(MPI_Waitany(2, q, &idx[0], &st[0]));
		CHECK(idx[0] == MPI_UNDEFINED, "Waitany on inactive requests gave %d", idx[0]);
		break;
	case 4:
		while (got < 2) {
			MPI_OK(MPI_Testsome(2, q, &out, idx, st));
			CHECK(out != MPI_UNDEFINED, "Testsome: undefined while active");
			for (int k = 0; k < out; k++, got++)
				if (idx[k] == 0)
					*rst = st[k];
		}
		MPI_OK(MPI_Testsome(2, q, &out, idx, st));
		CHECK(out == MPI_UNDEFINED, "Testsome on inactive requests gave %d", out);
		break;
	case 5:
		while (got < 2) {
			MPI_OK(MPI_Waitsome(2, q, &out, idx, st));
			for (int k = 0; k < out; k++, got++)
				if (idx[k] == 0)
					*rst = st[k];
		}
		break;
	default:
		for (int k = 0; k < 2;) {
			MPI_OK(MPI_Testany(2, q, &idx[0], &flag, &st[0]));
			if (flag && idx[0] == 0)
				*rst = st[0];
			k += flag;
		}
		MPI_OK(MPI_Testany(2, q, &idx[0], &flag, &st[0]));
		CHECK(flag && idx[0] == MPI_UNDEFINED, "Testany on inactive: %d %d", flag, idx[0]);
		break;
	}
	CHECK(q[0] != MPI_REQUEST_NULL && q[1] != MPI_REQUEST_NULL,
	      "completion %d freed a persistent request", how);
}

/* Ring exchange restarted many times, completed every way in turn. */
static void persistent_ring(size_t len, int tag)
{
	enum { ITER = 28 };
	unsigned char *s = mt_malloc(len), *r = mt_malloc(len);
	MPI_Request q[2];
	MPI_Status st;

	mt_phase = "persistent ring";
	MPI_OK(MPI_Recv_init(r, (int)len, MPI_BYTE, left, tag, MPI_COMM_WORLD, &q[0]));
	MPI_OK(MPI_Send_init(s, (int)len, MPI_BYTE, right, tag, MPI_COMM_WORLD, &q[1]));
	/* inactive: returns at once with an empty status */
	MPI_OK(MPI_Wait(&q[0], &st));
	CHECK(q[0] != MPI_REQUEST_NULL && is_empty_status(&st), "Wait on an inactive request");
	for (int it = 0; it < ITER; it++) {
		mt_fill(s, len, mt_rank, it);
		memset(r, 0xee, len);
		MPI_OK(MPI_Startall(2, q));
		complete_two(q, it % 7, &st);
		CHECK(st.MPI_SOURCE == left && st.MPI_TAG == tag &&
		      mt_get_count(&st, MPI_BYTE) == (int)len,
		      "len %zu it %d: status %d/%d/%d", len, it, st.MPI_SOURCE, st.MPI_TAG,
		      mt_get_count(&st, MPI_BYTE));
		CHECK(mt_verify(r, len, left, it) < 0, "len %zu it %d: wrong data", len, it);
	}
	MPI_OK(MPI_Request_free(&q[0]));
	MPI_OK(MPI_Request_free(&q[1]));
	CHECK(q[0] == MPI_REQUEST_NULL && q[1] == MPI_REQUEST_NULL, "Request_free left handles");
	free(s);
	free(r);
}

/* Startall over sends and receives of every mode, in mixed order. */
static void persistent_modes(void)
{
	enum { ITER = 10, N = 64 };
	int sl[N], sr[N], sb[N], rl[N], rr[N], rb[N];
	int bufsize = 4 * (N * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
	void *battach = mt_malloc((size_t)bufsize), *det;
	MPI_Request q[6];
	MPI_Status st[6];
	int dsize;

	mt_phase = "persistent modes";
	MPI_OK(MPI_Buffer_attach(battach, bufsize));
	MPI_OK(MPI_Ssend_init(sr, N, MPI_INT, right, 7, MPI_COMM_WORLD, &q[0]));
	MPI_OK(MPI_Recv_init(rl, N, MPI_INT, left, 7, MPI_COMM_WORLD, &q[1]));
	MPI_OK(MPI_Send_init(sl, N, MPI_INT, left, 8, MPI_COMM_WORLD, &q[2]));
	MPI_OK(MPI_Recv_init(rr, N, MPI_INT, right, 8, MPI_COMM_WORLD, &q[3]));
	MPI_OK(MPI_Bsend_init(sb, N, MPI_INT, right, 9, MPI_COMM_WORLD, &q[4]));
	MPI_OK(MPI_Recv_init(rb, N, MPI_INT, left, 9, MPI_COMM_WORLD, &q[5]));
	for (int it = 0; it < ITER; it++) {
		for (int i = 0; i < N; i++) {
			sr[i] = mt_rank * 100000 + it * 1000 + i;
			sl[i] = -sr[i];
			sb[i] = sr[i] + 7;
		}
		MPI_OK(MPI_Startall(6, q));
		EXPECT_ERR(MPI_Start(&q[1]), MPI_ERR_REQUEST);  /* active */
		MPI_OK(MPI_Waitall(6, q, st));
		for (int i = 0; i < N; i++) {
			int from_left = left * 100000 + it * 1000 + i;
			int from_right = right * 100000 + it * 1000 + i;
			if (!CHECK(rl[i] == from_left && rr[i] == -from_right &&
				   rb[i] == from_left + 7,
				   "it %d [%d]: %d %d %d", it, i, rl[i], rr[i], rb[i]))
				break;
		}
		CHECK(st[3].MPI_SOURCE == right && st[3].MPI_TAG == 8, "status of rr");
	}
	for (int i = 0; i < 6; i++)
		MPI_OK(MPI_Request_free(&q[i]));
	MPI_OK(MPI_Buffer_detach(&det, &dsize));
	CHECK(det == battach && dsize == bufsize, "Buffer_detach");
	free(battach);
}

/* Rsend_init needs the receive posted first. */
static void persistent_ready(void)
{
	int v = 0, w = mt_rank + 1000;
	MPI_Request rq, sq;

	mt_phase = "persistent ready";
	MPI_OK(MPI_Recv_init(&v, 1, MPI_INT, left, 11, MPI_COMM_WORLD, &rq));
	MPI_OK(MPI_Rsend_init(&w, 1, MPI_INT, right, 11, MPI_COMM_WORLD, &sq));
	for (int it = 0; it < 3; it++) {
		MPI_OK(MPI_Start(&rq));
		MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
		w = mt_rank + 1000 + it;
		MPI_OK(MPI_Start(&sq));
		MPI_OK(MPI_Wait(&sq, MPI_STATUS_IGNORE));
		MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
		CHECK(v == left + 1000 + it, "Rsend_init it %d: %d", it, v);
	}
	MPI_OK(MPI_Request_free(&rq));
	MPI_OK(MPI_Request_free(&sq));
}

/* A strided datatype freed right after the inits: the requests keep it. */
static void persistent_dtype(void)
{
	enum { COUNT = 2, BLK = 3, STRIDE = 5, SPAN = (COUNT - 1) * STRIDE + BLK };
	int s[SPAN], r[SPAN];
	MPI_Datatype vec;
	MPI_Request q[2];

	mt_phase = "persistent dtype";
	MPI_OK(MPI_Type_vector(COUNT, BLK, STRIDE, MPI_INT, &vec));
	MPI_OK(MPI_Type_commit(&vec));
	MPI_OK(MPI_Recv_init(r, 1, vec, left, 15, MPI_COMM_WORLD, &q[0]));
	MPI_OK(MPI_Send_init(s, 1, vec, right, 15, MPI_COMM_WORLD, &q[1]));
	MPI_OK(MPI_Type_free(&vec));
	for (int it = 0; it < 4; it++) {
		for (int i = 0; i < SPAN; i++) {
			s[i] = mt_rank * 1000 + it * 100 + i;
			r[i] = -1;
		}
		MPI_OK(MPI_Startall(2, q));
		MPI_OK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
		for (int i = 0; i < SPAN; i++) {
			int in_block = i % STRIDE < BLK;
			int want = in_block ? left * 1000 + it * 100 + i : -1;
			if (!CHECK(r[i] == want, "it %d [%d]: %d, expected %d", it, i, r[i], want))
				break;
		}
	}
	MPI_OK(MPI_Request_free(&q[0]));
	MPI_OK(MPI_Request_free(&q[1]));
}

/* Request_get_status does not complete: the wait after it still reports. */
static void get_status(void)
{
	int v = 0, w = 42 + mt_rank, flag = 0;
	MPI_Request q[2];
	MPI_Status st;

	mt_phase = "request_get_status";
	MPI_OK(MPI_Recv_init(&v, 1, MPI_INT, left, 12, MPI_COMM_WORLD, &q[0]));
	MPI_OK(MPI_Isend(&w, 1, MPI_INT, right, 12, MPI_COMM_WORLD, &q[1]));
	MPI_OK(MPI_Request_get_status(q[0], &flag, &st));
	CHECK(flag && is_empty_status(&st), "inactive: flag %d", flag);
	MPI_OK(MPI_Start(&q[0]));
	for (flag = 0; !flag;)
		MPI_OK(MPI_Request_get_status(q[0], &flag, &st));
	CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 12 && v == 42 + left, "peeked status");
	MPI_OK(MPI_Request_get_status(q[0], &flag, &st));     /* again: the same */
	CHECK(flag && st.MPI_SOURCE == left, "second peek");
	MPI_OK(MPI_Wait(&q[0], &st));
	CHECK(st.MPI_SOURCE == left && mt_get_count(&st, MPI_INT) == 1, "wait after peek");
	MPI_OK(MPI_Wait(&q[1], MPI_STATUS_IGNORE));
	MPI_OK(MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &st));
	CHECK(flag && is_empty_status(&st), "null request");
	MPI_OK(MPI_Request_free(&q[0]));
}

/* ---- Testsome / Waitsome ------------------------------------------------------------------ */

/* K messages from every rank to every rank; receives completed by
 * Testsome among null and inactive requests, sends by Waitsome. */
static void some_counts(void)
{
	enum { K = 3, PAD = 3 };
	int n = mt_size * K, total = n + PAD, got = 0, out, dummy;
	int *rv = mt_malloc(sizeof(int) * (size_t)n), *sv = mt_malloc(sizeof(int) * (size_t)n);
	int *seen = calloc((size_t)total, sizeof(int)), *idx = mt_malloc(sizeof(int) * (size_t)total);
	MPI_Request *rq = mt_malloc(sizeof(MPI_Request) * (size_t)total);
	MPI_Request *sq = mt_malloc(sizeof(MPI_Request) * (size_t)n);
	MPI_Status *st = mt_malloc(sizeof(MPI_Status) * (size_t)total);

	mt_phase = "testsome/waitsome";
	rq[0] = MPI_REQUEST_NULL;
	MPI_OK(MPI_Recv_init(&dummy, 1, MPI_INT, 0, 13, MPI_COMM_WORLD, &rq[1]));
	rq[2] = MPI_REQUEST_NULL;
	for (int i = 0; i < n; i++)
		MPI_OK(MPI_Irecv(&rv[i], 1, MPI_INT, i / K, 14 + i % K, MPI_COMM_WORLD,
				 &rq[PAD + i]));
	for (int i = 0; i < n; i++) {
		sv[i] = mt_rank * 1000 + i % K;
		MPI_OK(MPI_Isend(&sv[i], 1, MPI_INT, i / K, 14 + i % K, MPI_COMM_WORLD, &sq[i]));
	}
	while (got < n) {
		MPI_OK(MPI_Testsome(total, rq, &out, idx, st));
		if (!CHECK(out >= 0 && out <= n - got, "Testsome outcount %d (%d left)", out, n - got))
			break;
		for (int k = 0; k < out; k++) {
			int i = idx[k] - PAD;
			CHECK(i >= 0 && !seen[idx[k]]++, "index %d reported twice or bad", idx[k]);
			CHECK(i >= 0 && rv[i] == (i / K) * 1000 + i % K && st[k].MPI_SOURCE == i / K,
			      "recv %d: %d from %d", i, i >= 0 ? rv[i] : -1, st[k].MPI_SOURCE);
			CHECK(rq[idx[k]] == MPI_REQUEST_NULL, "completed request not freed");
		}
		got += out;
	}
	MPI_OK(MPI_Testsome(total, rq, &out, idx, st));
	CHECK(out == MPI_UNDEFINED, "Testsome with only null/inactive left: %d", out);
	for (got = 0; got < n;) {
		MPI_OK(MPI_Waitsome(n, sq, &out, idx, MPI_STATUSES_IGNORE));
		CHECK(out >= 1, "Waitsome outcount %d", out);
		got += out > 0 ? out : n;
	}
	MPI_OK(MPI_Waitsome(n, sq, &out, idx, MPI_STATUSES_IGNORE));
	CHECK(out == MPI_UNDEFINED, "Waitsome on null requests: %d", out);
	MPI_OK(MPI_Request_free(&rq[1]));
	free(rv), free(sv), free(seen), free(idx), free(rq), free(sq), free(st);
}

/* ---- matched probe ------------------------------------------------------------------------ */

enum { MP_SIZES = 6, MP_PER = 12 };
static const int mp_size[MP_SIZES] = { 0, 10, 8192, 8193, 65536, 4 << 20 };

/* Rank 0 takes every message (all ranks send it MP_PER, sizes around the
 * protocol switch) with ANY_SOURCE matched probes.  Every other time a
 * plain receive for ANY_SOURCE/ANY_TAG is posted between the probe and
 * the Mrecv: it must get a different message. */
static void mprobe_many(void)
{
	int total = mt_size * MP_PER, taken = 0;
	unsigned char *s[MP_PER], *a = NULL, *b = NULL;
	char *seen = calloc((size_t)total, 1);
	MPI_Request sq[MP_PER];

	mt_phase = "mprobe";
	for (int j = 0; j < MP_PER; j++) {
		size_t len = (size_t)mp_size[j % MP_SIZES];
		s[j] = mt_malloc(len);
		mt_fill(s[j], len, mt_rank, j);
		MPI_OK(MPI_Isend(s[j], (int)len, MPI_BYTE, 0, j, MPI_COMM_WORLD, &sq[j]));
	}
	if (mt_rank == 0) {
		a = mt_malloc((size_t)(4 << 20));
		b = mt_malloc((size_t)(4 << 20));
	}
	while (mt_rank == 0 && taken < total) {
		MPI_Message m = MPI_MESSAGE_NULL;
		MPI_Request other = MPI_REQUEST_NULL, rr;
		MPI_Status ps, rs, os;
		int flag = 0, both = taken + 1 < total && (taken & 1);

		if (taken & 2)
			MPI_OK(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &m, &ps));
		else
			while (!flag)
				MPI_OK(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
						   &flag, &m, &ps));
		CHECK(m != MPI_MESSAGE_NULL && m != MPI_MESSAGE_NO_PROC, "no message handle");
		if (both)
			MPI_OK(MPI_Irecv(b, 4 << 20, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
					 MPI_COMM_WORLD, &other));
		if (taken & 4) {
			MPI_OK(MPI_Imrecv(a, 4 << 20, MPI_BYTE, &m, &rr));
			MPI_OK(MPI_Wait(&rr, &rs));
		} else {
			MPI_OK(MPI_Mrecv(a, 4 << 20, MPI_BYTE, &m, &rs));
		}
		CHECK(m == MPI_MESSAGE_NULL, "Mrecv left the message handle");
		MPI_OK(MPI_Wait(&other, &os));
		for (int k = 0; k < 1 + both; k++) {
			MPI_Status *x = k ? &os : &rs;
			int src = x->MPI_SOURCE, tag = x->MPI_TAG, len = mt_get_count(x, MPI_BYTE);
			if (!CHECK(src >= 0 && src < mt_size && tag >= 0 && tag < MP_PER,
				   "status %d/%d", src, tag))
				continue;
			CHECK(!seen[src * MP_PER + tag]++, "message %d/%d received twice", src, tag);
			CHECK(len == mp_size[tag % MP_SIZES], "%d/%d: %d bytes", src, tag, len);
			CHECK(mt_verify(k ? b : a, (size_t)len, src, tag) < 0, "%d/%d: data", src, tag);
			taken++;
		}
		CHECK(ps.MPI_SOURCE == rs.MPI_SOURCE && ps.MPI_TAG == rs.MPI_TAG &&
		      mt_get_count(&ps, MPI_BYTE) == mt_get_count(&rs, MPI_BYTE),
		      "probe status %d/%d differs from receive %d/%d", ps.MPI_SOURCE, ps.MPI_TAG,
		      rs.MPI_SOURCE, rs.MPI_TAG);
	}
	MPI_OK(MPI_Waitall(MP_PER, sq, MPI_STATUSES_IGNORE));
	for (int j = 0; j < MP_PER; j++)
		free(s[j]);
	free(a), free(b), free(seen);
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* PROC_NULL, a specific source and tag, truncation, and an Iprobe that
 * must no longer see a matched message. */
static void mprobe_edges(void)
{
	MPI_Message m;
	MPI_Request rq;
	MPI_Status st;
	int flag = -1, v[4] = { 1, 2, 3, 4 }, w[4] = { 0 };

	mt_phase = "mprobe edges";
	MPI_OK(MPI_Mprobe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &m, &st));
	CHECK(m == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL, "Mprobe PROC_NULL");
	MPI_OK(MPI_Mrecv(w, 4, MPI_INT, &m, &st));
	CHECK(m == MPI_MESSAGE_NULL && st.MPI_SOURCE == MPI_PROC_NULL &&
	      mt_get_count(&st, MPI_INT) == 0, "Mrecv NO_PROC");
	MPI_OK(MPI_Improbe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &flag, &m, &st));
	CHECK(flag && m == MPI_MESSAGE_NO_PROC, "Improbe PROC_NULL");
	MPI_OK(MPI_Imrecv(w, 4, MPI_INT, &m, &rq));
	MPI_OK(MPI_Wait(&rq, &st));
	CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "Imrecv NO_PROC");

	MPI_OK(MPI_Isend(v, 4, MPI_INT, right, 21, MPI_COMM_WORLD, &rq));
	MPI_OK(MPI_Mprobe(left, 21, MPI_COMM_WORLD, &m, &st));
	CHECK(st.MPI_SOURCE == left && mt_get_count(&st, MPI_INT) == 4, "Mprobe left");
	MPI_OK(MPI_Iprobe(left, 21, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
	CHECK(!flag, "Iprobe still sees a matched message");
	EXPECT_ERR(MPI_Mrecv(w, 2, MPI_INT, &m, &st), MPI_ERR_TRUNCATE);
	CHECK(w[0] == 1 && w[1] == 2 && w[2] == 0, "truncated Mrecv wrote %d %d %d", w[0], w[1],
	      w[2]);
	MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* ---- cancel --------------------------------------------------------------------------------- */

static void cancel(void)
{
	int v = -1, w = 77 + mt_rank, c = -1;
	MPI_Request q, s;
	MPI_Status st;

	mt_phase = "cancel";
	/* a receive nobody sends to */
	MPI_OK(MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 31, MPI_COMM_WORLD, &q));
	MPI_OK(MPI_Cancel(&q));
	MPI_OK(MPI_Wait(&q, &st));
	MPI_OK(MPI_Test_cancelled(&st, &c));
	CHECK(c == 1 && v == -1 && mt_get_count(&st, MPI_INT) == 0, "cancelled recv");

	/* a receive already matched: cancel fails, the data is there */
	MPI_OK(MPI_Isend(&w, 1, MPI_INT, mt_rank, 32, MPI_COMM_WORLD, &s));
	MPI_OK(MPI_Irecv(&v, 1, MPI_INT, mt_rank, 32, MPI_COMM_WORLD, &q));
	MPI_OK(MPI_Wait(&s, MPI_STATUS_IGNORE));
	MPI_OK(MPI_Cancel(&q));
	MPI_OK(MPI_Wait(&q, &st));
	MPI_OK(MPI_Test_cancelled(&st, &c));
	CHECK(c == 0 && v == w, "matched recv: cancelled %d, v %d", c, v);

	/* a send: either cancelled (never received) or delivered whole; the
	 * receive is posted before the wait, which a send that could not be
	 * cancelled may need (protocols that wait for the match) */
	MPI_OK(MPI_Isend(&w, 1, MPI_INT, right, 33, MPI_COMM_WORLD, &s));
	MPI_OK(MPI_Cancel(&s));
	MPI_OK(MPI_Irecv(&v, 1, MPI_INT, left, 33, MPI_COMM_WORLD, &q));
	MPI_OK(MPI_Wait(&s, &st));
	MPI_OK(MPI_Test_cancelled(&st, &c));
	int cancelled_here = c, cancelled_left = -1;
	MPI_OK(MPI_Sendrecv(&cancelled_here, 1, MPI_INT, right, 34, &cancelled_left, 1, MPI_INT,
			    left, 34, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	if (cancelled_left)
		MPI_OK(MPI_Cancel(&q));
	MPI_OK(MPI_Wait(&q, &st));
	MPI_OK(MPI_Test_cancelled(&st, &c));
	CHECK(c == cancelled_left && (c || v == 77 + left),
	      "send cancelled %d at the left, here: cancelled %d, got %d", cancelled_left, c, v);
#ifdef VIADUCT_MPI
	CHECK(!cancelled_here, "viaduct does not cancel sends");
#endif

	/* persistent receive: cancel, then reuse */
	MPI_OK(MPI_Recv_init(&v, 1, MPI_INT, mt_rank, 35, MPI_COMM_WORLD, &q));
	EXPECT_ERR(MPI_Cancel(&q), MPI_ERR_REQUEST);            /* inactive */
	MPI_OK(MPI_Start(&q));
	MPI_OK(MPI_Cancel(&q));
	MPI_OK(MPI_Wait(&q, &st));
	MPI_OK(MPI_Test_cancelled(&st, &c));
	CHECK(c == 1 && q != MPI_REQUEST_NULL, "cancelled persistent recv");
	MPI_OK(MPI_Start(&q));
	MPI_OK(MPI_Send(&w, 1, MPI_INT, mt_rank, 35, MPI_COMM_WORLD));
	MPI_OK(MPI_Wait(&q, &st));
	MPI_OK(MPI_Test_cancelled(&st, &c));
	CHECK(c == 0 && v == w, "restarted persistent recv: %d %d", c, v);
	MPI_OK(MPI_Request_free(&q));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* ---- Ibsend / Irsend ------------------------------------------------------------------------- */

static void ibsend_irsend(void)
{
	enum { N = 5, BIG = 100000 };
	static const int len[N] = { 1, 100, 8192, BIG, 0 };
	int size = N * MPI_BSEND_OVERHEAD + 2 * BIG, flag = 0, dsize;
	unsigned char *attach = mt_malloc((size_t)size), *s[N], *r = mt_malloc((size_t)size);
	MPI_Request q[N], rq;
	void *det;
	int v = 0, w = 5 + mt_rank;

	mt_phase = "ibsend";
	MPI_OK(MPI_Buffer_attach(attach, size));
	for (int j = 0; j < N; j++) {
		s[j] = mt_malloc((size_t)len[j]);
		mt_fill(s[j], (size_t)len[j], mt_rank, j);
		MPI_OK(MPI_Ibsend(s[j], len[j], MPI_BYTE, right, 40 + j, MPI_COMM_WORLD, &q[j]));
		memset(s[j], 0, (size_t)len[j]);        /* the copy was made */
		MPI_OK(MPI_Test(&q[j], &flag, MPI_STATUS_IGNORE));
		CHECK(flag && q[j] == MPI_REQUEST_NULL, "Ibsend %d not complete at once", j);
	}
	/* more than the whole buffer can never fit */
	EXPECT_ERR(MPI_Ibsend(r, size, MPI_BYTE, right, 49, MPI_COMM_WORLD, &rq), MPI_ERR_BUFFER);
	for (int j = 0; j < N; j++) {
		MPI_Status st;
		MPI_OK(MPI_Recv(r, BIG, MPI_BYTE, left, 40 + j, MPI_COMM_WORLD, &st));
		CHECK(mt_get_count(&st, MPI_BYTE) == len[j] &&
		      mt_verify(r, (size_t)len[j], left, j) < 0, "Ibsend %d data", j);
		free(s[j]);
	}
	MPI_OK(MPI_Buffer_detach(&det, &dsize));
	CHECK(det == attach && dsize == size, "detach");

	mt_phase = "irsend";
	MPI_OK(MPI_Irecv(&v, 1, MPI_INT, left, 50, MPI_COMM_WORLD, &rq));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	MPI_OK(MPI_Irsend(&w, 1, MPI_INT, right, 50, MPI_COMM_WORLD, &q[0]));
	MPI_OK(MPI_Wait(&q[0], MPI_STATUS_IGNORE));
	MPI_OK(MPI_Wait(&rq, MPI_STATUS_IGNORE));
	CHECK(v == 5 + left, "Irsend delivered %d", v);
	free(attach);
	free(r);
}

/* ---- generalized requests -------------------------------------------------------------------- */

struct greq_state {
	int queries, frees, cancels, last_complete;
};

static int g_query(void *extra, MPI_Status *st)
{
	struct greq_state *g = extra;

	g->queries++;
	st->MPI_SOURCE = 3;
	st->MPI_TAG = 4;
	MPI_Status_set_elements(st, MPI_INT, 5);
	MPI_Status_set_cancelled(st, 0);
	return MPI_SUCCESS;
}

static int g_free(void *extra)
{
	((struct greq_state *)extra)->frees++;
	return MPI_SUCCESS;
}

static int g_cancel(void *extra, int complete)
{
	struct greq_state *g = extra;

	g->cancels++;
	g->last_complete = complete;
	return MPI_SUCCESS;
}

static void greq(void)
{
	struct greq_state g = { 0 }, h = { 0 };
	MPI_Request q[2];
	MPI_Status st[2];
	int flag = -1, v = 0, w = 9;

	mt_phase = "grequest";
	MPI_OK(MPI_Grequest_start(g_query, g_free, g_cancel, &g, &q[0]));
	MPI_OK(MPI_Test(&q[0], &flag, &st[0]));
	CHECK(!flag && q[0] != MPI_REQUEST_NULL, "Test of an incomplete greq");
	MPI_OK(MPI_Cancel(&q[0]));
	CHECK(g.cancels == 1 && g.last_complete == 0, "cancel_fn: %d %d", g.cancels,
	      g.last_complete);
	MPI_OK(MPI_Grequest_complete(q[0]));
	EXPECT_ERR(MPI_Grequest_complete(q[0]), MPI_ERR_REQUEST);       /* twice */
	MPI_OK(MPI_Request_get_status(q[0], &flag, &st[0]));
	CHECK(flag && g.queries == 1 && g.frees == 0 && st[0].MPI_SOURCE == 3 &&
	      mt_get_count(&st[0], MPI_INT) == 5, "get_status of a greq");
	/* Waitall with an ordinary request beside it */
	MPI_OK(MPI_Irecv(&v, 1, MPI_INT, mt_rank, 60, MPI_COMM_WORLD, &q[1]));
	MPI_OK(MPI_Send(&w, 1, MPI_INT, mt_rank, 60, MPI_COMM_WORLD));
	MPI_OK(MPI_Waitall(2, q, st));
	CHECK(q[0] == MPI_REQUEST_NULL && g.queries == 2 && g.frees == 1, "greq after Waitall");
	CHECK(st[0].MPI_TAG == 4 && mt_get_count(&st[0], MPI_BYTE) == 20 && v == 9,
	      "greq status / recv");

	/* freed before completion: free_fn runs at Grequest_complete */
	MPI_OK(MPI_Grequest_start(g_query, g_free, g_cancel, &h, &q[0]));
	MPI_Request keep = q[0];
	MPI_OK(MPI_Request_free(&q[0]));
	CHECK(q[0] == MPI_REQUEST_NULL && h.frees == 0, "free before complete");
	MPI_OK(MPI_Grequest_complete(keep));
	CHECK(h.frees == 1 && h.queries == 0, "free_fn at complete: %d", h.frees);
}

/* ---- statuses and Get_count ------------------------------------------------------------------- */

static void statuses(void)
{
	MPI_Status st;
	int n = -1, c = -1;

	mt_phase = "status";
	memset(&st, 0, sizeof(st));
	MPI_OK(MPI_Status_set_elements(&st, MPI_INT, 7));
	CHECK(mt_get_count(&st, MPI_INT) == 7 && mt_get_count(&st, MPI_BYTE) == 28 &&
	      mt_get_count(&st, MPI_DOUBLE) == MPI_UNDEFINED, "set_elements 7 ints");
	MPI_OK(MPI_Status_set_cancelled(&st, 1));
	MPI_OK(MPI_Test_cancelled(&st, &c));
	CHECK(c == 1 && mt_get_count(&st, MPI_INT) == 7, "set_cancelled kept the count");
	MPI_OK(MPI_Status_set_cancelled(&st, 0));
	MPI_OK(MPI_Test_cancelled(&st, &c));
	CHECK(c == 0, "set_cancelled 0");
	MPI_OK(MPI_Status_set_elements_x(&st, MPI_BYTE, (MPI_Count)3000000000LL));
	CHECK(mt_get_count(&st, MPI_BYTE) == MPI_UNDEFINED &&
	      mt_get_count(&st, MPI_INT) == 750000000, "3e9 bytes: %d %d",
	      mt_get_count(&st, MPI_BYTE), mt_get_count(&st, MPI_INT));
	MPI_OK(MPI_Status_set_elements(&st, MPI_DOUBLE, 0));
	CHECK(mt_get_count(&st, MPI_DOUBLE) == 0, "zero elements");
	EXPECT_ERR(MPI_Status_set_elements(&st, MPI_INT, -1), MPI_ERR_COUNT);
	EXPECT_ERR(MPI_Status_set_elements(&st, MPI_DATATYPE_NULL, 1), MPI_ERR_TYPE);
	EXPECT_ERR(MPI_Get_count(&st, MPI_DATATYPE_NULL, &n), MPI_ERR_TYPE);
	/* a zero-byte message */
	MPI_OK(MPI_Sendrecv(NULL, 0, MPI_INT, right, 70, NULL, 0, MPI_INT, left, 70,
			    MPI_COMM_WORLD, &st));
	CHECK(mt_get_count(&st, MPI_INT) == 0 && st.MPI_SOURCE == left, "empty message");
}

/* ---- errors -------------------------------------------------------------------------------------- */

static void errors(void)
{
	MPI_Request q, good, pair[2], nreq = MPI_REQUEST_NULL;
	MPI_Message m = MPI_MESSAGE_NULL;
	MPI_Status st;
	int v = 0, flag, out, idx;

	mt_phase = "errors";
	EXPECT_ERR(MPI_Send_init(&v, 1, MPI_INT, mt_size, 0, MPI_COMM_WORLD, &q), MPI_ERR_RANK);
	EXPECT_ERR(MPI_Ssend_init(&v, 1, MPI_INT, 0, -5, MPI_COMM_WORLD, &q), MPI_ERR_TAG);
	EXPECT_ERR(MPI_Bsend_init(&v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD, &q), MPI_ERR_COUNT);
	EXPECT_ERR(MPI_Rsend_init(&v, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD, &q),
		   MPI_ERR_TYPE);
	EXPECT_ERR(MPI_Recv_init(&v, 1, MPI_INT, mt_size + 3, 0, MPI_COMM_WORLD, &q),
		   MPI_ERR_RANK);
	EXPECT_ERR(MPI_Recv_init(&v, 1, MPI_INT, 0, -7, MPI_COMM_WORLD, &q), MPI_ERR_TAG);
	EXPECT_ERR(MPI_Recv_init(&v, 1, MPI_INT, 0, 0, MPI_COMM_NULL, &q), MPI_ERR_COMM);
	EXPECT_ERR(MPI_Start(&nreq), MPI_ERR_REQUEST);
	q = 123456;
	EXPECT_ERR(MPI_Start(&q), MPI_ERR_REQUEST);
	MPI_OK(MPI_Isend(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &q));
	EXPECT_ERR(MPI_Start(&q), MPI_ERR_REQUEST);             /* not persistent */
	MPI_OK(MPI_Wait(&q, MPI_STATUS_IGNORE));
	/* Startall refuses a duplicate before starting anything */
	MPI_OK(MPI_Recv_init(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &good));
	pair[0] = pair[1] = good;
	EXPECT_ERR(MPI_Startall(2, pair), MPI_ERR_REQUEST);
	MPI_OK(MPI_Start(&good));                               /* was still inactive */
	MPI_OK(MPI_Wait(&good, &st));
	CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "persistent PROC_NULL recv");
	MPI_OK(MPI_Request_free(&good));
	EXPECT_ERR(MPI_Improbe(mt_size, 0, MPI_COMM_WORLD, &flag, &m, &st), MPI_ERR_RANK);
	EXPECT_ERR(MPI_Improbe(0, -3, MPI_COMM_WORLD, &flag, &m, &st), MPI_ERR_TAG);
	EXPECT_ERR(MPI_Mprobe(0, 0, MPI_COMM_NULL, &m, &st), MPI_ERR_COMM);
	EXPECT_ERR(MPI_Mrecv(&v, 1, MPI_INT, &m, &st), MPI_ERR_REQUEST);  /* MESSAGE_NULL */
	m = 4242;
	EXPECT_ERR(MPI_Imrecv(&v, 1, MPI_INT, &m, &q), MPI_ERR_REQUEST);
	m = MPI_MESSAGE_NO_PROC;
	EXPECT_ERR(MPI_Mrecv(&v, -1, MPI_INT, &m, &st), MPI_ERR_COUNT);
	EXPECT_ERR(MPI_Testsome(-1, &q, &out, &idx, &st), MPI_ERR_ARG);
	EXPECT_ERR(MPI_Request_get_status(98765, &flag, &st), MPI_ERR_REQUEST);
	EXPECT_ERR(MPI_Grequest_complete(MPI_REQUEST_NULL), MPI_ERR_REQUEST);
	EXPECT_ERR(MPI_Ibsend(&v, 1, MPI_INT, -4, 0, MPI_COMM_WORLD, &q), MPI_ERR_RANK);
	EXPECT_ERR(MPI_Irsend(&v, -2, MPI_INT, 0, 0, MPI_COMM_WORLD, &q), MPI_ERR_COUNT);
	EXPECT_ERR(MPI_Irsend(&v, 1, MPI_INT, 0, -1, MPI_COMM_WORLD, &q), MPI_ERR_TAG);
	EXPECT_ERR(MPI_Cancel(&nreq), MPI_ERR_REQUEST);
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, 120);     /* 4 MiB messages at 7 ranks under TSan */
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	left = (mt_rank - 1 + mt_size) % mt_size;
	right = (mt_rank + 1) % mt_size;
	persistent_ring(100, 1);
	persistent_ring(65536, 2);
	persistent_ring((size_t)(4 << 20), 3);
	persistent_modes();
	persistent_ready();
	persistent_dtype();
	get_status();
	some_counts();
	mprobe_many();
	mprobe_edges();
	cancel();
	ibsend_irsend();
	greq();
	statuses();
	errors();
	return mt_finish("p2p_ext");
}
