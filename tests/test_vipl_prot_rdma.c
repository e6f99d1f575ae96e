/* SPDX-License-Identifier: MIT */
/*
 * Description: RDMA protection ("Protection").  Two processes; the
 * parent initiates RDMA writes and reads, the child is the target.  Every
 * case runs on a fresh connection (a refused RDMA breaks a reliable one):
 *   wrong memory handle (random, zero, stale after deregistration, another
 *   region's), range outside the region (before, after, straddling the
 *   end, wrapping around the address space), region without
 *   EnableRdmaWrite/Read, target VI without EnableRdmaWrite/Read, region
 *   ptag A with target VI ptag B.
 * A refused RDMA must complete the initiator's descriptor with
 * VIP_STATUS_RDMA_PROT_ERROR (PROTECTION_ERROR accepted as well), raise
 * VIP_ERROR_RDMAW_PROT / VIP_ERROR_RDMAR_PROT at the target's error
 * callback, leave the target memory (region and the guard areas around it)
 * byte-for-byte unchanged after a write, and leave the initiator's local
 * buffer unchanged after a read.  Correct RDMAs run first and last as a
 * control, so a broken setup cannot pass as "refused".
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "viptest.h"

#define REG (16u * 1024)        /* registered region */
#define BIG (3u * REG)          /* guard, region, guard */
#define XLEN 4096u              /* bytes per RDMA */
#define SEED_T 0x7a11u          /* target memory */
#define SEED_L 0x10c4u          /* initiator's local buffer */
#define LEVEL VIP_SERVICE_RELIABLE_DELIVERY

enum kind {
	K_OK, K_RANDOM_MH, K_ZERO_MH, K_STALE_MH, K_OTHER_MH, K_BEFORE,
	K_AFTER, K_STRADDLE, K_WRAP, K_REGION_OFF, K_VI_OFF, K_PTAG, K_NKINDS
};

static const char *const kind_name[K_NKINDS] = {
	"correct", "random handle", "zero handle", "stale handle",
	"other region's handle", "range before region", "range after region",
	"range straddling end", "range wrapping address space",
	"region without enable bit", "target VI without enable bit",
	"ptag mismatch",
};

/* Run order: controls first and last. */
static const int order[] = {
	K_OK, K_RANDOM_MH, K_ZERO_MH, K_STALE_MH, K_OTHER_MH, K_BEFORE,
	K_AFTER, K_STRADDLE, K_WRAP, K_REGION_OFF, K_VI_OFF, K_PTAG, K_OK,
};
#define NORDER (sizeof(order) / sizeof(order[0]))

static int g_read_ok;           /* RDMA read supported at LEVEL */

/* ---- error callback recorder ------------------------------------------- */
#define ELOG_MAX 64
struct elog {
	_Atomic int n;
	_Atomic int code[ELOG_MAX];     /* ErrorCode + 1; 0 = not yet written */
	VIP_VI_HANDLE vi[ELOG_MAX];
};

static struct elog g_elog;

static void elog_cb(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e)
{
	struct elog *l = ctx;
	int i = atomic_fetch_add(&l->n, 1);

	if (i < ELOG_MAX) {
		l->vi[i] = e->ViHandle;
		/* Release: vi[i] is visible to whoever sees code[i] (the
		 * acquire load in elog_find). */
		atomic_store_explicit(&l->code[i], (int)e->ErrorCode + 1,
				      memory_order_release);
	}
}

static void elog_reset(struct elog *l)
{
	for (int i = 0; i < ELOG_MAX; i++)
		atomic_store(&l->code[i], 0);
	atomic_store(&l->n, 0);
}

/* Wait up to ms for `code`; 1 when seen (for vi, if vi is not NULL). */
static int elog_find(struct elog *l, int code, VIP_VI_HANDLE vi, unsigned ms)
{
	uint64_t end = vt_now_ms() + ms;

	do {
		int n = atomic_load(&l->n);

		for (int i = 0; i < n && i < ELOG_MAX; i++) {
			int c = atomic_load_explicit(&l->code[i], memory_order_acquire);

			if (c == code + 1 && (!vi || l->vi[i] == vi))
				return 1;
		}
		usleep(1000);
	} while (vt_now_ms() < end);
	return 0;
}

static void elog_dump(struct elog *l)
{
	int n = atomic_load(&l->n);

	fprintf(stderr, "  error callback saw %d report(s):", n);
	for (int i = 0; i < n && i < ELOG_MAX; i++)
		fprintf(stderr, " %d", atomic_load(&l->code[i]) - 1);
	fprintf(stderr, "\n");
}

/* Both sides compute it the same way, after opening their own NIC (never
 * before vt_fork2). */
static int read_supported(VIP_NIC_HANDLE nic)
{
	VIP_NIC_ATTRIBUTES na;

	VT_OK(VipQueryNic(nic, &na));
	return (na.RDMAReadSupport & LEVEL) != 0;
}

/* ---- target (child) ------------------------------------------------------ */

struct target {
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE ptag_a, ptag_b;
	uint8_t *big, *before;          /* memory and its expected content */
	uint8_t *other;                 /* another registered region */
	VIP_MEM_HANDLE other_mh;
};

static VIP_MEM_ATTRIBUTES region_attrs(struct target *t, int kind, int rd)
{
	VIP_MEM_ATTRIBUTES ma = { .Ptag = t->ptag_a, .EnableRdmaWrite = VIP_TRUE,
				  .EnableRdmaRead = VIP_TRUE };

	if (kind == K_REGION_OFF) {
		if (rd)
			ma.EnableRdmaRead = VIP_FALSE;
		else
			ma.EnableRdmaWrite = VIP_FALSE;
	}
	return ma;
}

static VIP_VI_HANDLE target_vi(struct target *t, int kind, int rd)
{
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(t->nic, LEVEL);
	VIP_VI_HANDLE vi;

	va.Ptag = kind == K_PTAG ? t->ptag_b : t->ptag_a;
	va.EnableRdmaRead = g_read_ok ? VIP_TRUE : VIP_FALSE;
	if (kind == K_VI_OFF) {
		if (rd)
			va.EnableRdmaRead = VIP_FALSE;
		else
			va.EnableRdmaWrite = VIP_FALSE;
	}
	VT_OK(VipCreateVi(t->nic, &va, NULL, NULL, &vi));
	return vi;
}

/* Register the region; for K_STALE_MH return a handle that was valid a
 * moment ago instead.  *mh is what must be deregistered later. */
static VIP_MEM_HANDLE target_register(struct target *t, int kind, int rd,
				      VIP_MEM_HANDLE *mh)
{
	VIP_MEM_ATTRIBUTES ma = region_attrs(t, kind, rd);
	uint8_t *reg = t->big + REG;
	VIP_MEM_HANDLE old;

	VT_OK(VipRegisterMem(t->nic, reg, REG, &ma, mh));
	if (kind != K_STALE_MH)
		return *mh;
	old = *mh;
	VT_OK(VipDeregisterMem(t->nic, reg, old));
	VT_OK(VipRegisterMem(t->nic, reg, REG, &ma, mh));
	if (*mh == old) {
		fprintf(stderr, "re-registration returned the same handle %#x\n", old);
		exit(VDT_FAIL);
	}
	return old;
}

static VIP_MEM_HANDLE random_handle(VIP_MEM_HANDLE avoid1, VIP_MEM_HANDLE avoid2)
{
	VIP_MEM_HANDLE h = 0;

	while (h == 0 || h == avoid1 || h == avoid2)
		VDT_CHECK(getrandom(&h, sizeof(h), 0) == (ssize_t)sizeof(h));
	return h;
}

/* The (address, handle, length) the initiator is told to use. */
static void target_params(struct target *t, int kind, VIP_MEM_HANDLE mh,
			  VIP_MEM_HANDLE given, uint64_t p[3])
{
	uint64_t reg = (uint64_t)(uintptr_t)(t->big + REG);

	p[0] = reg + 1024;
	p[1] = given;
	p[2] = XLEN;
	switch (kind) {
	case K_RANDOM_MH: p[1] = random_handle(mh, t->other_mh); break;
	case K_ZERO_MH: p[1] = 0; break;
	case K_OTHER_MH: p[1] = t->other_mh; break;
	case K_BEFORE: p[0] = reg - XLEN / 2; break;
	case K_AFTER: p[0] = reg + REG; break;
	case K_STRADDLE: p[0] = reg + REG - XLEN / 2; break;
	case K_WRAP: p[0] = UINT64_MAX - XLEN / 2 + 1; break;
	default: break;
	}
}

static void target_check_memory(struct target *t, int kind, int rd)
{
	if (kind == K_OK && !rd)        /* the write landed at reg + 1024 */
		vt_fill(t->before + REG + 1024, XLEN, SEED_L);
	for (size_t i = 0; i < BIG; i++) {
		if (t->big[i] != t->before[i]) {
			fprintf(stderr, "target memory changed at offset %ld from "
				"the region start (case %s, %s)\n",
				(long)i - (long)REG, kind_name[kind],
				rd ? "read" : "write");
			exit(VDT_FAIL);
		}
	}
}

static void target_check_callback(VIP_VI_HANDLE vi, int kind, int rd)
{
	int code = rd ? VIP_ERROR_RDMAR_PROT : VIP_ERROR_RDMAW_PROT;

	if (kind == K_OK) {
		if (elog_find(&g_elog, code, NULL, 0)) {
			fprintf(stderr, "protection error reported for a correct RDMA\n");
			exit(VDT_FAIL);
		}
		return;
	}
	if (!elog_find(&g_elog, code, vi, 1000)) {
		fprintf(stderr, "target: no %s for VI %p within 1 s (case %s)\n",
			rd ? "VIP_ERROR_RDMAR_PROT" : "VIP_ERROR_RDMAW_PROT", vi,
			kind_name[kind]);
		elog_dump(&g_elog);
		exit(VDT_FAIL);
	}
}

static void target_case(struct target *t, int idx, int kind, int rd)
{
	VIP_MEM_HANDLE mh, given;
	VIP_VI_HANDLE vi;
	uint64_t p[3];
	char tag[16], disc[32];

	vt_fill(t->big, BIG, SEED_T + (uint32_t)idx);
	memcpy(t->before, t->big, BIG);
	vi = target_vi(t, kind, rd);
	given = target_register(t, kind, rd, &mh);
	target_params(t, kind, mh, given, p);
	elog_reset(&g_elog);
	snprintf(tag, sizeof(tag), "pr%c%d", rd ? 'r' : 'w', idx);
	VT_OK(vt_server_accept(t->nic, vi, vt_disc(disc, tag), 5000));
	for (int i = 0; i < 3; i++)
		VDT_CHECK(vt_put_u64(vt_fd, p[i]) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);         /* the initiator is done */
	target_check_memory(t, kind, rd);
	target_check_callback(vi, kind, rd);
	VDT_CHECK(vt_sync(vt_fd) == 0);         /* we are done checking */
	VipDisconnect(vi);
	VT_OK(VipDestroyVi(vi));
	VT_OK(VipDeregisterMem(t->nic, t->big + REG, mh));
}

static int target_main(void *arg)
{
	VIP_MEM_ATTRIBUTES ma = { .EnableRdmaWrite = VIP_TRUE, .EnableRdmaRead = VIP_TRUE };
	struct target t = { 0 };

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &t.nic));
	VT_OK(VipErrorCallback(t.nic, &g_elog, elog_cb));
	g_read_ok = read_supported(t.nic);
	VT_OK(VipCreatePtag(t.nic, &t.ptag_a));
	VT_OK(VipCreatePtag(t.nic, &t.ptag_b));
	VDT_CHECK(t.ptag_a != t.ptag_b);
	VDT_CHECK(posix_memalign((void **)&t.big, 4096, BIG) == 0);
	VDT_CHECK((t.before = malloc(BIG)) != NULL);
	VDT_CHECK(posix_memalign((void **)&t.other, 4096, REG) == 0);
	ma.Ptag = t.ptag_a;
	VT_OK(VipRegisterMem(t.nic, t.other, REG, &ma, &t.other_mh));
	for (int rd = 0; rd <= g_read_ok; rd++)
		for (unsigned i = 0; i < NORDER; i++)
			target_case(&t, (int)i, order[i], rd);
	VT_OK(VipDeregisterMem(t.nic, t.other, t.other_mh));
	VT_OK(VipDestroyPtag(t.nic, t.ptag_a));
	VT_OK(VipDestroyPtag(t.nic, t.ptag_b));
	VT_OK(VipCloseNic(t.nic));
	return 0;
}

/* ---- initiator (parent) -------------------------------------------------- */

struct init {
	VIP_NIC_HANDLE nic;
	struct vt_mem dm, lm;           /* descriptors, local buffer */
	uint8_t *expect;                /* for a correct read */
};

static void init_check_status(int kind, int rd, int r, VIP_DESCRIPTOR *d,
			      VIP_DESCRIPTOR *posted)
{
	uint32_t st = d ? d->CS.Status : 0;
	uint32_t op = rd ? VIP_STATUS_OP_RDMA_READ : VIP_STATUS_OP_RDMA_WRITE;
	const char *what = rd ? "read" : "write";

	if (d != posted || !(st & VIP_STATUS_DONE)) {
		fprintf(stderr, "RDMA %s (%s): wait returned %s, desc %p (posted %p) "
			"status %#x\n", what, kind_name[kind], vt_ret_str(r),
			(void *)d, (void *)posted, st);
		exit(VDT_FAIL);
	}
	if ((st & VIP_STATUS_OP_MASK) != op)
		fprintf(stderr, "note: RDMA %s status op bits %#x, expected %#x\n",
			what, st & VIP_STATUS_OP_MASK, op);
	if (kind == K_OK) {
		if (r != VIP_SUCCESS || (st & VIP_STATUS_ERROR_MASK)) {
			fprintf(stderr, "correct RDMA %s failed: %s status %#x\n",
				what, vt_ret_str(r), st);
			exit(VDT_FAIL);
		}
		return;
	}
	if (!(st & (VIP_STATUS_RDMA_PROT_ERROR | VIP_STATUS_PROTECTION_ERROR)) ||
	    r != VIP_DESCRIPTOR_ERROR) {
		fprintf(stderr, "RDMA %s (%s) not refused as a protection error: "
			"%s status %#x\n", what, kind_name[kind], vt_ret_str(r), st);
		exit(VDT_FAIL);
	}
	if (!(st & VIP_STATUS_RDMA_PROT_ERROR))
		fprintf(stderr, "note: RDMA %s (%s): PROTECTION_ERROR without "
			"RDMA_PROT_ERROR (status %#x)\n", what, kind_name[kind], st);
}

static void init_check_local(struct init *in, int kind, int rd, const uint64_t p[3])
{
	long bad;

	if (rd && kind == K_OK) {
		/* Target filled its memory with SEED_T+idx from big; we read
		 * at reg + 1024 = big + REG + 1024: compare with expect. */
		if (memcmp(in->lm.p, in->expect, XLEN) != 0) {
			fprintf(stderr, "correct RDMA read returned wrong data\n");
			exit(VDT_FAIL);
		}
		return;
	}
	bad = vt_check(in->lm.p, XLEN, SEED_L);
	if (bad >= 0) {
		fprintf(stderr, "initiator buffer changed at %ld by a %s RDMA %s "
			"(raddr %#llx)\n", bad, kind_name[kind], rd ? "read" : "write",
			(unsigned long long)p[0]);
		exit(VDT_FAIL);
	}
}

static void init_case(struct init *in, int idx, int kind, int rd)
{
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(in->nic, LEVEL);
	VIP_DESCRIPTOR *d = vt_desc_at(&in->dm, 0), *got = NULL;
	VIP_VI_HANDLE vi;
	uint64_t p[3];
	char tag[16], disc[32];
	int r;

	va.EnableRdmaRead = g_read_ok ? VIP_TRUE : VIP_FALSE;
	VT_OK(VipCreateVi(in->nic, &va, NULL, NULL, &vi));
	snprintf(tag, sizeof(tag), "pr%c%d", rd ? 'r' : 'w', idx);
	VT_OK(vt_client_connect(in->nic, vi, vt_disc(disc, tag), 5000));
	for (int i = 0; i < 3; i++)
		VDT_CHECK(vt_get_u64(vt_fd, &p[i]) == 0);
	vt_fill(in->lm.p, XLEN, SEED_L);
	vt_fill(in->expect, BIG, SEED_T + (uint32_t)idx);
	memmove(in->expect, in->expect + REG + 1024, XLEN);
	vt_desc_rdma(d, rd ? VIP_CONTROL_OP_RDMAREAD : VIP_CONTROL_OP_RDMAWRITE,
		     p[0], (VIP_MEM_HANDLE)p[1], in->lm.mh, in->lm.p, (uint32_t)p[2]);
	VT_OK(VipPostSend(vi, d, in->dm.mh));
	r = VipSendWait(vi, 3000, &got);
	init_check_status(kind, rd, r, got, d);
	init_check_local(in, kind, rd, p);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VipDisconnect(vi);
	VT_OK(VipDestroyVi(vi));
}

static int init_main(void *arg)
{
	struct init in = { 0 };

	(void)arg;
	VT_OK(VipOpenNic("/dev/via_lo", &in.nic));
	g_read_ok = read_supported(in.nic);
	if (!g_read_ok)
		printf("note: RDMA read not supported at Reliable Delivery; "
		       "write cases only\n");
	VT_OK(vt_mem_get(in.nic, 4 * VT_DESC_STRIDE, NULL, &in.dm));
	VT_OK(vt_mem_get(in.nic, XLEN, NULL, &in.lm));
	VDT_CHECK((in.expect = malloc(BIG)) != NULL);
	for (int rd = 0; rd <= g_read_ok; rd++) {
		for (unsigned i = 0; i < NORDER; i++) {
			init_case(&in, (int)i, order[i], rd);
			printf("ok: RDMA %s, %s\n", rd ? "read" : "write",
			       kind_name[order[i]]);
		}
	}
	free(in.expect);
	vt_mem_put(&in.lm);
	vt_mem_put(&in.dm);
	VT_OK(VipCloseNic(in.nic));
	return 0;
}

int main(void)
{
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	r = vt_fork2(init_main, target_main, NULL, 30);
	printf("%s\n", r == 0 ? "PASS" : r == VDT_SKIP ? "SKIP" : "FAIL");
	return r;
}
