/* SPDX-License-Identifier: MIT */
/*
 * shm provider internals: the per-connection state both halves of the
 * provider use -- connection management (shm_conn.c, shm_service.c) and
 * the data path (shm_xfer.c, shm_cq.c).
 */
#ifndef VIADUCT_SHM_H
#define VIADUCT_SHM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "vipl/prov.h"
#include "prov/shm/shm_layout.h"

#define VD_SHM_ADDR_LEN 6               /* node address bytes */
#define VD_SHM_MAX_DISCRIMINATOR 32     /* base64-encoded into a socket name */
#define VD_SHM_MAX_VI 65536u            /* per NIC */
#define VD_SHM_MAX_CQ 4096u             /* per NIC: doorbell slots */

/* shm_ns.c: node address and one-node name service (prov.h ops). */
int vd_shm_node_address(struct vd_nic *nic, uint8_t *addr);
int vd_shm_ns_lookup(struct vd_nic *nic, const char *name, unsigned index, uint8_t *addr);
int vd_shm_ns_reverse(struct vd_nic *nic, const uint8_t *addr, char *name,
		      size_t room, size_t *need);

/* ---- the published translation and protection table (shm_tpt.c) ----------
 * A copy of the core's table in a sealed memfd that connected peers map
 * read-only and consult before any RDMA into or out of the owner's
 * memory. */
#define VD_SHM_TPT_MAGIC 0x76647470u      /* "vdtp" */
#define VD_SHM_TPT_VERSION 2u

struct vd_shm_tpt_entry {
	_Atomic uint32_t seq;     /* seqlock: odd while the entry changes */
	uint32_t key;             /* 0: free or revoked */
	uint64_t addr;
	uint64_t len;
	uint32_t ptag_id;
	uint32_t flags;           /* VD_TPT_RDMA_* */
};
_Static_assert(sizeof(struct vd_shm_tpt_entry) == 32, "TPT entry layout");

struct vd_shm_tpt_shared {
	uint32_t magic;
	uint32_t version;
	uint32_t nentries;
	uint32_t reserved[13];
	struct vd_shm_tpt_entry e[];
};
_Static_assert(sizeof(struct vd_shm_tpt_shared) == 64, "TPT header layout");

#define VD_SHM_TPT_BYTES \
	(sizeof(struct vd_shm_tpt_shared) + VD_TPT_MAX * sizeof(struct vd_shm_tpt_entry))

/* One connected VI's provider state (vd_vi.conn). */
struct vd_shm_conn {
	int sock;                           /* control channel to the peer */
	int pidfd;                          /* peer process, or -1 */
	pid_t peer_pid;                     /* from SO_PEERCRED */
	struct vd_vi *vi;

	struct vd_shm_region *region;       /* shared, read-write */
	size_t region_len;
	struct vd_shm_dir *tx;              /* we send here (we are S) */
	struct vd_shm_dir *rx;              /* we receive here (we are R) */
	struct vd_shm_cookie *tx_cookies;   /* tx->off_cookies, validated */
	struct vd_shm_xfer *tx_xfers;
	uint8_t *tx_ring;
	struct vd_shm_cookie *rx_cookies;
	struct vd_shm_xfer *rx_xfers;
	uint8_t *rx_ring;
	uint32_t depth;                     /* power of two */
	uint32_t pio_bytes;
	uint8_t *tx_msg, *rx_msg;           /* message rings (shm_ring.c) */
	uint32_t msg_lines;                 /* lines per message ring */

	/* Peer's TPT, mapped read-only (VD_SHM_TPT_BYTES), for RDMA. */
	const struct vd_shm_tpt_shared *peer_tpt;
	/* Peer's receive CQ doorbell page, mapped read-write, or NULL when
	 * the peer VI's receive queue has no CQ. */
	struct vd_cq_ring *peer_rcq;
	size_t peer_rcq_len;
	VIP_VI_ATTRIBUTES peer_attrs;       /* Ptag is NULL */

	/* Lazy private copies of the other side's indices (CLAN). */
	uint32_t tx_cookie_write_lazy;      /* sq lock */
	uint32_t tx_xfer_read_lazy;         /* sq lock */
	uint32_t tx_ring_read_lazy;         /* sq lock */
	uint32_t tx_ring_write;             /* sq lock: next ring byte */
	uint32_t tx_cookie_read;            /* sq lock: private mirror */
	uint32_t tx_xfer_write;             /* sq lock: private mirror */
	uint32_t rx_xfer_write_lazy;        /* rq lock */
	uint32_t rx_xfer_read;              /* rq lock: private mirror */
	uint32_t rx_cookie_write;           /* rq lock: private mirror */
	uint32_t rx_cookie_read_lazy;       /* rq lock */
	uint32_t rx_cookie_taken;           /* rq lock: cookies used so far */
	/* The value the peer's one sleeper held when we last woke it
	 * (wake_once in shm_xfer.c): its receives (sq lock), its sends (rq
	 * lock). */
	struct vd_shm_woken { uint32_t seen; bool valid; } peer_recv_woken, peer_send_woken;
	_Atomic uint32_t rx_offered;        /* cookies offered so far (the
	                                     * bound of cq_announced) */
	/* Message ring indices, absolute lines (shm_ring.c). */
	uint32_t msg_write;                 /* sq lock: next free line */
	uint64_t *msg_dirty;                /* sq lock: bit per tx line whose
	                                     * first word holds payload bytes */
	uint32_t msg_read_lazy;             /* sq lock: receiver's msg_read */
	_Atomic uint32_t msg_next;          /* rq lock: next header line (read
	                                     * unlocked by cq_rings_ready) */
	uint32_t msg_peeked;                /* rq lock: lines of the message
	                                     * peek returned, 0 = none */
	struct vd_list cq_link;             /* linked_cq->rings */
	struct vd_shm_cq *linked_cq;        /* receive CQ listing us, or NULL */
	/* Under linked_cq->rings_lock: */
	uint32_t cq_slot;                   /* our doorbell slot in it */
	uint32_t cq_seen;                   /* cq_announced turned into events */
	uint64_t cq_vi_bits;                /* the event: VI handle | RECV */

	_Atomic bool broken;                /* set once; no more transfers */
	bool in_epoll;                      /* service thread watches it */
};

/* Per-NIC provider state (vd_nic.prov). */
struct vd_shm_nic {
	struct vd_nic *nic;
	pthread_mutex_t lock;
	struct vd_list listeners;           /* struct vd_shm_listener */
	int tpt_fd;                         /* sealed; peers map it read-only */
	struct vd_shm_tpt_shared *tpt;      /* our writable mapping */
};

static inline struct vd_shm_nic *vd_shm_nic(struct vd_nic *nic)
{
	return nic->prov;
}

/* shm_tpt.c */
int vd_shm_tpt_open(struct vd_shm_nic *sn);
void vd_shm_tpt_close(struct vd_shm_nic *sn);
int vd_shm_mr_reg(struct vd_nic *nic, uint32_t idx, const struct vd_mr_info *m);
void vd_shm_mr_update(struct vd_nic *nic, uint32_t idx, const struct vd_mr_info *m);
int vd_shm_mr_dereg(struct vd_nic *nic, uint32_t idx);
/* Initiator-side check against a peer's read-only table: the handle is
 * live, the range inside it, the ptag the target VI's (0 = any), and
 * the region's VD_TPT_RDMA_* flag `need`.  0, -EBADF, -ERANGE, -EACCES. */
int vd_shm_tpt_check(const struct vd_shm_tpt_shared *t, VIP_MEM_HANDLE h,
		     uint64_t addr, uint64_t len, uint32_t vi_ptag_id, uint32_t need);

/* Per-CQ provider state (vd_cq.prov), made by cq_open (shm_cq.c).  The
 * memfd is handed to peers whose VIs send to a VI bound to this CQ. */
struct vd_shm_cq {
	int memfd;
	struct vd_cq_ring *ring;            /* the doorbell page peers write */
	size_t len;
	_Atomic int sleepers;               /* threads inside cq_sleep */
	_Atomic bool closing;
	_Atomic bool rescan;                /* look at every connection */
	/* Events ready to pop (VI handle | VD_CQR_RECV), in this process's
	 * memory only: local completions and harvested announcements. */
	pthread_mutex_t events_lock;
	uint64_t *events;
	uint32_t ev_head, ev_tail;          /* free-running; cap VD_CQ_EVENTS */
	_Atomic uint32_t ev_count;          /* tail - head, for lock-free looks */
	_Atomic bool overflow;              /* a local event was lost */
	/* Connections whose receiving VI is bound to this CQ: their
	 * announcements and message rings (viaduct_cq_wait_any).  Lock order:
	 * cq lock, rings_lock, events_lock. */
	pthread_mutex_t rings_lock;
	struct vd_list rings;               /* vd_shm_conn.cq_link */
	struct vd_shm_conn **slot_conn;     /* doorbell slot -> connection */
	uint32_t nslot_conn;                /* entries in slot_conn */
};

/* ---- service thread (shm_service.c) ---------------------------------------
 * One per process, started on first use: watches every connection's
 * socket and pidfd, and turns peer death, disconnect and error notices
 * into vd_vi_conn_broken(). */
int vd_shm_service_add(struct vd_shm_conn *c);
void vd_shm_service_remove(struct vd_shm_conn *c);

/* Control messages sent over a connection's socket after it is set up. */
enum vd_shm_notice {
	VD_SHM_NOTICE_DISCONNECT = 1,       /* orderly VipDisconnect */
	VD_SHM_NOTICE_RECVQ_EMPTY = 2,      /* your send found no receive */
	VD_SHM_NOTICE_LENGTH = 3,           /* your message did not fit */
	VD_SHM_NOTICE_RDMAW_PROT = 4,       /* RDMA write refused at you */
	VD_SHM_NOTICE_RDMAR_PROT = 5,       /* RDMA read refused at you */
};
/* Send one notice to the peer (never blocks; best effort). */
void vd_shm_notice(struct vd_shm_conn *c, enum vd_shm_notice n, bool breaks);

/* ---- connection set-up helpers (shm_conn.c) ------------------------------ */
/* Map, validate and wire up a connection region received from a peer or
 * created locally.  0 or -errno; on error nothing is left mapped. */
int vd_shm_region_create(uint32_t depth, uint32_t pio_bytes, uint32_t msg_bytes, int *memfd);
int vd_shm_conn_attach(struct vd_shm_conn *c, int memfd, int dir_tx);
void vd_shm_conn_free(struct vd_shm_conn *c);

/* ---- data path (shm_xfer.c, shm_rdma.c, shm_cq.c) ------------------------ */
void vd_shm_conn_ready(struct vd_vi *vi);
void vd_shm_conn_attrs_changed(struct vd_vi *vi);
int vd_shm_send_progress(struct vd_vi *vi);
int vd_shm_recv_publish(struct vd_vi *vi);
int vd_shm_recv_progress(struct vd_vi *vi);
int vd_shm_send_sleep(struct vd_vi *vi, uint64_t deadline_ns);
int vd_shm_recv_sleep(struct vd_vi *vi, uint64_t deadline_ns);
void vd_shm_wake(struct vd_vi *vi);
int vd_shm_mr_quiesce(struct vd_nic *nic, uint32_t idx);
/* Bytes [off, off+len) of a scatter list, as a new list. */
unsigned vd_shm_iov_slice(const struct iovec *src, unsigned n, uint64_t off,
			  uint64_t len, struct iovec *out);
/* The peer process has exited. */
bool vd_shm_peer_dead(const struct vd_shm_conn *c);
/* Copy total bytes to (write) or from the peer, in chunks; before each
 * chunk after the first: the connection still up, the peer alive, and
 * recheck (if any) passing.  0, -EIO, or recheck's error. */
int vd_shm_copy(struct vd_shm_conn *c, const struct iovec *l, unsigned nl,
		const struct iovec *r, unsigned nr, uint64_t total, bool write,
		int (*recheck)(struct vd_shm_conn *c, uint64_t off, uint64_t len, void *arg),
		void *arg);

int vd_shm_cq_open(struct vd_cq *cq);
void vd_shm_cq_close(struct vd_cq *cq);
int vd_shm_cq_pop(struct vd_cq *cq, uint64_t *vi_bits, bool *recv);
int vd_shm_cq_push_local(struct vd_cq *cq, struct vd_vi *vi, bool recv);
int vd_shm_cq_sleep(struct vd_cq *cq, uint64_t deadline_ns, bool rings);
int vd_shm_cq_arm(struct vd_cq *cq, struct vd_waitv *w, void **armed);
void vd_shm_cq_disarm(struct vd_cq *cq, void *armed, bool timed_out);
/* Sender side: the announcements of doorbell slot `slot` (< VD_CQR_SLOTS)
 * are new; rings the bell if the owner sleeps. */
void vd_cq_ring_signal(struct vd_cq_ring *r, uint32_t slot);
/* Ring the bell if its owner sleeps (call after a seq_cst publication).
 * True if it rang. */
bool vd_cq_ring_wake(struct vd_cq_ring *r);
/* Give a connection a doorbell slot in its receive CQ / take it back
 * (harvesting what it announced). */
int vd_shm_cq_slot_take(struct vd_shm_cq *sc, struct vd_shm_conn *c, uint64_t vi_bits);
void vd_shm_cq_slot_drop(struct vd_shm_cq *sc, struct vd_shm_conn *c);

/* Moving one message or RDMA (shm_rdma.c); sq lock held.  Fill iovecs for
 * the local data segments [first, SegCount) of a descriptor. */
unsigned vd_shm_local_iov(VIP_DESCRIPTOR *d, unsigned first, struct iovec *iov);
/* 0 done (descriptor completed), -EAGAIN deferred (flow control). */
int vd_shm_rdma(struct vd_vi *vi, struct vd_shm_conn *c, VIP_DESCRIPTOR *d);
/* Take the next cookie and announce a completion without payload (RDMA
 * write with immediate, whose receive imm_ready() made sure of): 0,
 * -ENOSPC (no receive), -EPROTO (transfer queue overrun). */
int vd_shm_post_imm(struct vd_vi *vi, struct vd_shm_conn *c, uint32_t imm,
		    uint32_t length, uint32_t op_status);
/* Outcome of a send or RDMA that found no usable receive: apply the VI's
 * reliability level.  Returns the sender's status bits. */
uint32_t vd_shm_no_receive(struct vd_vi *vi, struct vd_shm_conn *c,
			   enum vd_shm_notice why);

/* The receiver has posted receives it could not offer yet (shm_xfer.c). */
bool vd_shm_peer_backlog(struct vd_shm_conn *c);

/* Cookies for a message of `total` bytes: 0 and *n, -EAGAIN (wait: the
 * receiver has a backlog, or flow control is on), -ENOSPC (no receive
 * posted), -EMSGSIZE (too long, no splitting), -EPROTO. */
int vd_shm_plan_send(struct vd_vi *vi, struct vd_shm_conn *c, uint64_t total, unsigned *n);
/* Leave a send waiting in the queue (counted once); returns -EAGAIN. */
int vd_shm_defer(struct vd_vi *vi, VIP_DESCRIPTOR *d);

/* Publish a filled transfer slot (stamp last, then the tripwire word). */
void vd_shm_xfer_publish(struct vd_shm_conn *c, struct vd_shm_xfer *x);

/* The connection is unusable (peer broke the protocol, a copy failed):
 * shut the socket so both service threads report it. */
void vd_shm_conn_fail(struct vd_shm_conn *c, const char *why);
/* After a sender's descriptor completed in error at a reliable level:
 * tell the peer (`why`) and break the VI (send lock held). */
void vd_shm_break_after(struct vd_vi *vi, struct vd_shm_conn *c, enum vd_shm_notice why);

/* ---- message rings (shm_ring.c) -------------------------------------------
 * Send with the sq lock held, peek and release with the rq lock held:
 * 0, -EAGAIN (ring full / empty), -EMSGSIZE, -ENOTCONN, -EPROTO (the peer
 * wrote a malformed entry: the connection is failed), -EINVAL (release
 * without a peeked message). */
/* The sender's per-line bookkeeping for its ring (attach / free). */
int vd_shm_ring_init(struct vd_shm_conn *c);
int vd_shm_ring_send(struct vd_vi *vi, const void *hdr, uint32_t hlen,
		     const void *data, uint32_t len);
int vd_shm_ring_peek(struct vd_vi *vi, const void **msg, uint32_t *len);
int vd_shm_ring_release(struct vd_vi *vi);
bool vd_shm_ring_ready(struct vd_shm_conn *c);
/* List c's receive ring on vi's receive CQ (no VI lock held), and take it
 * off before the connection goes. */
void vd_shm_ring_link(struct vd_vi *vi, struct vd_shm_conn *c);
void vd_shm_ring_unlink(struct vd_shm_conn *c);
bool vd_shm_cq_rings_ready(struct vd_shm_cq *sc);
bool vd_shm_cq_ready(struct vd_cq *cq);

#endif /* VIADUCT_SHM_H */
