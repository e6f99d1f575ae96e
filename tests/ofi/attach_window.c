/* SPDX-License-Identifier: MIT */
/*
 * White-box: ring messages that reach an accepting VI after the provider
 * has attached its connection but before the core marks the VI Connected
 * must wait, not vanish.  The window is short; a preempted accepter
 * (2 cores, several ranks with their threads) stays in it long enough
 * for the requester's first messages to land there, and they were
 * dropped without a word -- an MPI job of 3-4 ranks over ofi then hung
 * now and then, waiting for a message that never came.  Linked with
 * --wrap=vd_vi_connected: the accepter pauses in that window.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "vdtest.h"
#include "viptest.h"
#include <viaduct/viaduct.h>

#define NMSG 3
#define WINDOW_MS 300
#define GAP_MS 50

struct vd_vi;
void __real_vd_vi_connected(struct vd_vi *vi);
void __wrap_vd_vi_connected(struct vd_vi *vi);

static bool in_accepter;

/* The accepter's VI stays attached, not Connected, for WINDOW_MS. */
void __wrap_vd_vi_connected(struct vd_vi *vi)
{
	if (in_accepter)
		usleep(WINDOW_MS * 1000);
	__real_vd_vi_connected(vi);
}

static char disc[32];

/* The child: connect, then NMSG ring messages spread over the window. */
static int requester(void *arg)
{
	struct vt_side s;
	uint64_t end;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	vt_side_connect(&s, disc);
	for (int i = 0; i < NMSG; i++) {
		char m[16];
		VIP_RETURN rc;

		snprintf(m, sizeof(m), "msg%d", i);
		end = vt_now_ms() + 5000;
		while ((rc = viaduct_ring_send(s.vi, m, (VIP_UINT32)strlen(m) + 1, NULL, 0)) ==
			       VIP_NOT_DONE && vt_now_ms() < end)
			;
		VDT_CHECK_EQ(rc, VIP_SUCCESS);
		usleep(GAP_MS * 1000);
	}
	VDT_CHECK(vt_sync(vt_fd) == 0);        /* the accepter has them all */
	vt_side_close(&s);
	return 0;
}

/* The parent: accept (pausing in the window), then every message, in
 * order, within a few seconds. */
static int accepter(void *arg)
{
	struct vt_side s;
	uint64_t end;
	int got = 0;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	in_accepter = true;
	vt_side_connect(&s, disc);
	end = vt_now_ms() + 5000;
	while (got < NMSG && vt_now_ms() < end) {
		const void *m;
		VIP_UINT32 len;
		char want[16];

		if (viaduct_ring_peek(s.vi, &m, &len) != VIP_SUCCESS) {
			usleep(1000);
			continue;
		}
		snprintf(want, sizeof(want), "msg%d", got);
		VDT_CHECK(len == strlen(want) + 1 && !memcmp(m, want, len));
		VT_OK(viaduct_ring_release(s.vi));
		got++;
	}
	if (got != NMSG)
		fprintf(stderr, "FAIL: %d of %d ring messages arrived\n", got, NMSG);
	VDT_CHECK_EQ(got, NMSG);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	return 0;
}

int main(void)
{
	vt_disc(disc, "attach");
	return vt_ofi_run_main(accepter, requester, 30,
			       "ring messages that reach a VI between attach and Connected wait for it");
}
