/* SPDX-License-Identifier: MIT */
/*
 * Description: deregistration revokes at once ("deregistration
 * revokes at once").  The parent keeps two 256 KiB RDMA writes in flight
 * into a region of the child, back to back.  The child waits until writes
 * land, calls VipDeregisterMem while they continue, and as soon as it
 * returns refills the memory with its own pattern: no write may land after
 * that (checked 200 ms later), the parent's stream must end with
 * VIP_STATUS_RDMA_PROT_ERROR (later descriptors flushed, none successful
 * after the refusal), and the child's error callback reports
 * VIP_ERROR_RDMAW_PROT.  Five rounds, one connection each.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viptest.h"

#define ROUNDS 5
#define XLEN (256u * 1024)
#define SEED_T 0x0d0du          /* the target's own pattern */
#define SEED_W 0x3a3au          /* what the initiator writes */
#define LEVEL VIP_SERVICE_RELIABLE_DELIVERY

/* ---- error callback recorder (child) ----------------------------------- */
static _Atomic int g_rdmaw_prot;

static void err_cb(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e)
{
	(void)ctx;
	if (e->ErrorCode == VIP_ERROR_RDMAW_PROT)
		atomic_fetch_add(&g_rdmaw_prot, 1);
}

/* ---- target (child) ----------------------------------------------------- */

/* Wait until a complete write is visible: both ends carry SEED_W. */
static int wait_landed(const uint8_t *p)
{
	static uint8_t want[XLEN];
	uint64_t end = vt_now_ms() + 3000;

	vt_fill(want, XLEN, SEED_W);
	while (vt_now_ms() < end) {
		if (memcmp(p, want, 64) == 0 &&
		    memcmp(p + XLEN - 64, want + XLEN - 64, 64) == 0)
			return 1;
		usleep(200);
	}
	return 0;
}

static void target_round(VIP_NIC_HANDLE nic, VIP_PROTECTION_HANDLE ptag,
			 uint8_t *buf, int round)
{
	VIP_MEM_ATTRIBUTES ma = { .Ptag = ptag, .EnableRdmaWrite = VIP_TRUE };
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, LEVEL);
	VIP_MEM_HANDLE mh;
	VIP_VI_HANDLE vi;
	char tag[16], disc[32];
	long bad;

	va.Ptag = ptag;
	va.EnableRdmaRead = VIP_FALSE;
	VT_OK(VipCreateVi(nic, &va, NULL, NULL, &vi));
	vt_fill(buf, XLEN, SEED_T);
	VT_OK(VipRegisterMem(nic, buf, XLEN, &ma, &mh));
	atomic_store(&g_rdmaw_prot, 0);
	snprintf(tag, sizeof(tag), "rv%d", round);
	VT_OK(vt_server_accept(nic, vi, vt_disc(disc, tag), 5000));
	VDT_CHECK(vt_put_u64(vt_fd, (uint64_t)(uintptr_t)buf) == 0);
	VDT_CHECK(vt_put_u64(vt_fd, mh) == 0);
	if (!wait_landed(buf)) {
		fprintf(stderr, "round %d: no RDMA write landed within 3 s\n", round);
		exit(VDT_FAIL);
	}
	usleep(1000 * (unsigned)round);         /* vary the moment */
	VT_OK(VipDeregisterMem(nic, buf, mh));
	vt_fill(buf, XLEN, SEED_T);
	usleep(200 * 1000);
	bad = vt_check(buf, XLEN, SEED_T);
	if (bad >= 0) {
		fprintf(stderr, "round %d: an RDMA write landed at offset %ld after "
			"VipDeregisterMem returned\n", round, bad);
		exit(VDT_FAIL);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);         /* initiator saw the error */
	for (int i = 0; i < 1000 && !atomic_load(&g_rdmaw_prot); i++)
		usleep(1000);
	if (!atomic_load(&g_rdmaw_prot)) {
		fprintf(stderr, "round %d: no VIP_ERROR_RDMAW_PROT at the target\n",
			round);
		exit(VDT_FAIL);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VipDisconnect(vi);
	VT_OK(VipDestroyVi(vi));
}

static int target_main(void *arg)
{
	VIP_PROTECTION_HANDLE ptag;
	VIP_NIC_HANDLE nic;
	uint8_t *buf;

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(VipErrorCallback(nic, NULL, err_cb));
	VT_OK(VipCreatePtag(nic, &ptag));
	VDT_CHECK(posix_memalign((void **)&buf, 4096, XLEN) == 0);
	for (int round = 0; round < ROUNDS; round++)
		target_round(nic, ptag, buf, round);
	free(buf);
	VT_OK(VipDestroyPtag(nic, ptag));
	VT_OK(VipCloseNic(nic));
	return 0;
}

/* ---- initiator (parent) ---------------------------------------------------- */

struct stream {
	VIP_VI_HANDLE vi;
	struct vt_mem *dm, *lm;
	uint64_t raddr;
	VIP_MEM_HANDLE rmh;
	unsigned posted, completed, ok, prot, flushed;
};

static void post_one(struct stream *s)
{
	VIP_DESCRIPTOR *d = vt_desc_at(s->dm, s->posted % 2);

	vt_desc_rdma(d, VIP_CONTROL_OP_RDMAWRITE, s->raddr, s->rmh, s->lm->mh,
		     s->lm->p, XLEN);
	VT_OK(VipPostSend(s->vi, d, s->dm->mh));
	s->posted++;
}

/* Reap one completion; 0 when the stream must stop posting. */
static int reap_one(struct stream *s, int round)
{
	VIP_DESCRIPTOR *d = NULL;
	int r = VipSendWait(s->vi, 3000, &d);
	uint32_t st = d ? d->CS.Status : 0;

	if (!d || d != vt_desc_at(s->dm, s->completed % 2)) {
		fprintf(stderr, "round %d: VipSendWait: %s, desc %p\n", round,
			vt_ret_str(r), (void *)d);
		exit(VDT_FAIL);
	}
	s->completed++;
	if (r == VIP_SUCCESS && !(st & VIP_STATUS_ERROR_MASK)) {
		if (s->prot || s->flushed) {
			fprintf(stderr, "round %d: an RDMA write succeeded after the "
				"refusal (status %#x)\n", round, st);
			exit(VDT_FAIL);
		}
		s->ok++;
		return 1;
	}
	if (st & VIP_STATUS_RDMA_PROT_ERROR)
		s->prot++;
	else if (st & VIP_STATUS_DESC_FLUSHED_ERROR)
		s->flushed++;
	else {
		fprintf(stderr, "round %d: unexpected completion %s status %#x\n",
			round, vt_ret_str(r), st);
		exit(VDT_FAIL);
	}
	return 0;
}

static void init_round(VIP_NIC_HANDLE nic, struct vt_mem *dm, struct vt_mem *lm,
		       int round)
{
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, LEVEL);
	struct stream s = { .dm = dm, .lm = lm };
	uint64_t v, end;
	char tag[16], disc[32];

	va.EnableRdmaRead = VIP_FALSE;
	VT_OK(VipCreateVi(nic, &va, NULL, NULL, &s.vi));
	snprintf(tag, sizeof(tag), "rv%d", round);
	VT_OK(vt_client_connect(nic, s.vi, vt_disc(disc, tag), 5000));
	VDT_CHECK(vt_get_u64(vt_fd, &s.raddr) == 0);
	VDT_CHECK(vt_get_u64(vt_fd, &v) == 0);
	s.rmh = (VIP_MEM_HANDLE)v;
	end = vt_now_ms() + 8000;
	post_one(&s);
	post_one(&s);
	while (reap_one(&s, round) && vt_now_ms() < end)
		post_one(&s);
	while (s.completed < s.posted)
		reap_one(&s, round);
	printf("round %d: %u writes landed, then %u refused, %u flushed\n", round,
	       s.ok, s.prot, s.flushed);
	VDT_CHECK(s.ok > 0);
	if (!s.prot) {
		fprintf(stderr, "round %d: the stream never saw "
			"VIP_STATUS_RDMA_PROT_ERROR\n", round);
		exit(VDT_FAIL);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VipDisconnect(s.vi);
	VT_OK(VipDestroyVi(s.vi));
}

static int init_main(void *arg)
{
	struct vt_mem dm, lm;
	VIP_NIC_HANDLE nic;

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(vt_mem_get(nic, 2 * VT_DESC_STRIDE, NULL, &dm));
	VT_OK(vt_mem_get(nic, XLEN, NULL, &lm));
	vt_fill(lm.p, XLEN, SEED_W);
	for (int round = 0; round < ROUNDS; round++)
		init_round(nic, &dm, &lm, round);
	vt_mem_put(&lm);
	vt_mem_put(&dm);
	VT_OK(VipCloseNic(nic));
	return 0;
}

int main(void)
{
	return vt_run_main(init_main, target_main, 2u << 20, 30);
}
