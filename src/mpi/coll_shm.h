/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: node-local collectives through one shared segment per
 * communicator (coll_shm.c: the segment and waiting; coll_shm_ops.c: the
 * collectives).  Only coll*.c include this.
 *
 * The segment holds one phase counter per member (the futex word its
 * waiters sleep on) and SHM_NBUF data areas of one slot per member.  Every
 * collective is a run of phases numbered alike on all members (each keeps
 * its own count; the segment's copies are only compared against it).
 * Phase p's data lives in area p % SHM_NBUF and is read at the latest
 * between publishing phase p + 1 and phase p + 2, so a member about to
 * write area q first waits until every member has published phase
 * q - SHM_NBUF + 2 (vd_shm_area_claim).
 *
 * A collective whose members must agree on its shape (Alltoall's block
 * size, Reduce_scatter's counts, Allreduce's and Allgather's sizes)
 * begins with each member signing its first phase with a hash of that
 * shape; waiting for everyone at that phase each compares all
 * signatures with its own.  Members that
 * disagree then all see a difference at the same phase and stop there,
 * so an erroneous call fails everywhere and leaves the phases aligned
 * for the next collective.  A member that cannot take part (a local
 * error) signs SHM_SIG_REFUSED and stops after that one phase, failing
 * the others the same way.
 *
 * Everything in the segment is writable by the other members: it is
 * treated as untrusted -- counters are only compared, never used as
 * indices or sizes; one that reads a value no member can have published
 * (too far from this member's phase, behind what it read before, or this
 * member's own not what it wrote) fails the wait; and every wait is
 * bounded by the members' liveness.
 */
#ifndef VIADUCT_MPI_COLL_SHM_H
#define VIADUCT_MPI_COLL_SHM_H

#include <stdatomic.h>
#include <sys/types.h>

#include "typeop.h"

#define SHM_NBUF 8                      /* data areas, used round robin (a
                                         * power of two: phases wrap) */
#define SHM_SLOT (32u * 1024)           /* bytes per member per area ... */
#define SHM_SLOT_CROWDED (128u * 1024)  /* ... when the node's ranks
                                         * outnumber its CPUs: fewer,
                                         * larger steps, as each step may
                                         * cost a context switch */
#define SHM_LINE 64                     /* one cache line per counter */
#define SHM_MAX_MEMBERS 64              /* more: the segment gets too big */
#define SHM_DIRECT_CHUNK (32u * 1024)   /* bytes a direct reduction pulls
                                         * at a time (into s->bounce) */
#define SHM_BOUNCE_PAGE 4096u           /* s->bounce holds two regions of */
#define SHM_BOUNCE_REGION (SHM_DIRECT_CHUNK + SHM_BOUNCE_PAGE)  /* a chunk
                                         * at any offset in a page */

struct vd_shm {
	char *base;                     /* the mapping */
	size_t len;
	int n, me;                      /* members, this one's index */
	char *counters;                 /* member i's phase at i * SHM_LINE,
	                                 * its sleepers right after */
	char *areas;                    /* SHM_NBUF areas of n slots */
	size_t slot;                    /* bytes per member per area */
	size_t area_len;                /* n * slot */
	size_t direct_min;              /* blocks of this many bytes go by
	                                 * vd_shm_pull / vd_shm_push
	                                 * (coll_shm_direct.c; SIZE_MAX:
	                                 * never) */
	char *bounce;                   /* 2 * SHM_BOUNCE_REGION, page
	                                 * aligned: a direct reduction's
	                                 * pulled operands */
	uint32_t phase;                 /* the last phase this member began */
	uint32_t wraps;                 /* how often phase wrapped to 0 (the
	                                 * same on every member: stamps) */
	uint32_t published;             /* the last phase it published */
	pid_t *pids;                    /* members' processes (each one's own
	                                 * word, over point to point: not
	                                 * from the segment, but not checked
	                                 * by the kernel either) */
	uint32_t *seen;                 /* the furthest phase seen of each
	                                 * member (private: a counter going
	                                 * back was overwritten) */
	bool asym_fence;                /* every member's process takes part
	                                 * in the kernel's global barrier:
	                                 * sleepers fence for publishers */
	bool corrupt;                   /* a counter read what no member can
	                                 * have written: every wait fails */
	bool sig_wanted;                /* vd_shm_wait_signed is waiting: */
	bool sig_differs;               /* a member's signature of sig_phase */
	uint32_t sig_phase;             /* was not sig_word */
	uint32_t sig_word;
	bool stamp_wanted;              /* vd_shm_stamp_watch: member i is */
	const char *stamp_first;        /* there when the line at */
	size_t stamp_stride;            /* stamp_first + i * stamp_stride */
	uint64_t stamp_want;            /* bears stamp_want */
};

/* The segment of c (set up on the first call, a collective over c via
 * point to point), or NULL: c is not node-local, has one member, the
 * feature is off, or the segment could not be made.  The answer is the
 * same on every member. */
struct vd_shm *vd_shm_of(struct vd_comm *c);

/* Start the next phase: its number. */
static inline uint32_t vd_shm_next(struct vd_shm *s)
{
	if (++s->phase == 0)
		s->wraps++;
	return s->phase;
}

/* Say this member finished phase p (its writes before become visible to
 * whoever sees p), waking sleepers. */
void vd_shm_publish(struct vd_shm *s, uint32_t p);
/* Wait until member `who` (-1: every member) has published phase p or a
 * later one.  0, or -EIO when a member died or the segment's counters
 * were overwritten (said on stderr). */
int vd_shm_wait(struct vd_shm *s, int who, uint32_t p);
/* Whether member i has published phase p, looked at once (as a wait
 * would: a counter that cannot be right counts as reached and makes
 * s->corrupt true). */
bool vd_shm_at(struct vd_shm *s, int i, uint32_t p);
/* Copy len bytes at address `at` of member i's process to buf
 * (process_vm_readv): 0, or -EIO when that process or the address is
 * gone. */
int vd_shm_pull(const struct vd_shm *s, int i, void *buf, uint64_t at, size_t len);
/* Copy len bytes from buf to address `at` of member i's process
 * (process_vm_writev), as vd_shm_pull. */
int vd_shm_push(const struct vd_shm *s, int i, uint64_t at, const void *buf, size_t len);
/* vd_shm_wait for every member at p, for a member whose buffers the
 * others read or write until they publish p: after a death (-EIO) it
 * still waits for the live members (at most a couple of seconds), so
 * that none of them touches memory this member handed back. */
int vd_shm_wait_release(struct vd_shm *s, uint32_t p);
/* Say (once) that member i left `what` = v in the segment, a value no
 * member can have written: every later wait fails (-EIO). */
void vd_shm_found_bad(struct vd_shm *s, int i, const char *what, uint64_t v);
/* The area of phase p. */
char *vd_shm_area(const struct vd_shm *s, uint32_t p);
/* The area of phase p, once nobody reads its previous use any more. */
int vd_shm_area_claim(struct vd_shm *s, uint32_t p, char **area);

/* Signatures: the shape of a collective, hashed (vd_shm_sig), and one
 * that matches no shape. */
#define SHM_SIG_REFUSED 0u
#define SHM_SIG_ALLTOALL 0x2a1170a1u          /* seeds: one per collective */
#define SHM_SIG_REDUCE_SCATTER 0x5ca77e12u
#define SHM_SIG_ALLREDUCE 0xa11ed0c3u
#define SHM_SIG_REDUCE 0x4ed0ce01u
#define SHM_SIG_ALLGATHER 0xa119a7e5u
#define SHM_SIG_DONE 0xd0e5d0e5u                /* a direct reducer did its part */
#define SHM_SIG_BCAST_ONE 0xbca57001u           /* the paths of a direct Bcast */
#define SHM_SIG_BCAST_SPLIT 0xbca57a11u
#define SHM_SIG_BCAST_SEG 0xbca55e61u           /* a Bcast through the segment */
/* Sign phase p with sig (before publishing it). */
void vd_shm_sign(struct vd_shm *s, uint32_t p, uint32_t sig);
/* vd_shm_wait for every member at phase p, then -EMSGSIZE
 * (MPI_ERR_TRUNCATE: the members' sizes differ) unless all signed it
 * with sig.  Each signature is read as its member's counter is seen at
 * p, while that line is in this CPU's cache. */
int vd_shm_wait_signed(struct vd_shm *s, uint32_t p, uint32_t sig);
/* The same check spread over waits of one's own: between the two calls,
 * every member seen at phase p by vd_shm_wait or vd_shm_at has its
 * signature compared with sig; unwatch says whether one differed. */
void vd_shm_sig_watch(struct vd_shm *s, uint32_t p, uint32_t sig);
bool vd_shm_sig_unwatch(struct vd_shm *s);
/* Whether member i, seen at phase p, signed it with sig. */
bool vd_shm_signed_with(const struct vd_shm *s, int i, uint32_t p, uint32_t sig);
/* One phase without data, signed sig and checked: for a call with
 * nothing to move, or (SHM_SIG_REFUSED) a member with a local error,
 * whose fellow members' check then fails at that phase. */
int vd_shm_signed_phase(struct vd_shm *s, uint32_t sig);
/* On c's segment, if it has one, a turn taken refused by a member whose
 * own arguments are wrong, so that the others fail at that phase instead
 * of waiting for it. */
void vd_shm_refuse_turn(struct vd_comm *c);

/* Small payloads travel stamped: a writer of at most SHM_STAMPED_MAX
 * bytes at the start of a line puts a stamp of the phase and signature
 * right after them (vd_shm_stamp) before publishing the phase, and a
 * waiter that watches for it (vd_shm_stamp_watch) takes the stamp as
 * the writer's publish.  The data then arrive with the line the waiter
 * polls: one cache-line transfer instead of two in a row (the writer's
 * counter, then its data), which is most of a small collective's time
 * when the members' CPUs are far apart.  The counter is still published
 * (sleepers wait on it; a member in another collective reads it) and a
 * stale or foreign stamp is only ever compared, never trusted: it does
 * not match (the stamp names the phase, how often the phase counters
 * wrapped, and the signature), and the wait goes by the counter as
 * without stamps.  Only in an erroneous program could a member's own
 * larger payload hold, at the stamp's bytes, the very value another
 * member waits for (a chance of 2^-64 unless crafted): that reader then
 * takes the line's bytes as data and misses the error, reading nothing
 * outside the line. */
#define SHM_STAMPED_MAX 48
#define SHM_STAMP_AT SHM_STAMPED_MAX
/* Stamp phase p (this member's latest), signed sig, after the bytes at
 * the start of line. */
void vd_shm_stamp(const struct vd_shm *s, char *line, uint32_t p, uint32_t sig);
/* Until vd_shm_stamp_unwatch, a wait at phase p takes member i as there
 * when the line at first + i * stride bears p's stamp signed sig
 * (stride 0: one line, the one member waited for). */
void vd_shm_stamp_watch(struct vd_shm *s, const char *first, size_t stride, uint32_t p,
			uint32_t sig);
void vd_shm_stamp_unwatch(struct vd_shm *s);

/* Fold v into the signature h (never SHM_SIG_REFUSED for a real shape:
 * the result is made odd). */
static inline uint32_t vd_shm_sig(uint32_t h, uint64_t v)
{
	h ^= (uint32_t)v ^ (uint32_t)(v >> 32);
	h *= 0x01000193u;
	return (h ^ (h >> 15)) | 1u;
}

int vd_shm_barrier(struct vd_shm *s);
int vd_shm_bcast(struct vd_shm *s, void *buf, int count, struct vd_dtype *t, int root);
/* A Bcast member that published phase p, the first, and found the
 * root's signature not its own: a root on the direct path or one that
 * refused stops at p, and so does this member; one on the segment path
 * (another size) publishes as many phases as its size takes, which
 * this member follows without copying.  -EMSGSIZE, or -EIO (a wait
 * failed, or the root's size in the segment is impossible: reported). */
int vd_shm_bcast_stray(struct vd_shm *s, int root, uint32_t p);
/* A Bcast turn taken refused by a member that cannot take part (its
 * arguments are wrong): the others fail as they would with it out of
 * memory.  -EINVAL, or an error of the waits. */
int vd_shm_bcast_refused(struct vd_shm *s, int root);
/* Whether vd_shm_reduce takes this reduction (the same answer on every
 * member: it depends on the op and type only). */
bool vd_shm_reduce_fits(const struct vd_dtype *t, MPI_Op op);
/* root -1: allreduce (out at every member).  sig: the signature every
 * member must have given, or 0 for none.  Every member that waits at
 * the first phase checks it: with a root, all but the non-roots whose
 * whole vector is one small chunk, which publish one phase and leave --
 * so on a mismatch every member stops after that phase, and only those
 * may not know. */
int vd_shm_reduce(struct vd_shm *s, const void *in, void *out, int count, MPI_Datatype dt,
		  MPI_Op op, int root, uint32_t sig);
/* Reduce_scatter of a vector of `total` elements: this member's piece
 * is elements [b0, b1), written to out; in == out is in place (in holds
 * the whole vector).  sig: the signature every member must have given.
 * 0, an error of vd_shm_wait / vd_shm_wait_signed, or (as from
 * vd_shm_reduce) an MPI_ERR_* of the op, which vd_shm_reduce_fits
 * rules out. */
int vd_shm_reduce_scatter(struct vd_shm *s, const void *in, void *out, size_t total,
			  size_t b0, size_t b1, MPI_Datatype dt, MPI_Op op, uint32_t sig);
/* Allgather in place: member i's piece is count elements of t at
 * buf + i * count extents; this member's is there already, and also at
 * own (contiguous bytes; NULL: only in buf), where the others may read it. */
int vd_shm_allgather(struct vd_shm *s, void *buf, int count, struct vd_dtype *t,
		     const void *own);
/* Alltoall (not in place): block i of each buffer is count elements at
 * i * count extents. */
int vd_shm_alltoall(struct vd_shm *s, const void *sbuf, int scount, struct vd_dtype *st,
		    void *rbuf, int rcount, struct vd_dtype *rt);
/* An Alltoall's turn taken refused by a member whose own arguments are
 * wrong; -ENOTSUP where the others go point to point. */
int vd_shm_alltoall_refused(struct vd_shm *s);

/* The same with each block copied once, straight from the member that
 * holds it (coll_shm_direct.c): for blocks of s->direct_min bytes and
 * more, contiguous (packed by the caller).  Allgather's pieces are at
 * base + i * pb, this member's there already and at own, where the
 * others read it; Alltoall's sig as for the segment's. */
int vd_shm_direct_bcast(struct vd_shm *s, void *data, size_t bytes, int root);
/* Reduce (root >= 0) or Allreduce (root -1) of `count` elements, each
 * member reducing its slice of the vector from everyone's input and
 * writing it where the result goes (sig as for vd_shm_reduce). */
int vd_shm_direct_reduce(struct vd_shm *s, const void *in, void *out, size_t count,
			 MPI_Datatype dt, MPI_Op op, int root, uint32_t sig);
/* Bytes at the start of its slot where a member on a direct path says
 * where its buffers are (coll_shm_direct.c); a Bcast root on the
 * segment's path keeps its size beyond them (coll_shm_ops.c). */
#define SHM_EXPOSED_LEN 32
/* From here a direct Bcast between two members with a CPU each is
 * copied by both (coll_shm_direct.c); a constant, as every member must
 * take the same path. */
#define SHM_BCAST_SPLIT_MIN (256 * 1024)
/* Whether blocks of `bytes` go directly on this segment for the
 * collectives with two waits for every member (Allgather, Reduce,
 * Allreduce): not on a crowded node (its larger slots), where each wait
 * costs a context switch, more than the copies saved (4 ranks on 2
 * CPUs, Allgather: 16 KiB 21 against 13 us, 1 MiB 1.19 against 1.01 ms). */
static inline bool vd_shm_direct_roomy(const struct vd_shm *s, size_t bytes)
{
	return bytes >= s->direct_min && s->slot == SHM_SLOT;
}
/* Reductions (Reduce, Allreduce) go directly only from this many times
 * the threshold: each chunk of a slice costs a system call to pull and
 * another to push, and up to 32 KiB that was more than the segment's
 * two copies (2 ranks, interleaved runs: Reduce of 16 KiB 4.9-7.1 us
 * direct against 2.1-2.6 through the segment in most runs, Allreduce
 * 6.6-7.0 against 2.5-2.7; from 64 KiB the segment's time doubled in
 * some runs, the direct path's did not). */
#define SHM_DIRECT_REDUCE_FACTOR 4
static inline bool vd_shm_direct_reduces(const struct vd_shm *s, size_t bytes)
{
	return bytes / SHM_DIRECT_REDUCE_FACTOR >= s->direct_min && s->slot == SHM_SLOT;
}
int vd_shm_direct_allgather(struct vd_shm *s, char *base, size_t pb, const void *own,
			    uint32_t sig);
int vd_shm_direct_alltoall(struct vd_shm *s, const char *sb, char *rb, size_t b, uint32_t sig);

#endif /* VIADUCT_MPI_COLL_SHM_H */
