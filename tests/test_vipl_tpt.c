/* SPDX-License-Identifier: MIT */
/*
 * Description: the vipl core below the data path.  Handle table (many
 * objects, stale and forged handles, lookups racing with frees); vd_ret
 * and timeouts; VipOpenNic/QueryNic/CloseNic; memory registration
 * (defaults, ptags, every error, keys not sequential, stale handles after
 * re-registration, VipQueryMem/VipSetMemAttributes); the TPT checks
 * (vd_tpt_check_local and, through a read-only mapping of the sealed
 * memfd, vd_shm_tpt_check, also while another thread revokes);
 * protection tags; the name service; autodiscovery; the error callback;
 * the Giganet extras; and, in a child running as nobody under
 * RLIMIT_MEMLOCK 64 KiB, VIP_ERROR_RESOURCE with nothing left locked.
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vdtest.h"
#include "vipl/vipl_internal.h"
#include "prov/shm/shm.h"

#define NOBODY 65534
#define IDX_MASK (VD_TPT_MAX - 1u)

#define EXPECT(call, want)                                                   \
	do {                                                                 \
		int r_ = (int)(call), w_ = (int)(want);                      \
		if (r_ != w_) {                                              \
			fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", \
				__FILE__, __LINE__, #call, r_, w_);          \
			exit(VDT_FAIL);                                      \
		}                                                            \
	} while (0)
#define OK(call) EXPECT(call, VIP_SUCCESS)

static size_t ps;

static char *map_pages(size_t n)
{
	char *p = mmap(NULL, n * ps, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	VDT_CHECK(p != MAP_FAILED);
	memset(p, 1, n * ps);
	return p;
}

static struct vd_nic *nic_of(VIP_NIC_HANDLE h)
{
	struct vd_nic *n = vd_obj_lookup(h, VD_OBJ_NIC);

	VDT_CHECK(n);
	return n;
}

/* ---- handle table ------------------------------------------------------------ */

#define NOBJ 5000

struct test_obj {
	struct vd_obj obj;
	uint64_t payload[10];
};

static void test_handles_basic(void)
{
	static struct test_obj *o[NOBJ];
	static void *h[NOBJ];
	int i, x = 0;

	for (i = 0; i < NOBJ; i++) {
		o[i] = vd_obj_new(VD_OBJ_CONN, sizeof(struct test_obj));
		VDT_CHECK(o[i]);
		for (int j = 0; j < 10; j++)
			VDT_CHECK(o[i]->payload[j] == 0);
		o[i]->payload[0] = (uint64_t)i;
		h[i] = vd_obj_handle(o[i]);
		VDT_CHECK(h[i]);
	}
	for (i = 0; i < NOBJ; i++) {
		VDT_CHECK(vd_obj_lookup(h[i], VD_OBJ_CONN) == o[i]);
		VDT_CHECK(vd_obj_lookup(h[i], VD_OBJ_VI) == NULL);
		VDT_CHECK(o[i]->payload[0] == (uint64_t)i);
	}
	/* Forged values: never a crash, always NULL. */
	VDT_CHECK(!vd_obj_lookup(NULL, VD_OBJ_CONN));
	VDT_CHECK(!vd_obj_lookup((void *)1, VD_OBJ_CONN));
	VDT_CHECK(!vd_obj_lookup(&x, VD_OBJ_CONN));
	VDT_CHECK(!vd_obj_lookup((void *)(uintptr_t)UINT64_MAX, VD_OBJ_CONN));
	VDT_CHECK(!vd_obj_lookup((void *)((uintptr_t)h[0] + (2ull << 24)), VD_OBJ_CONN));
	VDT_CHECK(!vd_obj_lookup((void *)((uintptr_t)h[0] + 0xffffff), VD_OBJ_CONN));
	VDT_CHECK(!vd_obj_lookup((void *)((uintptr_t)h[0] | 0xffffff), VD_OBJ_CONN));
	for (i = 0; i < 100000; i++) {
		uint64_t r = ((uint64_t)vd_random32() << 32) | vd_random32();
		void *f = (void *)(uintptr_t)((r & ~(0xffull << 56)) | (5ull << 56));

		VDT_CHECK(vd_obj_lookup(f, VD_OBJ_CONN) == NULL ||
			  vd_obj_handle(vd_obj_lookup(f, VD_OBJ_CONN)) == f);
	}
	/* Free every other one: their handles die, the rest live. */
	for (i = 0; i < NOBJ; i += 2)
		vd_obj_free(o[i]);
	for (i = 0; i < NOBJ; i++)
		VDT_CHECK(vd_obj_lookup(h[i], VD_OBJ_CONN) == (i % 2 ? o[i] : NULL));
	/* New objects reuse slots, never the old handles. */
	for (i = 0; i < NOBJ; i += 2) {
		void *n = vd_obj_new(VD_OBJ_CONN, sizeof(struct test_obj));

		VDT_CHECK(n);
		VDT_CHECK(vd_obj_handle(n) != h[i]);
		VDT_CHECK(!vd_obj_lookup(h[i], VD_OBJ_CONN));
		o[i] = n;
		h[i] = vd_obj_handle(n);
	}
	for (i = 0; i < NOBJ; i++) {
		VDT_CHECK(vd_obj_lookup(h[i], VD_OBJ_CONN) == o[i]);
		vd_obj_free(o[i]);
		VDT_CHECK(!vd_obj_lookup(h[i], VD_OBJ_CONN));
		vd_obj_free(o[i]);                 /* double free: harmless */
	}
	/* Size classes: small and large objects, zeroed. */
	for (size_t sz = 16; sz <= 512 * 1024; sz *= 4) {
		struct vd_obj *b = vd_obj_new(VD_OBJ_CQ, sz);
		char *c = (char *)b;

		VDT_CHECK(b);
		for (size_t k = sizeof(*b); k < sz; k++)
			VDT_CHECK(c[k] == 0);
		memset(c + sizeof(*b), 0x5a, sz - sizeof(*b));
		vd_obj_free(b);
	}
	VDT_CHECK(!vd_obj_new(VD_OBJ_CQ, 64u << 20));   /* too large */
	fprintf(stderr, "ok   handle table: %d objects, stale and forged handles\n", NOBJ);
}

/* Lookups of handles whose objects are freed and recreated meanwhile:
 * a lookup returns NULL or an object of the right type. */
#define RACE_SLOTS 64
static void *g_race_h[RACE_SLOTS];
static atomic_int g_race_stop;

static void *race_reader(void *arg)
{
	unsigned long n = 0, hits = 0;

	(void)arg;
	while (!atomic_load(&g_race_stop)) {
		for (int i = 0; i < RACE_SLOTS; i++) {
			void *h = __atomic_load_n(&g_race_h[i], __ATOMIC_RELAXED);
			struct vd_obj *o = vd_obj_lookup(h, VD_OBJ_CONN);

			/* The object may be freed and reused as another type
			 * right after the lookup; then the handle is dead. */
			if (o) {
				VDT_CHECK(__atomic_load_n(&o->type, __ATOMIC_RELAXED) ==
					  VD_OBJ_CONN || vd_obj_lookup(h, VD_OBJ_CONN) != o);
				hits++;
			}
			n++;
		}
	}
	return (void *)(uintptr_t)(hits + (n > 0));
}

static void test_handles_race(void)
{
	struct vd_obj *o[RACE_SLOTS];
	pthread_t t;
	int i, round;

	for (i = 0; i < RACE_SLOTS; i++) {
		o[i] = vd_obj_new(VD_OBJ_CONN, 128);
		__atomic_store_n(&g_race_h[i], vd_obj_handle(o[i]), __ATOMIC_RELAXED);
	}
	VDT_CHECK(pthread_create(&t, NULL, race_reader, NULL) == 0);
	for (round = 0; round < 20000; round++) {
		i = round % RACE_SLOTS;
		vd_obj_free(o[i]);
		o[i] = vd_obj_new(round % 3 ? VD_OBJ_CONN : VD_OBJ_CQ, 128);
		VDT_CHECK(o[i]);
		if (round % 5)   /* sometimes leave the stale handle published */
			__atomic_store_n(&g_race_h[i], vd_obj_handle(o[i]),
					 __ATOMIC_RELAXED);
	}
	atomic_store(&g_race_stop, 1);
	pthread_join(t, NULL);
	for (i = 0; i < RACE_SLOTS; i++)
		vd_obj_free(o[i]);
	fprintf(stderr, "ok   handle lookups racing with free/new\n");
}

/* ---- util ------------------------------------------------------------------------ */

static void test_util(void)
{
	uint64_t now = vd_now_ns(), d;

	EXPECT(vd_ret(0), VIP_SUCCESS);
	EXPECT(vd_ret(-EAGAIN), VIP_NOT_DONE);
	EXPECT(vd_ret(-EINVAL), VIP_INVALID_PARAMETER);
	EXPECT(vd_ret(-ERANGE), VIP_INVALID_PARAMETER);
	EXPECT(vd_ret(-EADDRINUSE), VIP_INVALID_PARAMETER);
	EXPECT(vd_ret(-ENOMEM), VIP_ERROR_RESOURCE);
	EXPECT(vd_ret(-EPERM), VIP_ERROR_RESOURCE);
	EXPECT(vd_ret(-ETIMEDOUT), VIP_TIMEOUT);
	EXPECT(vd_ret(-ECONNREFUSED), VIP_REJECT);
	EXPECT(vd_ret(-EBADSLT), VIP_INVALID_RELIABILITY_LEVEL);
	EXPECT(vd_ret(-EMSGSIZE), VIP_INVALID_MTU);
	EXPECT(vd_ret(-EXDEV), VIP_INVALID_QOS);
	EXPECT(vd_ret(-EACCES), VIP_INVALID_PTAG);
	EXPECT(vd_ret(-EOPNOTSUPP), VIP_ERROR_NOT_SUPPORTED);
	EXPECT(vd_ret(-ENOTSUP), VIP_ERROR_NOT_SUPPORTED);
	EXPECT(vd_ret(-EBUSY), VIP_INVALID_STATE);
	EXPECT(vd_ret(-ENOTCONN), VIP_INVALID_STATE);
	EXPECT(vd_ret(-ENOENT), VIP_NO_MATCH);
	EXPECT(vd_ret(-EHOSTUNREACH), VIP_NOT_REACHABLE);
	EXPECT(vd_ret(-ENXIO), VIP_ERROR_NAMESERVICE);
	EXPECT(vd_ret(-ECANCELED), VIP_DESCRIPTOR_ERROR);
	EXPECT(vd_ret(-E2BIG), VIP_ERROR_RESOURCE);
	VDT_CHECK(vd_deadline(VIP_INFINITE) == 0);
	VDT_CHECK(vd_deadline((VIP_ULONG)-1) == 0);
	d = vd_deadline(0);
	VDT_CHECK(d >= now && d < now + 1000000000ull);
	d = vd_deadline(1500);
	VDT_CHECK(d >= now + 1500000000ull && d < now + 2500000000ull);
	VDT_CHECK(vd_deadline(ULONG_MAX - 1) == UINT64_MAX);
	EXPECT(vd_timeout_ms(VIP_INFINITE), -1);
	EXPECT(vd_timeout_ms((VIP_ULONG)-1), -1);
	EXPECT(vd_timeout_ms(0), 0);
	EXPECT(vd_timeout_ms(5000), 5000);
	EXPECT(vd_timeout_ms(1ul << 40), INT_MAX);
	fprintf(stderr, "ok   vd_ret, deadlines, timeouts\n");
}

/* ---- NIC ------------------------------------------------------------------------- */

static void test_nic(void)
{
	static const char *const names[] = { "/dev/via_lo", "/dev/clanvi0",
					     "nic0", "", "/etc/via_lo" };
	VIP_NIC_HANDLE n[5], nic;
	VIP_NIC_ATTRIBUTES a;
	uint8_t addr[6];
	struct rlimit rl;
	unsigned i;

	EXPECT(VipOpenNic(NULL, &nic), VIP_INVALID_PARAMETER);
	EXPECT(VipOpenNic("/dev/via_lo", NULL), VIP_INVALID_PARAMETER);
	for (i = 0; i < 5; i++)
		OK(VipOpenNic(names[i], &n[i]));
	OK(VipOpenNic("/dev/via_lo", &nic));        /* the same device again */
	VDT_CHECK(nic != n[0]);
	vd_shm_node_address(NULL, addr);
	VDT_CHECK(addr[0] == 0x02);
	OK(VipQueryNic(nic, &a));
	VDT_CHECK(strcmp(a.Name, "viaduct-shm") == 0);
	EXPECT(a.HardwareVersion, 0);
	EXPECT(a.ProviderVersion, (VIADUCT_VERSION_MAJOR << 16) |
	       (VIADUCT_VERSION_MINOR << 8) | VIADUCT_VERSION_PATCH);
	EXPECT(a.NicAddressLen, 6);
	VDT_CHECK(memcmp(a.LocalNicAddress, addr, 6) == 0);
	EXPECT(a.ThreadSafe, VIP_TRUE);
	EXPECT(a.MaxDiscriminatorLen, VD_SHM_MAX_DISCRIMINATOR);
	VDT_CHECK(a.MaxDiscriminatorLen >= 16);
	VDT_CHECK(getrlimit(RLIMIT_MEMLOCK, &rl) == 0);
	if (geteuid() != 0 && rl.rlim_cur != RLIM_INFINITY)
		EXPECT(a.MaxRegisterBytes, rl.rlim_cur);
	VDT_CHECK(a.MaxRegisterBlockBytes == a.MaxRegisterBytes);
	EXPECT(a.MaxRegisterRegions, VD_TPT_MAX - 1);
	EXPECT(a.MaxVI, 65536);
	EXPECT(a.MaxDescriptorsPerQueue, VD_MAX_QUEUE_DESC);
	EXPECT(a.MaxSegmentsPerDesc, VD_MAX_SEGS);
	EXPECT(a.MaxCQ, 4096);
	EXPECT(a.MaxCQEntries, VD_MAX_CQ_ENTRIES);
	VDT_CHECK(a.MaxTransferSize >= 32768 && a.MaxTransferSize == VD_MAX_TRANSFER);
	EXPECT(a.NativeMTU, VD_MAX_TRANSFER);
	EXPECT(a.MaxPtags, 4096);
	EXPECT(a.ReliabilityLevelSupport, 7);
	EXPECT(a.RDMAReadSupport, 7);
	EXPECT(VipQueryNic(nic, NULL), VIP_INVALID_PARAMETER);
	EXPECT(VipQueryNic(NULL, &a), VIP_INVALID_PARAMETER);
	EXPECT(VipQueryNic((void *)0x1234, &a), VIP_INVALID_PARAMETER);
	for (i = 0; i < 5; i++)
		OK(VipCloseNic(n[i]));
	EXPECT(VipCloseNic(n[0]), VIP_INVALID_PARAMETER);   /* stale */
	EXPECT(VipQueryNic(n[1], &a), VIP_INVALID_PARAMETER);
	OK(VipQueryNic(nic, &a));
	OK(VipCloseNic(nic));

	VDT_CHECK(setenv("VIADUCT_PROVIDER", "tcp", 1) == 0);
	EXPECT(VipOpenNic("/dev/via_lo", &nic), VIP_ERROR_NOT_SUPPORTED);
	VDT_CHECK(setenv("VIADUCT_PROVIDER", "shm", 1) == 0);
	OK(VipOpenNic("/dev/via_lo", &nic));
	OK(VipCloseNic(nic));
	VDT_CHECK(unsetenv("VIADUCT_PROVIDER") == 0);
	fprintf(stderr, "ok   open/query/close NIC\n");
}

/* ---- registration ---------------------------------------------------------------- */

static void test_register_errors(VIP_NIC_HANDLE nic)
{
	char *p = map_pages(4), *gone = map_pages(2);
	VIP_MEM_HANDLE mh, mh2;
	VIP_MEM_ATTRIBUTES ma;

	/* Inaccessible, and still reserved: an unmapped hole could be filled
	 * by any mmap in between (the handle table grows by mmap). */
	VDT_CHECK(mprotect(gone, 2 * ps, PROT_NONE) == 0);
	EXPECT(VipRegisterMem(NULL, p, ps, NULL, &mh), VIP_INVALID_PARAMETER);
	EXPECT(VipRegisterMem((void *)0x77, p, ps, NULL, &mh), VIP_INVALID_PARAMETER);
	EXPECT(VipRegisterMem(nic, p, 0, NULL, &mh), VIP_INVALID_PARAMETER);
	EXPECT(VipRegisterMem(nic, NULL, ps, NULL, &mh), VIP_INVALID_PARAMETER);
	EXPECT(VipRegisterMem(nic, p, ps, NULL, NULL), VIP_INVALID_PARAMETER);
	EXPECT(VipRegisterMem(nic, gone, ps, NULL, &mh), VIP_INVALID_PARAMETER);
	EXPECT(VipRegisterMem(nic, p, ULONG_MAX - 10, NULL, &mh), VIP_INVALID_PARAMETER);
	memset(&ma, 0, sizeof(ma));
	ma.Ptag = (void *)0x4242;
	EXPECT(VipRegisterMem(nic, p, ps, &ma, &mh), VIP_INVALID_PTAG);

	OK(VipRegisterMem(nic, p + 10, 100, NULL, &mh));
	VDT_CHECK(mh != 0 && (mh & IDX_MASK) != 0);
	/* (addr, handle) must be the registration's own pair. */
	EXPECT(VipDeregisterMem(nic, p, mh), VIP_INVALID_PARAMETER);
	EXPECT(VipDeregisterMem(nic, p + 10, mh ^ (1u << 20)), VIP_INVALID_PARAMETER);
	EXPECT(VipDeregisterMem(nic, p + 10, mh & IDX_MASK), VIP_INVALID_PARAMETER);
	EXPECT(VipDeregisterMem(nic, p + 10, 0), VIP_INVALID_PARAMETER);
	EXPECT(VipDeregisterMem(NULL, p + 10, mh), VIP_INVALID_PARAMETER);
	EXPECT(VipQueryMem(nic, p + 11, mh, &ma), VIP_INVALID_PARAMETER);
	EXPECT(VipQueryMem(nic, p + 10, mh, NULL), VIP_INVALID_PARAMETER);
	EXPECT(VipSetMemAttributes(nic, p + 10, mh, NULL), VIP_INVALID_PARAMETER);
	EXPECT(VipSetMemAttributes(nic, p, mh, &(VIP_MEM_ATTRIBUTES){ 0 }),
	       VIP_INVALID_PARAMETER);
	OK(VipDeregisterMem(nic, p + 10, mh));
	EXPECT(VipDeregisterMem(nic, p + 10, mh), VIP_INVALID_PARAMETER);
	EXPECT(VipQueryMem(nic, p + 10, mh, &ma), VIP_INVALID_PARAMETER);

	/* A stale handle stays dead when its slot is registered again. */
	OK(VipRegisterMem(nic, p, ps, NULL, &mh));
	OK(VipDeregisterMem(nic, p, mh));
	for (int i = 0; i < (int)VD_TPT_MAX + 5; i++) {
		OK(VipRegisterMem(nic, p, ps, NULL, &mh2));
		VDT_CHECK(mh2 != mh);
		EXPECT(vd_tpt_check_local(nic_of(nic), mh, (uint64_t)(uintptr_t)p, 1, 0),
		       -EBADF);
		OK(VipDeregisterMem(nic, p, mh2));
	}
	VDT_CHECK(munmap(p, 4 * ps) == 0);
	fprintf(stderr, "ok   registration errors, stale handles\n");
}

/* Keys are random: neither handles nor key parts form a sequence. */
static void test_keys(VIP_NIC_HANDLE nic)
{
	enum { N = 200 };
	VIP_MEM_HANDLE mh[N];
	char *p = map_pages(1);
	int i, j, seq = 0, dup = 0;

	for (i = 0; i < N; i++)
		OK(VipRegisterMem(nic, p, ps, NULL, &mh[i]));
	for (i = 0; i < N; i++) {
		VDT_CHECK(mh[i] >> VD_TPT_IDX_BITS);
		if (i >= 2 && (mh[i] >> VD_TPT_IDX_BITS) - (mh[i - 1] >> VD_TPT_IDX_BITS) ==
		    (mh[i - 1] >> VD_TPT_IDX_BITS) - (mh[i - 2] >> VD_TPT_IDX_BITS))
			seq++;
		for (j = 0; j < i; j++)
			dup += mh[i] == mh[j];
	}
	EXPECT(dup, 0);
	VDT_CHECK(seq < 5);
	for (i = 0; i < N; i++)
		OK(VipDeregisterMem(nic, p, mh[i]));
	VDT_CHECK(munmap(p, ps) == 0);
	fprintf(stderr, "ok   memory handles not sequential\n");
}

static void test_attributes(VIP_NIC_HANDLE nic)
{
	struct vd_nic *n = nic_of(nic);
	char *p = map_pages(2);
	VIP_PROTECTION_HANDLE pt;
	VIP_MEM_ATTRIBUTES ma, q;
	VIP_MEM_HANDLE mh;
	uint64_t a = (uint64_t)(uintptr_t)p;
	struct vd_ptag *ptag;

	OK(VipRegisterMem(nic, p, 2 * ps, NULL, &mh));
	OK(VipQueryMem(nic, p, mh, &q));
	VDT_CHECK(q.Ptag == vd_obj_handle(n->default_ptag));
	VDT_CHECK(!q.EnableRdmaWrite && !q.EnableRdmaRead);

	OK(VipCreatePtag(nic, &pt));
	ma = (VIP_MEM_ATTRIBUTES){ .Ptag = pt, .EnableRdmaWrite = VIP_TRUE };
	OK(VipSetMemAttributes(nic, p, mh, &ma));
	OK(VipQueryMem(nic, p, mh, &q));
	VDT_CHECK(q.Ptag == pt && q.EnableRdmaWrite && !q.EnableRdmaRead);
	EXPECT(VipDestroyPtag(nic, pt), VIP_INVALID_STATE);   /* in use */
	VDT_CHECK(vd_ptag_get(n, pt, &ptag) == 0 && ptag);
	EXPECT(vd_tpt_check_local(n, mh, a, 1, ptag->id), 0);
	EXPECT(vd_tpt_check_local(n, mh, a, 1, n->default_ptag->id), -EACCES);
	EXPECT(vd_tpt_check_local(n, mh, a, 1, 0), 0);

	ma = (VIP_MEM_ATTRIBUTES){ .Ptag = NULL, .EnableRdmaRead = VIP_TRUE };
	OK(VipSetMemAttributes(nic, p, mh, &ma));
	OK(VipQueryMem(nic, p, mh, &q));
	VDT_CHECK(q.Ptag == vd_obj_handle(n->default_ptag));
	VDT_CHECK(!q.EnableRdmaWrite && q.EnableRdmaRead);
	EXPECT(vd_tpt_check_local(n, mh, a, 1, ptag->id), -EACCES);
	vd_ptag_release(ptag);
	OK(VipDestroyPtag(nic, pt));                     /* no user left */
	EXPECT(VipDestroyPtag(nic, pt), VIP_INVALID_PTAG);
	ma.Ptag = pt;                                    /* destroyed */
	EXPECT(VipSetMemAttributes(nic, p, mh, &ma), VIP_INVALID_PTAG);
	OK(VipDeregisterMem(nic, p, mh));
	VDT_CHECK(munmap(p, 2 * ps) == 0);
	fprintf(stderr, "ok   VipQueryMem / VipSetMemAttributes\n");
}

/* ---- TPT checks ------------------------------------------------------------------- */

static void test_check_local(VIP_NIC_HANDLE nic)
{
	struct vd_nic *n = nic_of(nic);
	char *p = map_pages(4);
	uint64_t a = (uint64_t)(uintptr_t)p + 100, len = 2 * ps;
	VIP_MEM_HANDLE mh;

	OK(VipRegisterMem(nic, p + 100, len, NULL, &mh));
	EXPECT(vd_tpt_check_local(n, mh, a, len, 0), 0);
	EXPECT(vd_tpt_check_local(n, mh, a, 0, 0), 0);
	EXPECT(vd_tpt_check_local(n, mh, a + len - 1, 1, 0), 0);
	EXPECT(vd_tpt_check_local(n, mh, a + 5, len - 5, 0), 0);
	EXPECT(vd_tpt_check_local(n, mh, a - 1, 1, 0), -ERANGE);
	EXPECT(vd_tpt_check_local(n, mh, a, len + 1, 0), -ERANGE);
	EXPECT(vd_tpt_check_local(n, mh, a + len, 1, 0), -ERANGE);
	EXPECT(vd_tpt_check_local(n, mh, a + 1, UINT64_MAX, 0), -ERANGE);
	EXPECT(vd_tpt_check_local(n, mh, UINT64_MAX - 2, 10, 0), -ERANGE);
	EXPECT(vd_tpt_check_local(n, mh, a, len, n->default_ptag->id), 0);
	EXPECT(vd_tpt_check_local(n, mh, a, len, n->default_ptag->id + 1), -EACCES);
	/* Handle before range before ptag. */
	EXPECT(vd_tpt_check_local(n, mh ^ (1u << 31), a - 1, 1, 1), -EBADF);
	EXPECT(vd_tpt_check_local(n, mh, a - 1, 1, n->default_ptag->id + 1), -ERANGE);
	EXPECT(vd_tpt_check_local(n, mh & IDX_MASK, a, 1, 0), -EBADF);
	EXPECT(vd_tpt_check_local(n, 0, a, 1, 0), -EBADF);
	EXPECT(vd_tpt_check_local(n, UINT32_MAX, a, 1, 0), -EBADF);
	OK(VipDeregisterMem(nic, p + 100, mh));
	EXPECT(vd_tpt_check_local(n, mh, a, 1, 0), -EBADF);
	VDT_CHECK(munmap(p, 4 * ps) == 0);
	fprintf(stderr, "ok   vd_tpt_check_local\n");
}

/* The peer's view: the memfd mapped read-only, never writable. */
static const struct vd_shm_tpt_shared *map_peer_view(struct vd_nic *n)
{
	const struct vd_shm_tpt_shared *t;
	void *w;

	w = mmap(NULL, VD_SHM_TPT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED,
		 vd_shm_nic(n)->tpt_fd, 0);
	VDT_CHECK(w == MAP_FAILED);
	VDT_CHECK(pwrite(vd_shm_nic(n)->tpt_fd, "x", 1, 0) < 0);
	VDT_CHECK(ftruncate(vd_shm_nic(n)->tpt_fd, 4096) < 0);
	t = mmap(NULL, VD_SHM_TPT_BYTES, PROT_READ, MAP_SHARED, vd_shm_nic(n)->tpt_fd, 0);
	VDT_CHECK(t != MAP_FAILED);
	VDT_CHECK(mprotect((void *)t, VD_SHM_TPT_BYTES, PROT_READ | PROT_WRITE) != 0);
	EXPECT(t->magic, VD_SHM_TPT_MAGIC);
	EXPECT(t->version, VD_SHM_TPT_VERSION);
	EXPECT(t->nentries, VD_TPT_MAX);
	return t;
}

static void test_check_remote(VIP_NIC_HANDLE nic)
{
	struct vd_nic *n = nic_of(nic);
	const struct vd_shm_tpt_shared *t = map_peer_view(n);
	char *p = map_pages(2);
	uint64_t a = (uint64_t)(uintptr_t)p;
	uint32_t id = n->default_ptag->id;
	VIP_MEM_ATTRIBUTES ma = { NULL, VIP_TRUE, VIP_FALSE };
	VIP_MEM_HANDLE mh;

	OK(VipRegisterMem(nic, p, ps, &ma, &mh));
	EXPECT(vd_shm_tpt_check(t, mh, a, ps, 0, VD_TPT_RDMA_WRITE), 0);
	EXPECT(vd_shm_tpt_check(t, mh, a, ps, id, VD_TPT_RDMA_WRITE), 0);
	EXPECT(vd_shm_tpt_check(t, mh, a, ps, id, 0), 0);
	EXPECT(vd_shm_tpt_check(t, mh, a, ps, id, VD_TPT_RDMA_READ), -EACCES);
	EXPECT(vd_shm_tpt_check(t, mh, a, ps, id + 1, VD_TPT_RDMA_WRITE), -EACCES);
	EXPECT(vd_shm_tpt_check(t, mh, a, ps + 1, id, VD_TPT_RDMA_WRITE), -ERANGE);
	EXPECT(vd_shm_tpt_check(t, mh, a + 8, UINT64_MAX - 4, id, 0), -ERANGE);
	EXPECT(vd_shm_tpt_check(t, mh + (1u << VD_TPT_IDX_BITS), a, 1, id, 0), -EBADF);
	EXPECT(vd_shm_tpt_check(t, mh & IDX_MASK, a, 1, id, 0), -EBADF);
	EXPECT(vd_shm_tpt_check(t, 0, a, 1, 0, 0), -EBADF);
	ma.EnableRdmaRead = VIP_TRUE;
	OK(VipSetMemAttributes(nic, p, mh, &ma));
	EXPECT(vd_shm_tpt_check(t, mh, a, ps, id,
				   VD_TPT_RDMA_READ | VD_TPT_RDMA_WRITE), 0);
	OK(VipDeregisterMem(nic, p, mh));
	EXPECT(vd_shm_tpt_check(t, mh, a, ps, 0, 0), -EBADF);
	munmap((void *)t, VD_SHM_TPT_BYTES);
	VDT_CHECK(munmap(p, 2 * ps) == 0);
	fprintf(stderr, "ok   vd_shm_tpt_check through a read-only mapping\n");
}

/* A "peer" thread checks the current handle while this thread changes
 * attributes, deregisters and registers again.  Outcomes: 0 or -EACCES
 * while the registration lives, -EBADF once VipDeregisterMem returned. */
struct revoke_ctx {
	const struct vd_shm_tpt_shared *t;
	uint64_t addr;
	_Atomic uint32_t mh;      /* 0: stop */
	_Atomic uint32_t dead;    /* a handle that must fail */
	_Atomic uint32_t seen;    /* the handle of the peer's last check */
	atomic_ulong ok, acc, bad;
};

static void *revoke_peer(void *arg)
{
	struct revoke_ctx *c = arg;
	uint32_t mh, dead;
	int r;

	while ((mh = atomic_load(&c->mh)) != 0) {
		dead = atomic_load(&c->dead);
		r = vd_shm_tpt_check(c->t, mh, c->addr, 64, 0, VD_TPT_RDMA_WRITE);
		VDT_CHECK(r == 0 || r == -EACCES || r == -EBADF);
		atomic_fetch_add(r == 0 ? &c->ok : r == -EACCES ? &c->acc : &c->bad, 1);
		atomic_store(&c->seen, mh);
		if (dead)
			EXPECT(vd_shm_tpt_check(c->t, dead, c->addr, 64, 0, 0), -EBADF);
	}
	return NULL;
}

static void wait_seen(struct revoke_ctx *c, uint32_t mh)
{
	uint64_t give_up = vd_now_ns() + 1000000000ull;

	while (atomic_load(&c->seen) != mh && vd_now_ns() < give_up)
		sched_yield();
}

static void test_concurrent_revoke(VIP_NIC_HANDLE nic)
{
	struct vd_nic *n = nic_of(nic);
	struct revoke_ctx c = { 0 };
	char *p = map_pages(1);
	VIP_MEM_ATTRIBUTES on = { NULL, VIP_TRUE, VIP_FALSE }, off = { 0 };
	VIP_MEM_HANDLE mh;
	pthread_t th;
	int i;

	c.t = map_peer_view(n);
	c.addr = (uint64_t)(uintptr_t)p;
	OK(VipRegisterMem(nic, p, ps, &on, &mh));
	atomic_store(&c.mh, mh);
	VDT_CHECK(pthread_create(&th, NULL, revoke_peer, &c) == 0);
	for (i = 0; i < 20000; i++) {
		OK(VipSetMemAttributes(nic, p, mh, i % 2 ? &on : &off));
		if (i % 7 == 0) {
			OK(VipSetMemAttributes(nic, p, mh, &on));
			OK(VipDeregisterMem(nic, p, mh));
			EXPECT(vd_shm_tpt_check(c.t, mh, c.addr, 64, 0, 0), -EBADF);
			atomic_store(&c.dead, mh);
			OK(VipRegisterMem(nic, p, ps, &on, &mh));
			atomic_store(&c.mh, mh);
			/* Let the peer meet the live handle at least once
			 * (registering is slow; on a busy machine it might
			 * otherwise only ever see dead ones). */
			wait_seen(&c, mh);
		}
	}
	atomic_store(&c.mh, 0);
	pthread_join(th, NULL);
	OK(VipDeregisterMem(nic, p, mh));
	fprintf(stderr, "ok   concurrent revoke: %lu ok, %lu refused, %lu revoked\n",
		atomic_load(&c.ok), atomic_load(&c.acc), atomic_load(&c.bad));
	VDT_CHECK(atomic_load(&c.ok) > 0);
	munmap((void *)c.t, VD_SHM_TPT_BYTES);
	VDT_CHECK(munmap(p, ps) == 0);
}

/* The table holds VD_TPT_MAX - 1 registrations, then VIP_ERROR_RESOURCE. */
static void test_table_full(VIP_NIC_HANDLE nic)
{
	static VIP_MEM_HANDLE mh[VD_TPT_MAX];
	char *p = map_pages(1);
	unsigned i;

	for (i = 0; i < VD_TPT_MAX - 1; i++)
		OK(VipRegisterMem(nic, p, 8, NULL, &mh[i]));
	EXPECT(VipRegisterMem(nic, p, 8, NULL, &mh[i]), VIP_ERROR_RESOURCE);
	for (i = 0; i < VD_TPT_MAX - 1; i++)
		OK(VipDeregisterMem(nic, p, mh[i]));
	OK(VipRegisterMem(nic, p, 8, NULL, &mh[0]));
	OK(VipDeregisterMem(nic, p, mh[0]));
	VDT_CHECK(munmap(p, ps) == 0);
	fprintf(stderr, "ok   %u registrations, then VIP_ERROR_RESOURCE\n", VD_TPT_MAX - 1);
}

/* ---- ptags -------------------------------------------------------------------------- */

static void test_ptags(VIP_NIC_HANDLE nic)
{
	struct vd_nic *n = nic_of(nic);
	VIP_PROTECTION_HANDLE pt[3], other_pt;
	VIP_NIC_HANDLE other;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_MEM_HANDLE mh;
	struct vd_ptag *g;
	char *p = map_pages(1);
	int i;

	OK(VipOpenNic("/dev/via_lo", &other));
	EXPECT(VipCreatePtag(nic, NULL), VIP_INVALID_PARAMETER);
	EXPECT(VipCreatePtag(NULL, &pt[0]), VIP_INVALID_PARAMETER);
	for (i = 0; i < 3; i++)
		OK(VipCreatePtag(nic, &pt[i]));
	OK(VipCreatePtag(other, &other_pt));
	VDT_CHECK(pt[0] != pt[1] && pt[1] != pt[2]);
	for (i = 0; i < 3; i++) {
		struct vd_ptag *x = vd_obj_lookup(pt[i], VD_OBJ_PTAG);

		VDT_CHECK(x && x->id && x->id != n->default_ptag->id);
	}
	/* vd_ptag_get: NULL -> "default/any"; foreign/garbage -> -EACCES. */
	g = (void *)1;
	EXPECT(vd_ptag_get(n, NULL, &g), 0);
	VDT_CHECK(g == NULL);
	EXPECT(vd_ptag_get(n, other_pt, &g), -EACCES);
	EXPECT(vd_ptag_get(n, (void *)0x99, &g), -EACCES);
	EXPECT(vd_ptag_get(n, pt[0], &g), 0);
	EXPECT(VipDestroyPtag(nic, pt[0]), VIP_INVALID_STATE);   /* held */
	vd_ptag_release(g);

	EXPECT(VipDestroyPtag(nic, vd_obj_handle(n->default_ptag)), VIP_INVALID_PTAG);
	EXPECT(VipDestroyPtag(nic, other_pt), VIP_INVALID_PTAG);
	EXPECT(VipDestroyPtag(nic, NULL), VIP_INVALID_PTAG);
	EXPECT(VipDestroyPtag(NULL, pt[0]), VIP_INVALID_PARAMETER);
	ma.Ptag = other_pt;
	EXPECT(VipRegisterMem(nic, p, ps, &ma, &mh), VIP_INVALID_PTAG);
	ma.Ptag = pt[1];
	OK(VipRegisterMem(nic, p, ps, &ma, &mh));
	EXPECT(VipDestroyPtag(nic, pt[1]), VIP_INVALID_STATE);
	OK(VipDeregisterMem(nic, p, mh));
	for (i = 0; i < 3; i++)
		OK(VipDestroyPtag(nic, pt[i]));
	EXPECT(VipDestroyPtag(nic, pt[0]), VIP_INVALID_PTAG);
	/* Closing a NIC takes its ptags (and registrations) with it. */
	OK(VipCreatePtag(other, &pt[0]));
	ma.Ptag = pt[0];
	OK(VipRegisterMem(other, p, ps, &ma, &mh));
	OK(VipCloseNic(other));
	VDT_CHECK(!vd_obj_lookup(pt[0], VD_OBJ_PTAG));
	VDT_CHECK(!vd_obj_lookup(other_pt, VD_OBJ_PTAG));
	VDT_CHECK(munmap(p, ps) == 0);
	fprintf(stderr, "ok   protection tags\n");
}

/* ---- name service, SMI, callbacks, extras ------------------------------------------- */

static void expect_local_name(VIP_NIC_HANDLE nic, const char *name)
{
	struct { VIP_NET_ADDRESS a; uint8_t room[64]; } buf;

	memset(&buf, 0xee, sizeof(buf));
	buf.a.DiscriminatorLen = 7;
	if (VipNSGetHostByName(nic, (VIP_CHAR *)name, &buf.a, 0) != VIP_SUCCESS) {
		fprintf(stderr, "VipNSGetHostByName(\"%s\") failed\n", name);
		exit(VDT_FAIL);
	}
	EXPECT(buf.a.HostAddressLen, 6);
	EXPECT(buf.a.DiscriminatorLen, 7);      /* untouched */
	VDT_CHECK(memcmp(buf.a.HostAddress, nic_of(nic)->addr, 6) == 0);
}

static void test_ns(VIP_NIC_HANDLE nic)
{
	struct { VIP_NET_ADDRESS a; uint8_t room[64]; } buf;
	char host[256], shortname[256], name[256];
	struct utsname u;
	VIP_ULONG len;

	OK(VipNSInit(nic, NULL));
	EXPECT(VipNSInit(NULL, NULL), VIP_INVALID_PARAMETER);
	VDT_CHECK(uname(&u) == 0);
	snprintf(shortname, sizeof(shortname), "%s", u.nodename);
	shortname[strcspn(shortname, ".")] = '\0';
	VDT_CHECK(gethostname(host, sizeof(host)) == 0);
	expect_local_name(nic, "localhost");
	expect_local_name(nic, "LOCALHOST");
	expect_local_name(nic, "localhost.localdomain");
	expect_local_name(nic, "127.0.0.1");
	expect_local_name(nic, "::1");
	expect_local_name(nic, "");
	expect_local_name(nic, u.nodename);
	expect_local_name(nic, shortname);
	expect_local_name(nic, host);
	EXPECT(VipNSGetHostByName(nic, "no-such-host.invalid", &buf.a, 0),
	       VIP_ERROR_NAMESERVICE);
	EXPECT(VipNSGetHostByName(nic, "localhost", &buf.a, 1), VIP_ERROR_NAMESERVICE);
	EXPECT(VipNSGetHostByName(nic, NULL, &buf.a, 0), VIP_INVALID_PARAMETER);
	EXPECT(VipNSGetHostByName(nic, "localhost", NULL, 0), VIP_INVALID_PARAMETER);
	EXPECT(VipNSGetHostByName(NULL, "localhost", &buf.a, 0), VIP_INVALID_PARAMETER);

	OK(VipNSGetHostByName(nic, "localhost", &buf.a, 0));
	len = sizeof(name);
	OK(VipNSGetHostByAddr(nic, &buf.a, name, &len));
	VDT_CHECK(strcmp(name, shortname) == 0);
	EXPECT(len, strlen(shortname) + 1);
	len = 1;
	EXPECT(VipNSGetHostByAddr(nic, &buf.a, name, &len), VIP_INVALID_PARAMETER);
	EXPECT(len, strlen(shortname) + 1);
	EXPECT(VipNSGetHostByAddr(nic, &buf.a, name, NULL), VIP_INVALID_PARAMETER);
	((uint8_t *)&buf.a + offsetof(VIP_NET_ADDRESS, HostAddress))[3] ^= 0xff;
	len = sizeof(name);
	EXPECT(VipNSGetHostByAddr(nic, &buf.a, name, &len), VIP_ERROR_NAMESERVICE);
	OK(VipNSShutdown(nic));
	expect_local_name(nic, "localhost");      /* still works */
	fprintf(stderr, "ok   name service (host \"%s\")\n", u.nodename);
}

static void test_smi(VIP_NIC_HANDLE nic)
{
	struct { VIP_NET_ADDRESS a; uint8_t room[64]; } buf;
	VIP_NET_ADDRESS *arr[1] = { &buf.a };
	VIP_AUTODISCOVERY_LIST l;

	memset(&buf, 0xee, sizeof(buf));
	l = (VIP_AUTODISCOVERY_LIST){ 99, arr, 99 };
	OK(VipQuerySystemManagementInfo(nic, VIP_SMI_AUTODISCOVERY, &l));
	EXPECT(l.NumberOfHops, 0);
	EXPECT(l.NumAdAddrs, 1);
	EXPECT(buf.a.HostAddressLen, 6);
	EXPECT(buf.a.DiscriminatorLen, 0);
	VDT_CHECK(memcmp(buf.a.HostAddress, nic_of(nic)->addr, 6) == 0);
	l = (VIP_AUTODISCOVERY_LIST){ 99, NULL, 99 };
	OK(VipQuerySystemManagementInfo(nic, VIP_SMI_AUTODISCOVERY, &l));
	EXPECT(l.NumAdAddrs, 0);
	EXPECT(VipQuerySystemManagementInfo(nic, 2, &l), VIP_ERROR_NOT_SUPPORTED);
	EXPECT(VipQuerySystemManagementInfo(nic, VIP_SMI_AUTODISCOVERY, NULL),
	       VIP_INVALID_PARAMETER);
	EXPECT(VipQuerySystemManagementInfo(NULL, VIP_SMI_AUTODISCOVERY, &l),
	       VIP_INVALID_PARAMETER);
	fprintf(stderr, "ok   VipQuerySystemManagementInfo\n");
}

static VIP_ERROR_DESCRIPTOR g_err;
static int g_err_calls;

static void on_error(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e)
{
	VDT_CHECK(ctx == &g_err);
	g_err = *e;
	g_err_calls++;
}

static void test_callbacks_and_extras(VIP_NIC_HANDLE nic)
{
	struct vd_nic *n = nic_of(nic);
	struct vd_obj *fake_cq, *fake_vi;
	VIP_DESCRIPTOR d;
	VIP_BOOLEAN b;
	void *ev = NULL;

	EXPECT(VipErrorCallback(NULL, NULL, on_error), VIP_INVALID_PARAMETER);
	OK(VipErrorCallback(nic, &g_err, on_error));
	vd_async_error(n, NULL, NULL, &d, VIP_RESOURCE_DESCRIPTOR, VIP_ERROR_POST_DESC);
	EXPECT(g_err_calls, 1);
	VDT_CHECK(g_err.NicHandle == nic && !g_err.ViHandle && !g_err.CQHandle);
	VDT_CHECK(g_err.DescriptorPtr == &d && g_err.OpCode == 0);
	EXPECT(g_err.ResourceCode, VIP_RESOURCE_DESCRIPTOR);
	EXPECT(g_err.ErrorCode, VIP_ERROR_POST_DESC);
	OK(VipErrorCallback(nic, NULL, NULL));
	vd_async_error(n, NULL, NULL, NULL, VIP_RESOURCE_NIC, VIP_ERROR_CATASTROPHIC);
	EXPECT(g_err_calls, 1);

	/* Giganet extras: the handle is checked, then NOT_SUPPORTED.  The
	 * objects are bare handle-table entries (no CQ/VI behind them). */
	fake_cq = vd_obj_new(VD_OBJ_CQ, sizeof(struct vd_cq));
	fake_vi = vd_obj_new(VD_OBJ_VI, sizeof(struct vd_vi));
	EXPECT(VipAddTagCQ(NULL, &ev, 1, 0), VIP_INVALID_PARAMETER);
	EXPECT(VipAddTagCQ(vd_obj_handle(fake_cq), &ev, 1, 0), VIP_ERROR_NOT_SUPPORTED);
	EXPECT(VipRemoveTagCQ(nic, ev, 1), VIP_INVALID_PARAMETER);
	EXPECT(VipRemoveTagCQ(vd_obj_handle(fake_cq), ev, 1), VIP_ERROR_NOT_SUPPORTED);
	EXPECT(VipPostDeferredSends(nic, VIP_FALSE, &b), VIP_INVALID_PARAMETER);
	EXPECT(VipPostDeferredSends(vd_obj_handle(fake_vi), VIP_FALSE, &b),
	       VIP_ERROR_NOT_SUPPORTED);
	vd_obj_free(fake_cq);
	vd_obj_free(fake_vi);
	fprintf(stderr, "ok   error callback, Giganet extras\n");
}

/* ---- memlock limit, as nobody ------------------------------------------------------- */

static int drop_to_nobody(void)
{
	if (geteuid() != 0)
		return 0;
	VDT_CHECK(setgroups(0, NULL) == 0);
	VDT_CHECK(setgid(NOBODY) == 0);
	VDT_CHECK(setuid(NOBODY) == 0);
	VDT_CHECK(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == 0);  /* /proc/self */
	return 1;
}

static void memlock_child(void)
{
	struct rlimit rl = { 64 * 1024, 64 * 1024 };
	VIP_NIC_ATTRIBUTES a;
	VIP_NIC_HANDLE nic;
	VIP_MEM_HANDLE mh, small;
	char *p;

	VDT_CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0);
	drop_to_nobody();
	p = map_pages(64);
	OK(VipOpenNic("/dev/via_lo", &nic));
	OK(VipQueryNic(nic, &a));
	EXPECT(a.MaxRegisterBytes, 64 * 1024);
	EXPECT(vdt_vmlck_bytes(0), 0);
	EXPECT(VipRegisterMem(nic, p, 64 * ps, NULL, &mh), VIP_ERROR_RESOURCE);
	EXPECT(vdt_vmlck_bytes(0), 0);
	OK(VipRegisterMem(nic, p, 4 * ps, NULL, &small));
	EXPECT(vdt_vmlck_bytes(0), 4 * (long long)ps);
	EXPECT(VipRegisterMem(nic, p + 8 * ps, 32 * ps, NULL, &mh), VIP_ERROR_RESOURCE);
	EXPECT(vdt_vmlck_bytes(0), 4 * (long long)ps);
	OK(VipDeregisterMem(nic, p, small));
	EXPECT(vdt_vmlck_bytes(0), 0);
	/* Closing with a registration outstanding unlocks it. */
	OK(VipRegisterMem(nic, p, 8 * ps, NULL, &small));
	EXPECT(vdt_vmlck_bytes(0), 8 * (long long)ps);
	OK(VipCloseNic(nic));
	EXPECT(vdt_vmlck_bytes(0), 0);

	rl.rlim_cur = rl.rlim_max = 0;
	VDT_CHECK(setrlimit(RLIMIT_MEMLOCK, &rl) == 0);
	OK(VipOpenNic("/dev/via_lo", &nic));
	EXPECT(VipRegisterMem(nic, p, ps, NULL, &mh), VIP_ERROR_RESOURCE);
	EXPECT(vdt_vmlck_bytes(0), 0);
	OK(VipCloseNic(nic));
	_exit(0);
}

static void test_memlock_limit(void)
{
	int st;
	pid_t pid = fork();

	VDT_CHECK(pid >= 0);
	if (pid == 0) {
		alarm(30);
		memlock_child();
	}
	VDT_CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "memlock child failed (status 0x%x)\n", st);
		exit(VDT_FAIL);
	}
	fprintf(stderr, "ok   RLIMIT_MEMLOCK 64 KiB%s: VIP_ERROR_RESOURCE, "
		"nothing left locked\n", geteuid() == 0 ? " as nobody" : "");
}

int main(void)
{
	VIP_NIC_HANDLE nic;
	long long vmlck0;

	alarm(120);
	ps = (size_t)sysconf(_SC_PAGESIZE);
	test_handles_basic();
	test_handles_race();
	test_util();
	test_nic();
	vmlck0 = vdt_vmlck_bytes(0);
	OK(VipOpenNic("/dev/via_lo", &nic));
	test_register_errors(nic);
	test_keys(nic);
	test_attributes(nic);
	test_check_local(nic);
	test_check_remote(nic);
	test_concurrent_revoke(nic);
	test_table_full(nic);
	test_ptags(nic);
	test_ns(nic);
	test_smi(nic);
	test_callbacks_and_extras(nic);
	OK(VipCloseNic(nic));
	EXPECT(vdt_vmlck_bytes(0), vmlck0);
	test_memlock_limit();
	return VDT_PASS;
}
