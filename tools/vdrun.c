/* SPDX-License-Identifier: MIT */
/*
 * vdrun: start an MPI job of N ranks on this machine.
 *
 *   vdrun -n N [--bind-to core|none] prog args...
 *   vdrun -n N prog args : -n M prog2 args2 ...      (MPMD, as mpiexec)
 *
 * The ranks are vdrun's own children (a rank may only touch the memory of
 * its job: the permission model of the MPICH-PM/CLUMP paper).  Each gets one end of a
 * socketpair in PMI_FD, and PMI_RANK / PMI_SIZE, and vdrun serves the PMI-1
 * wire protocol on the other ends (the same lines MPICH's Hydra speaks, so
 * the ranks also start under mpiexec.hydra): a key-value space per job,
 * barriers across all ranks, abort.
 *
 * Job control: the first rank that exits non-zero, is killed by a signal,
 * calls MPI_Abort, breaks the protocol, or exits without MPI_Finalize while
 * others still run, is named on stderr; the others get SIGTERM, then
 * SIGKILL 0.5 s later, and vdrun exits with that rank's status (128+signal
 * for a signal).  Ranks die with vdrun (PR_SET_PDEATHSIG).  vdrun creates
 * no files.
 *
 * Exit status: 0 if every rank exited 0; the failing rank's status; 2 for
 * a usage error; 126/127 when the program is not executable / not found
 * (as shells do); 128+signal if vdrun itself was interrupted.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VDRUN_MAX_RANKS 4096
#define LINE_MAX_PMI 4096       /* longest request line we accept */
#define MAX_ATTRS 16
#define KEY_MAX 64              /* PMI limits, including the NUL */
#define VAL_MAX 1024
#define KVSNAME_MAX 256
#define KVS_MAX_ENTRIES 65536   /* bounds a runaway rank's memory use */
#define TERM_GRACE_NS 500000000L        /* SIGTERM -> SIGKILL */
#define KILL_WAIT_NS 3000000000L        /* SIGTERM -> give up waiting */
/* A rank that closed its PMI socket usually is exiting: its death, not
 * the closing, names the cause, unless it lives on this long. */
#define EOF_GRACE_NS 1000000000L

#define EXIT_USAGE 2
#define EXIT_NOEXEC 126
#define EXIT_NOTFOUND 127

enum bind_mode { BIND_DEFAULT, BIND_CORE, BIND_NONE };

/* Application contexts of an MPMD command line ("... : ..."). */
#define VDRUN_MAX_APPS 64

struct app {
	int n;                  /* ranks of this context */
	int first;              /* its first rank */
	char path[PATH_MAX];    /* the program, resolved through PATH */
	char **argv;            /* as typed: argv[0] is the user's word */
};

struct opts {
	int n;                  /* ranks of the whole job */
	enum bind_mode bind;
	int napps;
	struct app apps[VDRUN_MAX_APPS];
};

struct rank {
	pid_t pid;              /* 0 once reaped */
	int fd;                 /* our end of its PMI socket, -1 once closed */
	bool inited, finalized, in_barrier;
	struct timespec eof_time;       /* when fd was closed */
	size_t len;
	char buf[LINE_MAX_PMI];
};

struct kv {
	char *key, *val;
};

struct job {
	const struct opts *opts;
	int n, running;
	struct rank *ranks;
	char kvsname[64];
	int in_barrier;         /* ranks waiting in the current barrier */
	struct kv *kvs;
	size_t nkvs, cap;
	int sigfd;
	bool stopping, killed;
	struct timespec stop_time;
	int status;             /* vdrun's exit status */
};

struct attrs {
	int n;
	const char *key[MAX_ATTRS], *val[MAX_ATTRS];
};

/* ---- messages ------------------------------------------------------------ */

static void usage(FILE *f)
{
	fputs("usage: vdrun -n N [--bind-to core|none] program [args...]\n"
	      "       vdrun -n N program [args...] : -n M program2 [args...] ...\n"
	      "  -n, -np N          start N ranks (1 to 4096 in the whole job)\n"
	      "  :                  separates application contexts (MPMD): each has\n"
	      "                     its own -n and program, ranks are numbered in\n"
	      "                     order, MPI_COMM_WORLD spans them all\n"
	      "  --bind-to core     pin rank r to the r-th allowed CPU (modulo their number;\n"
	      "                     the default when N <= the number of allowed CPUs)\n"
	      "  --bind-to none     do not pin (the default for more ranks than CPUs)\n"
	      "  -h, --help         this text\n", f);
}

static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("vdrun: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n", stderr);
	usage(stderr);
	exit(EXIT_USAGE);
}

static const char *signame(int sig, char *buf, size_t len)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "signal %d", sig);
	return buf;
}

/* ---- time ---------------------------------------------------------------- */

static long elapsed_ns(const struct timespec *since)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - since->tv_sec) * 1000000000L + (now.tv_nsec - since->tv_nsec);
}

/* ---- argument parsing ---------------------------------------------------- */

static int parse_count(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = s ? strtol(s, &end, 10) : 0;
	if (!s || !*s || errno || *end || v < 1 || v > VDRUN_MAX_RANKS)
		usage_error("-n: '%s' is not a number of ranks between 1 and %d",
			    s ? s : "", VDRUN_MAX_RANKS);
	return (int)v;
}

static enum bind_mode parse_bind(const char *s)
{
	if (s && strcmp(s, "core") == 0)
		return BIND_CORE;
	if (s && strcmp(s, "none") == 0)
		return BIND_NONE;
	usage_error("--bind-to: '%s' is neither 'core' nor 'none'", s ? s : "");
}

/* The value of option argv[*i]: "--opt=v" or "--opt v". */
static const char *opt_value(int argc, char **argv, int *i, const char *eq)
{
	if (eq)
		return eq + 1;
	if (*i + 1 >= argc)
		usage_error("%s needs a value", argv[*i]);
	return argv[++*i];
}

/* Options of one context, from argv[start] up to its program name; returns
 * the program's index.  --bind-to applies to the whole job. */
static int parse_options(int argc, char **argv, int start, struct opts *o, struct app *app)
{
	int i;

	for (i = start; i < argc && argv[i] && argv[i][0] == '-'; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');
		size_t len = eq ? (size_t)(eq - a) : strlen(a);

		if (strcmp(a, "--") == 0)
			return i + 1;
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			exit(0);
		}
		if ((len == 2 && !strncmp(a, "-n", 2)) || (len == 3 && !strncmp(a, "-np", 3)) ||
		    (len == 4 && !strncmp(a, "--np", 4)))
			app->n = parse_count(opt_value(argc, argv, &i, eq));
		else if (len == 9 && !strncmp(a, "--bind-to", 9))
			o->bind = parse_bind(opt_value(argc, argv, &i, eq));
		else
			usage_error("unknown option '%s'", a);
	}
	return i;
}

/* PATH lookup as a shell does: a name with a slash is used as is. */
static int find_in_path(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	bool seen = false;

	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path;; p++) {
		const char *colon = strchrnul(p, ':');
		int dirlen = (int)(colon - p);
		struct stat st;

		if (snprintf(out, len, "%.*s/%s", dirlen ? dirlen : 1, dirlen ? p : ".",
			     name) < (int)len && stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			seen = true;
		}
		if (!*colon)
			break;
		p = colon;
	}
	return seen ? EXIT_NOEXEC : EXIT_NOTFOUND;
}

static void resolve_program(const char *name, char *out, size_t len)
{
	struct stat st;
	int rc;

	if (strchr(name, '/')) {
		if (snprintf(out, len, "%s", name) >= (int)len || stat(name, &st) != 0) {
			fprintf(stderr, "vdrun: %s: %s\n", name, strerror(errno ? errno : ENAMETOOLONG));
			exit(EXIT_NOTFOUND);
		}
		rc = !S_ISREG(st.st_mode) || access(name, X_OK) != 0 ? EXIT_NOEXEC : 0;
	} else {
		rc = find_in_path(name, out, len);
	}
	if (rc == EXIT_NOTFOUND)
		fprintf(stderr, "vdrun: %s: command not found\n", name);
	else if (rc == EXIT_NOEXEC)
		fprintf(stderr, "vdrun: %s: not an executable file\n", name);
	if (rc)
		exit(rc);
}

/* One application context from argv[start]; returns the index after its
 * ":" (argc at the end).  The ":" becomes the NULL that ends its argv. */
static int parse_app(int argc, char **argv, int start, struct opts *o)
{
	struct app *app;
	int prog, end;

	if (o->napps == VDRUN_MAX_APPS)
		usage_error("more than %d application contexts", VDRUN_MAX_APPS);
	app = &o->apps[o->napps];
	prog = parse_options(argc, argv, start, o, app);
	if (app->n == 0)
		usage_error("context %d: the number of ranks is missing (-n N)", o->napps + 1);
	if (prog >= argc || !argv[prog] || strcmp(argv[prog], ":") == 0)
		usage_error("context %d: the program to run is missing", o->napps + 1);
	for (end = prog; end < argc && strcmp(argv[end], ":") != 0; end++)
		;
	if (end < argc && end + 1 == argc)
		usage_error("nothing follows the last ':'");
	if (end < argc)
		argv[end] = NULL;
	app->argv = &argv[prog];
	app->first = o->n;
	if (o->n + app->n > VDRUN_MAX_RANKS)
		usage_error("more than %d ranks in the whole job", VDRUN_MAX_RANKS);
	o->n += app->n;
	o->napps++;
	resolve_program(argv[prog], app->path, sizeof(app->path));
	return end < argc ? end + 1 : argc;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	memset(o, 0, sizeof(*o));
	for (int i = 1; i < argc;)
		i = parse_app(argc, argv, i, o);
	if (o->napps == 0)
		usage_error("the number of ranks is missing (-n N)");
}

/* The context rank r belongs to. */
static int app_of_rank(const struct opts *o, int r)
{
	int a = 0;

	while (a + 1 < o->napps && r >= o->apps[a + 1].first)
		a++;
	return a;
}

/* ---- the job's key-value space ------------------------------------------- */

static struct kv *kvs_find(struct job *job, const char *key)
{
	for (size_t i = 0; i < job->nkvs; i++)
		if (strcmp(job->kvs[i].key, key) == 0)
			return &job->kvs[i];
	return NULL;
}

/* 0, or -1 when full or out of memory. */
static int kvs_put(struct job *job, const char *key, const char *val)
{
	struct kv *kv = kvs_find(job, key);
	char *v = strdup(val);

	if (!v)
		return -1;
	if (kv) {               /* a later put of a key replaces the value */
		free(kv->val);
		kv->val = v;
		return 0;
	}
	if (job->nkvs == job->cap) {
		size_t cap = job->cap ? job->cap * 2 : 64;
		struct kv *n = cap <= KVS_MAX_ENTRIES ? realloc(job->kvs, cap * sizeof(*n)) : NULL;

		if (!n) {
			free(v);
			return -1;
		}
		job->kvs = n;
		job->cap = cap;
	}
	job->kvs[job->nkvs].key = strdup(key);
	if (!job->kvs[job->nkvs].key) {
		free(v);
		return -1;
	}
	job->kvs[job->nkvs++].val = v;
	return 0;
}

static void kvs_free(struct job *job)
{
	for (size_t i = 0; i < job->nkvs; i++) {
		free(job->kvs[i].key);
		free(job->kvs[i].val);
	}
	free(job->kvs);
}

/* ---- stopping the job ---------------------------------------------------- */

static void signal_ranks(struct job *job, int sig)
{
	for (int r = 0; r < job->n; r++)
		if (job->ranks[r].pid > 0)
			kill(job->ranks[r].pid, sig);
}

static void stop_job(struct job *job)
{
	if (job->stopping)
		return;
	job->stopping = true;
	clock_gettime(CLOCK_MONOTONIC, &job->stop_time);
	signal_ranks(job, SIGTERM);
}

/* The first failure names its cause and sets the exit status; later ones
 * are consequences of stopping the job and stay quiet. */
static void fail(struct job *job, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(struct job *job, int status, const char *fmt, ...)
{
	va_list ap;

	if (job->stopping)
		return;
	fputs("vdrun: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("; stopping the job\n", stderr);
	job->status = status ? status : 1;
	stop_job(job);
}

static void protocol_error(struct job *job, int r, const char *what)
{
	fail(job, 1, "rank %d broke the PMI protocol (%s)", r, what);
}

/* ---- replies ------------------------------------------------------------- */

static void reply(struct job *job, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reply(struct job *job, int r, const char *fmt, ...)
{
	struct rank *rk = &job->ranks[r];
	char line[LINE_MAX_PMI];
	va_list ap;
	ssize_t n;
	int len;

	if (rk->fd < 0)
		return;
	va_start(ap, fmt);
	len = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (len < 0 || len >= (int)sizeof(line) - 1)
		return protocol_error(job, r, "reply too long");
	line[len++] = '\n';
	do
		n = send(rk->fd, line, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	/* Every request gets one short reply and a client waits for it; a
	 * full socket means the rank does not read them. */
	if (n != len && errno != EPIPE && errno != ECONNRESET)
		protocol_error(job, r, "it does not read its replies");
}

/* ---- requests ------------------------------------------------------------ */

static const char *attr(const struct attrs *a, const char *key)
{
	for (int i = 0; i < a->n; i++)
		if (strcmp(a->key[i], key) == 0)
			return a->val[i];
	return NULL;
}

/* Printable ASCII without space and '=', shorter than max. */
static bool word_ok(const char *s, size_t max)
{
	size_t n = 0;

	if (!s)
		return false;
	for (; s[n]; n++)
		if ((unsigned char)s[n] <= ' ' || (unsigned char)s[n] >= 0x7f ||
		    s[n] == '=' || n + 1 >= max)
			return false;
	return n > 0;
}

/* A kvsname attribute, when present, must be our job's. */
static bool kvsname_ok(const struct job *job, const struct attrs *a)
{
	const char *k = attr(a, "kvsname");

	return !k || strcmp(k, job->kvsname) == 0;
}

static void cmd_init(struct job *job, int r, const struct attrs *a)
{
	const char *v = attr(a, "pmi_version");
	bool ok = v && strcmp(v, "1") == 0;

	job->ranks[r].inited = ok;
	reply(job, r, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=%d", ok ? 0 : -1);
}

static void cmd_put(struct job *job, int r, const struct attrs *a)
{
	const char *key = attr(a, "key"), *val = attr(a, "value");

	if (!kvsname_ok(job, a))
		return reply(job, r, "cmd=put_result rc=-1 msg=unknown_kvsname");
	if (!word_ok(key, KEY_MAX) || !word_ok(val, VAL_MAX))
		return reply(job, r, "cmd=put_result rc=-1 msg=invalid_key_or_value");
	if (kvs_put(job, key, val) != 0)
		return reply(job, r, "cmd=put_result rc=-1 msg=key_value_space_full");
	reply(job, r, "cmd=put_result rc=0 msg=success");
}

static void cmd_get(struct job *job, int r, const struct attrs *a)
{
	const char *key = attr(a, "key");
	struct kv *kv;

	if (!kvsname_ok(job, a))
		return reply(job, r, "cmd=get_result rc=-1 msg=unknown_kvsname");
	if (!word_ok(key, KEY_MAX))
		return reply(job, r, "cmd=get_result rc=-1 msg=invalid_key");
	kv = kvs_find(job, key);
	if (kv)
		return reply(job, r, "cmd=get_result rc=0 msg=success value=%s", kv->val);
	/* MPICH asks where the ranks live; all on this node. */
	if (strcmp(key, "PMI_process_mapping") == 0)
		return reply(job, r, "cmd=get_result rc=0 msg=success value=(vector,(0,1,%d))",
			     job->n);
	reply(job, r, "cmd=get_result rc=-1 msg=key_%s_not_found", key);
}

/* A rank that is gone from PMI but still alive after the grace time. */
static bool rank_left_pmi(const struct rank *rk)
{
	return rk->pid > 0 && rk->fd < 0 && elapsed_ns(&rk->eof_time) >= EOF_GRACE_NS;
}

/* Release the barrier when every rank is in; fail the job when a rank that
 * is not in it can never come (it exited, or closed its PMI socket and
 * lives on). */
static void check_barrier(struct job *job)
{
	if (job->in_barrier == 0 || job->stopping)
		return;
	if (job->in_barrier == job->n) {
		job->in_barrier = 0;
		for (int r = 0; r < job->n; r++) {
			job->ranks[r].in_barrier = false;
			reply(job, r, "cmd=barrier_out");
		}
		return;
	}
	for (int r = 0; r < job->n; r++) {
		const struct rank *rk = &job->ranks[r];

		if (!rk->in_barrier && (rk->pid == 0 || rank_left_pmi(rk)))
			return fail(job, 1, "rank %d %s while other ranks wait in a PMI barrier", r,
				    rk->pid == 0 ? "exited" : "closed its PMI connection");
	}
}

static void cmd_barrier(struct job *job, int r)
{
	if (job->ranks[r].in_barrier)
		return protocol_error(job, r, "barrier_in twice");
	job->ranks[r].in_barrier = true;
	job->in_barrier++;
	check_barrier(job);
}

/* %XX-decode an abort message, keeping only printable characters. */
static void decode_message(const char *in, char *out, size_t len)
{
	size_t o = 0;

	for (; in && *in && o + 1 < len; in++) {
		unsigned int c = (unsigned char)*in;

		if (c == '%' && sscanf(in + 1, "%2x", &c) == 1 && in[1] && in[2])
			in += 2;
		out[o++] = c >= ' ' && c < 0x7f ? (char)c : '?';
	}
	out[o] = '\0';
}

static void cmd_abort(struct job *job, int r, const struct attrs *a)
{
	const char *code = attr(a, "exitcode");
	char msg[400] = "";
	long c = 1;

	if (code) {
		char *end;

		errno = 0;
		c = strtol(code, &end, 10);
		if (errno || *end || end == code)
			c = 1;
	}
	decode_message(attr(a, "message"), msg, sizeof(msg));
	if (msg[0] && strcmp(msg, "-") != 0)
		fail(job, (int)(c & 0xff), "rank %d called MPI_Abort(%ld): %s", r, c, msg);
	else
		fail(job, (int)(c & 0xff), "rank %d called MPI_Abort(%ld)", r, c);
}

/* The commands a rank may send after init. */
static void dispatch(struct job *job, int r, const char *cmd, const struct attrs *a)
{
	if (strcmp(cmd, "get_maxes") == 0)
		reply(job, r, "cmd=maxes kvsname_max=%d keylen_max=%d vallen_max=%d",
		      KVSNAME_MAX, KEY_MAX, VAL_MAX);
	else if (strcmp(cmd, "get_my_kvsname") == 0)
		reply(job, r, "cmd=my_kvsname kvsname=%s", job->kvsname);
	else if (strcmp(cmd, "get_appnum") == 0)
		reply(job, r, "cmd=appnum appnum=%d", app_of_rank(job->opts, r));
	else if (strcmp(cmd, "get_universe_size") == 0)
		reply(job, r, "cmd=universe_size size=%d", job->n);
	else if (strcmp(cmd, "put") == 0)
		cmd_put(job, r, a);
	else if (strcmp(cmd, "get") == 0)
		cmd_get(job, r, a);
	else if (strcmp(cmd, "barrier_in") == 0)
		cmd_barrier(job, r);
	else if (strcmp(cmd, "finalize") == 0) {
		job->ranks[r].finalized = true;
		reply(job, r, "cmd=finalize_ack");
	} else {
		char what[96];

		snprintf(what, sizeof(what), "unsupported command '%.40s'", cmd);
		protocol_error(job, r, what);
	}
}

/* Split a line into key=value attributes, in place. */
static bool split_line(char *line, struct attrs *a)
{
	char *save = NULL;

	a->n = 0;
	for (char *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
		char *eq = strchr(t, '=');

		if (!eq || eq == t || a->n == MAX_ATTRS)
			return false;
		*eq = '\0';
		a->key[a->n] = t;
		a->val[a->n++] = eq + 1;
	}
	return a->n > 0 && strcmp(a->key[0], "cmd") == 0;
}

static void handle_line(struct job *job, int r, char *line)
{
	struct rank *rk = &job->ranks[r];
	struct attrs a;
	const char *cmd;

	if (!split_line(line, &a))
		return protocol_error(job, r, "a line that is not cmd=... key=value...");
	cmd = a.val[0];
	if (strcmp(cmd, "abort") == 0)
		return cmd_abort(job, r, &a);
	if (strcmp(cmd, "init") == 0) {
		if (rk->inited)
			return protocol_error(job, r, "init twice");
		return cmd_init(job, r, &a);
	}
	if (!rk->inited)
		return protocol_error(job, r, "a command before init");
	if (rk->finalized)
		return protocol_error(job, r, "a command after finalize");
	dispatch(job, r, cmd, &a);
}

/* ---- reading the ranks' sockets ------------------------------------------ */

static void close_rank_fd(struct job *job, int r)
{
	close(job->ranks[r].fd);
	job->ranks[r].fd = -1;
	clock_gettime(CLOCK_MONOTONIC, &job->ranks[r].eof_time);
}

/* Handle every complete line in the rank's buffer. */
static void handle_lines(struct job *job, int r)
{
	struct rank *rk = &job->ranks[r];
	char *start = rk->buf, *nl;

	while (rk->fd >= 0 && (nl = memchr(start, '\n', rk->len - (size_t)(start - rk->buf)))) {
		*nl = '\0';
		handle_line(job, r, start);
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

/* ---- rank exits ---------------------------------------------------------- */

static void judge_exit(struct job *job, int r, int ws)
{
	const struct rank *rk = &job->ranks[r];
	char sig[32];

	if (WIFSIGNALED(ws))
		fail(job, 128 + WTERMSIG(ws), "rank %d killed by signal %s", r,
		     signame(WTERMSIG(ws), sig, sizeof(sig)));
	else if (WEXITSTATUS(ws) != 0)
		fail(job, WEXITSTATUS(ws), "rank %d exited with status %d", r, WEXITSTATUS(ws));
	else if (rk->inited && !rk->finalized && job->running > 0)
		fail(job, 1, "rank %d exited without MPI_Finalize", r);
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
		if (r < 0)
			continue;
		/* What it said before dying (abort, finalize) decides how
		 * its death reads. */
		read_rank(job, r);
		job->ranks[r].pid = 0;
		job->running--;
		judge_exit(job, r, ws);
		check_barrier(job);
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
		if (job->stopping) {    /* asked twice: no more grace */
			signal_ranks(job, SIGKILL);
			job->killed = true;
		}
		fail(job, 128 + sig, "caught %s", signame(sig, name, sizeof(name)));
	}
	reap(job);
}

/* ---- starting the ranks -------------------------------------------------- */

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

static void bind_rank(int r, enum bind_mode mode, int n)
{
	int cpus[CPU_SETSIZE], ncpus = allowed_cpus(cpus, CPU_SETSIZE);
	cpu_set_t set;

	if (ncpus == 0 || mode == BIND_NONE || (mode == BIND_DEFAULT && n > ncpus))
		return;
	CPU_ZERO(&set);
	CPU_SET(cpus[r % ncpus], &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		fprintf(stderr, "vdrun: rank %d: cannot bind to CPU %d: %s\n", r, cpus[r % ncpus],
			strerror(errno));
}

static void set_env_int(const char *name, long v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%ld", v);
	setenv(name, buf, 1);
}

/* In the child: never returns. */
static void exec_rank(const struct opts *o, int r, int fd, pid_t parent, const sigset_t *mask)
{
	const struct app *app = &o->apps[app_of_rank(o, r)];

	/* Ranks must not outlive vdrun, whatever kills it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(EXIT_NOTFOUND);
	sigprocmask(SIG_SETMASK, mask, NULL);
	if (fcntl(fd, F_SETFD, 0) != 0)         /* keep PMI_FD across exec */
		_exit(EXIT_NOTFOUND);
	set_env_int("PMI_FD", fd);
	set_env_int("PMI_RANK", r);
	set_env_int("PMI_SIZE", o->n);
	unsetenv("PMI_PORT");   /* another launcher's, if vdrun runs under one */
	unsetenv("PMI_ID");
	if (r > 0) {            /* stdin goes to rank 0 only, as with mpiexec */
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (null >= 0 && null != STDIN_FILENO)
			dup2(null, STDIN_FILENO);
	}
	bind_rank(r, o->bind, o->n);
	execv(app->path, app->argv);
	fprintf(stderr, "vdrun: rank %d: cannot execute %s: %s\n", r, app->path, strerror(errno));
	_exit(errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
}

static int start_rank(struct job *job, const struct opts *o, int r, const sigset_t *mask)
{
	int sv[2];
	pid_t parent = getpid(), pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(sv[0]);
		close(sv[1]);
		return err;
	}
	if (pid == 0)
		exec_rank(o, r, sv[1], parent, mask);
	close(sv[1]);
	job->ranks[r].pid = pid;
	job->ranks[r].fd = sv[0];
	job->running++;
	return 0;
}

static void start_ranks(struct job *job, const struct opts *o, const sigset_t *mask)
{
	for (int r = 0; r < job->n; r++) {
		int err = start_rank(job, o, r, mask);

		if (err) {
			fail(job, 1, "cannot start rank %d: %s", r, strerror(-err));
			return;
		}
	}
}

/* ---- the event loop ------------------------------------------------------ */

/* Poll timeout while stopping: until SIGKILL time, then until giving up. */
static int stop_timeout_ms(struct job *job)
{
	long t = elapsed_ns(&job->stop_time);

	if (!job->killed && t >= TERM_GRACE_NS) {
		signal_ranks(job, SIGKILL);
		job->killed = true;
	}
	if (!job->killed)
		return (int)((TERM_GRACE_NS - t) / 1000000) + 1;
	return t >= KILL_WAIT_NS ? 0 : (int)((KILL_WAIT_NS - t) / 1000000) + 1;
}

/* Poll timeout while running: none, unless a barrier waits on a rank
 * that closed its PMI socket (check_barrier looks again soon). */
static int run_timeout_ms(const struct job *job)
{
	if (job->in_barrier == 0)
		return -1;
	for (int r = 0; r < job->n; r++)
		if (job->ranks[r].pid > 0 && job->ranks[r].fd < 0 && !job->ranks[r].in_barrier)
			return 50;
	return -1;
}

static void poll_once(struct job *job, struct pollfd *pfd, int *who)
{
	int npfd = 1, timeout = job->stopping ? stop_timeout_ms(job) : run_timeout_ms(job);

	pfd[0] = (struct pollfd){ .fd = job->sigfd, .events = POLLIN };
	for (int r = 0; r < job->n; r++) {
		if (job->ranks[r].fd < 0 || job->stopping)
			continue;
		pfd[npfd] = (struct pollfd){ .fd = job->ranks[r].fd, .events = POLLIN };
		who[npfd++] = r;
	}
	if (poll(pfd, (nfds_t)npfd, timeout) < 0 && errno != EINTR) {
		perror("vdrun: poll");
		exit(1);
	}
	/* Requests first: a rank's last words come before its death. */
	for (int i = 1; i < npfd; i++)
		if (pfd[i].revents)
			read_rank(job, who[i]);
	if (pfd[0].revents)
		handle_signals(job);
	if (timeout >= 0)
		check_barrier(job);
}

static void serve(struct job *job)
{
	struct pollfd *pfd = calloc((size_t)job->n + 1, sizeof(*pfd));
	int *who = calloc((size_t)job->n + 1, sizeof(*who));

	if (!pfd || !who) {
		fputs("vdrun: out of memory\n", stderr);
		exit(1);
	}
	while (job->running > 0) {
		if (job->stopping && job->killed && elapsed_ns(&job->stop_time) >= KILL_WAIT_NS) {
			fprintf(stderr, "vdrun: %d rank(s) did not exit after SIGKILL\n",
				job->running);
			break;
		}
		poll_once(job, pfd, who);
	}
	free(pfd);
	free(who);
}

/* ---- setup --------------------------------------------------------------- */

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
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* vdrun holds one socket per rank. */
static void ensure_fd_limit(int n)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)n + 16;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need)
		return;
	rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < need) {
		fprintf(stderr, "vdrun: %d ranks need %lu open files; the limit is %lu\n", n,
			(unsigned long)need, (unsigned long)rl.rlim_cur);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	struct opts o;
	struct job job = { .status = 0 };
	sigset_t oldmask;

	parse_args(argc, argv, &o);
	ensure_std_fds();
	ensure_fd_limit(o.n);
	job.opts = &o;
	job.n = o.n;
	job.ranks = calloc((size_t)o.n, sizeof(*job.ranks));
	job.sigfd = setup_signals(&oldmask);
	if (!job.ranks || job.sigfd < 0) {
		fprintf(stderr, "vdrun: cannot set up: %s\n", strerror(errno));
		return 1;
	}
	for (int r = 0; r < o.n; r++)
		job.ranks[r].fd = -1;
	make_kvsname(&job);
	start_ranks(&job, &o, &oldmask);
	serve(&job);
	for (int r = 0; r < o.n; r++)
		if (job.ranks[r].fd >= 0)
			close(job.ranks[r].fd);
	kvs_free(&job);
	free(job.ranks);
	return job.status;
}
