/* SPDX-License-Identifier: MIT */
/*
 * vdrun internals, shared by its files:
 *
 *   main.c        start-up, signals, the end of the job
 *   opts.c        the command line (getopt_long_only), --help, programs
 *   hosts.c       -H, hostfiles, which hosts are this one, rank placement
 *   pmi_server.c  the PMI-1 server: key-value space, barrier, abort
 *   job.c         job control and vdrun's event loop
 *   launch.c      forking one rank; --tag-output's line prefixes
 *   wire.c        line buffers and encoding of the vdrun <-> proxy link
 *   remote.c      vdrun's side of the remote hosts: agents, proxies
 *   proxy.c       "vdrun --proxy": a host's ranks, relayed to vdrun
 */
#ifndef VDRUN_H
#define VDRUN_H

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#define VDRUN_MAX_RANKS 4096
#define VDRUN_MAX_APPS 64       /* application contexts of an MPMD line */
#define VDRUN_MAX_HOSTS 1024
#define VDRUN_MAX_ENV 256       /* -x and -genv variables */
#define VDRUN_HOST_MAX 256      /* a host name, with the NUL */
#define LINE_MAX_PMI 4096       /* longest PMI request line we accept */

#define TERM_GRACE_NS 500000000L        /* SIGTERM -> SIGKILL */
#define KILL_WAIT_NS 3000000000L        /* SIGTERM -> give up waiting */
/* A rank that closed its PMI socket usually is exiting: its death, not
 * the closing, names the cause, unless it lives on this long. */
#define EOF_GRACE_NS 1000000000L
/* How long a remote host has to connect back (VIADUCT_VDRUN_TIMEOUT). */
#define CONNECT_TIMEOUT_S 30

#define EXIT_USAGE 2
#define EXIT_NOEXEC 126
#define EXIT_NOTFOUND 127

enum bind_mode { BIND_DEFAULT, BIND_CORE, BIND_NONE };
enum map_mode { MAP_DEFAULT, MAP_SLOT, MAP_NODE, MAP_CORE };    /* default: slot */

struct app {
	int n;                  /* ranks of this context */
	int first;              /* its first rank */
	char path[PATH_MAX];    /* the program, resolved through PATH */
	char **argv;            /* as typed: argv[0] is the user's word */
};

struct host {
	char name[VDRUN_HOST_MAX];
	int slots;              /* 0: as many as asked (no host list given) */
	bool local;             /* this machine: ranks are vdrun's children */
	int nranks;             /* ranks placed here */
};

struct envvar {
	const char *name, *value;
};

struct opts {
	int n;                  /* ranks of the whole job */
	enum bind_mode bind;
	int napps;
	struct app apps[VDRUN_MAX_APPS];
	/* Where the ranks run.  Without -H, --hostfile or -ppn: this host
	 * alone, with as many ranks as asked (vdrun's original behaviour). */
	const char *host_arg, *hostfile;
	bool have_hosts;
	struct host *hosts;
	int nhosts;
	int *host_of;           /* rank -> index in hosts */
	enum map_mode map;
	int ppn;                /* 0: the hosts' slots */
	bool oversubscribe;
	/* What the ranks get. */
	struct envvar env[VDRUN_MAX_ENV];
	int nenv;
	const char *wdir;       /* NULL: vdrun's directory */
	bool tag_output;
	bool verbose;           /* -v: the mapping on stderr before the start */
	const char *agent;      /* NULL: $VIADUCT_RSH, else ssh */
};

/* A line reader over a stream socket or pipe. */
struct inbuf {
	char *buf;
	size_t len, cap;        /* cap: the longest line accepted */
};

/* Bytes waiting to go out on a non-blocking socket. */
struct outbuf {
	char *buf;
	size_t len, cap;
	int err;                /* the first error of outbuf_add, kept */
};

struct rank {
	pid_t pid;              /* local rank: 0 once reaped */
	int host;               /* index in opts->hosts */
	int fd;                 /* local rank: our end of PMI_FD, -1 once closed */
	bool alive;             /* not yet known to have exited */
	bool pmi_open;          /* its PMI connection is open */
	bool inited, finalized, in_barrier;
	struct timespec eof_time;       /* when its PMI connection closed */
	size_t len;
	char buf[LINE_MAX_PMI];
};

struct kv {
	char *key, *val;
};

/* A machine's boot id and a hash of the CPUs a process may use there. */
#define CPUS_ID_MAX 64

/* A remote host's launch agent and the proxy it starts. */
struct proxy {
	int host;
	char cpus_id[CPUS_ID_MAX];      /* its machine and CPUs (cpus_id()), or "" */
	bool job_sent;
	pid_t agent;            /* 0 once reaped */
	int fd;                 /* the proxy's TCP connection, -1 if none */
	bool connected;         /* authenticated (once, never again) */
	bool gone;              /* connection closed after connecting */
	int nalive;             /* its ranks not yet reported dead */
	struct inbuf in;
	struct outbuf out;
};

/* An accepted connection that has not said its hello yet. */
#define MAX_PENDING 16
struct pending {
	int fd;                 /* -1: free */
	struct timespec since;
	struct inbuf in;
};

/* One rank's stdout or stderr, prefixed line by line (--tag-output).
 * The buffer grows with the line up to TAG_LINE_MAX; a longer line is
 * written in pieces of that size. */
#define TAG_LINE_MAX (1u << 20)
struct tagout {
	int fd;                 /* the pipe's read end, -1 at EOF */
	int rank;
	int dest;               /* STDOUT_FILENO or STDERR_FILENO */
	size_t len, cap;
	size_t scanned;         /* buf[0..scanned) holds no newline */
	char *buf;
};

struct tagset {
	struct tagout *t;
	int n, cap;
};

struct job {
	const struct opts *opts;
	int n, running;         /* running: ranks not known to be dead */
	struct rank *ranks;
	char kvsname[64];
	int in_barrier;         /* ranks waiting in the current barrier */
	struct kv *kvs;
	size_t nkvs, cap;
	uint32_t *kvidx;                /* hash index into kvs: entry + 1, 0 empty;
	                                 * 2 * cap slots (pmi_server.c) */
	int sigfd;
	sigset_t oldmask;       /* what children get */
	bool stopping, killed;
	struct timespec start_time, stop_time;
	int status;             /* vdrun's exit status */
	/* Remote hosts: only when some host is not this one. */
	int lfd;                /* listening socket for proxies, -1 if none */
	struct proxy *proxies;
	int nproxies, nconnected;
	struct pending pending[MAX_PENDING];
	char cookie[33];        /* 128 random bits, hex */
	long connect_timeout_s;
	long link_timeout_s;            /* a silent link to a host ends the job */
	struct tagset tags;
};

/* What a process needs to start one rank (vdrun's own or a proxy's). */
struct launch {
	const char *host;       /* for messages: NULL on a job without hosts */
	int rank, size;
	int local_index, local_count;   /* among the ranks of its host */
	enum bind_mode bind;
	const char *path;
	char *const *argv;
	const char *wdir;       /* NULL: stay */
	bool wdir_strict;       /* a wdir that fails fails the rank */
	const struct envvar *env;
	int nenv;
	bool keep_stdin;        /* rank 0 of the job, run by vdrun */
	int out_fd, err_fd;     /* -1: inherit */
};

/* ---- main.c ---- */
long elapsed_ns(const struct timespec *since);
const char *signame(int sig, char *buf, size_t len);
void say_line(const char *prefix, const char *suffix, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

/* ---- opts.c ---- */
void usage(FILE *f);
void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void parse_args(int argc, char **argv, struct opts *o);
void opts_free(struct opts *o);
int app_of_rank(const struct opts *o, int r);
int resolve_in_path(const char *name, char *out, size_t len);

/* ---- hosts.c ---- */
void hosts_setup(struct opts *o);
bool host_is_local(const char *name);
int hosts_mapping(const struct opts *o, char *out, size_t len);
bool job_is_remote(const struct opts *o);
void hosts_print(const struct opts *o, FILE *f);

/* ---- pmi_server.c ---- */
void pmi_handle_line(struct job *job, int r, char *line);
void pmi_check_barrier(struct job *job);
void pmi_rank_left(struct job *job, int r);
void kvs_free(struct job *job);

/* ---- job.c ---- */
void fail(struct job *job, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void stop_job(struct job *job);
void protocol_error(struct job *job, int r, const char *what);
const char *rank_name(const struct job *job, int r, char *buf, size_t len);
void rank_died(struct job *job, int r, bool signaled, int code);
void rank_reply(struct job *job, int r, const char *line);
void start_local_ranks(struct job *job);
void serve(struct job *job);

/* ---- launch.c ---- */
int launch_rank(const struct launch *l, const sigset_t *mask, pid_t *pid, int *pmi_fd);
int tag_pipes(struct tagset *ts, int rank, int *out_fd, int *err_fd);
int tag_pollfds(const struct tagset *ts, struct pollfd *pfd, int max);
void tag_handle(struct tagset *ts, const struct pollfd *pfd, int npfd);
void tag_drain(struct tagset *ts, int timeout_ms);
void tag_free(struct tagset *ts);

/* ---- wire.c ---- */
int inbuf_init(struct inbuf *ib, size_t cap);
void inbuf_free(struct inbuf *ib);
int inbuf_read(int fd, struct inbuf *ib);
char *inbuf_line(struct inbuf *ib, size_t *pos);
void inbuf_consume(struct inbuf *ib, size_t pos);
int outbuf_add(struct outbuf *ob, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int outbuf_flush(int fd, struct outbuf *ob);
void outbuf_free(struct outbuf *ob);
int wire_encode(const char *in, char *out, size_t len);
int wire_decode(const char *in, char *out, size_t len);
int wire_words(char *line, char **w, int max);
bool wire_int(const char *s, long lo, long hi, long *out);
bool cookie_equal(const char *a, const char *b);
/* Keepalive and TCP_USER_TIMEOUT: a silent peer is lost after about
 * link_timeout_s seconds. */
void tcp_tune(int fd, long link_timeout_s);
void cpus_id(char *out, size_t len);
#define LINK_TIMEOUT_S 2L               /* VIADUCT_VDRUN_LINK_TIMEOUT */

/* ---- remote.c ---- */
int remote_setup(struct job *job);
int remote_pollfds(struct job *job, struct pollfd *pfd, int max, int *kind);
void remote_handle(struct job *job, const struct pollfd *pfd, int npfd, const int *kind);
int remote_timeout_ms(struct job *job);
void remote_reply(struct job *job, int r, const char *line);
void remote_stop(struct job *job, bool kill_now);
void remote_reaped(struct job *job, pid_t pid, int ws);
void remote_finish(struct job *job);

/* ---- proxy.c ---- */
int proxy_main(void);

#endif
