/* SPDX-License-Identifier: MIT */
/*
 * Two processes, disconnect (vipl-interface.md 6.2): VipDisconnect returns
 * the VI to Idle and completes every outstanding descriptor with
 * VIP_STATUS_DESC_FLUSHED_ERROR; the peer's VI goes to Error, its
 * outstanding descriptors are flushed too (a thread blocked in
 * VipRecvWait(VIP_INFINITE) wakes up), VIP_ERROR_CONN_LOST is raised
 * asynchronously, sends there no longer transmit, and after Disconnect
 * both VIs connect again and work.  Also: the client's teardown order
 * (disconnect twice, destroy with unreaped flushed descriptors).
 */
#include "viptest.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static char disc[32], disc2[32];
static _Atomic int err_code = -1;
static VIP_VI_HANDLE _Atomic err_vi;

static void on_error(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e)
{
	(void)ctx;
	atomic_store(&err_vi, e->ViHandle);
	atomic_store(&err_code, (int)e->ErrorCode);
}

struct side {
	struct vt_side s;
	struct vt_mem dm, bm;
};

static void open_side(struct side *x)
{
	vt_side_open(&x->s, VIP_SERVICE_RELIABLE_RECEPTION, NULL);
	VT_OK(VipErrorCallback(x->s.nic, NULL, on_error));
	VT_OK(vt_mem_get(x->s.nic, 8 * VT_DESC_STRIDE, NULL, &x->dm));
	VT_OK(vt_mem_get(x->s.nic, 65536, NULL, &x->bm));
}

static void post_recvs(struct side *x, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		VIP_DESCRIPTOR *d = vt_desc_at(&x->dm, i);

		vt_desc_recv(d, x->bm.mh, (char *)x->bm.p + 4096 * i, 4096);
		VT_OK(VipPostRecv(x->s.vi, d, x->dm.mh));
	}
}

/* Reap n flushed receives in order. */
static void reap_flushed(struct side *x, unsigned n)
{
	VIP_DESCRIPTOR *o;

	for (unsigned i = 0; i < n; i++) {
		VT_EXPECT(VipRecvWait(x->s.vi, 2000, &o), VIP_DESCRIPTOR_ERROR);
		VDT_CHECK(o == vt_desc_at(&x->dm, i));
		VDT_CHECK(o->CS.Status & VIP_STATUS_DONE);
		VDT_CHECK(o->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR);
	}
	VT_EXPECT(VipRecvDone(x->s.vi, &o), VIP_DESCRIPTOR_ERROR);
	VDT_CHECK(o == NULL);
}

static void ping(struct side *x, int first)
{
	VIP_DESCRIPTOR *d = vt_desc_at(&x->dm, 7), *o;

	vt_desc_recv(vt_desc_at(&x->dm, 0), x->bm.mh, (char *)x->bm.p + 32768, 64);
	VT_OK(VipPostRecv(x->s.vi, vt_desc_at(&x->dm, 0), x->dm.mh));
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_fill(x->bm.p, 64, 42);
	vt_desc_send(d, x->bm.mh, x->bm.p, 64);
	if (first) {
		VT_OK(VipPostSend(x->s.vi, d, x->dm.mh));
		VT_OK(VipSendWait(x->s.vi, 5000, &o));
	}
	VT_OK(VipRecvWait(x->s.vi, 5000, &o));
	VDT_CHECK(vt_check((char *)x->bm.p + 32768, 64, 42) < 0);
	if (!first) {
		VT_OK(VipPostSend(x->s.vi, d, x->dm.mh));
		VT_OK(VipSendWait(x->s.vi, 5000, &o));
	}
}

/* The disconnecting side (parent). */
static int disconnector(void *arg)
{
	struct side x;

	(void)arg;
	open_side(&x);
	post_recvs(&x, 4);
	vt_side_connect(&x.s, disc);
	VDT_CHECK(vt_sync(vt_fd) == 0);   /* 1: peer has receives and a waiter */
	VT_OK(VipDisconnect(x.s.vi));
	VDT_CHECK_EQ(vt_state(x.s.vi), VIP_STATE_IDLE);
	reap_flushed(&x, 4);
	VDT_CHECK(vt_sync(vt_fd) == 0);   /* 2: peer checked its side */
	/* Reconnect the same VI and exchange a message. */
	vt_side_connect(&x.s, disc);
	ping(&x, 1);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	/* Teardown as one real client does it: receives outstanding,
	 * disconnect twice, destroy with flushed descriptors unreaped. */
	post_recvs(&x, 3);
	VT_OK(VipDisconnect(x.s.vi));
	VT_OK(VipDisconnect(x.s.vi));
	VT_OK(VipDestroyVi(x.s.vi));
	x.s.vi = NULL;
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&x.s);
	vt_mem_put(&x.dm);
	vt_mem_put(&x.bm);
	return 0;
}

struct waiter {
	VIP_VI_HANDLE vi;
	int r;
	VIP_DESCRIPTOR *d;
};

static void *wait_thread(void *p)
{
	struct waiter *w = p;

	w->r = VipRecvWait(w->vi, VIP_INFINITE, &w->d);
	return NULL;
}

/* The peer (child). */
static int peer(void *arg)
{
	struct side x;
	struct waiter w;
	pthread_t t;
	VIP_DESCRIPTOR *d, *o;
	int r;

	(void)arg;
	open_side(&x);
	vt_side_connect(&x.s, disc);
	post_recvs(&x, 3);
	w.vi = x.s.vi;
	VDT_CHECK(pthread_create(&t, NULL, wait_thread, &w) == 0);
	usleep(20000);   /* let the waiter block */
	VDT_CHECK(vt_sync(vt_fd) == 0);
	/* The waiter wakes with the first flushed receive. */
	VDT_CHECK(pthread_join(t, NULL) == 0);
	VT_EXPECT(w.r, VIP_DESCRIPTOR_ERROR);
	VDT_CHECK(w.d == vt_desc_at(&x.dm, 0));
	VDT_CHECK(w.d->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR);
	{
		uint64_t t0 = vt_now_ms();

		while (atomic_load(&err_code) != VIP_ERROR_CONN_LOST)
			VDT_CHECK(vt_now_ms() - t0 < 1000);
	}
	VDT_CHECK(atomic_load(&err_vi) == x.s.vi);
	VDT_CHECK_EQ(vt_state(x.s.vi), VIP_STATE_ERROR);
	for (unsigned i = 1; i < 3; i++) {
		VT_EXPECT(VipRecvWait(x.s.vi, 2000, &o), VIP_DESCRIPTOR_ERROR);
		VDT_CHECK(o == vt_desc_at(&x.dm, i));
		VDT_CHECK(o->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR);
	}
	/* A send on the broken VI does not transmit. */
	d = vt_desc_at(&x.dm, 6);
	vt_desc_send(d, x.bm.mh, x.bm.p, 10);
	r = VipPostSend(x.s.vi, d, x.dm.mh);
	if (r == VIP_SUCCESS) {
		VT_EXPECT(VipSendWait(x.s.vi, 2000, &o), VIP_DESCRIPTOR_ERROR);
		VDT_CHECK(o == d && (d->CS.Status & VIP_STATUS_ERROR_MASK));
	} else {
		VT_EXPECT(r, VIP_INVALID_STATE);
	}
	/* Receives posted in Error state are flushed (or refused). */
	vt_desc_recv(vt_desc_at(&x.dm, 5), x.bm.mh, x.bm.p, 64);
	r = VipPostRecv(x.s.vi, vt_desc_at(&x.dm, 5), x.dm.mh);
	if (r == VIP_SUCCESS) {
		VT_EXPECT(VipRecvWait(x.s.vi, 2000, &o), VIP_DESCRIPTOR_ERROR);
		VDT_CHECK(o->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR);
	} else {
		VT_EXPECT(r, VIP_INVALID_STATE);
	}
	VT_OK(VipDisconnect(x.s.vi));
	VDT_CHECK_EQ(vt_state(x.s.vi), VIP_STATE_IDLE);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_connect(&x.s, disc);
	ping(&x, 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	/* Peer disconnected while we have nothing posted: just Error. */
	VDT_CHECK(vt_sync(vt_fd) == 0);
	{
		uint64_t t0 = vt_now_ms();

		while (vt_state(x.s.vi) != VIP_STATE_ERROR)
			VDT_CHECK(vt_now_ms() - t0 < 1000);
	}
	vt_side_close(&x.s);
	vt_mem_put(&x.dm);
	vt_mem_put(&x.bm);
	return 0;
}

/* Destroying a connected VI (no Disconnect) also breaks the peer. */
static int destroyer(void *arg)
{
	struct side x;

	(void)arg;
	open_side(&x);
	vt_side_connect(&x.s, disc2);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VT_OK(VipDestroyVi(x.s.vi));
	x.s.vi = NULL;
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&x.s);
	vt_mem_put(&x.dm);
	vt_mem_put(&x.bm);
	return 0;
}

static int destroyed_peer(void *arg)
{
	struct side x;
	VIP_DESCRIPTOR *o;
	uint64_t t0;

	(void)arg;
	open_side(&x);
	post_recvs(&x, 2);
	vt_side_connect(&x.s, disc2);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VT_EXPECT(VipRecvWait(x.s.vi, 2000, &o), VIP_DESCRIPTOR_ERROR);
	VDT_CHECK(o->CS.Status & VIP_STATUS_DESC_FLUSHED_ERROR);
	t0 = vt_now_ms();
	while (vt_state(x.s.vi) != VIP_STATE_ERROR)
		VDT_CHECK(vt_now_ms() - t0 < 1000);
	/* The second flushed receive stays unreaped: destroy must cope. */
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&x.s);
	vt_mem_put(&x.dm);
	vt_mem_put(&x.bm);
	return 0;
}

int main(void)
{
	int r;

	vt_disc(disc, "disc");
	vt_disc(disc2, "disc2");
	r = vt_fork2(disconnector, peer, NULL, 20);
	fprintf(stderr, "disconnect: %s\n", r ? "FAILED" : "ok");
	if (r)
		return r;
	r = vt_fork2(destroyer, destroyed_peer, NULL, 20);
	fprintf(stderr, "destroy connected VI: %s\n", r ? "FAILED" : "ok");
	return r;
}
