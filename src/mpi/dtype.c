/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: datatypes.
 *
 * Handles are ints: 1..63 the predefined types (numbered in mpi.h), user
 * types from 64 up in a growable table whose freed slots are reused.
 * Every type is flattened at construction into the (offset, length) byte
 * blocks of one element, in typemap order, adjacent blocks merged -- so
 * packing is a loop of memcpy and a contiguous type is one block.  No
 * derived type keeps a reference to the type it was built from.
 *
 * Types are reference counted: MPI_Type_free drops the handle at once,
 * but a request that retained the type (vd_dtype_retain) keeps the object
 * until it releases it -- the standard lets pending communication finish.
 */
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "typeop.h"

#define DT_NBUILTIN 64                  /* handles below this are predefined */

/* Our object: the contract's struct plus the true bounds (first and last
 * byte touched by one element), which scratch buffers need. */
struct dt_obj {
	struct vd_dtype pub;            /* first: vd_dtype * <-> dt_obj * */
	MPI_Aint tlb, tub;
};

static struct dt_obj builtins[DT_NBUILTIN];
static struct vd_block builtin_blocks[DT_NBUILTIN][2];
static struct dt_obj **users;           /* handle - DT_NBUILTIN */
static int users_cap;
static int users_hint;                  /* no free slot below this */
static bool dt_ready;

static struct dt_obj *obj_of(struct vd_dtype *t)
{
	return (struct dt_obj *)t;
}

/* ---- predefined types --------------------------------------------------- */

static void builtin_set(MPI_Datatype h, MPI_Aint size, MPI_Aint extent,
			const struct vd_block *b, int nb)
{
	struct dt_obj *o = &builtins[h];
	struct vd_dtype *t = &o->pub;

	t->refs = 1;
	t->builtin = t->committed = true;
	t->size = size;
	t->lb = 0;
	t->extent = extent;
	t->basic = h;
	t->basic_count = 1;
	t->contig = nb == 1 && b[0].off == 0 && b[0].len == extent;
	/* The contract: builtins that are one block carry no block array;
	 * the padded pair types (MPI_SHORT_INT ...) need two. */
	t->nblocks = nb;
	t->blocks = NULL;
	if (!t->contig) {
		memcpy(builtin_blocks[h], b, (size_t)nb * sizeof(*b));
		t->blocks = builtin_blocks[h];
	}
	o->tlb = b[0].off;
	o->tub = b[nb - 1].off + b[nb - 1].len;
}

static void builtin_scalar(MPI_Datatype h, MPI_Aint size)
{
	struct vd_block b = { 0, size };

	builtin_set(h, size, size, &b, 1);
}

/* A pair {value; int} as the C struct lays it out: value at 0, the int
 * after padding, the struct padded to its alignment. */
static void builtin_pair(MPI_Datatype h, MPI_Aint vsize, MPI_Aint ioff, MPI_Aint extent)
{
	struct vd_block b[2] = { { 0, vsize }, { ioff, (MPI_Aint)sizeof(int) } };
	int nb = 2;

	if (ioff == vsize) {            /* no padding between: one block */
		b[0].len += b[1].len;
		nb = 1;
	}
	builtin_set(h, vsize + (MPI_Aint)sizeof(int), extent, b, nb);
}

#define PAIR(h, S) \
	builtin_pair(h, (MPI_Aint)sizeof(((S *)0)->v), (MPI_Aint)offsetof(S, i), \
		     (MPI_Aint)sizeof(S))

static void builtins_init(void)
{
	static const struct { MPI_Datatype h; MPI_Aint size; } scalars[] = {
		{ MPI_CHAR, sizeof(char) },
		{ MPI_SIGNED_CHAR, sizeof(signed char) },
		{ MPI_UNSIGNED_CHAR, sizeof(unsigned char) },
		{ MPI_BYTE, 1 },
		{ MPI_WCHAR, sizeof(wchar_t) },
		{ MPI_SHORT, sizeof(short) },
		{ MPI_UNSIGNED_SHORT, sizeof(unsigned short) },
		{ MPI_INT, sizeof(int) },
		{ MPI_UNSIGNED, sizeof(unsigned) },
		{ MPI_LONG, sizeof(long) },
		{ MPI_UNSIGNED_LONG, sizeof(unsigned long) },
		{ MPI_LONG_LONG_INT, sizeof(long long) },
		{ MPI_UNSIGNED_LONG_LONG, sizeof(unsigned long long) },
		{ MPI_FLOAT, sizeof(float) },
		{ MPI_DOUBLE, sizeof(double) },
		{ MPI_LONG_DOUBLE, sizeof(long double) },
		{ MPI_C_BOOL, sizeof(_Bool) },
		{ MPI_INT8_T, 1 }, { MPI_INT16_T, 2 },
		{ MPI_INT32_T, 4 }, { MPI_INT64_T, 8 },
		{ MPI_UINT8_T, 1 }, { MPI_UINT16_T, 2 },
		{ MPI_UINT32_T, 4 }, { MPI_UINT64_T, 8 },
		{ MPI_AINT, sizeof(MPI_Aint) },
		{ MPI_OFFSET, sizeof(MPI_Offset) },
		{ MPI_COUNT, sizeof(MPI_Count) },
		{ MPI_PACKED, 1 },
		{ MPI_C_FLOAT_COMPLEX, sizeof(float _Complex) },
		{ MPI_C_DOUBLE_COMPLEX, sizeof(double _Complex) },
		{ MPI_C_LONG_DOUBLE_COMPLEX, sizeof(long double _Complex) },
	};

	for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++)
		builtin_scalar(scalars[i].h, scalars[i].size);
	PAIR(MPI_FLOAT_INT, struct vd_pair_fi);
	PAIR(MPI_DOUBLE_INT, struct vd_pair_di);
	PAIR(MPI_LONG_INT, struct vd_pair_li);
	PAIR(MPI_2INT, struct vd_pair_ii);
	PAIR(MPI_SHORT_INT, struct vd_pair_si);
	PAIR(MPI_LONG_DOUBLE_INT, struct vd_pair_ldi);
}

static void dt_ensure(void)
{
	if (!dt_ready) {
		builtins_init();
		dt_ready = true;
	}
}

int vd_dtype_init(void)
{
	dt_ensure();
	return 0;
}

static void dt_destroy(struct dt_obj *o)
{
	free(o->pub.blocks);
	free(o);
}

void vd_dtype_finalize(void)
{
	/* After MPI_Finalize no request can hold a type: free them all. */
	for (int i = 0; i < users_cap; i++)
		if (users[i])
			dt_destroy(users[i]);
	free(users);
	users = NULL;
	users_cap = users_hint = 0;
}

/* ---- handles ------------------------------------------------------------ */

struct vd_dtype *vd_dtype_get(MPI_Datatype dt)
{
	dt_ensure();
	if (dt > 0 && dt < DT_NBUILTIN)
		return builtins[dt].pub.refs ? &builtins[dt].pub : NULL;
	if (dt >= DT_NBUILTIN && dt - DT_NBUILTIN < users_cap && users[dt - DT_NBUILTIN])
		return &users[dt - DT_NBUILTIN]->pub;
	return NULL;
}

struct vd_dtype *vd_dtype_comm(MPI_Datatype dt)
{
	struct vd_dtype *t = vd_dtype_get(dt);

	return t && t->committed ? t : NULL;
}

void vd_dtype_retain(struct vd_dtype *t)
{
	if (!t->builtin)
		t->refs++;
}

void vd_dtype_release(struct vd_dtype *t)
{
	if (!t->builtin && --t->refs == 0)
		dt_destroy(obj_of(t));
}

/* A handle for o: the lowest free slot, growing the table if needed. */
static int handle_new(struct dt_obj *o, MPI_Datatype *h)
{
	int i = users_hint;

	while (i < users_cap && users[i])
		i++;
	if (i == users_cap) {
		int cap = users_cap ? 2 * users_cap : 64;
		struct dt_obj **n;

		if (users_cap > INT_MAX / 2 - DT_NBUILTIN)
			return MPI_ERR_NO_MEM;
		n = realloc(users, (size_t)cap * sizeof(*n));
		if (!n)
			return MPI_ERR_NO_MEM;
		memset(n + users_cap, 0, (size_t)(cap - users_cap) * sizeof(*n));
		users = n;
		users_cap = cap;
	}
	users[i] = o;
	users_hint = i + 1;
	*h = DT_NBUILTIN + i;
	return MPI_SUCCESS;
}

static void handle_drop(MPI_Datatype h)
{
	users[h - DT_NBUILTIN] = NULL;
	if (h - DT_NBUILTIN < users_hint)
		users_hint = h - DT_NBUILTIN;
}

/* ---- layout helpers ----------------------------------------------------- */

const struct vd_block *vd_dtype_blocks(const struct vd_dtype *t, struct vd_block *one,
				       int *n)
{
	if (t->blocks) {
		*n = t->nblocks;
		return t->blocks;
	}
	one->off = 0;
	one->len = t->size;
	*n = t->size ? 1 : 0;
	return one;
}

size_t vd_dtype_pack(const struct vd_dtype *t, const void *src, int count, void *dst)
{
	struct vd_block one;
	const struct vd_block *b;
	const char *s = src;
	char *d = dst;
	int nb;

	if (count <= 0 || t->size == 0)
		return 0;
	if (t->contig) {
		memcpy(dst, src, (size_t)count * (size_t)t->size);
		return (size_t)count * (size_t)t->size;
	}
	b = vd_dtype_blocks(t, &one, &nb);
	for (int i = 0; i < count; i++, s += t->extent)
		for (int k = 0; k < nb; k++) {
			memcpy(d, s + b[k].off, (size_t)b[k].len);
			d += b[k].len;
		}
	return (size_t)(d - (char *)dst);
}

/* Any byte count works: a truncated last element fills its first blocks
 * (MPI leaves the rest undefined; we leave it untouched). */
void vd_dtype_unpack(const struct vd_dtype *t, const void *src, size_t bytes, void *dst)
{
	struct vd_block one;
	const struct vd_block *b;
	const char *s = src;
	char *d = dst;
	int nb;

	if (bytes == 0 || t->size == 0)
		return;
	if (t->contig) {
		memcpy(dst, src, bytes);
		return;
	}
	b = vd_dtype_blocks(t, &one, &nb);
	for (; bytes > 0; d += t->extent)
		for (int k = 0; k < nb && bytes > 0; k++) {
			size_t n = (size_t)b[k].len < bytes ? (size_t)b[k].len : bytes;

			memcpy(d + b[k].off, s, n);
			s += n;
			bytes -= n;
		}
}

void vd_dtype_copy(const struct vd_dtype *t, const void *src, void *dst, int count)
{
	struct vd_block one;
	const struct vd_block *b;
	const char *s = src;
	char *d = dst;
	int nb;

	if (count <= 0 || src == dst)
		return;
	if (t->contig) {
		memcpy(dst, src, (size_t)count * (size_t)t->size);
		return;
	}
	b = vd_dtype_blocks(t, &one, &nb);
	for (int i = 0; i < count; i++, s += t->extent, d += t->extent)
		for (int k = 0; k < nb; k++)
			memcpy(d + b[k].off, s + b[k].off, (size_t)b[k].len);
}

void vd_dtype_span(const struct vd_dtype *t, int count, MPI_Aint *lo, MPI_Aint *hi)
{
	const struct dt_obj *o = (const struct dt_obj *)t;

	if (count <= 0 || t->size == 0) {
		*lo = *hi = 0;
		return;
	}
	/* extent >= 0 always (ub >= lb by construction), so element 0 holds
	 * the lowest byte and element count-1 the highest. */
	*lo = o->tlb;
	*hi = (MPI_Aint)(count - 1) * t->extent + o->tub;
}

void *vd_dtype_scratch(const struct vd_dtype *t, int count, void **mem)
{
	MPI_Aint lo, hi;

	vd_dtype_span(t, count, &lo, &hi);
	*mem = malloc(hi > lo ? (size_t)(hi - lo) : 1);
	if (!*mem)
		return NULL;
	return (char *)*mem - lo;
}

/* ---- construction ---------------------------------------------------------- */

struct builder {
	struct vd_block *b;
	int n, cap;
	bool any;                       /* bounds seen */
	MPI_Aint lb, ub, size, elems;   /* elems: oldtype elements placed */
};

static int bld_add(struct builder *B, MPI_Aint off, MPI_Aint len)
{
	if (len == 0)
		return MPI_SUCCESS;
	if (B->n && B->b[B->n - 1].off + B->b[B->n - 1].len == off) {
		B->b[B->n - 1].len += len;      /* adjacent: merge */
		return MPI_SUCCESS;
	}
	if (B->n == B->cap) {
		int cap = B->cap ? 2 * B->cap : 8;
		struct vd_block *n;

		if (B->cap > INT_MAX / 2)
			return MPI_ERR_NO_MEM;
		n = realloc(B->b, (size_t)cap * sizeof(*n));
		if (!n)
			return MPI_ERR_NO_MEM;
		B->b = n;
		B->cap = cap;
	}
	B->b[B->n].off = off;
	B->b[B->n].len = len;
	B->n++;
	return MPI_SUCCESS;
}

/* Place cnt consecutive elements of old starting at byte disp. */
static int bld_place(struct builder *B, const struct vd_dtype *old, MPI_Aint disp,
		     MPI_Aint cnt)
{
	struct vd_block one;
	const struct vd_block *b;
	MPI_Aint lo, hi, bytes;
	int nb, err = MPI_SUCCESS;

	if (cnt == 0)
		return MPI_SUCCESS;     /* an empty block has no bounds either */
	if (__builtin_mul_overflow(cnt - 1, old->extent, &hi) ||
	    __builtin_add_overflow(hi, disp + old->lb + old->extent, &hi) ||
	    __builtin_mul_overflow(cnt, old->size, &bytes) ||
	    __builtin_add_overflow(B->size, bytes, &B->size) ||
	    __builtin_add_overflow(B->elems, cnt, &B->elems))
		return MPI_ERR_ARG;
	lo = disp + old->lb;
	B->lb = B->any && B->lb < lo ? B->lb : lo;
	B->ub = B->any && B->ub > hi ? B->ub : hi;
	B->any = true;
	if (old->contig)                /* cnt elements back to back */
		return bld_add(B, disp, bytes);
	b = vd_dtype_blocks(old, &one, &nb);
	for (MPI_Aint i = 0; i < cnt && !err; i++)
		for (int k = 0; k < nb && !err; k++)
			err = bld_add(B, disp + i * old->extent + b[k].off, b[k].len);
	return err;
}

/* Turn the builder into a new (uncommitted) type and its handle. */
static int bld_finish(struct builder *B, const struct vd_dtype *old, MPI_Datatype *h)
{
	struct dt_obj *o = calloc(1, sizeof(*o));
	struct vd_dtype *t;
	int err;

	if (!o) {
		free(B->b);
		return MPI_ERR_NO_MEM;
	}
	t = &o->pub;
	t->refs = 1;
	t->size = B->size;
	t->lb = B->any ? B->lb : 0;
	t->extent = B->any ? B->ub - B->lb : 0;
	t->nblocks = B->n;
	t->blocks = B->b;
	t->contig = t->size == t->extent && t->lb == 0 &&
		    (B->n == 0 || (B->n == 1 && B->b[0].off == 0));
	t->basic = old->basic;
	if (__builtin_mul_overflow(B->elems, old->basic_count, &t->basic_count))
		t->basic = 0;           /* too big to reduce as one run */
	o->tlb = o->tub = 0;
	for (int k = 0; k < B->n; k++) {
		MPI_Aint end = B->b[k].off + B->b[k].len;

		o->tlb = k == 0 || B->b[k].off < o->tlb ? B->b[k].off : o->tlb;
		o->tub = k == 0 || end > o->tub ? end : o->tub;
	}
	err = handle_new(o, h);
	if (err)
		dt_destroy(o);
	return err;
}

/* ---- MPI_Type_* ------------------------------------------------------------ */

static int type_raise(int code, const char *fn)
{
	return vd_mpi_raise(MPI_COMM_WORLD, code, fn);
}

/* oldtype valid and newtype not NULL (the checks every constructor ends
 * with). */
static int check_old_new(MPI_Datatype oldtype, const MPI_Datatype *newtype,
			 struct vd_dtype **old)
{
	if (!(*old = vd_dtype_get(oldtype)))
		return MPI_ERR_TYPE;
	return newtype ? MPI_SUCCESS : MPI_ERR_ARG;
}

/* A new type of count blocks of old: block i is lens[i] elements (all
 * `len` when lens is NULL) at displs[i] elements (i * stride when displs
 * is NULL). */
static int build_blocks(const struct vd_dtype *old, int count, const int *lens, int len,
			const int *displs, int stride, MPI_Datatype *newtype)
{
	struct builder B = { 0 };
	int err = MPI_SUCCESS;

	for (int i = 0; i < count && !err; i++) {
		MPI_Aint start = displs ? (MPI_Aint)displs[i] : (MPI_Aint)i * stride, disp;

		if (__builtin_mul_overflow(start, old->extent, &disp))
			err = MPI_ERR_ARG;
		else
			err = bld_place(&B, old, disp, lens ? lens[i] : len);
	}
	if (!err)
		return bld_finish(&B, old, newtype);
	free(B.b);
	return err;
}

#pragma weak MPI_Type_contiguous = PMPI_Type_contiguous
int PMPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	static const char fn[] = "MPI_Type_contiguous";
	struct vd_dtype *old;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (count < 0)
		return type_raise(MPI_ERR_COUNT, fn);
	if (!(err = check_old_new(oldtype, newtype, &old)))
		err = build_blocks(old, 1, NULL, count, NULL, 0, newtype);
	return type_raise(err, fn);
}

#pragma weak MPI_Type_vector = PMPI_Type_vector
int PMPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
		    MPI_Datatype *newtype)
{
	static const char fn[] = "MPI_Type_vector";
	struct vd_dtype *old;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (count < 0)
		return type_raise(MPI_ERR_COUNT, fn);
	if (blocklength < 0)
		return type_raise(MPI_ERR_ARG, fn);
	if (!(err = check_old_new(oldtype, newtype, &old)))
		err = build_blocks(old, count, NULL, blocklength, NULL, stride, newtype);
	return type_raise(err, fn);
}

#pragma weak MPI_Type_indexed = PMPI_Type_indexed
int PMPI_Type_indexed(int count, const int blocklengths[], const int displacements[],
		     MPI_Datatype oldtype, MPI_Datatype *newtype)
{
	static const char fn[] = "MPI_Type_indexed";
	struct vd_dtype *old;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (count < 0)
		return type_raise(MPI_ERR_COUNT, fn);
	if (count > 0 && (!blocklengths || !displacements))
		return type_raise(MPI_ERR_ARG, fn);
	for (int i = 0; i < count; i++)
		if (blocklengths[i] < 0)
			return type_raise(MPI_ERR_ARG, fn);
	if (!(err = check_old_new(oldtype, newtype, &old)))
		err = build_blocks(old, count, blocklengths, 0, displacements, 0, newtype);
	return type_raise(err, fn);
}

#pragma weak MPI_Type_commit = PMPI_Type_commit
int PMPI_Type_commit(MPI_Datatype *datatype)
{
	static const char fn[] = "MPI_Type_commit";
	struct vd_dtype *t;

	VD_MPI_CHECK_RUNNING(fn);
	if (!datatype)
		return type_raise(MPI_ERR_ARG, fn);
	if (!(t = vd_dtype_get(*datatype)))
		return type_raise(MPI_ERR_TYPE, fn);
	t->committed = true;
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_free = PMPI_Type_free
int PMPI_Type_free(MPI_Datatype *datatype)
{
	static const char fn[] = "MPI_Type_free";
	struct vd_dtype *t;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!datatype)
		return type_raise(MPI_ERR_ARG, fn);
	t = vd_dtype_get(*datatype);
	if (!t || t->builtin)
		return type_raise(MPI_ERR_TYPE, fn);
	if ((err = vd_type_attr_free(*datatype)) != MPI_SUCCESS)
		return type_raise(err, fn);
	handle_drop(*datatype);
	vd_dtype_release(t);
	*datatype = MPI_DATATYPE_NULL;
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_size = PMPI_Type_size
int PMPI_Type_size(MPI_Datatype datatype, int *size)
{
	static const char fn[] = "MPI_Type_size";
	struct vd_dtype *t;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(t = vd_dtype_get(datatype)))
		return type_raise(MPI_ERR_TYPE, fn);
	if (!size)
		return type_raise(MPI_ERR_ARG, fn);
	*size = t->size > INT_MAX ? MPI_UNDEFINED : (int)t->size;
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_get_extent = PMPI_Type_get_extent
int PMPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
	static const char fn[] = "MPI_Type_get_extent";
	struct vd_dtype *t;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(t = vd_dtype_get(datatype)))
		return type_raise(MPI_ERR_TYPE, fn);
	if (!lb || !extent)
		return type_raise(MPI_ERR_ARG, fn);
	*lb = t->lb;
	*extent = t->extent;
	return MPI_SUCCESS;
}
