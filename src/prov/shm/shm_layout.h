/* SPDX-License-Identifier: MIT */
/*
 * shm provider: layout of the memory two processes share for one
 * connection, and of a completion queue's event ring.  Versioned; offsets,
 * never pointers; every index written by one side only, on its own cache
 * line.  Everything read from here was written by another process and is
 * validated before use.
 *
 * Connection region (one memfd, made by the connecting side, sealed
 * against shrinking and growing so no access can SIGBUS):
 *
 *   struct vd_shm_region            header
 *   struct vd_shm_dir dir[2]        dir[0]: requester -> acceptor
 *                                   dir[1]: acceptor -> requester
 *   per direction, at dir.off_*:
 *     cookies[depth]                receiver -> sender: posted receives
 *     xfers[depth]                  sender -> receiver: completions
 *     pio ring (pio_bytes)          sender -> receiver: inline payloads
 *     message ring (msg_bytes)      sender -> receiver: viaduct_ring_send
 *
 * The CLAN distributed message queue (the CLAN VIA paper's figure 4): the producer
 * owns write_i, the consumer owns read_i, each keeps a lazy private copy
 * of the other's index and re-reads the shared one only when the queue
 * looks full (producer) or empty (consumer).
 */
#ifndef VIADUCT_SHM_LAYOUT_H
#define VIADUCT_SHM_LAYOUT_H

#include <assert.h>
#include <stdatomic.h>
#include <stdint.h>

#define VD_SHM_MAGIC 0x76647368u       /* "vdsh" */
#define VD_SHM_VERSION 6u
#define VD_CACHELINE 64

/* Cookie and transfer slots per direction.  Small on purpose: every
 * message moves to the next slot, so the lines a connection cycles
 * through are depth x (transfer + cookie line); with hundreds of
 * connections a deep ring falls out of the cache (bench/vipl figure 7).
 * Receives posted beyond it wait in the receiver's queue and are offered
 * as slots free up (see `backlog`). */
#define VD_SHM_DEPTH 32u
#define VD_SHM_PIO_BYTES (256u * 1024)  /* inline payload ring */
#define VD_SHM_INLINE 40u               /* payload bytes inside a slot */
#define VD_SHM_MSG_BYTES (128u * 1024)  /* message ring (viaduct_ring_*) */
#define VD_SHM_MSG_BYTES_DEEP (512u * 1024)     /* with VIADUCT_VI_DEEP_RING */

/* A message in the message ring starts on a line with this header; the
 * payload follows it, contiguous, and never wraps (a VD_RING_WRAP header
 * sends the reader back to offset 0).  `pos` is the absolute line index
 * of the header + 1, so a header left over from an earlier lap never
 * matches; and before publishing a message the writer zeroes the line
 * after it if that line's first word last held payload bytes, so stale
 * payload is never taken for a header either.  The 64-bit word is stored
 * last, with release. */
#define VD_RING_WRAP 0xffffffffu
struct vd_ring_hdr {
	uint32_t len;                   /* payload bytes, or VD_RING_WRAP */
	uint32_t pos;                   /* absolute line index + 1 */
};
static_assert(sizeof(struct vd_ring_hdr) == 8, "ring header layout");

/* One cache line per writer. */
#define VD_LINE(decl) \
	union { decl; char _pad_##__LINE__[VD_CACHELINE]; }

/* A receive descriptor offered to the sender (the RDMA cookie). */
struct vd_shm_seg {
	uint64_t addr;                  /* receiver's virtual address */
	uint32_t len;
	uint32_t reserved;
};

struct vd_shm_cookie {
	uint32_t seq;                   /* receiver's rq index, low 32 bits */
	uint16_t nseg;
	uint16_t reserved0;
	uint64_t total;                 /* sum of seg[].len */
	uint64_t reserved1[2];
	struct vd_shm_seg seg[16];      /* VD_MAX_SEGS */
};
static_assert(sizeof(struct vd_shm_cookie) == 288, "cookie layout");

/* vd_shm_xfer.flags */
#define VD_XF_INLINE 0x1u       /* payload in inl[] (inl_len bytes) */
#define VD_XF_RING 0x2u         /* payload in the pio ring at ring_off */
#define VD_XF_DMA 0x4u          /* payload already in the receive buffer */

/* One completed receive descriptor, announced by the sender.  The
 * receiver polls `stamp` (the transfer's index + 1, mod 2^16, stored last
 * with release), so noticing a message touches only this cache line:
 * a message of up to 40 bytes travels in exactly one line. */
struct vd_shm_xfer {
	uint32_t seq;                   /* the cookie it consumes (index) */
	uint32_t length;                /* bytes for this descriptor */
	uint32_t imm;                   /* immediate data */
	uint32_t status;                /* VIP_STATUS_OP_*, IMMEDIATE, errors,
	                                 * VIADUCT_STATUS_MORE */
	uint32_t ring_off;              /* VD_XF_RING: offset in the ring */
	uint16_t flags;                 /* VD_XF_* */
	_Atomic uint16_t stamp;         /* written last */
	uint8_t inl[VD_SHM_INLINE];     /* VD_XF_INLINE: `length` bytes */
};
static_assert(sizeof(struct vd_shm_xfer) == 64, "xfer slot layout");

/* vd_shm_xfer.flags: VD_XF_UNCHECKED -- the sender did not read the
 * cookie (inline data, no splitting, not Reliable Reception): the
 * receiver checks the length against its descriptor itself. */
#define VD_XF_UNCHECKED 0x8u

#define VD_RXF_SPLIT 0x1u       /* VIADUCT_VI_SPLIT_RECV */
#define VD_RXF_RDMA_WRITE 0x2u  /* receiving VI allows RDMA write */
#define VD_RXF_RDMA_READ 0x4u   /* receiving VI allows RDMA read */

/* One direction: "sender" S sends, "receiver" R receives.  R is also the
 * target of S's RDMA, so R's RDMA permissions live here. */
struct vd_shm_dir {
	/* written by R at every posted receive */
	VD_LINE(struct {
		_Atomic uint32_t cookie_write;  /* cookies published; S's futex
		                                 * word when its sends wait */
		_Atomic uint32_t backlog;       /* R has receives posted beyond
		                                 * the cookie window: a send that
		                                 * finds no cookie waits, it is
		                                 * not "no receive posted" */
	}) r;
	/* written by R at every completed receive; S reads them lazily */
	VD_LINE(struct {
		_Atomic uint32_t xfer_read;     /* xfers consumed */
		_Atomic uint32_t ring_read;     /* pio ring bytes released */
		_Atomic uint32_t msg_read;      /* message ring lines released */
	}) r2;
	/* written by R rarely: S reads these at every send, so they must not
	 * share a line with anything R writes often */
	VD_LINE(struct {
		_Atomic uint32_t rx_flags;      /* VD_RXF_* */
		_Atomic uint32_t rx_ptag;       /* R's VI ptag id, 0 = any */
		_Atomic uint32_t rx_cq_slot;    /* R's CQ doorbell slot + 1,
		                                 * 0 = no CQ */
	}) ra;
	/* written by R only around a sleep */
	VD_LINE(struct {
		_Atomic uint32_t recv_waiting;  /* R sleeps on s.xfer_write */
		_Atomic uint32_t recv_seen;     /* ... while it holds this */
	}) rw;
	/* written by S at every send; R reads them only to sleep */
	VD_LINE(struct {
		_Atomic uint32_t xfer_write;    /* xfers published; R's futex
		                                 * word (the tripwire) */
		_Atomic uint32_t cq_announced;  /* xfers announced: R's CQ
		                                 * events, never more than the
		                                 * cookies R offered */
	}) s;
	/* written by S; R reads them lazily */
	VD_LINE(struct {
		_Atomic uint32_t cookie_read;   /* cookies consumed */
		_Atomic uint32_t rdma_active;   /* TPT handle S is accessing in
		                                 * R's memory, 0 = none */
	}) s2;
	/* written by S only around a sleep */
	VD_LINE(struct {
		_Atomic uint32_t send_waiting;  /* S sleeps on r.cookie_write */
		_Atomic uint32_t send_seen;     /* ... while it holds this */
	}) sw;
	uint32_t off_cookies;           /* from the region start */
	uint32_t off_xfers;
	uint32_t off_ring;
	uint32_t off_msg;               /* message ring */
	uint32_t reserved[12];
};
static_assert(sizeof(struct vd_shm_dir) == 8 * VD_CACHELINE, "dir layout");

struct vd_shm_region {
	uint32_t magic;
	uint32_t version;
	uint32_t size;                  /* bytes of the whole region */
	uint32_t depth;                 /* slots per queue, power of two */
	uint32_t pio_bytes;             /* ring bytes per direction */
	uint32_t msg_bytes;             /* message ring bytes per direction */
	uint32_t reserved[10];
	struct vd_shm_dir dir[2];
};
static_assert(sizeof(struct vd_shm_region) == VD_CACHELINE + 2 * sizeof(struct vd_shm_dir),
	      "region layout");

/* ---- completion queue doorbell ----------------------------------------------
 * Every peer whose VI sends to a VI bound to a CQ maps this page read-write,
 * so nothing in it is trusted, locked or pointed through.  It carries no
 * events: a sender counts its announced transfers in its own connection
 * region (vd_shm_dir.s.cq_announced), then sets the bit of the slot the
 * receiver gave that connection (vd_shm_dir.ra.rx_cq_slot) in `pending`,
 * that word's bit in `summary` (or, without a slot, `everyone`), and rings
 * the bell if the owner sleeps.
 * The owner turns bits into events from its own table of connections and
 * checks each count against the receives it offered (shm_cq.c).  A peer
 * that scribbles here can cause spurious wake-ups and scans, or delay a
 * wake-up by one sleep slice -- never a completion, a crash or a hang. */
#define VD_CQR_MAGIC 0x76646371u        /* "vdcq" */
#define VD_CQR_VERSION 4u
#define VD_CQR_RECV (1ull << 63)        /* local event: receive queue */
#define VD_CQR_SLOTS 4096u              /* connections with a slot */
#define VD_CQR_NO_SLOT (VD_CQR_SLOTS + 1)  /* rx_cq_slot: a CQ, no slot */
#define VD_CQR_WORDS (VD_CQR_SLOTS / 64)

struct vd_cq_ring {
	uint32_t magic;
	uint32_t version;
	uint32_t size;                  /* bytes of the region */
	uint32_t slots;                 /* VD_CQR_SLOTS */
	uint32_t reserved[12];
	VD_LINE(struct {
		_Atomic uint32_t waiting;   /* owner sleeps on bell */
		/* 1: a sender rang the bell since the last sleeper armed, so
		 * the others need not (a wake-up costs a system call, and a
		 * sleeper takes tens of microseconds to disarm) */
		_Atomic uint32_t rung;
	}) c;
	/* The owner's futex word, bumped by a sender that saw `waiting`:
	 * both transfer announcements and message-ring sends to a VI bound
	 * to the CQ ring it (viaduct_cq_wait_any). */
	VD_LINE(struct {
		_Atomic uint32_t bell;
	}) b;
	/* From here on one line holds the summary and the first 48 slots,
	 * so a CQ with few connections moves one line per signal. */
	_Atomic uint64_t summary;       /* bit w: pending[w] may be set */
	_Atomic uint64_t everyone;      /* a sender without a slot signalled:
	                                 * look at every connection */
	_Atomic uint64_t pending[VD_CQR_WORDS];     /* bit per slot */
};
static_assert(VD_CQR_WORDS <= 64, "one summary word");
static_assert(sizeof(struct vd_cq_ring) == 3 * VD_CACHELINE + 16 + 8 * VD_CQR_WORDS,
	      "CQ page layout");

#endif /* VIADUCT_SHM_LAYOUT_H */
