/* SPDX-License-Identifier: MIT */
/*
 * vipl API layer internals: what the API files in src/vipl share
 * beyond the core services (core.h) and the provider contract (prov.h).
 * Providers never include this header.
 */
#ifndef VIADUCT_VIPL_INTERNAL_H
#define VIADUCT_VIPL_INTERNAL_H

#include "vipl/prov.h"

/* ---- notify (notify.c) ---------------------------------------------------- */
struct vd_notify {
	struct vd_notify *next;
	void *ctx;
	union {
		VIP_VI_CALLBACK vi_fn;
		VIP_CQ_CALLBACK cq_fn;
	};
};

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

/* tpt.c */
int vd_tpt_init(struct vd_nic *nic);
void vd_tpt_release_all(struct vd_nic *nic);
void vd_tpt_fini(struct vd_nic *nic);
/* ptag.c */
int vd_ptag_create(struct vd_nic *nic, struct vd_ptag **out);
void vd_ptag_destroy_all(struct vd_nic *nic);

/* ---- misc (util.c) ------------------------------------------------------- */
VIP_RETURN vd_ret(int err);                 /* negative errno -> VIP_RETURN */
/* VIPL timeout (ms; VIP_INFINITE or ULONG_MAX = forever) -> deadline for
 * the *_sleep ops (0 = infinite). */
uint64_t vd_deadline(VIP_ULONG timeout_ms);
/* Same, as a provider timeout: -1 infinite, else ms clamped to INT_MAX. */
int vd_timeout_ms(VIP_ULONG timeout_ms);
/* How long *Wait on nic polls before sleeping: VIADUCT_SPIN_US when
 * given, else the provider's budget (caps.spin_ns), else 20 us. */
uint64_t vd_spin_ns(const struct vd_nic *nic);
/* The *Wait loop: poll() until it returns other than VIP_NOT_DONE, for
 * vd_spin_ns(nic), then alternate with sleep(arg, deadline) (0 or
 * -ETIMEDOUT, spurious returns allowed) until the timeout (ms). */
VIP_RETURN vd_poll_wait(const struct vd_nic *nic, VIP_RETURN (*poll)(void *),
			int (*sleep)(void *, uint64_t), void *arg, VIP_ULONG timeout);
/* Same, spinning for spin_ns instead (0: one poll, then sleep). */
VIP_RETURN vd_poll_wait_spin(VIP_RETURN (*poll)(void *), int (*sleep)(void *, uint64_t),
			     void *arg, VIP_ULONG timeout, uint64_t spin_ns);

#endif /* VIADUCT_VIPL_INTERNAL_H */
