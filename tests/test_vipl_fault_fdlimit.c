/* SPDX-License-Identifier: MIT */
/*
 * A process at its file descriptor limit.
 *   1. The acceptor cannot watch the new connection (its service thread
 *      cannot be started): VipConnectAccept must fail, and the requester,
 *      whose VI already counted as Connected, must learn it within a
 *      bound.  (Accept used to return success and leave the requester's
 *      VI Connected forever.)
 *   2. A listener that cannot accept (EMFILE) must refuse the request and
 *      not spin: its CPU time over a 1 s VipConnectWait stays small, and
 *      the requester gets an answer instead of waiting out its timeout.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "viptest.h"

static char disc1[32], disc2[32];
static int hog[65536];
static int nhog;

/* Use up every free descriptor (below a lowered soft limit). */
static void exhaust_fds(void)
{
	struct rlimit rl;
	int fd;

	VDT_CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	if (rl.rlim_cur > 4096) {
		rl.rlim_cur = 4096;
		VDT_CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	}
	while ((fd = dup(0)) >= 0 && nhog < 65536)
		hog[nhog++] = fd;
	VDT_CHECK(errno == EMFILE);
}

static void release_fds(void)
{
	while (nhog)
		close(hog[--nhog]);
}

static uint64_t cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

static int server(void *arg)
{
	struct vt_side s;
	VIP_NET_ADDRESS *local, *remote = calloc(1, sizeof(*remote) + 128);
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	uint64_t cpu0, t0;
	int r;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	/* 1: the request is in, then no descriptor is left. */
	local = vt_addr(s.nic, disc1);
	VT_OK(VipConnectWait(s.nic, local, 20000, remote, &ra, &conn));
	exhaust_fds();
	r = VipConnectAccept(conn, s.vi);
	release_fds();
	printf("accept with no descriptor for the watcher: %s\n", vt_ret_str(r));
	VDT_CHECK(r != VIP_SUCCESS);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	free(local);

	/* 2: a listener exists, then no descriptor is left while it waits. */
	local = vt_addr(s.nic, disc2);
	VT_EXPECT(VipConnectWait(s.nic, local, 50, remote, &ra, &conn), VIP_TIMEOUT);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	exhaust_fds();
	cpu0 = cpu_ms();
	t0 = vt_now_ms();
	r = VipConnectWait(s.nic, local, 1000, remote, &ra, &conn);
	release_fds();
	printf("listener at the limit: %s, %llu ms CPU in %llu ms\n", vt_ret_str(r),
	       (unsigned long long)(cpu_ms() - cpu0), (unsigned long long)(vt_now_ms() - t0));
	VDT_CHECK(r == VIP_TIMEOUT || r == VIP_ERROR_RESOURCE);
	VDT_CHECK(cpu_ms() - cpu0 < 400);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	free(local);
	free(remote);
	vt_side_close(&s);
	return 0;
}

static int client(void *arg)
{
	struct vt_side s;
	uint64_t t0;
	int r;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	r = vt_client_connect(s.nic, s.vi, disc1, 20000);
	t0 = vt_now_ms();
	while (r == VIP_SUCCESS && vt_state(s.vi) == VIP_STATE_CONNECTED &&
	       vt_now_ms() - t0 < 5000)
		usleep(1000);
	printf("requester: connect %s, then %s after %llu ms\n", vt_ret_str(r),
	       vt_state(s.vi) == VIP_STATE_CONNECTED ? "still Connected" : "not Connected",
	       (unsigned long long)(vt_now_ms() - t0));
	VDT_CHECK(vt_state(s.vi) != VIP_STATE_CONNECTED);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	VipDisconnect(s.vi);

	VDT_CHECK(vt_sync(vt_fd) == 0);          /* the listener exists */
	usleep(100000);                         /* and has no descriptor left */
	t0 = vt_now_ms();
	r = vt_client_connect(s.nic, s.vi, disc2, 3000);
	printf("request to a listener at its limit: %s after %llu ms\n", vt_ret_str(r),
	       (unsigned long long)(vt_now_ms() - t0));
	VDT_CHECK(r != VIP_SUCCESS);
	VDT_CHECK(vt_sync(vt_fd) == 0);
	vt_side_close(&s);
	return 0;
}

int main(void)
{
	vt_disc(disc1, "fdlimit1");
	vt_disc(disc2, "fdlimit2");
	return vt_fork2(server, client, NULL, 60);
}
