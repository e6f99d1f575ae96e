/* SPDX-License-Identifier: MIT */
/* Helpers for the VIPL tests; see viptest.h. */
#include "viptest.h"

#include <sys/resource.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int vt_fd = -1;
int vt_is_child;

/* The pid of the original test process, recorded before main() so the
 * child of vt_fork2 computes the same discriminators as its parent. */
static pid_t vt_root_pid;
/* The running child of vt_fork2, for the exit and alarm handlers. */
static volatile pid_t vt_child;

__attribute__((constructor)) static void vt_init(void)
{
	vt_root_pid = getpid();
}

const char *vt_ret_str(int r)
{
	static const char *const names[] = {
		"VIP_SUCCESS", "VIP_NOT_DONE", "VIP_INVALID_PARAMETER",
		"VIP_ERROR_RESOURCE", "VIP_TIMEOUT", "VIP_REJECT",
		"VIP_INVALID_RELIABILITY_LEVEL", "VIP_INVALID_MTU",
		"VIP_INVALID_QOS", "VIP_INVALID_PTAG", "VIP_INVALID_RDMAREAD",
		"VIP_DESCRIPTOR_ERROR", "VIP_INVALID_STATE",
		"VIP_ERROR_NAMESERVICE", "VIP_NO_MATCH", "VIP_NOT_REACHABLE",
		"VIP_ERROR_NOT_SUPPORTED", "VIP_ERROR",
	};
	static char buf[32];

	if (r >= 0 && r < (int)(sizeof(names) / sizeof(names[0])))
		return names[r];
	snprintf(buf, sizeof(buf), "VIP_?(%d)", r);
	return buf;
}

/* ---- processes ------------------------------------------------------------ */

/* Kill and reap the child; used on every failure path, at exit() (a failed
 * VDT_CHECK in the parent) and from the alarm handler. */
static void vt_kill_child(void)
{
	pid_t pid = vt_child;

	if (pid > 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		vt_child = 0;
	}
}

static void vt_alarm(int sig)
{
	static const char msg[] = "vt_fork2: timeout\n";

	(void)sig;
	/* write() and waitpid() are async-signal-safe. */
	if (write(2, msg, sizeof(msg) - 1) < 0) {
	}
	vt_kill_child();
	_exit(VDT_FAIL);
}

static void vt_at_exit(void)
{
	if (!vt_is_child)
		vt_kill_child();
}

static int vt_combine(int ra, int rb)
{
	if (ra == 0 && rb == 0)
		return 0;
	if ((ra == 0 || ra == VDT_SKIP) && (rb == 0 || rb == VDT_SKIP))
		return VDT_SKIP;
	return VDT_FAIL;
}

/* VT_NETNS_CHILD=/run/netns/NAME: the child side runs on another host,
 * a network namespace (tests/netns.sh makes them). */
static void vt_enter_netns(void)
{
	const char *ns = getenv("VT_NETNS_CHILD");
	int fd;

	if (!ns || !*ns)
		return;
	fd = open(ns, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		fprintf(stderr, "vt: cannot enter network namespace %s: %s\n", ns,
			strerror(errno));
		_exit(VDT_FAIL);
	}
	close(fd);
}

void vt_as_child(void)
{
	vt_is_child = 1;
	vt_enter_netns();
}

static void vt_run_child(int (*b)(void *), void *arg, pid_t parent,
			 unsigned timeout_s)
{
	int rb;

	vt_is_child = 1;
	vt_child = 0;
	vt_enter_netns();
	/* Die with the parent even if it is killed without cleaning up. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(VDT_FAIL);
	alarm(timeout_s);
	rb = b(arg);
	fflush(NULL);
	_exit(rb == 0 || rb == VDT_SKIP ? rb : VDT_FAIL);
}

/* Wait for the child (the alarm bounds the wait); its result or FAIL. */
static int vt_reap(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return VDT_FAIL;
	vt_child = 0;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	fprintf(stderr, "vt_fork2: child killed by signal %d\n",
		WIFSIGNALED(st) ? WTERMSIG(st) : -1);
	return VDT_FAIL;
}

int vt_fork2(int (*a)(void *), int (*b)(void *), void *arg, unsigned timeout_s)
{
	static int registered;
	struct sigaction sa = { .sa_handler = vt_alarm }, old;
	int sv[2], ra, rb;
	pid_t parent = getpid(), pid;

	if (!registered && atexit(vt_at_exit) == 0)
		registered = 1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return VDT_FAIL;
	fflush(NULL);   /* no buffered output printed twice */
	/* Before fork, so a child timeout is reported the same way. */
	sigaction(SIGALRM, &sa, &old);
	pid = fork();
	if (pid < 0) {
		sigaction(SIGALRM, &old, NULL);
		close(sv[0]);
		close(sv[1]);
		return VDT_FAIL;
	}
	if (pid == 0) {
		close(sv[0]);
		vt_fd = sv[1];
		vt_run_child(b, arg, parent, timeout_s);
	}
	vt_child = pid;
	close(sv[1]);
	vt_fd = sv[0];
	alarm(timeout_s);
	ra = a(arg);
	if (ra != 0 && ra != VDT_SKIP) {
		fprintf(stderr, "vt_fork2: parent side failed (%d)\n", ra);
		vt_kill_child();
		rb = VDT_FAIL;
	} else {
		rb = vt_reap(pid);
		if (rb != 0)
			fprintf(stderr, "vt_fork2: child side failed (%d)\n", rb);
	}
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	close(sv[0]);
	vt_fd = -1;
	return vt_combine(ra, rb);
}

/* Read or write exactly n bytes within 10 s.  0 or -1. */
static int vt_xfer(int fd, void *buf, size_t n, int writing)
{
	char *p = buf;

	while (n) {
		struct pollfd pfd = { .fd = fd, .events = writing ? POLLOUT : POLLIN };
		ssize_t k;

		if (poll(&pfd, 1, 10000) != 1)
			return -1;
		k = writing ? write(fd, p, n) : read(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int vt_sync(int fd)
{
	char c = 's';

	if (vt_xfer(fd, &c, 1, 1) || vt_xfer(fd, &c, 1, 0)) {
		fprintf(stderr, "vt_sync: peer gone or timeout\n");
		return -1;
	}
	return 0;
}

int vt_put_u64(int fd, uint64_t v)
{
	return vt_xfer(fd, &v, sizeof(v), 1);
}

int vt_get_u64(int fd, uint64_t *v)
{
	return vt_xfer(fd, v, sizeof(*v), 0);
}

/* ---- addresses ------------------------------------------------------------ */

const char *vt_disc(char buf[32], const char *tag)
{
	snprintf(buf, 32, "%.8s.%d", tag, (int)vt_root_pid);
	return buf;
}

size_t vt_addr_size(const VIP_NET_ADDRESS *a)
{
	return sizeof(*a) + a->HostAddressLen + a->DiscriminatorLen;
}

static VIP_NET_ADDRESS *addr_of(VIP_NIC_HANDLE nic, const char *host, const char *disc);

VIP_NET_ADDRESS *vt_addr(VIP_NIC_HANDLE nic, const char *disc)
{
	return addr_of(nic, "localhost", disc);
}

/* The other side of a vt_fork2 pair: this host, unless the two run on
 * different hosts (VT_HOST_PARENT / VT_HOST_CHILD name them). */
VIP_NET_ADDRESS *vt_peer_addr(VIP_NIC_HANDLE nic, const char *disc)
{
	const char *h = getenv(vt_is_child ? "VT_HOST_PARENT" : "VT_HOST_CHILD");

	return addr_of(nic, h && *h ? h : "localhost", disc);
}

static VIP_NET_ADDRESS *addr_of(VIP_NIC_HANDLE nic, const char *host, const char *disc)
{
	VIP_NIC_ATTRIBUTES na;
	VIP_NET_ADDRESS *a;
	size_t dl = strlen(disc);
	int r;

	if ((r = VipQueryNic(nic, &na)) != VIP_SUCCESS) {
		fprintf(stderr, "vt_addr: VipQueryNic: %s\n", vt_ret_str(r));
		return NULL;
	}
	a = calloc(1, sizeof(*a) + na.NicAddressLen + dl);
	if (!a)
		return NULL;
	a->HostAddressLen = na.NicAddressLen;
	r = VipNSGetHostByName(nic, (VIP_CHAR *)host, a, 0);
	if (r != VIP_SUCCESS || a->HostAddressLen != na.NicAddressLen) {
		fprintf(stderr, "vt_addr: VipNSGetHostByName: %s, len %u\n",
			vt_ret_str(r), a->HostAddressLen);
		free(a);
		return NULL;
	}
	a->DiscriminatorLen = (VIP_UINT16)dl;
	memcpy(a->HostAddress + a->HostAddressLen, disc, dl);
	return a;
}

/* ---- memory --------------------------------------------------------------- */

int vt_mem_get(VIP_NIC_HANDLE nic, size_t len, VIP_MEM_ATTRIBUTES *attrs,
	       struct vt_mem *m)
{
	size_t alloc = (len + 63) & ~(size_t)63;
	int r;

	memset(m, 0, sizeof(*m));
	if (posix_memalign(&m->p, 64, alloc ? alloc : 64))
		return VIP_ERROR_RESOURCE;
	memset(m->p, 0, alloc ? alloc : 64);
	r = VipRegisterMem(nic, m->p, len, attrs, &m->mh);
	if (r != VIP_SUCCESS) {
		free(m->p);
		m->p = NULL;
		return r;
	}
	m->len = len;
	m->nic = nic;
	return VIP_SUCCESS;
}

void vt_mem_put(struct vt_mem *m)
{
	if (m->p) {
		VipDeregisterMem(m->nic, m->p, m->mh);
		free(m->p);
	}
	memset(m, 0, sizeof(*m));
}

/* ---- descriptors ---------------------------------------------------------- */

static void vt_desc_one(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh, void *buf,
			uint32_t len)
{
	memset(d, 0, sizeof(VIP_CONTROL_SEGMENT) + sizeof(VIP_DATA_SEGMENT));
	d->CS.SegCount = 1;
	d->CS.Control = VIP_CONTROL_OP_SENDRECV;
	d->CS.Length = len;
	vt_seg(d, 0)->Data.Address = buf;
	vt_seg(d, 0)->Handle = mh;
	vt_seg(d, 0)->Length = len;
}

void vt_desc_send(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh, void *buf, uint32_t len)
{
	vt_desc_one(d, mh, buf, len);
}

void vt_desc_recv(VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh, void *buf, uint32_t len)
{
	vt_desc_one(d, mh, buf, len);
}

void vt_desc_rdma(VIP_DESCRIPTOR *d, unsigned op, uint64_t raddr,
		  VIP_MEM_HANDLE rmh, VIP_MEM_HANDLE lmh, void *lbuf, uint32_t len)
{
	memset(d, 0, sizeof(VIP_CONTROL_SEGMENT) + 2 * sizeof(VIP_DATA_SEGMENT));
	d->CS.SegCount = 2;
	d->CS.Control = (VIP_UINT16)op;
	d->CS.Length = len;
	d->DS[0].Remote.Data.AddressBits = raddr;
	d->DS[0].Remote.Handle = rmh;
	d->DS[1].Local.Data.Address = lbuf;
	d->DS[1].Local.Handle = lmh;
	d->DS[1].Local.Length = len;
}

/* ---- connections ---------------------------------------------------------- */

int vt_server_accept(VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi, const char *disc,
		     VIP_ULONG timeout_ms)
{
	VIP_NET_ADDRESS *local = vt_addr(nic, disc), *remote;
	VIP_VI_ATTRIBUTES ra;
	VIP_CONN_HANDLE conn;
	int r;

	remote = calloc(1, sizeof(*remote) + 64 + 64);
	if (!local || !remote) {
		free(local);
		free(remote);
		return VIP_ERROR_RESOURCE;
	}
	r = VipConnectWait(nic, local, timeout_ms, remote, &ra, &conn);
	if (r == VIP_SUCCESS)
		r = VipConnectAccept(conn, vi);
	if (r != VIP_SUCCESS)
		fprintf(stderr, "vt_server_accept: %s\n", vt_ret_str(r));
	free(local);
	free(remote);
	return r;
}

int vt_client_connect(VIP_NIC_HANDLE nic, VIP_VI_HANDLE vi, const char *disc,
		      VIP_ULONG timeout_ms)
{
	VIP_NET_ADDRESS *local = vt_addr(nic, disc), *remote = vt_peer_addr(nic, disc);
	int inf = timeout_ms == VIP_INFINITE || timeout_ms == (VIP_ULONG)-1;
	uint64_t end = vt_now_ms() + (inf ? 0 : timeout_ms);
	VIP_VI_ATTRIBUTES ra;
	int r = VIP_ERROR_RESOURCE;

	while (local && remote) {
		uint64_t now = vt_now_ms();
		VIP_ULONG left = inf ? VIP_INFINITE : (VIP_ULONG)(end - now);

		r = VipConnectRequest(vi, local, remote, left ? left : 1, &ra);
		/* Real clients loop on NO_MATCH: the server is not there yet. */
		if (r != VIP_NO_MATCH || (!inf && vt_now_ms() >= end))
			break;
		usleep(1000);
	}
	if (r != VIP_SUCCESS)
		fprintf(stderr, "vt_client_connect: %s\n", vt_ret_str(r));
	free(local);
	free(remote);
	return r;
}

VIP_VI_ATTRIBUTES vt_vi_attrs(VIP_NIC_HANDLE nic, VIP_RELIABILITY_LEVEL level)
{
	VIP_NIC_ATTRIBUTES na;
	VIP_VI_ATTRIBUTES va;

	memset(&va, 0, sizeof(va));
	memset(&na, 0, sizeof(na));
	VipQueryNic(nic, &na);
	va.ReliabilityLevel = level;
	va.MaxTransferSize = na.MaxTransferSize ? na.MaxTransferSize : 32768;
	va.EnableRdmaWrite = VIP_TRUE;
	va.EnableRdmaRead = VIP_TRUE;
	return va;
}

void vt_side_open(struct vt_side *s, VIP_RELIABILITY_LEVEL level,
		  const VIP_VI_ATTRIBUTES *va)
{
	VIP_VI_ATTRIBUTES a;

	memset(s, 0, sizeof(*s));
	VT_OK(VipOpenNic("/dev/via_lo", &s->nic));
	VT_OK(VipQueryNic(s->nic, &s->na));
	a = va ? *va : vt_vi_attrs(s->nic, level);
	VT_OK(VipCreateVi(s->nic, &a, NULL, NULL, &s->vi));
}

/* Generous: a side may still be registering hundreds of MiB (slow under
 * TSan, on a loaded machine) when the other one is ready. */
#define VT_CONNECT_MS 60000

void vt_side_connect(struct vt_side *s, const char *disc)
{
	if (vt_is_child)
		VT_OK(vt_client_connect(s->nic, s->vi, disc, VT_CONNECT_MS));
	else
		VT_OK(vt_server_accept(s->nic, s->vi, disc, VT_CONNECT_MS));
}

void vt_side_close(struct vt_side *s)
{
	if (s->vi) {
		VipDisconnect(s->vi);
		VipDestroyVi(s->vi);
	}
	if (s->nic)
		VipCloseNic(s->nic);
	memset(s, 0, sizeof(*s));
}

VIP_VI_STATE vt_state(VIP_VI_HANDLE vi)
{
	VIP_VI_STATE st = (VIP_VI_STATE)-1;
	VIP_VI_ATTRIBUTES va;
	VIP_BOOLEAN se, re;

	VipQueryVi(vi, &st, &va, &se, &re);
	return st;
}

/* ---- leak checks ---------------------------------------------------------- */

static int vt_count_dir(const char *path, const char *needle)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && (!needle || strstr(e->d_name, needle)))
			n++;
	closedir(d);
	return n;
}

int vt_count_fds(void)
{
	/* The directory's own fd is counted; subtract it. */
	return vt_count_dir("/proc/self/fd", NULL) - 1;
}

/* What a leaking shm provider would leave: /dev/shm objects, or files in
 * /tmp named after VIPL.  (Not every "viaduct" in /tmp: make test's
 * install check keeps its prefix there while tests run in parallel.) */
int vt_count_viaduct_files(void)
{
	return vt_count_dir("/dev/shm", "viaduct") + vt_count_dir("/tmp", "vipl");
}

/* ---- misc ----------------------------------------------------------------- */

uint64_t vt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

bool vt_await_sleeper(_Atomic uint32_t *count)
{
	uint64_t give_up = vt_now_ms() + 10000;
	struct timespec settle = { 0, 2000000 };

	while (!atomic_load(count) && vt_now_ms() < give_up)
		;
	nanosleep(&settle, NULL);
	return atomic_load(count) != 0;
}

static inline uint8_t vt_pat(size_t i, uint32_t seed)
{
	uint32_t x = (uint32_t)i * 2654435761u + seed * 40503u;

	return (uint8_t)(x >> 13 ^ x >> 24 ^ i);
}

void vt_fill(void *p, size_t len, uint32_t seed)
{
	uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		b[i] = vt_pat(i, seed);
}

long vt_check(const void *p, size_t len, uint32_t seed)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i] != vt_pat(i, seed))
			return (long)i;
	return -1;
}

/* ---- environment ------------------------------------------------------------ */

void vt_skip_without_memlock(size_t need)
{
	struct rlimit rl;

	if (geteuid() == 0 || getrlimit(RLIMIT_MEMLOCK, &rl) != 0 ||
	    rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return;
	fprintf(stderr, "SKIP: RLIMIT_MEMLOCK is %llu bytes, this test registers "
		"up to %zu\n", (unsigned long long)rl.rlim_cur, need);
	exit(VDT_SKIP);
}

int vt_ofi_run_main(int (*a)(void *), int (*b)(void *), unsigned timeout_s, const char *ok)
{
	VIP_NIC_HANDLE nic;
	int r;

	setenv("VIADUCT_JOB_KEY", "00112233445566778899aabbccddeeff", 1);
	setenv("VIADUCT_PROVIDER", "ofi:tcp", 1);
	if (VipOpenNic("/dev/via_lo", &nic) != VIP_SUCCESS) {
		printf("SKIP: the ofi provider cannot open here\n");
		return VDT_SKIP;
	}
	VipCloseNic(nic);
	r = vt_fork2(a, b, NULL, timeout_s);
	if (r == 0)
		printf("ok: %s\n", ok);
	return r;
}

int vt_run_main(int (*a)(void *), int (*b)(void *), size_t memlock, unsigned timeout_s)
{
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	vt_skip_without_memlock(memlock);
	r = vt_fork2(a, b, NULL, timeout_s);
	printf("%s\n", r == 0 ? "PASS" : r == VDT_SKIP ? "SKIP" : "FAIL");
	return r;
}
