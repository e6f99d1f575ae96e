/* SPDX-License-Identifier: MIT */
/*
 * VIPL API, one process: NIC open/close/query, name service, protection
 * tags, memory registration, error callback -- success paths and every
 * invalid-handle path (VIP_INVALID_PARAMETER, never a crash).
 */
#include "viptest.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Device names real clients pass (vipl-interface.md 4.1). */
static const char *const devices[] = {
	"/dev/via_lo", "/dev/via_eth0", "/dev/via_eth7", "/etc/via_lo",
	"/dev/clanvi0", "nic0", "nic1", "whatever",
};

static void test_open_names(void)
{
	for (size_t i = 0; i < sizeof(devices) / sizeof(devices[0]); i++) {
		VIP_NIC_HANDLE nic = NULL;

		VT_OK(VipOpenNic(devices[i], &nic));
		VDT_CHECK(nic != NULL);
		VT_OK(VipCloseNic(nic));
	}
	VT_EXPECT(VipOpenNic("/dev/via_lo", NULL), VIP_INVALID_PARAMETER);
}

/* Another real client opens the same device twice in one process; the two
 * handles live independently. */
static void test_open_twice(void)
{
	VIP_NIC_HANDLE a, b;
	VIP_NIC_ATTRIBUTES na;

	VT_OK(VipOpenNic("/dev/via_lo", &a));
	VT_OK(VipOpenNic("/dev/via_lo", &b));
	VDT_CHECK(a != b);
	VT_OK(VipCloseNic(a));
	VT_OK(VipQueryNic(b, &na));
	VT_EXPECT(VipQueryNic(a, &na), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipCloseNic(a), VIP_INVALID_PARAMETER);
	VT_OK(VipCloseNic(b));
}

static void check_addr_bytes(VIP_NIC_HANDLE nic, const VIP_NIC_ATTRIBUTES *na,
			     const char *name)
{
	VIP_NET_ADDRESS *a = calloc(1, sizeof(*a) + 64);

	VDT_CHECK(a != NULL);
	a->HostAddressLen = na->NicAddressLen;
	VT_OK(VipNSGetHostByName(nic, (VIP_CHAR *)name, a, 0));
	VDT_CHECK_EQ(a->HostAddressLen, na->NicAddressLen);
	if (memcmp(a->HostAddress, na->LocalNicAddress, na->NicAddressLen)) {
		fprintf(stderr, "address of \"%s\" != LocalNicAddress\n", name);
		exit(VDT_FAIL);
	}
	free(a);
}

static void test_query(void)
{
	VIP_NIC_HANDLE nic;
	VIP_NIC_ATTRIBUTES na;
	char host[256], *dot;

	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	memset(&na, 0xa5, sizeof(na));
	VT_OK(VipQueryNic(nic, &na));
	VDT_CHECK(memchr(na.Name, 0, sizeof(na.Name)) != NULL);
	VDT_CHECK(na.Name[0] != 0);
	VDT_CHECK_EQ(na.ThreadSafe, VIP_TRUE);
	VDT_CHECK_EQ(na.NicAddressLen, 6);
	VDT_CHECK(na.LocalNicAddress != NULL);
	VDT_CHECK_EQ(na.ReliabilityLevelSupport, 0x7);
	VDT_CHECK(na.MaxTransferSize >= 32768);
	VDT_CHECK(na.MaxDiscriminatorLen >= 16);
	VDT_CHECK(na.MaxSegmentsPerDesc >= 2);
	VDT_CHECK(na.MaxDescriptorsPerQueue >= 256);
	VDT_CHECK(na.MaxCQEntries >= 1024);
	VDT_CHECK(na.MaxVI >= 1 && na.MaxCQ >= 1 && na.MaxPtags >= 1);
	VDT_CHECK(na.MaxRegisterRegions >= 1 && na.MaxRegisterBytes >= 1);
	VT_EXPECT(VipQueryNic(nic, NULL), VIP_INVALID_PARAMETER);

	check_addr_bytes(nic, &na, "localhost");
	VDT_CHECK(gethostname(host, sizeof(host)) == 0);
	host[sizeof(host) - 1] = 0;
	check_addr_bytes(nic, &na, host);
	dot = strchr(host, '.');
	if (dot) {
		*dot = 0;
		check_addr_bytes(nic, &na, host);
	}
	VT_OK(VipCloseNic(nic));
}

static void test_name_service(void)
{
	VIP_NIC_HANDLE nic;
	VIP_NET_ADDRESS *a = calloc(1, sizeof(*a) + 64);
	VIP_CHAR name[256];
	VIP_ULONG len = sizeof(name);

	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(VipNSInit(nic, NULL));
	a->HostAddressLen = 6;
	VT_EXPECT(VipNSGetHostByName(nic, "no-such-host.invalid", a, 0),
		  VIP_ERROR_NAMESERVICE);
	VT_EXPECT(VipNSGetHostByName(nic, NULL, a, 0), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipNSGetHostByName(nic, "localhost", NULL, 0),
		  VIP_INVALID_PARAMETER);
	a->HostAddressLen = 6;
	VT_OK(VipNSGetHostByName(nic, "localhost", a, 0));
	a->DiscriminatorLen = 0;
	memset(name, 0, sizeof(name));
	VT_OK(VipNSGetHostByAddr(nic, a, name, &len));
	VDT_CHECK(name[0] != 0 && len > 0 && len <= sizeof(name));
	VT_EXPECT(VipNSGetHostByAddr(nic, NULL, name, &len), VIP_INVALID_PARAMETER);
	/* A client shuts the name service down before connecting: later
	 * look-ups after a new NSInit still work, and Shutdown is lenient. */
	VT_OK(VipNSShutdown(nic));
	VT_OK(VipNSInit(nic, NULL));
	a->HostAddressLen = 6;
	VT_OK(VipNSGetHostByName(nic, "localhost", a, 0));
	VT_OK(VipNSShutdown(nic));
	VT_OK(VipCloseNic(nic));
	free(a);
}

static void test_ptags(void)
{
	VIP_NIC_HANDLE nic, nic2;
	VIP_PROTECTION_HANDLE p1, p2;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	struct vt_mem m;
	int r;

	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(VipOpenNic("/dev/via_lo", &nic2));
	VT_OK(VipCreatePtag(nic, &p1));
	VT_OK(VipCreatePtag(nic, &p2));
	VDT_CHECK(p1 != NULL && p2 != NULL && p1 != p2);
	VT_EXPECT(VipCreatePtag(nic, NULL), VIP_INVALID_PARAMETER);
	/* A ptag belongs to its NIC handle. */
	r = VipDestroyPtag(nic2, p1);
	VDT_CHECK(r == VIP_INVALID_PARAMETER || r == VIP_INVALID_PTAG);
	/* In use by a registration: refused, then fine once unused. */
	ma.Ptag = p2;
	VT_OK(vt_mem_get(nic, 4096, &ma, &m));
	VDT_CHECK(VipDestroyPtag(nic, p2) != VIP_SUCCESS);
	vt_mem_put(&m);
	VT_OK(VipDestroyPtag(nic, p2));
	VT_OK(VipDestroyPtag(nic, p1));
	/* Stale, forged and NULL ptags: INVALID_PARAMETER or INVALID_PTAG. */
	r = VipDestroyPtag(nic, p1);
	VDT_CHECK(r == VIP_INVALID_PARAMETER || r == VIP_INVALID_PTAG);
	r = VipDestroyPtag(nic, (void *)0x1234);
	VDT_CHECK(r == VIP_INVALID_PARAMETER || r == VIP_INVALID_PTAG);
	r = VipDestroyPtag(nic, NULL);
	VDT_CHECK(r == VIP_INVALID_PARAMETER || r == VIP_INVALID_PTAG);
	VT_OK(VipCloseNic(nic2));
	VT_OK(VipCloseNic(nic));
}

static void test_register_errors(VIP_NIC_HANDLE nic)
{
	static char buf[8192];
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_MEM_HANDLE h;
	VIP_NIC_HANDLE other;
	VIP_PROTECTION_HANDLE foreign;
	void *gone;
	int r;

	VT_EXPECT(VipRegisterMem(nic, buf, sizeof(buf), NULL, NULL),
		  VIP_INVALID_PARAMETER);
	VT_EXPECT(VipRegisterMem(nic, NULL, 4096, NULL, &h), VIP_INVALID_PARAMETER);
	/* Length 0: refused or a harmless empty region. */
	r = VipRegisterMem(nic, buf, 0, NULL, &h);
	VDT_CHECK(r == VIP_INVALID_PARAMETER || r == VIP_SUCCESS);
	if (r == VIP_SUCCESS)
		VT_OK(VipDeregisterMem(nic, buf, h));
	ma.Ptag = (void *)0x1234;
	r = VipRegisterMem(nic, buf, sizeof(buf), &ma, &h);
	VDT_CHECK(r == VIP_INVALID_PTAG || r == VIP_INVALID_PARAMETER);
	VT_OK(VipOpenNic("/dev/via_lo", &other));
	VT_OK(VipCreatePtag(other, &foreign));
	ma.Ptag = foreign;
	r = VipRegisterMem(nic, buf, sizeof(buf), &ma, &h);
	VDT_CHECK(r == VIP_INVALID_PTAG || r == VIP_INVALID_PARAMETER);
	VT_OK(VipCloseNic(other));
	/* Unmapped memory: an error, not a crash. */
	gone = mmap(NULL, 65536, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	VDT_CHECK(gone != MAP_FAILED);
	munmap(gone, 65536);
	r = VipRegisterMem(nic, gone, 65536, NULL, &h);
	VDT_CHECK(r != VIP_SUCCESS);
}

static void test_register(void)
{
	VIP_NIC_HANDLE nic;
	VIP_PROTECTION_HANDLE p;
	VIP_MEM_ATTRIBUTES ma = { 0 }, q;
	VIP_MEM_HANDLE h[6];
	char stackbuf[100];
	char *heap = malloc(12345);
	int same_step = 1;

	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(VipCreatePtag(nic, &p));
	/* NULL attributes (Giganet clients), any alignment, overlaps. */
	VT_OK(VipRegisterMem(nic, heap + 3, 5, NULL, &h[0]));
	VT_OK(VipRegisterMem(nic, heap, 12345, NULL, &h[1]));
	VT_OK(VipRegisterMem(nic, heap + 1000, 1000, NULL, &h[2]));
	VT_OK(VipRegisterMem(nic, stackbuf + 1, 77, NULL, &h[3]));
	ma.Ptag = p;
	ma.EnableRdmaWrite = VIP_TRUE;
	VT_OK(VipRegisterMem(nic, heap, 100, &ma, &h[4]));
	VT_OK(VipRegisterMem(nic, heap, 100, &ma, &h[5]));
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < i; j++)
			VDT_CHECK(h[i] != h[j]);
	/* Handles are not sequential (unguessable). */
	for (int i = 2; i < 6; i++)
		same_step &= (h[i] - h[i - 1]) == (h[1] - h[0]);
	VDT_CHECK(!same_step);

	memset(&q, 0, sizeof(q));
	VT_OK(VipQueryMem(nic, heap, h[4], &q));
	VDT_CHECK(q.Ptag == p && q.EnableRdmaWrite && !q.EnableRdmaRead);
	ma.EnableRdmaWrite = VIP_FALSE;
	ma.EnableRdmaRead = VIP_TRUE;
	VT_OK(VipSetMemAttributes(nic, heap, h[4], &ma));
	VT_OK(VipQueryMem(nic, heap, h[4], &q));
	VDT_CHECK(q.Ptag == p && !q.EnableRdmaWrite && q.EnableRdmaRead);
	VT_OK(VipQueryMem(nic, heap + 3, h[0], &q));
	VDT_CHECK(!q.EnableRdmaWrite && !q.EnableRdmaRead);
	VT_EXPECT(VipQueryMem(nic, heap, h[4], NULL), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipSetMemAttributes(nic, heap, h[4], NULL), VIP_INVALID_PARAMETER);
	/* (address, handle) must name the region. */
	VT_EXPECT(VipDeregisterMem(nic, heap + 8, h[4]), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipDeregisterMem(nic, heap, h[4] ^ 0x5a5a0000u), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipDeregisterMem(nic, heap, h[2]), VIP_INVALID_PARAMETER);
	for (int i = 0; i < 6; i++) {
		char *addr = i == 0 ? heap + 3 : i == 2 ? heap + 1000 :
			     i == 3 ? stackbuf + 1 : heap;

		VT_OK(VipDeregisterMem(nic, addr, h[i]));
		VT_EXPECT(VipDeregisterMem(nic, addr, h[i]), VIP_INVALID_PARAMETER);
	}
	VT_EXPECT(VipQueryMem(nic, heap, h[4], &q), VIP_INVALID_PARAMETER);
	test_register_errors(nic);
	VT_OK(VipDestroyPtag(nic, p));
	VT_OK(VipCloseNic(nic));
	free(heap);
}

static void on_error(VIP_PVOID ctx, VIP_ERROR_DESCRIPTOR *e)
{
	(void)ctx;
	(void)e;
}

static void test_misc(void)
{
	VIP_NIC_HANDLE nic;
	VIP_AUTODISCOVERY_LIST *adl = calloc(1, sizeof(*adl) + 4096);
	int r;

	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(VipErrorCallback(nic, NULL, on_error));
	VT_OK(VipErrorCallback(nic, (void *)1, on_error));
	/* NULL handler: the default again, or refused. */
	r = VipErrorCallback(nic, NULL, NULL);
	VDT_CHECK(r == VIP_SUCCESS || r == VIP_INVALID_PARAMETER);
	r = VipQuerySystemManagementInfo(nic, 12345, adl);
	VDT_CHECK(r == VIP_INVALID_PARAMETER || r == VIP_ERROR_NOT_SUPPORTED);
	r = VipQuerySystemManagementInfo(nic, VIP_SMI_AUTODISCOVERY, NULL);
	VDT_CHECK(r == VIP_INVALID_PARAMETER || r == VIP_ERROR_NOT_SUPPORTED);
	VT_OK(VipCloseNic(nic));
	free(adl);
}

/* Every NIC-taking function with NULL, garbage, closed and wrong-type
 * handles. */
static void test_bad_nic(void)
{
	VIP_NIC_HANDLE real, closed, bad[4];
	VIP_NIC_ATTRIBUTES na;
	VIP_MEM_HANDLE mh;
	VIP_MEM_ATTRIBUTES ma = { 0 };
	VIP_PROTECTION_HANDLE p;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_HANDLE vi;
	VIP_CQ_HANDLE cq;
	VIP_CONN_HANDLE conn;
	VIP_NET_ADDRESS *a;
	char buf[64], name[64];
	VIP_ULONG nl = sizeof(name);
	const int R = VIP_INVALID_PARAMETER;

	VT_OK(VipOpenNic("/dev/via_lo", &real));
	va = vt_vi_attrs(real, VIP_SERVICE_RELIABLE_DELIVERY);
	VT_OK(VipCreateCQ(real, 16, &cq));
	a = vt_addr(real, "badnic");
	VDT_CHECK(a != NULL);
	VT_OK(VipOpenNic("/dev/via_lo", &closed));
	VT_OK(VipCloseNic(closed));
	bad[0] = NULL;
	bad[1] = (void *)0x1234;
	bad[2] = closed;
	bad[3] = cq;   /* a CQ handle is not a NIC handle */
	for (int i = 0; i < 4; i++) {
		VIP_NIC_HANDLE n = bad[i];

		VT_EXPECT(VipCloseNic(n), R);
		VT_EXPECT(VipQueryNic(n, &na), R);
		VT_EXPECT(VipRegisterMem(n, buf, sizeof(buf), NULL, &mh), R);
		VT_EXPECT(VipDeregisterMem(n, buf, 1), R);
		VT_EXPECT(VipQueryMem(n, buf, 1, &ma), R);
		VT_EXPECT(VipSetMemAttributes(n, buf, 1, &ma), R);
		VT_EXPECT(VipErrorCallback(n, NULL, on_error), R);
		VT_EXPECT(VipQuerySystemManagementInfo(n, 1, buf), R);
		VT_EXPECT(VipCreatePtag(n, &p), R);
		VT_EXPECT(VipDestroyPtag(n, (void *)0x1234), R);
		VT_EXPECT(VipCreateVi(n, &va, NULL, NULL, &vi), R);
		VT_EXPECT(VipCreateCQ(n, 16, &cq), R);
		VT_EXPECT(VipConnectWait(n, a, 10, (VIP_NET_ADDRESS *)buf, &va, &conn), R);
		VT_EXPECT(VipNSInit(n, NULL), R);
		VT_EXPECT(VipNSGetHostByName(n, "localhost", (VIP_NET_ADDRESS *)buf, 0), R);
		VT_EXPECT(VipNSGetHostByAddr(n, a, name, &nl), R);
		VT_EXPECT(VipNSShutdown(n), R);
	}
	free(a);
	VT_OK(VipCloseNic(real));
}

/* Open/close cycles with objects in between leak no fd and no file. */
static void cycle_once(void)
{
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	VIP_CQ_HANDLE cq;
	VIP_VI_ATTRIBUTES va;
	struct vt_mem m;

	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	va = vt_vi_attrs(nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VT_OK(VipCreateCQ(nic, 64, &cq));
	VT_OK(VipCreateVi(nic, &va, cq, cq, &vi));
	VT_OK(vt_mem_get(nic, 8192, NULL, &m));
	vt_mem_put(&m);
	VT_OK(VipDestroyVi(vi));
	VT_OK(VipDestroyCQ(cq));
	VT_OK(VipCloseNic(nic));
}

static void test_no_leaks(void)
{
	int fds, files;

	cycle_once();   /* one-time state (service thread etc.) first */
	fds = vt_count_fds();
	files = vt_count_viaduct_files();
	for (int i = 0; i < 20; i++)
		cycle_once();
	VDT_CHECK_EQ(vt_count_fds(), fds);
	VDT_CHECK_EQ(vt_count_viaduct_files(), files);
}

/* CloseNic with everything still open releases it all; the handles of
 * those objects are dead afterwards. */
static void test_close_with_objects(void)
{
	VIP_NIC_HANDLE nic;
	VIP_VI_HANDLE vi;
	VIP_CQ_HANDLE cq;
	VIP_PROTECTION_HANDLE p;
	VIP_VI_ATTRIBUTES va;
	VIP_VI_STATE st;
	VIP_BOOLEAN se, re;
	struct vt_mem m;
	int fds = vt_count_fds();

	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	va = vt_vi_attrs(nic, VIP_SERVICE_RELIABLE_RECEPTION);
	VT_OK(VipCreatePtag(nic, &p));
	VT_OK(VipCreateCQ(nic, 64, &cq));
	VT_OK(VipCreateVi(nic, &va, cq, NULL, &vi));
	VT_OK(vt_mem_get(nic, 8192, NULL, &m));
	vt_desc_recv(vt_desc_at(&m, 0), m.mh, (char *)m.p + 4096, 1024);
	VT_OK(VipPostRecv(vi, vt_desc_at(&m, 0), m.mh));
	VT_OK(VipCloseNic(nic));
	VT_EXPECT(VipQueryVi(vi, &st, &va, &se, &re), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipDestroyVi(vi), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipDestroyCQ(cq), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipDestroyPtag(nic, p), VIP_INVALID_PARAMETER);
	free(m.p);
	VDT_CHECK_EQ(vt_count_fds(), fds);
}

int main(void)
{
	alarm(60);
	test_open_names();
	test_open_twice();
	test_query();
	test_name_service();
	test_ptags();
	test_register();
	test_misc();
	test_bad_nic();
	test_no_leaks();
	test_close_with_objects();
	puts("ok");
	return 0;
}
