/* SPDX-License-Identifier: MIT */
/*
 * Description: one wake-up per sleep on the descriptor path.  A receiver
 * asleep in VipRecvWait takes tens of microseconds to run again and
 * disarm; the sends that arrive meanwhile must not each make a futex
 * system call.
 *  - The receiver (parent, VIADUCT_SPIN_US=0: it sleeps at once) posts
 *    BURST receives, then waits for the first in VipRecvWait and takes
 *    the rest with VipRecvDone (no second sleep), ROUNDS times.
 *  - The sender (child) waits until the receiver has armed, gives it
 *    2 ms to reach its futex, then posts BURST sends back to back.
 *  - Every message arrives, in order; the sender's wakes_sent is at least
 *    1 and at most ROUNDS.
 */
#include <stdatomic.h>
#include <string.h>

#include "viptest.h"
#include "vipl/vipl_internal.h"
#include "prov/shm/shm.h"

#define ROUNDS 5
#define BURST 100u
#define MSG 16u

/* ---- sender (child) -------------------------------------------------------------- */

/* True once the receiver armed its sleep on our transfers. */
static bool await_armed(VIP_VI_HANDLE vh)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);
	struct vd_shm_conn *c = vi ? vi->conn : NULL;

	VDT_CHECK(c != NULL);
	return c && vt_await_sleeper(&c->tx->rw.recv_waiting);
}

static void send_burst(VIP_VI_HANDLE vi, struct vt_mem *dm, struct vt_mem *sb, uint32_t *seq)
{
	VIP_DESCRIPTOR *d;

	for (unsigned k = 0; k < BURST; k++, (*seq)++) {
		uint8_t *p = (uint8_t *)sb->p + (size_t)k * MSG;

		memset(p, 0, MSG);
		memcpy(p, seq, sizeof(*seq));
		vt_desc_send(vt_desc_at(dm, k), sb->mh, p, MSG);
		VT_OK(VipPostSend(vi, vt_desc_at(dm, k), dm->mh));
	}
	for (unsigned k = 0; k < BURST; k++)
		VT_OK(VipSendWait(vi, 5000, &d));
}

static int sender(void *arg)
{
	struct viaduct_vi_stats st;
	struct vt_mem dm, sb;
	struct vt_side s;
	char disc[32];
	uint64_t more = 0;
	uint32_t seq = 0;
	(void)arg;

	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	VT_OK(vt_mem_get(s.nic, BURST * VT_DESC_STRIDE, NULL, &dm));
	VT_OK(vt_mem_get(s.nic, BURST * MSG, NULL, &sb));
	vt_side_connect(&s, vt_disc(disc, "wake"));
	while (vt_get_u64(vt_fd, &more) == 0 && more) {
		VDT_CHECK(await_armed(s.vi));
		send_burst(s.vi, &dm, &sb, &seq);
	}
	VT_OK(viaduct_vi_get_stats(s.vi, &st));
	printf("sender: %u messages in %d bursts, %llu wakes\n", seq, ROUNDS,
	       (unsigned long long)st.wakes_sent);
	VDT_CHECK(st.wakes_sent >= 1);
	VDT_CHECK(st.wakes_sent <= ROUNDS);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	vt_mem_put(&sb);
	vt_mem_put(&dm);
	return 0;
}

/* ---- receiver (parent) -------------------------------------------------------- */

/* Receives complete in the order they were posted: the k-th holds buffer k. */
static void check_message(VIP_DESCRIPTOR *d, const struct vt_mem *rb, unsigned k, uint32_t want)
{
	uint32_t got;

	VDT_CHECK(d && (d->CS.Status & VIP_STATUS_DONE) && d->CS.Length == MSG);
	memcpy(&got, (const uint8_t *)rb->p + (size_t)k * MSG, sizeof(got));
	VDT_CHECK(got == want);
}

static void receive_burst(VIP_VI_HANDLE vi, struct vt_mem *dm, struct vt_mem *rb, uint32_t *seq)
{
	uint64_t give_up = vt_now_ms() + 10000;
	VIP_DESCRIPTOR *d = NULL;
	VIP_RETURN r;

	for (unsigned k = 0; k < BURST; k++) {
		vt_desc_recv(vt_desc_at(dm, k), rb->mh, (uint8_t *)rb->p + (size_t)k * MSG, MSG);
		VT_OK(VipPostRecv(vi, vt_desc_at(dm, k), dm->mh));
	}
	VDT_CHECK(vt_put_u64(vt_fd, 1) == 0);   /* another burst */
	VT_OK(VipRecvWait(vi, 10000, &d));
	check_message(d, rb, 0, (*seq)++);
	for (unsigned k = 1; k < BURST; k++) {
		while ((r = VipRecvDone(vi, &d)) == VIP_NOT_DONE && vt_now_ms() < give_up)
			;
		VT_OK(r);
		check_message(d, rb, k, (*seq)++);
	}
}

static int receiver(void *arg)
{
	struct vt_mem dm, rb;
	struct vt_side s;
	char disc[32];
	uint32_t seq = 0;
	(void)arg;

	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	VT_OK(vt_mem_get(s.nic, BURST * VT_DESC_STRIDE, NULL, &dm));
	VT_OK(vt_mem_get(s.nic, BURST * MSG, NULL, &rb));
	vt_side_connect(&s, vt_disc(disc, "wake"));
	for (int round = 0; round < ROUNDS; round++)
		receive_burst(s.vi, &dm, &rb, &seq);
	VDT_CHECK(vt_put_u64(vt_fd, 0) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	vt_mem_put(&rb);
	vt_mem_put(&dm);
	return 0;
}

int main(void)
{
	setenv("VIADUCT_SPIN_US", "0", 1);
	return vt_run_main(receiver, sender, 2u << 20, 120);
}
