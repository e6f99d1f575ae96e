/* SPDX-License-Identifier: MIT */
/*
 * One-sided communication (win.c, win_ops.c, win_acc.c, win_sync.c).
 *
 * A window keeps a private duplicate of its communicator: its context id
 * names the window in every control message (VD_MSG_RMA, ctx field), and
 * its collectives (fence, free) cannot mix with the user's.
 *
 * Put and Get on windows with fixed memory are RDMA writes and reads
 * straight into the target's registered window (one per contiguous piece
 * of the target datatype); the target's CPU takes no part.  Accumulates,
 * and everything on dynamic windows, are active messages executed by the
 * target's progress engine, one message at a time (win_acc.c).
 */
#ifndef VIADUCT_MPI_WIN_H
#define VIADUCT_MPI_WIN_H

#include "engine.h"

/* What a window tells every member about its memory (allgathered). */
struct vd_win_peer {
	uint64_t base;
	uint64_t size;
	int32_t disp_unit;
	int32_t err;                    /* its set-up failed (MPI error class) */
	uint32_t mh[VD_T_N];            /* registration on each transport */
};

/* An attached region of a dynamic window. */
struct vd_win_region {
	uintptr_t lo, hi;
	struct vd_win_region *next;
};

/* A lock request waiting at the target. */
struct vd_win_waiter {
	int origin;
	bool exclusive;
	struct vd_win_waiter *next;
};

struct vd_win {
	MPI_Win handle;
	MPI_Comm comm;                  /* private duplicate */
	struct vd_comm *c;
	uint32_t ctx;
	int rank, size;
	int flavor;
	void *base;
	MPI_Aint bytes;                 /* MPI_WIN_SIZE */
	int disp_unit;
	int model;                      /* MPI_WIN_UNIFIED */
	MPI_Errhandler errh;            /* holds a reference (errh_user.h) */
	char name[MPI_MAX_OBJECT_NAME];
	struct vd_attr *attrs;          /* attr.c, keyvals of VD_ATTR_WIN */
	MPI_Info info;                  /* hints as given, or MPI_INFO_NULL */
	bool registered[VD_T_N];
	VIP_MEM_HANDLE mh[VD_T_N];
	struct vd_win_peer *peers;      /* [size] */
	void *own_mem;                  /* Win_allocate: free()d at Win_free */
	void *shm;                      /* Win_allocate_shared: the mapping */
	size_t shm_len;
	struct vd_win_region *regions;  /* dynamic */
	/* operations in flight, as origin */
	int *pending;                   /* [size] */
	int pending_all;
	int deferred_err;               /* first error of a finished operation */
	/* access epochs */
	bool fence_epoch;
	bool *locked;                   /* [size]: a lock (or lock_all) held */
	bool *granted;                  /* [size]: the target granted it */
	bool *lock_excl;                /* [size] */
	bool lock_all;
	int *access;                    /* Win_start's group (comm ranks), or NULL */
	int naccess;
	int *posts;                     /* [size]: posts received, not yet used */
	/* exposure epochs */
	bool exposing;                  /* between Win_post and Win_wait */
	int nexpose;
	int completes;                  /* completes received */
	/* the lock this rank serves as target */
	int lock_shared;
	bool lock_exclusive;
	struct vd_win_waiter *waiting, **waiting_tail;
};

/* Kinds of VD_MSG_RMA (the tag field). */
enum vd_win_msg {
	VD_WIN_AM = 1,                  /* accumulate family: win_acc.c */
	VD_WIN_AM_REPLY = 2,
	VD_WIN_LOCK = 3,                /* flags: 1 = exclusive */
	VD_WIN_GRANT = 4,
	VD_WIN_UNLOCK = 5,
	VD_WIN_POST = 6,
	VD_WIN_COMPLETE = 7,
};

/* An operation as origin; its vd_req (kind VD_REQ_RMA) points here. */
struct vd_rma_op {
	struct vd_win *w;
	int target;                     /* comm rank */
	int parts;                      /* pieces in flight (+1 while issuing) */
	int err;                        /* MPI error class */
	bool user;                      /* a request the user waits for */
	void *tmp;                      /* packed copy, free()d at the end */
	/* where fetched bytes land (packed), and the user's buffer to unpack
	 * them into at the end when that is not contiguous */
	uint8_t *dest;
	size_t dest_len;
	void *ubuf;
	struct vd_dtype *ut;
	/* registration of the local side of RDMA */
	void *reg_addr;
	VIP_MEM_HANDLE reg_mh;
	bool reg;
};

/* win.c */
struct vd_win *vd_win_get(MPI_Win win);
struct vd_win *vd_win_by_ctx(uint32_t ctx);
/* Report code on the window (its error handler); MPI_SUCCESS passes. */
int vd_win_raise(struct vd_win *w, int code, const char *fn);
/* The window, or NULL with *err set to an error raised on MPI_COMM_WORLD
 * (the handle is invalid, MPI is not running). */
struct vd_win *vd_win_arg(MPI_Win win, const char *fn, int *err);
/* Comm rank of world rank wr in w, or -1. */
int vd_win_rank_of(const struct vd_win *w, int wr);
/* Progress until *flag (or the counter) says done. */
void vd_win_wait_flag(const bool *flag);
void vd_win_wait_zero(const int *counter);
/* Send a control message of kind to comm rank `to` (to == rank:
 * handled at once). */
void vd_win_ctl(struct vd_win *w, int to, enum vd_win_msg kind, uint8_t flags);

/* win_ops.c: operations as origin. */
struct vd_rma_args {
	const void *obuf;
	int ocount;
	struct vd_dtype *ot;            /* NULL: invalid */
	int target;
	MPI_Aint disp;
	int tcount;
	struct vd_dtype *tt;
	MPI_Request *request;           /* request forms, else NULL */
};
typedef int (*vd_rma_start_fn)(struct vd_req *r, const struct vd_rma_args *a);
struct vd_req *vd_rma_op_new(struct vd_win *w, int target, bool user);
/* One piece of r ended (err: an MPI error class); the last one finishes
 * the operation. */
void vd_rma_part_done(struct vd_req *r, int err);
int vd_rma_landing(struct vd_rma_op *op, void *buf, int count, struct vd_dtype *t);
int vd_rma_check(struct vd_win *w, const struct vd_rma_args *a, bool *skip);
/* Check a, create the operation and run start (which issues its pieces,
 * 0 or -errno); raises errors on the window. */
int vd_rma_start(struct vd_win *w, const struct vd_rma_args *a, vd_rma_start_fn start,
		 const char *fn);
/* fn(ctx, offset at the target, offset in the packed data, length) for
 * every contiguous run of count elements of t placed at base. */
typedef int (*vd_win_block_fn)(void *ctx, MPI_Aint toff, size_t poff, size_t len);
int vd_win_blocks(const struct vd_dtype *t, int count, MPI_Aint base, vd_win_block_fn fn,
		  void *ctx);
/* An access to target is allowed now (an epoch covers it). */
bool vd_win_may_access(const struct vd_win *w, int target);

/* win_acc.c */
void vd_win_am_arrived(struct vd_win *w, int origin, const struct vd_msg *m,
		       const void *payload, size_t plen);
void vd_win_am_reply(struct vd_win *w, const struct vd_msg *m, const void *payload,
		     size_t plen);
/* Put/Get through the target's CPU (dynamic windows). */
int vd_win_am_put(struct vd_req *r, const void *data, size_t bytes, MPI_Aint disp,
		  int tcount, struct vd_dtype *tt);
int vd_win_am_get(struct vd_req *r, size_t bytes, MPI_Aint disp, int tcount,
		  struct vd_dtype *tt);

/* win_attr.c: the user-keyval part of MPI_Win_get_attr (keyval not a
 * predefined one); the hints given at creation (MPI code, not raised);
 * what Win_free runs first (delete callbacks: MPI code) and what
 * win_destroy frees. */
int vd_win_attr_user(struct vd_win *w, int keyval, void *attribute_val, int *flag,
		     const char *fn);
int vd_win_hints(struct vd_win *w, MPI_Info info);
int vd_win_attr_free(struct vd_win *w);
void vd_win_attr_discard(struct vd_win *w);

/* win_sync.c */
void vd_win_ctl_arrived(struct vd_win *w, int origin, const struct vd_msg *m);
void vd_win_sync_free(struct vd_win *w);

#endif /* VIADUCT_MPI_WIN_H */
