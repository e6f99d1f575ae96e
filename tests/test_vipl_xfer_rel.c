/* SPDX-License-Identifier: MIT */
/*
 * Two processes, reliability levels (vipl-interface.md 6.5):
 *  - no receive posted: unreliable drops the message and the connection
 *    survives; reliable delivery breaks it (receiver VI -> Error, async
 *    VIP_ERROR_RECVQ_EMPTY); reliable reception also completes the
 *    sender's descriptor in error;
 *  - receive too small: VIP_STATUS_LENGTH_ERROR and nothing written past
 *    the receive buffer (guard bytes), at every level;
 *  - a send whose data segment has a bad memory handle or lies outside
 *    its region is refused or completes with a protection error, and
 *    delivers nothing (unreliable: the connection survives).
 */
#include "viptest.h"

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static char disc[32];
static VIP_USHORT level;

static atomic_int err_seen;          /* count of async errors */
static _Atomic int err_code = -1;    /* last VIP_ERROR_CODE */
static VIP_VI_HANDLE _Atomic err_vi;

static void on_error(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e)
{
	(void)ctx;
	atomic_store(&err_vi, e->ViHandle);
	atomic_store(&err_code, (int)e->ErrorCode);
	atomic_fetch_add(&err_seen, 1);
}

static int wait_state(VIP_VI_HANDLE vi, VIP_VI_STATE want, unsigned ms)
{
	uint64_t t0 = vt_now_ms();

	while (vt_state(vi) != want)
		if (vt_now_ms() - t0 > ms)
			return -1;
		else
			usleep(1000);
	return 0;
}

static int wait_error(int code, unsigned ms)
{
	uint64_t t0 = vt_now_ms();

	while (atomic_load(&err_code) != code)
		if (vt_now_ms() - t0 > ms)
			return -1;
		else
			usleep(1000);
	return 0;
}

struct side {
	struct vt_side s;
	struct vt_mem dm, bm;
};

static void open_side(struct side *x)
{
	vt_side_open(&x->s, level, NULL);
	VT_OK(VipErrorCallback(x->s.nic, NULL, on_error));
	VT_OK(vt_mem_get(x->s.nic, 8 * VT_DESC_STRIDE, NULL, &x->dm));
	VT_OK(vt_mem_get(x->s.nic, 65536, NULL, &x->bm));
	memset(x->bm.p, 0xee, x->bm.len);
	vt_side_connect(&x->s, disc);
}

static void close_side(struct side *x)
{
	vt_side_close(&x->s);
	vt_mem_put(&x->dm);
	vt_mem_put(&x->bm);
}

/* Post a send of len bytes (pattern seed) and wait for its completion;
 * returns the *Wait result. */
static int send_one(struct side *x, uint32_t len, uint32_t seed)
{
	VIP_DESCRIPTOR *d = vt_desc_at(&x->dm, 0), *o;
	int r;

	vt_fill(x->bm.p, len, seed);
	vt_desc_send(d, x->bm.mh, x->bm.p, len);
	VT_OK(VipPostSend(x->s.vi, d, x->dm.mh));
	r = VipSendWait(x->s.vi, 5000, &o);
	VDT_CHECK(r == VIP_SUCCESS || r == VIP_DESCRIPTOR_ERROR);
	VDT_CHECK(o == d);
	return r;
}

static void post_recv(struct side *x, unsigned slot, uint32_t len)
{
	VIP_DESCRIPTOR *d = vt_desc_at(&x->dm, slot);

	vt_desc_recv(d, x->bm.mh, (char *)x->bm.p + 8192 * (slot + 1), len);
	VT_OK(VipPostRecv(x->s.vi, d, x->dm.mh));
}

/* ---- no receive posted -------------------------------------------------------- */

static int norecv_receiver(void *arg)
{
	struct side x;
	VIP_DESCRIPTOR *o;

	(void)arg;
	open_side(&x);
	VDT_CHECK(vt_sync(vt_fd) == 0);   /* 1: sender sent into nothing */
	VDT_CHECK(vt_sync(vt_fd) == 0);   /* 2: sender saw its completion */
	if (level == VIP_SERVICE_UNRELIABLE) {
		usleep(20000);
		VDT_CHECK_EQ(vt_state(x.s.vi), VIP_STATE_CONNECTED);
		VT_EXPECT(VipRecvDone(x.s.vi, &o), VIP_DESCRIPTOR_ERROR);
		post_recv(&x, 0, 1024);
		VDT_CHECK(vt_sync(vt_fd) == 0);   /* 3: send again */
		VT_OK(VipRecvWait(x.s.vi, 5000, &o));
		VDT_CHECK_EQ(o->CS.Length, 77);
		VDT_CHECK(vt_check((char *)x.bm.p + 8192, 77, 2) < 0);
	} else {
		VDT_CHECK(wait_state(x.s.vi, VIP_STATE_ERROR, 2000) == 0);
		if (level == VIP_SERVICE_RELIABLE_DELIVERY) {
			VDT_CHECK(wait_error(VIP_ERROR_RECVQ_EMPTY, 2000) == 0);
			VDT_CHECK(atomic_load(&err_vi) == x.s.vi);
		}
		/* Error -> Idle by Disconnect. */
		VT_OK(VipDisconnect(x.s.vi));
		VDT_CHECK_EQ(vt_state(x.s.vi), VIP_STATE_IDLE);
		VDT_CHECK(vt_sync(vt_fd) == 0);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	close_side(&x);
	return 0;
}

static int norecv_sender(void *arg)
{
	struct side x;
	struct viaduct_vi_stats st;
	VIP_DESCRIPTOR *d;
	int r;

	(void)arg;
	open_side(&x);
	r = send_one(&x, 66, 1);
	d = vt_desc_at(&x.dm, 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	if (level == VIP_SERVICE_UNRELIABLE) {
		VT_OK(r);
		VDT_CHECK_EQ(d->CS.Status, VIP_STATUS_DONE | VIP_STATUS_OP_SEND);
		VT_OK(viaduct_vi_get_stats(x.s.vi, &st));
		VDT_CHECK_EQ(st.dropped_sends, 1);
		VDT_CHECK(vt_sync(vt_fd) == 0);
		VDT_CHECK(vt_sync(vt_fd) == 0);
		VT_OK(send_one(&x, 77, 2));
		VDT_CHECK_EQ(vt_state(x.s.vi), VIP_STATE_CONNECTED);
	} else {
		if (level == VIP_SERVICE_RELIABLE_RECEPTION) {
			VT_EXPECT(r, VIP_DESCRIPTOR_ERROR);
			VDT_CHECK(d->CS.Status & VIP_STATUS_ERROR_MASK);
		}
		VDT_CHECK(vt_sync(vt_fd) == 0);
		/* The connection is broken at this end too. */
		VDT_CHECK(wait_state(x.s.vi, VIP_STATE_ERROR, 2000) == 0);
		VDT_CHECK(vt_sync(vt_fd) == 0);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	close_side(&x);
	return 0;
}

/* ---- receive too small ---------------------------------------------------------- */

static int short_receiver(void *arg)
{
	struct side x;
	VIP_DESCRIPTOR *o;
	uint8_t *b;

	(void)arg;
	open_side(&x);
	post_recv(&x, 0, 50);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VT_EXPECT(VipRecvWait(x.s.vi, 5000, &o), VIP_DESCRIPTOR_ERROR);
	VDT_CHECK(o == vt_desc_at(&x.dm, 0));
	VDT_CHECK(o->CS.Status & VIP_STATUS_DONE);
	VDT_CHECK(o->CS.Status & VIP_STATUS_LENGTH_ERROR);
	b = (uint8_t *)x.bm.p + 8192;
	for (unsigned i = 50; i < 8192; i++)
		if (b[i] != 0xee) {
			fprintf(stderr, "byte %u past a 50-byte receive written\n", i);
			return 1;
		}
	if (level == VIP_SERVICE_UNRELIABLE) {
		post_recv(&x, 1, 1024);
		VDT_CHECK(vt_sync(vt_fd) == 0);
		VT_OK(VipRecvWait(x.s.vi, 5000, &o));
		VDT_CHECK_EQ(o->CS.Length, 30);
	} else {
		VDT_CHECK(vt_sync(vt_fd) == 0);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	close_side(&x);
	return 0;
}

static int short_sender(void *arg)
{
	struct side x;

	(void)arg;
	open_side(&x);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	send_one(&x, 100, 3);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	if (level == VIP_SERVICE_UNRELIABLE)
		VT_OK(send_one(&x, 30, 4));
	VDT_CHECK(vt_sync(vt_fd) == 0);
	close_side(&x);
	return 0;
}

/* ---- bad local data segment on a send (unreliable) ------------------------------ */

static int badseg_receiver(void *arg)
{
	struct side x;
	VIP_DESCRIPTOR *o;

	(void)arg;
	open_side(&x);
	post_recv(&x, 0, 1024);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);   /* bad sends done */
	VT_OK(VipRecvWait(x.s.vi, 5000, &o));
	VDT_CHECK_EQ(o->CS.Length, 10);   /* only the good one arrived */
	VDT_CHECK(vt_check((char *)x.bm.p + 8192, 10, 5) < 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	close_side(&x);
	return 0;
}

static void bad_send(struct side *x, VIP_MEM_HANDLE mh, void *addr, uint32_t len,
		     const char *what)
{
	VIP_DESCRIPTOR *d = vt_desc_at(&x->dm, 1), *o;
	int r;

	vt_desc_send(d, mh, addr, len);
	r = VipPostSend(x->s.vi, d, x->dm.mh);
	if (r == VIP_INVALID_PARAMETER)
		return;
	VT_OK(r);
	r = VipSendWait(x->s.vi, 5000, &o);
	if (r != VIP_DESCRIPTOR_ERROR || o != d ||
	    !(d->CS.Status & VIP_STATUS_PROTECTION_ERROR)) {
		fprintf(stderr, "%s: %s, status 0x%x\n", what, vt_ret_str(r),
			d->CS.Status);
		exit(VDT_FAIL);
	}
}

static int badseg_sender(void *arg)
{
	struct side x;
	struct vt_mem other;
	char unreg[64];

	(void)arg;
	open_side(&x);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VT_OK(vt_mem_get(x.s.nic, 4096, NULL, &other));
	bad_send(&x, x.bm.mh ^ 0x10000000u, x.bm.p, 10, "unknown data handle");
	bad_send(&x, other.mh, x.bm.p, 10, "data outside its handle's region");
	bad_send(&x, x.bm.mh, (char *)x.bm.p + x.bm.len - 5, 10,
		 "data crossing its region's end");
	bad_send(&x, x.bm.mh, unreg, 10, "unregistered data");
	vt_mem_put(&other);
	VDT_CHECK_EQ(vt_state(x.s.vi), VIP_STATE_CONNECTED);
	VT_OK(send_one(&x, 10, 5));
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	close_side(&x);
	return 0;
}

static const char *level_name(VIP_USHORT l)
{
	return l == VIP_SERVICE_UNRELIABLE ? "unreliable" :
	       l == VIP_SERVICE_RELIABLE_DELIVERY ? "reliable delivery" :
	       "reliable reception";
}

static int run(const char *name, VIP_USHORT l, int (*a)(void *), int (*b)(void *))
{
	static int n;
	char tag[16];
	int r;

	level = l;
	atomic_store(&err_code, -1);
	snprintf(tag, sizeof(tag), "rel%d", n++);
	vt_disc(disc, tag);
	r = vt_fork2(a, b, NULL, 20);
	fprintf(stderr, "%s, %s: %s\n", name, level_name(l), r == 0 ? "ok" : "FAILED");
	return r;
}

int main(void)
{
	static const VIP_USHORT levels[] = {
		VIP_SERVICE_UNRELIABLE, VIP_SERVICE_RELIABLE_DELIVERY,
		VIP_SERVICE_RELIABLE_RECEPTION,
	};
	int r = 0;

	for (int i = 0; i < 3; i++)
		r |= run("no receive posted", levels[i], norecv_receiver, norecv_sender);
	for (int i = 0; i < 3; i++)
		r |= run("receive too small", levels[i], short_receiver, short_sender);
	r |= run("bad send data segment", VIP_SERVICE_UNRELIABLE, badseg_receiver,
		 badseg_sender);
	return r ? VDT_FAIL : 0;
}
