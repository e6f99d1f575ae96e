/* SPDX-License-Identifier: MIT */
/*
 * Registration cache for the buffers of rendezvous and get transfers.
 *
 * Registering a large buffer (mlock + TPT entry) costs more than moving
 * it, so registrations are kept and reused (Tezuka's pin-down cache, as
 * MPICH-PM did).  Why reuse stays correct after the application frees a
 * buffer and maps new memory at the same addresses: the shm provider
 * moves bytes by virtual address (process_vm_readv/writev), so a
 * registration names an address range, and the bytes read or written are
 * whatever is mapped there at the time of the transfer -- the new buffer.
 * (A provider that DMAs to physical pages must instead be told about
 * unmaps; lmm's cache does that through userfaultfd.)
 *
 * Bounded by entries and bytes (VIADUCT_MPI_REGCACHE_BYTES, default
 * 64 MiB or a quarter of RLIMIT_MEMLOCK, unless CAP_IPC_LOCK lifts it); unused entries are evicted least
 * recently used first, and all of them when a registration fails for
 * lack of lockable memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "engine.h"

/* Entries: enough for a window of 64 sends and 64 receives of distinct
 * buffers and the collectives' own (64 thrashed: every get of a 64 KiB
 * window mlocked and munlocked its buffer). */
#define REGC_N 512
/* How far a lookup walks back from the last entry that starts at or
 * below the address: entries rarely nest, and a miss only registers
 * anew. */
#define REGC_WALK 8

struct regc {
	enum vd_transport t;            /* the NIC it is registered with */
	uintptr_t lo, hi;               /* [lo, hi) */
	VIP_MEM_HANDLE mh;
	int users;
	uint64_t used;                  /* LRU clock */
};

/* Sorted by (t, lo): a lookup is a binary search. */
static struct regc cache[REGC_N];
static int ncache;
static uint64_t tick;
static size_t bytes, budget;
static unsigned long hits, misses, drops;       /* VIADUCT_DEBUG=1 report */

/* CAP_IPC_LOCK (bit 14 of CapEff): mlock ignores RLIMIT_MEMLOCK. */
static bool may_lock_unlimited(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	unsigned long long caps = 0;
	char line[128];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &caps) == 1;
	fclose(f);
	return found && (caps >> 14 & 1);
}

static size_t default_budget(void)
{
	struct rlimit rl;
	uint64_t b = 64u << 20;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / 4 < b && !may_lock_unlimited())
		b = rl.rlim_cur / 4;
	(void)viaduct_param_uint("VIADUCT_MPI_REGCACHE_BYTES", b, &b);  /* checked at init */
	return (size_t)b;
}

static bool before(enum vd_transport t1, uintptr_t lo1, enum vd_transport t2, uintptr_t lo2)
{
	return t1 != t2 ? t1 < t2 : lo1 < lo2;
}

/* The number of entries that sort at or before (t, lo). */
static int upper_bound(enum vd_transport t, uintptr_t lo)
{
	int a = 0, b = ncache;

	while (a < b) {
		int m = (a + b) / 2;
		if (before(t, lo, cache[m].t, cache[m].lo))
			b = m;
		else
			a = m + 1;
	}
	return a;
}

static void drop(int i)
{
	drops++;
	vd_wire_deregister(cache[i].t, (void *)cache[i].lo, cache[i].mh);
	bytes -= cache[i].hi - cache[i].lo;
	memmove(&cache[i], &cache[i + 1], (size_t)(ncache - i - 1) * sizeof(cache[0]));
	ncache--;
}

/* Evict unused entries, oldest first, until `need` more bytes fit (all
 * unused ones with need = SIZE_MAX). */
static void evict(size_t need)
{
	for (;;) {
		int victim = -1;
		if (need != SIZE_MAX && bytes + need <= budget && ncache < REGC_N)
			return;
		for (int i = 0; i < ncache; i++)
			if (!cache[i].users && (victim < 0 || cache[i].used < cache[victim].used))
				victim = i;
		if (victim < 0)
			return;
		drop(victim);
	}
}

/* An entry of t holding [lo, hi), and with handle mh unless mh is 0. */
static int lookup(enum vd_transport t, uintptr_t lo, uintptr_t hi, VIP_MEM_HANDLE mh)
{
	int end = upper_bound(t, lo);

	for (int i = end - 1; i >= 0 && i >= end - REGC_WALK && cache[i].t == t; i--)
		if (hi <= cache[i].hi && (!mh || cache[i].mh == mh))
			return i;
	return -1;
}

/* Insert e in order; its index. */
static int insert(struct regc e)
{
	int at = upper_bound(e.t, e.lo);

	memmove(&cache[at + 1], &cache[at], (size_t)(ncache - at) * sizeof(cache[0]));
	cache[at] = e;
	ncache++;
	bytes += e.hi - e.lo;
	return at;
}

int vd_regcache_get(int peer, void *addr, size_t len, VIP_MEM_HANDLE *mh)
{
	enum vd_transport t = vd_place_via(peer);
	uintptr_t lo = (uintptr_t)addr, hi = lo + (len ? len : 1);
	int i = lookup(t, lo, hi, 0), err;

	if (!budget)
		budget = default_budget();
	if (i >= 0) {
		hits++;
	} else {
		evict(hi - lo);
		if (ncache == REGC_N)
			return vd_wire_register(t, addr, len, true, true, mh);   /* all busy */
		err = vd_wire_register(t, addr, len, true, true, mh);
		if (err == -ENOMEM) {
			evict(SIZE_MAX);
			err = vd_wire_register(t, addr, len, true, true, mh);
		}
		if (err)
			return err;
		misses++;
		i = insert((struct regc){ t, lo, hi, *mh, 0, 0 });
	}
	cache[i].users++;
	cache[i].used = ++tick;
	*mh = cache[i].mh;
	return 0;
}

void vd_regcache_put(int peer, void *addr, VIP_MEM_HANDLE mh)
{
	enum vd_transport t = vd_place_via(peer);
	uintptr_t lo = (uintptr_t)addr;
	int i = lookup(t, lo, lo + 1, mh);

	/* Entries inserted since the get may have pushed it past the walk. */
	for (int k = 0; i < 0 && k < ncache; k++)
		if (cache[k].t == t && cache[k].mh == mh)
			i = k;
	if (i < 0) {
		vd_wire_deregister(t, addr, mh);        /* registered outside the cache */
		return;
	}
	cache[i].users--;
	if (bytes > budget && !cache[i].users)
		drop(i);
}

/* VIADUCT_DEBUG=1: how the cache fared (a registration per message
 * means a window of buffers does not fit). */
static void report(void)
{
	uint64_t dbg = 0;

	if (viaduct_param_uint("VIADUCT_DEBUG", 0, &dbg) || !dbg || !(hits + misses))
		return;
	fprintf(stderr, "viaduct MPI: rank %d: registration cache: %lu hits, %lu registrations, "
		"%lu dropped\n", vd_mpi.rank, hits, misses, drops);
}

void vd_regcache_flush(void)
{
	report();
	evict(SIZE_MAX);
	ncache = 0;
	bytes = 0;
}
