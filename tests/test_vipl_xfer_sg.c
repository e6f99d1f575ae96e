/* SPDX-License-Identifier: MIT */
/*
 * Two processes, send/receive details: receives pre-posted in Idle state
 * before the connection exists; gather (several send segments from
 * different regions, odd alignments) and scatter (several receive
 * segments); zero-byte messages with SegCount 0 and immediate data;
 * immediate data on every message and its absence; CS.Length on receive;
 * FIFO order of many messages; buffers in plain malloc'ed and stack
 * memory registered on the fly (the SCI paper).  Both dialects of descriptor
 * member names are used.
 */
#include "viptest.h"

#include <string.h>

#define NFIFO 1000
#define WINDOW 100
static char disc[32];

/* ---- phase 1: pre-posted receives, scatter, zero-length, immediate ---- */

/* Receive i of phase 1: 4-segment scatter of 10+1+300+33 bytes into
 * pieces of one region at odd offsets. */
static const uint32_t scat[4] = { 10, 1, 300, 33 };
#define SCAT_TOTAL (10 + 1 + 300 + 33)

static void post_scatter(struct vt_side *s, VIP_DESCRIPTOR *d, struct vt_mem *dm,
			 struct vt_mem *bm)
{
	size_t off = 3;

	memset(d, 0, VT_DESC_STRIDE);
	d->Control.SegCount = 4;                 /* Giganet dialect */
	d->Data[0].Data.Address = (char *)bm->p + off;
	d->Data[0].Handle = bm->mh;
	d->Data[0].Length = scat[0];
	off += scat[0] + 5;                      /* gaps stay untouched */
	for (unsigned k = 1; k < 4; k++) {
		vt_seg(d, k)->Data.Address = (char *)bm->p + off;
		vt_seg(d, k)->Handle = bm->mh;
		vt_seg(d, k)->Length = scat[k];
		off += scat[k] + 5;
	}
	VT_OK(VipPostRecv(s->vi, d, dm->mh));
}

static void check_scatter(struct vt_mem *bm, uint32_t seed)
{
	uint8_t whole[SCAT_TOTAL];
	size_t off = 3, w = 0;

	for (unsigned k = 0; k < 4; k++) {
		memcpy(whole + w, (char *)bm->p + off, scat[k]);
		w += scat[k];
		for (unsigned g = 0; g < 5; g++)
			VDT_CHECK(((uint8_t *)bm->p)[off + scat[k] + g] == 0xcc);
		off += scat[k] + 5;
	}
	VDT_CHECK(vt_check(whole, SCAT_TOTAL, seed) < 0);
}

static int phase1_recv(struct vt_side *s, struct vt_mem *dm, struct vt_mem *bm)
{
	VIP_DESCRIPTOR *o, *d0 = vt_desc_at(dm, 0), *d1 = vt_desc_at(dm, 1);
	VIP_DESCRIPTOR *d2 = vt_desc_at(dm, 2);

	memset(bm->p, 0xcc, bm->len);
	/* Posted in Idle state, before the connection exists. */
	post_scatter(s, d0, dm, bm);
	vt_desc_recv(d1, bm->mh, (char *)bm->p + 4096, 64);
	VT_OK(VipPostRecv(s->vi, d1, dm->mh));
	vt_desc_recv(d2, bm->mh, (char *)bm->p + 8192, 64);
	VT_OK(VipPostRecv(s->vi, d2, dm->mh));
	vt_side_connect(s, disc);
	VT_OK(VipRecvWait(s->vi, 10000, &o));
	VDT_CHECK(o == d0);
	VDT_CHECK_EQ(d0->CS.Status, VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE);
	VDT_CHECK_EQ(d0->CS.Length, SCAT_TOTAL);
	check_scatter(bm, 77);
	/* Zero-byte message, SegCount 0, with immediate data. */
	VT_OK(VipRecvWait(s->vi, 10000, &o));
	VDT_CHECK(o == d1);
	VDT_CHECK_EQ(d1->CS.Status, VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE |
				     VIP_STATUS_IMMEDIATE);
	VDT_CHECK_EQ(d1->CS.Length, 0);
	VDT_CHECK_EQ(d1->CS.ImmediateData, 0xfeedf00du);
	VDT_CHECK(((uint8_t *)bm->p)[4096] == 0xcc);
	/* Zero-byte message with one empty segment, no immediate. */
	VT_OK(VipRecvWait(s->vi, 10000, &o));
	VDT_CHECK(o == d2);
	VDT_CHECK_EQ(d2->CS.Status, VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE);
	VDT_CHECK_EQ(d2->CS.Length, 0);
	return 0;
}

static int phase1_send(struct vt_side *s, struct vt_mem *dm, struct vt_mem *bm)
{
	/* Gather from three registrations: the region, a malloc'ed buffer
	 * and a stack buffer, at odd offsets and lengths. */
	char stackbuf[200];
	char *heap = malloc(1000);
	uint8_t whole[SCAT_TOTAL];
	VIP_MEM_HANDLE hh, sh;
	VIP_DESCRIPTOR *d = vt_desc_at(dm, 0), *o;
	const uint32_t g[3] = { 17, 150, SCAT_TOTAL - 17 - 150 };
	char *src[3] = { (char *)bm->p + 1, heap + 5, stackbuf + 3 };

	vt_fill(whole, SCAT_TOTAL, 77);
	memcpy(src[0], whole, g[0]);
	memcpy(src[1], whole + g[0], g[1]);
	memcpy(src[2], whole + g[0] + g[1], g[2]);
	VT_OK(VipRegisterMem(s->nic, heap, 1000, NULL, &hh));
	VT_OK(VipRegisterMem(s->nic, stackbuf, sizeof(stackbuf), NULL, &sh));
	vt_side_connect(s, disc);
	memset(d, 0, VT_DESC_STRIDE);
	d->CS.SegCount = 3;
	d->CS.Length = SCAT_TOTAL;
	for (unsigned k = 0; k < 3; k++) {
		vt_seg(d, k)->Data.Address = src[k];
		vt_seg(d, k)->Handle = k == 0 ? bm->mh : k == 1 ? hh : sh;
		vt_seg(d, k)->Length = g[k];
	}
	VT_OK(VipPostSend(s->vi, d, dm->mh));
	VT_OK(VipSendWait(s->vi, 10000, &o));
	VDT_CHECK(o == d && d->CS.Status == (VIP_STATUS_DONE | VIP_STATUS_OP_SEND));
	memset(d, 0, VT_DESC_STRIDE);
	d->CS.SegCount = 0;
	d->CS.Control = VIP_CONTROL_IMMEDIATE;
	d->CS.ImmediateData = 0xfeedf00du;
	VT_OK(VipPostSend(s->vi, d, dm->mh));
	VT_OK(VipSendWait(s->vi, 10000, &o));
	VDT_CHECK(o == d && !(d->CS.Status & VIP_STATUS_ERROR_MASK));
	vt_desc_send(d, bm->mh, bm->p, 0);
	VT_OK(VipPostSend(s->vi, d, dm->mh));
	VT_OK(VipSendWait(s->vi, 10000, &o));
	VDT_CHECK(o == d && !(d->CS.Status & VIP_STATUS_ERROR_MASK));
	VT_OK(VipDeregisterMem(s->nic, heap, hh));
	VT_OK(VipDeregisterMem(s->nic, stackbuf, sh));
	free(heap);
	return 0;
}

/* ---- phase 2: FIFO order of many messages, sizes varying ----------------- */

static uint32_t fifo_len(unsigned i)
{
	return (i * 37) % 200;
}

/* The receiver keeps WINDOW receives posted in malloc'ed memory; after
 * each batch it tells the sender to go on. */
static int phase2_recv(struct vt_side *s, struct vt_mem *dm)
{
	char *bufs = malloc((size_t)WINDOW * 256);
	VIP_MEM_HANDLE bh;
	VIP_DESCRIPTOR *o;

	VT_OK(VipRegisterMem(s->nic, bufs, (VIP_ULONG)WINDOW * 256, NULL, &bh));
	for (unsigned base = 0; base < NFIFO; base += WINDOW) {
		for (unsigned k = 0; k < WINDOW; k++)
			vt_desc_recv(vt_desc_at(dm, k), bh, bufs + k * 256, 256);
		for (unsigned k = 0; k < WINDOW; k++)
			VT_OK(VipPostRecv(s->vi, vt_desc_at(dm, k), dm->mh));
		VDT_CHECK(vt_sync(vt_fd) == 0);
		for (unsigned k = 0; k < WINDOW; k++) {
			unsigned i = base + k;

			VT_OK(VipRecvWait(s->vi, 10000, &o));
			VDT_CHECK(o == vt_desc_at(dm, k));
			VDT_CHECK_EQ(o->CS.ImmediateData, i);
			VDT_CHECK(o->CS.Status & VIP_STATUS_IMMEDIATE);
			VDT_CHECK_EQ(o->CS.Length, fifo_len(i));
			VDT_CHECK(vt_check(bufs + k * 256, fifo_len(i), i) < 0);
		}
	}
	VT_OK(VipDeregisterMem(s->nic, bufs, bh));
	free(bufs);
	return 0;
}

static int phase2_send(struct vt_side *s, struct vt_mem *dm, struct vt_mem *bm)
{
	VIP_DESCRIPTOR *o;

	for (unsigned base = 0; base < NFIFO; base += WINDOW) {
		VDT_CHECK(vt_sync(vt_fd) == 0);
		for (unsigned k = 0; k < WINDOW; k++) {
			unsigned i = base + k;
			VIP_DESCRIPTOR *d = vt_desc_at(dm, k);
			char *b = (char *)bm->p + k * 256;

			vt_fill(b, fifo_len(i), i);
			vt_desc_send(d, bm->mh, b, fifo_len(i));
			d->CS.Control |= VIP_CONTROL_IMMEDIATE;
			d->CS.ImmediateData = i;
			VT_OK(VipPostSend(s->vi, d, dm->mh));
		}
		for (unsigned k = 0; k < WINDOW; k++) {
			VT_OK(VipSendWait(s->vi, 10000, &o));
			VDT_CHECK(o == vt_desc_at(dm, k));
		}
	}
	return 0;
}

static void open_all(struct vt_side *s, struct vt_mem *dm, struct vt_mem *bm)
{
	vt_side_open(s, VIP_SERVICE_RELIABLE_RECEPTION, NULL);
	VT_OK(vt_mem_get(s->nic, (size_t)WINDOW * VT_DESC_STRIDE, NULL, dm));
	VT_OK(vt_mem_get(s->nic, 65536, NULL, bm));
}

static void close_all(struct vt_side *s, struct vt_mem *dm, struct vt_mem *bm)
{
	vt_side_close(s);
	vt_mem_put(dm);
	vt_mem_put(bm);
}

static int receiver(void *arg)
{
	struct vt_side s;
	struct vt_mem dm, bm;

	(void)arg;
	open_all(&s, &dm, &bm);
	VDT_CHECK(phase1_recv(&s, &dm, &bm) == 0);
	VDT_CHECK(phase2_recv(&s, &dm) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	close_all(&s, &dm, &bm);
	return 0;
}

static int sender(void *arg)
{
	struct vt_side s;
	struct vt_mem dm, bm;

	(void)arg;
	open_all(&s, &dm, &bm);
	VDT_CHECK(phase1_send(&s, &dm, &bm) == 0);
	VDT_CHECK(phase2_send(&s, &dm, &bm) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	close_all(&s, &dm, &bm);
	return 0;
}

int main(void)
{
	vt_disc(disc, "sg");
	return vt_fork2(receiver, sender, NULL, 30);
}
