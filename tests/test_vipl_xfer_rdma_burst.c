/* SPDX-License-Identifier: MIT */
/*
 * Two processes, RDMA posted in bursts (all of a phase before the first
 * completion is reaped), each transfer large enough to move by the
 * fabric's RMA over ofi, where the target runs several at once:
 *  1. K writes with immediate into the SAME target region: the receives
 *     complete in posting order with immediates 0..K-1, and the region
 *     ends with the last write's bytes (a later write is never
 *     overtaken by an earlier one).
 *  2. K writes into distinct slices, each followed by a small send: when
 *     send i completes at the target, write i's bytes are in place.
 *  3. K reads of those slices into distinct local slices.
 * Every descriptor completes in order with its own status.
 */
#include "viptest.h"

#include <string.h>

#define K 12
#define SZ (128u * 1024u)
#define TLEN ((size_t)(K + 1) * SZ)

static char disc[32];

struct side {
	struct vt_side s;
	VIP_PROTECTION_HANDLE p;
	struct vt_mem dm, bm;         /* descriptors + small buffers; big */
};

static void open_side(struct side *x, VIP_MEM_ATTRIBUTES *ma)
{
	VIP_VI_ATTRIBUTES va;

	VT_OK(VipOpenNic("/dev/via_lo", &x->s.nic));
	VT_OK(VipCreatePtag(x->s.nic, &x->p));
	va = vt_vi_attrs(x->s.nic, VIP_SERVICE_RELIABLE_RECEPTION);
	va.Ptag = x->p;
	VT_OK(VipCreateVi(x->s.nic, &va, NULL, NULL, &x->s.vi));
	ma->Ptag = x->p;
	VT_OK(vt_mem_get(x->s.nic, 65536, ma, &x->dm));
	ma->EnableRdmaWrite = ma->EnableRdmaRead = VIP_TRUE;
	VT_OK(vt_mem_get(x->s.nic, TLEN, ma, &x->bm));
}

static void close_side(struct side *x)
{
	VT_OK(VipDisconnect(x->s.vi));
	VT_OK(VipDestroyVi(x->s.vi));
	vt_mem_put(&x->bm);
	vt_mem_put(&x->dm);
	VT_OK(VipDestroyPtag(x->s.nic, x->p));
	VT_OK(VipCloseNic(x->s.nic));
}

/* Receive slot i: descriptor i, its 64-byte buffer in the second half. */
static VIP_DESCRIPTOR *post_recv(struct side *x, unsigned i)
{
	VIP_DESCRIPTOR *r = vt_desc_at(&x->dm, i);

	vt_desc_recv(r, x->dm.mh, (char *)x->dm.p + 32768 + 64 * i, 64);
	VT_OK(VipPostRecv(x->s.vi, r, x->dm.mh));
	return r;
}

static VIP_DESCRIPTOR *recv_one(struct side *x, VIP_DESCRIPTOR *want)
{
	VIP_DESCRIPTOR *o;

	VT_OK(VipRecvWait(x->s.vi, 10000, &o));
	VDT_CHECK(o == want);
	return o;
}

static int target(void *arg)
{
	struct side t;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	(void)arg;

	open_side(&t, &ma);
	memset(t.bm.p, 0, TLEN);
	VDT_CHECK(vt_put_u64(vt_fd, (uint64_t)(uintptr_t)t.bm.p) == 0);
	VDT_CHECK(vt_put_u64(vt_fd, t.bm.mh) == 0);
	for (unsigned i = 0; i < 2 * K; i++)
		post_recv(&t, i);
	vt_side_connect(&t.s, disc);

	/* 1: immediates in order, the last write's bytes in the end. */
	for (unsigned i = 0; i < K; i++) {
		VIP_DESCRIPTOR *o = recv_one(&t, vt_desc_at(&t.dm, i));

		VDT_CHECK_EQ(o->CS.Status, VIP_STATUS_DONE | VIP_STATUS_OP_REMOTE_RDMA_WRITE |
					   VIP_STATUS_IMMEDIATE);
		VDT_CHECK_EQ(o->CS.ImmediateData, i);
	}
	VDT_CHECK(vt_check(t.bm.p, SZ, 1000 + K - 1) < 0);

	/* 2: send i finds write i in place. */
	for (unsigned i = 0; i < K; i++) {
		VIP_DESCRIPTOR *o = recv_one(&t, vt_desc_at(&t.dm, K + i));
		uint32_t n;

		VDT_CHECK_EQ(o->CS.Status, VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE);
		memcpy(&n, (char *)t.dm.p + 32768 + 64 * (K + i), sizeof(n));
		VDT_CHECK_EQ(n, i);
		VDT_CHECK(vt_check((char *)t.bm.p + (size_t)(i + 1) * SZ, SZ, 2000 + i) < 0);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);         /* 3: the initiator reads */
	VDT_CHECK(vt_sync(vt_fd) == 0);
	close_side(&t);
	return 0;
}

/* Reap the n descriptors posted from slot first on, in order. */
static void reap(struct side *x, unsigned first, unsigned n, uint32_t status)
{
	for (unsigned i = first; i < first + n; i++) {
		VIP_DESCRIPTOR *o;

		VT_OK(VipSendWait(x->s.vi, 10000, &o));
		VDT_CHECK(o == vt_desc_at(&x->dm, i));
		VDT_CHECK_EQ(o->CS.Status, status);
	}
}

static void post(struct side *x, VIP_DESCRIPTOR *d)
{
	VT_OK(VipPostSend(x->s.vi, d, x->dm.mh));
}

static int initiator(void *arg)
{
	struct side x;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	uint64_t taddr, tmh;
	uint32_t *nums;
	(void)arg;

	open_side(&x, &ma);
	VDT_CHECK(vt_get_u64(vt_fd, &taddr) == 0 && vt_get_u64(vt_fd, &tmh) == 0);
	vt_side_connect(&x.s, disc);
	nums = (uint32_t *)((char *)x.dm.p + 32768);

	/* 1: K writes with immediate, all into the target's first slice. */
	for (unsigned i = 0; i < K; i++) {
		VIP_DESCRIPTOR *d = vt_desc_at(&x.dm, i);
		char *src = (char *)x.bm.p + (size_t)i * SZ;

		vt_fill(src, SZ, 1000 + i);
		vt_desc_rdma(d, VIP_CONTROL_OP_RDMAWRITE, taddr, (VIP_MEM_HANDLE)tmh, x.bm.mh, src,
			     SZ);
		d->CS.Control |= VIP_CONTROL_IMMEDIATE;
		d->CS.ImmediateData = i;
		post(&x, d);
	}
	reap(&x, 0, K, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE);

	/* 2: write i into slice i + 1, then send i; all posted at once. */
	for (unsigned i = 0; i < K; i++) {
		VIP_DESCRIPTOR *w = vt_desc_at(&x.dm, 2 * i), *s = vt_desc_at(&x.dm, 2 * i + 1);
		char *src = (char *)x.bm.p + (size_t)i * SZ;

		vt_fill(src, SZ, 2000 + i);
		vt_desc_rdma(w, VIP_CONTROL_OP_RDMAWRITE, taddr + (uint64_t)(i + 1) * SZ,
			     (VIP_MEM_HANDLE)tmh, x.bm.mh, src, SZ);
		post(&x, w);
		nums[i] = i;
		vt_desc_send(s, x.dm.mh, &nums[i], sizeof(uint32_t));
		post(&x, s);
	}
	for (unsigned i = 0; i < K; i++) {
		reap(&x, 2 * i, 1, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_WRITE);
		reap(&x, 2 * i + 1, 1, VIP_STATUS_DONE);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);

	/* 3: K reads of those slices, each into a slice of ours. */
	memset(x.bm.p, 0, TLEN);
	for (unsigned i = 0; i < K; i++) {
		VIP_DESCRIPTOR *d = vt_desc_at(&x.dm, i);

		vt_desc_rdma(d, VIP_CONTROL_OP_RDMAREAD, taddr + (uint64_t)(i + 1) * SZ,
			     (VIP_MEM_HANDLE)tmh, x.bm.mh, (char *)x.bm.p + (size_t)i * SZ, SZ);
		post(&x, d);
	}
	reap(&x, 0, K, VIP_STATUS_DONE | VIP_STATUS_OP_RDMA_READ);
	for (unsigned i = 0; i < K; i++)
		VDT_CHECK(vt_check((char *)x.bm.p + (size_t)i * SZ, SZ, 2000 + i) < 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	close_side(&x);
	return 0;
}

int main(void)
{
	vt_disc(disc, "rdma-burst");
	return vt_run_main(target, initiator, 2 * TLEN + (1u << 20), 60);
}
