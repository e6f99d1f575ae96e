/* SPDX-License-Identifier: MIT */
/*
 * Single-process unit test of the datatype files (src/mpi/dtype.c,
 * dtype_make.c, dtype_array.c, dtype_query.c) and src/mpi/op.c, linked with
 * those objects only (the rest of the MPI library is stubbed):
 *   cc -std=c11 -D_GNU_SOURCE -Iinclude -Isrc/mpi tests/mpi/unit_dtype_op.c \
 *      src/mpi/dtype.c src/mpi/dtype_make.c src/mpi/dtype_array.c \
 *      src/mpi/dtype_query.c src/mpi/op.c -o unit_dtype_op && ./unit_dtype_op
 * Exit 0 pass, 1 fail.
 */
#include <complex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "typeop.h"

/* ---- stubs for what errh.c / env.c / type_attr.c provide in the library --- */
struct vd_mpi_world vd_mpi = { .phase = VD_MPI_RUNNING, .size = 1 };
static int last_raised;
int vd_mpi_raise_msg(MPI_Comm comm, int code, const char *fn, const char *detail)
{
	(void)comm;
	(void)fn;
	(void)detail;
	last_raised = code;
	return code;
}
int vd_mpi_not_running(const char *fn)
{
	return vd_mpi_raise_msg(MPI_COMM_WORLD, MPI_ERR_OTHER, fn, NULL);
}
int vd_mpi_errno(int err)
{
	return err ? MPI_ERR_OTHER : MPI_SUCCESS;
}
/* type_attr.c: no attributes here. */
int vd_type_attr_free(MPI_Datatype t)
{
	(void)t;
	return MPI_SUCCESS;
}

int vd_type_attr_copy(MPI_Datatype from, MPI_Datatype to)
{
	(void)from, (void)to;
	return MPI_SUCCESS;
}

static int failures;
#define CHECK(c)                                                               \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, \
				__LINE__, #c);                                 \
			failures++;                                            \
		}                                                              \
	} while (0)

static void size_extent(MPI_Datatype dt, int size, MPI_Aint lb, MPI_Aint extent)
{
	int s = -1;
	MPI_Aint l = -1, e = -1;

	CHECK(MPI_Type_size(dt, &s) == MPI_SUCCESS);
	CHECK(MPI_Type_get_extent(dt, &l, &e) == MPI_SUCCESS);
	if (s != size || l != lb || e != extent) {
		fprintf(stderr, "type %d: size %d lb %ld extent %ld, want %d %ld %ld\n",
			dt, s, l, e, size, lb, extent);
		failures++;
	}
}

static void test_builtins(void)
{
	size_extent(MPI_CHAR, 1, 0, 1);
	size_extent(MPI_WCHAR, sizeof(wchar_t), 0, sizeof(wchar_t));
	size_extent(MPI_LONG, sizeof(long), 0, sizeof(long));
	size_extent(MPI_LONG_DOUBLE, sizeof(long double), 0, sizeof(long double));
	size_extent(MPI_C_BOOL, sizeof(_Bool), 0, sizeof(_Bool));
	size_extent(MPI_C_LONG_DOUBLE_COMPLEX, sizeof(long double _Complex), 0,
		    sizeof(long double _Complex));
	size_extent(MPI_CXX_BOOL, sizeof(_Bool), 0, sizeof(_Bool));
	size_extent(MPI_CXX_FLOAT_COMPLEX, sizeof(float _Complex), 0, sizeof(float _Complex));
	size_extent(MPI_CXX_DOUBLE_COMPLEX, sizeof(double _Complex), 0,
		    sizeof(double _Complex));
	size_extent(MPI_CXX_LONG_DOUBLE_COMPLEX, sizeof(long double _Complex), 0,
		    sizeof(long double _Complex));
	size_extent(MPI_DOUBLE_INT, 12, 0, 16);
	size_extent(MPI_FLOAT_INT, 8, 0, 8);
	size_extent(MPI_SHORT_INT, 6, 0, 8);
	size_extent(MPI_2INT, 8, 0, 8);
	size_extent(MPI_LONG_INT, sizeof(long) + 4, 0, sizeof(struct vd_pair_li));
	size_extent(MPI_LONG_DOUBLE_INT, sizeof(long double) + 4, 0,
		    sizeof(struct vd_pair_ldi));
	CHECK(vd_dtype_get(0) == NULL);
	CHECK(vd_dtype_get(37) == NULL);       /* a gap in the predefined numbers */
	CHECK(vd_dtype_get(64) == NULL);
	CHECK(vd_dtype_get(-3) == NULL);
	CHECK(vd_dtype_comm(MPI_INT) != NULL);
	CHECK(vd_dtype_get(MPI_INT)->contig);
	CHECK(!vd_dtype_get(MPI_DOUBLE_INT)->contig);
}

static void test_errors(void)
{
	MPI_Datatype t = MPI_INT, n;
	int bl[2] = { 1, -1 }, disp[2] = { 0, 2 }, s;
	MPI_Aint a;

	CHECK(MPI_Type_free(&t) == MPI_ERR_TYPE);
	CHECK(MPI_Type_contiguous(-1, MPI_INT, &n) == MPI_ERR_COUNT);
	CHECK(MPI_Type_contiguous(1, 0, &n) == MPI_ERR_TYPE);
	CHECK(MPI_Type_contiguous(1, 999, &n) == MPI_ERR_TYPE);
	CHECK(MPI_Type_contiguous(1, MPI_INT, NULL) == MPI_ERR_ARG);
	CHECK(MPI_Type_vector(-1, 1, 1, MPI_INT, &n) == MPI_ERR_COUNT);
	CHECK(MPI_Type_vector(1, -1, 1, MPI_INT, &n) == MPI_ERR_ARG);
	CHECK(MPI_Type_indexed(-1, bl, disp, MPI_INT, &n) == MPI_ERR_COUNT);
	CHECK(MPI_Type_indexed(2, bl, disp, MPI_INT, &n) == MPI_ERR_ARG);
	CHECK(MPI_Type_indexed(1, NULL, disp, MPI_INT, &n) == MPI_ERR_ARG);
	CHECK(MPI_Type_size(MPI_INT, NULL) == MPI_ERR_ARG);
	CHECK(MPI_Type_size(77, &s) == MPI_ERR_TYPE);
	CHECK(MPI_Type_get_extent(MPI_INT, NULL, &a) == MPI_ERR_ARG);
	CHECK(MPI_Type_commit(NULL) == MPI_ERR_ARG);
	t = 12345;
	CHECK(MPI_Type_commit(&t) == MPI_ERR_TYPE);
	/* uncommitted types are not for communication; freed handles die */
	CHECK(MPI_Type_contiguous(2, MPI_INT, &n) == MPI_SUCCESS);
	CHECK(vd_dtype_get(n) && !vd_dtype_comm(n));
	CHECK(MPI_Type_commit(&n) == MPI_SUCCESS && vd_dtype_comm(n));
	t = n;
	CHECK(MPI_Type_free(&n) == MPI_SUCCESS && n == MPI_DATATYPE_NULL);
	CHECK(vd_dtype_get(t) == NULL);
	CHECK(MPI_Type_free(&t) == MPI_ERR_TYPE);
}

static void test_derived(void)
{
	MPI_Datatype c, v, ix, vn, vv, e, reuse;
	int bl[3] = { 2, 0, 1 }, disp[3] = { 4, 100, -2 };
	int src[32], dst[32], packed[32];

	CHECK(MPI_Type_contiguous(3, MPI_INT, &c) == MPI_SUCCESS);
	size_extent(c, 12, 0, 12);
	CHECK(vd_dtype_get(c)->contig && vd_dtype_get(c)->basic == MPI_INT &&
	      vd_dtype_get(c)->basic_count == 3);
	CHECK(MPI_Type_vector(3, 2, 4, MPI_INT, &v) == MPI_SUCCESS);
	size_extent(v, 24, 0, 40);             /* (2*4+2) ints */
	CHECK(!vd_dtype_get(v)->contig && vd_dtype_get(v)->nblocks == 3);
	/* negative stride: lb < 0 */
	CHECK(MPI_Type_vector(3, 1, -2, MPI_INT, &vn) == MPI_SUCCESS);
	size_extent(vn, 12, -16, 20);
	/* indexed with a zero block (ignored for bounds) and a negative disp */
	CHECK(MPI_Type_indexed(3, bl, disp, MPI_INT, &ix) == MPI_SUCCESS);
	size_extent(ix, 12, -8, 32);
	/* vector of vector */
	CHECK(MPI_Type_vector(2, 1, 2, v, &vv) == MPI_SUCCESS);
	size_extent(vv, 48, 0, 120);
	CHECK(vd_dtype_get(vv)->basic_count == 12);
	/* empty */
	CHECK(MPI_Type_contiguous(0, MPI_INT, &e) == MPI_SUCCESS);
	size_extent(e, 0, 0, 0);
	for (int i = 0; i < 32; i++)
		src[i] = i;
	/* pack/unpack vector: elements 0,1,4,5,8,9 */
	CHECK(vd_dtype_pack(vd_dtype_get(v), src, 1, packed) == 24);
	CHECK(packed[0] == 0 && packed[1] == 1 && packed[2] == 4 && packed[5] == 9);
	memset(dst, -1, sizeof(dst));
	vd_dtype_unpack(vd_dtype_get(v), packed, 24, dst);
	CHECK(dst[0] == 0 && dst[1] == 1 && dst[2] == -1 && dst[4] == 4 && dst[9] == 9 &&
	      dst[10] == -1);
	/* partial unpack: 3 ints */
	memset(dst, -1, sizeof(dst));
	vd_dtype_unpack(vd_dtype_get(v), packed, 12, dst);
	CHECK(dst[0] == 0 && dst[1] == 1 && dst[4] == 4 && dst[5] == -1);
	/* two vectors: second at extent 40 bytes = 10 ints */
	CHECK(vd_dtype_pack(vd_dtype_get(v), src, 2, packed) == 48);
	CHECK(packed[6] == 10 && packed[11] == 19);
	/* indexed pack: typemap order (4,5) then (-2) relative to src+8 */
	CHECK(vd_dtype_pack(vd_dtype_get(ix), src + 8, 1, packed) == 12);
	CHECK(packed[0] == 12 && packed[1] == 13 && packed[2] == 6);
	/* freed slot reused */
	e = c;
	CHECK(MPI_Type_free(&c) == MPI_SUCCESS);
	CHECK(MPI_Type_contiguous(1, MPI_INT, &reuse) == MPI_SUCCESS && reuse == e);
	CHECK(reuse >= 64);
	MPI_Type_free(&reuse);
	MPI_Type_free(&v);
	MPI_Type_free(&vn);
	MPI_Type_free(&ix);
	MPI_Type_free(&vv);
}

static void test_ops(void)
{
	int a[4] = { 1, -2, 3, 4 }, b[4] = { 5, 6, -7, 8 };
	double d[2] = { 1.5, 2 }, dd[2] = { 2, 2 };
	struct vd_pair_di p[3] = { { 1, 5 }, { 2, 3 }, { 3, 1 } };
	struct vd_pair_di q[3] = { { 1, 2 }, { 2, 7 }, { 1, 0 } };
	struct vd_pair_si s[2] = { { 4, 9 }, { 4, 1 } }, sq[2] = { { 4, 3 }, { 4, 3 } };
	unsigned char by[2] = { 0xf0, 0x0f }, by2[2] = { 0xff, 0xff };
	_Bool bo[2] = { 1, 0 }, bo2[2] = { 1, 1 };
	signed char sc = 127, sc2 = 1;

	CHECK(vd_op_apply(MPI_SUM, a, b, 4, MPI_INT) == MPI_SUCCESS);
	CHECK(b[0] == 6 && b[1] == 4 && b[2] == -4 && b[3] == 12);
	CHECK(vd_op_apply(MPI_MAX, a, b, 4, MPI_INT) == 0 && b[2] == 3);
	CHECK(vd_op_apply(MPI_PROD, d, dd, 2, MPI_DOUBLE) == 0 && dd[0] == 3 && dd[1] == 4);
	CHECK(vd_op_apply(MPI_MAXLOC, p, q, 3, MPI_DOUBLE_INT) == 0);
	CHECK(q[0].v == 1 && q[0].i == 2 && q[1].i == 3 && q[2].v == 3 && q[2].i == 1);
	CHECK(vd_op_apply(MPI_MINLOC, s, sq, 2, MPI_SHORT_INT) == 0);
	CHECK(sq[0].i == 3 && sq[1].i == 1);
	CHECK(vd_op_apply(MPI_BXOR, by, by2, 2, MPI_BYTE) == 0 && by2[0] == 0x0f);
	CHECK(vd_op_apply(MPI_SUM, by, by2, 2, MPI_BYTE) == MPI_ERR_OP);
	CHECK(vd_op_apply(MPI_LXOR, bo, bo2, 2, MPI_C_BOOL) == 0 && !bo2[0] && bo2[1]);
	CHECK(vd_op_apply(MPI_LOR, bo, bo2, 2, MPI_CXX_BOOL) == 0 && bo2[0] && bo2[1]);
	CHECK(vd_op_apply(MPI_SUM, bo, bo2, 2, MPI_CXX_BOOL) == MPI_ERR_OP);
	CHECK(vd_op_apply(MPI_BAND, d, dd, 2, MPI_DOUBLE) == MPI_ERR_OP);
	CHECK(vd_op_apply(MPI_MAXLOC, a, b, 2, MPI_INT) == MPI_ERR_OP);
	CHECK(vd_op_apply(MPI_SUM, p, q, 1, MPI_DOUBLE_INT) == MPI_ERR_OP);
	CHECK(vd_op_apply(99, a, b, 1, MPI_INT) == MPI_ERR_OP);
	CHECK(vd_op_apply(MPI_OP_NULL, a, b, 1, MPI_INT) == MPI_ERR_OP);
	CHECK(vd_op_apply(MPI_SUM, &sc, &sc2, 1, MPI_SIGNED_CHAR) == 0 && sc2 == -128);
	{
		double _Complex x = 1 + 2 * _Complex_I, y = 3 - 1 * _Complex_I;

		CHECK(vd_op_apply(MPI_PROD, &x, &y, 1, MPI_C_DOUBLE_COMPLEX) == 0);
		CHECK(y == 5 + 5 * _Complex_I);
		CHECK(vd_op_apply(MPI_SUM, &x, &y, 1, MPI_CXX_DOUBLE_COMPLEX) == 0);
		CHECK(y == 6 + 7 * _Complex_I);
		CHECK(vd_op_apply(MPI_MAX, &x, &y, 1, MPI_CXX_DOUBLE_COMPLEX) == MPI_ERR_OP);
	}
	CHECK(vd_op_commutative(MPI_SUM) && !vd_op_commutative(77));
}

static void test_ops_derived(void)
{
	MPI_Datatype v, cs;
	int a[10], b[10];
	struct vd_pair_si s[3] = { { 1, 1 }, { 5, 2 }, { 3, 3 } };
	struct vd_pair_si t[3] = { { 2, 7 }, { 5, 1 }, { 0, 9 } };

	for (int i = 0; i < 10; i++)
		a[i] = i, b[i] = 100;
	/* vector: ints 0,1, 4,5 of each element (extent 6 ints) */
	MPI_Type_vector(2, 2, 4, MPI_INT, &v);
	MPI_Type_commit(&v);
	CHECK(vd_op_apply(MPI_SUM, a, b, 1, v) == MPI_SUCCESS);
	CHECK(b[0] == 100 && b[1] == 101 && b[2] == 100 && b[4] == 104 && b[5] == 105 &&
	      b[6] == 100);
	CHECK(vd_op_check(MPI_SUM, v) == MPI_SUCCESS);
	CHECK(vd_op_check(MPI_MAXLOC, v) == MPI_ERR_OP);
	/* contiguous of a padded pair type: merged blocks cross elements */
	MPI_Type_contiguous(3, MPI_SHORT_INT, &cs);
	CHECK(vd_op_apply(MPI_MAXLOC, s, t, 1, cs) == MPI_SUCCESS);
	CHECK(t[0].v == 2 && t[0].i == 7 && t[1].v == 5 && t[1].i == 1 && t[2].v == 3 &&
	      t[2].i == 3);
	MPI_Type_free(&v);
	MPI_Type_free(&cs);
}

static int user_calls;
static MPI_Datatype user_dt;
static void user_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	int *x = in, *y = inout;

	user_calls++;
	user_dt = *dt;
	for (int i = 0; i < *len; i++)
		y[i] = 2 * y[i] + x[i];
}

static void test_user_ops(void)
{
	MPI_Op op, op2, o;
	int a[2] = { 1, 2 }, b[2] = { 10, 20 };

	CHECK(MPI_Op_create(user_fn, 0, &op) == MPI_SUCCESS && op >= 32);
	CHECK(vd_op_valid(op) && !vd_op_commutative(op));
	CHECK(vd_op_apply(op, a, b, 2, MPI_INT) == 0 && b[0] == 21 && b[1] == 42);
	CHECK(user_calls == 1 && user_dt == MPI_INT);
	CHECK(MPI_Op_create(user_fn, 1, &op2) == MPI_SUCCESS && op2 == op + 1);
	CHECK(vd_op_commutative(op2));
	o = op;
	CHECK(MPI_Op_free(&op) == MPI_SUCCESS && op == MPI_OP_NULL);
	CHECK(!vd_op_valid(o));
	CHECK(MPI_Op_free(&o) == MPI_ERR_OP);
	o = MPI_SUM;
	CHECK(MPI_Op_free(&o) == MPI_ERR_OP);
	CHECK(MPI_Op_create(NULL, 1, &o) == MPI_ERR_ARG);
	CHECK(MPI_Op_create(user_fn, 1, &o) == MPI_SUCCESS && o == 32);
	MPI_Op_free(&o);
	MPI_Op_free(&op2);
}

/* Flattening merges adjacent blocks: a million adjacent elements are one
 * block, not a million; types with a reference to a freed type still work. */
static void test_merge(void)
{
	MPI_Datatype c3, v, h, s, r;
	const struct vd_dtype *t;

	CHECK(MPI_Type_vector(1 << 20, 1, 1, MPI_INT, &v) == MPI_SUCCESS);
	t = vd_dtype_get(v);
	CHECK(t->nblocks <= 1 && t->contig && t->size == 4 << 20);
	MPI_Type_free(&v);
	CHECK(MPI_Type_contiguous(3, MPI_INT, &c3) == MPI_SUCCESS);
	CHECK(MPI_Type_vector(1 << 20, 2, 2, c3, &v) == MPI_SUCCESS);
	t = vd_dtype_get(v);
	CHECK(t->nblocks == 1 && t->size == 24L << 20 && t->basic == MPI_INT);
	CHECK(MPI_Type_create_hvector(1 << 20, 1, 12, c3, &h) == MPI_SUCCESS);
	CHECK(vd_dtype_get(h)->nblocks == 1);
	/* A strided vector cannot merge: one block per element. */
	CHECK(MPI_Type_vector(1000, 1, 2, MPI_INT, &r) == MPI_SUCCESS);
	CHECK(vd_dtype_get(r)->nblocks == 1000);
	CHECK(MPI_Type_create_struct(2, (int[]){ 1, 2 }, (MPI_Aint[]){ 0, 12 },
				     (MPI_Datatype[]){ c3, MPI_INT }, &s) == MPI_SUCCESS);
	MPI_Type_free(&c3);
	CHECK(vd_dtype_get(s)->nblocks == 1 && vd_dtype_get(s)->size == 20);
	MPI_Type_free(&v);
	MPI_Type_free(&h);
	MPI_Type_free(&r);
	MPI_Type_free(&s);
}

/* The kernels are vector loops with a scalar tail: every length around
 * the vector widths, at odd offsets, against an element-by-element
 * reference, and with in and inout the same buffer (as MPI allows). */
#define LEN_MAX 70

static void test_op_lengths(void)
{
	int32_t xi[LEN_MAX + 3], yi[LEN_MAX + 3], ri[LEN_MAX + 3];
	float xf[LEN_MAX + 3], yf[LEN_MAX + 3], rf[LEN_MAX + 3];
	int bad = 0;

	for (int n = 0; n <= LEN_MAX; n++) {
		for (int off = 0; off < 3; off++) {
			for (int i = 0; i < LEN_MAX + 3; i++) {
				xi[i] = (int32_t)(i * 7919 - 40000);
				yi[i] = ri[i] = (int32_t)(i * 104729 + 3);
				xf[i] = (float)i * 0.5f - 9.0f;
				yf[i] = rf[i] = (float)(i % 11) * 3.0f;
			}
			for (int i = off; i < off + n; i++) {
				ri[i] = (int32_t)((uint32_t)xi[i] + (uint32_t)ri[i]);
				rf[i] = xf[i] > rf[i] ? xf[i] : rf[i];
			}
			bad += vd_op_apply(MPI_SUM, xi + off, yi + off, n, MPI_INT32_T) != 0;
			bad += vd_op_apply(MPI_MAX, xf + off, yf + off, n, MPI_FLOAT) != 0;
			bad += memcmp(yi, ri, sizeof(yi)) != 0 || memcmp(yf, rf, sizeof(yf)) != 0;
			/* the same buffer as in and inout: y = y + y */
			for (int i = off; i < off + n; i++)
				ri[i] = (int32_t)((uint32_t)ri[i] * 2u);
			bad += vd_op_apply(MPI_SUM, yi + off, yi + off, n, MPI_INT32_T) != 0;
			bad += memcmp(yi, ri, sizeof(yi)) != 0;
		}
	}
	CHECK(bad == 0);
}

int main(void)
{
	vd_dtype_init();
	test_builtins();
	test_errors();
	test_derived();
	test_merge();
	test_ops();
	test_op_lengths();
	test_ops_derived();
	test_user_ops();
	vd_dtype_finalize();
	if (failures) {
		fprintf(stderr, "unit_dtype_op: %d failures\n", failures);
		return 1;
	}
	printf("unit_dtype_op: ok\n");
	return 0;
}
