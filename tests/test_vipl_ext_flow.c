/* SPDX-License-Identifier: MIT */
/*
 * Description: the flow control extension (VIADUCT_VI_FLOW_CONTROL, seed
 * 001 section 3.7.1) at every reliability level.  The parent's VI has the
 * flag; it posts 8 sends (small and 64 KiB ones alternating) while the
 * child has no receive posted.  They stay pending (VipSendDone is
 * VIP_NOT_DONE, nothing is dropped, no error, the connection stays up);
 * then the child posts one receive at a time and every message arrives
 * once, in order, intact, and every send completes in order without an
 * error bit (odd ones are reaped by polling VipSendDone, which never
 * sleeps: the completion must come to a sender that only polls its send
 * queue).  stats.deferred_sends counts the 8 deferred sends,
 * stats.dropped_sends stays 0, no error callback fires on either side, and
 * both VIs are still connected at the end.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viptest.h"

#define N 8
#define SMALL 100u
#define LARGE (64u * 1024)
#define SEED 0x51f0u
/* A transfer's bound: generous, a sanitizer build on a busy machine
 * once took more than 3 s for one. */
#define WAIT_MS 15000

static const VIP_RELIABILITY_LEVEL levels[] = {
	VIP_SERVICE_UNRELIABLE, VIP_SERVICE_RELIABLE_DELIVERY,
	VIP_SERVICE_RELIABLE_RECEPTION,
};
#define NLEVELS 3

/* Errors reported for the VI under test.  Only that VI counts: the
 * CONN_LOST that the previous level's VipDisconnect raises at the peer
 * arrives asynchronously and is expected. */
static _Atomic int g_errors;
static VIP_VI_HANDLE _Atomic g_vi;

static void err_cb(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e)
{
	(void)ctx;
	if (e->ViHandle != atomic_load(&g_vi))
		return;
	fprintf(stderr, "error callback: code %d\n", (int)e->ErrorCode);
	atomic_fetch_add(&g_errors, 1);
}

static uint32_t msg_len(int k)
{
	return k % 2 ? LARGE : SMALL;
}

static VIP_VI_HANDLE make_vi(VIP_NIC_HANDLE nic, int lv, int server)
{
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, levels[lv]);
	VIP_VI_HANDLE vi;
	char tag[16], disc[32];

	va.EnableRdmaRead = VIP_FALSE;
	VT_OK(VipCreateVi(nic, &va, NULL, NULL, &vi));
	atomic_store(&g_vi, vi);
	atomic_store(&g_errors, 0);
	if (server) {
		struct viaduct_vi_ext ext = { .flags = VIADUCT_VI_FLOW_CONTROL };

		VT_OK(viaduct_vi_set_ext(vi, &ext));
	}
	snprintf(tag, sizeof(tag), "fc%d", lv);
	if (server)
		VT_OK(vt_server_accept(nic, vi, vt_disc(disc, tag), 5000));
	else
		VT_OK(vt_client_connect(nic, vi, vt_disc(disc, tag), 5000));
	return vi;
}

static void expect_connected(VIP_VI_HANDLE vi)
{
	VIP_VI_STATE st;
	VIP_VI_ATTRIBUTES a;
	VIP_BOOLEAN se, re;

	VT_OK(VipQueryVi(vi, &st, &a, &se, &re));
	VDT_CHECK_EQ(st, VIP_STATE_CONNECTED);
}

/* ---- receiver (child) ------------------------------------------------------- */

static void recv_level(VIP_NIC_HANDLE nic, struct vt_mem *dm, struct vt_mem *rb,
		       int lv)
{
	VIP_VI_HANDLE vi = make_vi(nic, lv, 0);
	struct viaduct_vi_stats st;
	VIP_DESCRIPTOR *d, *got;

	VDT_CHECK(vt_sync(vt_fd) == 0);         /* all 8 sends are posted */
	for (int k = 0; k < N; k++) {
		d = vt_desc_at(dm, (unsigned)k);
		memset(rb->p, 0, LARGE);
		vt_desc_recv(d, rb->mh, rb->p, LARGE);
		VT_OK(VipPostRecv(vi, d, dm->mh));
		VT_OK(VipRecvWait(vi, WAIT_MS, &got));
		VDT_CHECK(got == d);
		VDT_CHECK_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0);
		VDT_CHECK_EQ(d->CS.Length, msg_len(k));
		VDT_CHECK_EQ(((uint32_t *)rb->p)[0], k);
		VDT_CHECK(vt_check((uint8_t *)rb->p + 4, msg_len(k) - 4, SEED + k) < 0);
		/* Let the next send wait, long enough for it to be seen
		 * waiting: while this process sleeps, only the ofi provider's
		 * service thread reads the fabric, and after an application
		 * poll it may stay away for 20 ms (ofi_nic.c).  5 ms here
		 * once counted 7 deferred sends of 8 on a loaded machine, and
		 * 25 ms did in 3 of 150 runs beside a TSan test suite. */
		usleep(100 * 1000);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VT_OK(viaduct_vi_get_stats(vi, &st));
	VDT_CHECK_EQ(st.recvs, N);
	expect_connected(vi);
	VDT_CHECK_EQ(atomic_load(&g_errors), 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VipDisconnect(vi);
	VT_OK(VipDestroyVi(vi));
}

static int recv_main(void *arg)
{
	VIP_NIC_HANDLE nic;
	struct vt_mem dm, rb;

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(VipErrorCallback(nic, NULL, err_cb));
	VT_OK(vt_mem_get(nic, N * VT_DESC_STRIDE, NULL, &dm));
	VT_OK(vt_mem_get(nic, LARGE, NULL, &rb));
	for (int lv = 0; lv < NLEVELS; lv++)
		recv_level(nic, &dm, &rb, lv);
	vt_mem_put(&rb);
	vt_mem_put(&dm);
	VT_OK(VipCloseNic(nic));
	return 0;
}

/* ---- sender (parent) ---------------------------------------------------------- */

/* VipSendWait for even k; for odd k VipSendDone polled for up to 3 s. */
static VIP_RETURN reap_send(VIP_VI_HANDLE vi, int k, VIP_DESCRIPTOR **got)
{
	uint64_t give_up = vt_now_ms() + WAIT_MS;
	VIP_RETURN r;

	if (k % 2 == 0)
		return VipSendWait(vi, WAIT_MS, got);
	while ((r = VipSendDone(vi, got)) == VIP_NOT_DONE && vt_now_ms() < give_up)
		;
	return r;
}

static void send_level(VIP_NIC_HANDLE nic, struct vt_mem *dm, struct vt_mem *sb,
		       int lv)
{
	VIP_VI_HANDLE vi = make_vi(nic, lv, 1);
	struct viaduct_vi_stats st;
	VIP_DESCRIPTOR *d, *got;

	for (int k = 0; k < N; k++) {
		uint8_t *p = (uint8_t *)sb->p + (size_t)k * LARGE;

		((uint32_t *)p)[0] = (uint32_t)k;
		vt_fill(p + 4, msg_len(k) - 4, SEED + (uint32_t)k);
		vt_desc_send(vt_desc_at(dm, (unsigned)k), sb->mh, p, msg_len(k));
		VT_OK(VipPostSend(vi, vt_desc_at(dm, (unsigned)k), dm->mh));
	}
	usleep(50 * 1000);
	VT_EXPECT(VipSendDone(vi, &got), VIP_NOT_DONE);
	expect_connected(vi);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	for (int k = 0; k < N; k++) {
		d = vt_desc_at(dm, (unsigned)k);
		VT_OK(reap_send(vi, k, &got));
		VDT_CHECK(got == d);
		VDT_CHECK_EQ(d->CS.Status & VIP_STATUS_ERROR_MASK, 0);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VT_OK(viaduct_vi_get_stats(vi, &st));
	printf("level %#x: sends %llu deferred %llu dropped %llu\n", levels[lv],
	       (unsigned long long)st.sends, (unsigned long long)st.deferred_sends,
	       (unsigned long long)st.dropped_sends);
	VDT_CHECK_EQ(st.sends, N);
	VDT_CHECK_EQ(st.deferred_sends, N);
	VDT_CHECK_EQ(st.dropped_sends, 0);
	expect_connected(vi);
	VDT_CHECK_EQ(atomic_load(&g_errors), 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VipDisconnect(vi);
	VT_OK(VipDestroyVi(vi));
}

static int send_main(void *arg)
{
	VIP_NIC_HANDLE nic;
	struct vt_mem dm, sb;

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(VipErrorCallback(nic, NULL, err_cb));
	VT_OK(vt_mem_get(nic, N * VT_DESC_STRIDE, NULL, &dm));
	VT_OK(vt_mem_get(nic, (size_t)N * LARGE, NULL, &sb));
	for (int lv = 0; lv < NLEVELS; lv++) {
		send_level(nic, &dm, &sb, lv);
		printf("ok: flow control at level %#x\n", levels[lv]);
	}
	vt_mem_put(&sb);
	vt_mem_put(&dm);
	VT_OK(VipCloseNic(nic));
	return 0;
}

int main(void)
{
	return vt_run_main(send_main, recv_main, 2u << 20, 30);
}
