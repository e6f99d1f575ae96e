/* SPDX-License-Identifier: MIT */
/*
 * Communicators beyond dup/split: Comm_create (one group, and disjoint
 * groups), Comm_create_group (members only), Comm_split_type(SHARED,
 * UNDEFINED), Comm_idup, Comm_dup_with_info / set_info / get_info;
 * intercommunicators: Intercomm_create, test_inter, remote size/group,
 * point to point across (ranks name the remote group), Barrier, a
 * collective refused with MPI_ERR_COMM, Comm_dup, Intercomm_merge in
 * every high/low order with collectives on the result.  Every new
 * communicator is checked against the members a serial model expects by
 * exchanging world ranks in it.
 */
#include <stdbool.h>

#include "mpitest.h"

#define MAXR 64

static int err_class(int rc)
{
	int c = -1;

	if (rc == MPI_SUCCESS)
		return MPI_SUCCESS;
	MPI_Error_class(rc, &c);
	return c;
}

/* comm must hold exactly world[0..n) in that order: size, rank, Allgather
 * of world ranks, Allreduce, and a ring of point to point. */
static void expect_members(MPI_Comm comm, const int *world, int n, const char *what)
{
	int size = -1, rank = -1, me = -1, all[MAXR], sum = -1, exp = 0, got = -1;

	for (int i = 0; i < n; i++) {
		exp += world[i];
		if (world[i] == mt_rank)
			me = i;
	}
	MPI_OK(MPI_Comm_size(comm, &size));
	MPI_OK(MPI_Comm_rank(comm, &rank));
	if (!CHECK(size == n && rank == me, "%s: size %d rank %d, expected %d %d", what, size,
		   rank, n, me))
		return;
	MPI_OK(MPI_Allgather(&mt_rank, 1, MPI_INT, all, 1, MPI_INT, comm));
	for (int i = 0; i < n; i++)
		CHECK(all[i] == world[i], "%s: member %d is %d, expected %d", what, i, all[i],
		      world[i]);
	MPI_OK(MPI_Allreduce(&mt_rank, &sum, 1, MPI_INT, MPI_SUM, comm));
	CHECK(sum == exp, "%s: Allreduce %d, expected %d", what, sum, exp);
	MPI_OK(MPI_Sendrecv(&mt_rank, 1, MPI_INT, (me + 1) % n, 4, &got, 1, MPI_INT,
			    (me + n - 1) % n, 4, comm, MPI_STATUS_IGNORE));
	CHECK(got == world[(me + n - 1) % n], "%s: ring got %d", what, got);
}

static bool has(const int *l, int n, int x)
{
	for (int i = 0; i < n; i++)
		if (l[i] == x)
			return true;
	return false;
}

static void test_create(MPI_Group wg)
{
	int m[MAXR] = { 0 }, n = 0;
	MPI_Group g;
	MPI_Comm c;

	mt_phase = "Comm_create";
	for (int r = mt_size - 1; r >= 0; r--)
		if (r % 3 != 1)
			m[n++] = r;
	MPI_OK(MPI_Group_incl(wg, n, m, &g));
	MPI_OK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
	if (has(m, n, mt_rank)) {
		expect_members(c, m, n, "create");
		MPI_OK(MPI_Comm_free(&c));
	} else {
		CHECK(c == MPI_COMM_NULL, "non-member got a communicator");
	}
	MPI_OK(MPI_Group_free(&g));
	/* Disjoint groups in one call: each process passes its parity's. */
	n = 0;
	for (int r = 0; r < mt_size; r++)
		if (r % 2 == mt_rank % 2)
			m[n++] = r;
	MPI_OK(MPI_Group_incl(wg, n, m, &g));
	MPI_OK(MPI_Comm_create(MPI_COMM_WORLD, g, &c));
	expect_members(c, m, n, "create by parity");
	MPI_OK(MPI_Comm_free(&c));
	MPI_OK(MPI_Group_free(&g));
}

static void test_create_group(MPI_Group wg)
{
	int m[MAXR] = { 0 }, n = 0;
	MPI_Group g;
	MPI_Comm c = MPI_COMM_WORLD;

	mt_phase = "Comm_create_group";
	for (int r = (mt_size + 1) / 2 - 1; r >= 0; r--)
		m[n++] = r;
	MPI_OK(MPI_Group_incl(wg, n, m, &g));
	/* Only members call; the others go on to the next step at once. */
	if (has(m, n, mt_rank)) {
		MPI_OK(MPI_Comm_create_group(MPI_COMM_WORLD, g, 11, &c));
		expect_members(c, m, n, "create_group");
		MPI_OK(MPI_Comm_free(&c));
	}
	MPI_OK(MPI_Group_free(&g));
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
}

static void test_split_type(void)
{
	char names[MAXR][MPI_MAX_PROCESSOR_NAME], mine[MPI_MAX_PROCESSOR_NAME] = { 0 };
	int len, m[MAXR] = { 0 }, n = 0;
	MPI_Comm c;

	mt_phase = "Comm_split_type";
	MPI_OK(MPI_Get_processor_name(mine, &len));
	MPI_OK(MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names,
			     MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD));
	/* The ranks of this host, ordered by key = -rank. */
	for (int r = mt_size - 1; r >= 0; r--)
		if (!strcmp(names[r], mine))
			m[n++] = r;
	MPI_OK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, -mt_rank, MPI_INFO_NULL,
				   &c));
	expect_members(c, m, n, "split_type shared");
	MPI_OK(MPI_Comm_free(&c));
	MPI_OK(MPI_Comm_split_type(MPI_COMM_WORLD, mt_rank == 0 ? MPI_UNDEFINED
								 : MPI_COMM_TYPE_SHARED,
				   0, MPI_INFO_NULL, &c));
	if (mt_rank == 0)
		CHECK(c == MPI_COMM_NULL, "MPI_UNDEFINED gave a communicator");
	else
		MPI_OK(MPI_Comm_free(&c));
}

static void test_idup_info(void)
{
	int all[MAXR], flag = 0, nkeys = -1, cmp = -1;
	char v[MPI_MAX_INFO_VAL];
	MPI_Request req;
	MPI_Info info, got;
	MPI_Comm c, d;

	mt_phase = "idup/info";
	for (int r = 0; r < mt_size; r++)
		all[r] = r;
	MPI_OK(MPI_Comm_idup(MPI_COMM_WORLD, &c, &req));
	MPI_OK(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
	CHECK(flag && req == MPI_REQUEST_NULL, "idup request not complete");
	expect_members(c, all, mt_size, "idup");
	MPI_OK(MPI_Comm_compare(MPI_COMM_WORLD, c, &cmp));
	CHECK(cmp == MPI_CONGRUENT, "idup compare %d", cmp);
	MPI_OK(MPI_Info_create(&info));
	MPI_OK(MPI_Info_set(info, "vd_hint", "yes"));
	MPI_OK(MPI_Comm_dup_with_info(c, info, &d));
	MPI_OK(MPI_Comm_get_info(d, &got));
	MPI_OK(MPI_Info_get(got, "vd_hint", sizeof(v) - 1, v, &flag));
	CHECK(flag && !strcmp(v, "yes"), "dup_with_info lost the hint");
	MPI_OK(MPI_Info_free(&got));
	MPI_OK(MPI_Comm_get_info(c, &got));
	MPI_OK(MPI_Info_get_nkeys(got, &nkeys));
	CHECK(nkeys == 0, "parent has %d hints", nkeys);
	MPI_OK(MPI_Info_free(&got));
	MPI_OK(MPI_Info_set(info, "other", "1"));
	MPI_OK(MPI_Comm_set_info(c, info));
	MPI_OK(MPI_Info_free(&info));
	MPI_OK(MPI_Comm_get_info(c, &got));
	MPI_OK(MPI_Info_get_nkeys(got, &nkeys));
	CHECK(nkeys == 2, "set_info: %d hints", nkeys);
	MPI_OK(MPI_Info_free(&got));
	expect_members(d, all, mt_size, "dup_with_info");
	MPI_OK(MPI_Comm_free(&d));
	MPI_OK(MPI_Comm_free(&c));
}

/* ---- intercommunicators ------------------------------------------------------ */

/* The world ranks of parity p, ascending. */
static int parity(int p, int *out)
{
	int n = 0;

	for (int r = p; r < mt_size; r += 2)
		out[n++] = r;
	return n;
}

static void inter_p2p(MPI_Comm ic, const int *remote, int rn, const char *what)
{
	MPI_Request reqs[MAXR];
	MPI_Status st;
	int got = -1;

	for (int j = 0; j < rn; j++)
		MPI_OK(MPI_Isend(&mt_rank, 1, MPI_INT, j, 21, ic, &reqs[j]));
	for (int j = 0; j < rn; j++) {
		MPI_OK(MPI_Recv(&got, 1, MPI_INT, j, 21, ic, &st));
		CHECK(got == remote[j] && st.MPI_SOURCE == j, "%s: from remote %d got %d "
		      "(source %d), expected %d", what, j, got, st.MPI_SOURCE, remote[j]);
	}
	MPI_OK(MPI_Waitall(rn, reqs, MPI_STATUSES_IGNORE));
	/* MPI_ANY_SOURCE: whoever comes, the source names the remote rank. */
	MPI_OK(MPI_Send(&mt_rank, 1, MPI_INT, 0, 22, ic));
	int me = -1;
	MPI_OK(MPI_Comm_rank(ic, &me));
	if (me == 0) {
		int lsize = 0;
		MPI_OK(MPI_Comm_size(ic, &lsize));
		(void)lsize;
		for (int j = 0; j < rn; j++) {
			MPI_OK(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 22, ic, &st));
			CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rn &&
			      got == remote[st.MPI_SOURCE], "%s: any source: %d from %d", what,
			      got, st.MPI_SOURCE);
		}
	}
}

static void check_inter_shape(MPI_Comm ic, MPI_Group wg, const int *local, int ln,
			      const int *remote, int rn)
{
	int flag = 0, size = -1, rsize = -1, idx[MAXR], w[MAXR];
	MPI_Group rg;

	MPI_OK(MPI_Comm_test_inter(ic, &flag));
	MPI_OK(MPI_Comm_size(ic, &size));
	MPI_OK(MPI_Comm_remote_size(ic, &rsize));
	CHECK(flag && size == ln && rsize == rn, "inter: flag %d size %d/%d remote %d/%d", flag,
	      size, ln, rsize, rn);
	MPI_OK(MPI_Comm_remote_group(ic, &rg));
	for (int i = 0; i < rn; i++)
		idx[i] = i;
	MPI_OK(MPI_Group_translate_ranks(rg, rn, idx, wg, w));
	for (int i = 0; i < rn; i++)
		CHECK(w[i] == remote[i], "remote group member %d is %d, expected %d", i, w[i],
		      remote[i]);
	MPI_OK(MPI_Group_free(&rg));
	(void)local;
}

/* Merge with the given highs; the low group first, the group of world
 * rank 0 first on a tie. */
static void check_merge(MPI_Comm ic, int my_high, int their_high, const int *local, int ln,
			const int *remote, int rn)
{
	int w[MAXR], n = 0;
	bool local_first = my_high != their_high ? !my_high : local[0] == 0;
	const int *first = local_first ? local : remote, *second = local_first ? remote : local;
	int nf = local_first ? ln : rn, ns = local_first ? rn : ln;
	MPI_Comm m;

	for (int i = 0; i < nf; i++)
		w[n++] = first[i];
	for (int i = 0; i < ns; i++)
		w[n++] = second[i];
	MPI_OK(MPI_Intercomm_merge(ic, my_high, &m));
	expect_members(m, w, n, "merge");
	MPI_OK(MPI_Comm_free(&m));
}

static void test_intercomm(MPI_Group wg)
{
	int p = mt_rank % 2, local[MAXR], remote[MAXR], ln = parity(p, local);
	int rn = parity(1 - p, remote), buf = 0, rc;
	MPI_Comm lc, ic, dup;

	mt_phase = "intercomm";
	if (mt_size < 2)
		return;
	MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, p, mt_rank, &lc));
	/* Leaders: local rank 0; the remote one is world rank 1 - p. */
	MPI_OK(MPI_Intercomm_create(lc, 0, MPI_COMM_WORLD, 1 - p, 99, &ic));
	check_inter_shape(ic, wg, local, ln, remote, rn);
	inter_p2p(ic, remote, rn, "intercomm");
	MPI_OK(MPI_Barrier(ic));
	MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
	rc = MPI_Bcast(&buf, 1, MPI_INT, 0, ic);
	CHECK(err_class(rc) == MPI_ERR_COMM, "Bcast on an intercommunicator: %d", rc);
	rc = MPI_Allreduce(&buf, &buf, 1, MPI_INT, MPI_SUM, ic);
	CHECK(err_class(rc) == MPI_ERR_COMM, "Allreduce on an intercommunicator: %d", rc);
	rc = MPI_Comm_split(ic, 0, 0, &dup);
	CHECK(err_class(rc) == MPI_ERR_COMM, "split of an intercommunicator: %d", rc);
	MPI_OK(MPI_Comm_dup(ic, &dup));
	check_inter_shape(dup, wg, local, ln, remote, rn);
	inter_p2p(dup, remote, rn, "intercomm dup");
	MPI_OK(MPI_Comm_free(&dup));
	check_merge(ic, p, 1 - p, local, ln, remote, rn);      /* evens low */
	check_merge(ic, 1 - p, p, local, ln, remote, rn);      /* odds low */
	check_merge(ic, 0, 0, local, ln, remote, rn);          /* tie */
	check_merge(ic, 1, 1, local, ln, remote, rn);          /* tie */
	MPI_OK(MPI_Comm_free(&ic));
	MPI_OK(MPI_Comm_free(&lc));
}

static void test_errors(MPI_Group wg)
{
	int flag = -1, size;
	MPI_Comm c = MPI_COMM_NULL;
	MPI_Group bad;
	int outside[1] = { 0 };
	MPI_Request req;

	mt_phase = "errors";
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	CHECK(err_class(MPI_Comm_remote_size(MPI_COMM_WORLD, &size)) == MPI_ERR_COMM,
	      "remote_size of an intracommunicator");
	CHECK(err_class(MPI_Intercomm_merge(MPI_COMM_WORLD, 0, &c)) == MPI_ERR_COMM,
	      "merge of an intracommunicator");
	CHECK(err_class(MPI_Comm_test_inter(12345, &flag)) == MPI_ERR_COMM, "test_inter bad");
	MPI_OK(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag));
	CHECK(flag == 0, "WORLD is an intercommunicator");
	CHECK(err_class(MPI_Comm_create_group(MPI_COMM_WORLD, wg, -1, &c)) == MPI_ERR_TAG,
	      "create_group negative tag");
	CHECK(err_class(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_NULL, &c)) == MPI_ERR_GROUP,
	      "create with GROUP_NULL (all ranks)");
	/* A group outside SELF's: rank 0 of WORLD is not in SELF for ranks > 0. */
	MPI_OK(MPI_Group_incl(wg, 1, outside, &bad));
	MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
	if (mt_rank != 0)
		CHECK(err_class(MPI_Comm_create_group(MPI_COMM_SELF, bad, 0, &c)) ==
		      MPI_ERR_GROUP, "create_group with a group outside the parent");
	MPI_OK(MPI_Group_free(&bad));
	CHECK(err_class(MPI_Comm_split_type(MPI_COMM_WORLD, 12345, 0, MPI_INFO_NULL, &c)) ==
	      MPI_ERR_ARG, "split_type bad type");
	CHECK(err_class(MPI_Comm_idup(MPI_COMM_NULL, &c, &req)) == MPI_ERR_COMM,
	      "idup COMM_NULL");
	CHECK(err_class(MPI_Comm_set_info(MPI_COMM_WORLD, 4321)) == MPI_ERR_INFO,
	      "set_info bad info");
	if (mt_size > 1) {
		MPI_Comm lc;

		/* lc inherits MPI_ERRORS_RETURN.  A bad remote leader is seen by
		 * the leaders alone; every member must hear of it. */
		MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, 0, &lc));
		CHECK(err_class(MPI_Intercomm_create(lc, mt_size, MPI_COMM_WORLD, 0, 1, &c)) ==
		      MPI_ERR_RANK, "intercomm_create bad local leader");
		CHECK(err_class(MPI_Intercomm_create(lc, 0, MPI_COMM_WORLD, mt_size, 1, &c)) ==
		      MPI_ERR_RANK, "intercomm_create bad remote leader");
		CHECK(err_class(MPI_Intercomm_create(lc, 0, MPI_COMM_NULL, 0, 1, &c)) ==
		      MPI_ERR_COMM, "intercomm_create bad peer_comm");
		MPI_OK(MPI_Comm_free(&lc));
	}
	CHECK(c == MPI_COMM_NULL, "a failed call set a communicator");
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
	MPI_Group wg;

	mt_init(&argc, &argv, 60);
	if (mt_size > MAXR)
		return mt_finish("comm2");
	MPI_OK(MPI_Comm_group(MPI_COMM_WORLD, &wg));
	for (int i = 0; i < 2; i++) {
		test_create(wg);
		test_create_group(wg);
		test_split_type();
		test_idup_info();
		test_intercomm(wg);
	}
	test_errors(wg);
	MPI_OK(MPI_Group_free(&wg));
	/* An intercommunicator (and its local one) left for MPI_Finalize. */
	if (mt_size > 1) {
		MPI_Comm lc, ic;

		MPI_OK(MPI_Comm_split(MPI_COMM_WORLD, mt_rank % 2, 0, &lc));
		MPI_OK(MPI_Intercomm_create(lc, 0, MPI_COMM_WORLD, 1 - mt_rank % 2, 5, &ic));
	}
	return mt_finish("comm2");
}
