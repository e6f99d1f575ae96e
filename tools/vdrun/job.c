/* SPDX-License-Identifier: MIT */
/*
 * Job control and vdrun's event loop.
 *
 * The first rank that exits non-zero, is killed by a signal, calls
 * MPI_Abort, breaks the protocol, or exits without MPI_Finalize while
 * others still run, is named (with its host, when the job has a host
 * list); the others get SIGTERM, then SIGKILL 0.5 s later -- through
 * their proxy for remote ranks -- and vdrun exits with that rank's status.
 *
 * One poll loop serves everything: signals (a signalfd), the local ranks'
 * PMI sockets, the proxies' TCP connections (remote.c) and the
 * --tag-output pipes.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vdrun.h"

/* ---- naming and failing ---------------------------------------------------- */

/* "rank 3", or "rank 3 on host B" when the user named hosts. */
const char *rank_name(const struct job *job, int r, char *buf, size_t len)
{
	if (job->opts->have_hosts)
		snprintf(buf, len, "rank %d on host %s", r,
			 job->opts->hosts[job->ranks[r].host].name);
	else
		snprintf(buf, len, "rank %d", r);
	return buf;
}

static void signal_local_ranks(struct job *job, int sig)
{
	for (int r = 0; r < job->n; r++)
		if (job->ranks[r].pid > 0)
			kill(job->ranks[r].pid, sig);
}

void stop_job(struct job *job)
{
	if (job->stopping)
		return;
	job->stopping = true;
	clock_gettime(CLOCK_MONOTONIC, &job->stop_time);
	signal_local_ranks(job, SIGTERM);
	remote_stop(job, false);
}

static void kill_job(struct job *job)
{
	signal_local_ranks(job, SIGKILL);
	remote_stop(job, true);
	job->killed = true;
}

/* The first failure names its cause and sets the exit status; later ones
 * are consequences of stopping the job and stay quiet. */
void fail(struct job *job, int status, const char *fmt, ...)
{
	va_list ap;

	if (job->stopping)
		return;
	va_start(ap, fmt);
	say_line("vdrun: ", "; stopping the job", fmt, ap);
	va_end(ap);
	job->status = status ? status : 1;
	stop_job(job);
}

void protocol_error(struct job *job, int r, const char *what)
{
	char name[VDRUN_HOST_MAX + 32];

	fail(job, 1, "%s broke the PMI protocol (%s)", rank_name(job, r, name, sizeof(name)),
	     what);
}

/* ---- rank exits -------------------------------------------------------------- */

/* The rank is gone (reaped here, or reported by its proxy). */
void rank_died(struct job *job, int r, bool signaled, int code)
{
	struct rank *rk = &job->ranks[r];
	char name[VDRUN_HOST_MAX + 32], sig[32];

	if (!rk->alive)
		return;
	rk->alive = false;
	job->running--;
	rank_name(job, r, name, sizeof(name));
	if (signaled)
		fail(job, 128 + code, "%s killed by signal %s", name, signame(code, sig, sizeof(sig)));
	else if (code != 0)
		fail(job, code, "%s exited with status %d", name, code);
	else if (rk->inited && !rk->finalized && job->running > 0)
		fail(job, 1, "%s exited without MPI_Finalize", name);
	pmi_check_barrier(job);
}

/* ---- local ranks' PMI sockets -------------------------------------------------- */

void rank_reply(struct job *job, int r, const char *line)
{
	struct rank *rk = &job->ranks[r];
	char buf[LINE_MAX_PMI + 1];
	size_t len = strlen(line);
	ssize_t n;

	if (!job->opts->hosts[rk->host].local)
		return remote_reply(job, r, line);
	if (rk->fd < 0 || len >= LINE_MAX_PMI)
		return;
	memcpy(buf, line, len);
	buf[len++] = '\n';
	do
		n = send(rk->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	/* Every request gets one short reply and a client waits for it; a
	 * full socket means the rank does not read them. */
	if (n != (ssize_t)len && errno != EPIPE && errno != ECONNRESET)
		protocol_error(job, r, "it does not read its replies");
}

static void close_rank_fd(struct job *job, int r)
{
	close(job->ranks[r].fd);
	job->ranks[r].fd = -1;
	pmi_rank_left(job, r);
}

/* Handle every complete line in the rank's buffer. */
static void handle_lines(struct job *job, int r)
{
	struct rank *rk = &job->ranks[r];
	char *start = rk->buf, *nl;

	while (rk->fd >= 0 && (nl = memchr(start, '\n', rk->len - (size_t)(start - rk->buf)))) {
		*nl = '\0';
		pmi_handle_line(job, r, start);
		start = nl + 1;
	}
	rk->len -= (size_t)(start - rk->buf);
	memmove(rk->buf, start, rk->len);
	if (rk->len == sizeof(rk->buf))
		protocol_error(job, r, "a line longer than 4096 bytes");
}

/* Read what the rank sent, until it would block.  On EOF the socket is
 * closed (the rank exited, or closed PMI_FD). */
static void read_rank(struct job *job, int r)
{
	struct rank *rk = &job->ranks[r];

	while (rk->fd >= 0 && rk->len < sizeof(rk->buf)) {
		ssize_t n = recv(rk->fd, rk->buf + rk->len, sizeof(rk->buf) - rk->len,
				 MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0)
			return close_rank_fd(job, r);
		rk->len += (size_t)n;
		handle_lines(job, r);
	}
}

static int rank_of_pid(const struct job *job, pid_t pid)
{
	for (int r = 0; r < job->n; r++)
		if (job->ranks[r].pid == pid)
			return r;
	return -1;
}

static void reap(struct job *job)
{
	pid_t pid;
	int ws, r;

	while ((pid = waitpid(-1, &ws, WNOHANG)) > 0) {
		if (!WIFEXITED(ws) && !WIFSIGNALED(ws))
			continue;
		r = rank_of_pid(job, pid);
		if (r < 0) {
			remote_reaped(job, pid, ws);    /* a launch agent */
			continue;
		}
		/* What it said before dying (abort, finalize) decides how
		 * its death reads. */
		read_rank(job, r);
		job->ranks[r].pid = 0;
		rank_died(job, r, WIFSIGNALED(ws), WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws));
	}
}

static void handle_signals(struct job *job)
{
	struct signalfd_siginfo si;
	char name[32];

	while (read(job->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int sig = (int)si.ssi_signo;

		if (sig == SIGCHLD)
			continue;       /* reaped below, whatever the count */
		if (job->stopping)      /* asked twice: no more grace */
			kill_job(job);
		fail(job, 128 + sig, "caught %s", signame(sig, name, sizeof(name)));
	}
	reap(job);
}

/* ---- starting the local ranks -------------------------------------------------- */

static int start_local_rank(struct job *job, int r, int local_index)
{
	const struct opts *o = job->opts;
	const struct app *app = &o->apps[app_of_rank(o, r)];
	struct rank *rk = &job->ranks[r];
	struct launch l = {
		.host = o->have_hosts ? o->hosts[rk->host].name : NULL, .rank = r, .size = o->n, .local_index = local_index,
		.local_count = o->hosts[rk->host].nranks, .bind = o->bind,
		.path = app->path, .argv = app->argv, .wdir = o->wdir, .wdir_strict = true,
		.env = o->env, .nenv = o->nenv, .keep_stdin = r == 0, .out_fd = -1, .err_fd = -1,
	};
	int err = 0;

	if (o->tag_output && (err = tag_pipes(&job->tags, r, &l.out_fd, &l.err_fd)))
		return err;
	err = launch_rank(&l, &job->oldmask, &rk->pid, &rk->fd);
	if (l.out_fd >= 0) {
		close(l.out_fd);
		close(l.err_fd);
	}
	if (!err)
		rk->pmi_open = true;
	return err;
}

void start_local_ranks(struct job *job)
{
	const struct opts *o = job->opts;
	int next[VDRUN_MAX_HOSTS] = { 0 };

	for (int r = 0; r < job->n; r++) {
		int h = job->ranks[r].host, err = 0;

		if (!o->hosts[h].local)
			continue;
		/* Once the job stops (a remote host failed already), the
		 * ranks not started are done. */
		if (job->stopping || (err = start_local_rank(job, r, next[h]++)) != 0) {
			job->ranks[r].alive = false;
			job->running--;
		}
		if (err)
			fail(job, 1, "cannot start rank %d: %s", r, strerror(-err));
	}
}

/* ---- the event loop ------------------------------------------------------ */

/* Poll timeout while stopping: until SIGKILL time, then until giving up. */
static int stop_timeout_ms(struct job *job)
{
	long t = elapsed_ns(&job->stop_time);

	if (!job->killed && t >= TERM_GRACE_NS)
		kill_job(job);
	if (!job->killed)
		return (int)((TERM_GRACE_NS - t) / 1000000) + 1;
	return t >= KILL_WAIT_NS ? 0 : (int)((KILL_WAIT_NS - t) / 1000000) + 1;
}

/* Poll timeout while running: none, unless a barrier waits on a rank
 * that closed its PMI socket (pmi_check_barrier looks again soon). */
static int run_timeout_ms(const struct job *job)
{
	if (job->in_barrier == 0)
		return -1;
	for (int r = 0; r < job->n; r++)
		if (job->ranks[r].alive && !job->ranks[r].pmi_open && !job->ranks[r].in_barrier)
			return 50;
	return -1;
}

static int min_timeout(int a, int b)
{
	return a < 0 ? b : b < 0 ? a : a < b ? a : b;
}

struct loop {
	struct pollfd *pfd;
	int *who;               /* for the local ranks' entries: the rank */
	int *kind;              /* for the remote entries (remote.c) */
	int cap;
};

static void poll_once(struct job *job, struct loop *lp)
{
	int timeout = job->stopping ? stop_timeout_ms(job) : run_timeout_ms(job);
	int nremote, first_rank, nranks = 0, first_tag, ntag;

	timeout = min_timeout(timeout, remote_timeout_ms(job));
	lp->pfd[0] = (struct pollfd){ .fd = job->sigfd, .events = POLLIN };
	nremote = remote_pollfds(job, lp->pfd + 1, lp->cap - 1, lp->kind);
	first_rank = 1 + nremote;
	for (int r = 0; r < job->n && !job->stopping; r++) {
		if (job->ranks[r].fd < 0)
			continue;
		lp->pfd[first_rank + nranks] = (struct pollfd){ .fd = job->ranks[r].fd, .events = POLLIN };
		lp->who[nranks++] = r;
	}
	first_tag = first_rank + nranks;
	ntag = tag_pollfds(&job->tags, lp->pfd + first_tag, lp->cap - first_tag);
	if (poll(lp->pfd, (nfds_t)(first_tag + ntag), timeout) < 0 && errno != EINTR) {
		perror("vdrun: poll");
		exit(1);
	}
	/* Requests first: a rank's last words come before its death. */
	for (int i = 0; i < nranks; i++)
		if (lp->pfd[first_rank + i].revents)
			read_rank(job, lp->who[i]);
	remote_handle(job, lp->pfd + 1, nremote, lp->kind);
	tag_handle(&job->tags, lp->pfd + first_tag, ntag);
	if (lp->pfd[0].revents)
		handle_signals(job);
	if (timeout >= 0)
		pmi_check_barrier(job);
}

void serve(struct job *job)
{
	struct loop lp;

	lp.cap = 2 + MAX_PENDING + job->nproxies + job->n + job->tags.n;
	lp.pfd = calloc((size_t)lp.cap, sizeof(*lp.pfd));
	lp.who = calloc((size_t)lp.cap, sizeof(*lp.who));
	lp.kind = calloc((size_t)lp.cap, sizeof(*lp.kind));
	if (!lp.pfd || !lp.who || !lp.kind) {
		fputs("vdrun: out of memory\n", stderr);
		exit(1);
	}
	while (job->running > 0) {
		if (job->stopping && job->killed && elapsed_ns(&job->stop_time) >= KILL_WAIT_NS) {
			fprintf(stderr, "vdrun: %d rank(s) did not exit after SIGKILL\n",
				job->running);
			break;
		}
		poll_once(job, &lp);
	}
	free(lp.pfd);
	free(lp.who);
	free(lp.kind);
}
