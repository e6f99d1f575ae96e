/* SPDX-License-Identifier: MIT */
/*
 * vdrun's side of the remote hosts.
 *
 * For each host that is not this machine, vdrun runs its launch agent
 * ("ssh host vdrun --proxy", or --launch-agent / VIADUCT_RSH) once.  The
 * proxy reads, on its stdin, where to connect back and the job's cookie
 * (128 random bits: stdin, because a command line is visible in ps), and
 * connects to vdrun's listening TCP socket.  Its first line must carry
 * the cookie; then vdrun sends it the job (its ranks, programs, -x
 * variables, directory) and "go".  From there on the connection carries
 * the ranks' PMI lines, tagged with the rank, both ways, and the proxy's
 * reports of its ranks' deaths.  The key-value space, the barriers and
 * job control stay here.
 *
 *   on the proxy's stdin: vdrun-proxy 3 HOST-INDEX HOST ADDR PORT COOKIE TIMEOUT
 *   LINK-TIMEOUT
 *
 *   vdrun -> proxy                      proxy -> vdrun
 *   job SIZE BIND TAG WDIR STRICT HOST  hello 1 HOST-INDEX COOKIE [MACHINE]
 *   env NAME VALUE                      pmi RANK LINE
 *   app A PATH / arg A WORD             long RANK       (line too long)
 *                                       deaf RANK       (reads no replies)
 *   rank RANK A INDEX COUNT             eof RANK        (closed PMI_FD)
 *   go                                  exit RANK CODE / signal RANK SIG
 *   pmi RANK LINE / stop / kill
 *
 * A proxy that does not connect within VIADUCT_VDRUN_TIMEOUT seconds, an
 * agent that exits before its proxy connected, and a connection that
 * drops while ranks live there all end the job naming the host.  The
 * proxy stops its ranks itself when the connection drops, so nothing
 * outlives vdrun on any host.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vdrun.h"

#define HELLO_MAX 256           /* the first line of a connection */
#define HELLO_WAIT_NS 10000000000L
#define PROXY_LINE_MAX (LINE_MAX_PMI + 64)
#define AGENT_MAX_WORDS 32

extern char **environ;

enum { KIND_LISTEN = -1, KIND_PENDING = -2 };   /* pending i: KIND_PENDING - i */

/* ---- set-up ------------------------------------------------------------------ */

static int listen_any(void)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_addr.s_addr = INADDR_ANY };
	int off = 0, fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	/* Both families on one socket where IPv6 exists; IPv4 alone else. */
	if (fd >= 0 && (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) != 0 ||
			bind(fd, (struct sockaddr *)&a6, sizeof(a6)) != 0)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd >= 0 && bind(fd, (struct sockaddr *)&a4, sizeof(a4)) != 0) {
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0 && listen(fd, 64) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int listen_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
		return -1;
	return ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
					      : ((struct sockaddr_in *)&ss)->sin_port);
}

/* The address of ours that packets to host leave from: the one it can
 * reach (no packet is sent: connect on a datagram socket only routes).
 * When the host's name does not resolve here (only the agent knows it),
 * our host name, for the proxy to resolve. */
static void callback_addr(const char *host, char *out, size_t len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char bare[VDRUN_HOST_MAX];
	int fd = -1;

	snprintf(bare, sizeof(bare), "%s", host[0] == '[' ? host + 1 : host);
	bare[strcspn(bare, "]")] = '\0';
	if (getaddrinfo(bare, "9", &hints, &res) == 0 &&
	    (fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0 &&
	    connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
	    getsockname(fd, (struct sockaddr *)&ss, &sl) == 0 &&
	    getnameinfo((struct sockaddr *)&ss, sl, out, (socklen_t)len, NULL, 0,
			NI_NUMERICHOST) == 0) {
		close(fd);
		freeaddrinfo(res);
		return;
	}
	if (fd >= 0)
		close(fd);
	if (res)
		freeaddrinfo(res);
	if (gethostname(out, len - 1) != 0)
		snprintf(out, len, "localhost");
}

/* Seconds from the environment variable `name`, lo to hi (a usage error
 * otherwise), or `unset` without it. */
static long seconds_from_env(const char *name, long lo, long hi, long unset)
{
	const char *v = getenv(name);
	long t;

	if (!v)
		return unset;
	if (!wire_int(v, lo, hi, &t))
		usage_error("%s: '%s' is not a number of seconds from %ld to %ld", name, v, lo, hi);
	return t;
}

/* The agent's command line: its words, then host, vdrun, "--proxy".
 * The words reach a remote shell, so vdrun's path must be one word. */
static int agent_argv(const struct job *job, const char *host, const char *self, char **av,
		      char *words)
{
	char *save = NULL;
	int n = 0;

	snprintf(words, PATH_MAX, "%s", job->opts->agent);
	for (char *w = strtok_r(words, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
		if (n < AGENT_MAX_WORDS - 4)
			av[n++] = w;
	if (n == 0)
		return -1;
	av[n++] = (char *)host;
	av[n++] = (char *)self;
	av[n++] = "--proxy";
	av[n] = NULL;
	return n;
}

static void agent_child(const struct job *job, char **av, int in)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);       /* vdrun killed: the agent goes */
	setpgid(0, 0);  /* Ctrl-C reaches vdrun, which stops remote ranks in order */
	sigprocmask(SIG_SETMASK, &job->oldmask, NULL);
	signal(SIGPIPE, SIG_DFL);
	dup2(in, STDIN_FILENO);
	execvp(av[0], av);
	fprintf(stderr, "vdrun: launch agent %s: %s\n", av[0], strerror(errno));
	_exit(EXIT_NOTFOUND);
}

static int start_agent(struct job *job, struct proxy *p, const char *self, int port)
{
	const char *host = job->opts->hosts[p->host].name;
	char addr[VDRUN_HOST_MAX], words[PATH_MAX], *av[AGENT_MAX_WORDS], line[2048];
	char bare[VDRUN_HOST_MAX], name[3 * VDRUN_HOST_MAX];
	int in[2];

	/* ssh takes an IPv6 address without its brackets. */
	snprintf(bare, sizeof(bare), "%s", host[0] == '[' ? host + 1 : host);
	bare[strcspn(bare, "]")] = '\0';
	if (agent_argv(job, bare, self, av, words) < 0)
		return -EINVAL;
	callback_addr(host, addr, sizeof(addr));
	if (pipe2(in, O_CLOEXEC) != 0)
		return -errno;
	p->agent = fork();
	if (p->agent < 0) {
		close(in[0]);
		close(in[1]);
		return -errno;
	}
	if (p->agent == 0)
		agent_child(job, av, in[0]);
	setpgid(p->agent, p->agent);
	close(in[0]);
	/* One short line: a pipe takes it whole, the agent reads it later.
	 * If the agent is gone already (EPIPE), its exit says why. */
	wire_encode(host, name, sizeof(name));
	snprintf(line, sizeof(line), "vdrun-proxy 3 %d %s %s %d %s %ld %ld\n", p->host, name, addr,
		 port, job->cookie, job->connect_timeout_s, job->link_timeout_s);
	if (write(in[1], line, strlen(line)) < 0 && errno != EPIPE)
		fprintf(stderr, "vdrun: host %s: cannot write to the launch agent: %s\n", host,
			strerror(errno));
	close(in[1]);
	return 0;
}

/* vdrun's own path, which must be the same on the other hosts. */
static int self_path(char *out, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", out, len - 1);

	if (n <= 0)
		return -1;
	out[n] = '\0';
	for (const char *c = out; *c; c++)
		if (!(*c == '/' || *c == '.' || *c == '_' || *c == '-' || *c == '+' ||
		      (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
			return -2;
	return 0;
}

static int make_cookie(struct job *job)
{
	unsigned char k[16];

	if (getrandom(k, sizeof(k), 0) != (ssize_t)sizeof(k))
		return -1;
	for (int i = 0; i < 16; i++)
		snprintf(job->cookie + 2 * i, 3, "%02x", k[i]);
	return 0;
}

/* Listen, and start the agents of the remote hosts. */
int remote_setup(struct job *job)
{
	const struct opts *o = job->opts;
	char self[PATH_MAX];
	int port, err;

	job->lfd = -1;
	for (int i = 0; i < MAX_PENDING; i++)
		job->pending[i].fd = -1;
	if (!job_is_remote(o))
		return 0;
	job->connect_timeout_s = seconds_from_env("VIADUCT_VDRUN_TIMEOUT", 1, 86400,
						  CONNECT_TIMEOUT_S);
	job->link_timeout_s = seconds_from_env("VIADUCT_VDRUN_LINK_TIMEOUT", 2, 3600,
					       LINK_TIMEOUT_S);
	if ((err = self_path(self, sizeof(self))) != 0) {
		fprintf(stderr, "vdrun: %s\n", err == -2 ? "the path of vdrun has characters a "
			"remote shell would split; install it elsewhere" : "cannot find vdrun's path");
		return -1;
	}
	job->proxies = calloc((size_t)o->nhosts, sizeof(*job->proxies));
	if (!job->proxies || make_cookie(job) != 0 || (job->lfd = listen_any()) < 0 ||
	    (port = listen_port(job->lfd)) < 0) {
		fprintf(stderr, "vdrun: cannot listen for remote hosts: %s\n", strerror(errno));
		return -1;
	}
	for (int h = 0; h < o->nhosts; h++) {
		if (o->hosts[h].local || o->hosts[h].nranks == 0)
			continue;
		job->proxies[job->nproxies++] =
			(struct proxy){ .host = h, .fd = -1, .nalive = o->hosts[h].nranks };
	}
	/* All proxies are known before the first agent starts: a failure
	 * stops the job, and with it every host not connected yet. */
	for (int i = 0; i < job->nproxies && !job->stopping; i++) {
		struct proxy *p = &job->proxies[i];

		if (inbuf_init(&p->in, PROXY_LINE_MAX) != 0 ||
		    (err = start_agent(job, p, self, port)) != 0)
			fail(job, 1, "host %s: cannot start the launch agent '%s'",
			     o->hosts[p->host].name, o->agent);
	}
	return 0;
}

/* ---- the job, sent to a proxy ------------------------------------------------- */

/* Every add is checked once, at the end: outbuf_add keeps the first
 * error and adds nothing after it. */
static void add_word(struct outbuf *ob, const char *s)
{
	size_t cap = strlen(s) * 3 + 2;
	char *e = malloc(cap);

	if (!e || wire_encode(s, e, cap) != 0)
		ob->err = ob->err ? ob->err : -ENOMEM;
	else
		outbuf_add(ob, " %s", e);
	free(e);
}

static void add_env(struct outbuf *ob, const char *name, const char *value)
{
	outbuf_add(ob, "env");
	add_word(ob, name);
	add_word(ob, value);
	outbuf_add(ob, "\n");
}

static void send_env(struct outbuf *ob, const struct opts *o)
{
	/* The library's own settings follow the job to every host. */
	for (char **e = environ; *e; e++) {
		char name[256];
		const char *eq = strchr(*e, '=');

		if (strncmp(*e, "VIADUCT_", 8) != 0 || !eq || (size_t)(eq - *e) >= sizeof(name))
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
		add_env(ob, name, eq + 1);
	}
	for (int i = 0; i < o->nenv; i++)
		add_env(ob, o->env[i].name, o->env[i].value);
}

static void send_apps(struct outbuf *ob, const struct opts *o)
{
	for (int a = 0; a < o->napps; a++) {
		const struct app *app = &o->apps[a];

		/* A bare name is looked up in the remote host's PATH. */
		outbuf_add(ob, "app %d", a);
		add_word(ob, strchr(app->argv[0], '/') ? app->path : app->argv[0]);
		outbuf_add(ob, "\n");
		for (int i = 0; app->argv[i]; i++) {
			outbuf_add(ob, "arg %d", a);
			add_word(ob, app->argv[i]);
			outbuf_add(ob, "\n");
		}
	}
}

/* Ranks already bound on p's machine and CPUs: vdrun's own (when they
 * are vdrun's), then those of the hosts that said so before p. */
static int ranks_before(const struct job *job, const struct proxy *p)
{
	const struct opts *o = job->opts;
	char mine[CPUS_ID_MAX];
	int n = 0;

	if (!p->cpus_id[0])
		return 0;
	cpus_id(mine, sizeof(mine));
	if (strcmp(mine, p->cpus_id) == 0)
		for (int h = 0; h < o->nhosts; h++)
			n += o->hosts[h].local ? o->hosts[h].nranks : 0;
	for (int i = 0; i < job->nproxies; i++)
		if (job->proxies[i].job_sent && !strcmp(job->proxies[i].cpus_id, p->cpus_id))
			n += o->hosts[job->proxies[i].host].nranks;
	return n;
}

static int send_job(struct job *job, struct proxy *p)
{
	const struct opts *o = job->opts;
	struct outbuf *ob = &p->out;
	char cwd[PATH_MAX];
	int idx = 0;

	if (!o->wdir && !getcwd(cwd, sizeof(cwd)))
		snprintf(cwd, sizeof(cwd), "/");
	outbuf_add(ob, "job %d %d %d", o->n, (int)o->bind, (int)o->tag_output);
	add_word(ob, o->wdir ? o->wdir : cwd);
	outbuf_add(ob, " %d", o->wdir != NULL);
	add_word(ob, o->hosts[p->host].name);
	outbuf_add(ob, "\n");
	send_env(ob, o);
	send_apps(ob, o);
	/* INDEX serves the binding alone: a host that shares its machine and
	 * CPUs with others binds its ranks after theirs. */
	int first = ranks_before(job, p);
	p->job_sent = true;
	for (int r = 0; r < o->n; r++)
		if (o->host_of[r] == p->host)
			outbuf_add(ob, "rank %d %d %d %d\n", r, app_of_rank(o, r),
				   (first + idx++) % o->n, o->hosts[p->host].nranks);
	if (outbuf_add(ob, "go\n") != 0)
		return ob->err;
	return outbuf_flush(p->fd, ob);
}

/* ---- connections ------------------------------------------------------------ */

static void proxy_lost(struct job *job, struct proxy *p, const char *why)
{
	const char *host = job->opts->hosts[p->host].name;

	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	p->gone = true;
	if (p->nalive > 0)
		fail(job, 1, "host %s: %s, with %d rank(s) there", host, why, p->nalive);
	for (int r = 0; r < job->n; r++)
		if (job->ranks[r].host == p->host && job->ranks[r].alive) {
			job->ranks[r].alive = false;
			job->running--;
		}
	p->nalive = 0;
}

/* "hello 1 HOST-INDEX COOKIE [MACHINE]": the proxy of a host we wait
 * for, with the cookie, and its machine and CPUs (cpus_id; absent from an
 * older proxy).  Anything else closes the connection. */
static struct proxy *hello(struct job *job, char *line)
{
	char *w[6];
	int nw = wire_words(line, w, 6);
	long h;

	if ((nw != 4 && nw != 5) || strcmp(w[0], "hello") != 0 || strcmp(w[1], "1") != 0 ||
	    !wire_int(w[2], 0, job->opts->nhosts - 1, &h) || !cookie_equal(w[3], job->cookie))
		return NULL;
	for (int i = 0; i < job->nproxies; i++)
		if (job->proxies[i].host == h && !job->proxies[i].connected) {
			struct proxy *p = &job->proxies[i];
			/* Only a well-formed id groups hosts ("-": unknown). */
			if (nw == 5 && strcmp(w[4], "-") != 0 && strlen(w[4]) < sizeof(p->cpus_id))
				snprintf(p->cpus_id, sizeof(p->cpus_id), "%s", w[4]);
			return p;
		}
	return NULL;
}

static void proxy_lines(struct job *job, struct proxy *p);

static void pending_close(struct pending *pc)
{
	close(pc->fd);
	pc->fd = -1;
	inbuf_free(&pc->in);
}

static void pending_read(struct job *job, struct pending *pc)
{
	int n = inbuf_read(pc->fd, &pc->in);
	size_t pos = 0;
	char *line;
	struct proxy *p;

	if (n == -EAGAIN)
		return;
	line = n > 0 ? inbuf_line(&pc->in, &pos) : NULL;
	if (!line) {
		if (n <= 0)     /* EOF, error, or a first line too long */
			pending_close(pc);
		return;
	}
	if (!(p = hello(job, line))) {
		fprintf(stderr, "vdrun: refused a connection that did not bring the job's cookie\n");
		return pending_close(pc);
	}
	p->fd = pc->fd;
	p->connected = true;
	job->nconnected++;
	pc->fd = -1;
	/* What came after the hello is the proxy's (HELLO_MAX < its room). */
	memcpy(p->in.buf, pc->in.buf + pos, pc->in.len - pos);
	p->in.len = pc->in.len - pos;
	inbuf_free(&pc->in);
	tcp_tune(p->fd, job->link_timeout_s);
	if (send_job(job, p) != 0)
		return proxy_lost(job, p, "cannot send the job to its proxy");
	proxy_lines(job, p);
}

static void accept_all(struct job *job)
{
	int fd;

	while ((fd = accept4(job->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		struct pending *pc = NULL, *oldest = &job->pending[0];

		for (int i = 0; i < MAX_PENDING && !pc; i++) {
			if (job->pending[i].fd < 0)
				pc = &job->pending[i];
			else if (elapsed_ns(&job->pending[i].since) > elapsed_ns(&oldest->since))
				oldest = &job->pending[i];
		}
		/* All taken: the oldest goes, so that silent connections
		 * cannot keep a proxy out for long. */
		if (!pc) {
			pending_close(oldest);
			pc = oldest;
		}
		if (inbuf_init(&pc->in, HELLO_MAX) != 0) {
			close(fd);
			continue;
		}
		pc->fd = fd;
		clock_gettime(CLOCK_MONOTONIC, &pc->since);
	}
}

/* ---- the proxies' lines ------------------------------------------------------ */

/* RANK must be a live rank of this proxy's host. */
static int proxy_rank(const struct job *job, const struct proxy *p, const char *s)
{
	long r;

	if (!wire_int(s, 0, job->n - 1, &r) || job->ranks[r].host != p->host)
		return -1;
	return (int)r;
}

static int proxy_line(struct job *job, struct proxy *p, char *line)
{
	char *w[3], *rest = NULL;
	int n, r;
	long v;

	if (strncmp(line, "pmi ", 4) == 0 && (rest = strchr(line + 4, ' ')))
		*rest++ = '\0';
	n = wire_words(line, w, 3);
	if (n < 2 || (r = proxy_rank(job, p, w[1])) < 0)
		return -1;
	if (rest && n == 2) {
		if (!job->stopping && job->ranks[r].alive)
			pmi_handle_line(job, r, rest);
	} else if (strcmp(w[0], "long") == 0 && n == 2) {
		protocol_error(job, r, "a line longer than 4096 bytes");
	} else if (strcmp(w[0], "deaf") == 0 && n == 2) {
		protocol_error(job, r, "it does not read its replies");
	} else if (strcmp(w[0], "eof") == 0 && n == 2) {
		pmi_rank_left(job, r);
	} else if (strcmp(w[0], "exit") == 0 && n == 3 && wire_int(w[2], 0, 255, &v)) {
		p->nalive -= job->ranks[r].alive;
		rank_died(job, r, false, (int)v);
	} else if (strcmp(w[0], "signal") == 0 && n == 3 && wire_int(w[2], 1, 64, &v)) {
		p->nalive -= job->ranks[r].alive;
		rank_died(job, r, true, (int)v);
	} else {
		return -1;
	}
	return 0;
}

/* Handle the complete lines in the proxy's buffer. */
static void proxy_lines(struct job *job, struct proxy *p)
{
	size_t pos = 0;
	char *line;

	while (p->fd >= 0 && (line = inbuf_line(&p->in, &pos)))
		if (proxy_line(job, p, line) != 0)
			return proxy_lost(job, p, "its proxy sent a malformed line");
	if (p->fd >= 0)
		inbuf_consume(&p->in, pos);
}

static void proxy_read(struct job *job, struct proxy *p)
{
	int n;

	while (p->fd >= 0 && (n = inbuf_read(p->fd, &p->in)) != -EAGAIN) {
		if (n <= 0)
			return proxy_lost(job, p, n == -E2BIG ? "its proxy sent a line too long" :
					  "lost the connection to its proxy");
		proxy_lines(job, p);
	}
}

/* ---- the event loop's part ---------------------------------------------------- */

int remote_pollfds(struct job *job, struct pollfd *pfd, int max, int *kind)
{
	int n = 0;

	if (job->lfd >= 0 && job->nconnected < job->nproxies && !job->stopping && n < max) {
		pfd[n] = (struct pollfd){ .fd = job->lfd, .events = POLLIN };
		kind[n++] = KIND_LISTEN;
	}
	for (int i = 0; i < MAX_PENDING && n < max; i++)
		if (job->pending[i].fd >= 0) {
			pfd[n] = (struct pollfd){ .fd = job->pending[i].fd, .events = POLLIN };
			kind[n++] = KIND_PENDING - i;
		}
	for (int i = 0; i < job->nproxies && n < max; i++) {
		struct proxy *p = &job->proxies[i];

		if (p->fd < 0)
			continue;
		pfd[n] = (struct pollfd){ .fd = p->fd, .events = POLLIN | (p->out.len ? POLLOUT : 0) };
		kind[n++] = i;
	}
	return n;
}

void remote_handle(struct job *job, const struct pollfd *pfd, int npfd, const int *kind)
{
	for (int i = 0; i < npfd; i++) {
		if (!pfd[i].revents)
			continue;
		if (kind[i] == KIND_LISTEN) {
			accept_all(job);
		} else if (kind[i] <= KIND_PENDING) {
			if (job->pending[KIND_PENDING - kind[i]].fd >= 0)
				pending_read(job, &job->pending[KIND_PENDING - kind[i]]);
		} else {
			struct proxy *p = &job->proxies[kind[i]];

			if (p->fd >= 0 && (pfd[i].revents & POLLOUT) && outbuf_flush(p->fd, &p->out))
				proxy_lost(job, p, "lost the connection to its proxy");
			if (p->fd >= 0 && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				proxy_read(job, p);
		}
	}
}

/* Until the next deadline: a proxy that has not connected, a connection
 * that has not said hello.  Deadlines past end the job or the connection. */
int remote_timeout_ms(struct job *job)
{
	long left_ns = -1;

	for (int i = 0; i < MAX_PENDING; i++) {
		struct pending *pc = &job->pending[i];
		long t;

		if (pc->fd < 0)
			continue;
		if ((t = HELLO_WAIT_NS - elapsed_ns(&pc->since)) <= 0)
			pending_close(pc);
		else if (left_ns < 0 || t < left_ns)
			left_ns = t;
	}
	for (int i = 0; i < job->nproxies && !job->stopping; i++) {
		struct proxy *p = &job->proxies[i];
		long t = job->connect_timeout_s * 1000000000L - elapsed_ns(&job->start_time);

		if (p->connected || p->gone)
			continue;
		if (t <= 0) {
			fail(job, 1, "host %s: its proxy did not connect within %ld s (see "
			     "VIADUCT_VDRUN_TIMEOUT); is the host reachable with '%s %s'?",
			     job->opts->hosts[p->host].name, job->connect_timeout_s,
			     job->opts->agent, job->opts->hosts[p->host].name);
			break;
		}
		if (left_ns < 0 || t < left_ns)
			left_ns = t;
	}
	return left_ns < 0 ? -1 : (int)(left_ns / 1000000) + 1;
}

void remote_reply(struct job *job, int r, const char *line)
{
	for (int i = 0; i < job->nproxies; i++) {
		struct proxy *p = &job->proxies[i];

		if (p->host != job->ranks[r].host || p->fd < 0)
			continue;
		if (outbuf_add(&p->out, "pmi %d %s\n", r, line) || outbuf_flush(p->fd, &p->out))
			proxy_lost(job, p, "lost the connection to its proxy");
		return;
	}
}

/* Stop the remote ranks: their proxies signal them.  Hosts whose proxy
 * never connected have no ranks yet: their agent is stopped. */
void remote_stop(struct job *job, bool kill_now)
{
	for (int i = 0; i < job->nproxies; i++) {
		struct proxy *p = &job->proxies[i];

		if (p->fd >= 0) {
			if (outbuf_add(&p->out, kill_now ? "kill\n" : "stop\n") ||
			    outbuf_flush(p->fd, &p->out))
				proxy_lost(job, p, "lost the connection to its proxy");
		} else if (!p->connected) {
			if (p->agent > 0)
				kill(-p->agent, kill_now ? SIGKILL : SIGTERM);
			p->gone = true;
			proxy_lost(job, p, "its proxy never connected");
		}
	}
	for (int i = 0; i < MAX_PENDING; i++)
		if (job->pending[i].fd >= 0)
			pending_close(&job->pending[i]);
}

/* A launch agent exited.  Before its proxy connected, that is the end of
 * the job: the host is unreachable, or vdrun is not there. */
void remote_reaped(struct job *job, pid_t pid, int ws)
{
	for (int i = 0; i < job->nproxies; i++) {
		struct proxy *p = &job->proxies[i];
		char how[48];

		if (p->agent != pid)
			continue;
		p->agent = 0;
		/* Its proxy may have connected and exited since the last
		 * look: hear what is queued before judging. */
		if (!p->connected && !job->stopping) {
			accept_all(job);
			for (int k = 0; k < MAX_PENDING; k++)
				if (job->pending[k].fd >= 0)
					pending_read(job, &job->pending[k]);
		}
		if (p->connected || p->gone)
			return;
		if (WIFSIGNALED(ws))
			signame(WTERMSIG(ws), how, sizeof(how));
		else
			snprintf(how, sizeof(how), "status %d", WEXITSTATUS(ws));
		fail(job, 1, "host %s: the launch agent '%s' exited (%s) before vdrun's proxy "
		     "connected from there", job->opts->hosts[p->host].name, job->opts->agent, how);
		return;
	}
}

/* The end: close the connections (a proxy still there stops its ranks),
 * then give the agents a moment to pass on the last output. */
void remote_finish(struct job *job)
{
	struct timespec t0;
	int left;

	for (int i = 0; i < job->nproxies; i++) {
		struct proxy *p = &job->proxies[i];

		if (p->fd >= 0) {
			outbuf_flush(p->fd, &p->out);
			close(p->fd);
		}
		inbuf_free(&p->in);
		outbuf_free(&p->out);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		pid_t pid;
		int ws;

		left = 0;
		while ((pid = waitpid(-1, &ws, WNOHANG)) > 0)
			for (int i = 0; i < job->nproxies; i++)
				if (job->proxies[i].agent == pid)
					job->proxies[i].agent = 0;
		for (int i = 0; i < job->nproxies; i++)
			left += job->proxies[i].agent > 0;
		if (left && elapsed_ns(&t0) > 5000000000L)
			for (int i = 0; i < job->nproxies; i++)
				if (job->proxies[i].agent > 0)
					kill(-job->proxies[i].agent, SIGKILL);
		if (left)
			usleep(10000);
	} while (left && elapsed_ns(&t0) < 6000000000L);
	if (job->lfd >= 0)
		close(job->lfd);
	free(job->proxies);
}
