/* SPDX-License-Identifier: MIT */
/*
 * Another user cannot take our connection names.  Listening sockets are
 * abstract (no permissions), so their names hold a secret of the user,
 * kept in a private directory.  Root only (it needs other users):
 *   1. a process of user nobody binds the name every version before this
 *      one used ("\0viaduct-vipl/<uid>/<hex address>") and tries to read
 *      our secret; our client/server connection still works (it used to
 *      fail: the name was taken);
 *   2. a user whose directory another user created (world-writable), or
 *      replaced by a symlink, gets a clear error, never a connection
 *      through that directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "viptest.h"

#define NOBODY 65534
#define OTHER_UID 47111
static char disc[32];

/* As uid: VipConnectWait on disc must fail at once, not listen. */
static int wait_refused_as(uid_t uid)
{
	VIP_NIC_HANDLE nic;
	VIP_NET_ADDRESS *local, *remote = calloc(1, sizeof(*remote) + 128);
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	int r;

	if (setgid(NOBODY) || setuid(uid))
		return 2;
	if (VipOpenNic("/dev/via_lo", &nic) != VIP_SUCCESS)
		return 3;
	local = vt_addr(nic, disc);
	r = VipConnectWait(nic, local, 200, remote, &ra, &conn);
	return r == VIP_SUCCESS || r == VIP_TIMEOUT ? 1 : 0;
}

static int run_child(int (*fn)(uid_t), uid_t uid)
{
	int ws;
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn(uid));
	VDT_CHECK(pid > 0 && waitpid(pid, &ws, 0) == pid && WIFEXITED(ws));
	return WEXITSTATUS(ws);
}

static void test_bad_dirs(void)
{
	char dir[64];

	snprintf(dir, sizeof(dir), "/tmp/viaduct-%u", OTHER_UID);
	rmdir(dir);
	unlink(dir);
	VDT_CHECK(mkdir(dir, 0777) == 0 && chmod(dir, 0777) == 0 && chown(dir, NOBODY, NOBODY) == 0);
	VDT_CHECK_EQ(run_child(wait_refused_as, OTHER_UID), 0);
	VDT_CHECK(rmdir(dir) == 0);
	VDT_CHECK(symlink("/tmp", dir) == 0);
	VDT_CHECK_EQ(run_child(wait_refused_as, OTHER_UID), 0);
	VDT_CHECK(unlink(dir) == 0);
	puts("ok: a directory another user made, or a symlink, is refused");
}

/* As nobody: bind the predictable old name of our address; try to read
 * our secret.  Keeps the name until killed. */
static int squat(uid_t uid)
{
	VIP_NIC_HANDLE nic;
	VIP_NET_ADDRESS *a;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *p = sa.sun_path + 1;
	int s, fd;

	if (VipOpenNic("/dev/via_lo", &nic) != VIP_SUCCESS)
		return 3;
	a = vt_addr(nic, disc);         /* as root would compute it */
	p += sprintf(p, "viaduct-vipl/0/");
	for (unsigned i = 0; i < a->HostAddressLen + a->DiscriminatorLen; i++)
		p += sprintf(p, "%02x", (unsigned char)a->HostAddress[i]);
	if (setgid(NOBODY) || setuid(uid))
		return 2;
	fd = open("/tmp/viaduct-0/secret", O_RDONLY);
	if (fd >= 0)
		return 4;               /* another user read our secret */
	s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sa,
			  (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (p - sa.sun_path))) ||
	    listen(s, 8))
		return 5;
	for (;;)
		pause();
}

static int server(void *arg)
{
	struct vt_side s;

	(void)arg;
	vt_side_open(&s, VIP_SERVICE_RELIABLE_DELIVERY, NULL);
	vt_side_connect(&s, disc);
	vt_side_close(&s);
	return 0;
}

int main(void)
{
	pid_t squatter;
	int r;

	VDT_SKIP_IF(geteuid() != 0, "needs root to act as other users");
	alarm(60);
	vt_disc(disc, "squat");
	test_bad_dirs();
	fflush(NULL);
	squatter = fork();
	VDT_CHECK(squatter >= 0);
	if (squatter == 0)
		_exit(squat(NOBODY));
	usleep(200000);         /* it binds the old name */
	VDT_CHECK(waitpid(squatter, NULL, WNOHANG) == 0);      /* and holds it */
	r = vt_fork2(server, server, NULL, 30);
	kill(squatter, SIGKILL);
	waitpid(squatter, NULL, 0);
	VDT_CHECK_EQ(r, 0);
	puts("ok: a connection while another user squats the old name");
	return 0;
}
