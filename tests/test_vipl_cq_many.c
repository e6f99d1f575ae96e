/* SPDX-License-Identifier: MIT */
/*
 * Description: one completion queue for many VIs ("CQ with many
 * VIs").  64 connections between two processes.  In the parent every VI's
 * receive queue feeds one CQ and every send queue another.  The child
 * sends 4 messages on every VI, interleaved across VIs; the parent takes
 * 256 entries from the receive CQ with VipCQWait: each names one of its
 * VIs and the receive queue, and the VipRecvDone that follows returns
 * exactly the next descriptor of that VI (FIFO per VI) carrying the next
 * message.  Then the parent sends 4 messages per VI and takes 256 send-CQ
 * entries the same way.  Every completion appears exactly once: per-VI
 * counts are exact and both CQs are empty afterwards.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viptest.h"

#define NV 64
#define K 4
#define MSG 64
#define LEVEL VIP_SERVICE_RELIABLE_DELIVERY

struct side {
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi[NV];
	struct vt_mem dm, buf;          /* descriptor / buffer [vi][2K] */
};

/* Slot j (0..K-1 receives, K..2K-1 sends) of VI i. */
static VIP_DESCRIPTOR *slot(struct side *s, int i, int j)
{
	return vt_desc_at(&s->dm, (unsigned)(i * 2 * K + j));
}

static uint32_t *slot_buf(struct side *s, int i, int j)
{
	return (uint32_t *)((uint8_t *)s->buf.p + (size_t)(i * 2 * K + j) * MSG);
}

static void side_open(struct side *s, VIP_CQ_HANDLE scq, VIP_CQ_HANDLE rcq)
{
	for (int i = 0; i < NV; i++) {
		VIP_VI_ATTRIBUTES va = vt_vi_attrs(s->nic, LEVEL);

		va.EnableRdmaRead = VIP_FALSE;
		VT_OK(VipCreateVi(s->nic, &va, scq, rcq, &s->vi[i]));
	}
	VT_OK(vt_mem_get(s->nic, (size_t)NV * 2 * K * VT_DESC_STRIDE, NULL, &s->dm));
	VT_OK(vt_mem_get(s->nic, (size_t)NV * 2 * K * MSG, NULL, &s->buf));
}

static void post_recvs(struct side *s)
{
	for (int i = 0; i < NV; i++)
		for (int k = 0; k < K; k++) {
			vt_desc_recv(slot(s, i, k), s->buf.mh, slot_buf(s, i, k), MSG);
			VT_OK(VipPostRecv(s->vi[i], slot(s, i, k), s->dm.mh));
		}
}

/* Message k on VI i carries (i, k). */
static void post_send(struct side *s, int i, int k)
{
	uint32_t *p = slot_buf(s, i, K + k);

	p[0] = (uint32_t)i;
	p[1] = (uint32_t)k;
	vt_desc_send(slot(s, i, K + k), s->buf.mh, p, MSG);
	VT_OK(VipPostSend(s->vi[i], slot(s, i, K + k), s->dm.mh));
}

static void side_close(struct side *s)
{
	for (int i = 0; i < NV; i++) {
		VipDisconnect(s->vi[i]);
		VT_OK(VipDestroyVi(s->vi[i]));
	}
	vt_mem_put(&s->buf);
	vt_mem_put(&s->dm);
}

static void connect_all(struct side *s, int server)
{
	char tag[16], disc[32];

	for (int i = 0; i < NV; i++) {
		snprintf(tag, sizeof(tag), "cq%d", i);
		if (server)
			VT_OK(vt_server_accept(s->nic, s->vi[i], vt_disc(disc, tag), 5000));
		else
			VT_OK(vt_client_connect(s->nic, s->vi[i], vt_disc(disc, tag), 5000));
	}
}

/* ---- child: no CQs ------------------------------------------------------------ */

static int child_main(void *arg)
{
	struct side s;
	VIP_DESCRIPTOR *d;

	(void)arg;
	memset(&s, 0, sizeof(s));
	VT_OK(VipOpenNic("/dev/via_lo", &s.nic));
	side_open(&s, NULL, NULL);
	post_recvs(&s);
	connect_all(&s, 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	for (int k = 0; k < K; k++)             /* interleaved across VIs */
		for (int i = 0; i < NV; i++)
			post_send(&s, i, k);
	for (int i = 0; i < NV; i++)
		for (int k = 0; k < K; k++) {
			VT_OK(VipSendWait(s.vi[i], 3000, &d));
			VDT_CHECK(d == slot(&s, i, K + k));
		}
	for (int i = 0; i < NV; i++)            /* the parent's messages */
		for (int k = 0; k < K; k++) {
			VT_OK(VipRecvWait(s.vi[i], 3000, &d));
			VDT_CHECK(d == slot(&s, i, k));
			VDT_CHECK_EQ(slot_buf(&s, i, k)[0], i);
			VDT_CHECK_EQ(slot_buf(&s, i, k)[1], k);
		}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	side_close(&s);
	VT_OK(VipCloseNic(s.nic));
	return 0;
}

/* ---- parent: all receive queues on rcq, all send queues on scq ------------- */

static int vi_index(struct side *s, VIP_VI_HANDLE vi)
{
	for (int i = 0; i < NV; i++)
		if (s->vi[i] == vi)
			return i;
	return -1;
}

/* VipSendDone / VipRecvDone right after the CQ entry; tolerate a short gap
 * (real clients loop on VIP_NOT_DONE there). */
static VIP_DESCRIPTOR *done_after_cq(VIP_VI_HANDLE vi, int recv)
{
	VIP_DESCRIPTOR *d = NULL;
	int r;

	for (int tries = 0; tries < 1000; tries++) {
		r = recv ? VipRecvDone(vi, &d) : VipSendDone(vi, &d);
		if (r != VIP_NOT_DONE) {
			VT_OK(r);
			return d;
		}
		usleep(100);
	}
	fprintf(stderr, "CQ entry without a completed %s descriptor\n",
		recv ? "receive" : "send");
	exit(VDT_FAIL);
}

static void reap_cq(struct side *s, VIP_CQ_HANDLE cq, int recv)
{
	int next[NV] = { 0 };

	for (int n = 0; n < NV * K; n++) {
		VIP_VI_HANDLE vi = NULL;
		VIP_BOOLEAN isrecv = !recv;
		VIP_DESCRIPTOR *d;
		int i;

		VT_OK(VipCQWait(cq, 3000, &vi, &isrecv));
		i = vi_index(s, vi);
		if (i < 0 || isrecv != (recv ? VIP_TRUE : VIP_FALSE)) {
			fprintf(stderr, "entry %d: vi %p (index %d), recv %d, expected "
				"recv %d\n", n, vi, i, isrecv, recv);
			exit(VDT_FAIL);
		}
		if (next[i] >= K) {
			fprintf(stderr, "VI %d: more than %d entries\n", i, K);
			exit(VDT_FAIL);
		}
		d = done_after_cq(vi, recv);
		if (d != slot(s, i, recv ? next[i] : K + next[i])) {
			fprintf(stderr, "VI %d: completion %d out of order\n", i, next[i]);
			exit(VDT_FAIL);
		}
		if (recv) {
			VDT_CHECK_EQ(d->CS.Length, MSG);
			VDT_CHECK_EQ(slot_buf(s, i, next[i])[0], i);
			VDT_CHECK_EQ(slot_buf(s, i, next[i])[1], next[i]);
		}
		next[i]++;
	}
}

static void check_empty(VIP_CQ_HANDLE cq)
{
	VIP_VI_HANDLE vi;
	VIP_BOOLEAN isrecv;

	VT_EXPECT(VipCQDone(cq, &vi, &isrecv), VIP_NOT_DONE);
}

static int parent_main(void *arg)
{
	VIP_CQ_HANDLE scq, rcq;
	struct side s;
	uint64_t t0;

	(void)arg;
	memset(&s, 0, sizeof(s));
	VT_OK(VipOpenNic("/dev/via_lo", &s.nic));
	VT_OK(VipCreateCQ(s.nic, 1024, &scq));
	VT_OK(VipCreateCQ(s.nic, 1024, &rcq));
	side_open(&s, scq, rcq);
	post_recvs(&s);
	t0 = vt_now_ms();
	connect_all(&s, 1);
	printf("%d connections in %llu ms\n", NV,
	       (unsigned long long)(vt_now_ms() - t0));
	VDT_CHECK(vt_sync(vt_fd) == 0);
	reap_cq(&s, rcq, 1);
	check_empty(rcq);
	check_empty(scq);
	printf("ok: %d receive completions, each once, in order per VI\n", NV * K);
	for (int k = 0; k < K; k++)
		for (int i = 0; i < NV; i++)
			post_send(&s, i, k);
	reap_cq(&s, scq, 0);
	check_empty(scq);
	check_empty(rcq);
	printf("ok: %d send completions, each once, in order per VI\n", NV * K);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	side_close(&s);
	VT_OK(VipDestroyCQ(rcq));
	VT_OK(VipDestroyCQ(scq));
	VT_OK(VipCloseNic(s.nic));
	return 0;
}

int main(void)
{
	return vt_run_main(parent_main, child_main, 1u << 20, 30);
}
