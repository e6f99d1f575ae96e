/* SPDX-License-Identifier: MIT */
/*
 * Core services for providers: the VIPL objects a provider works on (NIC,
 * VI with its two work queues, CQ, ptag, the translation and protection
 * table) and the functions it calls back (completion, breaking a
 * connection, local checks, asynchronous errors).  The operations a
 * provider implements are in prov.h; the core never includes a
 * provider's headers.
 *
 * Error convention inside: 0 or a negative errno.  VIP_RETURN values are
 * made only by the API functions (vd_ret()).
 *
 * Locking (outermost first):
 *   vd_nic.lock        object lists, ptags, TPT allocation
 *   vd_wq.lock         one per work queue (send, receive) of a VI; every
 *                      access to the queue's ring and to the provider's
 *                      state for that direction
 *   vd_cq.lock         the CQ consumer side
 * A thread holding a VI's send lock may take the same VI's receive lock
 * (never the reverse).  No lock is held across a sleep.
 */
#ifndef VIADUCT_VIPL_CORE_H
#define VIADUCT_VIPL_CORE_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vipl.h>
#include <viaduct/lmm.h>
#include <viaduct/viaduct.h>

#include "util/handle.h"
#include "util/list.h"
#include "util/lock.h"
#include "util/sys.h"

struct vd_nic;
struct vd_vi;
struct vd_cq;
struct vd_prov_ops;


/* ---- limits every provider shares (VipQueryNic, descriptor checks) ------ */
#define VD_ADDR_MAX 16                /* bytes of a host address, any provider */
#define VD_MAX_SEGS 16                /* data segments per descriptor */
#define VD_MAX_TRANSFER (1ul << 30)   /* bytes per descriptor, at most */
#define VD_MAX_QUEUE_DESC 65536       /* posted descriptors per work queue */
#define VD_MAX_CQ_ENTRIES 65536
#define VD_TPT_IDX_BITS 14
#define VD_TPT_MAX (1u << VD_TPT_IDX_BITS)   /* registrations per NIC */

/* ---- object types in the handle table (util/handle.h) --------------------- */
enum vd_obj_type {
	VD_OBJ_NIC = 1,
	VD_OBJ_VI = 2,
	VD_OBJ_CQ = 3,
	VD_OBJ_PTAG = 4,
	VD_OBJ_CONN = 5,
};

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
 * unguessable and a stale one fails.  The core keeps the table in private
 * memory and checks local segments against it; a provider learns of every
 * change through mr_reg / mr_update / mr_dereg and makes the registration
 * reachable for its peers however its transport needs (shm publishes a
 * sealed read-only copy; a fabric provider checks requests against the
 * core table on the target side, vd_tpt_check_rdma).
 *
 * Entry protocol: only the owner writes, under nic->lock; readers take no
 * lock and use the key as their sequence -- addr and len only change
 * together with the key, and the key passes through 0 between two
 * registrations of a slot.  Every access is seq_cst (see tpt.c). */
#define VD_TPT_RDMA_WRITE 0x1u
#define VD_TPT_RDMA_READ 0x2u

/* One registration as a provider sees it. */
struct vd_mr_info {
	uint32_t key;             /* handle >> VD_TPT_IDX_BITS */
	uint32_t ptag_id;
	uint64_t addr;
	uint64_t len;
	uint32_t flags;           /* VD_TPT_RDMA_* */
	bool pinned;              /* false: registered without pinning */
};

struct vd_tpt_entry {
	uint32_t key;             /* 0: free or revoked */
	uint32_t ptag_id;
	uint64_t addr;
	uint64_t len;
	uint32_t flags;           /* VD_TPT_RDMA_* */
	uint32_t reserved;
};

/* Private per-entry state. */
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
	struct vd_tpt_entry *e;             /* VD_TPT_MAX entries */
	struct vd_mr *mr;                   /* VD_TPT_MAX entries */
	uint32_t free_head;                 /* index+1; 0: none */
	uint32_t used;
};

static inline uint32_t vd_tpt_index(VIP_MEM_HANDLE h)
{
	return (uint32_t)(h & (VD_TPT_MAX - 1u));
}

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
/* Target-side check of a peer's RDMA request arriving on a VI: as
 * vd_tpt_check_local, plus the region's VD_TPT_RDMA_* flag `need`
 * (-EACCES without it).  A NULL-ptag VI accepts any region of the NIC. */
int vd_tpt_check_rdma(struct vd_nic *nic, VIP_MEM_HANDLE h, uint64_t addr,
		      uint64_t len, uint32_t vi_ptag_id, uint32_t need);
/* Range check without overflow: [addr, addr+len) in [base, base+size). */
static inline bool vd_range_inside(uint64_t base, uint64_t size, uint64_t addr,
				   uint64_t len)
{
	if (addr + len < addr)
		return false;
	return addr >= base && len <= size && addr - base <= size - len;
}

/* A snapshot of an entry (key, base, size, its ptag) judged for handle
 * h, [addr, addr+len) and the VI's ptag (0: any): 0, -EBADF, -ERANGE,
 * -EACCES.  Shared by the core's table and the providers' copies. */
static inline int vd_tpt_verdict(uint32_t key, uint64_t base, uint64_t size,
				 uint32_t eptag, VIP_MEM_HANDLE h, uint64_t addr,
				 uint64_t len, uint32_t ptag_id)
{
	if (!key || key != h >> VD_TPT_IDX_BITS)
		return -EBADF;
	if (!vd_range_inside(base, size, addr, len))
		return -ERANGE;
	if (ptag_id && eptag != ptag_id)
		return -EACCES;
	return 0;
}

/* ---- provider capabilities (asked through prov.h's query op) --------- */
/* vd_prov_caps.flags */
#define VD_PROV_MOVES_BY_ADDRESS 0x1u   /* copies by virtual address: a
                                         * registration need not be pinned */
#define VD_PROV_RINGS 0x2u              /* viaduct_ring_* message rings */
#define VD_PROV_RDMA_READ 0x4u          /* VIP_CONTROL_OP_RDMAREAD */
#define VD_PROV_RING_SOLO 0x8u          /* ring calls may skip the queue
                                         * locks when the application
                                         * serialises them (no thread of
                                         * the provider's own touches the
                                         * queues) */

struct vd_prov_caps {
	uint32_t flags;                     /* VD_PROV_* */
	uint32_t addr_len;                  /* bytes of a host address */
	uint32_t max_discriminator;         /* bytes */
	uint32_t inline_max;                /* bytes sent without a copy engine */
	uint64_t max_transfer;              /* bytes per descriptor */
	uint32_t max_vi, max_cq;            /* per NIC */
	uint32_t max_segs;                  /* data segments per descriptor */
	uint32_t reliability;               /* VIP_SERVICE_* levels offered */
	char fabric[64];                    /* what the provider runs on */
	uint64_t spin_ns;                   /* how long a blocking wait polls
	                                     * before it sleeps, unless
	                                     * VIADUCT_SPIN_US says (0: 20 us) */
};

/* ---- NIC (nic.c) ---------------------------------------------------------- */
struct vd_nic {
	struct vd_obj obj;
	const struct vd_prov_ops *ops;
	pthread_mutex_t lock;
	struct vd_tpt tpt;
	struct vd_ptag *default_ptag;
	uint8_t addr[VD_ADDR_MAX];          /* the provider's node address */
	char device[64];
	struct vd_prov_caps *caps;          /* what ops->query said at open */
	struct vd_prov_caps caps_store;
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

/* Take one of the NIC's `max` objects counted by *count (VIs, CQs);
 * false when all are taken.  vd_nic_unreserve gives it back. */
bool vd_nic_reserve(struct vd_nic *nic, uint32_t *count, uint32_t max);
void vd_nic_unreserve(struct vd_nic *nic, uint32_t *count);

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
	_Atomic uint32_t early_break;       /* VIP_ERROR_CODE + 1 of a break
	                                     * that came while an accepted VI
	                                     * was still Idle (vd_vi_connected
	                                     * applies it) */
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
/* Bytes a receive descriptor declares (the sum of its segments' Length). */
uint64_t vd_desc_room(VIP_DESCRIPTOR *d);
/* The first len bytes, laid out over the segments in order of their
 * declared Length, all land in registered memory. */
bool vd_recv_lands_registered(struct vd_vi *vi, VIP_DESCRIPTOR *d, uint64_t len);

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

/* Wake every thread sleeping on a queue's private word. */
void vd_wq_wake_local(struct vd_wq *q);

#endif /* VIADUCT_VIPL_CORE_H */
