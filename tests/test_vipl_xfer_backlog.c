/* SPDX-License-Identifier: MIT */
/*
 * More receives posted than the provider offers the sender at once (its
 * cookie window): the sends beyond the window must wait in the send queue
 * -- not be dropped, not break a reliable connection -- and complete as
 * the receiver reaps.  The sender waits only on a CQ bound to its send
 * queue, so the stalled sends must progress without VipSendDone/Wait.
 * Regression test: a sender once took "no cookie" for "no receive
 * posted" and broke the connection.
 */
#include "viptest.h"

#include <string.h>
#include <unistd.h>

#define N 200           /* well beyond the window */
#define LEN 64

static char disc[32];

static int receiver(void *arg)
{
	struct vt_side s;
	struct vt_mem dm, bm;
	VIP_DESCRIPTOR *d;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	VT_OK(vt_mem_get(s.nic, (size_t)N * VT_DESC_STRIDE, NULL, &dm));
	VT_OK(vt_mem_get(s.nic, (size_t)N * LEN, NULL, &bm));
	for (unsigned i = 0; i < N; i++) {
		vt_desc_recv(vt_desc_at(&dm, i), bm.mh, (char *)bm.p + i * LEN, LEN);
		VT_OK(VipPostRecv(s.vi, vt_desc_at(&dm, i), dm.mh));
	}
	vt_side_connect(&s, disc);
	VDT_CHECK(vt_sync(vt_fd) == 0);         /* all posted, connected */
	usleep(50 * 1000);                      /* let the sender run ahead */
	for (unsigned i = 0; i < N; i++) {
		VT_OK(VipRecvWait(s.vi, 5000, &d));
		VDT_CHECK(d == vt_desc_at(&dm, i));
		VDT_CHECK_EQ(d->CS.ImmediateData, i);
		VDT_CHECK_EQ(d->CS.Length, LEN);
		VDT_CHECK(vt_check((char *)bm.p + i * LEN, LEN, i) < 0);
	}
	VDT_CHECK_EQ(vt_state(s.vi), VIP_STATE_CONNECTED);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	vt_mem_put(&dm);
	vt_mem_put(&bm);
	return 0;
}

static int sender(void *arg)
{
	struct vt_side s;
	struct vt_mem dm, bm;
	struct viaduct_vi_stats st;
	VIP_VI_ATTRIBUTES va;
	VIP_CQ_HANDLE cq;
	VIP_VI_HANDLE vh;
	VIP_BOOLEAN recv;
	VIP_DESCRIPTOR *d;

	(void)arg;
	memset(&s, 0, sizeof(s));
	VT_OK(VipOpenNic("/dev/via_lo", &s.nic));
	va = vt_vi_attrs(s.nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VT_OK(VipCreateCQ(s.nic, 1024, &cq));
	VT_OK(VipCreateVi(s.nic, &va, cq, NULL, &s.vi));
	VT_OK(vt_mem_get(s.nic, (size_t)N * VT_DESC_STRIDE, NULL, &dm));
	VT_OK(vt_mem_get(s.nic, (size_t)N * LEN, NULL, &bm));
	vt_side_connect(&s, disc);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	for (unsigned i = 0; i < N; i++) {
		d = vt_desc_at(&dm, i);
		vt_fill((char *)bm.p + i * LEN, LEN, i);
		vt_desc_send(d, bm.mh, (char *)bm.p + i * LEN, LEN);
		d->CS.Control |= VIP_CONTROL_IMMEDIATE;
		d->CS.ImmediateData = i;
		VT_OK(VipPostSend(s.vi, d, dm.mh));
	}
	for (unsigned i = 0; i < N; i++) {
		VT_OK(VipCQWait(cq, 5000, &vh, &recv));
		VDT_CHECK(vh == s.vi && !recv);
		VT_OK(VipSendDone(s.vi, &d));
		VDT_CHECK(d == vt_desc_at(&dm, i));
	}
	VT_OK(viaduct_vi_get_stats(s.vi, &st));
	VDT_CHECK(st.deferred_sends > 0);       /* the window was exceeded */
	VDT_CHECK_EQ(st.dropped_sends, 0);
	VDT_CHECK_EQ(vt_state(s.vi), VIP_STATE_CONNECTED);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VT_OK(VipDisconnect(s.vi));
	VT_OK(VipDestroyVi(s.vi));
	VT_OK(VipDestroyCQ(cq));
	VT_OK(VipCloseNic(s.nic));
	vt_mem_put(&dm);
	vt_mem_put(&bm);
	return 0;
}

int main(void)
{
	vt_disc(disc, "backlog");
	return vt_fork2(sender, receiver, NULL, 60) ? VDT_FAIL : 0;
}
