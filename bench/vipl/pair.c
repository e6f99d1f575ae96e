// SPDX-License-Identifier: MIT
/*
 * pair.c -- the two-process harness of bench_vipl: the shared block, the
 * fork, CPU pinning, failure reporting and the watchdog.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_vipl.h"

struct shared *sh;

static int cpus[2] = { -1, -1 };   /* the two CPUs used, or -1: no pinning */
static bool is_child;
static pid_t child_pid;
static uint64_t job_deadline;      /* ns; should_stop() after it */
static char server_err[256];
static char pin_text[64];

bool in_child(void)
{
	return is_child;
}

/* The first two CPUs this process may run on.  Pinning the two sides apart
 * makes the figures repeatable: a spinning receiver that shares its CPU
 * with the sender only measures the scheduler. */
static void choose_cpus(void)
{
	cpu_set_t set;
	int found = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return;
	for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
		if (CPU_ISSET(c, &set))
			cpus[found++] = c;
	if (found < 2)
		cpus[0] = cpus[1] = -1;
}

const char *pin_description(void)
{
	if (cpus[0] < 0)
		snprintf(pin_text, sizeof(pin_text),
			 "not pinned (fewer than 2 CPUs allowed)");
	else
		snprintf(pin_text, sizeof(pin_text),
			 "server on CPU %d, client on CPU %d", cpus[0], cpus[1]);
	return pin_text;
}

static void pin_to(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

int shared_init(void)
{
	void *p = mmap(NULL, sizeof(struct shared), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -errno;
	sh = p;
	choose_cpus();
	return 0;
}

int fail(const char *fmt, ...)
{
	char *buf = is_child ? sh->child_err : server_err;
	size_t len = is_child ? sizeof(sh->child_err) : sizeof(server_err);
	va_list ap;

	if (buf[0] == 0) {
		va_start(ap, fmt);
		vsnprintf(buf, len, fmt, ap);
		va_end(ap);
	}
	/* Release: pairs with the acquire load in should_stop() on the other
	 * side, which then stops waiting for messages that will not come. */
	atomic_store_explicit(&sh->abort, 1, memory_order_release);
	return -1;
}

static const char *const vip_names[] = {
	"VIP_SUCCESS", "VIP_NOT_DONE", "VIP_INVALID_PARAMETER",
	"VIP_ERROR_RESOURCE", "VIP_TIMEOUT", "VIP_REJECT",
	"VIP_INVALID_RELIABILITY_LEVEL", "VIP_INVALID_MTU", "VIP_INVALID_QOS",
	"VIP_INVALID_PTAG", "VIP_INVALID_RDMAREAD", "VIP_DESCRIPTOR_ERROR",
	"VIP_INVALID_STATE", "VIP_ERROR_NAMESERVICE", "VIP_NO_MATCH",
	"VIP_NOT_REACHABLE", "VIP_ERROR_NOT_SUPPORTED", "VIP_ERROR",
};

const char *vip_text(VIP_RETURN r)
{
	if ((unsigned)r < sizeof(vip_names) / sizeof(vip_names[0]))
		return vip_names[r];
	return "unknown VIP_RETURN";
}

int vip_fail(const char *call, VIP_RETURN r)
{
	return fail("%s: %s", call, vip_text(r));
}

bool should_stop(void)
{
	/* Acquire: pairs with the release store in fail(). */
	if (atomic_load_explicit(&sh->abort, memory_order_acquire))
		return true;
	if (now_ns() > job_deadline) {
		fail("%s gave up: job deadline passed",
		     is_child ? "client" : "server");
		return true;
	}
	return false;
}

/* The parent's watchdog: a library that hangs must not hang the bench. */
static void on_alarm(int sig)
{
	static const char msg[] =
		"bench_vipl: watchdog: a job hung; killing it and exiting\n";

	(void)sig;
	if (child_pid > 0)
		kill(child_pid, SIGKILL);
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(3);
	_exit(3);
}

/* Before the fork: no other process uses the block yet, and fork() orders
 * these stores before anything the child does. */
static void reset_shared(void)
{
	atomic_store(&sh->ping, 0);
	atomic_store(&sh->abort, 0);
	atomic_store(&sh->stop, 0);
	atomic_store(&sh->client_done, 0);
	atomic_store(&sh->progress, 0);
	sh->child_err[0] = 0;
	server_err[0] = 0;
}

/* BENCH_NETNS_CLIENT=/run/netns/NAME: the client runs on another host, a
 * network namespace (bench/vipl/hosts.sh). */
static void enter_client_netns(void)
{
	const char *ns = getenv("BENCH_NETNS_CLIENT");
	int fd;

	if (!ns || !*ns)
		return;
	fd = open(ns, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		fprintf(stderr, "bench_vipl: cannot enter %s: %s\n", ns, strerror(errno));
		_exit(1);
	}
	close(fd);
}

static void run_child(int (*client)(void *), void *arg, unsigned limit_s)
{
	is_child = true;
	enter_client_netns();
	/* Die with the parent, and on our own if the job overruns. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGALRM, SIG_DFL);
	alarm(limit_s + 10);
	pin_to(cpus[1]);
	_exit(client(arg) == 0 ? 0 : 1);
}

/* Reap the child; after `grace_ms` it is killed.  Its exit status, or -1. */
static int reap_child(unsigned grace_ms)
{
	int status = 0;

	for (unsigned waited = 0;; waited++) {
		pid_t p = waitpid(child_pid, &status, WNOHANG);

		if (p == child_pid)
			break;
		if (p < 0 && errno != EINTR)
			return -1;
		if (waited == grace_ms)
			kill(child_pid, SIGKILL);
		usleep(1000);
	}
	child_pid = 0;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (!sh->child_err[0])
		snprintf(sh->child_err, sizeof(sh->child_err),
			 "killed by signal %d", WTERMSIG(status));
	return -1;
}

int pair_run(int (*server)(void *), int (*client)(void *), void *arg,
	     unsigned limit_s)
{
	int rc, crc;

	reset_shared();
	job_deadline = now_ns() + (uint64_t)limit_s * 1000000000u;
	fflush(NULL); /* the child must not flush our stdio buffers again */
	child_pid = fork();
	if (child_pid < 0)
		return fail("fork: %s", strerror(errno));
	if (child_pid == 0)
		run_child(client, arg, limit_s);
	signal(SIGALRM, on_alarm);
	alarm(limit_s + 20);
	pin_to(cpus[0]);
	rc = server(arg);
	/* A failed server leaves the client waiting: abort tells it to quit. */
	crc = reap_child(rc == 0 ? (limit_s + 5) * 1000 : 5000);
	alarm(0);
	if (rc == 0 && crc == 0)
		return 0;
	if (server_err[0])
		printf("  failed: server: %s\n", server_err);
	if (sh->child_err[0])
		printf("  failed: client: %s\n", sh->child_err);
	if (!server_err[0] && !sh->child_err[0])
		printf("  failed: (server %d, client exit %d, no reason given)\n",
		       rc, crc);
	return -1;
}
