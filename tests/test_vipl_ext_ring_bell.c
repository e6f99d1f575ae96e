/* SPDX-License-Identifier: MIT */
/*
 * Description: one bell per sleep.  A receiver that sleeps in
 * viaduct_cq_wait_any takes tens of microseconds to run again and disarm;
 * a sender streaming small ring messages into it meanwhile must not make
 * a futex system call for every one of them (each costs the sender more
 * than the message itself, so its stream slowed to half whenever the
 * receiver had gone to sleep).
 *  - The receiver (parent, VIADUCT_SPIN_US=0: it sleeps at once) waits
 *    in viaduct_cq_wait_any, ROUNDS times; the sender (child) waits until
 *    it has armed, gives it 2 ms to reach its futex, then sends BURST
 *    messages back to back.
 *  - The receiver arms once a round (it drains the burst by polling), so
 *    the sender's wakes_sent stays at most ROUNDS; every message arrives,
 *    in order.
 */
#include <stdatomic.h>

#include "viptest.h"
#include "vipl/vipl_internal.h"
#include "prov/shm/shm.h"

#define ROUNDS 5
#define BURST 400u

/* ---- sender (child) -------------------------------------------------------------- */

/* True once the receiver armed its sleep on its CQ's bell. */
static bool await_armed(VIP_VI_HANDLE vh)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);
	struct vd_cq_ring *rcq = vi && vi->conn ? ((struct vd_shm_conn *)vi->conn)->peer_rcq : NULL;

	VDT_CHECK(rcq != NULL);
	return rcq && vt_await_sleeper(&rcq->c.waiting);
}

static int sender(void *arg)
{
	struct viaduct_vi_stats st;
	struct vt_side s;
	char disc[32];
	uint64_t more = 0;
	uint32_t seq = 0;
	(void)arg;

	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	vt_side_connect(&s, vt_disc(disc, "bell"));
	while (vt_get_u64(vt_fd, &more) == 0 && more) {
		VDT_CHECK(await_armed(s.vi));
		for (uint32_t k = 0; k < BURST; k++, seq++)
			VT_OK(viaduct_ring_send(s.vi, &seq, sizeof(seq), NULL, 0));
	}
	VT_OK(viaduct_vi_get_stats(s.vi, &st));
	printf("sender: %u messages in %d bursts, %llu wakes\n", seq, ROUNDS,
	       (unsigned long long)st.wakes_sent);
	VDT_CHECK(st.wakes_sent >= 1);
	VDT_CHECK(st.wakes_sent <= ROUNDS);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	return 0;
}

/* ---- receiver (parent) -------------------------------------------------------- */

/* Read the next message by polling (no second sleep in a round). */
static void take(VIP_VI_HANDLE vi, uint32_t want)
{
	uint64_t give_up = vt_now_ms() + 10000;
	const void *m = NULL;
	VIP_UINT32 len = 0;
	VIP_RETURN r;

	while ((r = viaduct_ring_peek(vi, &m, &len)) == VIP_NOT_DONE && vt_now_ms() < give_up)
		;
	VT_OK(r);
	VDT_CHECK(len == sizeof(want) && *(const uint32_t *)m == want);
	VT_OK(viaduct_ring_release(vi));
}

static int receiver(void *arg)
{
	VIP_VI_ATTRIBUTES va;
	struct vt_side s;
	VIP_CQ_HANDLE cq;
	char disc[32];
	uint32_t seq = 0;
	(void)arg;

	VT_OK(VipOpenNic("/dev/via_lo", &s.nic));
	VT_OK(VipCreateCQ(s.nic, 64, &cq));
	va = vt_vi_attrs(s.nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VT_OK(VipCreateVi(s.nic, &va, NULL, cq, &s.vi));
	vt_side_connect(&s, vt_disc(disc, "bell"));
	for (int round = 0; round < ROUNDS; round++) {
		VDT_CHECK(vt_put_u64(vt_fd, 1) == 0);   /* another burst */
		VT_OK(viaduct_cq_wait_any(cq, 10000));
		for (uint32_t k = 0; k < BURST; k++)
			take(s.vi, seq++);
	}
	VDT_CHECK(vt_put_u64(vt_fd, 0) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	return 0;
}

int main(void)
{
	setenv("VIADUCT_SPIN_US", "0", 1);
	return vt_run_main(receiver, sender, 0, 120);
}
