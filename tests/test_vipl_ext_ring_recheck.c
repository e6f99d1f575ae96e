/* SPDX-License-Identifier: MIT */
/*
 * Description: a ring message that did not ring the bell still ends a
 * sleep soon.  The shm provider publishes ring messages without a
 * store-load fence, so a sender can miss a receiver that arms its sleep
 * at that instant; the sleeper looks at its rings again, still armed,
 * 200 us after arming (VD_CQ_RECHECK_NS), long before its 50 ms slice.
 *  - vd_futex_waitv_recheck on a word nobody changes asks recheck()
 *    once, at the recheck (or at a deadline that comes first), and
 *    returns 0 long before its deadline; without a recheck asked it
 *    sleeps to the deadline and never asks.
 *  - The sender (child) waits until the receiver sleeps in
 *    viaduct_cq_wait_any, then sends with its wake-up suppressed (as if
 *    its load of the waiter count had passed its store), five times: the
 *    receiver's median wait is under 25 ms, and every message arrives.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "viptest.h"
#include "vipl/vipl_internal.h"
#include "prov/shm/shm.h"

#define ROUNDS 5
#define SLICE_MS 50     /* VD_CQ_SLICE_NS */

static int asked;

static bool ready_now(void *arg)
{
	(void)arg;
	asked++;
	return true;
}

static void check_waitv_recheck(void)
{
	_Atomic uint32_t word = 7;
	struct vd_waitv w = { &word, 7, false, 200000, ready_now, NULL };
	uint64_t t0 = vt_now_ms();

	VDT_CHECK(vd_futex_waitv_recheck(&w, 1, vd_now_ns() + 2000000000ull) == 0);
	VDT_CHECK(asked == 1);
	VDT_CHECK(vt_now_ms() - t0 < 1000);
	/* A deadline before the recheck: asked at the deadline all the same. */
	VDT_CHECK(vd_futex_waitv_recheck(&w, 1, vd_now_ns() + 50000ull) == 0);
	VDT_CHECK(asked == 2);
	w.recheck_ns = 0;
	VDT_CHECK(vd_futex_waitv_recheck(&w, 1, vd_now_ns() + 20000000ull) == -ETIMEDOUT);
	VDT_CHECK(asked == 2);
}

/* ---- sender (child) -------------------------------------------------------------- */

/* Wait until the receiver arms its sleep on its CQ's bell, then send
 * without looking at its waiter count. */
static void send_unrung(VIP_VI_HANDLE vh, uint32_t i)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);
	struct vd_shm_conn *c = vi->conn;
	struct vd_cq_ring *rcq = c->peer_rcq;
	uint64_t give_up = vt_now_ms() + 10000;

	VDT_CHECK(rcq != NULL);
	/* Send the moment it arms: between its last look and its futex. */
	while (!atomic_load(&rcq->c.waiting) && vt_now_ms() < give_up)
		;
	VDT_CHECK(atomic_load(&rcq->c.waiting) != 0);
	c->peer_rcq = NULL;
	VT_OK(viaduct_ring_send(vh, &i, sizeof(i), NULL, 0));
	c->peer_rcq = rcq;
}

static int sender(void *arg)
{
	struct vt_side s;
	char disc[32];
	(void)arg;

	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	vt_side_connect(&s, vt_disc(disc, "recheck"));
	for (uint32_t i = 0; i < ROUNDS; i++) {
		VDT_CHECK(vt_sync(vt_fd) == 0);
		send_unrung(s.vi, i);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	return 0;
}

/* ---- receiver (parent) -------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t wait_one(VIP_VI_HANDLE vi, VIP_CQ_HANDLE cq, uint32_t want)
{
	uint64_t t0 = vt_now_ms(), took;
	const void *m;
	VIP_UINT32 len;

	VT_OK(viaduct_cq_wait_any(cq, 10000));
	took = vt_now_ms() - t0;
	VT_OK(viaduct_ring_peek(vi, &m, &len));
	VDT_CHECK(len == sizeof(want) && *(const uint32_t *)m == want);
	VT_OK(viaduct_ring_release(vi));
	return took;
}

static int receiver(void *arg)
{
	VIP_VI_ATTRIBUTES va;
	struct vt_side s;
	VIP_CQ_HANDLE cq;
	uint64_t took[ROUNDS];
	char disc[32];
	(void)arg;

	check_waitv_recheck();
	VT_OK(VipOpenNic("/dev/via_lo", &s.nic));
	VT_OK(VipCreateCQ(s.nic, 64, &cq));
	va = vt_vi_attrs(s.nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VT_OK(VipCreateVi(s.nic, &va, NULL, cq, &s.vi));
	vt_side_connect(&s, vt_disc(disc, "recheck"));
	for (uint32_t i = 0; i < ROUNDS; i++) {
		VDT_CHECK(vt_sync(vt_fd) == 0);
		took[i] = wait_one(s.vi, cq, i);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	qsort(took, ROUNDS, sizeof(took[0]), cmp_u64);
	printf("waits for an unrung message: median %llu ms (slice %d ms)\n",
	       (unsigned long long)took[ROUNDS / 2], SLICE_MS);
	VDT_CHECK(took[ROUNDS / 2] < SLICE_MS / 2);
	vt_side_close(&s);
	return 0;
}

int main(void)
{
	/* Sleep at once: the spin budget would see the message first. */
	setenv("VIADUCT_SPIN_US", "0", 1);
	return vt_run_main(receiver, sender, 0, 120);
}
