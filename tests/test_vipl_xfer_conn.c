/* SPDX-License-Identifier: MIT */
/*
 * Two processes, connection and completion behaviour:
 *  A  client starts before the server (NO_MATCH retries), is rejected,
 *     then accepted; attributes and states on both sides.
 *  B  a send posted on the unconnected VI goes nowhere; RecvWait with a
 *     timeout, VIP_INFINITE and (VIP_ULONG)-1; Recv/SendNotify one-shot
 *     handlers (later from a provider thread, or at once when done).
 *  C  peer-to-peer across processes: PeerWait on one side, PeerDone
 *     polling on the other.
 *  D  completion queue: CQWait/CQDone give (VI, queue), then *Done gives
 *     the descriptor; CQNotify.
 */
#include "viptest.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static char disc[32], disc_a[32], disc_b[32];

/* Send len bytes (pattern seed) and wait for it. */
static void send_msg(struct vt_side *s, struct vt_mem *dm, struct vt_mem *bm,
		     uint32_t len, uint32_t seed)
{
	VIP_DESCRIPTOR *d = vt_desc_at(dm, 7), *o;

	vt_fill(bm->p, len, seed);
	vt_desc_send(d, bm->mh, bm->p, len);
	VT_OK(VipPostSend(s->vi, d, dm->mh));
	VT_OK(VipSendWait(s->vi, 10000, &o));
	VDT_CHECK(o == d);
}

static void post_recv(struct vt_side *s, struct vt_mem *dm, struct vt_mem *bm,
		      unsigned slot)
{
	VIP_DESCRIPTOR *d = vt_desc_at(dm, slot);

	vt_desc_recv(d, bm->mh, (char *)bm->p + 4096 * (slot + 1), 4096);
	VT_OK(VipPostRecv(s->vi, d, dm->mh));
}

static void check_recv(struct vt_mem *dm, struct vt_mem *bm, unsigned slot,
		       VIP_DESCRIPTOR *o, uint32_t len, uint32_t seed)
{
	VDT_CHECK(o == vt_desc_at(dm, slot));
	VDT_CHECK_EQ(o->CS.Status, VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE);
	VDT_CHECK_EQ(o->CS.Length, len);
	VDT_CHECK(vt_check((char *)bm->p + 4096 * (slot + 1), len, seed) < 0);
}

static void open_mem(struct vt_side *s, struct vt_mem *dm, struct vt_mem *bm)
{
	VT_OK(vt_mem_get(s->nic, 8 * VT_DESC_STRIDE, NULL, dm));
	VT_OK(vt_mem_get(s->nic, 9 * 4096, NULL, bm));
}

static void close_all(struct vt_side *s, struct vt_mem *dm, struct vt_mem *bm)
{
	vt_side_close(s);
	vt_mem_put(dm);
	vt_mem_put(bm);
}

/* ---- A ------------------------------------------------------------------------ */

static int a_server(void *arg)
{
	struct vt_side s;
	struct vt_mem dm, bm;
	VIP_NET_ADDRESS *l, *rem = calloc(1, 256);
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	VIP_DESCRIPTOR *o;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_RECEPTION, NULL);
	open_mem(&s, &dm, &bm);
	l = vt_addr(s.nic, disc);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	usleep(100000);   /* the client meets NO_MATCH and retries */
	VT_OK(VipConnectWait(s.nic, l, 10000, rem, &ra, &conn));
	VDT_CHECK_EQ(ra.ReliabilityLevel, VIP_SERVICE_RELIABLE_RECEPTION);
	VT_OK(VipConnectReject(conn));
	VT_OK(VipConnectWait(s.nic, l, 10000, rem, &ra, &conn));
	post_recv(&s, &dm, &bm, 0);
	VT_OK(VipConnectAccept(conn, s.vi));
	VDT_CHECK_EQ(vt_state(s.vi), VIP_STATE_CONNECTED);
	VT_OK(VipRecvWait(s.vi, 10000, &o));
	check_recv(&dm, &bm, 0, o, 333, 1);
	free(l);
	free(rem);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	close_all(&s, &dm, &bm);
	return 0;
}

static int a_client(void *arg)
{
	struct vt_side s;
	struct vt_mem dm, bm;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_RECEPTION, NULL);
	open_mem(&s, &dm, &bm);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VT_EXPECT(vt_client_connect(s.nic, s.vi, disc, 10000), VIP_REJECT);
	VDT_CHECK_EQ(vt_state(s.vi), VIP_STATE_IDLE);
	VT_OK(vt_client_connect(s.nic, s.vi, disc, 10000));
	VDT_CHECK_EQ(vt_state(s.vi), VIP_STATE_CONNECTED);
	send_msg(&s, &dm, &bm, 333, 1);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	close_all(&s, &dm, &bm);
	return 0;
}

/* ---- B ------------------------------------------------------------------------ */

static struct {
	atomic_int runs;
	pthread_t thread;
	VIP_DESCRIPTOR *desc;
	VIP_VI_HANDLE vi;
	void *ctx;
} note;

static void on_done(VIP_PVOID ctx, VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi,
		    VIP_DESCRIPTOR *d)
{
	(void)nic;
	note.thread = pthread_self();
	note.desc = d;
	note.vi = vi;
	note.ctx = ctx;
	atomic_fetch_add(&note.runs, 1);   /* publishes the fields above */
}

static int wait_runs(int n)
{
	uint64_t t0 = vt_now_ms();

	while (atomic_load(&note.runs) < n)
		if (vt_now_ms() - t0 > 5000)
			return -1;
	return 0;
}

static int b_server(void *arg)
{
	struct vt_side s;
	struct vt_mem dm, bm;
	VIP_DESCRIPTOR *o;
	uint64_t t0;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	open_mem(&s, &dm, &bm);
	post_recv(&s, &dm, &bm, 0);
	post_recv(&s, &dm, &bm, 1);
	post_recv(&s, &dm, &bm, 2);
	vt_side_connect(&s, disc);
	VDT_CHECK(vt_sync(vt_fd) == 0);   /* 1: client posted its idle send */
	t0 = vt_now_ms();
	VT_EXPECT(VipRecvWait(s.vi, 50, &o), VIP_TIMEOUT);
	VDT_CHECK(vt_now_ms() - t0 >= 45);
	VT_EXPECT(VipRecvDone(s.vi, &o), VIP_NOT_DONE);
	VDT_CHECK(vt_sync(vt_fd) == 0);   /* 2: go */
	VT_OK(VipRecvWait(s.vi, VIP_INFINITE, &o));
	check_recv(&dm, &bm, 0, o, 100, 2);   /* not the idle send */
	/* Notify with nothing complete: runs later, on a provider thread. */
	VT_OK(VipRecvNotify(s.vi, (void *)0x5150, on_done));
	VDT_CHECK(vt_sync(vt_fd) == 0);   /* 3: go */
	VDT_CHECK(wait_runs(1) == 0);
	VDT_CHECK(note.desc == vt_desc_at(&dm, 1) && note.vi == s.vi);
	VDT_CHECK(note.ctx == (void *)0x5150);
	VDT_CHECK(!pthread_equal(note.thread, pthread_self()));
	check_recv(&dm, &bm, 1, note.desc, 200, 3);
	/* The handler took the descriptor; the next one is reaped normally. */
	VT_OK(VipRecvWait(s.vi, (VIP_ULONG)-1, &o));
	check_recv(&dm, &bm, 2, o, 300, 4);
	VDT_CHECK_EQ(atomic_load(&note.runs), 1);
	VT_EXPECT(VipRecvDone(s.vi, &o), VIP_DESCRIPTOR_ERROR);
	VDT_CHECK(o == NULL);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	close_all(&s, &dm, &bm);
	return 0;
}

static int b_client(void *arg)
{
	struct vt_side s;
	struct vt_mem dm, bm;
	VIP_DESCRIPTOR *d, *o;
	int r;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	open_mem(&s, &dm, &bm);
	/* A send on the unconnected VI: refused, or completed in error. */
	d = vt_desc_at(&dm, 0);
	vt_fill((char *)bm.p + 8192, 100, 99);
	vt_desc_send(d, bm.mh, (char *)bm.p + 8192, 100);
	r = VipPostSend(s.vi, d, dm.mh);
	if (r == VIP_SUCCESS) {
		VT_EXPECT(VipSendWait(s.vi, 1000, &o), VIP_DESCRIPTOR_ERROR);
		VDT_CHECK(o == d && (d->CS.Status & VIP_STATUS_ERROR_MASK));
	} else {
		VT_EXPECT(r, VIP_INVALID_STATE);
	}
	vt_side_connect(&s, disc);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	send_msg(&s, &dm, &bm, 100, 2);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	send_msg(&s, &dm, &bm, 200, 3);
	/* SendNotify on a completed descriptor runs at once. */
	d = vt_desc_at(&dm, 1);
	vt_fill((char *)bm.p + 4096, 300, 4);
	vt_desc_send(d, bm.mh, (char *)bm.p + 4096, 300);
	VT_OK(VipPostSend(s.vi, d, dm.mh));
	{
		uint64_t t0 = vt_now_ms();

		/* Acquire: pairs with the provider's release store of Status. */
		while (!(__atomic_load_n(&d->CS.Status, __ATOMIC_ACQUIRE) & VIP_STATUS_DONE))
			VDT_CHECK(vt_now_ms() - t0 < 5000);
	}
	VT_OK(VipSendNotify(s.vi, NULL, on_done));
	VDT_CHECK(wait_runs(1) == 0);
	VDT_CHECK(note.desc == d);
	VT_EXPECT(VipSendDone(s.vi, &o), VIP_DESCRIPTOR_ERROR);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	close_all(&s, &dm, &bm);
	return 0;
}

/* ---- C ------------------------------------------------------------------------ */

static int c_side(void *arg)
{
	struct vt_side s;
	struct vt_mem dm, bm;
	VIP_NET_ADDRESS *mine, *theirs;
	VIP_VI_ATTRIBUTES ra;
	VIP_DESCRIPTOR *o;
	int r;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_UNRELIABLE, NULL);
	open_mem(&s, &dm, &bm);
	mine = vt_addr(s.nic, vt_is_child ? disc_b : disc_a);
	theirs = vt_peer_addr(s.nic, vt_is_child ? disc_a : disc_b);
	post_recv(&s, &dm, &bm, 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);   /* the bound below is the connection's alone */
	VT_OK(VipConnectPeerRequest(s.vi, mine, theirs, 10000));
	if (vt_is_child) {
		uint64_t t0 = vt_now_ms();

		/* Well within the request's 10 s: an accepter that answers a
		 * request its requester already dropped waits 5 s for the
		 * confirmation (ofi's CFM_TIMEOUT_MS) before it takes the next. */
		while ((r = VipConnectPeerDone(s.vi, &ra)) == VIP_NOT_DONE)
			VDT_CHECK(vt_now_ms() - t0 < 4000);
		VT_OK(r);
	} else {
		/* Late: the other side's answer (or request) comes long after
		 * its first polls, each a short look -- its request must last
		 * across them (over ofi each look once began a new one, and
		 * the accepter answered stale ones). */
		usleep(300000);
		VT_OK(VipConnectPeerWait(s.vi, &ra));
	}
	VDT_CHECK_EQ(ra.ReliabilityLevel, VIP_SERVICE_UNRELIABLE);
	VDT_CHECK_EQ(vt_state(s.vi), VIP_STATE_CONNECTED);
	VDT_CHECK(vt_sync(vt_fd) == 0);   /* both have receives posted */
	send_msg(&s, &dm, &bm, 64, vt_is_child ? 11u : 12u);
	VT_OK(VipRecvWait(s.vi, 10000, &o));
	check_recv(&dm, &bm, 0, o, 64, vt_is_child ? 12u : 11u);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	free(mine);
	free(theirs);
	close_all(&s, &dm, &bm);
	return 0;
}

/* ---- D ------------------------------------------------------------------------ */

static atomic_int cq_runs;
static VIP_VI_HANDLE cq_vi;
static VIP_BOOLEAN cq_recv;

static void on_cq(VIP_PVOID ctx, VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi, VIP_BOOLEAN rq)
{
	(void)ctx, (void)nic;
	cq_vi = vi;
	cq_recv = rq;
	atomic_fetch_add(&cq_runs, 1);
}

/* *Done right after a CQ entry: tolerate a short gap (clients loop). */
static VIP_DESCRIPTOR *done_after_cq(VIP_VI_HANDLE vi, int recv)
{
	VIP_DESCRIPTOR *o = NULL;
	uint64_t t0 = vt_now_ms();
	int r;

	do {
		r = recv ? VipRecvDone(vi, &o) : VipSendDone(vi, &o);
		VDT_CHECK(vt_now_ms() - t0 < 1000);
	} while (r == VIP_NOT_DONE);
	VT_OK(r);
	return o;
}

static int d_server(void *arg)
{
	struct vt_side s;
	struct vt_mem dm, bm;
	VIP_CQ_HANDLE cq;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE v;
	VIP_BOOLEAN rq;
	uint64_t t0;
	int r;

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &s.nic));
	VT_OK(VipCreateCQ(s.nic, 16, &cq));
	va = vt_vi_attrs(s.nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VT_OK(VipCreateVi(s.nic, &va, cq, cq, &s.vi));
	open_mem(&s, &dm, &bm);
	for (unsigned i = 0; i < 4; i++)
		post_recv(&s, &dm, &bm, i);
	vt_side_connect(&s, disc);
	VDT_CHECK(vt_sync(vt_fd) == 0);   /* client sent 3 */
	VT_OK(VipCQWait(cq, 5000, &v, &rq));
	VDT_CHECK(v == s.vi && rq == VIP_TRUE);
	check_recv(&dm, &bm, 0, done_after_cq(s.vi, 1), 10, 20);
	for (unsigned i = 1; i < 3; i++) {
		t0 = vt_now_ms();
		while ((r = VipCQDone(cq, &v, &rq)) == VIP_NOT_DONE)
			VDT_CHECK(vt_now_ms() - t0 < 5000);
		VT_OK(r);
		VDT_CHECK(v == s.vi && rq == VIP_TRUE);
		check_recv(&dm, &bm, i, done_after_cq(s.vi, 1), 10 + i, 20 + i);
	}
	VT_EXPECT(VipCQDone(cq, &v, &rq), VIP_NOT_DONE);
	/* Our own send is announced as a send-queue entry. */
	{
		VIP_DESCRIPTOR *d = vt_desc_at(&dm, 7);

		vt_desc_send(d, bm.mh, bm.p, 5);
		VT_OK(VipPostSend(s.vi, d, dm.mh));
		VT_OK(VipCQWait(cq, 5000, &v, &rq));
		VDT_CHECK(v == s.vi && rq == VIP_FALSE);
		VDT_CHECK(done_after_cq(s.vi, 0) == d);
	}
	/* CQNotify with nothing there: runs when the 4th message arrives. */
	VT_OK(VipCQNotify(cq, NULL, on_cq));
	VDT_CHECK(vt_sync(vt_fd) == 0);   /* go */
	t0 = vt_now_ms();
	while (atomic_load(&cq_runs) == 0)
		VDT_CHECK(vt_now_ms() - t0 < 5000);
	VDT_CHECK(cq_vi == s.vi && cq_recv == VIP_TRUE);
	check_recv(&dm, &bm, 3, done_after_cq(s.vi, 1), 13, 23);
	VT_EXPECT(VipDestroyCQ(cq), VIP_INVALID_STATE);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VT_OK(VipDisconnect(s.vi));
	VT_OK(VipDestroyVi(s.vi));
	VT_OK(VipDestroyCQ(cq));
	vt_mem_put(&dm);
	vt_mem_put(&bm);
	VT_OK(VipCloseNic(s.nic));
	return 0;
}

static int d_client(void *arg)
{
	struct vt_side s;
	struct vt_mem dm, bm;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	open_mem(&s, &dm, &bm);
	post_recv(&s, &dm, &bm, 0);   /* for the server's send */
	vt_side_connect(&s, disc);
	for (unsigned i = 0; i < 3; i++)
		send_msg(&s, &dm, &bm, 10 + i, 20 + i);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	send_msg(&s, &dm, &bm, 13, 23);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	close_all(&s, &dm, &bm);
	return 0;
}

static const char *only;   /* argv[1]: run just this scenario (A..D) */

static int run(const char *name, const char *tag, int (*a)(void *), int (*b)(void *))
{
	int r;

	if (only && only[0] != name[0])
		return 0;
	vt_disc(disc, tag);
	r = vt_fork2(a, b, NULL, 20);
	fprintf(stderr, "%s: %s\n", name, r == 0 ? "ok" : "FAILED");
	return r;
}

int main(int argc, char **argv)
{
	int r = 0;

	only = argc > 1 ? argv[1] : NULL;
	vt_disc(disc_a, "pp.a");
	vt_disc(disc_b, "pp.b");
	r |= run("A client first, reject, accept", "connA", a_server, a_client);
	r |= run("B idle send, waits, notify", "connB", b_server, b_client);
	r |= run("C peer to peer", "connC", c_side, c_side);
	r |= run("D completion queue", "connD", d_server, d_client);
	return r ? VDT_FAIL : 0;
}
