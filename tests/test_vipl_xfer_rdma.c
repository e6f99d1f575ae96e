/* SPDX-License-Identifier: MIT */
/*
 * Two processes, RDMA: write without immediate (data arrives, the target's
 * queues see nothing), write with immediate (consumes one receive at the
 * target: OP_REMOTE_RDMA_WRITE | IMMEDIATE and the value), read, gather
 * for RDMA write, and targets in plain malloc'ed memory registered on the
 * fly (the SCI paper).  The target uses a real ptag on its VI and memory; the
 * initiator a NULL-ptag VI and NULL memory attributes (client leniency).
 */
#include "viptest.h"

#include <string.h>

static char disc[32];
static const uint32_t lens[] = { 1, 40, 4096, 100000, 1u << 20 };
#define NLENS (sizeof(lens) / sizeof(lens[0]))
#define TLEN (4u << 20)

struct target {
	struct vt_side s;
	VIP_PROTECTION_HANDLE p;
	struct vt_mem dm, tm;
	char *heap;                   /* malloc'ed target, odd address */
	VIP_MEM_HANDLE hh;
};

static int target(void *arg)
{
	struct target t;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_VI_ATTRIBUTES va;
	VIP_DESCRIPTOR *o, *r0;
	VIP_VI_STATE st;
	VIP_BOOLEAN se, re;

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &t.s.nic));
	VT_OK(VipCreatePtag(t.s.nic, &t.p));
	va = vt_vi_attrs(t.s.nic, VIP_SERVICE_RELIABLE_RECEPTION);
	va.Ptag = t.p;
	VT_OK(VipCreateVi(t.s.nic, &va, NULL, NULL, &t.s.vi));
	ma.Ptag = t.p;
	VT_OK(vt_mem_get(t.s.nic, 65536, &ma, &t.dm));
	ma.EnableRdmaWrite = ma.EnableRdmaRead = VIP_TRUE;
	VT_OK(vt_mem_get(t.s.nic, TLEN, &ma, &t.tm));
	t.heap = malloc(100003);
	VT_OK(VipRegisterMem(t.s.nic, t.heap + 3, 100000, &ma, &t.hh));
	memset(t.heap, 0x11, 100003);
	vt_fill(t.tm.p, TLEN, 5);   /* read source; writes overwrite parts */
	VDT_CHECK(vt_put_u64(vt_fd, (uint64_t)(uintptr_t)t.tm.p) == 0);
	VDT_CHECK(vt_put_u64(vt_fd, t.tm.mh) == 0);
	VDT_CHECK(vt_put_u64(vt_fd, (uint64_t)(uintptr_t)(t.heap + 3)) == 0);
	VDT_CHECK(vt_put_u64(vt_fd, t.hh) == 0);
	/* One receive posted: RDMA writes without immediate must not take it. */
	r0 = vt_desc_at(&t.dm, 0);
	vt_desc_recv(r0, t.dm.mh, (char *)t.dm.p + 32768, 128);
	VT_OK(VipPostRecv(t.s.vi, r0, t.dm.mh));
	vt_side_connect(&t.s, disc);

	/* Phase 1: initiator reads (all of TLEN) and writes without
	 * immediate into the second half. */
	VDT_CHECK(vt_sync(vt_fd) == 0);
	if (VipRecvDone(t.s.vi, &o) != VIP_NOT_DONE) {
		fprintf(stderr, "RDMA without immediate completed a receive: "
			"status 0x%x length %u imm 0x%x\n", o->CS.Status,
			o->CS.Length, o->CS.ImmediateData);
		return 1;
	}
	VT_OK(VipQueryVi(t.s.vi, &st, &va, &se, &re));
	VDT_CHECK(st == VIP_STATE_CONNECTED && se && !re);
	{
		size_t off = TLEN / 2;

		for (unsigned i = 0; i < NLENS; i++) {
			VDT_CHECK(vt_check((char *)t.tm.p + off, lens[i], 100 + i) < 0);
			off += lens[i];
		}
	}
	VDT_CHECK(vt_check(t.heap + 3, 100000, 200) < 0);
	VDT_CHECK(t.heap[0] == 0x11 && t.heap[1] == 0x11 && t.heap[2] == 0x11);

	/* Phase 2: write with immediate consumes r0. */
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VT_OK(VipRecvWait(t.s.vi, 10000, &o));
	VDT_CHECK(o == r0);
	VDT_CHECK_EQ(r0->CS.Status, VIP_STATUS_DONE | VIP_STATUS_OP_REMOTE_RDMA_WRITE |
				    VIP_STATUS_IMMEDIATE);
	VDT_CHECK_EQ(r0->CS.ImmediateData, 0xabcdef01u);
	/* The data was written before the receive completed. */
	VDT_CHECK(vt_check(t.tm.p, 5000, 300) < 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);

	VT_OK(VipDisconnect(t.s.vi));
	VT_OK(VipDestroyVi(t.s.vi));
	VT_OK(VipDeregisterMem(t.s.nic, t.heap + 3, t.hh));
	free(t.heap);
	vt_mem_put(&t.tm);
	vt_mem_put(&t.dm);
	VT_OK(VipDestroyPtag(t.s.nic, t.p));
	VT_OK(VipCloseNic(t.s.nic));
	return 0;
}

static void rdma(struct vt_side *s, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE dmh,
		 uint32_t want_status)
{
	VIP_DESCRIPTOR *o;

	VT_OK(VipPostSend(s->vi, d, dmh));
	VT_OK(VipSendWait(s->vi, 10000, &o));
	VDT_CHECK(o == d);
	if (d->CS.Status != want_status) {
		fprintf(stderr, "RDMA status 0x%x, expected 0x%x\n",
			d->CS.Status, want_status);
		exit(VDT_FAIL);
	}
}

static int initiator(void *arg)
{
	struct vt_side s;
	struct vt_mem dm, lm;
	uint64_t taddr, tmh, haddr, hmh;
	VIP_DESCRIPTOR *d;
	struct viaduct_vi_stats st;
	size_t off;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_RECEPTION, NULL);
	VT_OK(vt_mem_get(s.nic, 65536, NULL, &dm));
	VT_OK(vt_mem_get(s.nic, TLEN, NULL, &lm));
	VDT_CHECK(vt_get_u64(vt_fd, &taddr) == 0 && vt_get_u64(vt_fd, &tmh) == 0);
	VDT_CHECK(vt_get_u64(vt_fd, &haddr) == 0 && vt_get_u64(vt_fd, &hmh) == 0);
	vt_side_connect(&s, disc);
	d = vt_desc_at(&dm, 0);

	/* RDMA read of the whole target (pattern 5). */
	vt_desc_rdma(d, VIP_CONTROL_OP_RDMAREAD, taddr, (VIP_MEM_HANDLE)tmh,
		     lm.mh, lm.p, TLEN);
	rdma(&s, d, dm.mh, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_READ);
	VDT_CHECK(vt_check(lm.p, TLEN, 5) < 0);
	/* Read of a small piece at an odd offset into an odd local place. */
	memset(lm.p, 0, 64);
	vt_desc_rdma(d, VIP_CONTROL_OP_RDMAREAD, taddr + 1001, (VIP_MEM_HANDLE)tmh,
		     lm.mh, (char *)lm.p + 7, 13);
	rdma(&s, d, dm.mh, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_READ);
	{
		uint8_t want[1014];

		vt_fill(want, sizeof(want), 5);
		VDT_CHECK(memcmp((char *)lm.p + 7, want + 1001, 13) == 0);
		VDT_CHECK(((uint8_t *)lm.p)[6] == 0 && ((uint8_t *)lm.p)[20] == 0);
	}

	/* Writes without immediate, several lengths, back to back. */
	off = TLEN / 2;
	for (unsigned i = 0; i < NLENS; i++) {
		vt_fill(lm.p, lens[i], 100 + i);
		vt_desc_rdma(d, VIP_CONTROL_OP_RDMAWRITE, taddr + off,
			     (VIP_MEM_HANDLE)tmh, lm.mh, lm.p, lens[i]);
		rdma(&s, d, dm.mh, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE);
		off += lens[i];
	}
	/* Gather write (3 local segments) into the malloc'ed target. */
	vt_fill(lm.p, 100000, 200);
	vt_desc_rdma(d, VIP_CONTROL_OP_RDMAWRITE, haddr, (VIP_MEM_HANDLE)hmh,
		     lm.mh, lm.p, 100);
	d->CS.SegCount = 4;
	vt_seg(d, 2)->Data.Address = (char *)lm.p + 100;
	vt_seg(d, 2)->Handle = lm.mh;
	vt_seg(d, 2)->Length = 50000;
	vt_seg(d, 3)->Data.Address = (char *)lm.p + 50100;
	vt_seg(d, 3)->Handle = lm.mh;
	vt_seg(d, 3)->Length = 49900;
	d->CS.Length = 100000;
	rdma(&s, d, dm.mh, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE);
	VDT_CHECK(vt_sync(vt_fd) == 0);

	VDT_CHECK(vt_sync(vt_fd) == 0);   /* the target checked phase 1 */
	/* Write with immediate. */
	vt_fill(lm.p, 5000, 300);
	vt_desc_rdma(d, VIP_CONTROL_OP_RDMAWRITE, taddr, (VIP_MEM_HANDLE)tmh,
		     lm.mh, lm.p, 5000);
	d->CS.Control |= VIP_CONTROL_IMMEDIATE;
	d->CS.ImmediateData = 0xabcdef01u;
	rdma(&s, d, dm.mh, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE);
	VT_OK(viaduct_vi_get_stats(s.vi, &st));
	VDT_CHECK_EQ(st.rdma_reads, 2);
	VDT_CHECK_EQ(st.rdma_writes, NLENS + 2);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	vt_mem_put(&lm);
	vt_mem_put(&dm);
	return 0;
}

int main(void)
{
	vt_disc(disc, "rdma");
	return vt_fork2(target, initiator, NULL, 30);
}
