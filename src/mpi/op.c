/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: reduction operations.
 *
 * Op handles are ints: 1..14 the predefined ops (numbered in mpi.h), user
 * ops from 32 up.  A predefined op is a table of kernels indexed by the
 * builtin datatype; a NULL entry means the standard does not define the op
 * on that type (MPI-3.1 5.9.2 classes: C integer -- which here includes
 * MPI_CHAR as MPICH does --, floating point, logical, complex, byte; the
 * pair types for MAXLOC/MINLOC).  Every kernel computes
 * inout[i] = in[i] op inout[i].
 *
 * A derived datatype reduces as the run of builtin elements (its `basic`)
 * it is made of, in its own memory layout: the flattened blocks give, in
 * typemap order, where every basic element starts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "typeop.h"

#define OP_NBUILTIN 15                  /* MPI_OP_NULL .. MPI_NO_OP */
#define OP_FIRST_USER 32
#define DT_NBUILTIN 64

typedef void (*kernel_fn)(const void *in, void *inout, size_t n);

static kernel_fn kernels[OP_NBUILTIN][DT_NBUILTIN];
static bool kernels_ready;

struct user_op {
	MPI_User_function *fn;          /* NULL: free slot */
	bool commute;
};
static struct user_op *uops;
static int uops_cap;

/* ---- kernels ------------------------------------------------------------ */

/* The buffers are the same or apart (MPI forbids partial overlap), so
 * no element depends on an earlier one: ivdep lets the vectorised loop
 * (src/mpi/CMakeLists.txt: -O2 alone leaves these loops scalar) go
 * without a run-time overlap check and its scalar copy. */
#if defined(__GNUC__) && !defined(__clang__)
#define KERNEL_LOOP _Pragma("GCC ivdep")
#else
#define KERNEL_LOOP
#endif

#define KERNEL(name, T, expr)                                                  \
	static void name(const void *in_, void *inout_, size_t n)              \
	{                                                                      \
		const T *x = in_;                                              \
		T *y = inout_;                                                 \
		KERNEL_LOOP                                                    \
		for (size_t i = 0; i < n; i++)                                 \
			y[i] = (expr);                                         \
	}

#define MINMAX_KERNELS(tn, T)                                                  \
	KERNEL(max_##tn, T, x[i] > y[i] ? x[i] : y[i])                         \
	KERNEL(min_##tn, T, x[i] < y[i] ? x[i] : y[i])

/* Sum and product in T's own arithmetic (floating point, complex). */
#define ARITH_KERNELS(tn, T)                                                   \
	KERNEL(sum_##tn, T, x[i] + y[i])                                       \
	KERNEL(prod_##tn, T, x[i] * y[i])

/* Integer arithmetic wraps (through uintmax_t: signed overflow would be
 * undefined behaviour, and MPI programs do sum counters that wrap). */
#define INT_KERNELS(tn, T)                                                     \
	MINMAX_KERNELS(tn, T)                                                  \
	KERNEL(sum_##tn, T, (T)((uintmax_t)x[i] + (uintmax_t)y[i]))            \
	KERNEL(prod_##tn, T, (T)((uintmax_t)x[i] * (uintmax_t)y[i]))           \
	KERNEL(land_##tn, T, (T)(x[i] && y[i]))                                \
	KERNEL(lor_##tn, T, (T)(x[i] || y[i]))                                 \
	KERNEL(lxor_##tn, T, (T)(!x[i] != !y[i]))                              \
	KERNEL(band_##tn, T, (T)(x[i] & y[i]))                                 \
	KERNEL(bor_##tn, T, (T)(x[i] | y[i]))                                  \
	KERNEL(bxor_##tn, T, (T)(x[i] ^ y[i]))

#define FLOAT_KERNELS(tn, T) MINMAX_KERNELS(tn, T) ARITH_KERNELS(tn, T)

/* MAXLOC/MINLOC: the better value wins; equal values keep the smaller
 * index (MPI-3.1 5.9.4), which makes the op commutative. */
#define LOC_KERNEL(name, S, better)                                            \
	static void name(const void *in_, void *inout_, size_t n)              \
	{                                                                      \
		const S *x = in_;                                              \
		S *y = inout_;                                                 \
		for (size_t i = 0; i < n; i++) {                               \
			if (x[i].v better y[i].v) {                            \
				y[i].v = x[i].v;                               \
				y[i].i = x[i].i;                               \
			} else if (x[i].v == y[i].v && x[i].i < y[i].i) {      \
				y[i].i = x[i].i;                               \
			}                                                      \
		}                                                              \
	}

#define LOC_KERNELS(tn, S) LOC_KERNEL(maxloc_##tn, S, >) LOC_KERNEL(minloc_##tn, S, <)

INT_KERNELS(c, char)
INT_KERNELS(i8, int8_t)
INT_KERNELS(u8, uint8_t)
INT_KERNELS(i16, int16_t)
INT_KERNELS(u16, uint16_t)
INT_KERNELS(i32, int32_t)
INT_KERNELS(u32, uint32_t)
INT_KERNELS(i64, int64_t)
INT_KERNELS(u64, uint64_t)
FLOAT_KERNELS(f, float)
FLOAT_KERNELS(d, double)
FLOAT_KERNELS(ld, long double)
ARITH_KERNELS(cf, float _Complex)
ARITH_KERNELS(cd, double _Complex)
ARITH_KERNELS(cld, long double _Complex)
KERNEL(land_b, _Bool, x[i] && y[i])
KERNEL(lor_b, _Bool, x[i] || y[i])
KERNEL(lxor_b, _Bool, x[i] != y[i])
LOC_KERNELS(fi, struct vd_pair_fi)
LOC_KERNELS(di, struct vd_pair_di)
LOC_KERNELS(li, struct vd_pair_li)
LOC_KERNELS(ii, struct vd_pair_ii)
LOC_KERNELS(si, struct vd_pair_si)
LOC_KERNELS(ldi, struct vd_pair_ldi)
LOC_KERNELS(ff, struct vd_pair_ff)
LOC_KERNELS(dd, struct vd_pair_dd)

/* The kernels of one class of ops for datatype dt. */
#define SET_ARITH(dt, tn)                                                      \
	do {                                                                   \
		kernels[MPI_SUM][dt] = sum_##tn;                               \
		kernels[MPI_PROD][dt] = prod_##tn;                             \
	} while (0)

#define SET_FLOAT(dt, tn)                                                      \
	do {                                                                   \
		kernels[MPI_MAX][dt] = max_##tn;                               \
		kernels[MPI_MIN][dt] = min_##tn;                               \
		SET_ARITH(dt, tn);                                             \
	} while (0)

#define SET_LOGICAL(dt, tn)                                                    \
	do {                                                                   \
		kernels[MPI_LAND][dt] = land_##tn;                             \
		kernels[MPI_LOR][dt] = lor_##tn;                               \
		kernels[MPI_LXOR][dt] = lxor_##tn;                             \
	} while (0)

#define SET_BITWISE(dt, tn)                                                    \
	do {                                                                   \
		kernels[MPI_BAND][dt] = band_##tn;                             \
		kernels[MPI_BOR][dt] = bor_##tn;                               \
		kernels[MPI_BXOR][dt] = bxor_##tn;                             \
	} while (0)

#define SET_INT(dt, tn)                                                        \
	do {                                                                   \
		SET_FLOAT(dt, tn);                                             \
		SET_LOGICAL(dt, tn);                                           \
		SET_BITWISE(dt, tn);                                           \
	} while (0)

#define SET_LOC(dt, tn)                                                        \
	do {                                                                   \
		kernels[MPI_MAXLOC][dt] = maxloc_##tn;                         \
		kernels[MPI_MINLOC][dt] = minloc_##tn;                         \
	} while (0)

/* The C integer type dt is (signed when sgn): pick the fixed-width kernels
 * of its size (long is 4 or 8 bytes depending on the ABI). */
#define SET_INT_OF(dt, T, sgn)                                                 \
	do {                                                                   \
		switch (sizeof(T)) {                                           \
		case 1: if (sgn) SET_INT(dt, i8); else SET_INT(dt, u8); break; \
		case 2: if (sgn) SET_INT(dt, i16); else SET_INT(dt, u16); break; \
		case 4: if (sgn) SET_INT(dt, i32); else SET_INT(dt, u32); break; \
		default: if (sgn) SET_INT(dt, i64); else SET_INT(dt, u64); break; \
		}                                                              \
	} while (0)

static void kernels_init(void)
{
	SET_INT(MPI_CHAR, c);
	SET_INT_OF(MPI_SIGNED_CHAR, signed char, true);
	SET_INT_OF(MPI_UNSIGNED_CHAR, unsigned char, false);
	SET_INT_OF(MPI_SHORT, short, true);
	SET_INT_OF(MPI_UNSIGNED_SHORT, unsigned short, false);
	SET_INT_OF(MPI_INT, int, true);
	SET_INT_OF(MPI_UNSIGNED, unsigned, false);
	SET_INT_OF(MPI_LONG, long, true);
	SET_INT_OF(MPI_UNSIGNED_LONG, unsigned long, false);
	SET_INT_OF(MPI_LONG_LONG_INT, long long, true);
	SET_INT_OF(MPI_UNSIGNED_LONG_LONG, unsigned long long, false);
	SET_INT(MPI_INT8_T, i8);
	SET_INT(MPI_INT16_T, i16);
	SET_INT(MPI_INT32_T, i32);
	SET_INT(MPI_INT64_T, i64);
	SET_INT(MPI_UINT8_T, u8);
	SET_INT(MPI_UINT16_T, u16);
	SET_INT(MPI_UINT32_T, u32);
	SET_INT(MPI_UINT64_T, u64);
	SET_INT_OF(MPI_AINT, MPI_Aint, true);
	SET_INT_OF(MPI_OFFSET, MPI_Offset, true);
	SET_INT_OF(MPI_COUNT, MPI_Count, true);
	SET_FLOAT(MPI_FLOAT, f);
	SET_FLOAT(MPI_DOUBLE, d);
	SET_FLOAT(MPI_LONG_DOUBLE, ld);
	SET_ARITH(MPI_C_FLOAT_COMPLEX, cf);
	SET_ARITH(MPI_C_DOUBLE_COMPLEX, cd);
	SET_ARITH(MPI_C_LONG_DOUBLE_COMPLEX, cld);
	SET_LOGICAL(MPI_C_BOOL, b);
	SET_ARITH(MPI_CXX_FLOAT_COMPLEX, cf);
	SET_ARITH(MPI_CXX_DOUBLE_COMPLEX, cd);
	SET_ARITH(MPI_CXX_LONG_DOUBLE_COMPLEX, cld);
	SET_LOGICAL(MPI_CXX_BOOL, b);
	SET_BITWISE(MPI_BYTE, u8);      /* byte: the bitwise ops only */
	SET_LOC(MPI_FLOAT_INT, fi);
	SET_LOC(MPI_DOUBLE_INT, di);
	SET_LOC(MPI_LONG_INT, li);
	SET_LOC(MPI_2INT, ii);
	SET_LOC(MPI_SHORT_INT, si);
	SET_LOC(MPI_LONG_DOUBLE_INT, ldi);
	/* Fortran's types */
	SET_FLOAT(MPI_INTEGER, i32);
	SET_BITWISE(MPI_INTEGER, i32);
	SET_FLOAT(MPI_REAL, f);
	SET_FLOAT(MPI_DOUBLE_PRECISION, d);
	SET_ARITH(MPI_COMPLEX, cf);
	SET_ARITH(MPI_DOUBLE_COMPLEX, cd);
	SET_LOGICAL(MPI_LOGICAL, i32);
	SET_FLOAT(MPI_INTEGER1, i8);
	SET_BITWISE(MPI_INTEGER1, i8);
	SET_FLOAT(MPI_INTEGER2, i16);
	SET_BITWISE(MPI_INTEGER2, i16);
	SET_FLOAT(MPI_INTEGER4, i32);
	SET_BITWISE(MPI_INTEGER4, i32);
	SET_FLOAT(MPI_INTEGER8, i64);
	SET_BITWISE(MPI_INTEGER8, i64);
	SET_FLOAT(MPI_REAL4, f);
	SET_FLOAT(MPI_REAL8, d);
	SET_LOC(MPI_2INTEGER, ii);
	SET_LOC(MPI_2REAL, ff);
	SET_LOC(MPI_2DOUBLE_PRECISION, dd);
	kernels_ready = true;
}

/* ---- handles ------------------------------------------------------------ */

static struct user_op *uop_get(MPI_Op op)
{
	int i = op - OP_FIRST_USER;

	return op >= OP_FIRST_USER && i < uops_cap && uops[i].fn ? &uops[i] : NULL;
}

static bool op_builtin(MPI_Op op)
{
	return op >= MPI_MAX && op <= MPI_NO_OP;
}

bool vd_op_builtin(MPI_Op op)
{
	return op_builtin(op);
}

bool vd_op_valid(MPI_Op op)
{
	return op_builtin(op) || uop_get(op);
}

MPI_User_function *vd_op_user_fn(MPI_Op op)
{
	struct user_op *u = uop_get(op);

	return u ? u->fn : NULL;
}

bool vd_op_commutative(MPI_Op op)
{
	struct user_op *u = uop_get(op);

	return u ? u->commute : op_builtin(op);
}

/* REPLACE and NO_OP (one-sided ops) apply to any type; the others need a
 * kernel for the builtin the type is made of. */
int vd_op_check(MPI_Op op, MPI_Datatype dt)
{
	struct vd_dtype *t = vd_dtype_get(dt);

	if (!vd_op_valid(op))
		return MPI_ERR_OP;
	if (!t)
		return MPI_ERR_TYPE;
	if (uop_get(op) || op == MPI_REPLACE || op == MPI_NO_OP)
		return MPI_SUCCESS;
	if (!kernels_ready)
		kernels_init();
	if (t->basic <= 0 || t->basic >= DT_NBUILTIN || !kernels[op][t->basic])
		return MPI_ERR_OP;
	return MPI_SUCCESS;
}

/* ---- applying ------------------------------------------------------------ */

/* A derived type t made of builtin b: walk each element's blocks as one
 * byte stream; every multiple of b's size in it starts a b element (a
 * block may end or begin mid-element only for padded pair types, whose
 * parts then lie at their struct offsets from the element's start). */
static void apply_runs(kernel_fn k, const struct vd_dtype *b, const char *in, char *inout,
		       int count, const struct vd_dtype *t)
{
	struct vd_block one;
	const struct vd_block *bl;
	MPI_Aint pos = 0, bs = b->size;
	int nb;

	bl = vd_dtype_blocks(t, &one, &nb);
	for (int e = 0; e < count; e++) {
		MPI_Aint base = (MPI_Aint)e * t->extent;

		for (int j = 0; j < nb; j++) {
			MPI_Aint first = (pos + bs - 1) / bs * bs;  /* next element start */
			MPI_Aint end = pos + bl[j].len;
			MPI_Aint off = base + bl[j].off + (first - pos);

			if (b->contig) {        /* whole elements, back to back */
				if (first < end)
					k(in + off, inout + off, (size_t)((end - first + bs - 1) / bs));
			} else {
				for (; first < end; first += bs, off += bs)
					k(in + off, inout + off, 1);
			}
			pos = end;
		}
	}
}

static void apply_replace(const struct vd_dtype *t, const void *in, void *inout, int count)
{
	vd_dtype_copy(t, in, inout, count);
}

int vd_op_apply(MPI_Op op, const void *in, void *inout, int count, MPI_Datatype dt)
{
	struct user_op *u = uop_get(op);
	struct vd_dtype *t = vd_dtype_get(dt);
	int err = vd_op_check(op, dt);

	if (err)
		return err == MPI_ERR_TYPE ? MPI_ERR_TYPE : MPI_ERR_OP;
	if (count <= 0 || op == MPI_NO_OP)
		return MPI_SUCCESS;
	if (u) {
		/* The user function sees the user's datatype handle and the
		 * data in that type's layout. */
		int len = count;
		MPI_Datatype d = dt;

		u->fn((void *)in, inout, &len, &d);
		return MPI_SUCCESS;
	}
	if (op == MPI_REPLACE) {
		apply_replace(t, in, inout, count);
		return MPI_SUCCESS;
	}
	if (t->builtin)
		kernels[op][dt](in, inout, (size_t)count);
	else
		apply_runs(kernels[op][t->basic], vd_dtype_get(t->basic), in, inout, count, t);
	return MPI_SUCCESS;
}

/* ---- MPI_Op_create / MPI_Op_free ------------------------------------------------ */

#pragma weak MPI_Op_create = PMPI_Op_create
int PMPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Op_create";
	int i = 0;

	VD_MPI_CHECK_RUNNING(fn);
	if (!user_fn || !op)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	while (i < uops_cap && uops[i].fn)
		i++;
	if (i == uops_cap) {
		int cap = uops_cap ? 2 * uops_cap : 16;
		struct user_op *n;

		if (uops_cap > (1 << 24))
			return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, fn);
		n = realloc(uops, (size_t)cap * sizeof(*n));
		if (!n)
			return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, fn);
		memset(n + uops_cap, 0, (size_t)(cap - uops_cap) * sizeof(*n));
		uops = n;
		uops_cap = cap;
	}
	uops[i].fn = user_fn;
	uops[i].commute = commute != 0;
	*op = OP_FIRST_USER + i;
	return MPI_SUCCESS;
}

#pragma weak MPI_Op_free = PMPI_Op_free
int PMPI_Op_free(MPI_Op *op)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Op_free";
	struct user_op *u;

	VD_MPI_CHECK_RUNNING(fn);
	if (!op)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	if (!(u = uop_get(*op)))        /* invalid, or a predefined op */
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_OP, fn);
	u->fn = NULL;
	*op = MPI_OP_NULL;
	return MPI_SUCCESS;
}
