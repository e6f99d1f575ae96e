/* SPDX-License-Identifier: MIT */
/*
 * A request whose wait runs out before the accept comes: the requester
 * refuses the late ACC, so the accepter's VipConnectAccept fails at once
 * instead of waiting 5 s for a confirmation that never comes (during
 * which its listener answers nobody: under load, lazy MPI connections
 * stalled for seconds this way).  Then a second request, given time,
 * connects the same pair.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "vdtest.h"
#include "viptest.h"

#define REQUEST_MS 200
#define ACCEPT_DELAY_MS 600

static char disc[32];

/* The child: one request that gives up, then one that waits. */
static int requester(void *arg)
{
	struct vt_side s;
	VIP_VI_ATTRIBUTES ra;
	VIP_NET_ADDRESS *local, *remote;
	VIP_RETURN rc;
	uint64_t end = vt_now_ms() + 5000;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	local = vt_addr(s.nic, disc);
	remote = vt_peer_addr(s.nic, disc);
	VDT_CHECK(local && remote);
	/* The listener is up once the parent says so. */
	VDT_CHECK(vt_sync(vt_fd) == 0);
	do
		rc = VipConnectRequest(s.vi, local, remote, REQUEST_MS, &ra);
	while (rc == VIP_NO_MATCH && vt_now_ms() < end);
	VDT_CHECK_EQ(rc, VIP_TIMEOUT);
	free(local);
	free(remote);
	VDT_CHECK(vt_sync(vt_fd) == 0);         /* the accept has failed */
	vt_side_connect(&s, disc);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	return 0;
}

static int accepter(void *arg)
{
	struct vt_side s;
	VIP_VI_ATTRIBUTES ra;
	VIP_NET_ADDRESS *remote = malloc(256), *local;
	VIP_CONN_HANDLE ch;
	uint64_t t0, ms;
	VIP_RETURN rc;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	local = vt_addr(s.nic, disc);
	VDT_CHECK(remote && local);
	VT_EXPECT(VipConnectWait(s.nic, local, 50, remote, &ra, &ch), VIP_TIMEOUT);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VT_OK(VipConnectWait(s.nic, local, 10000, remote, &ra, &ch));
	usleep(ACCEPT_DELAY_MS * 1000);        /* the requester has given up */
	t0 = vt_now_ms();
	rc = VipConnectAccept(ch, s.vi);
	ms = vt_now_ms() - t0;
	printf("an accept that came %d ms after a %d ms request: %s in %llu ms\n",
	       ACCEPT_DELAY_MS, REQUEST_MS, vt_ret_str(rc), (unsigned long long)ms);
	VDT_CHECK(rc != VIP_SUCCESS);
	VDT_CHECK(ms < 2000);                   /* not the 5 s confirmation wait */
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_connect(&s, disc);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	free(remote);
	free(local);
	vt_side_close(&s);
	return 0;
}

int main(void)
{
	vt_disc(disc, "lateacc");
	return vt_ofi_run_main(accepter, requester, 60,
			       "a late ACC is refused; the pair then connects");
}
