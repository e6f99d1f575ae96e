/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the library's state, version and environment queries,
 * clocks, and MPI_Alloc_mem.
 *
 * MPI_Alloc_mem returns whole pages from mmap, registered once with
 * VipRegisterMem on the library's NIC (RDMA read and write enabled, the
 * NIC's default ptag), so the engine can hand them to rendezvous and get
 * transfers without a registration per message (vd_mpi_mem_lookup).  A
 * sorted table (address -> length, memory handle) lets MPI_Free_mem
 * deregister and unmap.  If the memory cannot be registered (usually
 * RLIMIT_MEMLOCK) the call fails with MPI_ERR_NO_MEM rather than hand out
 * memory that silently loses the zero-copy path.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "mpi_internal.h"

struct vd_mpi_world vd_mpi;

/* Until mpi_internal.h declares them (see the report). */

/* ---- versions, names, clocks: callable at any time --------------------- */

#pragma weak MPI_Get_version = PMPI_Get_version
int PMPI_Get_version(int *version, int *subversion)
{
	VD_API_GUARD();
	if (!version || !subversion)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Get_version");
	*version = MPI_VERSION;
	*subversion = MPI_SUBVERSION;
	return MPI_SUCCESS;
}

/* Copy s into buf (cap bytes with the NUL), its length into *len. */
static void copy_out(char *buf, size_t cap, const char *s, int *len)
{
	size_t n = strlen(s);

	if (n > cap - 1)
		n = cap - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	*len = (int)n;
}

#pragma weak MPI_Get_library_version = PMPI_Get_library_version
int PMPI_Get_library_version(char *version, int *resultlen)
{
	VD_API_GUARD();
	if (!version || !resultlen)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Get_library_version");
#ifdef VIADUCT_HAVE_OFI
#define VD_TRANSPORTS "shared memory within a host, libfabric across hosts"
#else
#define VD_TRANSPORTS "shared memory; built without libfabric: one host only"
#endif
	copy_out(version, MPI_MAX_LIBRARY_VERSION_STRING,
		 "viaduct MPI " VIADUCT_VERSION_STRING " (VIPL: " VD_TRANSPORTS ")", resultlen);
	return MPI_SUCCESS;
}

#pragma weak MPI_Get_processor_name = PMPI_Get_processor_name
int PMPI_Get_processor_name(char *name, int *resultlen)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Get_processor_name";
	struct utsname u;

	if (!name || !resultlen)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	if (uname(&u))
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_OTHER, fn);
	copy_out(name, MPI_MAX_PROCESSOR_NAME, u.nodename, resultlen);
	return MPI_SUCCESS;
}

/* Seconds of CLOCK_MONOTONIC, not relative to MPI_Init: every rank on the
 * node reads the same clock, so times taken on different ranks compare
 * directly (as with MPI_WTIME_IS_GLOBAL), and it works before MPI_Init. */
#pragma weak MPI_Wtime = PMPI_Wtime
double PMPI_Wtime(void)
{
	VD_API_GUARD();
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#pragma weak MPI_Wtick = PMPI_Wtick
double PMPI_Wtick(void)
{
	VD_API_GUARD();
	struct timespec ts;

	if (clock_getres(CLOCK_MONOTONIC, &ts) || (ts.tv_sec == 0 && ts.tv_nsec == 0))
		return 1e-9;
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- MPI_Alloc_mem regions ------------------------------------------------ */

struct mem_region {
	uintptr_t addr;
	size_t len;                     /* mapped and registered, whole pages */
	VIP_MEM_HANDLE mh;
};

static struct mem_region *regions;     /* sorted by addr, disjoint */
static size_t nregions, cap_regions;

/* Index of the first region with addr > a. */
static size_t region_upper(uintptr_t a)
{
	size_t lo = 0, hi = nregions;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (regions[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int vd_mpi_mem_lookup(const void *addr, size_t len, VIP_MEM_HANDLE *mh)
{
	uintptr_t a = (uintptr_t)addr;
	size_t i = region_upper(a);
	const struct mem_region *r;

	if (i == 0)
		return -ENOENT;
	r = &regions[i - 1];
	/* a - r->addr < r->len, and len fits in what is left: no overflow. */
	if (a - r->addr >= r->len || len > r->len - (a - r->addr))
		return -ENOENT;
	if (mh)
		*mh = r->mh;
	return 0;
}

static int region_insert(uintptr_t addr, size_t len, VIP_MEM_HANDLE mh)
{
	size_t i = region_upper(addr);

	if (nregions == cap_regions) {
		size_t cap = cap_regions ? 2 * cap_regions : 8;
		struct mem_region *n = realloc(regions, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		regions = n;
		cap_regions = cap;
	}
	memmove(&regions[i + 1], &regions[i], (nregions - i) * sizeof(*regions));
	regions[i] = (struct mem_region){ addr, len, mh };
	nregions++;
	return 0;
}

/* Index of the region that starts exactly at addr, or -1. */
static long region_find(uintptr_t addr)
{
	size_t i = region_upper(addr);

	if (i == 0 || regions[i - 1].addr != addr)
		return -1;
	return (long)(i - 1);
}

/* Why registering len bytes failed, for the fatal message. */
static void register_detail(char *buf, size_t cap, size_t len, VIP_RETURN r)
{
	struct rlimit rl;
	char lim[64] = "unlimited";

	if (!getrlimit(RLIMIT_MEMLOCK, &rl) && rl.rlim_cur != RLIM_INFINITY)
		snprintf(lim, sizeof(lim), "%llu bytes", (unsigned long long)rl.rlim_cur);
	snprintf(buf, cap,
		 "cannot register %zu bytes with VIPL (VIP_RETURN %d); locked-memory "
		 "limit RLIMIT_MEMLOCK is %s (raise it with `ulimit -l`)",
		 len, (int)r, lim);
}

/* mmap + VipRegisterMem of len bytes (whole pages).  MPI code; on failure
 * detail says why. */
static int map_and_register(size_t len, void **out, VIP_MEM_HANDLE *mh, char *detail,
			    size_t cap)
{
	VIP_MEM_ATTRIBUTES attrs = { .Ptag = NULL, .EnableRdmaWrite = VIP_TRUE,
				     .EnableRdmaRead = VIP_TRUE };
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	VIP_RETURN r;

	if (p == MAP_FAILED) {
		snprintf(detail, cap, "mmap of %zu bytes: %s", len, strerror(errno));
		return MPI_ERR_NO_MEM;
	}
	r = VipRegisterMem(vd_mpi_nic(), p, len, &attrs, mh);
	if (r != VIP_SUCCESS) {
		munmap(p, len);
		register_detail(detail, cap, len, r);
		return MPI_ERR_NO_MEM;
	}
	*out = p;
	return MPI_SUCCESS;
}

/* MPI_INFO_NULL is the only info object this library has. */
#pragma weak MPI_Alloc_mem = PMPI_Alloc_mem
int PMPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Alloc_mem";
	size_t page = (size_t)sysconf(_SC_PAGESIZE), len;
	char detail[256] = "";
	VIP_MEM_HANDLE mh;
	void *p;
	int rc;

	VD_MPI_CHECK_RUNNING(fn);
	if (size < 0 || !baseptr || info != MPI_INFO_NULL)
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	/* Size 0 still gets a page: the result must be a valid, freeable
	 * base. */
	if ((size_t)size > SIZE_MAX - page)
		return vd_mpi_raise_msg(MPI_COMM_WORLD, MPI_ERR_NO_MEM, fn, "size too large");
	len = ((size_t)size + page - 1) / page * page;
	if (len == 0)
		len = page;
	rc = map_and_register(len, &p, &mh, detail, sizeof(detail));
	if (rc != MPI_SUCCESS)
		return vd_mpi_raise_msg(MPI_COMM_WORLD, rc, fn, detail);
	if (region_insert((uintptr_t)p, len, mh)) {
		VipDeregisterMem(vd_mpi_nic(), p, mh);
		munmap(p, len);
		return vd_mpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, fn);
	}
	memcpy(baseptr, &p, sizeof(p));         /* baseptr is really a void ** */
	return MPI_SUCCESS;
}

/* MPI_Free_mem(NULL) does nothing, as in other implementations. */
#pragma weak MPI_Free_mem = PMPI_Free_mem
int PMPI_Free_mem(void *base)
{
	VD_API_GUARD();
	static const char fn[] = "MPI_Free_mem";
	struct mem_region r;
	VIP_RETURN vr;
	long i;

	VD_MPI_CHECK_RUNNING(fn);
	if (!base)
		return MPI_SUCCESS;
	i = region_find((uintptr_t)base);
	if (i < 0)
		return vd_mpi_raise_msg(MPI_COMM_WORLD, MPI_ERR_ARG, fn,
					"address was not returned by MPI_Alloc_mem");
	r = regions[i];
	memmove(&regions[i], &regions[i + 1], (nregions - (size_t)i - 1) * sizeof(*regions));
	nregions--;
	vr = VipDeregisterMem(vd_mpi_nic(), base, r.mh);
	munmap(base, r.len);
	if (vr != VIP_SUCCESS)
		return vd_mpi_raise_msg(MPI_COMM_WORLD, MPI_ERR_INTERN, fn,
					"VipDeregisterMem failed");
	return MPI_SUCCESS;
}

/* At MPI_Finalize, before the NIC closes: drop every registration.  The
 * pages stay mapped, since the program may still hold pointers to them. */
void vd_mpi_mem_finalize(void)
{
	for (size_t i = 0; i < nregions; i++)
		VipDeregisterMem(vd_mpi_nic(), (void *)regions[i].addr, regions[i].mh);
	free(regions);
	regions = NULL;
	nregions = cap_regions = 0;
}
