/* SPDX-License-Identifier: MIT */
/*
 * Starting one rank, the same way in vdrun (ranks of this host) and in a
 * proxy (ranks of a remote host): a child with one end of a socketpair in
 * PMI_FD, its rank and size in PMI_RANK / PMI_SIZE, the -x variables, its
 * directory, its CPU, and death with its parent.
 *
 * --tag-output: a rank's stdout and stderr are pipes whose lines the
 * parent writes out prefixed with "[rank] ", in its own event loop (no
 * helper process that could outlive the job).  A line is kept whole up
 * to TAG_LINE_MAX, so that a long line (a dumped array, a JSON record)
 * is not cut into several tagged ones.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "vdrun.h"

/* ---- the child --------------------------------------------------------------- */

/* "vdrun: rank 3 on host B: ..." from the child, before its exec. */
static void child_says(const struct launch *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void child_says(const struct launch *l, const char *fmt, ...)
{
	char prefix[VDRUN_HOST_MAX + 64];
	va_list ap;

	if (l->host)
		snprintf(prefix, sizeof(prefix), "vdrun: rank %d on host %s: ", l->rank, l->host);
	else
		snprintf(prefix, sizeof(prefix), "vdrun: rank %d: ", l->rank);
	va_start(ap, fmt);
	say_line(prefix, "", fmt, ap);
	va_end(ap);
}

static int allowed_cpus(int *cpus, int max)
{
	cpu_set_t set;
	int n = 0;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 0;
	for (int c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

/* Binding counts ranks per host: rank 5 may be the first rank on its
 * host, and gets its first CPU -- unless hosts before it share the
 * machine and its CPUs (network namespaces, containers), whose ranks
 * vdrun counts first (remote.c). */
static void bind_rank(const struct launch *l)
{
	int cpus[CPU_SETSIZE], ncpus = allowed_cpus(cpus, CPU_SETSIZE), i;
	cpu_set_t set;

	if (ncpus == 0 || l->bind == BIND_NONE || (l->bind == BIND_DEFAULT && l->local_count > ncpus))
		return;
	i = l->local_index % ncpus;
	CPU_ZERO(&set);
	CPU_SET(cpus[i], &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		child_says(l, "cannot bind to CPU %d: %s", cpus[i], strerror(errno));
}

static void set_env_int(const char *name, long v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%ld", v);
	setenv(name, buf, 1);
}

static void set_stdio(const struct launch *l)
{
	if (!l->keep_stdin) {   /* stdin goes to rank 0 only, as with mpiexec */
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (null >= 0 && null != STDIN_FILENO)
			dup2(null, STDIN_FILENO);
	}
	if (l->out_fd >= 0)
		dup2(l->out_fd, STDOUT_FILENO);
	if (l->err_fd >= 0)
		dup2(l->err_fd, STDERR_FILENO);
}

static void exec_program(const struct launch *l)
{
	char path[PATH_MAX];
	int rc = 0;

	/* A proxy looks a bare name up in its host's PATH; vdrun already
	 * did for its own ranks (and passes a path). */
	if (strchr(l->path, '/'))
		snprintf(path, sizeof(path), "%s", l->path);
	else
		rc = resolve_in_path(l->path, path, sizeof(path));
	if (rc == 0)
		execv(path, l->argv);
	if (rc == EXIT_NOTFOUND || (rc == 0 && errno == ENOENT)) {
		child_says(l, "%s: command not found", l->path);
		_exit(EXIT_NOTFOUND);
	}
	child_says(l, "cannot execute %s: %s", l->path,
		   rc ? "not an executable file" : strerror(errno));
	_exit(EXIT_NOEXEC);
}

/* In the child: never returns. */
static void child(const struct launch *l, int fd, pid_t parent, const sigset_t *mask)
{
	/* Ranks must not outlive their parent, whatever kills it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(EXIT_NOTFOUND);
	sigprocmask(SIG_SETMASK, mask, NULL);
	signal(SIGPIPE, SIG_DFL);       /* a proxy ignores it; ranks must not */
	if (fcntl(fd, F_SETFD, 0) != 0)         /* keep PMI_FD across exec */
		_exit(EXIT_NOTFOUND);
	set_env_int("PMI_FD", fd);
	set_env_int("PMI_RANK", l->rank);
	set_env_int("PMI_SIZE", l->size);
	unsetenv("PMI_PORT");   /* another launcher's, if vdrun runs under one */
	unsetenv("PMI_ID");
	for (int i = 0; i < l->nenv; i++)
		setenv(l->env[i].name, l->env[i].value, 1);
	set_stdio(l);
	if (l->wdir && chdir(l->wdir) != 0 && l->wdir_strict) {
		child_says(l, "cannot change to directory %s: %s", l->wdir, strerror(errno));
		_exit(1);
	}
	bind_rank(l);
	exec_program(l);
}

/* Fork the rank: 0 with its pid and our end of its PMI socket, or -errno. */
int launch_rank(const struct launch *l, const sigset_t *mask, pid_t *pid, int *pmi_fd)
{
	int sv[2];
	pid_t parent = getpid();

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return -errno;
	*pid = fork();
	if (*pid < 0) {
		int err = -errno;

		close(sv[0]);
		close(sv[1]);
		return err;
	}
	if (*pid == 0) {
		close(sv[0]);
		child(l, sv[1], parent, mask);
	}
	close(sv[1]);
	*pmi_fd = sv[0];
	return 0;
}

/* ---- --tag-output ------------------------------------------------------------ */

#define TAG_LINE_START 4096     /* a pipe's first buffer; it grows with its lines */

static int tag_add(struct tagset *ts, int rank, int dest, int *write_fd)
{
	char *buf = malloc(TAG_LINE_START);
	int p[2];

	if (!buf)
		return -ENOMEM;
	if (ts->n == ts->cap) {
		int cap = ts->cap ? ts->cap * 2 : 16;
		struct tagout *t = realloc(ts->t, (size_t)cap * sizeof(*t));

		if (!t) {
			free(buf);
			return -ENOMEM;
		}
		ts->t = t;
		ts->cap = cap;
	}
	if (pipe2(p, O_CLOEXEC) != 0) {
		int err = -errno;

		free(buf);
		return err;
	}
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	ts->t[ts->n++] = (struct tagout){ .fd = p[0], .rank = rank, .dest = dest,
					  .buf = buf, .cap = TAG_LINE_START };
	*write_fd = p[1];
	return 0;
}

/* Pipes for the rank's stdout and stderr; the caller gives the write ends
 * to the rank and closes them after the fork. */
int tag_pipes(struct tagset *ts, int rank, int *out_fd, int *err_fd)
{
	int err = tag_add(ts, rank, STDOUT_FILENO, out_fd);

	if (err)
		return err;
	err = tag_add(ts, rank, STDERR_FILENO, err_fd);
	if (err)
		close(*out_fd);
	return err;
}

static void write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;         /* our own output is gone: nothing to do */
		p += n;
		len -= (size_t)n;
	}
}

/* One line out, with its prefix, in one write: lines of two ranks do not
 * mix. */
static void tag_emit(const struct tagout *t, const char *line, size_t len)
{
	char pre[32];
	int plen = snprintf(pre, sizeof(pre), "[%d] ", t->rank);
	struct iovec iov[3] = {
		{ .iov_base = pre, .iov_len = (size_t)plen },
		{ .iov_base = (char *)line, .iov_len = len },
		{ .iov_base = "\n", .iov_len = 1 },
	};
	size_t total = (size_t)plen + len + 1;
	ssize_t n;

	do
		n = writev(t->dest, iov, 3);
	while (n < 0 && errno == EINTR);
	if (n < 0 || (size_t)n == total)
		return;         /* done, or our own output is gone */
	/* A short write (a full non-blocking pipe, a signal): the rest in
	 * order, still before any other line. */
	for (int i = 0; i < 3; i++) {
		size_t skip = (size_t)n < iov[i].iov_len ? (size_t)n : iov[i].iov_len;

		n -= (ssize_t)skip;
		write_all(t->dest, (const char *)iov[i].iov_base + skip, iov[i].iov_len - skip);
	}
}

/* Room for more of the line: the buffer doubles, up to TAG_LINE_MAX. */
static int tag_grow(struct tagout *t)
{
	size_t cap = t->cap * 2;
	char *buf;

	if (t->cap >= TAG_LINE_MAX)
		return -1;
	if (cap > TAG_LINE_MAX)
		cap = TAG_LINE_MAX;
	if (!(buf = realloc(t->buf, cap)))
		return -1;
	t->buf = buf;
	t->cap = cap;
	return 0;
}

/* The complete lines read so far, out; the unfinished one moves to the
 * front of the buffer. */
static void tag_lines(struct tagout *t)
{
	char *start = t->buf, *nl;

	while ((nl = memchr(t->buf + t->scanned, '\n', t->len - t->scanned))) {
		tag_emit(t, start, (size_t)(nl - start));
		start = nl + 1;
		t->scanned = (size_t)(start - t->buf);
	}
	t->len -= (size_t)(start - t->buf);
	memmove(t->buf, start, t->len);
	t->scanned = t->len;
	/* Back to the first size once a long line is out: a pipe keeps 1 MiB
	 * only while it holds a line that long. */
	if (t->cap > TAG_LINE_START && t->len < TAG_LINE_START) {
		char *buf = realloc(t->buf, TAG_LINE_START);

		if (buf) {
			t->buf = buf;
			t->cap = TAG_LINE_START;
		}
	}
}

static void tag_read(struct tagout *t)
{
	for (;;) {
		ssize_t n;

		/* A line that fills TAG_LINE_MAX (or no memory for more):
		 * what we have goes out as a piece of it. */
		if (t->len == t->cap && tag_grow(t) != 0) {
			tag_emit(t, t->buf, t->len);
			t->len = t->scanned = 0;
		}
		n = read(t->fd, t->buf + t->len, t->cap - t->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {   /* EOF: the last, unfinished line too */
			if (t->len)
				tag_emit(t, t->buf, t->len);
			t->len = t->scanned = 0;
			close(t->fd);
			t->fd = -1;
			return;
		}
		t->len += (size_t)n;
		tag_lines(t);
	}
}

/* The open pipes, in the order of ts->t (tag_handle walks both alike). */
int tag_pollfds(const struct tagset *ts, struct pollfd *pfd, int max)
{
	int n = 0;

	for (int i = 0; i < ts->n && n < max; i++)
		if (ts->t[i].fd >= 0)
			pfd[n++] = (struct pollfd){ .fd = ts->t[i].fd, .events = POLLIN };
	return n;
}

void tag_handle(struct tagset *ts, const struct pollfd *pfd, int npfd)
{
	int k = 0;

	for (int i = 0; i < ts->n && k < npfd; i++) {
		if (ts->t[i].fd < 0)
			continue;
		if (pfd[k++].revents)
			tag_read(&ts->t[i]);
	}
}

/* After the ranks: what they wrote last, until every pipe is closed (a
 * rank's child may hold one) or the time is up. */
void tag_drain(struct tagset *ts, int timeout_ms)
{
	struct pollfd *pfd = calloc((size_t)ts->n + 1, sizeof(*pfd));
	struct timespec t0;
	int n;

	if (!pfd)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((n = tag_pollfds(ts, pfd, ts->n)) > 0) {
		long left = timeout_ms - elapsed_ns(&t0) / 1000000;

		if (left <= 0 || poll(pfd, (nfds_t)n, (int)left) <= 0)
			break;
		tag_handle(ts, pfd, n);
	}
	free(pfd);
}

void tag_free(struct tagset *ts)
{
	for (int i = 0; i < ts->n; i++) {
		if (ts->t[i].fd >= 0)
			close(ts->t[i].fd);
		free(ts->t[i].buf);
	}
	free(ts->t);
	ts->t = NULL;
	ts->n = ts->cap = 0;
}
