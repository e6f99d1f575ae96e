/* SPDX-License-Identifier: MIT */
/*
 * Two processes, threads (ThreadSafe = TRUE):
 *  1. two connections between the processes, each driven by its own
 *     thread on both sides, ping-ponging concurrently;
 *  2. one thread blocked in VipRecvWait while another calls VipRecvDone,
 *     VipQueryVi and VipPostRecv on the same VI: none of them blocks
 *     behind the waiter.
 */
#include "viptest.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define NVI 2
#define ROUNDS 2000
static char discs[NVI][32], disc_w[32];

struct lane {
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	struct vt_mem dm, bm;
	int fail;
};

static void lane_post_recv(struct lane *l, unsigned slot)
{
	VIP_DESCRIPTOR *d = vt_desc_at(&l->dm, slot);

	vt_desc_recv(d, l->bm.mh, (char *)l->bm.p + 1024 * slot, 1024);
	VT_OK(VipPostRecv(l->vi, d, l->dm.mh));
}

static void lane_send(struct lane *l, uint32_t seq, uint32_t len)
{
	VIP_DESCRIPTOR *d = vt_desc_at(&l->dm, 3), *o;
	char *b = (char *)l->bm.p + 3 * 1024;

	vt_fill(b, len, seq);
	vt_desc_send(d, l->bm.mh, b, len);
	d->CS.Control |= VIP_CONTROL_IMMEDIATE;
	d->CS.ImmediateData = seq;
	VT_OK(VipPostSend(l->vi, d, l->dm.mh));
	VT_OK(VipSendWait(l->vi, 5000, &o));
	VDT_CHECK(o == d);
}

static void lane_recv(struct lane *l, unsigned slot, uint32_t seq, uint32_t len)
{
	VIP_DESCRIPTOR *o;

	VT_OK(VipRecvWait(l->vi, 5000, &o));
	VDT_CHECK(o == vt_desc_at(&l->dm, slot));
	VDT_CHECK_EQ(o->CS.ImmediateData, seq);
	VDT_CHECK_EQ(o->CS.Length, len);
	VDT_CHECK(vt_check((char *)l->bm.p + 1024 * slot, len, seq) < 0);
}

/* Parent lanes send first; child lanes echo.  Receive slots alternate
 * 0/1 so the next receive is posted before the peer can send. */
static void *lane_main(void *p)
{
	struct lane *l = p;

	for (uint32_t i = 0; i < ROUNDS; i++) {
		uint32_t len = (i * 13) % 1000;

		if (!vt_is_child) {
			lane_post_recv(l, i & 1);
			lane_send(l, i, len);
			lane_recv(l, i & 1, i + 1000000, len);
		} else {
			lane_recv(l, i & 1, i, len);
			lane_post_recv(l, (i + 1) & 1);
			lane_send(l, i + 1000000, len);
		}
	}
	return NULL;
}

static int lanes(void *arg)
{
	VIP_NIC_HANDLE nic;
	struct lane l[NVI];
	pthread_t t[NVI];

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	for (int k = 0; k < NVI; k++) {
		VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, VIP_SERVICE_RELIABLE_RECEPTION);

		memset(&l[k], 0, sizeof(l[k]));
		l[k].nic = nic;
		VT_OK(VipCreateVi(nic, &va, NULL, NULL, &l[k].vi));
		VT_OK(vt_mem_get(nic, 4 * VT_DESC_STRIDE, NULL, &l[k].dm));
		VT_OK(vt_mem_get(nic, 4096, NULL, &l[k].bm));
		if (vt_is_child) {
			lane_post_recv(&l[k], 0);
			VT_OK(vt_client_connect(nic, l[k].vi, discs[k], 10000));
		} else {
			VT_OK(vt_server_accept(nic, l[k].vi, discs[k], 10000));
		}
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	for (int k = 0; k < NVI; k++)
		VDT_CHECK(pthread_create(&t[k], NULL, lane_main, &l[k]) == 0);
	for (int k = 0; k < NVI; k++)
		VDT_CHECK(pthread_join(t[k], NULL) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	for (int k = 0; k < NVI; k++) {
		VT_OK(VipDisconnect(l[k].vi));
		VT_OK(VipDestroyVi(l[k].vi));
		vt_mem_put(&l[k].dm);
		vt_mem_put(&l[k].bm);
	}
	VT_OK(VipCloseNic(nic));
	return 0;
}

/* ---- 2: Done / Post / Query beside a blocked Wait ------------------------ */

struct waiter {
	VIP_VI_HANDLE vi;
	int r;
	VIP_DESCRIPTOR *d;
};

static void *wait_main(void *p)
{
	struct waiter *w = p;

	w->r = VipRecvWait(w->vi, VIP_INFINITE, &w->d);
	return NULL;
}

static int wait_receiver(void *arg)
{
	struct vt_side s;
	struct lane l;
	struct waiter w;
	pthread_t t;
	VIP_DESCRIPTOR *o;
	uint64_t t0, worst = 0;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	memset(&l, 0, sizeof(l));
	l.vi = s.vi;
	VT_OK(vt_mem_get(s.nic, 4 * VT_DESC_STRIDE, NULL, &l.dm));
	VT_OK(vt_mem_get(s.nic, 4096, NULL, &l.bm));
	lane_post_recv(&l, 0);
	vt_side_connect(&s, disc_w);
	w.vi = s.vi;
	VDT_CHECK(pthread_create(&t, NULL, wait_main, &w) == 0);
	t0 = vt_now_ms();
	for (int i = 0; vt_now_ms() - t0 < 200; i++) {
		uint64_t c0 = vt_now_ms();
		VIP_VI_STATE st;

		VT_EXPECT(VipRecvDone(s.vi, &o), VIP_NOT_DONE);
		st = vt_state(s.vi);
		VDT_CHECK_EQ(st, VIP_STATE_CONNECTED);
		if (i == 10)
			lane_post_recv(&l, 1);
		if (vt_now_ms() - c0 > worst)
			worst = vt_now_ms() - c0;
	}
	/* Blocking behind the waiter would last until the sender sends,
	 * which happens only after this loop: any bound catches it; 1 s
	 * leaves room for a loaded machine. */
	if (worst > 1000) {
		fprintf(stderr, "VipRecvDone/QueryVi/PostRecv took %llu ms beside a waiter\n",
			(unsigned long long)worst);
		return 1;
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);   /* sender: go */
	VDT_CHECK(pthread_join(t, NULL) == 0);
	VT_OK(w.r);
	VDT_CHECK(w.d == vt_desc_at(&l.dm, 0));
	VT_OK(VipRecvWait(s.vi, 5000, &o));
	VDT_CHECK(o == vt_desc_at(&l.dm, 1));
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	vt_mem_put(&l.dm);
	vt_mem_put(&l.bm);
	return 0;
}

static int wait_sender(void *arg)
{
	struct vt_side s;
	struct lane l;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	memset(&l, 0, sizeof(l));
	l.vi = s.vi;
	VT_OK(vt_mem_get(s.nic, 4 * VT_DESC_STRIDE, NULL, &l.dm));
	VT_OK(vt_mem_get(s.nic, 4096, NULL, &l.bm));
	vt_side_connect(&s, disc_w);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	lane_send(&l, 1, 10);
	lane_send(&l, 2, 20);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	vt_mem_put(&l.dm);
	vt_mem_put(&l.bm);
	return 0;
}

int main(void)
{
	int r;

	for (int k = 0; k < NVI; k++) {
		char tag[8];

		snprintf(tag, sizeof(tag), "lane%d", k);
		vt_disc(discs[k], tag);
	}
	vt_disc(disc_w, "waiter");
	r = vt_fork2(lanes, lanes, NULL, 30);
	fprintf(stderr, "threads on separate VIs: %s\n", r ? "FAILED" : "ok");
	if (r)
		return r;
	r = vt_fork2(wait_receiver, wait_sender, NULL, 20);
	fprintf(stderr, "Done beside Wait: %s\n", r ? "FAILED" : "ok");
	return r;
}
