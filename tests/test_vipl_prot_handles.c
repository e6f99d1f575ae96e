/* SPDX-License-Identifier: MIT */
/*
 * Description: memory handles are unguessable and die with their
 * registration ("memory handles unguessable (not sequential), a
 * generation per registration").  One process:
 *  - 1000 registrations give 1000 distinct handles with no common stride
 *    (no delta between consecutive handles repeats more than 1% of the
 *    time) -- so a peer cannot predict its neighbour's handle;
 *  - after deregistering all of them, 1000 new registrations of the same
 *    memory share no handle with the first 1000, and a stale handle is
 *    refused by VipDeregisterMem / VipQueryMem;
 *  - registering the same memory twice at once gives two live handles;
 *    dropping one leaves the other working;
 *  - (address, handle) must match: the right handle with the wrong
 *    address, or a handle of another NIC handle, is refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "viptest.h"

#define N 1000
#define SLICE 64

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static void register_all(VIP_NIC_HANDLE nic, uint8_t *buf, VIP_MEM_HANDLE *h)
{
	for (int i = 0; i < N; i++)
		VT_OK(VipRegisterMem(nic, buf + (size_t)i * SLICE, SLICE, NULL, &h[i]));
}

static void deregister_all(VIP_NIC_HANDLE nic, uint8_t *buf, VIP_MEM_HANDLE *h)
{
	for (int i = 0; i < N; i++)
		VT_OK(VipDeregisterMem(nic, buf + (size_t)i * SLICE, h[i]));
}

static void check_distinct(const VIP_MEM_HANDLE *h)
{
	uint32_t s[N];

	memcpy(s, h, sizeof(s));
	qsort(s, N, sizeof(s[0]), cmp_u32);
	for (int i = 1; i < N; i++) {
		if (s[i] == s[i - 1]) {
			fprintf(stderr, "handle %#x returned twice\n", s[i]);
			exit(VDT_FAIL);
		}
	}
}

/* Most frequent difference between consecutive handles. */
static int max_stride_count(const VIP_MEM_HANDLE *h, uint32_t *stride)
{
	uint32_t d[N - 1];
	int best = 0, run = 1;

	for (int i = 0; i + 1 < N; i++)
		d[i] = h[i + 1] - h[i];
	qsort(d, N - 1, sizeof(d[0]), cmp_u32);
	*stride = d[0];
	for (int i = 1; i <= N - 1; i++) {
		if (i < N - 1 && d[i] == d[i - 1]) {
			run++;
			continue;
		}
		if (run > best) {
			best = run;
			*stride = d[i - 1];
		}
		run = 1;
	}
	return best;
}

static void check_unpredictable(const VIP_MEM_HANDLE *h)
{
	uint32_t stride;
	int n = max_stride_count(h, &stride);

	printf("handles: first %#x %#x %#x %#x; most common stride %#x (%d of %d)\n",
	       h[0], h[1], h[2], h[3], stride, n, N - 1);
	if (n > N / 100) {
		fprintf(stderr, "handles are predictable: stride %#x repeats %d "
			"times in %d registrations\n", stride, n, N);
		exit(VDT_FAIL);
	}
}

/* No handle of the second generation equals one of the first. */
static void check_no_reuse(const VIP_MEM_HANDLE *a, const VIP_MEM_HANDLE *b)
{
	uint32_t s[N];

	memcpy(s, a, sizeof(s));
	qsort(s, N, sizeof(s[0]), cmp_u32);
	for (int i = 0; i < N; i++) {
		if (bsearch(&b[i], s, N, sizeof(s[0]), cmp_u32)) {
			fprintf(stderr, "re-registration reused handle %#x\n", b[i]);
			exit(VDT_FAIL);
		}
	}
}

static void check_stale_refused(VIP_NIC_HANDLE nic, uint8_t *buf,
				const VIP_MEM_HANDLE *old)
{
	VIP_MEM_ATTRIBUTES ma;

	for (int i = 0; i < N; i += 97) {
		VT_EXPECT(VipQueryMem(nic, buf + (size_t)i * SLICE, old[i], &ma),
			  VIP_INVALID_PARAMETER);
		VT_EXPECT(VipDeregisterMem(nic, buf + (size_t)i * SLICE, old[i]),
			  VIP_INVALID_PARAMETER);
	}
}

static void check_generations(VIP_NIC_HANDLE nic, uint8_t *buf)
{
	static VIP_MEM_HANDLE h1[N], h2[N];

	register_all(nic, buf, h1);
	check_distinct(h1);
	check_unpredictable(h1);
	deregister_all(nic, buf, h1);
	register_all(nic, buf, h2);
	check_distinct(h2);
	check_no_reuse(h1, h2);
	check_stale_refused(nic, buf, h1);
	/* One slice, over and over: never the previous handle. */
	for (int i = 0; i < 200; i++) {
		VIP_MEM_HANDLE prev = h2[0];

		VT_OK(VipDeregisterMem(nic, buf, h2[0]));
		VT_OK(VipRegisterMem(nic, buf, SLICE, NULL, &h2[0]));
		if (h2[0] == prev) {
			fprintf(stderr, "re-registration %d returned the same "
				"handle %#x\n", i, prev);
			exit(VDT_FAIL);
		}
	}
	deregister_all(nic, buf, h2);
}

static void check_overlap_and_pairs(VIP_NIC_HANDLE nic, VIP_NIC_HANDLE nic2,
				    uint8_t *buf)
{
	VIP_MEM_HANDLE a, b;
	VIP_MEM_ATTRIBUTES ma;

	VT_OK(VipRegisterMem(nic, buf, 4096, NULL, &a));
	VT_OK(VipRegisterMem(nic, buf, 4096, NULL, &b));
	VDT_CHECK(a != b);
	/* The pair must match: right handle, wrong address. */
	VT_EXPECT(VipDeregisterMem(nic, buf + 64, a), VIP_INVALID_PARAMETER);
	VT_OK(VipQueryMem(nic, buf, a, &ma));
	/* A handle only means something to the NIC handle that made it. */
	VT_EXPECT(VipQueryMem(nic2, buf, a, &ma), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipDeregisterMem(nic2, buf, a), VIP_INVALID_PARAMETER);
	VT_OK(VipQueryMem(nic, buf, a, &ma));
	VT_OK(VipDeregisterMem(nic, buf, a));
	VT_EXPECT(VipQueryMem(nic, buf, a, &ma), VIP_INVALID_PARAMETER);
	VT_OK(VipQueryMem(nic, buf, b, &ma));
	VT_OK(VipDeregisterMem(nic, buf, b));
	VT_EXPECT(VipDeregisterMem(nic, buf, b), VIP_INVALID_PARAMETER);
}

int main(void)
{
	VIP_NIC_HANDLE nic, nic2;
	uint8_t *buf;

	setvbuf(stdout, NULL, _IOLBF, 0);
	alarm(60);
	VDT_CHECK(posix_memalign((void **)&buf, 4096, (size_t)N * SLICE) == 0);
	memset(buf, 0, (size_t)N * SLICE);
	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(VipOpenNic("/dev/via_lo", &nic2));
	check_generations(nic, buf);
	printf("ok: %d handles distinct, no stride, no reuse, stale refused\n", N);
	check_overlap_and_pairs(nic, nic2, buf);
	printf("ok: overlapping registrations, (address, handle) pairs, other NIC\n");
	VT_OK(VipCloseNic(nic2));
	VT_OK(VipCloseNic(nic));
	free(buf);
	printf("PASS\n");
	return 0;
}
