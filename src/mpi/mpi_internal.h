/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: objects shared by the files of src/mpi.  This layer is a
 * client of VIPL and sees only public headers (mpi.h, vipl.h,
 * viaduct/viaduct.h).
 *
 * Error convention inside: 0 or a negative errno for failures of the
 * machinery (-ENOMEM, -EIO for a dead peer, -EMSGSIZE for truncation);
 * argument checks at the API functions produce MPI_ERR_* directly, and
 * vd_mpi_raise() hands every error to the communicator's error handler.
 *
 * Threading: up to MPI_THREAD_MULTIPLE.  Every PMPI_ function opens with
 * VD_API_GUARD(), one lock around the library (lock.c), taken only when
 * the program asked for MULTIPLE; inside, one thread at a time.
 */
#ifndef VIADUCT_MPI_INTERNAL_H
#define VIADUCT_MPI_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mpi.h>
#include <vipl.h>
#include <viaduct/viaduct.h>

/* ---- state of the library (env.c) ---------------------------------------- */
enum vd_mpi_phase { VD_MPI_BEFORE = 0, VD_MPI_RUNNING = 1, VD_MPI_AFTER = 2 };

struct vd_mpi_world {
	enum vd_mpi_phase phase;
	int rank, size;                 /* in MPI_COMM_WORLD */
	int thread_level;               /* provided */
	char jobid[64];                 /* PMI kvsname: unique per job */
	double wtime0;
};
extern struct vd_mpi_world vd_mpi;

/* errh.c: as vd_mpi_raise (below), and with MPI_ERRORS_ARE_FATAL the
 * message also gets ": detail". */
int vd_mpi_raise_msg(MPI_Comm comm, int code, const char *fn, const char *detail);
/* env.c: 0 (and *mh if not NULL) if [addr, addr+len) lies inside one
 * MPI_Alloc_mem region; -ENOENT otherwise. */
int vd_mpi_mem_lookup(const void *addr, size_t len, VIP_MEM_HANDLE *mh);
/* env.c: deregister every MPI_Alloc_mem region (MPI_Finalize). */
void vd_mpi_mem_finalize(void);
/* group.c: free the group table (vd_comm_finalize calls it). */
void vd_group_finalize(void);

/* MPI_ERR_* for a negative errno from the machinery. */
int vd_mpi_errno(int err);
/* Report `code` (an MPI_ERR_* class) raised by `fn` on `comm`: with
 * MPI_ERRORS_ARE_FATAL print "viaduct MPI: rank R: fn: <text>" and abort
 * the job (vd_pmi_abort); with MPI_ERRORS_RETURN return code.  MPI_SUCCESS
 * passes through. */
static inline int vd_mpi_raise(MPI_Comm comm, int code, const char *fn)
{
	/* Inline: every MPI call ends here, nearly always with success. */
	if (__builtin_expect(code == MPI_SUCCESS, 1))
		return MPI_SUCCESS;
	return vd_mpi_raise_msg(comm, code, fn, NULL);
}
/* errh.c: MPI_ERR_OTHER raised by fn outside MPI_Init..MPI_Finalize,
 * the message saying whether MPI is not yet initialised or finalised. */
int vd_mpi_not_running(const char *fn);
/* MPI_ERR_OTHER unless MPI is initialised and not finalised. */
#define VD_MPI_CHECK_RUNNING(fn)                                              \
	do {                                                                  \
		if (vd_mpi.phase != VD_MPI_RUNNING)                           \
			return vd_mpi_not_running(fn);                        \
	} while (0)

/* The library's VIPL NIC (wire.c), for MPI_Alloc_mem registrations. */
VIP_NIC_HANDLE vd_mpi_nic(void);

/* ---- MPI_THREAD_MULTIPLE (lock.c) ------------------------------------------ */
int vd_lock_take(void);
void vd_lock_drop(void);
/* 1 when it took the lock.  Inline: below MULTIPLE a call costs one
 * predictable branch, nothing more. */
static inline int vd_lock_enter(void)
{
	if (__builtin_expect(__atomic_load_n(&vd_mpi.thread_level, __ATOMIC_RELAXED) !=
			     MPI_THREAD_MULTIPLE, 1))
		return 0;
	return vd_lock_take();
}

static inline void vd_lock_leave(int *took)
{
	if (*took)
		vd_lock_drop();
}
/* The first statement of every PMPI_ function: the lock is dropped on
 * every way out of the function (cleanup attribute). */
#define VD_API_GUARD()                                                        \
	int vd_api_guard_ __attribute__((cleanup(vd_lock_leave), unused)) = \
		vd_lock_enter()
void vd_lock_init(void);
/* Around the one sleep of a blocking wait (wire.c): begin returns false
 * when another thread already sleeps in the CQs -- then wait for progress
 * with vd_lock_wait_progress instead. */
bool vd_lock_sleep_begin(int *saved);
void vd_lock_sleep_end(int saved);
void vd_lock_wait_progress(unsigned ms);
void vd_lock_broadcast(void);
/* Progress completed something: threads waiting for it look again.
 * Inline: it runs on every completion, and below MULTIPLE it is one
 * branch. */
static inline void vd_lock_progressed(void)
{
	if (__builtin_expect(__atomic_load_n(&vd_mpi.thread_level, __ATOMIC_RELAXED) ==
			     MPI_THREAD_MULTIPLE, 0))
		vd_lock_broadcast();
}
/* Around a wait that touches nothing of the library's (coll_shm.c):
 * the lock let go entirely, and taken back. */
int vd_lock_release(void);
void vd_lock_reacquire(int saved);

/* ---- PMI-1 client (pmi.c) ---------------------------------------------------- *
 * Talks to vdrun or Hydra over the fd in PMI_FD (PMI_RANK, PMI_SIZE); with
 * no PMI_FD the process is a singleton (rank 0 of 1). */
int vd_pmi_init(int *rank, int *size, char *jobid, size_t jobid_len);
int vd_pmi_put(const char *key, const char *value);
int vd_pmi_fence(void);                 /* commit + barrier */
int vd_pmi_get(const char *key, char *value, size_t len);
/* The same, naming the rank that put the key (PMIx keys belong to their
 * putter; PMI-1 ignores it).  -1: any. */
int vd_pmi_get_from(int from, const char *key, char *value, size_t len);
/* Which command of an MPMD launch line started this rank (MPI_APPNUM);
 * -1 when the launcher does not say (a singleton). */
int vd_pmi_appnum(void);
void vd_pmi_finalize(void);
/* Tell the launcher to stop the job (it names this rank and the code),
 * then _exit(code).  Never returns. */
void vd_pmi_abort(int code, const char *msg) __attribute__((noreturn));

/* ---- datatypes (dtype.c) ------------------------------------------------------ */
struct vd_block {
	MPI_Aint off;                   /* from the element's start, bytes */
	MPI_Aint len;
};

struct vd_dtype {
	int refs;
	bool builtin, committed;
	MPI_Aint size;                  /* data bytes in one element */
	MPI_Aint lb, extent;
	bool contig;                    /* one block, size == extent, lb 0 */
	MPI_Datatype basic;             /* every element is this builtin
	                                 * (for reductions), or 0 */
	MPI_Aint basic_count;           /* how many of them per element */
	int nblocks;                    /* flattened typemap of one element */
	struct vd_block *blocks;        /* NULL for builtins (one block) */
};

/* The datatype, or NULL for an invalid or freed handle. */
struct vd_dtype *vd_dtype_get(MPI_Datatype dt);
/* A datatype usable for communication: valid and committed (builtins
 * always are); else NULL. */
struct vd_dtype *vd_dtype_comm(MPI_Datatype dt);
/* Whether buf can hold count elements of t: NULL (MPI_BOTTOM) only with
 * a type of absolute addresses, MPI_IN_PLACE never. */
bool vd_dtype_buf_ok(const struct vd_dtype *t, const void *buf, int count);
/* Pack count elements at src into dst (contiguous bytes); returns bytes. */
size_t vd_dtype_pack(const struct vd_dtype *t, const void *src, int count, void *dst);
/* Unpack `bytes` (a multiple of t->size, at most count elements) from src
 * into dst laid out as count elements of t. */
void vd_dtype_unpack(const struct vd_dtype *t, const void *src, size_t bytes, void *dst);
int vd_dtype_init(void);
void vd_dtype_finalize(void);
/* type_attr.c: a datatype's attributes.  Free runs the delete callbacks
 * (MPI_Type_free, before the handle goes; a failure stops the free), copy
 * the copy callbacks onto a duplicate; MPI codes. */
int vd_type_attr_free(MPI_Datatype t);
int vd_type_attr_copy(MPI_Datatype from, MPI_Datatype to);
void vd_type_attr_finalize(void);
/* A pending request keeps its datatype alive across MPI_Type_free. */
void vd_dtype_retain(struct vd_dtype *t);
void vd_dtype_release(struct vd_dtype *t);

/* ---- reduction operations (op.c) ----------------------------------------------- */
/* inout[i] = in[i] op inout[i] for count elements of dt.  MPI_ERR_OP for
 * an invalid op, or one not defined on dt. */
int vd_op_apply(MPI_Op op, const void *in, void *inout, int count, MPI_Datatype dt);
/* Whether op is commutative (user ops say so at creation). */
bool vd_op_commutative(MPI_Op op);
bool vd_op_valid(MPI_Op op);

/* ---- communicators and groups (comm.c, group.c) ----------------------------------- */
/* The context of tune.c's measurement between two ranks: MPI_COMM_SELF's
 * last one (comm.c numbers SELF's four from 4), which no message between
 * two processes otherwise uses. */
#define VD_CTX_TUNE 7u
/* MPI_Finalize's word to the neighbours (init.c) on WORLD's ranks: tune.c
 * is done with that context by then; a tag of its own keeps them apart
 * anyway. */
#define VD_CTX_FINALIZE VD_CTX_TUNE
struct vd_hier;
struct vd_topo;
struct vd_attr;
struct vd_shm;
struct vd_comm {
	int refs;
	int rank, size;
	int *world;                     /* comm rank -> world rank, for the
	                                 * ranks point to point names: of an
	                                 * intercommunicator, the remote group */
	uint32_t ctx;                   /* point to point; ctx + 1 is the
	                                 * collectives' context, ctx + 2 and
	                                 * + 3 those of its node and leader
	                                 * views (coll_hier.c) */
	MPI_Errhandler errh;
	bool hier_done;                 /* hier looked for */
	uint32_t nbc_seq;               /* nonblocking collectives started */
	struct vd_hier *hier;           /* node-aware views, or NULL: flat */
	struct vd_topo *topo;           /* process topology, or NULL */
	/* The local group: world/size themselves for an intracommunicator.
	 * An intercommunicator also has a hidden intracommunicator over its
	 * local group (local_comm, a handle) for agreeing on things. */
	bool inter;
	int local_size;
	int *local_world;
	MPI_Comm local_comm;
	char name[MPI_MAX_OBJECT_NAME];
	struct vd_attr *attrs;          /* attr.c */
	MPI_Info info;                  /* hints as set, or MPI_INFO_NULL */
	bool shm_done;                  /* shm looked for */
	struct vd_shm *shm;             /* node-local segment, or NULL */
};

void vd_coll_hier_free(struct vd_hier *h);   /* coll_hier.c */
void vd_shm_free(struct vd_shm *s);          /* coll_shm.c */
/* topo.c: free (NULL is fine) and copy (NULL when out of memory) the
 * topology of a communicator. */
void vd_topo_free(struct vd_topo *t);
struct vd_topo *vd_topo_dup(const struct vd_topo *t);
/* intercomm.c: MPI_Barrier on an intercommunicator.  MPI code. */
int vd_intercomm_barrier(struct vd_comm *c);

/* NULL for an invalid or freed handle. */
struct vd_comm *vd_comm_get(MPI_Comm comm);
/* Drop a reference taken with c->refs++ (the last one frees c). */
void vd_comm_release(struct vd_comm *c);
int vd_comm_init(void);                 /* WORLD, SELF */
void vd_comm_finalize(void);

/* attr.c: copy the attributes of `from` to `to` (Comm_dup's copy
 * callbacks), delete all of c's (delete callbacks).  MPI codes. */
int vd_attr_copy_all(MPI_Comm from, struct vd_comm *f, MPI_Comm to, struct vd_comm *t);
int vd_attr_delete_all(MPI_Comm comm, struct vd_comm *c);
void vd_attr_finalize(void);

/* info.c: a new info with the entries of `from` (MPI_INFO_NULL: empty);
 * 0, -EINVAL (invalid handle), -ENOMEM.  Release frees it and resets the
 * handle (MPI_INFO_NULL is fine). */
int vd_info_copy(MPI_Info from, MPI_Info *out);
void vd_info_release(MPI_Info *info);
void vd_info_finalize(void);

struct vd_group {
	int refs;
	int size;
	int *world;                     /* group rank -> world rank */
};
struct vd_group *vd_group_get(MPI_Group g);

/* ---- statuses ---------------------------------------------------------------------- */
/* A status's byte count: the low 32 bits in vd_count_lo, the rest above
 * the cancelled flag (bit 0) of vd_count_hi_cancelled. */
static inline MPI_Count vd_status_bytes(const MPI_Status *st)
{
	uint64_t hi = (uint32_t)st->vd_count_hi_cancelled >> 1;

	return (MPI_Count)((uint64_t)(uint32_t)st->vd_count_lo | hi << 32);
}

static inline void vd_status_set_bytes(MPI_Status *st, MPI_Count bytes)
{
	uint32_t hi = (uint32_t)((uint64_t)bytes >> 32) << 1;

	st->vd_count_lo = (int)(uint32_t)bytes;
	st->vd_count_hi_cancelled = (int)(hi | ((uint32_t)st->vd_count_hi_cancelled & 1u));
}

/* ---- point to point engine (p2p.c, proto.c, progress.c) --------------------------- */
/* Send modes. */
enum vd_send_mode { VD_SEND_STD = 0, VD_SEND_SYNC = 1 };

int vd_p2p_init(void);                  /* after PMI: wire up VIPL */
void vd_p2p_finalize(void);

/* Nonblocking send/receive on context ctx (comm->ctx for user traffic,
 * comm->ctx + 1 for collectives).  dest/source are comm ranks
 * (MPI_PROC_NULL, MPI_ANY_SOURCE allowed); the caller has checked the
 * arguments.  0 or -errno. */
int vd_isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
	     struct vd_comm *comm, uint32_t ctx, enum vd_send_mode mode,
	     MPI_Request *req);
int vd_irecv(void *buf, int count, MPI_Datatype dt, int source, int tag,
	     struct vd_comm *comm, uint32_t ctx, MPI_Request *req);
/* Wait for one / all; status may be MPI_STATUS(ES)_IGNORE.  Returns an
 * MPI error code (MPI_ERR_TRUNCATE, MPI_ERR_IN_STATUS for waitall, ...),
 * not raised. */
int vd_wait(MPI_Request *req, MPI_Status *status);
int vd_waitall(int n, MPI_Request *reqs, MPI_Status *statuses);

/* Convenience for collectives: blocking send / receive / exchange on the
 * collective context of comm, for contiguous bytes or any datatype. */
int vd_coll_send(const void *buf, int count, MPI_Datatype dt, int dest, struct vd_comm *c);
int vd_coll_recv(void *buf, int count, MPI_Datatype dt, int src, struct vd_comm *c);
int vd_coll_sendrecv(const void *sbuf, int scount, MPI_Datatype sdt, int dest,
		     void *rbuf, int rcount, MPI_Datatype rdt, int src, struct vd_comm *c);

/* The tag collectives use on their context (user tags never reach it).
 * Tags from VD_NBC_TAG_FIRST up there belong to the nonblocking
 * collectives, one per collective started on the communicator
 * (nbc_sched.c); the neighbourhood collectives use a few from 0x4e00. */
#define VD_COLL_TAG 0
#define VD_NBC_TAG_FIRST 0x10000

#endif /* VIADUCT_MPI_INTERNAL_H */
