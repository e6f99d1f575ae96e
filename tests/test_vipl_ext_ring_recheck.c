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
 *    Only rounds whose send returned within the recheck window of the
 *    receiver's wait count (the sender stamps it): a sender held off the
 *    CPU longer (a loaded machine) publishes after the one recheck, which
 *    is no longer the race it stands for.  Such rounds are repeated, up
 *    to MAX_TRIES in all.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "viptest.h"
#include "vipl/vipl_internal.h"
#include "prov/shm/shm.h"
#include "util/sys.h"

#define ROUNDS 5
#define MAX_TRIES 40
#define SLICE_MS 50     /* VD_CQ_SLICE_NS */
/* A send that returned this soon after the wait began was published
 * before the recheck (VD_CQ_RECHECK_NS, 200 us after arming). */
#define ON_TIME_NS 150000ull

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
	/* When it was published at the latest (CLOCK_MONOTONIC: the same
	 * clock in both processes). */
	VDT_CHECK(vt_put_u64(vt_fd, vd_now_ns()) == 0);
}

static int sender(void *arg)
{
	struct vt_side s;
	char disc[32];
	(void)arg;

	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	vt_side_connect(&s, vt_disc(disc, "recheck"));
	uint64_t more = 0;

	for (uint32_t i = 0; vt_get_u64(vt_fd, &more) == 0 && more; i++)
		send_unrung(s.vi, i);
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

/* The wait for message `want` in ms, or UINT64_MAX when its send came
 * too late to stand for the race. */
static uint64_t wait_one(VIP_VI_HANDLE vi, VIP_CQ_HANDLE cq, uint32_t want)
{
	uint64_t t0 = vt_now_ms(), began = vd_now_ns(), took, sent = 0;
	const void *m;
	VIP_UINT32 len;

	VT_OK(viaduct_cq_wait_any(cq, 10000));
	took = vt_now_ms() - t0;
	VT_OK(viaduct_ring_peek(vi, &m, &len));
	VDT_CHECK(len == sizeof(want) && *(const uint32_t *)m == want);
	VT_OK(viaduct_ring_release(vi));
	VDT_CHECK(vt_get_u64(vt_fd, &sent) == 0);
	return sent - began < ON_TIME_NS ? took : UINT64_MAX;
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
	int n = 0, tries = 0;

	while (n < ROUNDS && tries < MAX_TRIES) {
		uint64_t t;

		VDT_CHECK(vt_put_u64(vt_fd, 1) == 0);   /* another round */
		t = wait_one(s.vi, cq, (uint32_t)tries++);
		if (t != UINT64_MAX)
			took[n++] = t;
	}
	VDT_CHECK(vt_put_u64(vt_fd, 0) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	printf("waits for an unrung message: %d of %d rounds sent in time\n", n, tries);
	VDT_CHECK(n == ROUNDS);
	qsort(took, (size_t)n, sizeof(took[0]), cmp_u64);
	printf("waits for an unrung message: median %llu ms (slice %d ms)\n",
	       (unsigned long long)took[n / 2], SLICE_MS);
	VDT_CHECK(took[n / 2] < SLICE_MS / 2);
	vt_side_close(&s);
	return 0;
}

int main(void)
{
	/* Sleep at once: the spin budget would see the message first. */
	setenv("VIADUCT_SPIN_US", "0", 1);
	return vt_run_main(receiver, sender, 0, 120);
}
