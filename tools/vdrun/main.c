/* SPDX-License-Identifier: MIT */
/*
 * vdrun: start an MPI job of N ranks, on this machine or across hosts.
 *
 *   vdrun -n N [options] prog args...
 *   vdrun -n N prog args : -n M prog2 args2 ...      (MPMD, as mpiexec)
 *   vdrun -H a:2,b:2 -n 4 prog args...               (two hosts)
 *
 * The ranks of this machine are vdrun's own children (a rank may only
 * touch the memory of its job: the permission model of the MPICH-PM/CLUMP
 * paper).  Each gets one end of a socketpair in PMI_FD, and PMI_RANK /
 * PMI_SIZE, and vdrun serves the PMI-1 wire protocol on the other ends
 * (the same lines MPICH's Hydra speaks, so the ranks also start under
 * mpiexec.hydra): a key-value space per job, barriers across all ranks,
 * abort.  The ranks of another host are the children of a proxy there
 * (remote.c, proxy.c), which relays their PMI lines over TCP.
 *
 * Exit status: 0 if every rank exited 0; the failing rank's status; 2 for
 * a usage error; 126/127 when the program is not executable / not found
 * (as shells do); 128+signal if vdrun itself was interrupted.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "vdrun.h"

const char *signame(int sig, char *buf, size_t len)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "signal %d", sig);
	return buf;
}

/* A message on stderr as one line in one write(2): ranks, proxies and
 * vdrun share stderr, and stdio writes a line made of several calls in
 * as many pieces, which mixed the messages of two ranks. */
void say_line(const char *prefix, const char *suffix, const char *fmt, va_list ap)
{
	char msg[2 * PATH_MAX], line[sizeof(msg) + 512];
	int len;
	ssize_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	len = snprintf(line, sizeof(line), "%s%s%s\n", prefix, msg, suffix);
	if (len < 0)
		return;
	if ((size_t)len >= sizeof(line)) {      /* cut, but still a line */
		len = (int)sizeof(line) - 1;
		line[len - 1] = '\n';
	}
	do
		n = write(STDERR_FILENO, line, (size_t)len);
	while (n < 0 && errno == EINTR);
}

long elapsed_ns(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - since->tv_sec) * 1000000000L + (now.tv_nsec - since->tv_nsec);
}

/* vd-<pid>-<random>: unique per job, and a valid file-name word. */
static void make_kvsname(struct job *job)
{
	uint32_t rnd;

	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		rnd = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec;
	}
	snprintf(job->kvsname, sizeof(job->kvsname), "vd-%ld-%08x", (long)getpid(), rnd);
}

/* Descriptors 0-2 open, so that no socket lands on them (a rank's stdin
 * is replaced by /dev/null). */
static void ensure_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
			exit(1);
}

static int setup_signals(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	if (sigprocmask(SIG_BLOCK, &set, old) != 0)
		return -1;
	/* An agent that died at once must not take vdrun with it when its
	 * line is written (children get SIGPIPE back). */
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* vdrun holds a socket per local rank, and two pipes with --tag-output. */
static void ensure_fd_limit(int n)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)n * 3 + 64;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
		return;
	rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < need) {
		fprintf(stderr, "vdrun: %d ranks need %lu open files; the limit is %lu\n", n,
			(unsigned long)need, (unsigned long)rl.rlim_cur);
		exit(1);
	}
}

static void job_init(struct job *job, const struct opts *o)
{
	job->opts = o;
	job->n = job->running = o->n;
	job->lfd = -1;
	job->ranks = calloc((size_t)o->n, sizeof(*job->ranks));
	job->sigfd = setup_signals(&job->oldmask);
	if (!job->ranks || job->sigfd < 0) {
		fprintf(stderr, "vdrun: cannot set up: %s\n", strerror(errno));
		exit(1);
	}
	for (int r = 0; r < o->n; r++) {
		job->ranks[r].fd = -1;
		job->ranks[r].host = o->host_of[r];
		job->ranks[r].alive = true;
		/* Open until said otherwise: a remote rank not yet started
		 * is waited for (its host has a deadline to connect). */
		job->ranks[r].pmi_open = true;
	}
	clock_gettime(CLOCK_MONOTONIC, &job->start_time);
	make_kvsname(job);
}

int main(int argc, char **argv)
{
	static struct opts o;
	struct job job = { .status = 0 };

	if (argc == 2 && strcmp(argv[1], "--proxy") == 0)
		return proxy_main();
	parse_args(argc, argv, &o);
	if (o.verbose)
		hosts_print(&o, stderr);
	ensure_std_fds();
	ensure_fd_limit(o.n);
	job_init(&job, &o);
	/* Remote hosts first: their agents take longest to answer. */
	if (remote_setup(&job) != 0)
		return 1;
	start_local_ranks(&job);
	serve(&job);
	tag_drain(&job.tags, 1000);
	remote_finish(&job);
	for (int r = 0; r < o.n; r++)
		if (job.ranks[r].fd >= 0)
			close(job.ranks[r].fd);
	tag_free(&job.tags);
	kvs_free(&job);
	free(job.ranks);
	opts_free(&o);
	return job.status;
}
