/* SPDX-License-Identifier: MIT */
/*
 * Error handling.  Without arguments: under MPI_ERRORS_RETURN every wrong
 * argument returns the right MPI_ERR_* class, the library keeps working,
 * Error_string describes every class.  With argument "fatal": under the
 * default MPI_ERRORS_ARE_FATAL the last rank makes a bad call, which must
 * end the whole job with a non-zero status (the runner checks); if the call
 * returns instead, the program exits 0 -- which the runner reports.
 */
#include <limits.h>

#include "mpitest.h"

/* Run `call`, expect error class `cls`. */
#define EXPECT(cls, call)                                                     \
	do {                                                                  \
		int rc_ = (call), c_ = -1;                                    \
		MPI_Error_class(rc_, &c_);                                    \
		CHECK(rc_ != MPI_SUCCESS && c_ == (cls),                      \
		      "%s: rc %d class %d, expected %s (%d)", #call, rc_, c_, \
		      #cls, cls);                                             \
	} while (0)

static void test_p2p_args(void)
{
	int buf[8] = { 0 }, n = mt_size;
	MPI_Request q = MPI_REQUEST_NULL;

	mt_phase = "p2p_args";
	EXPECT(MPI_ERR_RANK, MPI_Send(buf, 1, MPI_INT, n, 0, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_RANK, MPI_Send(buf, 1, MPI_INT, -5, 0, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_RANK, MPI_Send(buf, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_RANK, MPI_Recv(buf, 1, MPI_INT, n + 3, 0, MPI_COMM_WORLD,
				      MPI_STATUS_IGNORE));
	EXPECT(MPI_ERR_RANK, MPI_Isend(buf, 1, MPI_INT, n, 0, MPI_COMM_WORLD, &q));
	EXPECT(MPI_ERR_RANK, MPI_Irecv(buf, 1, MPI_INT, -7, 0, MPI_COMM_WORLD, &q));
	EXPECT(MPI_ERR_RANK, MPI_Probe(n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	EXPECT(MPI_ERR_TAG, MPI_Send(buf, 1, MPI_INT, 0, -3, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_TAG, MPI_Send(buf, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_TAG, MPI_Recv(buf, 1, MPI_INT, 0, -5, MPI_COMM_WORLD,
				     MPI_STATUS_IGNORE));
	EXPECT(MPI_ERR_TAG, MPI_Irecv(buf, 1, MPI_INT, 0, -100, MPI_COMM_WORLD, &q));
	EXPECT(MPI_ERR_COUNT, MPI_Send(buf, -1, MPI_INT, 0, 0, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_COUNT, MPI_Recv(buf, -1, MPI_INT, 0, 0, MPI_COMM_WORLD,
				       MPI_STATUS_IGNORE));
	EXPECT(MPI_ERR_COUNT, MPI_Isend(buf, -2, MPI_INT, 0, 0, MPI_COMM_WORLD, &q));
	EXPECT(MPI_ERR_TYPE, MPI_Send(buf, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_TYPE, MPI_Recv(buf, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD,
				      MPI_STATUS_IGNORE));
	CHECK(q == MPI_REQUEST_NULL, "failed Isend/Irecv created a request");
	/* Bsend with no buffer attached has nowhere to buffer. */
	EXPECT(MPI_ERR_BUFFER, MPI_Bsend(buf, 8, MPI_INT, 0, 0, MPI_COMM_WORLD));
	/* Sendrecv checks its send before it posts its receive: every rank
	 * fails the same way, and none waits for the others' messages. */
	EXPECT(MPI_ERR_COUNT, MPI_Sendrecv(buf, -1, MPI_INT, 0, 0, buf + 4, 1, MPI_INT, 0, 0,
					   MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	EXPECT(MPI_ERR_RANK, MPI_Sendrecv(buf, 1, MPI_INT, n, 0, buf + 4, 1, MPI_INT, 0, 0,
					  MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	EXPECT(MPI_ERR_TYPE, MPI_Sendrecv(buf, 1, MPI_DATATYPE_NULL, 0, 0, buf + 4, 1, MPI_INT,
					  0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
	/* Messages over 2 GiB are refused before a byte is read (docs/mpi.md,
	 * "Known limits"), not sent and received short. */
	EXPECT(MPI_ERR_COUNT, MPI_Send(buf, 1 << 30, MPI_INT, 0, 0, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_COUNT, MPI_Isend(buf, INT_MAX, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, &q));
	CHECK(q == MPI_REQUEST_NULL, "a refused Isend created a request");
}

/* MPI_Waitall and MPI_Testall raise MPI_ERR_IN_STATUS on the failed
 * request's communicator, whatever comes first in the array: the shared
 * handle of a send complete as it started, and MPI_REQUEST_NULL, belong
 * to none.  WORLD's handler is fatal meanwhile, the failing one's not. */
static void test_completion_errors(void)
{
	int peer = (mt_rank ^ 1) < mt_size ? mt_rank ^ 1 : mt_rank;
	int big[4] = { 1, 2, 3, 4 }, small[2], x = 7, y = 0;
	MPI_Request q[3];
	MPI_Status st[3];
	MPI_Comm d;

	mt_phase = "completion_errors";
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
	MPI_OK(MPI_Sendrecv(&x, 1, MPI_INT, peer, 9, &y, 1, MPI_INT, peer, 9, d,
			    MPI_STATUS_IGNORE));        /* connected: Isend takes the ring */
	MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
	for (int k = 0; k < 4; k++) {                   /* Waitall/Testall, send/null first */
		int rc, flag = 0;

		q[0] = MPI_REQUEST_NULL;
		if (k & 1)
			MPI_OK(MPI_Isend(&x, 1, MPI_INT, peer, 3, d, &q[0]));
		MPI_OK(MPI_Irecv(small, 2, MPI_INT, peer, 1, d, &q[1]));
		MPI_OK(MPI_Isend(big, 4, MPI_INT, peer, 1, d, &q[2]));
		if (k < 2)
			rc = MPI_Waitall(3, q, st);
		else
			while ((rc = MPI_Testall(3, q, &flag, st)) == MPI_SUCCESS && !flag)
				;
		CHECK(rc == MPI_ERR_IN_STATUS && st[1].MPI_ERROR == MPI_ERR_TRUNCATE,
		      "%s, %s first: rc %d, the receive's error %d", k < 2 ? "Waitall" : "Testall",
		      k & 1 ? "a send" : "MPI_REQUEST_NULL", rc, st[1].MPI_ERROR);
		if (k & 1)
			MPI_OK(MPI_Recv(&y, 1, MPI_INT, peer, 3, d, MPI_STATUS_IGNORE));
	}
	MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	MPI_OK(MPI_Comm_free(&d));
	/* An invalid handle's error lands in its status too. */
	q[0] = (MPI_Request)0x3fffffff;
	q[1] = MPI_REQUEST_NULL;
	st[0].MPI_ERROR = -77;
	CHECK(MPI_Waitall(2, q, st) == MPI_ERR_IN_STATUS && st[0].MPI_ERROR == MPI_ERR_REQUEST,
	      "Waitall over an invalid handle: its status's error %d", st[0].MPI_ERROR);
	{
		int done = 0, idx[2] = { -1, -1 };

		q[0] = MPI_REQUEST_NULL;
		q[1] = (MPI_Request)0x3fffffff;
		st[0].MPI_ERROR = -77;
		CHECK(MPI_Waitsome(2, q, &done, idx, st) == MPI_ERR_IN_STATUS && done == 1 &&
		      idx[0] == 1 && st[0].MPI_ERROR == MPI_ERR_REQUEST,
		      "Waitsome over an invalid handle: %d done, its status's error %d", done,
		      st[0].MPI_ERROR);
	}
}

static void test_type_args(void)
{
	int buf[64] = { 0 };
	MPI_Datatype v = MPI_DATATYPE_NULL, freed;

	mt_phase = "type_args";
	MPI_OK(MPI_Type_vector(4, 1, 2, MPI_INT, &v));
	/* Not committed: not usable for communication. */
	EXPECT(MPI_ERR_TYPE, MPI_Send(buf, 1, v, 0, 0, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_TYPE, MPI_Bcast(buf, 1, v, 0, MPI_COMM_WORLD));
	MPI_OK(MPI_Type_commit(&v));
	freed = v;
	MPI_OK(MPI_Type_free(&v));
	CHECK(v == MPI_DATATYPE_NULL, "Type_free did not reset the handle");
	EXPECT(MPI_ERR_TYPE, MPI_Type_commit(&v));
	EXPECT(MPI_ERR_COUNT, MPI_Type_contiguous(-1, MPI_INT, &v));
	EXPECT(MPI_ERR_TYPE, MPI_Type_contiguous(2, MPI_DATATYPE_NULL, &v));
#ifdef VIADUCT_MPI
	/* Using a freed handle is erroneous; viaduct detects it. */
	EXPECT(MPI_ERR_TYPE, MPI_Send(buf, 1, freed, 0, 0, MPI_COMM_WORLD));
#else
	(void)freed;
#endif
}

static void test_comm_args(void)
{
	int x = 0;
	MPI_Comm d = MPI_COMM_NULL, stale;

	mt_phase = "comm_args";
	EXPECT(MPI_ERR_COMM, MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_NULL));
	EXPECT(MPI_ERR_COMM, MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_NULL, MPI_STATUS_IGNORE));
	EXPECT(MPI_ERR_COMM, MPI_Barrier(MPI_COMM_NULL));
	EXPECT(MPI_ERR_COMM, MPI_Bcast(&x, 1, MPI_INT, 0, MPI_COMM_NULL));
	EXPECT(MPI_ERR_COMM, MPI_Comm_size(MPI_COMM_NULL, &x));
	EXPECT(MPI_ERR_COMM, MPI_Comm_rank(MPI_COMM_NULL, &x));
	EXPECT(MPI_ERR_COMM, MPI_Comm_dup(MPI_COMM_NULL, &d));
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));
	stale = d;
	MPI_OK(MPI_Comm_free(&d));
	CHECK(d == MPI_COMM_NULL, "Comm_free did not reset the handle");
	EXPECT(MPI_ERR_COMM, MPI_Comm_free(&d));
#ifdef VIADUCT_MPI
	/* A freed communicator's handle (erroneous, detected by viaduct). */
	EXPECT(MPI_ERR_COMM, MPI_Barrier(stale));
	EXPECT(MPI_ERR_COMM, MPI_Send(&x, 1, MPI_INT, 0, 0, stale));
#else
	(void)stale;
#endif
}

static void test_coll_args(void)
{
	int a[4] = { 1, 2, 3, 4 }, b[4] = { 0 }, n = mt_size;
	MPI_Op op;

	mt_phase = "coll_args";
	EXPECT(MPI_ERR_ROOT, MPI_Bcast(a, 1, MPI_INT, n, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_ROOT, MPI_Bcast(a, 1, MPI_INT, -1, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_ROOT, MPI_Reduce(a, b, 1, MPI_INT, MPI_SUM, n, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_ROOT, MPI_Gather(a, 1, MPI_INT, b, 1, MPI_INT, n + 1, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_ROOT, MPI_Scatter(a, 1, MPI_INT, b, 1, MPI_INT, -2, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_COUNT, MPI_Bcast(a, -1, MPI_INT, 0, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_COUNT, MPI_Allreduce(a, b, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	{
		/* The type is the bad argument, though MPICH checks the op
		 * against it first and says MPI_ERR_OP: accept both. */
		int c = -1, rc = MPI_Allreduce(a, b, 1, MPI_DATATYPE_NULL, MPI_SUM,
					       MPI_COMM_WORLD);

		MPI_Error_class(rc, &c);
		CHECK(c == MPI_ERR_TYPE || c == MPI_ERR_OP,
		      "Allreduce(MPI_DATATYPE_NULL): class %d, expected MPI_ERR_TYPE", c);
	}
	EXPECT(MPI_ERR_OP, MPI_Allreduce(a, b, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_OP, MPI_Reduce(a, b, 1, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD));
	/* Ops not defined on the type. */
	EXPECT(MPI_ERR_OP, MPI_Allreduce(a, b, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_OP, MPI_Allreduce(a, b, 1, MPI_INT, MPI_MAXLOC, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_OP, MPI_Op_free(&(MPI_Op){ MPI_SUM }));
	op = MPI_OP_NULL;
	EXPECT(MPI_ERR_OP, MPI_Op_free(&op));
	/* Still in step after all that: a real collective works. */
	MPI_OK(MPI_Allreduce(a, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	CHECK(b[0] == n && b[3] == 4 * n, "Allreduce after errors: %d %d", b[0], b[3]);
}

static void test_group_args(void)
{
	MPI_Group g, h = MPI_GROUP_NULL;
	int bad[1] = { mt_size }, sz = -1;

	mt_phase = "group_args";
	MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &g));
	EXPECT(MPI_ERR_RANK, MPI_Group_incl(g, 1, bad, &h));
	EXPECT(MPI_ERR_GROUP, MPI_Group_size(MPI_GROUP_NULL, &sz));
	MPI_OK(MPI_Group_free(&g));
	CHECK(g == MPI_GROUP_NULL, "Group_free did not reset the handle");
}

/* Argument checks that every rank makes alike (none may leave the others
 * waiting in a collective), in the order the API functions check them. */
static void test_shared_checks(void)
{
	int a[8] = { 0 }, b[8] = { 0 }, neg[64], n = mt_size, x;
	MPI_Datatype t;
	MPI_Comm c;
	MPI_Group g;

	mt_phase = "shared_checks";
	for (int i = 0; i < 64; i++)
		neg[i] = i == 0 ? -1 : 0;
	EXPECT(MPI_ERR_ROOT, MPI_Gatherv(a, 1, MPI_INT, b, NULL, NULL, MPI_INT, n,
					 MPI_COMM_WORLD));
	EXPECT(MPI_ERR_ROOT, MPI_Scatterv(a, NULL, NULL, MPI_INT, b, 1, MPI_INT, -1,
					  MPI_COMM_WORLD));
	EXPECT(MPI_ERR_ARG, MPI_Allgatherv(a, 1, MPI_INT, b, NULL, neg, MPI_INT,
					   MPI_COMM_WORLD));
	EXPECT(MPI_ERR_COUNT, MPI_Alltoallv(a, neg, neg, MPI_INT, b, neg, neg, MPI_INT,
					    MPI_COMM_WORLD));
	EXPECT(MPI_ERR_TYPE, MPI_Alltoall(a, 1, MPI_INT, b, 1, MPI_DATATYPE_NULL,
					  MPI_COMM_WORLD));
	EXPECT(MPI_ERR_BUFFER, MPI_Allgather(a, 1, MPI_INT, a, 1, MPI_INT, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_ARG, MPI_Reduce_scatter(a, b, NULL, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_COUNT, MPI_Reduce_scatter(a, b, neg, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_COUNT, MPI_Reduce_scatter_block(a, b, -1, MPI_INT, MPI_SUM,
						       MPI_COMM_WORLD));
	EXPECT(MPI_ERR_BUFFER, MPI_Reduce_scatter_block(a, a, 1, MPI_INT, MPI_SUM,
							MPI_COMM_WORLD));
	EXPECT(MPI_ERR_COUNT, MPI_Scan(a, b, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_OP, MPI_Exscan(a, b, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD));
	EXPECT(MPI_ERR_ARG, MPI_Type_vector(2, -1, 2, MPI_INT, &t));
	EXPECT(MPI_ERR_TYPE, MPI_Type_vector(2, 1, 2, MPI_DATATYPE_NULL, NULL));
	EXPECT(MPI_ERR_ARG, MPI_Type_indexed(1, NULL, a, MPI_INT, &t));
	EXPECT(MPI_ERR_ARG, MPI_Type_indexed(1, neg, a, MPI_INT, &t));
	EXPECT(MPI_ERR_ARG, MPI_Type_contiguous(2, MPI_INT, NULL));
	EXPECT(MPI_ERR_COMM, MPI_Comm_rank(MPI_COMM_NULL, NULL));
	EXPECT(MPI_ERR_ARG, MPI_Comm_size(MPI_COMM_WORLD, NULL));
	EXPECT(MPI_ERR_ARG, MPI_Comm_dup(MPI_COMM_WORLD, NULL));
	EXPECT(MPI_ERR_ARG, MPI_Comm_split(MPI_COMM_WORLD, -5, 0, &c));
	EXPECT(MPI_ERR_COMM, MPI_Comm_get_errhandler(MPI_COMM_NULL, NULL));
	EXPECT(MPI_ERR_ARG, MPI_Comm_group(MPI_COMM_WORLD, NULL));
	EXPECT(MPI_ERR_GROUP, MPI_Group_rank(MPI_GROUP_NULL, NULL));
	MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &g));
	EXPECT(MPI_ERR_ARG, MPI_Group_size(g, NULL));
	EXPECT(MPI_ERR_ARG, MPI_Group_incl(g, 1, a, NULL));
	MPI_OK(MPI_Group_free(&g));
	/* Still in step: a collective of each family works. */
	MPI_OK(MPI_Allgather(&mt_rank, 1, MPI_INT, neg, 1, MPI_INT, MPI_COMM_WORLD));
	MPI_OK(MPI_Comm_size(MPI_COMM_WORLD, &x));
	CHECK(x == n && neg[n - 1] == n - 1, "Allgather after errors: %d", neg[n - 1]);
}

/* Every error class has a non-empty string, and classes map to themselves. */
static void test_strings(void)
{
	static const int classes[] = {
		MPI_SUCCESS, MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_TAG,
		MPI_ERR_COMM, MPI_ERR_RANK, MPI_ERR_REQUEST, MPI_ERR_ROOT, MPI_ERR_GROUP,
		MPI_ERR_OP, MPI_ERR_ARG, MPI_ERR_UNKNOWN, MPI_ERR_TRUNCATE, MPI_ERR_OTHER,
		MPI_ERR_INTERN, MPI_ERR_IN_STATUS, MPI_ERR_PENDING,
	};
	char s[MPI_MAX_ERROR_STRING];

	mt_phase = "error_string";
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		int len = -1, c = -1;

		memset(s, 0, sizeof(s));
		MPI_OK(MPI_Error_string(classes[i], s, &len));
		CHECK(len > 0 && len < MPI_MAX_ERROR_STRING && (size_t)len == strlen(s),
		      "Error_string(%d): len %d, \"%s\"", classes[i], len, s);
		MPI_OK(MPI_Error_class(classes[i], &c));
		CHECK(c == classes[i], "Error_class(%d) = %d", classes[i], c);
	}
	/* Distinct classes have distinct texts (spot check). */
	{
		char t[MPI_MAX_ERROR_STRING];
		int l1, l2;

		MPI_Error_string(MPI_ERR_RANK, s, &l1);
		MPI_Error_string(MPI_ERR_TRUNCATE, t, &l2);
		CHECK(strcmp(s, t) != 0, "MPI_ERR_RANK and MPI_ERR_TRUNCATE read the same");
	}
}

static void test_handlers(void)
{
	MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
	MPI_Comm d;

	mt_phase = "errhandler";
	MPI_OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
	CHECK(eh == MPI_ERRORS_RETURN, "WORLD's handler is not MPI_ERRORS_RETURN");
	MPI_OK(MPI_Comm_dup(MPI_COMM_WORLD, &d));        /* dup inherits it */
	MPI_OK(MPI_Comm_get_errhandler(d, &eh));
	CHECK(eh == MPI_ERRORS_RETURN, "dup did not inherit MPI_ERRORS_RETURN");
	MPI_OK(MPI_Comm_set_errhandler(d, MPI_ERRORS_ARE_FATAL));
	MPI_OK(MPI_Comm_get_errhandler(d, &eh));
	CHECK(eh == MPI_ERRORS_ARE_FATAL, "set_errhandler(FATAL) not reflected");
	MPI_OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
	CHECK(eh == MPI_ERRORS_RETURN, "setting a dup's handler changed WORLD's");
	MPI_OK(MPI_Comm_free(&d));
	{
		int c = -1, rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRHANDLER_NULL);

		MPI_Error_class(rc, &c);
		CHECK(rc != MPI_SUCCESS && (c == MPI_ERR_ARG || c == MPI_ERR_OTHER),
		      "set_errhandler(NULL): class %d", c);
	}
}

/* Default handler: the last rank sends to a rank that does not exist. */
static int fatal_mode(void)
{
	int x = 0;

	if (mt_rank == mt_size - 1) {
		fprintf(stderr, "rank %d: making a bad call under MPI_ERRORS_ARE_FATAL\n",
			mt_rank);
		MPI_Send(&x, 1, MPI_INT, mt_size + 10, 0, MPI_COMM_WORLD);
		fprintf(stderr, "rank %d: ERROR: the bad call returned\n", mt_rank);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, 30);
	if (argc > 1 && strcmp(argv[1], "fatal") == 0)
		return fatal_mode();
	MPI_OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	test_p2p_args();
	test_completion_errors();
	test_type_args();
	test_comm_args();
	test_coll_args();
	test_group_args();
	test_shared_checks();
	test_strings();
	test_handlers();
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	return mt_finish("errors");
}
