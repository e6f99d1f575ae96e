/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: datatypes.
 *
 * Handles are ints: 1..63 the predefined types (numbered in mpi.h), user
 * types from 64 up in a growable table whose freed slots are reused.
 * Every type is flattened at construction into the (offset, length) byte
 * blocks of one element, in typemap order, adjacent blocks merged -- so
 * packing is a loop of memcpy and a contiguous type is one block.  Each
 * derived type also keeps its recipe (dtype_impl.h), which holds
 * references on the types it was built from.  The constructors live in
 * dtype_make.c and dtype_array.c, the queries in dtype_query.c.
 *
 * Types are reference counted: MPI_Type_free drops the handle at once,
 * but a request that retained the type (vd_dtype_retain) keeps the object
 * until it releases it -- the standard lets pending communication finish.
 */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "dtype_impl.h"
#include "util/copy.h"

#define DT_NBUILTIN 64                  /* handles below this are predefined */

static struct dt_obj builtins[DT_NBUILTIN];
static struct vd_block builtin_blocks[DT_NBUILTIN][2];
static struct dt_obj **users;           /* handle - DT_NBUILTIN */
static int users_cap;
static int users_hint;                  /* no free slot below this */
static bool dt_ready;

/* ---- predefined types --------------------------------------------------- */

static void builtin_set(MPI_Datatype h, const char *name, MPI_Aint size, MPI_Aint extent,
			int align, const struct vd_block *b, int nb)
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
	o->nelems = 1;
	o->align = align;
	snprintf(o->name, sizeof(o->name), "%s", name);
}

/* A pair {value; int} as the C struct lays it out: value at 0, the int
 * after padding, the struct padded to its alignment.  It counts as two
 * basic elements (MPI_Get_elements). */
static void builtin_pair(MPI_Datatype h, const char *name, MPI_Aint vsize, MPI_Aint ioff,
			 MPI_Aint extent, int align)
{
	struct vd_block b[2] = { { 0, vsize }, { ioff, (MPI_Aint)sizeof(int) } };
	int nb = 2;

	if (ioff == vsize) {            /* no padding between: one block */
		b[0].len += b[1].len;
		nb = 1;
	}
	builtin_set(h, name, vsize + (MPI_Aint)sizeof(int), extent, align, b, nb);
	builtins[h].nelems = 2;
	builtins[h].pair_vsize = vsize;
}

#define PAIR(h, S) \
	builtin_pair(h, #h, (MPI_Aint)sizeof(((S *)0)->v), (MPI_Aint)offsetof(S, i), \
		     (MPI_Aint)sizeof(S), (int)_Alignof(S))
#define SCALAR(h, T) { h, #h, sizeof(T), _Alignof(T) }

static void builtins_init(void)
{
	static const struct {
		MPI_Datatype h;
		const char *name;
		MPI_Aint size;
		int align;
	} scalars[] = {
		SCALAR(MPI_CHAR, char),
		SCALAR(MPI_SIGNED_CHAR, signed char),
		SCALAR(MPI_UNSIGNED_CHAR, unsigned char),
		SCALAR(MPI_BYTE, unsigned char),
		SCALAR(MPI_WCHAR, wchar_t),
		SCALAR(MPI_SHORT, short),
		SCALAR(MPI_UNSIGNED_SHORT, unsigned short),
		SCALAR(MPI_INT, int),
		SCALAR(MPI_UNSIGNED, unsigned),
		SCALAR(MPI_LONG, long),
		SCALAR(MPI_UNSIGNED_LONG, unsigned long),
		SCALAR(MPI_LONG_LONG_INT, long long),
		SCALAR(MPI_UNSIGNED_LONG_LONG, unsigned long long),
		SCALAR(MPI_FLOAT, float),
		SCALAR(MPI_DOUBLE, double),
		SCALAR(MPI_LONG_DOUBLE, long double),
		SCALAR(MPI_C_BOOL, _Bool),
		SCALAR(MPI_INT8_T, int8_t), SCALAR(MPI_INT16_T, int16_t),
		SCALAR(MPI_INT32_T, int32_t), SCALAR(MPI_INT64_T, int64_t),
		SCALAR(MPI_UINT8_T, uint8_t), SCALAR(MPI_UINT16_T, uint16_t),
		SCALAR(MPI_UINT32_T, uint32_t), SCALAR(MPI_UINT64_T, uint64_t),
		SCALAR(MPI_AINT, MPI_Aint),
		SCALAR(MPI_OFFSET, MPI_Offset),
		SCALAR(MPI_COUNT, MPI_Count),
		SCALAR(MPI_PACKED, unsigned char),
		SCALAR(MPI_C_FLOAT_COMPLEX, float _Complex),
		SCALAR(MPI_C_DOUBLE_COMPLEX, double _Complex),
		SCALAR(MPI_C_LONG_DOUBLE_COMPLEX, long double _Complex),
		SCALAR(MPI_CXX_BOOL, _Bool),
		SCALAR(MPI_CXX_FLOAT_COMPLEX, float _Complex),
		SCALAR(MPI_CXX_DOUBLE_COMPLEX, double _Complex),
		SCALAR(MPI_CXX_LONG_DOUBLE_COMPLEX, long double _Complex),
		/* Fortran's, as gfortran lays them out by default */
		SCALAR(MPI_CHARACTER, char), SCALAR(MPI_INTEGER, int32_t),
		SCALAR(MPI_REAL, float), SCALAR(MPI_DOUBLE_PRECISION, double),
		SCALAR(MPI_COMPLEX, float _Complex),
		SCALAR(MPI_DOUBLE_COMPLEX, double _Complex),
		SCALAR(MPI_LOGICAL, int32_t),
		SCALAR(MPI_INTEGER1, int8_t), SCALAR(MPI_INTEGER2, int16_t),
		SCALAR(MPI_INTEGER4, int32_t), SCALAR(MPI_INTEGER8, int64_t),
		SCALAR(MPI_REAL4, float), SCALAR(MPI_REAL8, double),
		/* value and index of one type: no padding */
		SCALAR(MPI_2INTEGER, struct vd_pair_ii), SCALAR(MPI_2REAL, struct vd_pair_ff),
		SCALAR(MPI_2DOUBLE_PRECISION, struct vd_pair_dd),
	};

	for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++) {
		struct vd_block b = { 0, scalars[i].size };

		builtin_set(scalars[i].h, scalars[i].name, scalars[i].size, scalars[i].size,
			    scalars[i].align, &b, 1);
	}
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

static void recipe_free(struct dt_recipe *R)
{
	if (!R)
		return;
	for (int i = 0; i < R->nd; i++)
		vd_dtype_release(R->types[i]);
	free(R);                        /* one allocation with its arrays */
}

static void dt_destroy(struct dt_obj *o)
{
	recipe_free(o->recipe);
	free(o->pub.blocks);
	free(o);
}

void vd_dtype_finalize(void)
{
	/* vd_req_finalize dropped the requests' references first: dropping
	 * every handle frees every object (the ones only recipes hold
	 * follow). */
	for (int i = 0; i < users_cap; i++)
		if (users[i]) {
			struct dt_obj *o = users[i];

			users[i] = NULL;
			vd_dtype_release(&o->pub);
		}
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
		dt_destroy(dt_obj_of(t));
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

MPI_Datatype dt_builtin_handle(const struct vd_dtype *t)
{
	return (MPI_Datatype)(dt_obj_of(t) - builtins);
}

int dt_handle_share(struct vd_dtype *t, MPI_Datatype *h)
{
	int err = handle_new(dt_obj_of(t), h);

	if (!err)
		t->refs++;
	return err;
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

/* base + off as an address: buffers may be MPI_BOTTOM (NULL) with
 * absolute offsets, where pointer arithmetic on NULL would be undefined. */
static inline char *at(const void *base, MPI_Aint off)
{
	return (char *)((uintptr_t)base + (uintptr_t)off);
}

size_t vd_dtype_pack(const struct vd_dtype *t, const void *src, int count, void *dst)
{
	struct vd_block one;
	const struct vd_block *b;
	char *d = dst;
	int nb;

	if (count <= 0 || t->size == 0)
		return 0;
	if (t->contig) {
		vd_copy(dst, src, (size_t)count * (size_t)t->size);
		return (size_t)count * (size_t)t->size;
	}
	b = vd_dtype_blocks(t, &one, &nb);
	for (MPI_Aint i = 0, base = 0; i < count; i++, base += t->extent)
		for (int k = 0; k < nb; k++) {
			vd_copy(d, at(src, base + b[k].off), (size_t)b[k].len);
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
	int nb;

	if (bytes == 0 || t->size == 0)
		return;
	if (t->contig) {
		vd_copy(dst, src, bytes);
		return;
	}
	b = vd_dtype_blocks(t, &one, &nb);
	for (MPI_Aint base = 0; bytes > 0; base += t->extent)
		for (int k = 0; k < nb && bytes > 0; k++) {
			size_t n = (size_t)b[k].len < bytes ? (size_t)b[k].len : bytes;

			vd_copy(at(dst, base + b[k].off), s, n);
			s += n;
			bytes -= n;
		}
}

void vd_dtype_copy(const struct vd_dtype *t, const void *src, void *dst, int count)
{
	struct vd_block one;
	const struct vd_block *b;
	int nb;

	if (count <= 0 || src == dst)
		return;
	if (t->contig) {
		vd_copy(dst, src, (size_t)count * (size_t)t->size);
		return;
	}
	b = vd_dtype_blocks(t, &one, &nb);
	for (MPI_Aint i = 0, base = 0; i < count; i++, base += t->extent)
		for (int k = 0; k < nb; k++)
			vd_copy(at(dst, base + b[k].off), at(src, base + b[k].off),
			       (size_t)b[k].len);
}

bool vd_dtype_buf_ok(const struct vd_dtype *t, const void *buf, int count)
{
	/* MPI_BOTTOM is NULL: fine with absolute addresses in the type, but
	 * data in the first page (never mapped) means a missing buffer.
	 * MPI_IN_PLACE is a marker, never data: callers that allow it deal
	 * with it before asking. */
	if (count <= 0 || t->size == 0)
		return true;
	if (buf == MPI_IN_PLACE)
		return false;
	return buf || dt_obj_of(t)->tlb >= 4096;
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

/* Widen the bounds by [lo, hi): those of explicitly marked types and
 * those of plain ones are kept apart, since markers win (MPI 4.0 5.1.7). */
static void bld_bounds(struct builder *B, bool marked, MPI_Aint lo, MPI_Aint hi)
{
	MPI_Aint *l = marked ? &B->mlb : &B->lb, *u = marked ? &B->mub : &B->ub;
	bool *any = marked ? &B->any_marked : &B->any;

	*l = *any && *l < lo ? *l : lo;
	*u = *any && *u > hi ? *u : hi;
	*any = true;
}

/* The common basic type (for reductions) of what was placed so far. */
static void bld_basic(struct builder *B, const struct vd_dtype *old, MPI_Aint cnt)
{
	MPI_Aint n;

	if (!B->basic_set) {
		B->basic = old->basic;
		B->basic_set = true;
	} else if (B->basic != old->basic) {
		B->basic = 0;
	}
	if (__builtin_mul_overflow(cnt, old->basic_count, &n) ||
	    __builtin_add_overflow(B->basic_count, n, &B->basic_count))
		B->basic = 0;           /* too big to reduce as one run */
}

int dt_bld_place(struct builder *B, const struct vd_dtype *old, MPI_Aint disp, MPI_Aint cnt)
{
	const struct dt_obj *o = dt_obj_of(old);
	struct vd_block one;
	const struct vd_block *b;
	MPI_Aint hi, bytes;
	MPI_Count elems;
	int nb, err = MPI_SUCCESS;

	if (cnt == 0)
		return MPI_SUCCESS;     /* an empty block has no bounds either */
	if (__builtin_mul_overflow(cnt - 1, old->extent, &hi) ||
	    __builtin_add_overflow(hi, disp + old->lb + old->extent, &hi) ||
	    __builtin_mul_overflow(cnt, old->size, &bytes) ||
	    __builtin_add_overflow(B->size, bytes, &B->size) ||
	    __builtin_mul_overflow((MPI_Count)cnt, o->nelems, &elems) ||
	    __builtin_add_overflow(B->nelems, elems, &B->nelems))
		return MPI_ERR_ARG;
	bld_bounds(B, o->marked, disp + old->lb, hi);
	bld_basic(B, old, cnt);
	B->align = B->align > o->align ? B->align : o->align;
	if (old->contig)                /* cnt elements back to back */
		return bld_add(B, disp, bytes);
	b = vd_dtype_blocks(old, &one, &nb);
	for (MPI_Aint i = 0; i < cnt && !err; i++)
		for (int k = 0; k < nb && !err; k++)
			err = bld_add(B, disp + i * old->extent + b[k].off, b[k].len);
	return err;
}

/* lb and extent of the finished typemap (B->fixed: as given). */
static void bld_extent(const struct builder *B, struct dt_obj *o)
{
	struct vd_dtype *t = &o->pub;

	o->marked = B->fixed ? B->fix_marked : B->any_marked;
	if (B->fixed) {
		t->lb = B->fix_lb;
		t->extent = B->fix_extent;
	} else if (B->any_marked) {
		t->lb = B->mlb;
		t->extent = B->mub - B->mlb;
	} else if (B->any) {
		t->lb = B->lb;
		t->extent = B->ub - B->lb;
		/* A struct pads its extent to its strictest alignment, as the
		 * C compiler pads the struct it describes. */
		if (B->pad && B->align > 1 && t->extent % B->align)
			t->extent += B->align - t->extent % B->align;
	}
}

/* The true bounds: the first and last byte the blocks touch. */
static void bld_true_bounds(const struct builder *B, struct dt_obj *o)
{
	o->tlb = o->tub = 0;
	for (int k = 0; k < B->n; k++) {
		MPI_Aint end = B->b[k].off + B->b[k].len;

		o->tlb = k == 0 || B->b[k].off < o->tlb ? B->b[k].off : o->tlb;
		o->tub = k == 0 || end > o->tub ? end : o->tub;
	}
}

static struct dt_obj *bld_finish(struct builder *B)
{
	struct dt_obj *o = calloc(1, sizeof(*o));
	struct vd_dtype *t;

	if (!o)
		return NULL;
	t = &o->pub;
	t->refs = 1;
	t->size = B->size;
	bld_extent(B, o);
	bld_true_bounds(B, o);
	t->nblocks = B->n;
	t->blocks = B->b;
	B->b = NULL;
	t->contig = t->size == t->extent && t->lb == 0 &&
		    (B->n == 0 || (B->n == 1 && t->blocks[0].off == 0));
	t->basic = B->basic;
	t->basic_count = B->basic ? B->basic_count : 0;
	o->nelems = B->nelems;
	o->align = B->align ? B->align : 1;
	return o;
}

void dt_args_ints(struct dt_args *A, const int *p, int n)
{
	A->iseg[A->nseg] = p;
	A->ilen[A->nseg] = n;
	A->nseg++;
}

/* The recipe of A in one allocation; references on its types. */
static struct dt_recipe *recipe_new(const struct dt_args *A)
{
	struct dt_recipe *R;
	size_t ni = 0, at_a, at_t, total;

	for (int s = 0; s < A->nseg; s++)
		ni += (size_t)A->ilen[s];
	at_a = sizeof(*R) + ni * sizeof(int);
	at_a = (at_a + 15) & ~(size_t)15;
	at_t = at_a + (size_t)A->na * sizeof(MPI_Aint);
	total = at_t + (size_t)A->nd * sizeof(struct vd_dtype *);
	if (!(R = malloc(total)))
		return NULL;
	R->combiner = A->combiner;
	R->ni = (int)ni;
	R->na = A->na;
	R->nd = A->nd;
	R->ints = (int *)(R + 1);
	R->aints = (MPI_Aint *)((char *)R + at_a);
	R->types = (struct vd_dtype **)((char *)R + at_t);
	for (int s = 0, k = 0; s < A->nseg; k += A->ilen[s], s++)
		if (A->ilen[s])
			memcpy(R->ints + k, A->iseg[s], (size_t)A->ilen[s] * sizeof(int));
	if (A->na)
		memcpy(R->aints, A->aints, (size_t)A->na * sizeof(MPI_Aint));
	for (int i = 0; i < A->nd; i++) {
		R->types[i] = vd_dtype_get(A->types[i]);
		vd_dtype_retain(R->types[i]);
	}
	return R;
}

int dt_make(struct builder *B, const struct dt_args *A, MPI_Datatype *newtype)
{
	struct dt_obj *o = bld_finish(B);
	int err = MPI_ERR_NO_MEM;

	free(B->b);
	B->b = NULL;
	if (o && (o->recipe = recipe_new(A)) && !(err = handle_new(o, newtype)))
		return MPI_SUCCESS;
	if (o)
		dt_destroy(o);
	return err;
}

int dt_check_old_new(MPI_Datatype oldtype, const MPI_Datatype *newtype,
		     struct vd_dtype **old)
{
	if (!(*old = vd_dtype_get(oldtype)))
		return MPI_ERR_TYPE;
	return newtype ? MPI_SUCCESS : MPI_ERR_ARG;
}

/* ---- MPI_Type_* ------------------------------------------------------------ */

#pragma weak MPI_Type_commit = PMPI_Type_commit
int PMPI_Type_commit(MPI_Datatype *datatype)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_commit";
	struct vd_dtype *t;

	VD_MPI_CHECK_RUNNING(fn);
	if (!datatype)
		return dt_raise(MPI_ERR_ARG, fn);
	if (!(t = vd_dtype_get(*datatype)))
		return dt_raise(MPI_ERR_TYPE, fn);
	t->committed = true;
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_free = PMPI_Type_free
int PMPI_Type_free(MPI_Datatype *datatype)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_free";
	struct vd_dtype *t;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if (!datatype)
		return dt_raise(MPI_ERR_ARG, fn);
	t = vd_dtype_get(*datatype);
	if (!t || t->builtin)
		return dt_raise(MPI_ERR_TYPE, fn);
	if ((err = vd_type_attr_free(*datatype)) != MPI_SUCCESS)
		return dt_raise(err, fn);
	handle_drop(*datatype);
	vd_dtype_release(t);
	*datatype = MPI_DATATYPE_NULL;
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_size = PMPI_Type_size
int PMPI_Type_size(MPI_Datatype datatype, int *size)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_size";
	struct vd_dtype *t;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(t = vd_dtype_get(datatype)))
		return dt_raise(MPI_ERR_TYPE, fn);
	if (!size)
		return dt_raise(MPI_ERR_ARG, fn);
	*size = t->size > INT_MAX ? MPI_UNDEFINED : (int)t->size;
	return MPI_SUCCESS;
}

#pragma weak MPI_Type_get_extent = PMPI_Type_get_extent
int PMPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Type_get_extent";
	struct vd_dtype *t;

	VD_MPI_CHECK_RUNNING(fn);
	if (!(t = vd_dtype_get(datatype)))
		return dt_raise(MPI_ERR_TYPE, fn);
	if (!lb || !extent)
		return dt_raise(MPI_ERR_ARG, fn);
	*lb = t->lb;
	*extent = t->extent;
	return MPI_SUCCESS;
}
