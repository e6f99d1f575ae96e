/* SPDX-License-Identifier: MIT */
/*
 * Description: VIADUCT_VI_DEEP_RING.  The child connects three VIs to the
 * parent: one plain, one with the flag set before its request, one
 * whose accepting VI alone has it.  It fills each one's message ring
 * with 1 KiB messages while the parent reads nothing, and the parent
 * fills the deep pair's other direction.  The deep rings take four
 * times as many (within a message, as each ring wraps at its own
 * place); the requester's flag sizes the pair, so the third ring is
 * plain.  Every message then arrives whole and in order.  Over ofi too (tests/ofi/blackbox.sh),
 * where each end's handshake names the ring it receives into.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "viptest.h"

#define MSG 1024u

/* Send until the ring is full: the receiver releases nothing meanwhile,
 * so the first VIP_NOT_DONE is final (over ofi too, whose sends queue
 * when the fabric is busy). */
static uint32_t fill_ring(VIP_VI_HANDLE vi, uint8_t *buf)
{
	uint32_t i;

	for (i = 0;; i++) {
		vt_fill(buf, MSG, i);
		VIP_RETURN r = viaduct_ring_send(vi, &i, sizeof(i), buf, MSG);
		if (r == VIP_NOT_DONE)
			return i;
		VT_OK(r);
	}
}

static void open_with(struct vt_side *s, uint32_t flags)
{
	struct viaduct_vi_ext ext;

	vt_side_open(s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	VT_OK(viaduct_vi_get_ext(s->vi, &ext));
	ext.flags |= flags;
	VT_OK(viaduct_vi_set_ext(s->vi, &ext));
}

static void drain(VIP_VI_HANDLE vi, uint64_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const void *m;
		VIP_UINT32 len;
		VIP_RETURN r;
		uint64_t end = vt_now_ms() + 10000;

		while ((r = viaduct_ring_peek(vi, &m, &len)) == VIP_NOT_DONE && vt_now_ms() < end)
			;
		VT_OK(r);
		VDT_CHECK_EQ(len, sizeof(i) + MSG);
		VDT_CHECK_EQ(*(const uint32_t *)m, i);
		VDT_CHECK_EQ(vt_check((const uint8_t *)m + sizeof(i), MSG, i), -1);
		VT_OK(viaduct_ring_release(vi));
	}
}

/* The child, the requester: fills the plain ring, the deep one, and the
 * one whose accepter alone asked for depth; then drains what the parent
 * sent back on the deep one. */
static int sender(void *arg)
{
	uint8_t *buf = malloc(MSG);
	struct vt_side plain, deep, acc_deep;
	struct viaduct_vi_ext ext = { VIADUCT_VI_FLAGS_ALL << 1, VIADUCT_XFER_AUTO };
	uint64_t back;
	char disc[32];
	(void)arg;

	VDT_CHECK(buf != NULL);
	open_with(&plain, 0);
	VT_EXPECT(viaduct_vi_set_ext(plain.vi, &ext), VIP_INVALID_PARAMETER);
	open_with(&deep, VIADUCT_VI_DEEP_RING);
	open_with(&acc_deep, 0);
	vt_side_connect(&plain, vt_disc(disc, "plain"));
	vt_side_connect(&deep, vt_disc(disc, "deep"));
	vt_side_connect(&acc_deep, vt_disc(disc, "acc_deep"));
	VDT_CHECK(vt_put_u64(vt_fd, fill_ring(plain.vi, buf)) == 0);
	VDT_CHECK(vt_put_u64(vt_fd, fill_ring(deep.vi, buf)) == 0);
	VDT_CHECK(vt_put_u64(vt_fd, fill_ring(acc_deep.vi, buf)) == 0);
	VDT_CHECK(vt_get_u64(vt_fd, &back) == 0);      /* the parent filled ours */
	drain(deep.vi, back);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&acc_deep);
	vt_side_close(&deep);
	vt_side_close(&plain);
	free(buf);
	return 0;
}

/* n within a message (each ring wraps at its own place) of want. */
static bool about(uint64_t n, uint64_t want)
{
	return n + 4 >= want && n <= want + 4;
}

static int receiver(void *arg)
{
	uint8_t *buf = malloc(MSG);
	struct vt_side plain, deep, acc_deep;
	uint64_t n_plain, n_deep, n_acc, n_back;
	char disc[32];
	(void)arg;

	VDT_CHECK(buf != NULL);
	vt_side_open(&plain, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	vt_side_open(&deep, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	open_with(&acc_deep, VIADUCT_VI_DEEP_RING);
	vt_side_connect(&plain, vt_disc(disc, "plain"));
	vt_side_connect(&deep, vt_disc(disc, "deep"));
	vt_side_connect(&acc_deep, vt_disc(disc, "acc_deep"));
	VDT_CHECK(vt_get_u64(vt_fd, &n_plain) == 0);
	VDT_CHECK(vt_get_u64(vt_fd, &n_deep) == 0);
	VDT_CHECK(vt_get_u64(vt_fd, &n_acc) == 0);
	/* The other way on the deep pair: the requester's ring is deep too. */
	n_back = fill_ring(deep.vi, buf);
	VDT_CHECK(vt_put_u64(vt_fd, n_back) == 0);
	printf("1 KiB messages a ring holds: %llu plain, %llu deep (%llu back), %llu "
	       "deep on the accepter only\n", (unsigned long long)n_plain,
	       (unsigned long long)n_deep, (unsigned long long)n_back, (unsigned long long)n_acc);
	VDT_CHECK(n_plain >= 8);
	VDT_CHECK(about(n_deep, 4 * n_plain));
	VDT_CHECK(about(n_back, 4 * n_plain));
	VDT_CHECK(about(n_acc, n_plain));
	drain(plain.vi, n_plain);
	drain(deep.vi, n_deep);
	drain(acc_deep.vi, n_acc);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&acc_deep);
	vt_side_close(&deep);
	vt_side_close(&plain);
	free(buf);
	return 0;
}

int main(void)
{
	return vt_run_main(receiver, sender, 0, 60);
}
