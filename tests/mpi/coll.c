/* SPDX-License-Identifier: MIT */
/*
 * Data-movement collectives: Barrier, Bcast, Gather(v), Scatter(v),
 * Allgather(v), Alltoall(v), for every root, counts 0/1/1000/100000, the
 * MPI_IN_PLACE forms, uneven counts with displacements (gaps must stay
 * untouched), and derived datatypes with matching signatures.
 */
#include "mpitest.h"

static const int counts[] = { 0, 1, 1000, 100000 };
#define NCOUNTS 4
#define GAP (-77)

static int val(int r, int i)
{
	return r * 1000003 + i * 7 + 1;
}

/* Value of block (src -> dst), element i, for the all-to-all family. */
static int a3(int s, int d, int i)
{
	return s * 1000000 + d * 10000 + i;
}

static int *ibuf(size_t n, int fill)
{
	int *p = mt_malloc(sizeof(int) * (n ? n : 1));

	for (size_t i = 0; i < n; i++)
		p[i] = fill;
	return p;
}

static void check_seg(const int *b, int n, int r, const char *what, int count)
{
	for (int i = 0; i < n; i++)
		if (!CHECK(b[i] == val(r, i), "%s (count %d): block of rank %d, [%d] = %d, "
			   "expected %d", what, count, r, i, b[i], val(r, i)))
			return;
}

static void test_barrier(void)
{
	mt_phase = "barrier";
	for (int i = 0; i < 50; i++)
		MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	if (mt_size < 2)
		return;
	/* Nobody leaves before the last one arrives. */
	double t0 = MPI_Wtime();
	if (mt_rank == mt_size - 1)
		mt_sleep_ms(100);
	MPI_OK(MPI_Barrier(MPI_COMM_WORLD));
	CHECK(MPI_Wtime() - t0 > 0.08, "left the barrier after %.3f s, before the late rank "
	      "arrived (100 ms)", MPI_Wtime() - t0);
}

static void test_bcast(void)
{
	mt_phase = "bcast";
	for (int c = 0; c < NCOUNTS; c++)
		for (int root = 0; root < mt_size; root++) {
			int n = counts[c], *b = ibuf((size_t)n, -1);

			if (mt_rank == root)
				for (int i = 0; i < n; i++)
					b[i] = val(root, i);
			MPI_OK(MPI_Bcast(b, n, MPI_INT, root, MPI_COMM_WORLD));
			check_seg(b, n, root, "Bcast", n);
			free(b);
		}
	/* doubles, and a vector type (every other double) against itself */
	double d[200];
	MPI_Datatype v;
	for (int i = 0; i < 200; i++)
		d[i] = mt_rank == 0 ? i * 0.25 : -1.0;
	MPI_OK(MPI_Type_vector(100, 1, 2, MPI_DOUBLE, &v));
	MPI_OK(MPI_Type_commit(&v));
	MPI_OK(MPI_Bcast(d, 1, v, 0, MPI_COMM_WORLD));
	for (int i = 0; i < 200; i++)
		if (!CHECK(d[i] == (i % 2 == 0 || mt_rank == 0 ? i * 0.25 : -1.0),
			   "Bcast vector: d[%d] = %g", i, d[i]))
			break;
	MPI_OK(MPI_Type_free(&v));
}

static void gather_one(int n, int root, int in_place, int typed)
{
	int *s = ibuf((size_t)n, 0), *r = NULL;
	MPI_Datatype rt = MPI_INT, ct = MPI_DATATYPE_NULL;
	int rc = n;

	for (int i = 0; i < n; i++)
		s[i] = val(mt_rank, i);
	if (typed && n > 0) {  /* receive each block as one contiguous(n) */
		MPI_OK(MPI_Type_contiguous(n, MPI_INT, &ct));
		MPI_OK(MPI_Type_commit(&ct));
		rt = ct;
		rc = 1;
	}
	if (mt_rank == root) {
		r = ibuf((size_t)n * (size_t)mt_size, -1);
		if (in_place)
			memcpy(r + (size_t)root * (size_t)n, s, sizeof(int) * (size_t)n);
	}
	MPI_OK(MPI_Gather(in_place && mt_rank == root ? MPI_IN_PLACE : s, n, MPI_INT, r, rc, rt,
			  root, MPI_COMM_WORLD));
	if (mt_rank == root)
		for (int j = 0; j < mt_size; j++)
			check_seg(r + (size_t)j * (size_t)n, n, j,
				  in_place ? "Gather IN_PLACE" : "Gather", n);
	if (ct != MPI_DATATYPE_NULL)
		MPI_OK(MPI_Type_free(&ct));
	free(s);
	free(r);
}

static void scatter_one(int n, int root, int in_place)
{
	int *s = NULL, *r = ibuf((size_t)n, -1);

	if (mt_rank == root) {
		s = ibuf((size_t)n * (size_t)mt_size, 0);
		for (int j = 0; j < mt_size; j++)
			for (int i = 0; i < n; i++)
				s[(size_t)j * (size_t)n + (size_t)i] = val(j, i);
	}
	if (in_place && mt_rank == root) {
		MPI_OK(MPI_Scatter(s, n, MPI_INT, MPI_IN_PLACE, n, MPI_INT, root, MPI_COMM_WORLD));
		check_seg(s + (size_t)root * (size_t)n, n, root, "Scatter IN_PLACE (root)", n);
	} else {
		MPI_OK(MPI_Scatter(s, n, MPI_INT, r, n, MPI_INT, root, MPI_COMM_WORLD));
		check_seg(r, n, mt_rank, in_place ? "Scatter IN_PLACE" : "Scatter", n);
	}
	free(s);
	free(r);
}

static void allgather_one(int n, int in_place)
{
	int *s = ibuf((size_t)n, 0), *r = ibuf((size_t)n * (size_t)mt_size, -1);

	for (int i = 0; i < n; i++)
		s[i] = val(mt_rank, i);
	if (in_place)
		memcpy(r + (size_t)mt_rank * (size_t)n, s, sizeof(int) * (size_t)n);
	MPI_OK(MPI_Allgather(in_place ? MPI_IN_PLACE : s, n, MPI_INT, r, n, MPI_INT,
			     MPI_COMM_WORLD));
	for (int j = 0; j < mt_size; j++)
		check_seg(r + (size_t)j * (size_t)n, n, j, in_place ? "Allgather IN_PLACE" :
			  "Allgather", n);
	free(s);
	free(r);
}

static void alltoall_one(int n, int in_place)
{
	size_t tot = (size_t)n * (size_t)mt_size;
	int *s = ibuf(tot, 0), *r = ibuf(tot, -1);

	for (int d = 0; d < mt_size; d++)
		for (int i = 0; i < n; i++)
			s[(size_t)d * (size_t)n + (size_t)i] = a3(mt_rank, d, i);
	if (in_place) {
		memcpy(r, s, sizeof(int) * tot);
		MPI_OK(MPI_Alltoall(MPI_IN_PLACE, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD));
	} else {
		MPI_OK(MPI_Alltoall(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD));
	}
	for (int src = 0; src < mt_size; src++)
		for (int i = 0; i < n; i++) {
			int got = r[(size_t)src * (size_t)n + (size_t)i];

			if (!CHECK(got == a3(src, mt_rank, i), "Alltoall%s (count %d): from %d "
				   "[%d] = %d, expected %d", in_place ? " IN_PLACE" : "", n, src,
				   i, got, a3(src, mt_rank, i)))
				goto out;
		}
out:
	free(s);
	free(r);
}

static void test_regular(void)
{
	for (int c = 0; c < NCOUNTS; c++) {
		int n = counts[c];
		int roots[3] = { 0, mt_size - 1, mt_size / 2 };

		for (int k = 0; k < 3; k++) {
			if (k > 0 && (roots[k] == roots[0] || (k == 2 && roots[2] == roots[1])))
				continue;
			mt_phase = "gather";
			gather_one(n, roots[k], 0, 0);
			gather_one(n, roots[k], 1, 0);
			gather_one(n, roots[k], 0, 1);
			mt_phase = "scatter";
			scatter_one(n, roots[k], 0);
			scatter_one(n, roots[k], 1);
		}
		mt_phase = "allgather";
		allgather_one(n, 0);
		allgather_one(n, 1);
		mt_phase = "alltoall";
		if (n <= 10000) {
			alltoall_one(n, 0);
			alltoall_one(n, 1);
		}
	}
	mt_phase = "alltoall";
	alltoall_one(10000, 0);
}

/* ---- the v forms: uneven counts, blocks in reverse rank order with gaps */

static int vcount(int r, int m)
{
	return r % 3 == 1 ? 0 : (r + 2) * m;
}

/* Displacements: rank n-1's block first, a gap of 2 after each block. */
static int vlayout(int *cnt, int *dsp, int m)
{
	int pos = 0;

	for (int r = mt_size - 1; r >= 0; r--) {
		cnt[r] = vcount(r, m);
		dsp[r] = pos;
		pos += cnt[r] + 2;
	}
	return pos;
}

static void check_vbuf(const int *b, const int *cnt, const int *dsp, int total,
		       const char *what, int m)
{
	char *mark = mt_malloc((size_t)total + 1);

	memset(mark, 0, (size_t)total + 1);
	for (int r = 0; r < mt_size; r++) {
		check_seg(b + dsp[r], cnt[r], r, what, m);
		memset(mark + dsp[r], 1, (size_t)cnt[r]);
	}
	for (int i = 0; i < total; i++)
		if (!mark[i] && !CHECK(b[i] == GAP, "%s (m %d): gap [%d] written (%d)", what, m,
				       i, b[i]))
			break;
	free(mark);
}

static void vforms(int m, int root)
{
	int n = mt_size, *cnt = ibuf((size_t)n, 0), *dsp = ibuf((size_t)n, 0);
	int total = vlayout(cnt, dsp, m), me = cnt[mt_rank];
	int *s = ibuf((size_t)me, 0), *r = ibuf((size_t)total, GAP);

	for (int i = 0; i < me; i++)
		s[i] = val(mt_rank, i);
	mt_phase = "gatherv";
	MPI_OK(MPI_Gatherv(s, me, MPI_INT, r, cnt, dsp, MPI_INT, root, MPI_COMM_WORLD));
	if (mt_rank == root)
		check_vbuf(r, cnt, dsp, total, "Gatherv", m);
	/* IN_PLACE: the root's block is already in place. */
	for (int i = 0; i < total; i++)
		r[i] = GAP;
	if (mt_rank == root)
		memcpy(r + dsp[root], s, sizeof(int) * (size_t)me);
	MPI_OK(MPI_Gatherv(mt_rank == root ? MPI_IN_PLACE : s, me, MPI_INT, r, cnt, dsp,
			   MPI_INT, root, MPI_COMM_WORLD));
	if (mt_rank == root)
		check_vbuf(r, cnt, dsp, total, "Gatherv IN_PLACE", m);

	mt_phase = "scatterv";       /* the root scatters the full layout back */
	int *back = ibuf((size_t)me + 1, GAP);
	MPI_OK(MPI_Scatterv(r, cnt, dsp, MPI_INT, back, me, MPI_INT, root, MPI_COMM_WORLD));
	check_seg(back, me, mt_rank, "Scatterv", m);
	CHECK(back[me] == GAP, "Scatterv wrote past the count");
	MPI_OK(MPI_Scatterv(r, cnt, dsp, MPI_INT, mt_rank == root ? MPI_IN_PLACE : back, me,
			    MPI_INT, root, MPI_COMM_WORLD));
	check_seg(mt_rank == root ? r + dsp[root] : back, me, mt_rank, "Scatterv IN_PLACE", m);

	mt_phase = "allgatherv";
	for (int i = 0; i < total; i++)
		r[i] = GAP;
	MPI_OK(MPI_Allgatherv(s, me, MPI_INT, r, cnt, dsp, MPI_INT, MPI_COMM_WORLD));
	check_vbuf(r, cnt, dsp, total, "Allgatherv", m);
	for (int i = 0; i < total; i++)
		r[i] = GAP;
	memcpy(r + dsp[mt_rank], s, sizeof(int) * (size_t)me);
	MPI_OK(MPI_Allgatherv(MPI_IN_PLACE, me, MPI_INT, r, cnt, dsp, MPI_INT, MPI_COMM_WORLD));
	check_vbuf(r, cnt, dsp, total, "Allgatherv IN_PLACE", m);
	free(back);
	free(s);
	free(r);
	free(cnt);
	free(dsp);
}

/* Alltoallv: s sends (s + 2d) % 4 * m elements to d; the sender lays its
 * blocks out in reverse destination order with gaps of 1, the receiver in
 * source order with gaps of 3. */
static int c2(int s, int d, int m)
{
	return (s + 2 * d) % 4 * m;
}

static void alltoallv_one(int m)
{
	int n = mt_size;
	int *sc = ibuf((size_t)n, 0), *sd = ibuf((size_t)n, 0);
	int *rc = ibuf((size_t)n, 0), *rd = ibuf((size_t)n, 0);
	int stot = 0, rtot = 0;

	mt_phase = "alltoallv";
	for (int d = n - 1; d >= 0; d--) {
		sc[d] = c2(mt_rank, d, m);
		sd[d] = stot;
		stot += sc[d] + 1;
	}
	for (int s = 0; s < n; s++) {
		rc[s] = c2(s, mt_rank, m);
		rd[s] = rtot;
		rtot += rc[s] + 3;
	}
	int *sb = ibuf((size_t)stot, GAP), *rb = ibuf((size_t)rtot, GAP);
	for (int d = 0; d < n; d++)
		for (int i = 0; i < sc[d]; i++)
			sb[sd[d] + i] = a3(mt_rank, d, i);
	MPI_OK(MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD));
	for (int s = 0; s < n; s++) {
		for (int i = 0; i < rc[s]; i++)
			if (!CHECK(rb[rd[s] + i] == a3(s, mt_rank, i), "Alltoallv (m %d): from %d "
				   "[%d] = %d", m, s, i, rb[rd[s] + i]))
				break;
		for (int i = rc[s]; i < rc[s] + 3; i++)
			CHECK(rb[rd[s] + i] == GAP, "Alltoallv (m %d): gap after %d written", m, s);
	}
	free(sb);
	free(rb);
	free(sc);
	free(sd);
	free(rc);
	free(rd);
}

static void test_v(void)
{
	static const int ms[] = { 1, 300, 20000 };

	for (int k = 0; k < 3; k++) {
		vforms(ms[k], 0);
		vforms(ms[k], mt_size - 1);
		alltoallv_one(ms[k]);
	}
}

/* Different but matching type signatures: the root gathers doubles sent
 * as pairs (contiguous(2, DOUBLE)) into plain doubles, and allgathers a
 * strided vector into contiguous storage. */
/* Alltoall with types of one signature: strided blocks sent, strided or
 * plain receives (even ranks strided), so members mix packed copies and
 * direct ones. */
static void alltoall_types(void)
{
	MPI_Datatype v, vr;
	size_t n = (size_t)mt_size;
	int *s = ibuf(6 * n, -5), *r = ibuf(6 * n, -1);
	int strided = mt_rank % 2 == 0;

	MPI_OK(MPI_Type_vector(3, 1, 2, MPI_INT, &v));
	MPI_OK(MPI_Type_create_resized(v, 0, 6 * sizeof(int), &vr));
	MPI_OK(MPI_Type_commit(&vr));
	for (size_t d = 0; d < n; d++)
		for (int i = 0; i < 3; i++)
			s[6 * d + 2 * (size_t)i] = a3(mt_rank, (int)d, i);
	if (strided)
		MPI_OK(MPI_Alltoall(s, 1, vr, r, 1, vr, MPI_COMM_WORLD));
	else
		MPI_OK(MPI_Alltoall(s, 1, vr, r, 3, MPI_INT, MPI_COMM_WORLD));
	for (size_t src = 0; src < n; src++)
		for (int i = 0; i < 3; i++) {
			int got = strided ? r[6 * src + 2 * (size_t)i] : r[3 * src + (size_t)i];
			if (!CHECK(got == a3((int)src, mt_rank, i), "Alltoall types: from %zu [%d] = %d",
				   src, i, got))
				goto out;
		}
	if (strided)
		for (size_t j = 1; j < 6 * n; j += 2)
			if (!CHECK(r[j] == -1, "Alltoall types: gap %zu written", j))
				break;
out:
	MPI_OK(MPI_Type_free(&vr));
	MPI_OK(MPI_Type_free(&v));
	free(s);
	free(r);
}

static void test_types(void)
{
	MPI_Datatype pair, v;
	double s[10], *r = mt_malloc(sizeof(double) * 10 * (size_t)mt_size);
	int vs[20], *vr = ibuf(10 * (size_t)mt_size, -1);

	mt_phase = "coll_types";
	MPI_OK(MPI_Type_contiguous(2, MPI_DOUBLE, &pair));
	MPI_OK(MPI_Type_commit(&pair));
	for (int i = 0; i < 10; i++)
		s[i] = mt_rank + i / 16.0;
	MPI_OK(MPI_Gather(s, 5, pair, r, 10, MPI_DOUBLE, 0, MPI_COMM_WORLD));
	if (mt_rank == 0)
		for (int j = 0; j < mt_size * 10; j++)
			if (!CHECK(r[j] == j / 10 + (j % 10) / 16.0, "Gather pairs: r[%d] = %g", j,
				   r[j]))
				break;
	MPI_OK(MPI_Type_vector(10, 1, 2, MPI_INT, &v));
	MPI_OK(MPI_Type_commit(&v));
	for (int i = 0; i < 20; i++)
		vs[i] = i % 2 ? -5 : 100 * mt_rank + i / 2;
	MPI_OK(MPI_Allgather(vs, 1, v, vr, 10, MPI_INT, MPI_COMM_WORLD));
	for (int j = 0; j < mt_size * 10; j++)
		if (!CHECK(vr[j] == 100 * (j / 10) + j % 10, "Allgather vector: vr[%d] = %d", j,
			   vr[j]))
			break;
	MPI_OK(MPI_Type_free(&pair));
	MPI_OK(MPI_Type_free(&v));
	free(r);
	free(vr);
	alltoall_types();
}

int main(int argc, char **argv)
{
	static void (*const tests[])(void) = {
		test_barrier, test_bcast, test_regular, test_v, test_types,
	};

	mt_init(&argc, &argv, 60);
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		tests[i]();
	return mt_finish("coll");
}
