/* SPDX-License-Identifier: MIT */
/*
 * VIPL API, one process: completion queues (create, resize, destroy, empty
 * Done/Wait, destroy while bound, notify cancelled by destroy, destroy
 * under a sleeping VipCQWait, invalid handles) and the Giganet CQ extras.
 */
#include "viptest.h"

#include <pthread.h>
#include <time.h>

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

static VIP_NIC_HANDLE nic;
static VIP_NIC_ATTRIBUTES na;
static atomic_int cq_cb_runs;

static void cq_cb(VIP_PVOID c, VIP_NIC_HANDLE n, VIP_VI_HANDLE v, VIP_BOOLEAN r)
{
	(void)c, (void)n, (void)v, (void)r;
	atomic_fetch_add(&cq_cb_runs, 1);
}

static void test_create_resize(void)
{
	VIP_CQ_HANDLE cq, cq2;
	int r;

	VT_EXPECT(VipCreateCQ(nic, 16, NULL), VIP_INVALID_PARAMETER);
	VT_EXPECT(VipCreateCQ(nic, 0, &cq), VIP_INVALID_PARAMETER);
	r = VipCreateCQ(nic, na.MaxCQEntries + 1, &cq);
	VDT_CHECK(r == VIP_INVALID_PARAMETER || r == VIP_ERROR_RESOURCE);
	VT_OK(VipCreateCQ(nic, 1, &cq));
	VT_OK(VipCreateCQ(nic, 1024, &cq2));
	VDT_CHECK(cq != cq2);
	VT_OK(VipResizeCQ(cq, 4096));
	VT_OK(VipResizeCQ(cq, 2));
	VT_EXPECT(VipResizeCQ(cq, 0), VIP_INVALID_PARAMETER);
	r = VipResizeCQ(cq, na.MaxCQEntries + 1);
	VDT_CHECK(r == VIP_INVALID_PARAMETER || r == VIP_ERROR_RESOURCE);
	VT_OK(VipDestroyCQ(cq));
	VT_OK(VipDestroyCQ(cq2));
	VT_EXPECT(VipDestroyCQ(cq), VIP_INVALID_PARAMETER);
}

static void test_empty(void)
{
	VIP_CQ_HANDLE cq;
	VIP_VI_HANDLE vi = (void *)0x77;
	VIP_BOOLEAN rq = 7;
	uint64_t t0;
	int r;

	VT_OK(VipCreateCQ(nic, 64, &cq));
	VT_EXPECT(VipCQDone(cq, &vi, &rq), VIP_NOT_DONE);
	VT_EXPECT(VipCQWait(cq, 0, &vi, &rq), VIP_TIMEOUT);
	t0 = vt_now_ms();
	VT_EXPECT(VipCQWait(cq, 100, &vi, &rq), VIP_TIMEOUT);
	VDT_CHECK(vt_now_ms() - t0 >= 90 && vt_now_ms() - t0 < 2000);
	/* NULL outputs: refused, or harmless while nothing is there. */
	r = VipCQDone(cq, NULL, &rq);
	VDT_CHECK(r == VIP_INVALID_PARAMETER || r == VIP_NOT_DONE);
	r = VipCQDone(cq, &vi, NULL);
	VDT_CHECK(r == VIP_INVALID_PARAMETER || r == VIP_NOT_DONE);
	r = VipCQWait(cq, 0, NULL, &rq);
	VDT_CHECK(r == VIP_INVALID_PARAMETER || r == VIP_TIMEOUT);
	VT_EXPECT(VipCQNotify(cq, NULL, NULL), VIP_INVALID_PARAMETER);
	VT_OK(VipDestroyCQ(cq));
}

/* A CQ with a VI bound to it cannot be destroyed; once the VI is gone it
 * can.  A CQ may serve both queues of many VIs. */
static void test_bound(void)
{
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VIP_CQ_HANDLE cq, cq2;
	VIP_VI_HANDLE vi[8];

	VT_OK(VipCreateCQ(nic, 64, &cq));
	VT_OK(VipCreateCQ(nic, 64, &cq2));
	for (int i = 0; i < 8; i++)
		VT_OK(VipCreateVi(nic, &va, i & 1 ? cq : NULL, i & 2 ? cq2 : cq, &vi[i]));
	for (int i = 0; i < 8; i++) {
		VT_EXPECT(VipDestroyCQ(cq), VIP_INVALID_STATE);
		VT_OK(VipDestroyVi(vi[i]));
	}
	VT_OK(VipDestroyCQ(cq));
	VT_OK(VipDestroyCQ(cq2));
}

/* A pending CQ notify is cancelled by DestroyCQ: the handler never runs. */
static void test_notify_cancel(void)
{
	VIP_CQ_HANDLE cq;

	VT_OK(VipCreateCQ(nic, 64, &cq));
	VT_OK(VipCQNotify(cq, NULL, cq_cb));
	VT_OK(VipCQNotify(cq, NULL, cq_cb));
	VT_OK(VipDestroyCQ(cq));
	usleep(50000);
	VDT_CHECK_EQ(atomic_load(&cq_cb_runs), 0);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

struct cq_sleeper {
	VIP_CQ_HANDLE cq;
	VIP_RETURN r;
};

static void *cq_sleep_thread(void *arg)
{
	struct cq_sleeper *w = arg;
	VIP_VI_HANDLE vi;
	VIP_BOOLEAN rq;

	w->r = VipCQWait(w->cq, 5000, &vi, &rq);
	return NULL;
}

/* VipDestroyCQ while another thread sleeps in VipCQWait on it: the
 * sleeper sees the handle die (never the freed queue) and returns at
 * once, not at its timeout.  Under the sanitizers this is the check that
 * the provider's queue is not read after it is freed. */
static void test_destroy_under_wait(void)
{
	for (int i = 0; i < 10; i++) {
		struct cq_sleeper w = { NULL, VIP_SUCCESS };
		pthread_t t;

		VT_OK(VipCreateCQ(nic, 16, &w.cq));
		VDT_CHECK_EQ(pthread_create(&t, NULL, cq_sleep_thread, &w), 0);
		usleep(20000);          /* let it fall asleep */
		double t0 = now_s();
		VT_OK(VipDestroyCQ(w.cq));
		pthread_join(t, NULL);
		VT_EXPECT(w.r, VIP_INVALID_PARAMETER);
		VDT_CHECK(now_s() - t0 < 2.0);     /* not its 5 s timeout */
	}
}

static void test_giganet(void)
{
	VIP_CQ_HANDLE cq;
	VIP_EVENT_HANDLE ev = NULL;

	VT_OK(VipCreateCQ(nic, 64, &cq));
	VT_EXPECT(VipAddTagCQ(cq, &ev, 1, 0), VIP_ERROR_NOT_SUPPORTED);
	VT_EXPECT(VipRemoveTagCQ(cq, ev, 1), VIP_ERROR_NOT_SUPPORTED);
	VT_OK(VipDestroyCQ(cq));
}

static void bad_cq_calls(VIP_CQ_HANDLE cq)
{
	const int R = VIP_INVALID_PARAMETER;
	VIP_VI_HANDLE vi;
	VIP_BOOLEAN rq;
	VIP_EVENT_HANDLE ev = NULL;
	int r;

	VT_EXPECT(VipDestroyCQ(cq), R);
	VT_EXPECT(VipResizeCQ(cq, 32), R);
	VT_EXPECT(VipCQDone(cq, &vi, &rq), R);
	VT_EXPECT(VipCQWait(cq, 0, &vi, &rq), R);
	VT_EXPECT(VipCQWait(cq, 10, &vi, &rq), R);
	VT_EXPECT(VipCQNotify(cq, NULL, cq_cb), R);
	r = VipAddTagCQ(cq, &ev, 1, 0);
	VDT_CHECK(r == R || r == VIP_ERROR_NOT_SUPPORTED);
}

static void test_bad_handles(void)
{
	VIP_VI_ATTRIBUTES va = vt_vi_attrs(nic, VIP_SERVICE_RELIABLE_DELIVERY);
	VIP_CQ_HANDLE dead, live;
	VIP_VI_HANDLE vi;
	VIP_VI_HANDLE v;
	VIP_BOOLEAN rq;

	VT_OK(VipCreateCQ(nic, 16, &dead));
	VT_OK(VipDestroyCQ(dead));
	VT_OK(VipCreateCQ(nic, 16, &live));
	VT_OK(VipCreateVi(nic, &va, NULL, NULL, &vi));
	bad_cq_calls(NULL);
	bad_cq_calls((void *)0x1234);
	bad_cq_calls(dead);
	bad_cq_calls(nic);
	bad_cq_calls(vi);
	VT_EXPECT(VipCQDone(live, &v, &rq), VIP_NOT_DONE);
	VT_OK(VipDestroyVi(vi));
	VT_OK(VipDestroyCQ(live));
	VDT_CHECK_EQ(atomic_load(&cq_cb_runs), 0);
}

int main(void)
{
	alarm(60);
	VT_OK(VipOpenNic("/dev/via_lo", &nic));
	VT_OK(VipQueryNic(nic, &na));
	test_create_resize();
	test_empty();
	test_bound();
	test_notify_cancel();
	test_destroy_under_wait();
	test_giganet();
	test_bad_handles();
	VT_OK(VipCloseNic(nic));
	puts("ok");
	return 0;
}
