/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: node-local Bcast, Allgather and Alltoall that copy each
 * block once, reading it straight out of the member that holds it with
 * process_vm_readv, instead of twice through the shared segment (into a
 * slot, then out of it).  The segment then carries only where each
 * member's buffer is, and the phases that say when it may be read and
 * when everyone is done with it.
 *
 * Reduce and Allreduce go the same way: every member reduces its own
 * slice of the vector, pulling that slice of everyone's input a chunk at
 * a time, and writes the result (process_vm_writev) straight into the
 * root's output, or into everyone's.  Slices of a member's buffer are
 * read and written by their one reducer only, in that order, so an
 * output that is also the input (in place) is safe.
 *
 * Worth it from a few KiB a block (VIADUCT_MPI_COLL_DIRECT_MIN): two
 * copies through the segment move every line from the writer's cache to
 * the reader's, while one read from the owner's buffer (as the
 * point-to-point get does) moves each line once.  The members agree on
 * the threshold, and that every one can read every other, when the
 * segment is made (coll_shm.c), so all take the same path.
 *
 * What a member leaves in its slot is untrusted like the rest of the
 * segment: its length is checked against this member's own, and its
 * address is only ever handed to the kernel, which checks it against the
 * owner's mappings.  A member whose buffer others read or write leaves
 * only once all of them have published that they are done with it, or,
 * after a member died, once every live one has (release_phase); every
 * member publishes that phase on every path after its first.  The one
 * exception is a first phase whose signatures differ (sizes that
 * differ): every member then stops at it, and one that read from a
 * member before it saw the difference may still be reading when that
 * member returns -- a read only, whose result it throws away.
 */
#include <errno.h>
#include <string.h>

#include "coll_shm.h"
#include "util/copy.h"

/* Where member me's buffers lie in its own process. */
struct shm_exposed {
	uint64_t addr;                  /* what the others read */
	uint64_t len;
	uint64_t out;                   /* a reduction's result, 0: none */
	uint64_t reserved;
};
_Static_assert(sizeof(struct shm_exposed) == SHM_EXPOSED_LEN, "the layout in a slot");
_Static_assert(sizeof(struct shm_exposed) <= SHM_SLOT, "fits a slot");

static char *own_slot(const struct vd_shm *s, char *area, int i)
{
	return area + (size_t)i * s->slot;
}

static void expose_both(struct vd_shm *s, char *area, const void *buf, size_t len, void *out)
{
	struct shm_exposed e = { (uint64_t)(uintptr_t)buf, len, (uint64_t)(uintptr_t)out, 0 };

	memcpy(own_slot(s, area, s->me), &e, sizeof(e));
}

static void expose(struct vd_shm *s, char *area, const void *buf, size_t len)
{
	struct shm_exposed e = { (uint64_t)(uintptr_t)buf, len, 0, 0 };

	memcpy(own_slot(s, area, s->me), &e, sizeof(e));
}

/* Member i's buffer address, if it exposed exactly `want` bytes
 * (-EMSGSIZE otherwise: the members' sizes differ).  Read once: the
 * member may write its slot again meanwhile. */
static int exposed_both(const struct vd_shm *s, char *area, int i, size_t want, uint64_t *addr,
			uint64_t *out)
{
	struct shm_exposed e;

	memcpy(&e, own_slot(s, area, i), sizeof(e));
	if (e.len != want)
		return -EMSGSIZE;
	*addr = e.addr;
	*out = e.out;
	return 0;
}

static int exposed(const struct vd_shm *s, char *area, int i, size_t want, uint64_t *addr)
{
	uint64_t out;

	return exposed_both(s, area, i, want, addr, &out);
}

/* The last phase of a collective whose members read or write each
 * other's buffers: published on every path once this member is done
 * with the others' (signed: whether it did its part, which others'
 * results may depend on), and waited for until nobody still touches this
 * member's.  Its release store is what makes the pushes into a member's
 * output visible to that member (the kernel's copy precedes it). */
static int release_phase(struct vd_shm *s, int err)
{
	uint32_t done = vd_shm_next(s);
	int err2;

	vd_shm_sign(s, done, err ? SHM_SIG_REFUSED : SHM_SIG_DONE);
	vd_shm_publish(s, done);
	err2 = vd_shm_wait_signed(s, done, SHM_SIG_DONE);
	if (err2 == -EIO)
		err2 = vd_shm_wait_release(s, done);
	else if (err2 == -EMSGSIZE)
		err2 = -EIO;            /* a member could not do its part */
	return err ? err : err2;
}

/* Phase p's area claimed, buf exposed in this member's slot, the phase
 * signed with sig and published, and sig watched for in the waits that
 * follow (vd_shm_sig_unwatch says whether a member's differed). */
static int expose_signed(struct vd_shm *s, uint32_t p, char **area, const void *buf,
			 size_t len, uint32_t sig)
{
	int err = vd_shm_area_claim(s, p, area);

	if (err)
		return err;
	expose(s, *area, buf, len);
	vd_shm_sign(s, p, sig);
	vd_shm_publish(s, p);
	vd_shm_sig_watch(s, p, sig);
	return 0;
}

/* One phase: the root exposes its buffer and waits until every other
 * member has read it and published the same phase.  The phase is signed
 * with the path, so that a member on bcast_split's (another size) stops
 * at it as well, and a member that could not read it (its size differs)
 * signs it refused, so that the root fails too; one that finds the root
 * on the segment's path follows the root's phases (vd_shm_bcast_stray). */
static int bcast_one(struct vd_shm *s, void *data, size_t bytes, int root)
{
	uint32_t p = vd_shm_next(s);
	uint64_t at;
	char *area;
	bool stray;
	int err;

	if (s->me == root) {
		if ((err = expose_signed(s, p, &area, data, bytes, SHM_SIG_BCAST_ONE)))
			return err;
		err = vd_shm_wait_release(s, p);
		return vd_shm_sig_unwatch(s) && !err ? -EMSGSIZE : err;
	}
	area = vd_shm_area(s, p);
	vd_shm_sign(s, p, SHM_SIG_BCAST_ONE);   /* before the wait, which checks ours too */
	vd_shm_sig_watch(s, p, SHM_SIG_BCAST_ONE);
	err = vd_shm_wait(s, root, p);
	stray = vd_shm_sig_unwatch(s) && !err;
	if (!err && !stray && !(err = exposed(s, area, root, bytes, &at)))
		err = vd_shm_pull(s, root, data, at, bytes);
	if (err || stray)
		vd_shm_sign(s, p, SHM_SIG_REFUSED);     /* the root fails too */
	vd_shm_publish(s, p);           /* done with it, even after an error */
	return stray ? vd_shm_bcast_stray(s, root, p) : err;
}

/* Two members with a CPU each and a large message: the root writes the
 * first half into the other's buffer while the other reads the second
 * half, both cores copying at once (as the point-to-point split does),
 * where one read of the whole left the root's core idle.  Both expose
 * their buffer at the first phase, signed with the path: a member that
 * finds the other on another path (another size) stops there, as that
 * one does, or follows a root on the segment's (vd_shm_bcast_stray). */
static int bcast_split(struct vd_shm *s, void *data, size_t bytes, int root)
{
	uint32_t p = vd_shm_next(s);
	int other = 1 - s->me;
	size_t half = (bytes / 2) & ~(size_t)4095;      /* a multiple of the page size */
	uint64_t at;
	char *area;
	int err;

	if ((err = expose_signed(s, p, &area, data, bytes, SHM_SIG_BCAST_SPLIT)))
		return err;
	err = vd_shm_wait(s, other, p);
	if (vd_shm_sig_unwatch(s))
		return err ? err : s->me == root ? -EMSGSIZE : vd_shm_bcast_stray(s, root, p);
	if (!err)
		err = exposed(s, area, other, bytes, &at);
	if (!err)
		err = s->me == root ? vd_shm_push(s, other, at, data, half)
				    : vd_shm_pull(s, other, (char *)data + half, at + half,
						  bytes - half);
	return release_phase(s, err);
}

int vd_shm_direct_bcast(struct vd_shm *s, void *data, size_t bytes, int root)
{
	if (s->n == 2 && bytes >= SHM_BCAST_SPLIT_MIN && s->slot == SHM_SLOT)
		return bcast_split(s, data, bytes, root);
	return bcast_one(s, data, bytes, root);
}

/* Read b bytes at `from` in member i's exposed buffer (exposed_len
 * bytes) into base + i * b. */
static int pull_block(struct vd_shm *s, char *area, int i, size_t exposed_len, char *base,
		      size_t b, uint64_t from)
{
	uint64_t at;
	int err = exposed(s, area, i, exposed_len, &at);

	return err ? err : vd_shm_pull(s, i, base + (size_t)i * b, at + from, b);
}

/* pull_block from every other member, each as soon as it has published
 * phase p (its buffer exposed), those already there first: with more
 * ranks than CPUs a member reads from the ones that have run while the
 * rest wait for their turn, where waiting for all before the first read
 * cost every member another turn.  Stops at the first error, or before
 * reading a member whose signature differs from the one watched. */
static int pull_as_exposed(struct vd_shm *s, char *area, uint32_t p, size_t exposed_len,
			   char *base, size_t b, uint64_t from)
{
	bool left[SHM_MAX_MEMBERS] = { false };
	int n_left = s->n - 1;

	for (int i = 0; i < s->n; i++)
		left[i] = i != s->me;
	while (n_left > 0) {
		int first_away = -1, err;

		for (int k = 1; k < s->n; k++) {
			int i = (s->me + k) % s->n;       /* not all at member 0 at once */

			if (!left[i])
				continue;
			if (!vd_shm_at(s, i, p)) {
				first_away = first_away < 0 ? i : first_away;
				continue;
			}
			if (s->corrupt)
				return -EIO;
			if (s->sig_wanted && s->sig_differs)
				return -EMSGSIZE;
			left[i] = false;
			n_left--;
			if ((err = pull_block(s, area, i, exposed_len, base, b, from)))
				return err;
		}
		if (first_away >= 0 && (err = vd_shm_wait(s, first_away, p)))
			return err;
	}
	return 0;
}

/* pull_as_exposed under the signature watched since expose_signed: true
 * (*err -EMSGSIZE) when a member signed the phase otherwise, once every
 * member's signature is seen, so that all stop at this phase; else false
 * with the pull's result in *err. */
static bool pull_or_stop(struct vd_shm *s, char *area, uint32_t p, size_t exposed_len,
			 char *base, size_t b, uint64_t from, int *err)
{
	*err = pull_as_exposed(s, area, p, exposed_len, base, b, from);
	if (*err)
		(void)vd_shm_wait(s, -1, p);    /* every signature seen */
	if (!vd_shm_sig_unwatch(s))
		return false;
	*err = -EMSGSIZE;
	return true;
}

/* The first phase is signed with sig (the piece's size), as the
 * segment's Allgather signs its own: members whose sizes differ all stop
 * there, whichever path each took. */
int vd_shm_direct_allgather(struct vd_shm *s, char *base, size_t pb, const void *own,
			    uint32_t sig)
{
	uint32_t p = vd_shm_next(s);
	char *area;
	int err;

	if ((err = expose_signed(s, p, &area, own, pb, sig)))
		return err;
	if (pull_or_stop(s, area, p, pb, base, pb, 0, &err))
		return err;
	return release_phase(s, err);
}

/* The first phase is signed with sig (b's signature), as the segment's
 * Alltoall signs its own, and every member sees every signature at that
 * phase before it either stops there (-EMSGSIZE: members whose sizes
 * differ all stop, whichever path each took) or goes on to the release
 * phase: all decide alike.  A member may have read from one that
 * stopped, after it stopped; it then stops too, and what it read is not
 * its result. */
int vd_shm_direct_alltoall(struct vd_shm *s, const char *sb, char *rb, size_t b, uint32_t sig)
{
	uint32_t p = vd_shm_next(s);
	char *area;
	int err;

	if ((err = expose_signed(s, p, &area, sb, (size_t)s->n * b, sig)))
		return err;
	/* Member i's block for this member: the me-th of its send buffer. */
	if (pull_or_stop(s, area, p, (size_t)s->n * b, rb, b, (uint64_t)s->me * b, &err))
		return err;
	if (!err)
		vd_copy(rb + (size_t)s->me * b, sb + (size_t)s->me * b, b);
	return release_phase(s, err);
}

/* ---- Reduce / Allreduce ---------------------------------------------------------- */

struct direct_red {
	MPI_Datatype dt;
	MPI_Op op;
	size_t esz;
	int root;                       /* -1: allreduce */
	const char *in;                 /* this member's input */
	char *out;                      /* its result, where it wants one */
	uint64_t in_at[SHM_MAX_MEMBERS];        /* every member's, as exposed */
	uint64_t out_at[SHM_MAX_MEMBERS];
};

/* Whether a copy between a and b crawls because of where the two lie
 * in their pages, either way round: the kernel's copy in
 * process_vm_readv / process_vm_writev hits the same 4 KiB aliasing as
 * memcpy's `rep movsb` (util/copy.h; dst 1-31 bytes past src: 5 times
 * slower on this machine's AMD EPYC, 1-16 bytes before: 1.5 times). */
static bool copy_aliases(uint64_t a, uint64_t b)
{
	const void *pa = (const void *)(uintptr_t)a, *pb = (const void *)(uintptr_t)b;

	return vd_copy_aliases(pa, pb) || vd_copy_aliases(pb, pa);
}

/* Whether a result at `at` would alias a copy out to an output at off. */
static bool copy_out_aliases(const struct vd_shm *s, const struct direct_red *r, uint64_t at,
			     size_t off)
{
	for (int i = 0; i < s->n; i++)
		if ((r->root < 0 || i == r->root) &&
		    copy_aliases(i == s->me ? (uint64_t)(uintptr_t)r->out + off : r->out_at[i] + off,
				 at))
			return true;
	return false;
}

/* In a bounce region (page aligned, a page longer than a chunk), the
 * place at from's offset in a page: a pull from `from` lands there
 * without aliasing. */
static char *at_offset_of(char *region, uint64_t from)
{
	return region + (from & (SHM_BOUNCE_PAGE - 1));
}

/* Where in a bounce region to pull from `from` and copy the result to
 * the outputs at off: at from's offset in its page, or up to three lines
 * on where a copy out would alias (else at from's offset all the same). */
static char *bounce_at(const struct vd_shm *s, const struct direct_red *r, char *region,
		       uint64_t from, size_t off)
{
	for (uint64_t k = 0; k < 4; k++) {
		char *at = at_offset_of(region, from + k * SHM_LINE);

		if (!copy_out_aliases(s, r, (uint64_t)(uintptr_t)at, off))
			return at;
	}
	return at_offset_of(region, from);
}

/* Elements [a, b) of member j's input: this member's own in place,
 * another's pulled into buf. */
static int operand(struct vd_shm *s, const struct direct_red *r, int j, size_t a, size_t b,
		   char *buf, const char **at)
{
	if (j == s->me) {
		*at = r->in + a * r->esz;
		return 0;
	}
	*at = buf;
	return vd_shm_pull(s, j, buf, r->in_at[j] + a * r->esz, (b - a) * r->esz);
}

/* The result of elements [a, b) to every member that wants it. */
static int deliver(struct vd_shm *s, const struct direct_red *r, const char *acc, size_t a,
		   size_t b)
{
	size_t off = a * r->esz, len = (b - a) * r->esz;
	int err = 0;

	for (int i = 0; i < s->n && !err; i++) {
		if (r->root >= 0 && i != r->root)
			continue;
		if (i == s->me)
			vd_copy(r->out + off, acc, len);
		else
			err = vd_shm_push(s, i, r->out_at[i] + off, acc, len);
	}
	return err;
}

/* Elements [a, b): x_0 op (x_1 op (... op x_{n-1})), the order of the
 * segment's combine_slots, so both paths give bitwise the same result. */
static int reduce_span(struct vd_shm *s, const struct direct_red *r, size_t a, size_t b)
{
	char *acc = bounce_at(s, r, s->bounce, r->in_at[s->n - 1] + a * r->esz, a * r->esz);
	const char *x;
	int err = operand(s, r, s->n - 1, a, b, acc, &x);

	if (!err && x != acc)
		vd_copy(acc, x, (b - a) * r->esz);
	for (int j = s->n - 2; j >= 0 && !err; j--) {
		char *tmp = at_offset_of(s->bounce + SHM_BOUNCE_REGION, r->in_at[j] + a * r->esz);

		if (!(err = operand(s, r, j, a, b, tmp, &x)))
			err = vd_op_apply(r->op, x, acc, (int)(b - a), r->dt);
	}
	return err ? err : deliver(s, r, acc, a, b);
}

/* How much of the vector member i reduces, relative to the others: a
 * Reduce's root pulls every other member's part of its slice, and each
 * other member pulls as much and also pushes its result to the root, so
 * the root takes n parts to their n - 1 and all finish together (2
 * ranks: two thirds to the root).  An Allreduce's members all push. */
static size_t slice_weight(const struct vd_shm *s, const struct direct_red *r, int i)
{
	return r->root < 0 ? 1 : i == r->root ? (size_t)s->n : (size_t)s->n - 1;
}

/* This member's slice of count elements: [*lo, *hi). */
static void slice_of(const struct vd_shm *s, const struct direct_red *r, size_t count,
		     size_t *lo, size_t *hi)
{
	size_t before = 0, total = 0;

	for (int i = 0; i < s->n; i++) {
		total += slice_weight(s, r, i);
		if (i < s->me)
			before += slice_weight(s, r, i);
	}
	*lo = count * before / total;
	*hi = count * (before + slice_weight(s, r, s->me)) / total;
}

/* This member's slice, a chunk at a time. */
static int reduce_slice(struct vd_shm *s, const struct direct_red *r, size_t count)
{
	size_t lo, hi;
	size_t per = SHM_DIRECT_CHUNK / r->esz;         /* >= 1: esz <= SHM_SLOT */
	_Static_assert(SHM_DIRECT_CHUNK >= SHM_SLOT, "a chunk holds an element");
	int err = 0;

	slice_of(s, r, count, &lo, &hi);
	for (size_t a = lo; a < hi && !err; a += per)
		err = reduce_span(s, r, a, hi - a < per ? hi : a + per);
	return err;
}

/* Every member's buffers, each exposing count elements. */
static int read_exposed(const struct vd_shm *s, char *area, size_t bytes, struct direct_red *r)
{
	int err = 0;

	for (int i = 0; i < s->n && !err; i++)
		err = exposed_both(s, area, i, bytes, &r->in_at[i], &r->out_at[i]);
	return err;
}

int vd_shm_direct_reduce(struct vd_shm *s, const void *in, void *out, size_t count,
			 MPI_Datatype dt, MPI_Op op, int root, uint32_t sig)
{
	struct direct_red r = { .dt = dt, .op = op, .esz = (size_t)vd_dtype_get(dt)->size,
				.root = root, .in = in, .out = out };
	bool wants = root < 0 || s->me == root;
	uint32_t p = vd_shm_next(s);
	char *area;
	int err;

	if ((err = vd_shm_area_claim(s, p, &area)))
		return err;
	expose_both(s, area, in, count * r.esz, wants ? out : NULL);
	if (sig)
		vd_shm_sign(s, p, sig);
	vd_shm_publish(s, p);
	err = sig ? vd_shm_wait_signed(s, p, sig) : vd_shm_wait(s, -1, p);
	if (err == -EMSGSIZE)
		return err;     /* every member stops here */
	if (!err && !(err = read_exposed(s, area, count * r.esz, &r)))
		err = reduce_slice(s, &r, count);
	/* Even after an error: the others may still read this member's
	 * input and write its output; and a slice not done fails them. */
	return release_phase(s, err);
}
