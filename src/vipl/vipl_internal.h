/* SPDX-License-Identifier: MIT */
/*
 * vipl core: objects shared by the API layer (src/vipl) and the providers
 * (src/prov/<name>).  Providers include this header; the core never
 * includes a provider's headers -- it calls them through struct
 * vd_prov_ops.
 *
 * Error convention inside: 0 or a negative errno.  VIP_RETURN values are
 * made only by the API functions (vd_ret()).
 *
 * Locking (outermost first):
 *   vd_nic.lock        object lists, ptags, TPT allocation
 *   vd_wq.lock         one per work queue (send, receive) of a VI; every
 *                      access to the queue's ring and to the provider's
 *                      shared queue memory for that direction
 *   vd_cq.lock         the CQ consumer side
 * A thread holding a VI's send lock may take the same VI's receive lock
 * (never the reverse).  No lock is held across a sleep.
 */
#ifndef VIADUCT_VIPL_INTERNAL_H
#define VIADUCT_VIPL_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vipl.h>
#include <viaduct/lmm.h>
#include <viaduct/viaduct.h>

/* ---- limits reported by VipQueryNic and enforced ------------------------ */
#define VD_NIC_ADDR_LEN 6
#define VD_MAX_DISCRIMINATOR 32       /* base64-encoded into a socket name */
#define VD_MAX_SEGS 16                /* data segments per descriptor */
#define VD_MAX_TRANSFER (1ul << 30)   /* bytes per descriptor */
#define VD_MAX_QUEUE_DESC 65536       /* posted descriptors per work queue */
#define VD_MAX_CQ_ENTRIES 65536
#define VD_TPT_IDX_BITS 14
#define VD_TPT_MAX (1u << VD_TPT_IDX_BITS)   /* registrations per NIC */

/* ---- queue lock ------------------------------------------------------------ *
 * Work-queue and CQ locks guard a few dozen instructions on the data path
 * and are almost never contended (one thread per queue is the common
 * case), so the uncontended pair must be cheap: one exchange to take it,
 * a plain release store to drop it -- half the locked instructions of a
 * pthread mutex, which matters at ~10 ns per locked instruction in a VM.
 * Waiters spin briefly, then yield; no holder ever sleeps or blocks with
 * it held except inside a single process_vm_writev/readv. */
typedef struct {
	_Atomic int v;
} vd_lock_t;

void vd_lock_slow(vd_lock_t *l);

static inline void vd_lock_init(vd_lock_t *l)
{
	atomic_init(&l->v, 0);
}

static inline void vd_lock(vd_lock_t *l)
{
	/* Acquire pairs with vd_unlock()'s release. */
	if (!atomic_exchange_explicit(&l->v, 1, memory_order_acquire))
		return;
	vd_lock_slow(l);
}

static inline void vd_unlock(vd_lock_t *l)
{
	atomic_store_explicit(&l->v, 0, memory_order_release);
}

/* ---- intrusive list ------------------------------------------------------ */
struct vd_list {
	struct vd_list *prev, *next;
};

static inline void vd_list_init(struct vd_list *l)
{
	l->prev = l->next = l;
}

static inline void vd_list_add(struct vd_list *head, struct vd_list *n)
{
	n->next = head;
	n->prev = head->prev;
	head->prev->next = n;
	head->prev = n;
}

static inline void vd_list_del(struct vd_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	vd_list_init(n);
}

#define vd_container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

/* ---- handles (handle.c) ------------------------------------------------- *
 * A handle is not a pointer: it encodes (type, generation, index) into a
 * grow-only table, so a stale or forged handle is detected, never
 * dereferenced.  Objects live in memory that is never unmapped, so a race
 * between destroy and use touches reused memory, not a hole. */
enum vd_obj_type {
	VD_OBJ_NIC = 1,
	VD_OBJ_VI = 2,
	VD_OBJ_CQ = 3,
	VD_OBJ_PTAG = 4,
	VD_OBJ_CONN = 5,
};

struct vd_obj {
	uint32_t type;
	_Atomic uint32_t gen;     /* odd while live */
	uint32_t idx;
	uint32_t reserved;
};

/* Zeroed object of `size` bytes (starting with struct vd_obj), live.
 * NULL on -ENOMEM. */
void *vd_obj_new(enum vd_obj_type type, size_t size);
/* Invalidate every handle to it and recycle the memory. */
void vd_obj_free(void *obj);
void *vd_obj_handle(const void *obj);
/* The live object `handle` names, or NULL. */
void *vd_obj_lookup(const void *handle, enum vd_obj_type type);
/* 64-bit handle value, for carrying in shared memory (CQ events). */
static inline uint64_t vd_obj_handle_bits(const void *obj)
{
	return (uint64_t)(uintptr_t)vd_obj_handle(obj);
}

/* ---- protection tags (ptag.c) -------------------------------------------- */
struct vd_nic;

struct vd_ptag {
	struct vd_obj obj;
	struct vd_nic *nic;
	uint32_t id;              /* nonzero, random; published in the TPT */
	_Atomic uint32_t users;   /* VIs and registrations naming it */
};

/* ptag.c.  vd_ptag_get: NULL handle -> 0 and *out = NULL ("default /
 * any"); a live ptag of this NIC -> 0 and *out with a hold (users + 1);
 * anything else -> -EACCES.  vd_ptag_release(NULL) is a no-op. */
int vd_ptag_get(struct vd_nic *nic, VIP_PROTECTION_HANDLE h, struct vd_ptag **out);
void vd_ptag_hold(struct vd_ptag *p);
void vd_ptag_release(struct vd_ptag *p);

/* ---- translation and protection table (tpt.c) --------------------------- *
 * Memory handle = key << VD_TPT_IDX_BITS | idx.  The key is random per
 * registration (never 0, never the slot's previous key), so handles are
 * unguessable and a stale one fails.
 *
 * The owner keeps the table in a sealed memfd (F_SEAL_FUTURE_WRITE after
 * mapping it writable), which connected peers map read-only and consult
 * before any RDMA into or out of the owner's memory. */
#define VD_TPT_MAGIC 0x76647470u      /* "vdtp" */
#define VD_TPT_VERSION 1u

#define VD_TPT_RDMA_WRITE 0x1u
#define VD_TPT_RDMA_READ 0x2u

struct vd_tpt_entry {
	_Atomic uint32_t seq;     /* seqlock: odd while the entry changes */
	uint32_t key;             /* 0: free or revoked */
	uint64_t addr;
	uint64_t len;
	uint32_t ptag_id;
	uint32_t flags;           /* VD_TPT_RDMA_* */
};
_Static_assert(sizeof(struct vd_tpt_entry) == 32, "TPT entry layout");

struct vd_tpt_shared {
	uint32_t magic;
	uint32_t version;
	uint32_t nentries;
	uint32_t reserved[13];
	struct vd_tpt_entry e[];
};
_Static_assert(sizeof(struct vd_tpt_shared) == 64, "TPT header layout");

#define VD_TPT_SHARED_BYTES \
	(sizeof(struct vd_tpt_shared) + VD_TPT_MAX * sizeof(struct vd_tpt_entry))

/* Private per-entry state (owner only). */
struct vd_mr {
	lmm_handle_t lmm;
	struct vd_ptag *ptag;
	uint32_t next_free;
	/* Revoked, but a peer may still be copying: still pinned, and
	 * VipDeregisterMem(draining_addr, draining) tries again. */
	VIP_MEM_HANDLE draining;
	const void *draining_addr;
};

struct vd_tpt {
	int memfd;                          /* read-only for peers */
	struct vd_tpt_shared *shared;       /* owner's writable mapping */
	struct vd_mr *mr;                   /* VD_TPT_MAX entries */
	uint32_t free_head;                 /* index+1; 0: none */
	uint32_t used;
};

/* Owner-side check of a local data segment or descriptor: the handle is
 * live, [addr, addr+len) lies inside it, and its ptag matches ptag_id
 * (0 = any, the lenient default for a VI created with a NULL Ptag).
 * 0, -EBADF (handle), -ERANGE (outside), -EACCES (ptag). */
int vd_tpt_check_local(struct vd_nic *nic, VIP_MEM_HANDLE h, uint64_t addr,
		       uint64_t len, uint32_t ptag_id);
/* Bytes registered under h from addr on (addr itself must be inside,
 * with the ptag): 0, or the error vd_tpt_check_local gives for one byte. */
int vd_tpt_local_room(struct vd_nic *nic, VIP_MEM_HANDLE h, uint64_t addr,
		      uint32_t ptag_id, uint64_t *room);
/* Initiator-side check against a peer's read-only table: as above, plus
 * the region's VD_TPT_RDMA_* flag `need`.  Consistent snapshot via the
 * entry's seqlock.  0, -EBADF, -ERANGE, -EACCES (ptag or enable bit). */
int vd_tpt_check_remote(const struct vd_tpt_shared *t, VIP_MEM_HANDLE h,
			uint64_t addr, uint64_t len, uint32_t vi_ptag_id,
			uint32_t need);

/* ---- provider operations ------------------------------------------------ */
struct vd_vi;
struct vd_cq;
struct vd_conn_req;

/* vd_prov_ops.caps */
#define VD_PROV_MOVES_BY_ADDRESS 0x1u   /* copies by virtual address: a
                                         * registration need not be pinned */

struct vd_prov_ops {
	const char *name;
	unsigned caps;                      /* VD_PROV_* */
	int (*nic_open)(struct vd_nic *nic);
	void (*nic_close)(struct vd_nic *nic);

	/* Connection management.  Timeouts in ms, -1 = infinite. */
	int (*connect_wait)(struct vd_nic *nic, const VIP_NET_ADDRESS *local,
			    int timeout_ms, struct vd_conn_req **req);
	/* The request's remote address and VI attributes, for the caller. */
	void (*conn_req_info)(struct vd_conn_req *req, VIP_NET_ADDRESS *remote,
			      size_t remote_room, VIP_VI_ATTRIBUTES *attrs);
	int (*connect_accept)(struct vd_conn_req *req, struct vd_vi *vi);
	void (*connect_reject)(struct vd_conn_req *req);
	int (*connect_request)(struct vd_vi *vi, const VIP_NET_ADDRESS *local,
			       const VIP_NET_ADDRESS *remote, int timeout_ms,
			       VIP_VI_ATTRIBUTES *remote_attrs);
	int (*peer_request)(struct vd_vi *vi, const VIP_NET_ADDRESS *local,
			    const VIP_NET_ADDRESS *remote, int timeout_ms);
	/* 0 connected, -EINPROGRESS not yet (timeout_ms 0 = poll), other
	 * negative errno: failed. */
	int (*peer_progress)(struct vd_vi *vi, int timeout_ms,
			     VIP_VI_ATTRIBUTES *remote_attrs);
	/* Tell the peer and drop the connection: stop watching it, unmap,
	 * vi->conn = NULL.  Called with NO VI lock held (the service thread
	 * may be inside vd_vi_conn_broken for this VI); the core drains
	 * delivered data before and flushes after. */
	void (*disconnect)(struct vd_vi *vi);
	/* vi->conn was just attached: set up the data path (publish this
	 * VI's receive attributes, lazy indices).  No lock held. */
	void (*conn_ready)(struct vd_vi *vi);
	/* This VI's receive attributes (ptag, RDMA enables, split flag)
	 * changed while connected.  Both queue locks held. */
	void (*conn_attrs_changed)(struct vd_vi *vi);
	/* Wake every thread sleeping in send_sleep/recv_sleep on this VI. */
	void (*wake)(struct vd_vi *vi);

	/* Data path; called with the queue's lock held. */
	int (*send_progress)(struct vd_vi *vi);   /* process posted sends */
	int (*recv_publish)(struct vd_vi *vi);    /* offer posted receives */
	int (*recv_progress)(struct vd_vi *vi);   /* complete arrived data */
	/* Sleep (no lock held) until the queue may have progressed or
	 * deadline_ns (CLOCK_MONOTONIC; 0 = infinite) passes.  Returns 0
	 * or -ETIMEDOUT; spurious wake-ups are allowed. */
	int (*send_sleep)(struct vd_vi *vi, uint64_t deadline_ns);
	int (*recv_sleep)(struct vd_vi *vi, uint64_t deadline_ns);

	/* Completion queue event rings. */
	int (*cq_open)(struct vd_cq *cq);
	void (*cq_close)(struct vd_cq *cq);
	/* Pop one event: 0 and (*vi_bits, *recv), or -EAGAIN.  CQ lock held. */
	int (*cq_pop)(struct vd_cq *cq, uint64_t *vi_bits, bool *recv);
	/* Append an event for a locally completed descriptor. */
	int (*cq_push_local)(struct vd_cq *cq, struct vd_vi *vi, bool recv);
	/* rings: a message in a ring feeding the CQ also ends the sleep. */
	int (*cq_sleep)(struct vd_cq *cq, uint64_t deadline_ns, bool rings);
	/* Non-consuming: the CQ holds an event, or the message ring of a VI
	 * whose receive queue is bound to it holds a message.  No lock held. */
	bool (*cq_ready)(struct vd_cq *cq);

	/* Message rings (viaduct_ring_*; NULL: not supported).  Send with
	 * sq.lock held, peek and release with rq.lock held.  0, -EAGAIN (full
	 * / empty), -EMSGSIZE, -ENOTCONN, -EPROTO, -EINVAL (nothing peeked). */
	int (*ring_send)(struct vd_vi *vi, const void *hdr, uint32_t hlen,
			 const void *data, uint32_t len);
	int (*ring_peek)(struct vd_vi *vi, const void **msg, uint32_t *len);
	int (*ring_release)(struct vd_vi *vi);

	/* Before a registration's memory is released: wait until no peer is
	 * inside an RDMA on TPT index idx (the key is already revoked). */
	int (*mr_quiesce)(struct vd_nic *nic, uint32_t idx);   /* 0 or -EBUSY */
};

extern const struct vd_prov_ops vd_shm_ops;

/* ---- NIC (nic.c) ---------------------------------------------------------- */
struct vd_nic {
	struct vd_obj obj;
	const struct vd_prov_ops *ops;
	pthread_mutex_t lock;
	struct vd_tpt tpt;
	struct vd_ptag *default_ptag;
	uint8_t addr[VD_NIC_ADDR_LEN];
	char device[64];
	bool strict_ptag;                   /* VIADUCT_VIPL_STRICT_PTAG=1 */
	VIP_ERROR_HANDLER err_handler;      /* under lock */
	void *err_ctx;
	struct vd_list vis;                 /* vd_vi.nic_link */
	struct vd_list cqs;                 /* vd_cq.nic_link */
	void *prov;                         /* provider's per-NIC state */
	_Atomic uint32_t stalled;           /* VIs whose sends wait for the
	                                     * peer (vd_vi.send_stalled) */
	uint32_t nvis, ncqs;                /* under lock; at most VD_MAX_VI,
	                                     * VD_MAX_CQ (VipQueryNic) */
};

/* Per NIC, as VipQueryNic reports them (MaxVI, MaxCQ). */
#define VD_MAX_VI 65536u
#define VD_MAX_CQ 4096u

/* Take one of the NIC's `max` objects counted by *count (VIs, CQs);
 * false when all are taken.  vd_nic_unreserve gives it back. */
bool vd_nic_reserve(struct vd_nic *nic, uint32_t *count, uint32_t max);
void vd_nic_unreserve(struct vd_nic *nic, uint32_t *count);

/* This node's 6-byte NIC address (same for every NIC handle). */
void vd_node_address(uint8_t addr[VD_NIC_ADDR_LEN]);

/* Report an asynchronous error through the NIC's handler, if any.  May be
 * called from any thread with no vipl lock held. */
void vd_async_error(struct vd_nic *nic, struct vd_vi *vi, struct vd_cq *cq,
		    VIP_DESCRIPTOR *desc, VIP_RESOURCE_CODE res, VIP_ERROR_CODE code);

/* ---- work queues and VIs (vi.c, queue.c) --------------------------------- */

/* Ring of posted descriptors.  Indices only grow:
 *   [head, done)        completed, not yet returned by *Done
 *   [done, sent)        sq: (unused, == done); rq: offered to the peer
 *   [sent, tail)        sq: waiting (flow control); rq: not yet offered */
struct vd_wq {
	vd_lock_t lock;
	_Atomic uint32_t wake_seq;          /* private futex word: bumped on
	                                     * connect, break, disconnect */
	VIP_DESCRIPTOR **ring;              /* cap entries, power of two */
	uint32_t cap;
	uint64_t head, done, sent, tail;
	struct vd_notify *notify_head;      /* pending *Notify handlers */
	struct vd_notify **notify_tail;
	bool notify_thread;                 /* a notify thread is running */
};

struct vd_vi {
	struct vd_obj obj;
	struct vd_nic *nic;
	struct vd_cq *send_cq, *recv_cq;
	_Atomic int state;                  /* VIP_VI_STATE */
	_Atomic bool break_unreported;      /* broken by vd_vi_break_locked;
	                                     * a later vd_vi_conn_broken still
	                                     * calls the error handler */
	VIP_VI_ATTRIBUTES attrs;
	struct vd_ptag *ptag;               /* held; NULL: any of this NIC */
	uint32_t ptag_id;                   /* 0: any ptag of this NIC */
	_Atomic uint32_t ext_flags;         /* VIADUCT_VI_* */
	_Atomic uint32_t xfer_mode;         /* enum viaduct_xfer_mode */
	struct vd_wq sq, rq;
	bool send_stalled;                  /* sq.lock: posted sends wait for
	                                     * a receive at the peer */
	struct viaduct_vi_stats stats;      /* send side under sq.lock,
	                                     * receive side under rq.lock */
	void *conn;                         /* provider connection or NULL */
	void *user_data;
	struct vd_list nic_link;
};

static inline VIP_DESCRIPTOR *vd_wq_at(const struct vd_wq *q, uint64_t i)
{
	return q->ring[i & (q->cap - 1)];
}

/* Segment i of a descriptor (0 = the first after the control segment);
 * computed, so clients' DS[2] / Data[1] declarations never matter. */
static inline VIP_DATA_SEGMENT *vd_desc_seg(VIP_DESCRIPTOR *d, unsigned i)
{
	return (VIP_DATA_SEGMENT *)((char *)d + sizeof(VIP_CONTROL_SEGMENT)) + i;
}

static inline void *vd_pv(VIP_PVOID64 p)
{
	return p.Address;
}

/* Complete descriptor `done` of a queue: write Status (DONE is added) and
 * advance `done`, announcing on the bound CQ when `announce` (receives
 * whose event the peer already pushed pass false).  Lock held. */
void vd_wq_complete_send(struct vd_vi *vi, uint32_t status);
void vd_wq_complete_recv(struct vd_vi *vi, uint32_t status, uint32_t length,
			 uint32_t imm, bool announce);

/* Local data segments [first, SegCount) of a posted descriptor: every one
 * inside a registration of this NIC with the VI's ptag.  Returns 0 or
 * VIP_STATUS_PROTECTION_ERROR / VIP_STATUS_LENGTH_ERROR (total > max
 * transfer); *total = the sum of their lengths. */
uint32_t vd_desc_check_segs(struct vd_vi *vi, VIP_DESCRIPTOR *d, unsigned first,
			    uint64_t *total);
/* A receive descriptor's segments at post time: each starts in registered
 * memory; their declared lengths are checked only where bytes land. */
uint32_t vd_desc_check_recv_segs(struct vd_vi *vi, VIP_DESCRIPTOR *d, uint64_t *total);
/* Registered bytes of receive segment s from its start, at most its
 * Length (0 if its registration is gone): where bytes may land. */
uint64_t vd_recv_seg_room(struct vd_vi *vi, const VIP_DATA_SEGMENT *s);

/* Same as vd_vi_conn_broken, for a provider that holds vi->sq.lock
 * (e.g. a send that found no receive at a reliable level): no error
 * handler call (the caller's descriptor carries the status). */
void vd_vi_break_locked(struct vd_vi *vi);

/* The connection broke (peer died, disconnected, protection or overrun
 * error at a reliable level): VI -> Error, every outstanding descriptor
 * completes with VIP_STATUS_DESC_FLUSHED_ERROR (after data already
 * delivered is completed normally), sleepers are woken, and `code` is
 * reported to the error handler.  Takes the queue locks itself; callable
 * from any thread holding no vipl lock. */
void vd_vi_conn_broken(struct vd_vi *vi, VIP_ERROR_CODE code);

/* Connection established (provider's conn is set): VI -> Connected and
 * receives posted while idle are offered.  No lock held. */
void vd_vi_connected(struct vd_vi *vi);

/* ---- completion queues (cq.c) -------------------------------------------- */
struct vd_cq {
	struct vd_obj obj;
	struct vd_nic *nic;
	vd_lock_t lock;
	uint32_t entries;
	_Atomic uint32_t bound;             /* VIs bound to it */
	void *prov;
	struct vd_notify *notify_head;
	struct vd_notify **notify_tail;
	bool notify_thread;
	struct vd_list nic_link;
};

/* ---- notify (notify.c) ---------------------------------------------------- */
struct vd_notify {
	struct vd_notify *next;
	void *ctx;
	union {
		VIP_VI_CALLBACK vi_fn;
		VIP_CQ_CALLBACK cq_fn;
	};
};

/* Private futex helpers (queue.c). */
void vd_wq_wake_local(struct vd_wq *q);
/* Run the send queue (sq.lock held) and keep nic->stalled current. */
void vd_sq_progress(struct vd_vi *vi);
/* Retry every VI of the NIC whose sends wait for the peer: a thread that
 * only waits on a CQ must still see them complete.  No lock held. */
void vd_nic_progress_stalled(struct vd_nic *nic);

/* VipCloseNic's lenient teardown: every VI, then every CQ, of the NIC. */
void vd_vi_destroy_all(struct vd_nic *nic);
void vd_cq_destroy_all(struct vd_nic *nic);
/* VipDisconnect's work, also used by VipDestroyVi and VipCloseNic. */
void vd_vi_disconnect(struct vd_vi *vi);

static inline void vd_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

/* ---- misc (util in vipl) ------------------------------------------------- */
VIP_RETURN vd_ret(int err);                 /* negative errno -> VIP_RETURN */
uint64_t vd_now_ns(void);                   /* CLOCK_MONOTONIC */
/* VIPL timeout (ms; VIP_INFINITE or ULONG_MAX = forever) -> deadline for
 * the *_sleep ops (0 = infinite). */
uint64_t vd_deadline(VIP_ULONG timeout_ms);
/* Same, as a provider timeout: -1 infinite, else ms clamped to INT_MAX. */
int vd_timeout_ms(VIP_ULONG timeout_ms);
/* The *Wait loop: poll() until it returns other than VIP_NOT_DONE, for
 * VIADUCT_SPIN_US, then alternate with sleep(arg, deadline) (0 or
 * -ETIMEDOUT, spurious returns allowed) until the timeout (ms). */
VIP_RETURN vd_poll_wait(VIP_RETURN (*poll)(void *), int (*sleep)(void *, uint64_t),
			void *arg, VIP_ULONG timeout);
/* Random 32-bit value (getrandom, never blocks). */
uint32_t vd_random32(void);
/* Debug log to stderr when VIADUCT_DEBUG is set. */
void vd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* VIADUCT_VIPL_INTERNAL_H */
