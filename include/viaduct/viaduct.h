/* SPDX-License-Identifier: MIT */
/* viaduct: version and error strings shared by every layer. */
#ifndef VIADUCT_VIADUCT_H
#define VIADUCT_VIADUCT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VIADUCT_VERSION_MAJOR 0
#define VIADUCT_VERSION_MINOR 1
#define VIADUCT_VERSION_PATCH 0
#define VIADUCT_VERSION_STRING "0.1.0"

/* Version of the library actually loaded (may differ from the header). */
const char *viaduct_version(void);

/* Text for a negative errno returned by any viaduct function, with the
 * viaduct-specific meaning where there is one (e.g. -ENOMEM from lmm names
 * RLIMIT_MEMLOCK).  Never NULL. */
const char *viaduct_strerror(int err);

/* ---- parameters (VIADUCT_* environment variables) ------------------------------
 * One registry declares every variable (vdinfo --params lists them).
 * viaduct_param_uint: the value of a numeric, boolean (0/1) or choice
 * (index into the documented list) variable, or dflt when it is unset;
 * -EINVAL (printed once, naming what is allowed) for a bad value, never
 * the default instead; -ENOENT for an undeclared name.
 * viaduct_params_check: every set variable valid (0) or -EINVAL; warns
 * once about VIADUCT_* names nobody declares.  VipOpenNic and MPI_Init
 * call it and fail on -EINVAL. */
struct viaduct_param {
	const char *name, *type, *dflt, *range, *desc;
	const char *value;              /* from the environment, or NULL */
};
int viaduct_param_uint(const char *name, uint64_t dflt, uint64_t *value);
int viaduct_params_check(void);
int viaduct_param_count(void);
int viaduct_param_info(int index, struct viaduct_param *out);


#ifdef __cplusplus
}
#endif

#endif /* VIADUCT_VIADUCT_H */

/* ---- VIPL extensions (the CLAN VIA paper's section 3.7) -------------------------------
 * Declared once <vipl.h> is included (it includes this header), in either
 * order; they never change
 * standard VIPL behaviour: a VI whose flags are 0 behaves as VIA says. */
#if defined(VIPL_H) && !defined(VIADUCT_VIPL_EXT_H)
#define VIADUCT_VIPL_EXT_H
#ifdef __cplusplus
extern "C" {
#endif

/* Flow control (the CLAN VIA paper 3.7.1): a send, or RDMA write with immediate, that
 * finds no receive posted at the peer waits in the send queue, in order,
 * until one is posted -- instead of being dropped or breaking the
 * connection.  Only the sending VI needs the flag. */
#define VIADUCT_VI_FLOW_CONTROL 0x1u
/* Request splitting (the CLAN VIA paper 3.7.2): a message larger than the first
 * posted receive continues in the following receive descriptors.  Set on
 * the receiving VI.  Every descriptor but the last of a message completes
 * with VIADUCT_STATUS_MORE set; Length is the bytes placed in that one. */
#define VIADUCT_VI_SPLIT_RECV 0x2u
/* Single-threaded rings (like io_uring's SINGLE_ISSUER): the caller
 * promises that the VI's ring calls (viaduct_ring_*) run in one thread at
 * a time and never alongside another call on the same VI; they then take
 * no locks -- a locked instruction less per poll, send and release.  An
 * MPI library at MPI_THREAD_SERIALIZED is the intended user.  A provider
 * with a progress thread of its own (ofi) keeps the locks regardless. */
#define VIADUCT_VI_RING_SOLO 0x4u
/* A deeper message ring (viaduct_ring_*): 512 KiB a direction instead of
 * 128 KiB (shm and ofi).  A sender with many messages in flight then
 * waits less for the receiver to make room: between two processes on
 * one host, 1-16 KiB messages in windows of 64 go 10-35% faster, both
 * ways at once the most.  The cost is four times the memory and cache
 * lines a connection cycles through, so an MPI library sets it where a
 * host has few ranks.  The requesting VI's flag, at the time of the
 * request, sizes the connection. */
#define VIADUCT_VI_DEEP_RING 0x8u
#define VIADUCT_VI_FLAGS_ALL (VIADUCT_VI_FLOW_CONTROL | VIADUCT_VI_SPLIT_RECV | \
			      VIADUCT_VI_RING_SOLO | VIADUCT_VI_DEEP_RING)

/* In a receive descriptor's Status: the message continues in the next
 * receive descriptor (a bit VIA reserves, so standard clients never see it
 * unless they enabled VIADUCT_VI_SPLIT_RECV). */
#define VIADUCT_STATUS_MORE 0x200u

/* How the shm provider moves send data: inline in the transfer queue
 * ("PIO"), or written straight into the receive buffer with one
 * process_vm_writev ("DMA").  AUTO uses the measured switch point
 * (overridable with VIADUCT_SHM_PIO_MAX). */
enum viaduct_xfer_mode {
	VIADUCT_XFER_AUTO = 0,
	VIADUCT_XFER_PIO = 1,
	VIADUCT_XFER_DMA = 2
};

struct viaduct_vi_ext {
	VIP_UINT32 flags;               /* VIADUCT_VI_* */
	VIP_UINT32 xfer_mode;           /* enum viaduct_xfer_mode */
};

/* Set or read a VI's extension attributes; any state.  VIP_INVALID_PARAMETER
 * for a bad handle, unknown flag or mode. */
VIP_RETURN viaduct_vi_set_ext(VIP_VI_HANDLE vi, const struct viaduct_vi_ext *ext);
VIP_RETURN viaduct_vi_get_ext(VIP_VI_HANDLE vi, struct viaduct_vi_ext *ext);

/* Per-VI counters since VipCreateVi (cumulative over connections). */
struct viaduct_vi_stats {
	VIP_UINT64 sends;               /* send-queue descriptors completed
	                                 * without error (sends and RDMA) */
	VIP_UINT64 send_bytes;          /* message bytes (RDMA: rdma_bytes) */
	VIP_UINT64 recvs;               /* receive descriptors completed */
	VIP_UINT64 recv_bytes;
	VIP_UINT64 pio_sends;           /* data moved inline */
	VIP_UINT64 dma_sends;           /* data moved by process_vm_writev */
	VIP_UINT64 rdma_writes;
	VIP_UINT64 rdma_reads;
	VIP_UINT64 rdma_bytes;
	VIP_UINT64 deferred_sends;      /* flow control: sends that waited */
	VIP_UINT64 dropped_sends;       /* no receive posted, unreliable */
	VIP_UINT64 split_recvs;         /* receive descriptors marked MORE */
	VIP_UINT64 protection_errors;   /* RDMA refused, either side */
	VIP_UINT64 waits_slept;         /* *Wait calls that went to sleep */
	VIP_UINT64 wakes_sent;          /* futex wakes issued to the peer */
};

VIP_RETURN viaduct_vi_get_stats(VIP_VI_HANDLE vi, struct viaduct_vi_stats *stats);

/* ---- Message rings (docs/vipl.md "Message rings") --------------------------
 * Every connected VI also carries, in each direction, a ring for small
 * messages outside the descriptor queues: viaduct_ring_send copies the
 * message straight into the peer's ring -- no descriptor, no cookie, no
 * completion -- and the peer reads it in place with viaduct_ring_peek and
 * gives the space back with viaduct_ring_release.  On the shm provider a
 * message of up to 56 bytes moves as one cache line.
 *
 * Messages arrive whole and in order on each VI; there is no order between
 * ring messages and descriptor traffic.  A full ring is VIP_NOT_DONE
 * (nothing written: try again after the peer reads); the library never
 * waits for the peer.  Counted in viaduct_vi_stats sends / recvs.  The
 * calls take the VI's queue locks, so threads may share a VI (unless it
 * has VIADUCT_VI_RING_SOLO); a message returned by peek stays valid until
 * release, disconnect or destroy. */
#define VIADUCT_RING_MAX_MSG 32760u     /* hdr_len + data_len, at most */

/* The message is hdr followed by data (either may be empty).  VIP_SUCCESS;
 * VIP_NOT_DONE: the ring is full; VIP_INVALID_PARAMETER: bad handle, NULL
 * with a length, or longer than VIADUCT_RING_MAX_MSG; VIP_INVALID_STATE:
 * not connected (or the connection broke). */
VIP_RETURN viaduct_ring_send(VIP_VI_HANDLE vi, const void *hdr, VIP_UINT32 hdr_len,
			     const void *data, VIP_UINT32 data_len);
/* The oldest unreleased message: VIP_SUCCESS with *msg, *len; VIP_NOT_DONE:
 * none yet; VIP_INVALID_STATE: none, and the VI is not connected (messages
 * that arrived before a break are still returned); VIP_INVALID_PARAMETER:
 * bad handle, or the peer wrote a malformed ring (the connection breaks).
 * Peeking again without release returns the same message.  Over a
 * fabric, a peek drives it when the ring is empty -- except the first
 * peek after the release that emptied the ring, which returns
 * VIP_NOT_DONE at once (the caller's reply goes out before a look at the
 * fabric); poll again, or wait with viaduct_cq_wait_any. */
VIP_RETURN viaduct_ring_peek(VIP_VI_HANDLE vi, const void **msg, VIP_UINT32 *len);
/* Done with the message peek returned.  VIP_INVALID_STATE if none. */
VIP_RETURN viaduct_ring_release(VIP_VI_HANDLE vi);
/* Release the message peek or next returned, if one is outstanding, then
 * peek: one call a message for a reader that takes them one at a time.
 * Returns what the peek returns. */
VIP_RETURN viaduct_ring_next(VIP_VI_HANDLE vi, const void **msg, VIP_UINT32 *len);

/* Wait until the CQ holds a completion, or the ring of a VI whose receive
 * queue is bound to the CQ holds a message; consumes nothing (use
 * VipCQDone and viaduct_ring_peek).  Spins for VIADUCT_SPIN_US, then
 * sleeps.  VIP_SUCCESS, VIP_TIMEOUT, VIP_INVALID_PARAMETER. */
VIP_RETURN viaduct_cq_wait_any(VIP_CQ_HANDLE cq, VIP_ULONG timeout);

/* viaduct_cq_wait_any over several CQs, of the same or different NICs and
 * providers (a process that reaches some peers through shared memory and
 * others through a fabric): returns once any of them holds a completion
 * or a ring message; sleeps on all of them at once (futex_waitv).  At most
 * VIADUCT_CQ_SET_MAX CQs.  VIP_SUCCESS, VIP_TIMEOUT, VIP_INVALID_PARAMETER. */
#define VIADUCT_CQ_SET_MAX 8
VIP_RETURN viaduct_cq_wait_set(const VIP_CQ_HANDLE *cqs, unsigned n, VIP_ULONG timeout);
/* viaduct_cq_wait_set without its spin: for a caller that has polled (and
 * driven the fabrics, through VipCQDone or viaduct_ring_peek) for as long
 * as it cares to, and now wants to sleep at once. */
VIP_RETURN viaduct_cq_sleep_set(const VIP_CQ_HANDLE *cqs, unsigned n, VIP_ULONG timeout);

/* ---- registration without pinning --------------------------------------------
 * Like VipRegisterMem -- a handle, bounds, ptag and RDMA rights in the
 * protection table, revoked at once by VipDeregisterMem -- but the memory
 * is not locked, so RLIMIT_MEMLOCK does not limit it.  Only for providers
 * that move data by virtual address (shm: process_vm_readv/writev), where
 * a pin buys nothing; others answer VIP_INVALID_PARAMETER and need
 * VipRegisterMem.  Page lists of such a region are not stable. */
VIP_RETURN viaduct_register_mem_unpinned(VIP_NIC_HANDLE nic, VIP_PVOID addr,
					 VIP_ULONG length, const VIP_MEM_ATTRIBUTES *attrs,
					 VIP_MEM_HANDLE *mh);


#ifdef __cplusplus
}
#endif
#endif /* VIADUCT_VIPL_EXT_H */
