/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: MPI_Pack_external, MPI_Unpack_external and
 * MPI_Pack_external_size for the "external32" representation (MPI 4.0
 * 13.5.2): every basic element big-endian at the standard's fixed size,
 * floating point as IEEE (long double as binary128), no padding.
 *
 * The data go through the native packed form (vd_dtype_pack: the typemap's
 * bytes back to back, in typemap order); the type signature, walked from
 * the datatype's recipe, then says which basic type each run of those
 * bytes is, and each is converted in place of a byte copy.
 *
 * Every integer type here has its external32 size natively (LP64 Linux),
 * which the static assertions hold the build to; long double is the one
 * whose bits differ (x87 extended), converted to binary128 and back
 * (truncating the 49 bits binary128 has beyond it).
 */
#include <float.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "dtype_impl.h"

_Static_assert(sizeof(long) == 8 && sizeof(wchar_t) == 4 && sizeof(_Bool) == 1 &&
	       sizeof(MPI_Aint) == 8 && sizeof(MPI_Offset) == 8 && sizeof(MPI_Count) == 8 &&
	       sizeof(int) == 4 && sizeof(short) == 2 && sizeof(long long) == 8,
	       "external32 sizes are the native ones");

#define LD_X87 (LDBL_MANT_DIG == 64 && sizeof(long double) == 16)
#define LD_QUAD (LDBL_MANT_DIG == 113)

/* A basic type as external32 sees it: up to two runs of n items of
 * `size` bytes each (a complex is 2 of its half; a pair its value then
 * its index); ld: the first run is long double. */
struct ext_form {
	int n[2], size[2];
	bool ld;
};

static bool ext_form_of(MPI_Datatype h, struct ext_form *f)
{
	*f = (struct ext_form){ { 1, 0 }, { 0, 0 }, false };
	switch (h) {
	case MPI_CHAR: case MPI_SIGNED_CHAR: case MPI_UNSIGNED_CHAR: case MPI_BYTE:
	case MPI_PACKED: case MPI_C_BOOL: case MPI_CXX_BOOL: case MPI_INT8_T: case MPI_UINT8_T:
	case MPI_CHARACTER: case MPI_INTEGER1:
		f->size[0] = 1; return true;
	case MPI_SHORT: case MPI_UNSIGNED_SHORT: case MPI_INT16_T: case MPI_UINT16_T:
	case MPI_INTEGER2:
		f->size[0] = 2; return true;
	case MPI_WCHAR: case MPI_INT: case MPI_UNSIGNED: case MPI_INT32_T: case MPI_UINT32_T:
	case MPI_FLOAT: case MPI_INTEGER: case MPI_REAL: case MPI_LOGICAL: case MPI_INTEGER4:
	case MPI_REAL4:
		f->size[0] = 4; return true;
	case MPI_LONG: case MPI_UNSIGNED_LONG: case MPI_LONG_LONG_INT:
	case MPI_UNSIGNED_LONG_LONG: case MPI_INT64_T: case MPI_UINT64_T: case MPI_AINT:
	case MPI_OFFSET: case MPI_COUNT: case MPI_DOUBLE: case MPI_DOUBLE_PRECISION:
	case MPI_INTEGER8: case MPI_REAL8:
		f->size[0] = 8; return true;
	case MPI_C_FLOAT_COMPLEX: case MPI_CXX_FLOAT_COMPLEX: case MPI_COMPLEX: case MPI_2INT:
	case MPI_2INTEGER: case MPI_2REAL:
		*f = (struct ext_form){ { 2, 0 }, { 4, 0 }, false }; return true;
	case MPI_C_DOUBLE_COMPLEX: case MPI_CXX_DOUBLE_COMPLEX: case MPI_DOUBLE_COMPLEX:
	case MPI_2DOUBLE_PRECISION:
		*f = (struct ext_form){ { 2, 0 }, { 8, 0 }, false }; return true;
	case MPI_LONG_DOUBLE:
		*f = (struct ext_form){ { 1, 0 }, { 16, 0 }, true }; return LD_X87 || LD_QUAD;
	case MPI_C_LONG_DOUBLE_COMPLEX: case MPI_CXX_LONG_DOUBLE_COMPLEX:
		*f = (struct ext_form){ { 2, 0 }, { 16, 0 }, true }; return LD_X87 || LD_QUAD;
	case MPI_FLOAT_INT: *f = (struct ext_form){ { 1, 1 }, { 4, 4 }, false }; return true;
	case MPI_DOUBLE_INT: case MPI_LONG_INT:
		*f = (struct ext_form){ { 1, 1 }, { 8, 4 }, false }; return true;
	case MPI_SHORT_INT: *f = (struct ext_form){ { 1, 1 }, { 2, 4 }, false }; return true;
	case MPI_LONG_DOUBLE_INT:
		*f = (struct ext_form){ { 1, 1 }, { 16, 4 }, true }; return LD_X87 || LD_QUAD;
	default:
		return false;
	}
}

/* ---- converting one item ----------------------------------------------------------- */

static void swap_copy(unsigned char *dst, const unsigned char *src, int size)
{
	for (int i = 0; i < size; i++)
		dst[i] = src[size - 1 - i];
}

static void put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static uint64_t get_be64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* x87 extended (64-bit significand with its integer bit, 15-bit exponent,
 * sign) to binary128 and back: same exponent bias, the fraction moves up. */
static void x87_to_quad(unsigned char *dst, const unsigned char *src)
{
	uint64_t mant, hi;
	uint16_t sexp;

	memcpy(&mant, src, 8);
	memcpy(&sexp, src + 8, 2);
	mant &= INT64_MAX;              /* binary128 has no explicit integer bit */
	hi = (uint64_t)sexp << 48 | mant >> 15;
	put_be64(dst, hi);
	put_be64(dst + 8, mant << 49);
}

static void quad_to_x87(unsigned char *dst, const unsigned char *src)
{
	uint64_t hi = get_be64(src), lo = get_be64(src + 8);
	uint16_t sexp = (uint16_t)(hi >> 48);
	uint64_t mant = (hi & 0xffffffffffffULL) << 15 | lo >> 49;

	if (sexp & 0x7fff)              /* normal, infinite or NaN */
		mant |= (uint64_t)1 << 63;
	memset(dst, 0, 16);
	memcpy(dst, &mant, 8);
	memcpy(dst + 8, &sexp, 2);
}

/* One item of `size` bytes, native -> external (out) or back. */
static void convert_item(unsigned char *dst, const unsigned char *src, int size, bool ld,
			 bool out)
{
	if (ld && LD_X87)
		(out ? x87_to_quad : quad_to_x87)(dst, src);
	else
		swap_copy(dst, src, size);
}

/* ---- walking the type signature --------------------------------------------------- */

/* Where the conversion stands: native packed bytes and external bytes
 * (both NULL: only counting the external size). */
struct conv {
	unsigned char *native, *ext;
	bool out;                       /* native -> external */
	MPI_Aint ext_bytes;
};

/* count items of builtin h.  MPI code. */
static int convert_run(struct conv *cv, MPI_Datatype h, MPI_Aint count)
{
	struct ext_form f;

	if (!ext_form_of(h, &f))
		return MPI_ERR_TYPE;
	for (MPI_Aint i = 0; i < count; i++)
		for (int run = 0; run < 2; run++)
			for (int k = 0; k < f.n[run]; k++) {
				int size = f.size[run];
				bool ld = f.ld && run == 0;

				if (cv->native && cv->out)
					convert_item(cv->ext, cv->native, size, ld, true);
				else if (cv->native)
					convert_item(cv->native, cv->ext, size, ld, false);
				if (cv->native) {
					cv->native += size;
					cv->ext += size;
				}
				cv->ext_bytes += size;
			}
	return MPI_SUCCESS;
}

/* count elements of t, in signature order.  MPI code. */
static int walk(struct conv *cv, const struct vd_dtype *t, MPI_Aint count)
{
	const struct dt_recipe *R = dt_obj_of(t)->recipe;
	int err = MPI_SUCCESS;

	if (t->builtin)
		return convert_run(cv, dt_builtin_handle(t), count);
	if (t->basic)                   /* one basic type throughout */
		return convert_run(cv, t->basic, count * t->basic_count);
	if (R->combiner != MPI_COMBINER_STRUCT) {
		/* A run of its one old type (vector, indexed, subarray, ...). */
		const struct vd_dtype *old = R->types[0];

		return old->size ? walk(cv, old, count * (t->size / old->size)) : MPI_SUCCESS;
	}
	for (MPI_Aint i = 0; i < count && !err; i++)
		for (int k = 0; k < R->nd && !err; k++)
			err = walk(cv, R->types[k], R->ints[1 + k]);
	return err;
}

/* ---- the API ------------------------------------------------------------------------- */

/* datarep, count and type: MPI code; *ext the external bytes. */
static int ext_check(const char *datarep, int count, const struct vd_dtype *t, MPI_Aint *ext)
{
	struct conv cv = { 0 };
	int err;

	if (!datarep || strcmp(datarep, "external32") != 0)
		return MPI_ERR_ARG;
	if (count < 0)
		return MPI_ERR_COUNT;
	if (!t)
		return MPI_ERR_TYPE;
	if ((err = walk(&cv, t, count)))
		return err;
	*ext = cv.ext_bytes;
	return MPI_SUCCESS;
}

/* *position inside a buffer of size bytes with room for ext more. */
static int ext_room(const MPI_Aint *position, MPI_Aint size, MPI_Aint ext)
{
	if (!position || *position < 0 || size < 0 || *position > size)
		return MPI_ERR_ARG;
	return ext > size - *position ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
}

/* Convert count elements of t between the native packed bytes at native
 * and the external ones at ext. */
static void ext_convert(const struct vd_dtype *t, int count, void *native, void *ext,
			bool out)
{
	struct conv cv = { native, ext, out, 0 };

	walk(&cv, t, count);
}

#pragma weak MPI_Pack_external = PMPI_Pack_external
int PMPI_Pack_external(const char datarep[], const void *inbuf, int incount,
		       MPI_Datatype datatype, void *outbuf, MPI_Aint outsize,
		       MPI_Aint *position)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Pack_external";
	struct vd_dtype *t = vd_dtype_comm(datatype);
	MPI_Aint ext = 0;
	void *tmp;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if ((err = ext_check(datarep, incount, t, &ext)) ||
	    (err = ext_room(position, outsize, ext)))
		return dt_raise(err, fn);
	if (!ext)
		return MPI_SUCCESS;
	if (!vd_dtype_buf_ok(t, inbuf, incount) || !outbuf)
		return dt_raise(MPI_ERR_BUFFER, fn);
	if (!(tmp = malloc((size_t)incount * (size_t)t->size)))
		return dt_raise(MPI_ERR_NO_MEM, fn);
	vd_dtype_pack(t, inbuf, incount, tmp);
	ext_convert(t, incount, tmp, (char *)outbuf + *position, true);
	free(tmp);
	*position += ext;
	return MPI_SUCCESS;
}

#pragma weak MPI_Unpack_external = PMPI_Unpack_external
int PMPI_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize,
			 MPI_Aint *position, void *outbuf, int outcount, MPI_Datatype datatype)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Unpack_external";
	struct vd_dtype *t = vd_dtype_comm(datatype);
	MPI_Aint ext = 0;
	size_t bytes;
	void *tmp;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if ((err = ext_check(datarep, outcount, t, &ext)) ||
	    (err = ext_room(position, insize, ext)))
		return dt_raise(err, fn);
	if (!ext)
		return MPI_SUCCESS;
	if (!vd_dtype_buf_ok(t, outbuf, outcount) || !inbuf)
		return dt_raise(MPI_ERR_BUFFER, fn);
	bytes = (size_t)outcount * (size_t)t->size;
	if (!(tmp = malloc(bytes)))
		return dt_raise(MPI_ERR_NO_MEM, fn);
	ext_convert(t, outcount, tmp, (char *)inbuf + *position, false);
	vd_dtype_unpack(t, tmp, bytes, outbuf);
	free(tmp);
	*position += ext;
	return MPI_SUCCESS;
}

#pragma weak MPI_Pack_external_size = PMPI_Pack_external_size
int PMPI_Pack_external_size(const char datarep[], int incount, MPI_Datatype datatype,
			    MPI_Aint *size)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Pack_external_size";
	MPI_Aint ext = 0;
	int err;

	VD_MPI_CHECK_RUNNING(fn);
	if ((err = ext_check(datarep, incount, vd_dtype_get(datatype), &ext)))
		return dt_raise(err, fn);
	if (!size)
		return dt_raise(MPI_ERR_ARG, fn);
	*size = ext;
	return MPI_SUCCESS;
}
