/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: nonblocking collectives as schedules (nbc_sched.c), built
 * by the algorithms of nbc_reduce.c and nbc_move.c, started by the API
 * functions of nbc_api.c.
 *
 * A schedule is a list of steps -- post a send, post a receive, apply an
 * op, copy -- cut into rounds by fences.  Steps run in order; sends and
 * receives are only posted, and a fence waits (without blocking: the
 * progress engine comes back) until everything posted before it is done.
 * So one round's transfers all overlap, and each round sees the data of
 * the rounds before it.
 *
 * Every schedule owns a tag of its own on the communicator's collective
 * context (blocking collectives use VD_COLL_TAG there, the node-aware
 * views other contexts): collectives started in the same order on every
 * rank draw the same tag, so any number may be outstanding at once and
 * none matches another's messages.
 */
#ifndef VIADUCT_MPI_NBC_H
#define VIADUCT_MPI_NBC_H

#include "typeop.h"

struct vd_nbc;

/* A new, empty schedule on c (it keeps c alive until it ends); NULL when
 * out of memory. */
struct vd_nbc *vd_nbc_new(struct vd_comm *c);
/* Hand s to a new collective request in *req and run it as far as it
 * goes without waiting.  On failure (also a failure recorded while
 * building) s is freed and the MPI error returned; *req is then
 * MPI_REQUEST_NULL. */
int vd_nbc_start(struct vd_nbc *s, MPI_Comm comm, MPI_Request *req);

/* Building.  The step functions record an error in s (out of memory, a
 * count past INT_MAX) that vd_nbc_start reports; they need no checks. */
void vd_nbc_send(struct vd_nbc *s, const void *buf, int count, MPI_Datatype dt, int peer);
void vd_nbc_recv(struct vd_nbc *s, void *buf, int count, MPI_Datatype dt, int peer);
/* inout = in op inout, count elements of dt. */
void vd_nbc_op(struct vd_nbc *s, MPI_Op op, const void *in, void *inout, int count,
	       MPI_Datatype dt);
/* Copy sc elements of sdt at src to dst as rc elements of rdt (as
 * vd_coll_local_copy: also packs into / unpacks from MPI_BYTE). */
void vd_nbc_copy(struct vd_nbc *s, const void *src, int sc, MPI_Datatype sdt, void *dst,
		 int rc, MPI_Datatype rdt);
void vd_nbc_fence(struct vd_nbc *s);
/* Scratch memory freed with the schedule: room for count elements of dt
 * in dt's own layout, or bytes.  NULL (error recorded) when out of
 * memory; callers stop building then. */
void *vd_nbc_scratch(struct vd_nbc *s, MPI_Datatype dt, int count);
void *vd_nbc_bytes(struct vd_nbc *s, size_t bytes);
/* Record an MPI error found while building. */
void vd_nbc_fail(struct vd_nbc *s, int err);

/* nbc_reduce.c: the synchronising and reducing collectives.  Arguments
 * checked, MPI_IN_PLACE resolved: `in` is the input, never MPI_IN_PLACE. */
void vd_nbc_barrier(struct vd_nbc *s, struct vd_comm *c);
void vd_nbc_bcast(struct vd_nbc *s, void *buf, int count, MPI_Datatype dt, int root,
		  struct vd_comm *c);
void vd_nbc_reduce(struct vd_nbc *s, const void *in, void *out, int count, MPI_Datatype dt,
		   MPI_Op op, int root, struct vd_comm *c);
void vd_nbc_allreduce(struct vd_nbc *s, const void *in, void *out, int count,
		      MPI_Datatype dt, MPI_Op op, struct vd_comm *c);
void vd_nbc_scan(struct vd_nbc *s, const void *in, void *out, int count, MPI_Datatype dt,
		 MPI_Op op, struct vd_comm *c, bool exclusive);
/* counts[]: every rank's block; total their sum (> 0). */
void vd_nbc_reduce_scatter(struct vd_nbc *s, const void *in, void *out, const int *counts,
			   int total, MPI_Datatype dt, MPI_Op op, struct vd_comm *c);

/* nbc_move.c: data movement (the sides checked as coll_move.c does). */
void vd_nbc_gather(struct vd_nbc *s, const struct vd_coll_side *S,
		   const struct vd_coll_side *R, int root, struct vd_comm *c);
void vd_nbc_scatter(struct vd_nbc *s, const struct vd_coll_side *S,
		    const struct vd_coll_side *R, int root, struct vd_comm *c);
void vd_nbc_allgather(struct vd_nbc *s, const struct vd_coll_side *S,
		      const struct vd_coll_side *R, struct vd_comm *c);
void vd_nbc_alltoall(struct vd_nbc *s, const struct vd_coll_side *S,
		     const struct vd_coll_side *R, struct vd_comm *c);

/* Alltoallw's side: per-rank counts, byte displacements and types. */
struct vd_coll_wside {
	const void *buf;
	const int *counts, *displs;
	const MPI_Datatype *dts;
};
void vd_nbc_alltoallw(struct vd_nbc *s, const struct vd_coll_wside *S,
		      const struct vd_coll_wside *R, struct vd_comm *c);

/* Where rank i's piece of a side lies, and how many elements. */
static inline char *vd_side_at(const struct vd_coll_side *s, int i)
{
	long idx = s->vec ? s->displs[i] : (long)i * s->count;

	return (char *)s->buf + idx * s->t->extent;
}

static inline int vd_side_count(const struct vd_coll_side *s, int i)
{
	return s->vec ? s->counts[i] : s->count;
}

#endif /* VIADUCT_MPI_NBC_H */
