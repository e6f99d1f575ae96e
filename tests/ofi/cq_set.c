/* SPDX-License-Identifier: MIT */
/*
 * Description: viaduct_cq_wait_set over two providers at once -- the way
 * an MPI rank waits that reaches some peers through shared memory and
 * others through the fabric.  The child connects one VI over shm and one
 * over ofi (tcp), each with its own NIC and CQ, and sleeps on the set of
 * both CQs; the parent sends ring messages on the two VIs in turn, each
 * after a pause that puts the child to sleep, stamped with the send time.
 *  - Each message wakes the sleeper promptly: the median wake-up is well
 *    under the set's 50 ms safety slice (a wake-up lost on either
 *    provider shows as that slice), for both providers.
 *  - A set with a bad handle, no CQ, or more than VIADUCT_CQ_SET_MAX CQs
 *    is VIP_INVALID_PARAMETER; an idle set times out.
 * Every other pair of messages is waited for with viaduct_cq_sleep_set
 * (no spin).
 * An idle wait costs next to no CPU time (a sleeper on a fabric fd that
 * stays readable would spin).  With the argument "net", all of it over
 * libfabric's net provider instead of tcp under rxm.
 * With the argument "spin", both sides spin 400 ms before they sleep
 * (VIADUCT_SPIN_US): the waits then end while spinning, which over ofi
 * must drive the fabric (its progress is manual on tcp), or the message
 * is seen only when the spin gives up.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "viptest.h"

#define ROUNDS 7
/* Far below the 50 ms slice a lost wake-up waits for, far above a
 * wake-up on a loaded machine under the sanitizers. */
#define WAKE_LIMIT_NS 15000000ull
/* Spinning: the message comes 300 us into the spin, while the library's
 * service thread still keeps away from a thread that polled (2 ms); a
 * spin that does not drive the fabric sees it 1.7 ms later at best. */
#define SPIN_PAUSE_US 300
#define SPIN_LIMIT_NS 1000000ull

static bool spinning;
static const char *ofi_device = "ofi:tcp";     /* "net": ofi:net */

struct link {
	VIP_NIC_HANDLE nic;
	VIP_CQ_HANDLE cq;
	VIP_VI_HANDLE vi;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void link_open(struct link *l, const char *device, const char *tag)
{
	VIP_VI_ATTRIBUTES a;
	char disc[32];

	memset(l, 0, sizeof(*l));
	VT_OK(VipOpenNic(device, &l->nic));
	VT_OK(VipCreateCQ(l->nic, 64, &l->cq));
	a = vt_vi_attrs(l->nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VT_OK(VipCreateVi(l->nic, &a, NULL, l->cq, &l->vi));
	vt_disc(disc, tag);
	if (vt_is_child)
		VT_OK(vt_client_connect(l->nic, l->vi, disc, 60000));
	else
		VT_OK(vt_server_accept(l->nic, l->vi, disc, 60000));
}

static void link_close(struct link *l)
{
	VipDisconnect(l->vi);
	VipDestroyVi(l->vi);
	VipDestroyCQ(l->cq);
	VipCloseNic(l->nic);
}

/* ---- parent: sends -------------------------------------------------------------- */

static int sender(void *arg)
{
	struct link l[2];
	(void)arg;

	link_open(&l[0], "shm", "set-shm");
	link_open(&l[1], ofi_device, "set-ofi");
	for (int i = 0; i < 2 * ROUNDS; i++) {
		uint64_t t;
		VDT_CHECK(vt_sync(vt_fd) == 0);         /* the child goes to sleep */
		usleep(spinning ? SPIN_PAUSE_US : 10000);
		t = now_ns();
		VT_OK(viaduct_ring_send(l[i % 2].vi, &t, sizeof(t), NULL, 0));
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	link_close(&l[1]);
	link_close(&l[0]);
	return 0;
}

/* ---- child: sleeps on the set --------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* One message, on whichever VI it comes: its wake-up delay.  As an MPI
 * rank does, look at both VIs first (which drives the fabric), then wait;
 * no_spin: with viaduct_cq_sleep_set. */
static uint64_t wake_once(struct link *l, VIP_CQ_HANDLE *set, int *which, bool no_spin)
{
	const void *m;
	VIP_UINT32 len;
	uint64_t sent, woke;

	for (bool first = true;; first = false) {
		if (!first && no_spin)
			VT_OK(viaduct_cq_sleep_set(set, 2, 10000));
		else if (!first)
			VT_OK(viaduct_cq_wait_set(set, 2, 10000));
		woke = now_ns();
		for (int k = 0; k < 2; k++) {
			if (viaduct_ring_peek(l[k].vi, &m, &len) != VIP_SUCCESS)
				continue;
			VDT_CHECK(len == sizeof(sent));
			memcpy(&sent, m, sizeof(sent));
			VT_OK(viaduct_ring_release(l[k].vi));
			*which = k;
			return woke > sent ? woke - sent : 0;
		}
	}
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void check_errors(VIP_CQ_HANDLE *set)
{
	VIP_CQ_HANDLE bad[2] = { set[0], (VIP_CQ_HANDLE)(uintptr_t)0x7777 };
	VIP_CQ_HANDLE many[VIADUCT_CQ_SET_MAX + 1];
	uint64_t t0 = now_ns();

	for (int i = 0; i <= VIADUCT_CQ_SET_MAX; i++)
		many[i] = set[i % 2];
	VT_EXPECT(viaduct_cq_wait_set(bad, 2, 10), VIP_INVALID_PARAMETER);
	VT_EXPECT(viaduct_cq_wait_set(set, 0, 10), VIP_INVALID_PARAMETER);
	VT_EXPECT(viaduct_cq_wait_set(NULL, 2, 10), VIP_INVALID_PARAMETER);
	VT_EXPECT(viaduct_cq_wait_set(many, VIADUCT_CQ_SET_MAX + 1, 10),
		  VIP_INVALID_PARAMETER);
	VT_EXPECT(viaduct_cq_sleep_set(bad, 2, 10), VIP_INVALID_PARAMETER);
	VT_EXPECT(viaduct_cq_sleep_set(many, VIADUCT_CQ_SET_MAX + 1, 10),
		  VIP_INVALID_PARAMETER);
	t0 = now_ns();
	double cpu0 = cpu_seconds();
	VT_EXPECT(viaduct_cq_wait_set(set, 2, 200), VIP_TIMEOUT);
	VDT_CHECK(now_ns() - t0 >= 200000000ull);
	/* 20 us of spin, then sleep: far below the 200 ms of a spinner. */
	printf("idle wait of 200 ms: %.1f ms of CPU\n", (cpu_seconds() - cpu0) * 1e3);
	VDT_CHECK(spinning || cpu_seconds() - cpu0 < 0.05);
	t0 = now_ns();
	VT_EXPECT(viaduct_cq_sleep_set(set, 2, 30), VIP_TIMEOUT);
	VDT_CHECK(now_ns() - t0 >= 30000000ull);
}

static int sleeper(void *arg)
{
	struct link l[2];
	VIP_CQ_HANDLE set[2];
	uint64_t delay[2][ROUNDS];
	int got[2] = { 0, 0 };
	(void)arg;

	link_open(&l[0], "shm", "set-shm");
	link_open(&l[1], ofi_device, "set-ofi");
	set[0] = l[0].cq;
	set[1] = l[1].cq;
	check_errors(set);
	for (int i = 0; i < 2 * ROUNDS; i++) {
		int k;
		VDT_CHECK(vt_sync(vt_fd) == 0);
		uint64_t d = wake_once(l, set, &k, !spinning && (i & 2));
		VDT_CHECK(k == i % 2 && got[k] < ROUNDS);
		delay[k][got[k]++] = d;
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);
	for (int k = 0; k < 2; k++) {
		qsort(delay[k], ROUNDS, sizeof(uint64_t), cmp_u64);
		printf("%s: median wake-up %.1f us (max %.1f us)\n", k ? "ofi" : "shm",
		       (double)delay[k][ROUNDS / 2] / 1e3, (double)delay[k][ROUNDS - 1] / 1e3);
		VDT_CHECK(delay[k][ROUNDS / 2] < (spinning ? SPIN_LIMIT_NS : WAKE_LIMIT_NS));
	}
	link_close(&l[1]);
	link_close(&l[0]);
	return 0;
}

/* In a child of its own: the two sides must start without library state. */
static bool ofi_opens(void)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		VIP_NIC_HANDLE nic;
		_exit(VipOpenNic(ofi_device, &nic) == VIP_SUCCESS ? 0 : 1);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
	spinning = argc > 1 && strcmp(argv[1], "spin") == 0;
	if (argc > 1 && strcmp(argv[1], "net") == 0)
		ofi_device = "ofi:net";
	if (spinning)
		setenv("VIADUCT_SPIN_US", "400000", 1);
	if (!ofi_opens()) {
		printf("SKIP: the ofi provider does not open here\n");
		return VDT_SKIP;
	}
	return vt_run_main(sender, sleeper, 1 << 20, 120);
}
