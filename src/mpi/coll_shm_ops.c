/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: Barrier, Bcast, Reduce, Allreduce, Reduce_scatter,
 * Allgather and Alltoall through a node-local communicator's shared
 * segment (coll_shm.h describes the phases).
 *
 *  - Barrier: one phase; every member publishes it and waits for all.
 *  - Bcast: the root copies chunks into successive areas, each published
 *    as a phase, the first signed with the size; the others copy each
 *    chunk out as soon as it is there, so reading overlaps writing, and
 *    the root runs at most SHM_NBUF - 2 chunks ahead of the slowest
 *    reader.
 *  - Reduce / Allreduce (predefined ops, contiguous types): per chunk of
 *    a slot's size every member copies its contribution into its slot,
 *    then each member reduces its own slice of the chunk across all slots,
 *    in place, and a second phase lets the result be copied out (by all,
 *    or by the root).  Small chunks skip the second phase: whoever needs
 *    the result reduces the whole chunk itself.  Slots are combined in
 *    rank order, so every member's result is bitwise the same.
 *  - Reduce_scatter: as Allreduce in one phase per chunk, each member
 *    reducing only the part of the chunk in its own piece, straight into
 *    its output.
 *  - Allgather: per chunk every member copies its piece's part into its
 *    slot, then everyone copies all the others' parts out.
 *  - Alltoall: a slot holds one part per destination; per phase every
 *    member copies the next part of each of its blocks into its slot,
 *    then each copies the parts meant for it out of everyone's slot.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll_shm.h"
#include "util/copy.h"

/* Bcast's pipeline unit. */
#define SHM_BCAST_CHUNK (32u * 1024)
/* Reduction chunks up to this size are reduced whole by each member that
 * needs the result (one phase instead of two). */
#define SHM_REDUCE_SMALL 4096u

int vd_shm_barrier(struct vd_shm *s)
{
	uint32_t p = vd_shm_next(s);

	vd_shm_publish(s, p);
	return vd_shm_wait(s, -1, p);
}

/* ---- Bcast --------------------------------------------------------------------- */

/* The root signs its first phase with its total, hashed, and writes the
 * total into that area's first line, at SHM_BCAST_TOTAL_AT (beyond the
 * bytes where a member on the direct path exposes its buffer, and beyond
 * the stamp of a total small enough to travel stamped); later
 * phases need no signature: nobody checks them.  A member whose
 * signature matches (the same size, bar a hash collision) copies
 * without reading the total.  One whose size differs (an erroneous
 * call), or that cannot take part, goes astray (vd_shm_bcast_stray):
 * it follows the root's phases without copying and fails, so the
 * phases stay aligned for the next collective.  A zero-size Bcast takes
 * one phase too, so that a member that passed more finds out. */
#define SHM_BCAST_TOTAL_AT 56u
_Static_assert(SHM_BCAST_TOTAL_AT >= SHM_EXPOSED_LEN &&
	       SHM_BCAST_TOTAL_AT >= SHM_STAMP_AT + sizeof(uint64_t) &&
	       SHM_BCAST_TOTAL_AT + sizeof(uint64_t) <= SHM_LINE,
	       "the total between an exposed record or a stamp and the data");
/* No buffer is larger (47 bits of user address space): a total beyond
 * this in the root's first area is not a size, and a call beyond it is
 * refused. */
#define SHM_BCAST_TOTAL_MAX (1ull << 47)

/* Where the bytes of the first chunk start: before the stamp when they
 * travel stamped, else at the next line, aligned as in the user's buffer
 * (a copy between addresses of different alignments ran at two thirds
 * of the speed). */
static size_t bcast_head(uint64_t total)
{
	return total <= SHM_STAMPED_MAX ? 0 : SHM_LINE;
}

static uint64_t bcast_chunk(const struct vd_shm *s)
{
	return s->area_len < SHM_BCAST_CHUNK ? s->area_len : SHM_BCAST_CHUNK;
}

/* Bytes of the chunk at off of a total (the first one is shorter by its
 * head). */
static size_t bcast_len(const struct vd_shm *s, uint64_t total, uint64_t off, size_t head)
{
	uint64_t chunk = bcast_chunk(s) - head;

	return (size_t)(total - off < chunk ? total - off : chunk);
}

/* Phases of a Bcast of `total` bytes through the segment (at least one). */
static uint64_t bcast_phases(const struct vd_shm *s, uint64_t total)
{
	uint64_t chunk = bcast_chunk(s), first = chunk - bcast_head(total);

	return total <= first ? 1 : 1 + (total - first + chunk - 1) / chunk;
}

/* sig: the total's signature, or SHM_SIG_REFUSED (a root that cannot
 * take part: one phase, total 0). */
static int bcast_seg_root(struct vd_shm *s, const char *data, uint64_t total, uint32_t sig)
{
	size_t head = bcast_head(total);
	uint64_t off = 0;

	do {
		size_t len = bcast_len(s, total, off, head);
		uint32_t p = vd_shm_next(s);
		char *area;
		int err = vd_shm_area_claim(s, p, &area);

		if (err)
			return err;
		if (off == 0) {
			memcpy(area + SHM_BCAST_TOTAL_AT, &total, sizeof(total));
			vd_shm_sign(s, p, sig);
		}
		if (len)
			vd_copy(area + head, data + off, len);
		if (total <= SHM_STAMPED_MAX)
			vd_shm_stamp(s, area, p, sig);
		vd_shm_publish(s, p);
		off += len;
		head = 0;
	} while (off < total);
	return 0;
}

/* Whether the total in a segment root's first area can be its own: a
 * size that takes the segment, and the one it signed its phase with. */
static bool bcast_total_ok(const struct vd_shm *s, int root, uint32_t p, uint64_t total)
{
	return total <= SHM_BCAST_TOTAL_MAX && total < s->direct_min &&
	       vd_shm_signed_with(s, root, p, vd_shm_sig(SHM_SIG_BCAST_SEG, total));
}

int vd_shm_bcast_stray(struct vd_shm *s, int root, uint32_t p)
{
	uint64_t total, phases;

	if (vd_shm_signed_with(s, root, p, SHM_SIG_BCAST_ONE) ||
	    vd_shm_signed_with(s, root, p, SHM_SIG_BCAST_SPLIT) ||
	    vd_shm_signed_with(s, root, p, SHM_SIG_REFUSED))
		return -EMSGSIZE;
	memcpy(&total, vd_shm_area(s, p) + SHM_BCAST_TOTAL_AT, sizeof(total));
	if (!bcast_total_ok(s, root, p, total)) {
		vd_shm_found_bad(s, root, "as its Bcast's size, which it did not sign", total);
		return -EIO;
	}
	for (phases = bcast_phases(s, total); phases > 1; phases--) {
		uint32_t q = vd_shm_next(s);
		int err = vd_shm_wait(s, root, q);

		if (err)
			return err;
		vd_shm_publish(s, q);
	}
	return -EMSGSIZE;
}

static int bcast_seg_member(struct vd_shm *s, char *data, uint64_t total, int root)
{
	uint32_t sig = vd_shm_sig(SHM_SIG_BCAST_SEG, total), p = vd_shm_next(s);
	size_t head = bcast_head(total);
	uint64_t off = 0;
	int err;

	vd_shm_sign(s, p, sig);         /* a root on the direct path checks it */
	vd_shm_sig_watch(s, p, sig);
	if (total <= SHM_STAMPED_MAX)
		vd_shm_stamp_watch(s, vd_shm_area(s, p), 0, p, sig);
	err = vd_shm_wait(s, root, p);
	vd_shm_stamp_unwatch(s);
	if (vd_shm_sig_unwatch(s) && !err) {
		vd_shm_publish(s, p);
		return vd_shm_bcast_stray(s, root, p);
	}
	while (!err) {
		size_t len = bcast_len(s, total, off, head);

		if (len)
			vd_copy(data + off, vd_shm_area(s, p) + head, len);
		vd_shm_publish(s, p);
		off += len;
		head = 0;
		if (off >= total)
			break;
		p = vd_shm_next(s);
		err = vd_shm_wait(s, root, p);
	}
	return err;
}

/* A member that cannot take part (why: its local error): the root signs
 * one phase refused, the others go astray from the first phase on (the
 * root fails too where it checks them). */
static int bcast_refuse(struct vd_shm *s, int root, int why)
{
	uint32_t p;
	int err;

	if (s->me == root) {
		err = bcast_seg_root(s, NULL, 0, SHM_SIG_REFUSED);
		return err ? err : why;
	}
	p = vd_shm_next(s);
	vd_shm_sign(s, p, SHM_SIG_REFUSED);
	err = vd_shm_wait(s, root, p);
	vd_shm_publish(s, p);
	if (!err)
		err = vd_shm_bcast_stray(s, root, p);
	return err == -EMSGSIZE ? why : err;
}

int vd_shm_bcast_refused(struct vd_shm *s, int root)
{
	return bcast_refuse(s, root, -EINVAL);
}

/* Members may describe the same bytes with different types: the segment
 * carries the packed bytes. */
int vd_shm_bcast(struct vd_shm *s, void *buf, int count, struct vd_dtype *t, int root)
{
	size_t bytes;
	bool staged = !t->contig && count > 0;
	char *data = buf;
	int err;

	if (__builtin_mul_overflow((size_t)count, (size_t)t->size, &bytes) ||
	    bytes > SHM_BCAST_TOTAL_MAX)
		return bcast_refuse(s, root, -EINVAL);  /* no buffer holds that */
	staged = staged && bytes > 0;
	if (staged && !(data = malloc(bytes)))
		return bcast_refuse(s, root, -ENOMEM);
	if (staged && s->me == root)
		vd_dtype_pack(t, buf, count, data);
	err = bytes >= s->direct_min ? vd_shm_direct_bcast(s, data, bytes, root)
	      : s->me == root ? bcast_seg_root(s, data, bytes, vd_shm_sig(SHM_SIG_BCAST_SEG, bytes))
			      : bcast_seg_member(s, data, bytes, root);
	if (staged) {
		if (!err && s->me != root)
			vd_dtype_unpack(t, data, bytes, buf);
		free(data);
	}
	return err;
}

/* ---- Reduce / Allreduce ------------------------------------------------------------ */

bool vd_shm_reduce_fits(const struct vd_dtype *t, MPI_Op op)
{
	return t && t->contig && t->basic && t->size > 0 && (size_t)t->size <= SHM_SLOT &&
	       vd_op_builtin(op);
}

static char *slot(const struct vd_shm *s, char *area, int i)
{
	return area + (size_t)i * s->slot;
}

struct shm_red {
	MPI_Datatype dt;
	MPI_Op op;
	size_t esz;                     /* bytes per element */
	int root;                       /* -1: allreduce */
	uint32_t sig;                   /* checked at the first chunk's first
	                                 * phase by whoever waits there, 0:
	                                 * none */
};

/* Member j's elements of the chunk from element lo: in its slot, or for
 * this member at `own` when that is given (its contribution outside the
 * segment). */
static const char *contribution(const struct vd_shm *s, const struct shm_red *r, char *area,
				int j, const char *own, size_t lo)
{
	return (j == s->me && own ? own : slot(s, area, j)) + lo * r->esz;
}

/* out = slot 0 op slot 1 op ... op slot n-1 over elements [lo, hi) of
 * the chunk, accumulated right to left (inout = in op inout); out may be
 * the last slot's own elements.  own: as for contribution(). */
static int combine_slots(const struct vd_shm *s, const struct shm_red *r, char *area,
			 size_t lo, size_t hi, char *out, const char *own)
{
	const char *last = contribution(s, r, area, s->n - 1, own, lo);
	int err = 0;

	if (out != last)
		vd_copy(out, last, (hi - lo) * r->esz);
	for (int j = s->n - 2; j >= 0 && !err && hi > lo; j--)
		err = vd_op_apply(r->op, contribution(s, r, area, j, own, lo), out, (int)(hi - lo),
				  r->dt);
	return err;
}

/* Everyone at phase p, each with `bytes` in its slot (stamped when small
 * enough: contribute), and where sig is not 0, all signed it. */
static int slots_wait(struct vd_shm *s, uint32_t p, size_t bytes, uint32_t sig)
{
	int err;

	if (bytes <= SHM_STAMPED_MAX)
		vd_shm_stamp_watch(s, vd_shm_area(s, p), s->slot, p, sig);
	err = sig ? vd_shm_wait_signed(s, p, sig) : vd_shm_wait(s, -1, p);
	vd_shm_stamp_unwatch(s);
	return err;
}

/* This member's contribution of `bytes` in its slot of phase p's area
 * (stamped when small enough), signed and published. */
static void contribute(struct vd_shm *s, uint32_t p, char *area, size_t bytes, uint32_t sig)
{
	if (bytes <= SHM_STAMPED_MAX)
		vd_shm_stamp(s, slot(s, area, s->me), p, sig);
	if (sig)        /* next to the publish: one trip of the line */
		vd_shm_sign(s, p, sig);
	vd_shm_publish(s, p);
}

/* One chunk of m elements: in -> this member's slot, out <- the result
 * (NULL where the result is not wanted). */
static int reduce_chunk(struct vd_shm *s, const struct shm_red *r, const char *in,
			char *out, size_t m)
{
	bool wants = r->root < 0 || s->me == r->root;
	uint32_t p = vd_shm_next(s);
	char *area;
	int err = vd_shm_area_claim(s, p, &area);
	size_t lo = m * (size_t)s->me / (size_t)s->n, hi = m * (size_t)(s->me + 1) / (size_t)s->n;

	if (err)
		return err;
	vd_copy(slot(s, area, s->me), in, m * r->esz);
	contribute(s, p, area, m * r->esz, r->sig);
	if (m * r->esz <= SHM_REDUCE_SMALL) {
		if (!wants)
			return 0;
		err = slots_wait(s, p, m * r->esz, r->sig);
		return err ? err : combine_slots(s, r, area, 0, m, out, NULL);
	}
	err = slots_wait(s, p, m * r->esz, r->sig);
	if (!err)
		err = combine_slots(s, r, area, lo, hi, slot(s, area, s->n - 1) + lo * r->esz,
				    NULL);
	if (err)
		return err;
	p = vd_shm_next(s);
	vd_shm_publish(s, p);
	if (!wants)
		return 0;
	err = vd_shm_wait(s, -1, p);
	if (!err)
		vd_copy(out, slot(s, area, s->n - 1), m * r->esz);
	return err;
}

int vd_shm_reduce(struct vd_shm *s, const void *in, void *out, int count, MPI_Datatype dt,
		  MPI_Op op, int root, uint32_t sig)
{
	struct shm_red r = { dt, op, (size_t)vd_dtype_get(dt)->size, root, sig };
	size_t per = s->slot / r.esz, total = (size_t)count;
	bool wants = root < 0 || s->me == root;
	int err = 0;

	if (vd_shm_direct_reduces(s, total * r.esz))
		return vd_shm_direct_reduce(s, in, out, total, dt, op, root, r.sig);

	for (size_t e0 = 0; e0 < total && !err; e0 += per) {
		size_t m = total - e0 < per ? total - e0 : per;

		err = reduce_chunk(s, &r, (const char *)in + e0 * r.esz,
				   wants ? (char *)out + e0 * r.esz : NULL, m);
		r.sig = 0;      /* the first chunk settled it */
	}
	return err;
}

/* ---- Reduce_scatter ----------------------------------------------------------------- */

/* The part of the chunk [e0, e0 + m) inside [b0, b1), as chunk offsets
 * [*lo, *hi) (empty: equal). */
static void overlap(size_t e0, size_t m, size_t b0, size_t b1, size_t *lo, size_t *hi)
{
	size_t a = e0 > b0 ? e0 : b0, b = e0 + m < b1 ? e0 + m : b1;

	*lo = a < b ? a - e0 : 0;
	*hi = a < b ? b - e0 : 0;
}

/* One chunk, elements [e0, e0 + m) of the whole vector: this member's
 * contribution goes into its slot -- all but the part inside its own
 * piece [b0, b1), which nobody else reads (in place all of it: the
 * results overwrite the input) -- then it reduces that part straight
 * into out.  One phase; a member without a part in the chunk does not
 * wait for it, except for the signature at the first. */
static int scatter_chunk(struct vd_shm *s, const struct shm_red *r, const char *in, char *out,
			 size_t e0, size_t m, size_t b0, size_t b1, bool in_place)
{
	uint32_t p = vd_shm_next(s);
	size_t lo, hi, esz = r->esz;
	char *area, *mine;
	int err = vd_shm_area_claim(s, p, &area);

	if (err)
		return err;
	overlap(e0, m, b0, b1, &lo, &hi);
	mine = slot(s, area, s->me);
	in += e0 * esz;
	if (in_place || lo == hi) {
		vd_copy(mine, in, m * esz);
	} else {
		vd_copy(mine, in, lo * esz);
		vd_copy(mine + hi * esz, in + hi * esz, (m - hi) * esz);
	}
	contribute(s, p, area, m * esz, r->sig);
	if (lo == hi && !r->sig)
		return 0;
	err = slots_wait(s, p, m * esz, r->sig);
	if (err || lo == hi)
		return err;
	return combine_slots(s, r, area, lo, hi, out + (e0 + lo - b0) * esz, in_place ? NULL : in);
}

int vd_shm_reduce_scatter(struct vd_shm *s, const void *in, void *out, size_t total,
			  size_t b0, size_t b1, MPI_Datatype dt, MPI_Op op, uint32_t sig)
{
	struct shm_red r = { dt, op, (size_t)vd_dtype_get(dt)->size, -1, sig };
	size_t per = s->slot / r.esz;
	int err = 0;

	for (size_t e0 = 0; e0 < total && !err; e0 += per) {
		size_t m = total - e0 < per ? total - e0 : per;

		err = scatter_chunk(s, &r, in, out, e0, m, b0, b1, in == out);
		r.sig = 0;      /* the first chunk settled it */
	}
	return err;
}

/* ---- Allgather ----------------------------------------------------------------------- */

/* Where member i's packed piece goes: in buf itself for a contiguous
 * type, else in the staging copy `all`. */
static char *piece(char *buf, char *all, size_t pb, int i)
{
	return (all ? all : buf) + (size_t)i * pb;
}

/* Through the segment: per chunk of a slot's size of the pieces, every
 * member copies its part into its slot, then everyone copies everyone
 * else's out.  The first phase is signed with sig (the piece's size):
 * every member waits for all there, so members whose sizes differ all
 * stop at it and the phases stay aligned. */
static int allgather_chunks(struct vd_shm *s, char *buf, char *all, size_t pb, uint32_t sig)
{
	int err = 0;

	for (size_t off = 0; off < pb && !err; off += s->slot) {
		size_t len = pb - off < s->slot ? pb - off : s->slot;
		uint32_t p = vd_shm_next(s);
		char *area;

		if ((err = vd_shm_area_claim(s, p, &area)))
			break;
		vd_copy(slot(s, area, s->me), piece(buf, all, pb, s->me) + off, len);
		contribute(s, p, area, len, off ? 0 : sig);
		err = slots_wait(s, p, len, off ? 0 : sig);
		for (int i = 0; i < s->n && !err; i++)
			if (i != s->me)
				vd_copy(piece(buf, all, pb, i) + off, slot(s, area, i), len);
	}
	return err;
}

/* Each member's piece is count elements of t at buf + i * count extents,
 * this member's already in place: read directly, or through the
 * segment. */
int vd_shm_allgather(struct vd_shm *s, void *buf, int count, struct vd_dtype *t,
		     const void *own)
{
	size_t pb, all_len;
	uint32_t sig;
	char *all = NULL;
	int err = 0;

	if (__builtin_mul_overflow((size_t)count, (size_t)t->size, &pb) ||
	    __builtin_mul_overflow((size_t)s->n, pb, &all_len)) {
		(void)vd_shm_signed_phase(s, SHM_SIG_REFUSED);  /* no buffer holds that */
		return -EINVAL;
	}
	sig = vd_shm_sig(SHM_SIG_ALLGATHER, pb);
	if (pb == 0)            /* one phase all the same: a member may pass more */
		return vd_shm_signed_phase(s, sig);
	if (!t->contig) {       /* members may use different types: pack */
		if (!(all = malloc(all_len))) {
			(void)vd_shm_signed_phase(s, SHM_SIG_REFUSED);  /* the others fail too */
			return -ENOMEM;
		}
		vd_dtype_pack(t, (char *)buf + (MPI_Aint)s->me * count * t->extent, count,
			      piece(buf, all, pb, s->me));
	}
	if (vd_shm_direct_roomy(s, pb))
		err = vd_shm_direct_allgather(s, piece(buf, all, pb, 0), pb,
					      own ? own : piece(buf, all, pb, s->me), sig);
	else
		err = allgather_chunks(s, buf, all, pb, sig);
	for (int i = 0; all && !err && i < s->n; i++)
		if (i != s->me)
			vd_dtype_unpack(t, piece(buf, all, pb, i), pb,
					(char *)buf + (MPI_Aint)i * count * t->extent);
	free(all);
	return err;
}

/* ---- Alltoall ---------------------------------------------------------------------------- */

/* Blocks of b bytes, the one for (or from) member d at d * b; sig: b's
 * signature, checked at the first phase (a zero b takes one phase
 * too, so that a member that passed more finds out). */
static int alltoall_bytes(struct vd_shm *s, const char *sb, char *rb, size_t b, uint32_t sig)
{
	size_t sub = s->slot / (size_t)s->n, off = 0;
	int err = 0;

	if (b)
		vd_copy(rb + (size_t)s->me * b, sb + (size_t)s->me * b, b);
	do {
		size_t len = b - off < sub ? b - off : sub;
		uint32_t p = vd_shm_next(s);
		char *area, *mine;

		if ((err = vd_shm_area_claim(s, p, &area)))
			break;
		mine = slot(s, area, s->me);
		for (int d = 0; d < s->n && len; d++)
			if (d != s->me)
				vd_copy(mine + (size_t)d * sub, sb + (size_t)d * b + off, len);
		if (off == 0)   /* next to the publish: one trip of the line */
			vd_shm_sign(s, p, sig);
		vd_shm_publish(s, p);
		err = off == 0 ? vd_shm_wait_signed(s, p, sig) : vd_shm_wait(s, -1, p);
		for (int i = 0; i < s->n && !err && len; i++)
			if (i != s->me)
				vd_copy(rb + (size_t)i * b + off, slot(s, area, i) + (size_t)s->me * sub,
				       len);
		off += sub;
	} while (off < b && !err);
	return err;
}

/* The segment's Alltoall needs a slot of at least one byte a member. */
static bool alltoall_fits(const struct vd_shm *s)
{
	return s->slot / (size_t)s->n != 0;
}

int vd_shm_alltoall_refused(struct vd_shm *s)
{
	return alltoall_fits(s) ? vd_shm_signed_phase(s, SHM_SIG_REFUSED) : -ENOTSUP;
}

/* Members may describe their blocks with different types of one
 * signature: a type that is not contiguous goes through a packed copy.
 * Members whose block sizes differ (an erroneous program) all fail with
 * -EMSGSIZE after one phase; one whose own two sides differ, or that
 * cannot get memory, takes part in that phase (refusing) and fails. */
int vd_shm_alltoall(struct vd_shm *s, const void *sbuf, int scount, struct vd_dtype *st,
		    void *rbuf, int rcount, struct vd_dtype *rt)
{
	size_t b = (size_t)rcount * (size_t)rt->size, all = (size_t)s->n * b;
	char *sp = (char *)sbuf, *rp = rbuf;
	int err = 0;

	if (!alltoall_fits(s))
		return -ENOTSUP;
	if ((size_t)scount * (size_t)st->size != b)
		err = -EINVAL;          /* its own sides differ: an erroneous program */
	else if (b && !st->contig && !(sp = malloc(all)))
		err = -ENOMEM;
	else if (b && !rt->contig && !(rp = malloc(all)))
		err = -ENOMEM;
	if (err) {
		(void)vd_shm_signed_phase(s, SHM_SIG_REFUSED);
		if (sp != sbuf)
			free(sp);
		return err;
	}
	if (sp != sbuf)
		vd_dtype_pack(st, sbuf, s->n * scount, sp);
	err = b && b >= s->direct_min
		      ? vd_shm_direct_alltoall(s, sp, rp, b, vd_shm_sig(SHM_SIG_ALLTOALL, b))
		      : alltoall_bytes(s, sp, rp, b, vd_shm_sig(SHM_SIG_ALLTOALL, b));
	if (!err && rp != rbuf)
		vd_dtype_unpack(rt, rp, all, rbuf);
	if (sp != sbuf)
		free(sp);
	if (rp != rbuf)
		free(rp);
	return err;
}
