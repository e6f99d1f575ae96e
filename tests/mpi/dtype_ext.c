/* SPDX-License-Identifier: MIT */
/*
 * The Fortran 90 parameterised types (MPI_Type_create_f90_*) and the
 * external32 representation (MPI_Pack_external, MPI_Unpack_external,
 * MPI_Pack_external_size): the kinds chosen, the exact bytes of a few
 * values, round trips of every predefined type and of derived types,
 * rank 0's external bytes unpacked on every rank, and the error paths.
 */
#include "mpitest.h"

#include <stdint.h>

static void expect(int rc, int cls, const char *what)
{
	int got = -1;

	MPI_Error_class(rc, &got);
	CHECK(got == cls, "%s: class %d, expected %d", what, got, cls);
}

/* ---- f90 ------------------------------------------------------------------------------ */

static void expect_type(int rc, MPI_Datatype got, MPI_Datatype want, const char *what)
{
	CHECK(rc == MPI_SUCCESS && got == want, "%s: rc %d, type %d, expected %d", what, rc,
	      (int)got, (int)want);
}

static void test_f90(void)
{
	MPI_Datatype t = MPI_DATATYPE_NULL;
	static const struct { int r; MPI_Datatype want; } ints[] = {
		{ 1, MPI_INTEGER1 }, { 2, MPI_INTEGER1 }, { 3, MPI_INTEGER2 },
		{ 4, MPI_INTEGER2 }, { 5, MPI_INTEGER4 }, { 9, MPI_INTEGER4 },
		{ 10, MPI_INTEGER8 }, { 18, MPI_INTEGER8 },
	};
	static const struct { int p, r; MPI_Datatype real, cplx; } reals[] = {
		{ 6, MPI_UNDEFINED, MPI_REAL4, MPI_COMPLEX },
		{ MPI_UNDEFINED, 37, MPI_REAL4, MPI_COMPLEX },
		{ 3, 30, MPI_REAL4, MPI_COMPLEX },
		{ 7, MPI_UNDEFINED, MPI_REAL8, MPI_DOUBLE_COMPLEX },
		{ MPI_UNDEFINED, 38, MPI_REAL8, MPI_DOUBLE_COMPLEX },
		{ 15, 307, MPI_REAL8, MPI_DOUBLE_COMPLEX },
		{ 2, 300, MPI_REAL8, MPI_DOUBLE_COMPLEX },
	};

	mt_phase = "f90";
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		int rc = MPI_Type_create_f90_integer(ints[i].r, &t);

		expect_type(rc, t, ints[i].want, "f90_integer");
	}
	for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++) {
		int rc = MPI_Type_create_f90_real(reals[i].p, reals[i].r, &t);

		expect_type(rc, t, reals[i].real, "f90_real");
		rc = MPI_Type_create_f90_complex(reals[i].p, reals[i].r, &t);
		expect_type(rc, t, reals[i].cplx, "f90_complex");
	}
	/* The type it gives works in communication. */
	int64_t mine = (int64_t)mt_rank << 33, sum = 0, want = 0;
	MPI_OK(MPI_Type_create_f90_integer(15, &t));
	MPI_OK(MPI_Allreduce(&mine, &sum, 1, t, MPI_SUM, MPI_COMM_WORLD));
	for (int r = 0; r < mt_size; r++)
		want += (int64_t)r << 33;
	CHECK(sum == want, "Allreduce over f90_integer(15): %lld", (long long)sum);

	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	expect(MPI_Type_create_f90_integer(19, &t), MPI_ERR_ARG, "f90_integer(19)");
	expect(MPI_Type_create_f90_integer(MPI_UNDEFINED, &t), MPI_ERR_ARG, "f90_integer(UNDEF)");
	expect(MPI_Type_create_f90_integer(4, NULL), MPI_ERR_ARG, "f90_integer NULL");
	expect(MPI_Type_create_f90_real(16, MPI_UNDEFINED, &t), MPI_ERR_ARG, "f90_real(16)");
	expect(MPI_Type_create_f90_real(MPI_UNDEFINED, 308, &t), MPI_ERR_ARG, "f90_real(r 308)");
	expect(MPI_Type_create_f90_real(MPI_UNDEFINED, MPI_UNDEFINED, &t), MPI_ERR_ARG,
	       "f90_real(UNDEF, UNDEF)");
	expect(MPI_Type_create_f90_complex(16, 10, &t), MPI_ERR_ARG, "f90_complex(16, 10)");
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* ---- external32: exact bytes ------------------------------------------------------------- */

/* Pack count of dt from buf; compare with the n bytes want; unpack back
 * and compare the native bytes of `cmp` length (0: skip). */
static void exact(const void *buf, int count, MPI_Datatype dt, const unsigned char *want,
		  int n, const char *what)
{
	unsigned char out[64], back[64];
	MPI_Aint pos = 0, size = -1, upos = 0;

	memset(out, 0xee, sizeof(out));
	MPI_OK(MPI_Pack_external_size("external32", count, dt, &size));
	CHECK(size == n, "%s: external size %ld, expected %d", what, (long)size, n);
	MPI_OK(MPI_Pack_external("external32", buf, count, dt, out, sizeof(out), &pos));
	CHECK(pos == n, "%s: position %ld, expected %d", what, (long)pos, n);
	CHECK(!memcmp(out, want, (size_t)n), "%s: bytes differ (first %02x %02x %02x %02x)",
	      what, out[0], out[1], out[2], out[3]);
	CHECK(out[n] == 0xee, "%s: wrote past its bytes", what);
	memset(back, 0, sizeof(back));
	MPI_OK(MPI_Unpack_external("external32", out, pos, &upos, back, count, dt));
	CHECK(upos == n, "%s: unpack position %ld", what, (long)upos);
}

static void test_exact(void)
{
	mt_phase = "external32 bytes";
	int i32 = 0x01020304;
	static const unsigned char w_i32[] = { 1, 2, 3, 4 };
	exact(&i32, 1, MPI_INT, w_i32, 4, "int");
	short s2[2] = { -2, 0x1234 };
	static const unsigned char w_s2[] = { 0xff, 0xfe, 0x12, 0x34 };
	exact(s2, 2, MPI_SHORT, w_s2, 4, "short[2]");
	double d = 1.0;
	static const unsigned char w_d[] = { 0x3f, 0xf0, 0, 0, 0, 0, 0, 0 };
	exact(&d, 1, MPI_DOUBLE, w_d, 8, "double 1.0");
	float f = 1.5f;
	static const unsigned char w_f[] = { 0x3f, 0xc0, 0, 0 };
	exact(&f, 1, MPI_FLOAT, w_f, 4, "float 1.5");
	long l = -1L;
	static const unsigned char w_l[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	exact(&l, 1, MPI_LONG, w_l, 8, "long -1");
	long double ld = -2.5L;
	static const unsigned char w_ld[16] = { 0xc0, 0x00, 0x40 };
	exact(&ld, 1, MPI_LONG_DOUBLE, w_ld, 16, "long double -2.5");
	struct { double v; int i; } di = { 1.0, 7 };
	static const unsigned char w_di[] = { 0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7 };
	exact(&di, 1, MPI_DOUBLE_INT, w_di, 12, "double_int");
	struct { short v; int i; } si = { -1, 3 };
	static const unsigned char w_si[] = { 0xff, 0xff, 0, 0, 0, 3 };
	exact(&si, 1, MPI_SHORT_INT, w_si, 6, "short_int");
	float cf[2] = { 1.0f, -1.0f };
	static const unsigned char w_cf[] = { 0x3f, 0x80, 0, 0, 0xbf, 0x80, 0, 0 };
	exact(cf, 1, MPI_C_FLOAT_COMPLEX, w_cf, 8, "float complex");
}

/* ---- external32: round trips -------------------------------------------------------------- */

/* 8 elements of size bytes, each made of items of `item` bytes. */
static void roundtrip_bytes(MPI_Datatype dt, int size, int item, const char *what)
{
	unsigned char in[8 * 32], ext[8 * 32], back[8 * 32];
	MPI_Aint pos = 0, upos = 0;

	mt_fill(in, sizeof(in), mt_rank, size);
	memset(back, 0, sizeof(back));
	MPI_OK(MPI_Pack_external("external32", in, 8, dt, ext, sizeof(ext), &pos));
	CHECK(pos == 8 * size, "%s: %ld external bytes", what, (long)pos);
	CHECK(ext[0] == in[item - 1], "%s: first byte not the native last of its item", what);
	MPI_OK(MPI_Unpack_external("external32", ext, pos, &upos, back, 8, dt));
	CHECK(!memcmp(in, back, (size_t)(8 * size)), "%s: round trip differs", what);
}

#define RT(dt, T) roundtrip_bytes(dt, (int)sizeof(T), (int)sizeof(T), #dt)
#define RT2(dt, T) roundtrip_bytes(dt, (int)sizeof(T), (int)sizeof(T) / 2, #dt)

static void test_roundtrip_builtins(void)
{
	mt_phase = "external32 builtins";
	RT(MPI_CHAR, char); RT(MPI_SIGNED_CHAR, char); RT(MPI_UNSIGNED_CHAR, char);
	RT(MPI_BYTE, char); RT(MPI_PACKED, char); RT(MPI_WCHAR, wchar_t);
	RT(MPI_SHORT, short); RT(MPI_UNSIGNED_SHORT, short); RT(MPI_INT, int);
	RT(MPI_UNSIGNED, int); RT(MPI_LONG, long); RT(MPI_UNSIGNED_LONG, long);
	RT(MPI_LONG_LONG_INT, long long); RT(MPI_UNSIGNED_LONG_LONG, long long);
	RT(MPI_FLOAT, float); RT(MPI_DOUBLE, double); RT(MPI_C_BOOL, _Bool);
	RT(MPI_INT8_T, int8_t); RT(MPI_INT16_T, int16_t); RT(MPI_INT32_T, int32_t);
	RT(MPI_INT64_T, int64_t); RT(MPI_UINT8_T, uint8_t); RT(MPI_UINT16_T, uint16_t);
	RT(MPI_UINT32_T, uint32_t); RT(MPI_UINT64_T, uint64_t); RT(MPI_AINT, MPI_Aint);
	RT(MPI_OFFSET, MPI_Offset); RT(MPI_COUNT, MPI_Count);
	RT2(MPI_C_FLOAT_COMPLEX, float _Complex); RT2(MPI_C_DOUBLE_COMPLEX, double _Complex);
	RT(MPI_CXX_BOOL, _Bool); RT2(MPI_CXX_FLOAT_COMPLEX, float _Complex);
	RT2(MPI_CXX_DOUBLE_COMPLEX, double _Complex);
	RT(MPI_CHARACTER, char); RT(MPI_INTEGER, int32_t); RT(MPI_REAL, float);
	RT(MPI_DOUBLE_PRECISION, double); RT2(MPI_COMPLEX, float _Complex);
	RT2(MPI_DOUBLE_COMPLEX, double _Complex); RT(MPI_LOGICAL, int32_t);
	RT(MPI_INTEGER1, int8_t); RT(MPI_INTEGER2, int16_t); RT(MPI_INTEGER4, int32_t);
	RT(MPI_INTEGER8, int64_t); RT(MPI_REAL4, float); RT(MPI_REAL8, double);
	RT2(MPI_2INT, int[2]); RT2(MPI_2INTEGER, int[2]); RT2(MPI_2REAL, float[2]);
	RT2(MPI_2DOUBLE_PRECISION, double[2]); RT2(MPI_FLOAT_INT, float[2]);

	/* long double: compared as values (its padding bytes are not data) */
	long double ld[6] = { 1.0L / 3, -1e300L * 1e300L, 0.0L, -0.0L, 1e-4940L, 12345.678L };
	long double ldb[6] = { 0 };
	unsigned char ext[6 * 16];
	MPI_Aint pos = 0, upos = 0;
	MPI_OK(MPI_Pack_external("external32", ld, 6, MPI_LONG_DOUBLE, ext, sizeof(ext), &pos));
	MPI_OK(MPI_Unpack_external("external32", ext, pos, &upos, ldb, 6, MPI_LONG_DOUBLE));
	for (int i = 0; i < 6; i++)
		CHECK(ldb[i] == ld[i] || (ld[i] != ld[i] && ldb[i] != ldb[i]),
		      "long double %d: %Lg back as %Lg", i, ld[i], ldb[i]);
}

/* A struct {char; double; int} (padded in memory, 13 external bytes)
 * and a vector of it. */
struct rec {
	char c;
	double d;
	int i;
};

static MPI_Datatype rec_type(void)
{
	int lens[3] = { 1, 1, 1 };
	MPI_Aint disp[3] = { offsetof(struct rec, c), offsetof(struct rec, d),
			     offsetof(struct rec, i) };
	MPI_Datatype types[3] = { MPI_CHAR, MPI_DOUBLE, MPI_INT }, t;

	MPI_OK(MPI_Type_create_struct(3, lens, disp, types, &t));
	MPI_OK(MPI_Type_commit(&t));
	return t;
}

static void test_derived(void)
{
	MPI_Datatype rt = rec_type(), every_other;
	struct rec in[4], out[4];
	unsigned char ext[4 * 13 + 8];
	MPI_Aint pos = 0, upos = 0, size = 0;

	mt_phase = "external32 derived";
	for (int k = 0; k < 4; k++)
		in[k] = (struct rec){ (char)('a' + k), 0.5 * k - 3, 1000 * mt_rank + k };
	MPI_OK(MPI_Pack_external_size("external32", 4, rt, &size));
	CHECK(size == 4 * 13, "struct: external size %ld", (long)size);
	MPI_OK(MPI_Pack_external("external32", in, 4, rt, ext, sizeof(ext), &pos));
	CHECK(pos == 52 && ext[0] == 'a' && ext[1] == 0xc0 && ext[9] == 0 &&
	      ext[12] == (unsigned char)(1000 * mt_rank), "struct: external bytes wrong");
	memset(out, 0, sizeof(out));
	MPI_OK(MPI_Unpack_external("external32", ext, pos, &upos, out, 4, rt));
	for (int k = 0; k < 4; k++)
		CHECK(out[k].c == in[k].c && out[k].d == in[k].d && out[k].i == in[k].i,
		      "struct %d: round trip differs", k);

	/* a vector of the struct type, every other one: positions chain */
	MPI_OK(MPI_Type_vector(2, 1, 2, rt, &every_other));
	MPI_OK(MPI_Type_commit(&every_other));
	pos = upos = 0;
	MPI_OK(MPI_Pack_external("external32", in, 1, every_other, ext, sizeof(ext), &pos));
	MPI_OK(MPI_Pack_external("external32", &in[1].d, 1, MPI_DOUBLE, ext, sizeof(ext), &pos));
	CHECK(pos == 2 * 13 + 8, "vector then double: position %ld", (long)pos);
	memset(out, 0, sizeof(out));
	double dback = 0;
	MPI_OK(MPI_Unpack_external("external32", ext, pos, &upos, out, 1, every_other));
	MPI_OK(MPI_Unpack_external("external32", ext, pos, &upos, &dback, 1, MPI_DOUBLE));
	CHECK(out[0].i == in[0].i && out[2].i == in[2].i && out[1].i == 0 &&
	      dback == in[1].d, "vector: round trip differs");
	MPI_Type_free(&every_other);
	MPI_Type_free(&rt);
}

/* Rank 0's external bytes, sent as MPI_BYTE, unpacked everywhere. */
static void test_across(void)
{
	double v[3] = { 0.25, -7.0, 1e100 };
	int n[2] = { 0x7fffffff, -5 };
	unsigned char ext[40];
	MPI_Aint pos = 0;

	mt_phase = "external32 across ranks";
	if (mt_rank == 0) {
		MPI_OK(MPI_Pack_external("external32", v, 3, MPI_DOUBLE, ext, sizeof(ext), &pos));
		MPI_OK(MPI_Pack_external("external32", n, 2, MPI_INT, ext, sizeof(ext), &pos));
	}
	MPI_OK(MPI_Bcast(ext, 32, MPI_BYTE, 0, MPI_COMM_WORLD));
	double vb[3] = { 0 };
	int nb[2] = { 0 };
	pos = 0;
	MPI_OK(MPI_Unpack_external("external32", ext, 32, &pos, vb, 3, MPI_DOUBLE));
	MPI_OK(MPI_Unpack_external("external32", ext, 32, &pos, nb, 2, MPI_INT));
	CHECK(!memcmp(v, vb, sizeof(v)) && !memcmp(n, nb, sizeof(n)) && pos == 32,
	      "values from rank 0 differ");
}

static void test_ext_errors(void)
{
	int x[4] = { 1, 2, 3, 4 };
	unsigned char ext[16];
	MPI_Aint pos = 0, size;
	MPI_Datatype unc;

	mt_phase = "external32 errors";
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	expect(MPI_Pack_external("native", x, 1, MPI_INT, ext, 16, &pos), MPI_ERR_ARG,
	       "datarep native");
	expect(MPI_Pack_external_size("internal", 1, MPI_INT, &size), MPI_ERR_ARG,
	       "size: datarep internal");
	expect(MPI_Unpack_external(NULL, ext, 16, &pos, x, 1, MPI_INT), MPI_ERR_ARG,
	       "datarep NULL");
	expect(MPI_Pack_external("external32", x, 4, MPI_INT, ext, 8, &pos), MPI_ERR_TRUNCATE,
	       "outsize too small");
	CHECK(pos == 0, "a failed pack moved the position");
	pos = 12;
	expect(MPI_Unpack_external("external32", ext, 16, &pos, x, 2, MPI_INT), MPI_ERR_TRUNCATE,
	       "insize too small");
	pos = 0;
	expect(MPI_Pack_external("external32", x, -1, MPI_INT, ext, 16, &pos), MPI_ERR_COUNT,
	       "negative count");
	expect(MPI_Pack_external("external32", x, 1, MPI_DATATYPE_NULL, ext, 16, &pos),
	       MPI_ERR_TYPE, "null type");
	MPI_OK(MPI_Type_contiguous(2, MPI_INT, &unc));
	expect(MPI_Pack_external("external32", x, 1, unc, ext, 16, &pos), MPI_ERR_TYPE,
	       "uncommitted type");
	MPI_Type_free(&unc);
	expect(MPI_Pack_external("external32", x, 1, MPI_INT, ext, 16, NULL), MPI_ERR_ARG,
	       "NULL position");
	expect(MPI_Pack_external_size("external32", 1, MPI_INT, NULL), MPI_ERR_ARG, "NULL size");
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
	mt_init(&argc, &argv, 60);
	test_f90();
	test_exact();
	test_roundtrip_builtins();
	test_derived();
	test_across();
	test_ext_errors();
	return mt_finish("dtype_ext");
}
