/* SPDX-License-Identifier: MIT */
/*
 * Description: VIADUCT_VI_DEEP_RING.  The child connects two VIs to the
 * parent, one plain and one with the flag set before its request, and
 * fills each one's message ring with 1 KiB messages while the parent
 * reads nothing.  The deep ring takes four times as many (within a
 * message, as each ring wraps at its own place); every message of both
 * then arrives whole and in order.  Over ofi too (tests/ofi/blackbox.sh),
 * where each end's handshake names the ring it receives into.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "viptest.h"

#define MSG 1024u

/* Send until the ring stays full for 300 ms: over a fabric a send may
 * also find no send buffer free for a moment. */
static uint32_t fill_ring(VIP_VI_HANDLE vi, uint8_t *buf)
{
	uint32_t i = 0;
	uint64_t full_since = 0;

	for (;;) {
		vt_fill(buf, MSG, i);
		VIP_RETURN r = viaduct_ring_send(vi, &i, sizeof(i), buf, MSG);
		if (r == VIP_NOT_DONE) {
			if (!full_since)
				full_since = vt_now_ms();
			else if (vt_now_ms() - full_since >= 300)
				return i;
			usleep(1000);
			continue;
		}
		VT_OK(r);
		full_since = 0;
		i++;
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

/* The child: both rings full, their counts to the parent. */
static int sender(void *arg)
{
	uint8_t *buf = malloc(MSG);
	struct vt_side plain, deep;
	struct viaduct_vi_ext ext = { VIADUCT_VI_FLAGS_ALL << 1, VIADUCT_XFER_AUTO };
	char disc[32];
	(void)arg;

	VDT_CHECK(buf != NULL);
	open_with(&plain, 0);
	VT_EXPECT(viaduct_vi_set_ext(plain.vi, &ext), VIP_INVALID_PARAMETER);
	open_with(&deep, VIADUCT_VI_DEEP_RING);
	vt_side_connect(&plain, vt_disc(disc, "plain"));
	vt_side_connect(&deep, vt_disc(disc, "deep"));
	VDT_CHECK(vt_put_u64(vt_fd, fill_ring(plain.vi, buf)) == 0);
	VDT_CHECK(vt_put_u64(vt_fd, fill_ring(deep.vi, buf)) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);         /* the parent has them all */
	vt_side_close(&deep);
	vt_side_close(&plain);
	free(buf);
	return 0;
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

static int receiver(void *arg)
{
	struct vt_side plain, deep;
	uint64_t n_plain, n_deep;
	char disc[32];
	(void)arg;

	vt_side_open(&plain, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	vt_side_open(&deep, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	vt_side_connect(&plain, vt_disc(disc, "plain"));
	vt_side_connect(&deep, vt_disc(disc, "deep"));
	VDT_CHECK(vt_get_u64(vt_fd, &n_plain) == 0);
	VDT_CHECK(vt_get_u64(vt_fd, &n_deep) == 0);
	printf("1 KiB messages a ring holds: %llu plain, %llu deep\n",
	       (unsigned long long)n_plain, (unsigned long long)n_deep);
	VDT_CHECK(n_plain >= 8);
	VDT_CHECK(n_deep + 4 >= 4 * n_plain && n_deep <= 4 * n_plain + 4);
	drain(plain.vi, n_plain);
	drain(deep.vi, n_deep);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&deep);
	vt_side_close(&plain);
	return 0;
}

int main(void)
{
	return vt_run_main(receiver, sender, 0, 60);
}
