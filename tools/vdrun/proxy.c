/* SPDX-License-Identifier: MIT */
/*
 * "vdrun --proxy": vdrun's stand-in on a remote host, started there by
 * the launch agent.  It reads on stdin where vdrun listens and the job's
 * cookie, connects back, receives the job (remote.c has the protocol),
 * starts its host's ranks exactly as vdrun starts its own (launch.c), and
 * relays their PMI lines both ways, tagged with the rank.  It reports
 * each rank's exit status or signal.
 *
 * It stops its ranks (SIGTERM, then SIGKILL 0.5 s later) when vdrun says
 * so, when the connection to vdrun drops (vdrun died, or the network),
 * or when it is itself told to stop; and its ranks die with it
 * (PR_SET_PDEATHSIG).  It exits once its ranks are gone.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vdrun.h"

#define JOB_LINE_MAX (1u << 20)         /* an argument or variable, encoded */
#define PROXY_MAX_ENV 4096

struct prank {
	int rank;
	pid_t pid;              /* 0 once reaped */
	int fd;                 /* its PMI socket, -1 once closed */
	int app, index, count;
	size_t len;
	char buf[LINE_MAX_PMI];
};

struct papp {
	char *path;
	char **argv;
	int argc;
};

static struct {
	int fd;                 /* to vdrun, -1 once lost */
	struct inbuf in;
	struct outbuf out;
	char host[VDRUN_HOST_MAX];
	int size;
	enum bind_mode bind;
	bool tag, strict;
	char *wdir;
	struct envvar env[PROXY_MAX_ENV];
	int nenv;
	struct papp apps[VDRUN_MAX_APPS];
	struct prank *ranks;
	int n, running;
	int sigfd;
	sigset_t oldmask;
	bool stopping, killed;
	struct timespec stop_time;
	struct tagset tags;
} P = { .fd = -1, .host = "?" };

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char prefix[VDRUN_HOST_MAX + 32];
	va_list ap;

	snprintf(prefix, sizeof(prefix), "vdrun proxy on %s: ", P.host);
	va_start(ap, fmt);
	say_line(prefix, "", fmt, ap);
	va_end(ap);
}

/* ---- start: stdin, connect, the job ------------------------------------------ */

/* Read one line from fd within timeout_ms; the line without '\n'. */
static int read_line_timed(int fd, char *buf, size_t len, int timeout_ms)
{
	struct timespec t0;
	size_t n = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (n + 1 < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long left = timeout_ms - elapsed_ns(&t0) / 1000000;
		ssize_t k;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		k = read(fd, buf + n, 1);       /* bytewise: nothing past the line */
		if (k <= 0)
			return k < 0 && errno == EINTR ? 0 : -EIO;
		if (buf[n] == '\n') {
			buf[n] = '\0';
			return 0;
		}
		n++;
	}
	return -E2BIG;
}

static int connect_timed(const char *addr, const char *port, int timeout_ms)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *a;
	int fd = -1, err = -EHOSTUNREACH;

	if (getaddrinfo(addr, port, &hints, &res) != 0)
		return -EHOSTUNREACH;
	for (a = res; a && fd < 0; a = a->ai_next) {
		struct pollfd pfd;
		socklen_t sl = sizeof(int);
		int soerr = 0;

		fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno == EINPROGRESS) {
			pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
			if (poll(&pfd, 1, timeout_ms) != 1 ||
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
				soerr = ETIMEDOUT;
		} else if (errno != 0 && errno != EINPROGRESS) {
			soerr = errno;
		}
		if (soerr) {
			err = -soerr;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	return fd >= 0 ? fd : err;
}

/* "vdrun-proxy 3 HOST-INDEX HOST ADDR PORT COOKIE TIMEOUT LINK-TIMEOUT" on
 * stdin (version 1: without LINK-TIMEOUT; before 3, vdrun reads no
 * machine id in the hello), then
 * connect and say hello.  The fd, or -1 (said why).  The connection gets
 * two thirds of vdrun's time, so that our reason is heard before vdrun
 * gives up on this host. */
static int bootstrap(long *timeout_s)
{
	char line[2048], *w[10];
	long h, port, t, link = LINK_TIMEOUT_S;
	int fd, null, nw = -1, want = 0;        /* words version 1, 2 or 3 has */
	bool says_boot = false;

	if (read_line_timed(STDIN_FILENO, line, sizeof(line), (int)*timeout_s * 1000) == 0 &&
	    (nw = wire_words(line, w, 10)) >= 2 && strcmp(w[0], "vdrun-proxy") == 0) {
		says_boot = !strcmp(w[1], "3");
		want = !strcmp(w[1], "1") ? 8 : !strcmp(w[1], "2") || says_boot ? 9 : 0;
		if (!want) {
			say("vdrun on the first host speaks version %.16s; this one speaks 1 to 3: "
			    "run the same viaduct on every host", w[1]);
			return -1;
		}
	}
	if (!want || nw != want || !wire_int(w[2], 0, VDRUN_MAX_HOSTS - 1, &h) ||
	    wire_decode(w[3], P.host, sizeof(P.host)) != 0 || !wire_int(w[5], 1, 65535, &port) ||
	    strlen(w[6]) != 32 || !wire_int(w[7], 1, 86400, &t) ||
	    (nw == 9 && !wire_int(w[8], 2, 3600, &link))) {
		say("no job on stdin (vdrun --proxy is started by vdrun)");
		return -1;
	}
	*timeout_s = t;
	null = open("/dev/null", O_RDONLY);     /* the ranks' stdin */
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		close(null);
	}
	fd = connect_timed(w[4], w[5], (int)(t * 2000 / 3));
	if (fd < 0) {
		say("cannot connect back to vdrun at %s port %s: %s", w[4], w[5], strerror(-fd));
		return -1;
	}
	tcp_tune(fd, link);
	char cpus[CPUS_ID_MAX] = "";
	if (says_boot)
		cpus_id(cpus, sizeof(cpus));
	outbuf_add(&P.out, "hello 1 %ld %s%s%s\n", h, w[6], says_boot ? " " : "", cpus);
	return fd;
}

static int add_arg(struct papp *a, const char *word)
{
	char **v = realloc(a->argv, (size_t)(a->argc + 2) * sizeof(*v));

	if (!v)
		return -1;
	a->argv = v;
	if (!(v[a->argc] = strdup(word)))
		return -1;
	v[++a->argc] = NULL;
	return 0;
}

/* A word of the job, decoded into a new string (a decoded word is never
 * longer than its encoding), or NULL. */
static char *decoded(const char *w)
{
	size_t len = strlen(w) + 1;
	char *s = malloc(len);

	if (s && wire_decode(w, s, len) != 0) {
		free(s);
		s = NULL;
	}
	return s;
}

/* job SIZE BIND TAG WDIR STRICT HOST: once, first. */
static int job_header(char **w)
{
	long size, bind, tag, strict;
	char *host;

	if (P.ranks || !wire_int(w[1], 1, VDRUN_MAX_RANKS, &size) ||
	    !wire_int(w[2], BIND_DEFAULT, BIND_NONE, &bind) || !wire_int(w[3], 0, 1, &tag) ||
	    !wire_int(w[5], 0, 1, &strict) || !(P.wdir = decoded(w[4])) || !(host = decoded(w[6])))
		return -1;
	snprintf(P.host, sizeof(P.host), "%s", host);
	free(host);
	P.size = (int)size, P.bind = (enum bind_mode)bind, P.tag = tag, P.strict = strict;
	P.ranks = calloc((size_t)P.size, sizeof(*P.ranks));
	return P.ranks ? 0 : -1;
}

/* env NAME VALUE */
static int job_env(char **w)
{
	struct envvar *e = &P.env[P.nenv];

	if (P.nenv == PROXY_MAX_ENV)
		return -1;
	P.nenv++;       /* counted at once: freed at the end, whole or not */
	e->name = decoded(w[1]);
	e->value = decoded(w[2]);
	return e->name && e->value ? 0 : -1;
}

/* app A PATH (once per context) or arg A WORD (its argv, in order) */
static int job_app(char **w)
{
	long a;
	char *v;
	int rc = -1;

	if (!wire_int(w[1], 0, VDRUN_MAX_APPS - 1, &a) || !(v = decoded(w[2])))
		return -1;
	if (strcmp(w[0], "app") == 0 && !P.apps[a].path) {
		P.apps[a].path = v;
		return 0;
	}
	if (strcmp(w[0], "arg") == 0)
		rc = add_arg(&P.apps[a], v);
	free(v);
	return rc;
}

/* rank RANK APP INDEX COUNT: one of this host's ranks, of a known app. */
static int job_rank(char **w)
{
	long r, a, index, count;

	if (!P.ranks || P.n == P.size || !wire_int(w[1], 0, P.size - 1, &r) ||
	    !wire_int(w[2], 0, VDRUN_MAX_APPS - 1, &a) || !wire_int(w[3], 0, P.size - 1, &index) ||
	    !wire_int(w[4], 1, P.size, &count) || !P.apps[a].path || P.apps[a].argc == 0)
		return -1;
	P.ranks[P.n++] = (struct prank){ .rank = (int)r, .fd = -1, .app = (int)a,
					 .index = (int)index, .count = (int)count };
	return 0;
}

/* One line of the job; 1 at "go", 0 for more, -1 if malformed. */
static int job_line(char *line)
{
	char *w[8];
	int n = wire_words(line, w, 8);

	if (n == 1 && strcmp(w[0], "go") == 0)
		return P.n > 0 ? 1 : -1;
	if (n == 7 && strcmp(w[0], "job") == 0)
		return job_header(w);
	if (n == 3 && strcmp(w[0], "env") == 0)
		return job_env(w);
	if (n == 3 && (strcmp(w[0], "app") == 0 || strcmp(w[0], "arg") == 0))
		return job_app(w);
	if (n == 5 && strcmp(w[0], "rank") == 0)
		return job_rank(w);
	return -1;
}

/* Read the job until "go", within the time limit. */
static int receive_job(long timeout_s)
{
	struct timespec t0;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (rc == 0) {
		struct pollfd pfd = { .fd = P.fd, .events = POLLIN | (P.out.len ? POLLOUT : 0) };
		long left = timeout_s * 1000 - elapsed_ns(&t0) / 1000000;
		size_t pos = 0;
		char *line;
		int n;

		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		if ((pfd.revents & POLLOUT) && outbuf_flush(P.fd, &P.out) != 0)
			return -EPIPE;
		if (!(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if ((n = inbuf_read(P.fd, &P.in)) == -EAGAIN)
			continue;
		if (n <= 0)
			return n == 0 ? -ECONNRESET : n;
		while (rc == 0 && (line = inbuf_line(&P.in, &pos)))
			rc = job_line(line);
		inbuf_consume(&P.in, pos);
	}
	return rc < 0 ? -EPROTO : 0;
}

/* ---- ranks --------------------------------------------------------------------- */

static void start_ranks(void)
{
	for (int i = 0; i < P.n && !P.stopping; i++) {
		struct prank *pr = &P.ranks[i];
		struct papp *app = &P.apps[pr->app];
		struct launch l = {
			.host = P.host, .rank = pr->rank, .size = P.size, .local_index = pr->index,
			.local_count = pr->count, .bind = P.bind, .path = app->path,
			.argv = app->argv, .wdir = P.wdir, .wdir_strict = P.strict,
			.env = P.env, .nenv = P.nenv, .out_fd = -1, .err_fd = -1,
		};
		int err = 0;

		if (P.tag)
			err = tag_pipes(&P.tags, pr->rank, &l.out_fd, &l.err_fd);
		if (!err)
			err = launch_rank(&l, &P.oldmask, &pr->pid, &pr->fd);
		if (l.out_fd >= 0) {
			close(l.out_fd);
			close(l.err_fd);
		}
		if (err) {      /* reported as its exit: the job stops */
			say("cannot start rank %d: %s", pr->rank, strerror(-err));
			outbuf_add(&P.out, "exit %d %d\n", pr->rank, EXIT_NOEXEC);
			continue;
		}
		P.running++;
	}
}

static void signal_ranks(int sig)
{
	for (int i = 0; i < P.n; i++)
		if (P.ranks[i].pid > 0)
			kill(P.ranks[i].pid, sig);
}

static void stop_ranks(void)
{
	if (P.stopping)
		return;
	P.stopping = true;
	clock_gettime(CLOCK_MONOTONIC, &P.stop_time);
	signal_ranks(SIGTERM);
}

static void lost(void)
{
	if (P.running > 0 && !P.stopping)
		say("lost the connection to vdrun; stopping %d rank(s)", P.running);
	if (P.fd >= 0)
		close(P.fd);
	P.fd = -1;
	stop_ranks();
}

/* A rank's lines go to vdrun, tagged with the rank. */
static void close_rank(struct prank *pr, const char *why)
{
	outbuf_add(&P.out, "%s %d\n", why, pr->rank);
	close(pr->fd);
	pr->fd = -1;
}

/* A rank's lines go to vdrun, tagged with the rank; vdrun judges them.
 * A line longer than vdrun accepts ends the rank's PMI here. */
static void read_rank(struct prank *pr)
{
	while (pr->fd >= 0) {
		ssize_t n = recv(pr->fd, pr->buf + pr->len, sizeof(pr->buf) - pr->len, MSG_DONTWAIT);
		char *start = pr->buf, *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0)
			return close_rank(pr, "eof");
		pr->len += (size_t)n;
		while ((nl = memchr(start, '\n', pr->len - (size_t)(start - pr->buf)))) {
			*nl = '\0';
			outbuf_add(&P.out, "pmi %d %s\n", pr->rank, start);
			start = nl + 1;
		}
		pr->len -= (size_t)(start - pr->buf);
		memmove(pr->buf, start, pr->len);
		if (pr->len == sizeof(pr->buf))
			return close_rank(pr, "long");
	}
}

static struct prank *find_rank(const char *s)
{
	long r;

	if (!wire_int(s, 0, P.size - 1, &r))
		return NULL;
	for (int i = 0; i < P.n; i++)
		if (P.ranks[i].rank == r)
			return &P.ranks[i];
	return NULL;
}

/* A line from vdrun: a reply for a rank, or stop / kill. */
static int vdrun_line(char *line)
{
	char *rest, buf[LINE_MAX_PMI + 1];
	struct prank *pr;
	size_t len;

	if (strcmp(line, "stop") == 0) {
		stop_ranks();
		return 0;
	}
	if (strcmp(line, "kill") == 0) {
		stop_ranks();
		signal_ranks(SIGKILL);
		P.killed = true;
		return 0;
	}
	if (strncmp(line, "pmi ", 4) != 0 || !(rest = strchr(line + 4, ' ')))
		return -1;
	*rest++ = '\0';
	if (!(pr = find_rank(line + 4)) || (len = strlen(rest)) >= LINE_MAX_PMI)
		return -1;
	if (pr->fd < 0)
		return 0;
	memcpy(buf, rest, len);
	buf[len++] = '\n';
	/* Every request gets one short reply and a client waits for it; a
	 * full socket means the rank does not read them: vdrun is told. */
	if (send(pr->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT) != (ssize_t)len &&
	    errno != EPIPE && errno != ECONNRESET)
		outbuf_add(&P.out, "deaf %d\n", pr->rank);
	return 0;
}

static void read_vdrun(void)
{
	int n;

	while (P.fd >= 0 && (n = inbuf_read(P.fd, &P.in)) != -EAGAIN) {
		size_t pos = 0;
		char *line;

		if (n <= 0)
			return lost();
		while ((line = inbuf_line(&P.in, &pos)))
			if (vdrun_line(line) != 0) {
				say("vdrun sent a malformed line; stopping the ranks");
				return lost();
			}
		inbuf_consume(&P.in, pos);
	}
}

static void reap(void)
{
	pid_t pid;
	int ws;

	while ((pid = waitpid(-1, &ws, WNOHANG)) > 0) {
		for (int i = 0; i < P.n; i++) {
			struct prank *pr = &P.ranks[i];

			if (pr->pid != pid || (!WIFEXITED(ws) && !WIFSIGNALED(ws)))
				continue;
			read_rank(pr);  /* its last words before its death */
			pr->pid = 0;
			P.running--;
			if (WIFSIGNALED(ws))
				outbuf_add(&P.out, "signal %d %d\n", pr->rank, WTERMSIG(ws));
			else
				outbuf_add(&P.out, "exit %d %d\n", pr->rank, WEXITSTATUS(ws));
		}
	}
}

static void handle_signals(void)
{
	struct signalfd_siginfo si;

	while (read(P.sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (si.ssi_signo != SIGCHLD)
			stop_ranks();   /* the agent's session ends: so do we */
	reap();
}

/* ---- the loop -------------------------------------------------------------------- */

static int timeout_ms(void)
{
	long t;

	if (!P.stopping)
		return -1;
	t = elapsed_ns(&P.stop_time);
	if (!P.killed && t >= TERM_GRACE_NS) {
		signal_ranks(SIGKILL);
		P.killed = true;
	}
	if (!P.killed)
		return (int)((TERM_GRACE_NS - t) / 1000000) + 1;
	return 100;
}

static void loop_once(struct pollfd *pfd, int cap)
{
	int n = 1, first_rank, first_tag, ntag, timeout = timeout_ms();

	pfd[0] = (struct pollfd){ .fd = P.sigfd, .events = POLLIN };
	if (P.fd >= 0)
		pfd[n++] = (struct pollfd){ .fd = P.fd, .events = POLLIN | (P.out.len ? POLLOUT : 0) };
	first_rank = n;
	for (int i = 0; i < P.n; i++)
		pfd[n++] = (struct pollfd){ .fd = P.ranks[i].fd, .events = POLLIN };  /* -1: skipped */
	first_tag = n;
	ntag = tag_pollfds(&P.tags, pfd + n, cap - n);
	if (poll(pfd, (nfds_t)(first_tag + ntag), timeout) < 0 && errno != EINTR)
		return lost();
	for (int i = 0; i < P.n; i++)
		if (pfd[first_rank + i].revents)
			read_rank(&P.ranks[i]);
	if (first_rank > 1 && pfd[1].revents)
		read_vdrun();
	tag_handle(&P.tags, pfd + first_tag, ntag);
	if (pfd[0].revents)
		handle_signals();
	if (P.fd >= 0 && P.out.len && outbuf_flush(P.fd, &P.out) != 0)
		lost();
}

/* The last reports: flushed within 2 s, or given up. */
static void flush_out(void)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (P.fd >= 0 && P.out.len && elapsed_ns(&t0) < 2000000000L) {
		struct pollfd pfd = { .fd = P.fd, .events = POLLOUT };

		if (poll(&pfd, 1, 100) < 0 || outbuf_flush(P.fd, &P.out) != 0)
			break;
	}
}

static int setup_signals(void)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, &P.oldmask) != 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);       /* a gone stdout is no reason to die */
	return P.sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int proxy_main(void)
{
	const char *v = getenv("VIADUCT_VDRUN_TIMEOUT");
	long timeout_s = CONNECT_TIMEOUT_S;
	struct pollfd *pfd;
	int err, cap;

	if (v && !wire_int(v, 1, 86400, &timeout_s))
		timeout_s = CONNECT_TIMEOUT_S;
	if (inbuf_init(&P.in, JOB_LINE_MAX) != 0 || setup_signals() < 0)
		return 1;
	if ((P.fd = bootstrap(&timeout_s)) < 0)
		return 1;
	if ((err = receive_job(timeout_s)) != 0) {
		say("no job from vdrun: %s", strerror(-err));
		return 1;
	}
	start_ranks();
	cap = 2 + P.n + 2 * P.n;
	if (!(pfd = calloc((size_t)cap, sizeof(*pfd))))
		return 1;
	while (P.running > 0) {
		if (P.killed && elapsed_ns(&P.stop_time) >= KILL_WAIT_NS)
			break;  /* we exit; PR_SET_PDEATHSIG takes the rest */
		loop_once(pfd, cap);
	}
	tag_drain(&P.tags, 1000);
	flush_out();
	free(pfd);
	return 0;
}
