/* SPDX-License-Identifier: MIT */
/*
 * The provider contract: what a provider (src/prov/<name>) implements for
 * the VIPL core, and how the core finds it.
 *
 * A provider fills a struct vd_prov_ops (size = sizeof, version =
 * VD_PROV_OPS_VERSION) and lists it in the table of providers (prov.c).
 * An operation it leaves NULL is replaced by a shared stub when the NIC
 * opens (vd_prov_resolve), so the core calls every operation without
 * checking: the stubs return -ENOSYS (or "nothing", for queries), which
 * the API turns into VIP_ERROR_NOT_SUPPORTED.  What the provider can do
 * it says in its capability query (struct vd_prov_caps), asked once per
 * NIC.  It reaches the core only through core.h and mechanics only in
 * src/util; every symbol it exports carries its prefix (vd_shm_,
 * vd_ofi_).
 */
#ifndef VIADUCT_VIPL_PROV_H
#define VIADUCT_VIPL_PROV_H

#include "vipl/core.h"

#define VD_PROV_OPS_VERSION 2u

struct vd_vi;
struct vd_cq;
struct vd_conn_req;

struct vd_prov_ops {
	uint32_t size;                      /* sizeof(struct vd_prov_ops) */
	uint32_t version;                   /* VD_PROV_OPS_VERSION */
	const char *name;

	/* NIC.  `spec` is what followed "name:" in the device name or
	 * VIADUCT_PROVIDER ("" if nothing). */
	int (*nic_open)(struct vd_nic *nic, const char *spec);
	void (*nic_close)(struct vd_nic *nic);
	/* Capabilities and limits of an open NIC; fills *caps. */
	void (*query)(struct vd_nic *nic, struct vd_prov_caps *caps);
	/* This node's address on the provider's network (caps.addr_len
	 * bytes; every NIC of the process has the same one). */
	int (*node_address)(struct vd_nic *nic, uint8_t *addr);

	/* Name service.  ns_lookup: host name or IP literal -> address
	 * (index: the index-th address of a multi-homed host); -ENXIO if
	 * unknown.  ns_reverse: address -> host name, NUL-terminated, in
	 * room bytes; -ENXIO unknown, -ENOSPC too small (*need set). */
	int (*ns_lookup)(struct vd_nic *nic, const char *name, unsigned index,
			 uint8_t *addr);
	int (*ns_reverse)(struct vd_nic *nic, const uint8_t *addr, char *name,
			  size_t room, size_t *need);

	/* Memory registration.  mr_reg: slot idx now holds *info (the core
	 * table already does; the provider registers with its fabric or
	 * publishes it to peers).  mr_update: ptag or RDMA enables changed.
	 * mr_dereg: the slot is revoked in the core table; make every peer
	 * see that and return once none can still touch the memory:
	 * 0, or -EBUSY when a live peer stayed inside (the core keeps the
	 * memory pinned and lets the caller retry). */
	int (*mr_reg)(struct vd_nic *nic, uint32_t idx, const struct vd_mr_info *info);
	void (*mr_update)(struct vd_nic *nic, uint32_t idx, const struct vd_mr_info *info);
	int (*mr_dereg)(struct vd_nic *nic, uint32_t idx);

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
	 * vi->conn = NULL; and cancel a pending peer-to-peer request (then
	 * vi->conn may be NULL).  Called with NO VI lock held (the provider's
	 * thread may be inside vd_vi_conn_broken for this VI); the core
	 * drains delivered data before and flushes after. */
	void (*disconnect)(struct vd_vi *vi);
	/* vi->conn was just attached: set up the data path (publish this
	 * VI's receive attributes, lazy indices).  No lock held. */
	void (*conn_ready)(struct vd_vi *vi);
	/* This VI's receive attributes (ptag, RDMA enables, split flag)
	 * changed while connected.  Both queue locks held. */
	void (*conn_attrs_changed)(struct vd_vi *vi);
	/* Wake every thread sleeping in send_sleep/recv_sleep on this VI. */
	void (*wake)(struct vd_vi *vi);

	/* Data path; called with the queue's lock held.  Each returns 0 or
	 * a negative errno (the core ignores it: failures complete
	 * descriptors or break the VI). */
	int (*send_progress)(struct vd_vi *vi);   /* process posted sends */
	int (*recv_publish)(struct vd_vi *vi);    /* offer posted receives */
	int (*recv_progress)(struct vd_vi *vi);   /* complete arrived data */
	/* Sleep (no lock held) until the queue may have progressed or
	 * deadline_ns (CLOCK_MONOTONIC; 0 = infinite) passes.  Returns 0
	 * or -ETIMEDOUT; spurious wake-ups are allowed. */
	int (*send_sleep)(struct vd_vi *vi, uint64_t deadline_ns);
	int (*recv_sleep)(struct vd_vi *vi, uint64_t deadline_ns);

	/* Completion queues. */
	int (*cq_open)(struct vd_cq *cq);
	void (*cq_close)(struct vd_cq *cq);
	/* Pop one event: 0 and (*vi_bits, *recv), or -EAGAIN.  CQ lock held. */
	int (*cq_pop)(struct vd_cq *cq, uint64_t *vi_bits, bool *recv);
	/* Append an event for a locally completed descriptor. */
	int (*cq_push_local)(struct vd_cq *cq, struct vd_vi *vi, bool recv);
	/* rings: a message in a ring feeding the CQ also ends the sleep. */
	int (*cq_sleep)(struct vd_cq *cq, uint64_t deadline_ns, bool rings);
	/* Non-consuming: the CQ holds an event, or the message ring of a VI
	 * whose receive queue is bound to it holds a message.  A provider
	 * whose fabric needs the caller's progress drives it here (a spin
	 * on readiness is the only thing that runs).  No lock held. */
	bool (*cq_ready)(struct vd_cq *cq);
	/* A sleep on several CQs at once (viaduct_cq_wait_set), of any
	 * providers: arm registers as a sleeper of cq, so that an event or
	 * ring message for it changes or wakes *w->word, and fills *w;
	 * returns 0 (armed; *armed for disarm), 1 (cq is ready already, or
	 * closing: nothing armed) or -errno.  Progress the provider needs
	 * meanwhile is its own affair (a thread of its own).  disarm undoes
	 * an arm that returned 0, even if the CQ is being destroyed
	 * meanwhile; timed_out: the sleep ran its course.  No lock held.
	 * A provider whose publishers may miss an arming (no store-load
	 * fence between publishing and reading the waiter count) fills in
	 * w->recheck_ns and w->recheck: the core asks recheck that long
	 * after arming, still armed (vd_futex_waitv_recheck). */
	int (*cq_arm)(struct vd_cq *cq, struct vd_waitv *w, void **armed);
	void (*cq_disarm)(struct vd_cq *cq, void *armed, bool timed_out);

	/* Message rings (caps VD_PROV_RINGS).  Send with sq.lock held, peek
	 * and release with rq.lock held.  0, -EAGAIN (full / empty),
	 * -EMSGSIZE, -ENOTCONN, -EPROTO, -EINVAL (nothing peeked). */
	int (*ring_send)(struct vd_vi *vi, const void *hdr, uint32_t hlen,
			 const void *data, uint32_t len);
	int (*ring_peek)(struct vd_vi *vi, const void **msg, uint32_t *len);
	int (*ring_release)(struct vd_vi *vi);
};

/* One entry of the table of providers. */
struct vd_prov_entry {
	const char *name;                   /* "shm", "ofi" */
	const struct vd_prov_ops *ops;      /* NULL: not built in */
	const char *missing;                /* why not, when ops is NULL */
};

/* The provider a device name selects, and what follows "name:" (spec).
 * Device names that name no provider ("/dev/via_lo", "clanvi0", ...)
 * select VIADUCT_PROVIDER, or the default provider (shm).  0, or
 * -ENOENT (unknown provider name in VIADUCT_PROVIDER, logged) or
 * -ENOTSUP (named but not built in, logged with the reason). */
int vd_prov_select(const char *device, const struct vd_prov_ops **ops,
		   char *spec, size_t spec_room);

/* A complete table: *out = *ops with every NULL operation replaced by
 * its stub.  -EPROTO if ops is of another contract version or larger
 * than this core knows. */
int vd_prov_resolve(const struct vd_prov_ops *ops, struct vd_prov_ops *out);

/* The provider of device names that name none, VIADUCT_PROVIDER unset. */
const struct vd_prov_ops *vd_prov_default(void);

extern const struct vd_prov_ops vd_shm_ops;
#ifdef VIADUCT_HAVE_OFI
extern const struct vd_prov_ops vd_ofi_ops;
#endif

#endif /* VIADUCT_VIPL_PROV_H */
