/* SPDX-License-Identifier: MIT */
/*
 * Two processes: receives whose declared segment lengths reach beyond
 * their registration, as real VIA clients post them (ARMCI's VIA device).
 * VipPostRecv accepts them; a message whose bytes all land inside the
 * registration completes normally; one that would land outside completes
 * with VIP_STATUS_PROTECTION_ERROR and writes nothing at all.  With inline
 * (PIO) and direct (DMA) data movement, one segment and two.  Unreliable
 * service, so the connection survives the refused messages.
 */
#include "viptest.h"

#include <string.h>
#include <sys/mman.h>

#define REG 4096u               /* registered bytes of each buffer */
#define DECLARED 65536u         /* declared length of the long segments */
#define SMALL 100u              /* a wholly registered first segment */
static const uint32_t modes[] = { VIADUCT_XFER_PIO, VIADUCT_XFER_DMA };
/* Message sizes, in the order of the posted receives: 1 segment (fits,
 * too long for the registration), then 2 segments (fits, too long). */
static const uint32_t sizes[] = { 1000, 8000, 4000, 5000 };
static const int refused[] = { 0, 1, 0, 1 };
static char disc[32];

static void post_one(struct vt_side *s, struct vt_mem *dm, unsigned i, char *a,
		     VIP_MEM_HANDLE ha, char *b, VIP_MEM_HANDLE hb)
{
	VIP_DESCRIPTOR *d = vt_desc_at(dm, i);

	if (i < 2) {
		vt_desc_recv(d, hb, b, DECLARED);
	} else {
		vt_desc_recv(d, ha, a, SMALL);
		d->CS.SegCount = 2;
		vt_seg(d, 1)->Handle = hb;
		vt_seg(d, 1)->Data.Address = b;
		vt_seg(d, 1)->Length = DECLARED;
	}
	VT_OK(VipPostRecv(s->vi, d, dm->mh));
}

/* Buffer b after message i: its bytes, or all 0xee if refused. */
static int check_one(struct vt_mem *dm, unsigned i, unsigned mode, const char *a,
		     const char *b)
{
	VIP_DESCRIPTOR *d = vt_desc_at(dm, i);
	uint32_t want = VIP_STATUS_DONE | VIP_STATUS_OP_RECEIVE |
			(refused[i] ? VIP_STATUS_PROTECTION_ERROR : 0);
	char expect[8000];
	uint32_t inb = i < 2 ? sizes[i] : sizes[i] - SMALL;

	if ((d->CS.Status & ~VIP_STATUS_DESC_FLUSHED_ERROR) != want ||
	    (!refused[i] && d->CS.Length != sizes[i])) {
		fprintf(stderr, "mode %u message %u: status 0x%x (want 0x%x) length %u\n",
			modes[mode], i, d->CS.Status, want, d->CS.Length);
		return 1;
	}
	vt_fill(expect, sizes[i], i + 10 * mode);
	for (uint32_t k = 0; k < DECLARED; k++) {
		char v = refused[i] || k >= inb ? (char)0xee : expect[(i < 2 ? 0 : SMALL) + k];
		if (b[k] != v) {
			fprintf(stderr, "mode %u message %u: byte %u of the buffer is 0x%02x\n",
				modes[mode], i, k, (uint8_t)b[k]);
			return 1;
		}
	}
	if (i >= 2 && !refused[i] && memcmp(a, expect, SMALL) != 0)
		return 1;
	return 0;
}

static int receiver(void *arg)
{
	VIP_VI_ATTRIBUTES va;
	struct vt_side s;
	struct vt_mem dm;
	VIP_MEM_HANDLE ha, hb;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_DESCRIPTOR *o;
	char *a, *b;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_UNRELIABLE, NULL);
	va = vt_vi_attrs(s.nic, VIP_SERVICE_UNRELIABLE);
	ma.Ptag = va.Ptag;
	VT_OK(vt_mem_get(s.nic, 65536, NULL, &dm));
	a = mmap(NULL, 2 * DECLARED, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	VDT_CHECK(a != MAP_FAILED);
	b = a + DECLARED;
	VT_OK(VipRegisterMem(s.nic, a, SMALL, &ma, &ha));
	VT_OK(VipRegisterMem(s.nic, b, REG, &ma, &hb));
	vt_side_connect(&s, disc);
	for (unsigned mode = 0; mode < 2; mode++) {
		for (unsigned i = 0; i < 4; i++) {
			memset(a, 0xee, 2 * DECLARED);
			post_one(&s, &dm, i, a, ha, b, hb);
			VDT_CHECK(vt_sync(vt_fd) == 0);
			VT_EXPECT(VipRecvWait(s.vi, 10000, &o),
				  refused[i] ? VIP_DESCRIPTOR_ERROR : VIP_SUCCESS);
			VDT_CHECK(o == vt_desc_at(&dm, i));
			if (check_one(&dm, i, mode, a, b))
				return 1;
		}
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VT_OK(VipDeregisterMem(s.nic, a, ha));
	VT_OK(VipDeregisterMem(s.nic, b, hb));
	vt_side_close(&s);
	vt_mem_put(&dm);
	return 0;
}

static int sender(void *arg)
{
	struct vt_side s;
	struct vt_mem dm, bm;
	VIP_DESCRIPTOR *o;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_UNRELIABLE, NULL);
	VT_OK(vt_mem_get(s.nic, 65536, NULL, &dm));
	VT_OK(vt_mem_get(s.nic, 8192, NULL, &bm));
	vt_side_connect(&s, disc);
	for (unsigned mode = 0; mode < 2; mode++) {
		struct viaduct_vi_ext e = { 0, modes[mode] };

		VT_OK(viaduct_vi_set_ext(s.vi, &e));
		for (unsigned i = 0; i < 4; i++) {
			VIP_DESCRIPTOR *d = vt_desc_at(&dm, i);

			vt_fill(bm.p, sizes[i], i + 10 * mode);
			VDT_CHECK(vt_sync(vt_fd) == 0);      /* the receive is posted */
			vt_desc_send(d, bm.mh, bm.p, sizes[i]);
			VT_OK(VipPostSend(s.vi, d, dm.mh));
			VT_OK(VipSendWait(s.vi, 10000, &o));
			VDT_CHECK(o == d);
		}
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	vt_mem_put(&dm);
	vt_mem_put(&bm);
	return 0;
}

int main(void)
{
	vt_disc(disc, "recvreg");
	return vt_fork2(receiver, sender, NULL, 60);
}
