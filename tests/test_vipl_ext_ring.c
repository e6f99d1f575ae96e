/* SPDX-License-Identifier: MIT */
/*
 * Description: message rings (viaduct_ring_send / peek / release / next
 * and viaduct_cq_wait_any), parent receiving, child sending.
 *  - Before connecting, send and peek give VIP_INVALID_STATE; a bad
 *    handle, NULL data with a length, or a message over
 *    VIADUCT_RING_MAX_MSG gives VIP_INVALID_PARAMETER; release with
 *    nothing peeked gives VIP_INVALID_STATE; wait_any times out.
 *  - Stale payload never passes for a header: the first message fills
 *    its payload lines with words that would be valid headers one lap
 *    later; one-line messages then fill the ring up to the first such
 *    line, where the receiver, ahead of the paused sender, must find
 *    nothing; 600 more put a header on every one of those lines.
 *  - A stream of 20000 messages of mixed sizes (0 to the maximum, so the
 *    ring wraps at every offset) arrives whole, in order, byte-exact;
 *    the second half read with viaduct_ring_next, each message peeked
 *    until the next call.
 *  - A full ring says VIP_NOT_DONE and writes nothing; what was accepted
 *    is delivered after the receiver drains, and sending resumes.
 *  - A receiver asleep in viaduct_cq_wait_any wakes for a ring message.
 *  - Messages sent before the peer dies are still delivered; then peek
 *    says VIP_INVALID_STATE.  Stats count sends and receives.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viptest.h"

#define NSTREAM 20000u
#define NLAST 3u

static uint32_t size_of(uint32_t i)
{
	if (i % 97 == 0)
		return VIADUCT_RING_MAX_MSG - 4;
	return (i * 37u) % 3000u;
}

/* The shm provider's ring: 128 KiB of 64-byte lines (shm_layout.h). */
#define RING_LINES 2048u
#define FORGED_IDX 0xf0000000u
#define NSMALL1 (RING_LINES - 512u + 1)     /* lines 512 .. 2048 */
#define NSMALL (NSMALL1 + 600u)

/* Header word {len 0, pos} for absolute line `abs` (struct vd_ring_hdr). */
static uint64_t header_word(uint32_t abs)
{
	uint32_t h[2] = { 0, abs + 1 };
	uint64_t w;

	memcpy(&w, h, sizeof(w));
	return w;
}

/* The first message starts at line 0 with an 8-byte ring header and our
 * 4-byte index: line L >= 1 begins at payload offset 64 L - 12. */
static uint32_t forged_payload(uint8_t *buf)
{
	uint32_t len = VIADUCT_RING_MAX_MSG - 4;

	memset(buf, 0x5a, len);
	for (uint32_t l = 1; 64 * l - 12 + 8 <= len; l++) {
		uint64_t w = header_word(l + RING_LINES);
		memcpy(buf + 64 * l - 12, &w, sizeof(w));
	}
	return len;
}

/* ---- sender (child) -------------------------------------------------------------- */

static void send_forged(VIP_VI_HANDLE vi, uint8_t *buf)
{
	uint32_t idx = FORGED_IDX, len = forged_payload(buf);

	VT_OK(viaduct_ring_send(vi, &idx, sizeof(idx), buf, len));
	for (uint32_t k = 1; k <= NSMALL; k++) {
		VIP_RETURN r;
		if (k == NSMALL1 + 1) { /* the receiver looks ahead of us */
			VDT_CHECK(vt_sync(vt_fd) == 0);
			VDT_CHECK(vt_sync(vt_fd) == 0);
		}
		idx = FORGED_IDX + k;
		while ((r = viaduct_ring_send(vi, &idx, sizeof(idx), NULL, 0)) == VIP_NOT_DONE)
			sched_yield();
		VT_OK(r);
	}
}

static void send_one(VIP_VI_HANDLE vi, uint32_t i, uint8_t *buf)
{
	uint32_t len = size_of(i);
	VIP_RETURN r;

	vt_fill(buf, len, i);
	while ((r = viaduct_ring_send(vi, &i, sizeof(i), buf, len)) == VIP_NOT_DONE)
		sched_yield();
	VT_OK(r);
}

static uint32_t fill_ring(VIP_VI_HANDLE vi, uint32_t first, uint8_t *buf)
{
	uint32_t i = first;

	for (;; i++) {
		uint32_t len = size_of(i);
		vt_fill(buf, len, i);
		VIP_RETURN r = viaduct_ring_send(vi, &i, sizeof(i), buf, len);
		if (r == VIP_NOT_DONE)
			return i;
		VT_OK(r);
	}
}

static int sender(void *arg)
{
	uint8_t *buf = malloc(VIADUCT_RING_MAX_MSG);
	struct vt_side s;
	char disc[32];
	uint32_t i, full;
	(void)arg;

	VDT_CHECK(buf != NULL);
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	VT_EXPECT(viaduct_ring_send(s.vi, "x", 1, NULL, 0), VIP_INVALID_STATE);
	vt_side_connect(&s, vt_disc(disc, "ring"));
	VT_EXPECT(viaduct_ring_send(s.vi, "x", 1, NULL, 5), VIP_INVALID_PARAMETER);
	VT_EXPECT(viaduct_ring_send(s.vi, buf, 8, buf, VIADUCT_RING_MAX_MSG - 7),
		  VIP_INVALID_PARAMETER);
	VT_EXPECT(viaduct_ring_send(NULL, "x", 1, NULL, 0), VIP_INVALID_PARAMETER);
	send_forged(s.vi, buf);
	for (i = 0; i < NSTREAM; i++)
		send_one(s.vi, i, buf);
	VDT_CHECK(vt_sync(vt_fd) == 0);         /* the receiver has them all */
	/* Full ring while the receiver waits at the barrier. */
	full = fill_ring(s.vi, NSTREAM, buf);
	VDT_CHECK(vt_put_u64(vt_fd, full) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);         /* receiver drains */
	VDT_CHECK(vt_sync(vt_fd) == 0);         /* drained */
	send_one(s.vi, full, buf);
	/* Wake a sleeping receiver. */
	VDT_CHECK(vt_sync(vt_fd) == 0);
	usleep(200 * 1000);
	send_one(s.vi, full + 1, buf);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	/* Last words, then die without disconnecting. */
	for (i = 0; i < NLAST; i++)
		send_one(s.vi, full + 2 + i, buf);
	_exit(0);
}

/* ---- receiver (parent) ------------------------------------------------------------- */

static void recv_one(VIP_VI_HANDLE vi, VIP_CQ_HANDLE cq, uint32_t want)
{
	const void *m;
	VIP_UINT32 len;
	VIP_RETURN r;
	uint32_t idx;

	while ((r = viaduct_ring_peek(vi, &m, &len)) == VIP_NOT_DONE)
		VT_OK(viaduct_cq_wait_any(cq, 10000));
	VT_OK(r);
	VDT_CHECK(len == sizeof(idx) + size_of(want));
	memcpy(&idx, m, sizeof(idx));
	if (idx != want)
		fprintf(stderr, "message %u arrived, expected %u\n", idx, want);
	VDT_CHECK(idx == want);
	VDT_CHECK(vt_check((const uint8_t *)m + sizeof(idx), len - sizeof(idx), want) < 0);
	VT_OK(viaduct_ring_release(vi));
}

/* As recv_one, through viaduct_ring_next: the message stays peeked (a
 * peek returns it again) until the next call releases it. */
static void next_one(VIP_VI_HANDLE vi, VIP_CQ_HANDLE cq, uint32_t want)
{
	const void *m, *again;
	VIP_UINT32 len, len2;
	VIP_RETURN r;
	uint32_t idx;

	while ((r = viaduct_ring_next(vi, &m, &len)) == VIP_NOT_DONE)
		VT_OK(viaduct_cq_wait_any(cq, 10000));
	VT_OK(r);
	VT_OK(viaduct_ring_peek(vi, &again, &len2));
	VDT_CHECK(again == m && len2 == len);
	VDT_CHECK(len == sizeof(idx) + size_of(want));
	memcpy(&idx, m, sizeof(idx));
	if (idx != want)
		fprintf(stderr, "message %u arrived (next), expected %u\n", idx, want);
	VDT_CHECK(idx == want);
	VDT_CHECK(vt_check((const uint8_t *)m + sizeof(idx), len - sizeof(idx), want) < 0);
}

static void recv_forged(VIP_VI_HANDLE vi, VIP_CQ_HANDLE cq)
{
	uint8_t *want = malloc(VIADUCT_RING_MAX_MSG);
	uint32_t len, idx;
	const void *m;
	VIP_UINT32 got;
	VIP_RETURN r;

	VDT_CHECK(want != NULL);
	len = forged_payload(want);
	for (uint32_t k = 0; k <= NSMALL; k++) {
		if (k == NSMALL1 + 1) {
			VDT_CHECK(vt_sync(vt_fd) == 0);
			usleep(10 * 1000);
			VT_EXPECT(viaduct_ring_peek(vi, &m, &got), VIP_NOT_DONE);
			VDT_CHECK(vt_sync(vt_fd) == 0);
		}
		while ((r = viaduct_ring_peek(vi, &m, &got)) == VIP_NOT_DONE)
			VT_OK(viaduct_cq_wait_any(cq, 10000));
		VT_OK(r);
		memcpy(&idx, m, sizeof(idx));
		if (idx != FORGED_IDX + k || got != sizeof(idx) + (k ? 0 : len))
			fprintf(stderr, "message %u: index %#x, %u bytes\n", k, idx, (unsigned)got);
		VDT_CHECK(idx == FORGED_IDX + k);
		VDT_CHECK(got == sizeof(idx) + (k ? 0 : len));
		if (!k)
			VDT_CHECK(memcmp((const uint8_t *)m + sizeof(idx), want, len) == 0);
		VT_OK(viaduct_ring_release(vi));
	}
	free(want);
}

static void wait_broken(VIP_VI_HANDLE vi)
{
	uint64_t give_up = vt_now_ms() + 10000;

	while (vt_state(vi) == VIP_STATE_CONNECTED && vt_now_ms() < give_up)
		usleep(1000);
	VDT_CHECK(vt_state(vi) != VIP_STATE_CONNECTED);
}

static int receiver(void *arg)
{
	VIP_VI_ATTRIBUTES va;
	struct viaduct_vi_stats st;
	struct vt_side s;
	VIP_CQ_HANDLE cq;
	const void *m;
	VIP_UINT32 len;
	uint64_t full, t0;
	char disc[32];
	(void)arg;

	VT_OK(VipOpenNic("/dev/via_lo", &s.nic));
	VT_OK(VipCreateCQ(s.nic, 64, &cq));
	va = vt_vi_attrs(s.nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VT_OK(VipCreateVi(s.nic, &va, NULL, cq, &s.vi));
	VT_EXPECT(viaduct_ring_peek(s.vi, &m, &len), VIP_INVALID_STATE);
	VT_EXPECT(viaduct_ring_release(s.vi), VIP_INVALID_STATE);
	VT_EXPECT(viaduct_ring_peek(s.vi, NULL, &len), VIP_INVALID_PARAMETER);
	VT_EXPECT(viaduct_ring_next(s.vi, &m, &len), VIP_INVALID_STATE);
	VT_EXPECT(viaduct_ring_next(NULL, &m, &len), VIP_INVALID_PARAMETER);
	VT_EXPECT(viaduct_ring_next(s.vi, &m, NULL), VIP_INVALID_PARAMETER);
	VT_EXPECT(viaduct_cq_wait_any(cq, 20), VIP_TIMEOUT);
	VT_EXPECT(viaduct_cq_wait_any(NULL, 20), VIP_INVALID_PARAMETER);
	vt_side_connect(&s, vt_disc(disc, "ring"));
	recv_forged(s.vi, cq);
	for (uint32_t i = 0; i < NSTREAM / 2; i++)
		recv_one(s.vi, cq, i);
	for (uint32_t i = NSTREAM / 2; i < NSTREAM; i++)
		next_one(s.vi, cq, i);
	VT_OK(viaduct_ring_release(s.vi));      /* the last one next left */
	VT_EXPECT(viaduct_ring_release(s.vi), VIP_INVALID_STATE);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VDT_CHECK(vt_get_u64(vt_fd, &full) == 0);
	VDT_CHECK(full > NSTREAM + 2);          /* at least 3 messages fit */
	VDT_CHECK(vt_sync(vt_fd) == 0);
	for (uint32_t i = NSTREAM; i < full; i++)
		recv_one(s.vi, cq, i);
	VT_EXPECT(viaduct_ring_peek(s.vi, &m, &len), VIP_NOT_DONE);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	recv_one(s.vi, cq, (uint32_t)full);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	t0 = vt_now_ms();
	VT_OK(viaduct_cq_wait_any(cq, 10000));  /* asleep until it arrives */
	VDT_CHECK(vt_now_ms() - t0 >= 100);
	recv_one(s.vi, cq, (uint32_t)full + 1);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	wait_broken(s.vi);
	for (uint32_t i = 0; i < NLAST; i++)
		recv_one(s.vi, cq, (uint32_t)full + 2 + i);
	VT_EXPECT(viaduct_ring_peek(s.vi, &m, &len), VIP_INVALID_STATE);
	VT_OK(viaduct_vi_get_stats(s.vi, &st));
	VDT_CHECK(st.recvs == 1 + NSMALL + full + 2 + NLAST);
	vt_side_close(&s);
	return 0;
}

int main(void)
{
	return vt_run_main(receiver, sender, 0, 120);
}
