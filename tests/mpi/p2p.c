/* SPDX-License-Identifier: MIT */
/*
 * Blocking point to point: every message size across the protocol switch
 * points, Sendrecv(_replace) rings, ANY_SOURCE/ANY_TAG, the non-overtaking
 * rule, Probe/Iprobe/Get_count, MPI_PROC_NULL, truncation, derived
 * datatypes on both sides, MPI_Alloc_mem buffers and buffer reuse, and
 * a receive that waits long sleeps rather than spins.
 * Run it under each VIADUCT_MPI_PROTOCOL (eager, rndv, get, auto).
 */
#include <sys/resource.h>

#include "mpitest.h"

static int left, right;

/* 40 and 41: the last eager payload that shares the ring's first line
 * with both headers, and one past it; 50000: across hosts pipelined only
 * as an answer (a ping-pong's turn), else by rendezvous. */
static const size_t sizes[] = {
	0, 1, 7, 40, 41, 64, 1024, 16384, 50000, 65536, 1u << 20, (4u << 20) + 13,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define GUARD 16

static void check_msg(const MPI_Status *st, const unsigned char *r, size_t len,
		      int src, int tag, int id)
{
	long bad = mt_verify(r, len, src, id);

	CHECK(st->MPI_SOURCE == src, "len %zu: source %d, expected %d", len,
	      st->MPI_SOURCE, src);
	CHECK(st->MPI_TAG == tag, "len %zu: tag %d, expected %d", len, st->MPI_TAG, tag);
	CHECK(mt_get_count(st, MPI_BYTE) == (int)len, "len %zu: count %d", len,
	      mt_get_count(st, MPI_BYTE));
	CHECK(bad < 0, "len %zu from %d: byte %ld is %u, expected %u", len, src, bad,
	      bad < 0 ? 0 : r[bad], bad < 0 ? 0 : mt_byte(src, id, (size_t)bad));
	for (int i = 0; i < GUARD; i++)
		if (!CHECK(r[len + i] == 0xEE, "len %zu: wrote past the message", len))
			break;
}

/* A token ring: rank 0 sends first, everyone else receives first, so
 * blocking Send/Recv never deadlock whatever the protocol. */
static void ring_blocking(size_t len, int id)
{
	unsigned char *s = mt_malloc(len), *r = mt_malloc(len + GUARD);
	MPI_Status st;
	int n = (int)len;

	mt_fill(s, len, mt_rank, id);
	memset(r, 0xEE, len + GUARD);
	if (mt_size == 1) {
		MPI_Request q;

		MPI_OK(MPI_Irecv(r, n + GUARD, MPI_BYTE, 0, id, MPI_COMM_WORLD, &q));
		MPI_OK(MPI_Send(s, n, MPI_BYTE, 0, id, MPI_COMM_WORLD));
		MPI_OK(MPI_Wait(&q, &st));
		CHECK(q == MPI_REQUEST_NULL, "request not reset by Wait");
	} else if (mt_rank == 0) {
		MPI_OK(MPI_Send(s, n, MPI_BYTE, right, id, MPI_COMM_WORLD));
		MPI_OK(MPI_Recv(r, n + GUARD, MPI_BYTE, left, id, MPI_COMM_WORLD, &st));
	} else {
		MPI_OK(MPI_Recv(r, n + GUARD, MPI_BYTE, left, id, MPI_COMM_WORLD, &st));
		MPI_OK(MPI_Send(s, n, MPI_BYTE, right, id, MPI_COMM_WORLD));
	}
	check_msg(&st, r, len, left, id, id);
	free(s);
	free(r);
}

/* Both partners send and receive at once (Sendrecv), self when unpaired. */
static void pair_sendrecv(size_t len, int id)
{
	unsigned char *s = mt_malloc(len), *r = mt_malloc(len + GUARD);
	int partner = mt_rank ^ 1;
	MPI_Status st;

	if (partner >= mt_size)
		partner = mt_rank;
	mt_fill(s, len, mt_rank, id);
	memset(r, 0xEE, len + GUARD);
	MPI_OK(MPI_Sendrecv(s, (int)len, MPI_BYTE, partner, 100 + id, r, (int)len + GUARD,
			    MPI_BYTE, partner, 100 + id, MPI_COMM_WORLD, &st));
	check_msg(&st, r, len, partner, 100 + id, id);
	free(s);
	free(r);
}

static void test_sizes(void)
{
	mt_phase = "sizes";
	for (size_t k = 0; k < NSIZES; k++) {
		ring_blocking(sizes[k], (int)k);
		pair_sendrecv(sizes[k], (int)k);
		/* A size one past each switch point candidate as well. */
		if (sizes[k] >= 1024 && sizes[k] < (4u << 20))
			ring_blocking(sizes[k] + 1, 50 + (int)k);
	}
}

/* Sendrecv_replace around the ring, ints and doubles. */
static void test_replace(void)
{
	static const int counts[] = { 0, 1, 1000, 300000 };

	mt_phase = "sendrecv_replace";
	for (int k = 0; k < 4; k++) {
		int n = counts[k];
		int *b = mt_malloc(sizeof(int) * (size_t)n);
		MPI_Status st;

		for (int i = 0; i < n; i++)
			b[i] = mt_rank * 1000003 + i;
		MPI_OK(MPI_Sendrecv_replace(b, n, MPI_INT, right, k, left, k,
					    MPI_COMM_WORLD, &st));
		CHECK(st.MPI_SOURCE == left && st.MPI_TAG == k, "status %d/%d",
		      st.MPI_SOURCE, st.MPI_TAG);
		CHECK(mt_get_count(&st, MPI_INT) == n, "count %d, expected %d",
		      mt_get_count(&st, MPI_INT), n);
		for (int i = 0; i < n; i++)
			if (!CHECK(b[i] == left * 1000003 + i, "n %d: b[%d] = %d", n, i, b[i]))
				break;
		free(b);
	}
	/* Sendrecv with different types and tags in each direction. */
	double d[3] = { mt_rank + 0.5, -mt_rank, 1e10 * mt_rank };
	double e[3] = { 0, 0, 0 };
	MPI_Status st;
	MPI_OK(MPI_Sendrecv(d, 3, MPI_DOUBLE, left, 11, e, 3, MPI_DOUBLE, right, 11,
			    MPI_COMM_WORLD, &st));
	CHECK(e[0] == right + 0.5 && e[1] == -right && e[2] == 1e10 * right,
	      "Sendrecv leftwards got %g %g %g", e[0], e[1], e[2]);
}

/* Message j of the sequence tests: length and tag. */
static size_t seq_len(int j)
{
	static const size_t l[] = { 8, 0, 100000, 16, 70000, 4, 1u << 20, 1 };

	return l[j % 8];
}

/* Every rank but 0 sends M messages to 0 with blocking sends; 0 takes them
 * with ANY_SOURCE/ANY_TAG and checks each source's order. */
static void test_any_source(void)
{
	enum { M = 24 };
	size_t maxlen = 1u << 20;
	unsigned char *buf = mt_malloc(maxlen);
	MPI_Request self[M];

	mt_phase = "any_source";
	if (mt_rank != 0) {
		for (int j = 0; j < M; j++) {
			mt_fill(buf, seq_len(j), mt_rank, j);
			MPI_OK(MPI_Send(buf, (int)seq_len(j), MPI_BYTE, 0, j % 3,
					MPI_COMM_WORLD));
		}
	} else {
		int next[64] = { 0 };
		unsigned char *sb[M] = { 0 };
		int senders = mt_size > 1 ? mt_size - 1 : 1;

		if (mt_size == 1)
			for (int j = 0; j < M; j++) {
				sb[j] = mt_malloc(seq_len(j));
				mt_fill(sb[j], seq_len(j), 0, j);
				MPI_OK(MPI_Isend(sb[j], (int)seq_len(j), MPI_BYTE, 0, j % 3,
						 MPI_COMM_WORLD, &self[j]));
			}
		mt_sleep_ms(20);        /* let messages queue up unexpected */
		for (int m = 0; m < M * senders; m++) {
			MPI_Status st;
			int src, j;

			MPI_OK(MPI_Recv(buf, (int)maxlen, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
					MPI_COMM_WORLD, &st));
			src = st.MPI_SOURCE;
			if (!CHECK(src >= 0 && src < mt_size && src < 64 && (src != 0 || mt_size == 1),
				   "bad source %d", src))
				continue;
			j = next[src]++;
			CHECK(st.MPI_TAG == j % 3, "from %d message %d: tag %d", src, j,
			      st.MPI_TAG);
			CHECK(mt_get_count(&st, MPI_BYTE) == (int)seq_len(j),
			      "from %d message %d: %d bytes, expected %zu (overtaken?)", src,
			      j, mt_get_count(&st, MPI_BYTE), seq_len(j));
			CHECK(mt_verify(buf, seq_len(j), src, j) < 0,
			      "from %d message %d: wrong data", src, j);
		}
		if (mt_size == 1) {
			MPI_OK(MPI_Waitall(M, self, MPI_STATUSES_IGNORE));
			for (int j = 0; j < M; j++)
				free(sb[j]);
		}
	}
	free(buf);
}

/* Non-overtaking around the ring: M Isends of mixed sizes (so eager and
 * large protocols interleave), received in order with a fixed tag, with
 * ANY_TAG, and with ANY_SOURCE + ANY_TAG. */
static void ring_sequence(int round)
{
	enum { M = 16 };
	unsigned char *sb[M], *rb = mt_malloc(1u << 20);
	MPI_Request rq[M];

	for (int j = 0; j < M; j++) {
		int tag = round == 0 ? 5 : j % 4;

		sb[j] = mt_malloc(seq_len(j));
		mt_fill(sb[j], seq_len(j), mt_rank, 1000 * round + j);
		MPI_OK(MPI_Isend(sb[j], (int)seq_len(j), MPI_BYTE, right, tag,
				 MPI_COMM_WORLD, &rq[j]));
	}
	for (int j = 0; j < M; j++) {
		int src = round == 2 ? MPI_ANY_SOURCE : left;
		int tag = round == 0 ? 5 : MPI_ANY_TAG;
		MPI_Status st;

		MPI_OK(MPI_Recv(rb, 1 << 20, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st));
		CHECK(st.MPI_SOURCE == left, "round %d msg %d: source %d", round, j,
		      st.MPI_SOURCE);
		CHECK(st.MPI_TAG == (round == 0 ? 5 : j % 4), "round %d msg %d: tag %d",
		      round, j, st.MPI_TAG);
		CHECK(mt_get_count(&st, MPI_BYTE) == (int)seq_len(j),
		      "round %d msg %d: %d bytes, expected %zu (out of order)", round, j,
		      mt_get_count(&st, MPI_BYTE), seq_len(j));
		CHECK(mt_verify(rb, seq_len(j), left, 1000 * round + j) < 0,
		      "round %d msg %d: wrong data", round, j);
	}
	MPI_OK(MPI_Waitall(M, rq, MPI_STATUSES_IGNORE));
	for (int j = 0; j < M; j++)
		free(sb[j]);
	free(rb);
}

/* Tags let a receiver take a later message first (no deadlock, no mixup). */
static void test_tag_selection(void)
{
	size_t la = 100000, lb = 40;
	unsigned char *a = mt_malloc(la), *b = mt_malloc(lb);
	unsigned char *ra = mt_malloc(la), *rb = mt_malloc(lb);
	MPI_Request q[2];
	MPI_Status st;

	mt_phase = "tag_selection";
	mt_fill(a, la, mt_rank, 21);
	mt_fill(b, lb, mt_rank, 22);
	MPI_OK(MPI_Isend(a, (int)la, MPI_BYTE, right, 21, MPI_COMM_WORLD, &q[0]));
	MPI_OK(MPI_Isend(b, (int)lb, MPI_BYTE, right, 22, MPI_COMM_WORLD, &q[1]));
	MPI_OK(MPI_Recv(rb, (int)lb, MPI_BYTE, left, 22, MPI_COMM_WORLD, &st));
	CHECK(st.MPI_TAG == 22 && mt_verify(rb, lb, left, 22) < 0, "tag 22 message wrong");
	MPI_OK(MPI_Recv(ra, (int)la, MPI_BYTE, left, 21, MPI_COMM_WORLD, &st));
	CHECK(st.MPI_TAG == 21 && mt_verify(ra, la, left, 21) < 0, "tag 21 message wrong");
	MPI_OK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
	free(a);
	free(b);
	free(ra);
	free(rb);
}

static void test_order(void)
{
	mt_phase = "non_overtaking";
	for (int round = 0; round < 3; round++)
		ring_sequence(round);
	test_tag_selection();
}

static void probe_one(int tag, int bytes, int id, int use_iprobe)
{
	MPI_Status st;
	int flag = 0, n;
	unsigned char *b;

	if (use_iprobe) {
		while (!flag)
			MPI_OK(MPI_Iprobe(left, tag, MPI_COMM_WORLD, &flag, &st));
	} else {
		MPI_OK(MPI_Probe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st));
	}
	CHECK(st.MPI_SOURCE == left && st.MPI_TAG == tag, "probe tag %d: status %d/%d",
	      tag, st.MPI_SOURCE, st.MPI_TAG);
	n = mt_get_count(&st, MPI_BYTE);
	CHECK(n == bytes, "probe tag %d: count %d, expected %d", tag, n, bytes);
	if (bytes % 4)
		CHECK(mt_get_count(&st, MPI_INT) == MPI_UNDEFINED,
		      "Get_count(MPI_INT) of %d bytes is %d, not MPI_UNDEFINED", bytes,
		      mt_get_count(&st, MPI_INT));
	else
		CHECK(mt_get_count(&st, MPI_INT) == bytes / 4, "Get_count(MPI_INT) %d",
		      mt_get_count(&st, MPI_INT));
	if (n < 0 || n > bytes)
		n = bytes;
	b = mt_malloc((size_t)n);
	/* Receive exactly what the probe described, by its source and tag. */
	MPI_OK(MPI_Recv(b, n, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st));
	CHECK(mt_get_count(&st, MPI_BYTE) == bytes && mt_verify(b, (size_t)bytes, left, id) < 0,
	      "probed message tag %d: wrong data or count", tag);
	free(b);
}

static void test_probe(void)
{
	int la = (mt_rank + 1) * 12, lb = 1200000, lc = 7;
	int ea = (left + 1) * 12;
	unsigned char *a = mt_malloc((size_t)la), *b = mt_malloc((size_t)lb), *c = mt_malloc(7);
	MPI_Request q[3];
	MPI_Status st;
	int flag = 1;

	mt_phase = "probe";
	mt_fill(a, (size_t)la, mt_rank, 31);
	mt_fill(b, (size_t)lb, mt_rank, 32);
	mt_fill(c, (size_t)lc, mt_rank, 33);
	MPI_OK(MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, &st));
	CHECK(!flag, "Iprobe found a message never sent");
	MPI_OK(MPI_Isend(a, la, MPI_BYTE, right, 7, MPI_COMM_WORLD, &q[0]));
	MPI_OK(MPI_Isend(b, lb, MPI_BYTE, right, 8, MPI_COMM_WORLD, &q[1]));
	MPI_OK(MPI_Isend(c, lc, MPI_BYTE, right, 9, MPI_COMM_WORLD, &q[2]));
	probe_one(7, ea, 31, 1);
	probe_one(9, lc, 33, 0);        /* a later message first, by tag */
	probe_one(8, lb, 32, 1);
	MPI_OK(MPI_Waitall(3, q, MPI_STATUSES_IGNORE));
	/* Probe(ANY_TAG) sees the first pending message of the source. */
	MPI_OK(MPI_Isend(c, lc, MPI_BYTE, right, 40, MPI_COMM_WORLD, &q[0]));
	MPI_OK(MPI_Isend(a, la, MPI_BYTE, right, 41, MPI_COMM_WORLD, &q[1]));
	MPI_OK(MPI_Probe(left, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
	CHECK(st.MPI_TAG == 40, "Probe(ANY_TAG) returned tag %d, expected 40", st.MPI_TAG);
	probe_one(40, lc, 33, 0);
	probe_one(41, ea, 31, 0);
	MPI_OK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
	free(a);
	free(b);
	free(c);
}

static void check_null_status(const MPI_Status *st, const char *what)
{
	CHECK(st->MPI_SOURCE == MPI_PROC_NULL, "%s: source %d, not MPI_PROC_NULL", what,
	      st->MPI_SOURCE);
	CHECK(st->MPI_TAG == MPI_ANY_TAG, "%s: tag %d, not MPI_ANY_TAG", what, st->MPI_TAG);
	CHECK(mt_get_count(st, MPI_INT) == 0, "%s: count %d", what, mt_get_count(st, MPI_INT));
}

static void test_proc_null(void)
{
	int buf[1000];
	MPI_Status st, sts[2];
	MPI_Request q[2];
	int flag = 0;

	mt_phase = "proc_null";
	for (int i = 0; i < 1000; i++)
		buf[i] = i;
	MPI_OK(MPI_Send(buf, 1000, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
	MPI_OK(MPI_Ssend(buf, 1000, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
	MPI_OK(MPI_Rsend(buf, 1000, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
	st.MPI_SOURCE = 77;
	MPI_OK(MPI_Recv(buf, 1000, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &st));
	check_null_status(&st, "Recv");
	CHECK(buf[999] == 999 && buf[0] == 0, "Recv from MPI_PROC_NULL changed the buffer");
	MPI_OK(MPI_Isend(buf, 10, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &q[0]));
	MPI_OK(MPI_Irecv(buf, 10, MPI_INT, MPI_PROC_NULL, 2, MPI_COMM_WORLD, &q[1]));
	MPI_OK(MPI_Waitall(2, q, sts));
	check_null_status(&sts[1], "Irecv");
	MPI_OK(MPI_Sendrecv(buf, 5, MPI_INT, MPI_PROC_NULL, 3, buf + 5, 5, MPI_INT,
			    MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st));
	check_null_status(&st, "Sendrecv");
	MPI_OK(MPI_Sendrecv_replace(buf, 5, MPI_INT, MPI_PROC_NULL, 3, MPI_PROC_NULL, 3,
				    MPI_COMM_WORLD, &st));
	check_null_status(&st, "Sendrecv_replace");
	CHECK(buf[4] == 4 && buf[9] == 9, "PROC_NULL Sendrecv(_replace) changed data");
	MPI_OK(MPI_Probe(MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
	check_null_status(&st, "Probe");
	MPI_OK(MPI_Iprobe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &flag, &st));
	CHECK(flag, "Iprobe(MPI_PROC_NULL) flag false");
	check_null_status(&st, "Iprobe");
	/* A ring edge: send to PROC_NULL, receive from the left (which sent
	 * with an Isend beforehand). */
	MPI_OK(MPI_Isend(buf, 3, MPI_INT, right, 4, MPI_COMM_WORLD, &q[0]));
	MPI_OK(MPI_Sendrecv(buf + 20, 3, MPI_INT, MPI_PROC_NULL, 4, buf + 10, 3, MPI_INT,
			    left, 4, MPI_COMM_WORLD, &st));
	MPI_OK(MPI_Wait(&q[0], MPI_STATUS_IGNORE));
	CHECK(st.MPI_SOURCE == left && buf[10] == 0 && buf[12] == 2,
	      "Sendrecv(to PROC_NULL, from left): source %d data %d %d", st.MPI_SOURCE,
	      buf[10], buf[12]);
}

/* Truncation on a communicator with MPI_ERRORS_RETURN: the receiver gets
 * MPI_ERR_TRUNCATE, the sender succeeds, the channel still works. */
static void test_truncate(void)
{
	enum { SMALL = 100, LARGE = 300000 };
	int *s = mt_malloc(sizeof(int) * LARGE), *r = mt_malloc(sizeof(int) * 20);
	int rc, cls = -1;
	MPI_Request q[3], rq;
	MPI_Status st;
	MPI_Comm c;

	mt_phase = "truncate";
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &c));
	MPI_OK(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
	for (int i = 0; i < LARGE; i++)
		s[i] = i + mt_rank;
	MPI_OK(MPI_Isend(s, SMALL, MPI_INT, right, 1, c, &q[0]));
	MPI_OK(MPI_Isend(s, LARGE, MPI_INT, right, 2, c, &q[1]));
	MPI_OK(MPI_Isend(s, 5, MPI_INT, right, 3, c, &q[2]));
	rc = MPI_Recv(r, 10, MPI_INT, left, 1, c, &st);
	MPI_Error_class(rc, &cls);
	CHECK(cls == MPI_ERR_TRUNCATE, "Recv of %d ints into 10: class %d (rc %d), "
	      "expected MPI_ERR_TRUNCATE", SMALL, cls, rc);
	MPI_OK(MPI_Irecv(r, 10, MPI_INT, left, 2, c, &rq));
	rc = MPI_Wait(&rq, &st);
	cls = -1;
	MPI_Error_class(rc, &cls);
	CHECK(cls == MPI_ERR_TRUNCATE, "Irecv+Wait of %d ints into 10: class %d (rc %d), "
	      "expected MPI_ERR_TRUNCATE", LARGE, cls, rc);
	memset(r, 0, sizeof(int) * 20);
	MPI_OK(MPI_Recv(r, 20, MPI_INT, left, 3, c, &st));
	CHECK(mt_get_count(&st, MPI_INT) == 5 && r[0] == left && r[4] == left + 4,
	      "message after truncation: count %d, r[0] %d", mt_get_count(&st, MPI_INT), r[0]);
	rc = MPI_Waitall(3, q, MPI_STATUSES_IGNORE);
	CHECK(rc == MPI_SUCCESS, "sender of truncated messages got error %d", rc);
	MPI_OK(MPI_Comm_free(&c));
	free(s);
	free(r);
}

/* ---- derived datatypes ------------------------------------------------- */

static void check_type(MPI_Datatype t, int size, MPI_Aint extent, const char *what)
{
	int sz = -1;
	MPI_Aint lb = -1, ext = -1;

	MPI_OK(MPI_Type_size(t, &sz));
	MPI_OK(MPI_Type_get_extent(t, &lb, &ext));
	CHECK(sz == size && lb == 0 && ext == extent, "%s: size %d lb %ld extent %ld, "
	      "expected %d 0 %ld", what, sz, (long)lb, (long)ext, size, (long)extent);
}

/* Vector on the send side, contiguous ints on the receive side. */
static void dt_vector_to_contig(MPI_Datatype v)
{
	int s[96], r[64], exp[60], k = 0;
	MPI_Status st;

	for (int i = 0; i < 96; i++)
		s[i] = i + 1000 * mt_rank;
	for (int e = 0; e < 2; e++)
		for (int b = 0; b < 10; b++)
			for (int j = 0; j < 3; j++)
				exp[k++] = e * 48 + b * 5 + j + 1000 * left;
	MPI_OK(MPI_Sendrecv(s, 2, v, right, 60, r, 64, MPI_INT, left, 60, MPI_COMM_WORLD,
			    &st));
	CHECK(mt_get_count(&st, MPI_INT) == 60, "vector->int count %d",
	      mt_get_count(&st, MPI_INT));
	CHECK(mt_get_count(&st, v) == 2, "Get_count(vector) %d", mt_get_count(&st, v));
	for (int i = 0; i < 60; i++)
		if (!CHECK(r[i] == exp[i], "vector->int r[%d] = %d, expected %d", i, r[i], exp[i]))
			break;
}

/* Contiguous ints on the send side, indexed on the receive side (holes
 * must stay untouched). */
static void dt_contig_to_indexed(MPI_Datatype x)
{
	static const int disp[3] = { 0, 4, 9 }, bl[3] = { 2, 1, 3 };
	int s[60], r[120], k = 0;
	MPI_Status st;

	for (int i = 0; i < 60; i++)
		s[i] = 7 * i + mt_rank;
	for (int i = 0; i < 120; i++)
		r[i] = -1;
	MPI_OK(MPI_Sendrecv(s, 60, MPI_INT, right, 61, r, 10, x, left, 61, MPI_COMM_WORLD,
			    &st));
	CHECK(mt_get_count(&st, x) == 10, "Get_count(indexed) %d", mt_get_count(&st, x));
	for (int e = 0; e < 10; e++) {
		int hole[12];

		for (int i = 0; i < 12; i++)
			hole[i] = 1;
		for (int b = 0; b < 3; b++)
			for (int j = 0; j < bl[b]; j++) {
				int at = e * 12 + disp[b] + j;

				hole[disp[b] + j] = 0;
				CHECK(r[at] == 7 * k + left, "indexed r[%d] = %d, expected %d",
				      at, r[at], 7 * k + left);
				k++;
			}
		for (int i = 0; i < 12; i++)
			if (hole[i])
				CHECK(r[e * 12 + i] == -1, "indexed: hole r[%d] written",
				      e * 12 + i);
	}
}

/* A partial element: 45 ints into vector elements of 30 ints. */
static void dt_partial(MPI_Datatype v)
{
	int s[45], r[96];
	MPI_Status st;

	for (int i = 0; i < 45; i++)
		s[i] = i + 1;
	for (int i = 0; i < 96; i++)
		r[i] = 0;
	MPI_OK(MPI_Sendrecv(s, 45, MPI_INT, right, 62, r, 2, v, left, 62, MPI_COMM_WORLD,
			    &st));
	CHECK(mt_get_count(&st, MPI_INT) == 45, "partial: %d ints",
	      mt_get_count(&st, MPI_INT));
	CHECK(mt_get_count(&st, v) == MPI_UNDEFINED, "partial: Get_count(vector) %d, "
	      "expected MPI_UNDEFINED", mt_get_count(&st, v));
	/* element 1 starts at int 48: blocks of 3 at stride 5 */
	CHECK(r[0] == 1 && r[5] == 4 && r[48] == 31 && r[53] == 34 && r[48 + 20] == 43 &&
	      r[48 + 22] == 45 && r[48 + 25] == 0, "partial element misplaced");
}

/* A large vector of doubles (past the eager limit), freed while in flight. */
static void dt_large(void)
{
	enum { N = 60000 };
	double *s = mt_malloc(sizeof(double) * 3 * N), *r = mt_malloc(sizeof(double) * 2 * N);
	MPI_Datatype v, c2;
	MPI_Request q[2];

	MPI_OK(MPI_Type_vector(N, 2, 3, MPI_DOUBLE, &v));
	MPI_OK(MPI_Type_commit(&v));
	MPI_OK(MPI_Type_contiguous(2, MPI_DOUBLE, &c2));
	MPI_OK(MPI_Type_commit(&c2));
	check_type(c2, 16, 16, "contiguous(2, DOUBLE)");
	for (int i = 0; i < 3 * N; i++)
		s[i] = i * 0.5 + mt_rank;
	MPI_OK(MPI_Irecv(r, N, c2, left, 63, MPI_COMM_WORLD, &q[0]));
	MPI_OK(MPI_Isend(s, 1, v, right, 63, MPI_COMM_WORLD, &q[1]));
	MPI_OK(MPI_Type_free(&v));       /* legal: pending operations finish */
	MPI_OK(MPI_Type_free(&c2));
	CHECK(v == MPI_DATATYPE_NULL && c2 == MPI_DATATYPE_NULL, "Type_free did not reset");
	MPI_OK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
	for (int i = 0; i < 2 * N; i++)
		if (!CHECK(r[i] == (3 * (i / 2) + i % 2) * 0.5 + left, "large vector r[%d] = %g",
			   i, r[i]))
			break;
	free(s);
	free(r);
}

/* Nested: a vector of contiguous(3, INT). */
static void dt_nested(void)
{
	MPI_Datatype c3, vv;
	int s[21], r[12];
	static const int idx[12] = { 0, 1, 2, 6, 7, 8, 12, 13, 14, 18, 19, 20 };

	MPI_OK(MPI_Type_contiguous(3, MPI_INT, &c3));
	MPI_OK(MPI_Type_vector(4, 1, 2, c3, &vv));
	MPI_OK(MPI_Type_commit(&vv));
	check_type(vv, 48, 84, "vector(4,1,2,contiguous(3,INT))");
	for (int i = 0; i < 21; i++)
		s[i] = 100 * mt_rank + i;
	MPI_OK(MPI_Sendrecv(s, 1, vv, right, 64, r, 12, MPI_INT, left, 64, MPI_COMM_WORLD,
			    MPI_STATUS_IGNORE));
	for (int i = 0; i < 12; i++)
		if (!CHECK(r[i] == 100 * left + idx[i], "nested r[%d] = %d", i, r[i]))
			break;
	MPI_OK(MPI_Type_free(&vv));
	MPI_OK(MPI_Type_free(&c3));
}

static void test_datatypes(void)
{
	static const int disp[3] = { 0, 4, 9 }, bl[3] = { 2, 1, 3 };
	MPI_Datatype v, x;

	mt_phase = "datatypes";
	MPI_OK(MPI_Type_vector(10, 3, 5, MPI_INT, &v));
	MPI_OK(MPI_Type_commit(&v));
	check_type(v, 120, 192, "vector(10,3,5,INT)");
	MPI_OK(MPI_Type_indexed(3, bl, disp, MPI_INT, &x));
	MPI_OK(MPI_Type_commit(&x));
	check_type(x, 24, 48, "indexed({2,1,3},{0,4,9},INT)");
	dt_vector_to_contig(v);
	dt_contig_to_indexed(x);
	dt_partial(v);
	MPI_OK(MPI_Type_free(&v));
	MPI_OK(MPI_Type_free(&x));
	dt_large();
	dt_nested();
}

/* ---- memory -------------------------------------------------------------- */

static void exchange_ring(unsigned char *s, unsigned char *r, size_t len, int id)
{
	MPI_Status st;

	mt_fill(s, len, mt_rank, id);
	MPI_OK(MPI_Sendrecv(s, (int)len, MPI_BYTE, right, id, r, (int)len, MPI_BYTE, left,
			    id, MPI_COMM_WORLD, &st));
	CHECK(mt_get_count(&st, MPI_BYTE) == (int)len && mt_verify(r, len, left, id) < 0,
	      "exchange %d (%zu bytes): wrong data", id, len);
}

/* MPI_Alloc_mem buffers, and the same buffer address reused with new
 * contents or after free/malloc (a registration cache must not serve stale
 * pages). */
static void test_memory(void)
{
	size_t len = (1u << 20) + 100;
	unsigned char *s = NULL, *r = NULL;

	mt_phase = "alloc_mem";
	MPI_OK(MPI_Alloc_mem((MPI_Aint)len, MPI_INFO_NULL, &s));
	MPI_OK(MPI_Alloc_mem((MPI_Aint)len, MPI_INFO_NULL, &r));
	if (!CHECK(s && r, "MPI_Alloc_mem returned NULL"))
		return;
	exchange_ring(s, r, len, 70);
	exchange_ring(s, r, len, 71);   /* same buffers, new contents */
	exchange_ring(s, r, 100, 72);
	MPI_OK(MPI_Free_mem(s));
	MPI_OK(MPI_Free_mem(r));
	mt_phase = "buffer_reuse";
	for (int i = 0; i < 4; i++) {
		size_t l = (2u << 20) + (size_t)i * 4096;

		s = mt_malloc(l);
		r = mt_malloc(l);
		exchange_ring(s, r, l, 80 + i);
		free(s);
		free(r);
	}
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       1e-6 * (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* A rank that waits long sleeps: rank 0 sends after 1 s, and the others'
 * wait in MPI_Recv may cost a fraction of that in CPU time, not all of
 * it (a waiter that never sleeps uses about 1 s). */
static void test_idle(void)
{
	int x = 0;

	mt_phase = "idle wait";
	if (mt_size == 1)
		return;
	if (mt_rank == 0) {
		mt_sleep_ms(1000);
		for (int r = 1; r < mt_size; r++)
			MPI_OK(MPI_Send(&x, 1, MPI_INT, r, 7, MPI_COMM_WORLD));
	} else {
		double t0 = cpu_seconds(), used;
		MPI_OK(MPI_Recv(&x, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		used = cpu_seconds() - t0;
		CHECK(used < 0.3, "waiting 1 s in MPI_Recv used %.3f s of CPU", used);
	}
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, 60);
	left = (mt_rank + mt_size - 1) % mt_size;
	right = (mt_rank + 1) % mt_size;
	/* A barrier between tests: a wildcard receive of one test must not
	 * take a message of the next. */
	static void (*const tests[])(void) = {
		test_sizes, test_replace, test_any_source, test_order, test_probe,
		test_proc_null, test_truncate, test_datatypes, test_memory, test_idle,
	};
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
		tests[i]();
		MPI_Barrier(MPI_COMM_WORLD);
	}
	return mt_finish("p2p");
}
