/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: the PMI-1 client.
 *
 * The launcher (vdrun, or MPICH's Hydra) hands every rank one end of a
 * stream socket in PMI_FD and its place in PMI_RANK / PMI_SIZE.  Over that
 * socket the rank and the launcher exchange text lines of space-separated
 * key=value attributes, one reply per request ("PMI-1 wire protocol"):
 *
 *   cmd=init pmi_version=1 pmi_subversion=1 -> cmd=response_to_init ... rc=0
 *   cmd=get_maxes                           -> cmd=maxes kvsname_max= keylen_max= vallen_max=
 *   cmd=get_my_kvsname                      -> cmd=my_kvsname kvsname=K
 *   cmd=put kvsname=K key=k value=v         -> cmd=put_result rc=0
 *   cmd=barrier_in                          -> cmd=barrier_out
 *   cmd=get kvsname=K key=k                 -> cmd=get_result rc=0 value=v
 *   cmd=finalize                            -> cmd=finalize_ack
 *   cmd=abort exitcode=N message=M          (no reply)
 *
 * Replies may carry more attributes than these (Hydra adds msg=...); they
 * are ignored.  Every reply is validated: the launcher is another process.
 * Values cannot contain spaces, '=' or newlines, so we only put printable
 * ASCII without them (the MPI layer puts hex and alphanumerics).
 *
 * Without PMI_FD, a launcher that speaks PMIx (PMIX_NAMESPACE) is served
 * by pmix.c where it is built; otherwise the process is a singleton: rank
 * 0 of 1, with a local key-value space so that put/get behave the same.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mpi_internal.h"
#ifdef VIADUCT_HAVE_PMIX
#include "pmix_client.h"
#define PMI_PMIX_LAUNCHERS ", srun --mpi=pmix or Open MPI's mpirun"
#else
#define PMI_PMIX_LAUNCHERS " (this build has no PMIx client)"
#endif

/* A reply line: Hydra's values are at most 1024 bytes (vallen_max), plus
 * the command and a few short attributes. */
#define PMI_LINE_MAX 2048
#define PMI_MAX_ATTRS 16
/* Our own limits (PMI-1's usual ones); the launcher may lower them. */
#define PMI_KEY_MAX 64
#define PMI_VAL_MAX 1024
#define PMI_KVSNAME_MAX 256
/* Largest job we believe in: bounds PMI_SIZE. */
#define PMI_SIZE_MAX (1 << 20)

enum pmi_state { PMI_NONE = 0, PMI_SINGLETON, PMI_CONNECTED, PMI_PMIX, PMI_DONE };

struct pmi_attr {
	const char *key, *val;
};

/* A parsed line: attrs point into line[]. */
struct pmi_msg {
	char line[PMI_LINE_MAX];
	int nattrs;
	struct pmi_attr attrs[PMI_MAX_ATTRS];
};

/* Singleton key-value space. */
struct pmi_kv {
	char *key, *val;
};

static struct {
	enum pmi_state state;
	int fd;
	int rank, size;
	int appnum;                     /* MPI_APPNUM; -1: the launcher gave none */
	size_t keylen_max, vallen_max;   /* including the NUL, as PMI says */
	char kvsname[PMI_KVSNAME_MAX];
	/* bytes received after the last complete line */
	char rbuf[PMI_LINE_MAX];
	size_t rlen;
	struct pmi_kv *kvs;
	size_t nkvs;
	/* requests this rank made (VIADUCT_DEBUG=1 prints them at the end) */
	unsigned long nput, nget, nfence;
} pmi = { .fd = -1, .appnum = -1 };

/* ---- diagnostics --------------------------------------------------------- */

/* Launch problems are invisible without a word: the caller only sees an
 * errno, so say what went wrong once, here. */
static int pmi_fail(int err, const char *what)
{
	fprintf(stderr, "viaduct PMI: %s\n", what);
	return err;
}

/* ---- validation of words ------------------------------------------------- */

/* A word that can travel as a PMI key or value: printable ASCII without
 * space and '='. */
static bool pmi_word_ok(const char *s, size_t max)
{
	size_t n = 0;

	for (; s[n]; n++) {
		unsigned char c = (unsigned char)s[n];

		if (c <= ' ' || c >= 0x7f || c == '=')
			return false;
		if (n + 1 >= max)
			return false;
	}
	return n > 0;
}

/* Decimal integer in [lo, hi], the whole string. */
static bool pmi_parse_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	if (!s || !*s)
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* ---- socket I/O ---------------------------------------------------------- */

static int pmi_write_all(const char *buf, size_t len)
{
	while (len > 0) {
		/* MSG_NOSIGNAL: a dead launcher is an error, not SIGPIPE. */
		ssize_t n = send(pmi.fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == ENOTSOCK)
			n = write(pmi.fd, buf, len);    /* a pipe pair */
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Send one request line (fmt without the newline). */
static int pmi_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int pmi_send(const char *fmt, ...)
{
	char line[PMI_LINE_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line) - 1)
		return -EOVERFLOW;
	line[n++] = '\n';
	return pmi_write_all(line, (size_t)n);
}

/* Move one complete line from rbuf into out (NUL-terminated, without the
 * newline).  True if there was one. */
static bool pmi_take_line(char *out)
{
	char *nl = memchr(pmi.rbuf, '\n', pmi.rlen);
	size_t len;

	if (!nl)
		return false;
	len = (size_t)(nl - pmi.rbuf);
	memcpy(out, pmi.rbuf, len);
	out[len] = '\0';
	pmi.rlen -= len + 1;
	memmove(pmi.rbuf, nl + 1, pmi.rlen);
	return true;
}

/* Read one reply line into out (PMI_LINE_MAX bytes). */
static int pmi_read_line(char *out)
{
	while (!pmi_take_line(out)) {
		ssize_t n;

		if (pmi.rlen >= sizeof(pmi.rbuf))
			return pmi_fail(-EPROTO, "reply line from the launcher is too long");
		n = read(pmi.fd, pmi.rbuf + pmi.rlen, sizeof(pmi.rbuf) - pmi.rlen);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return pmi_fail(-EIO, "the launcher closed the PMI connection");
		pmi.rlen += (size_t)n;
	}
	return 0;
}

/* ---- parsing ------------------------------------------------------------- */

/* Split msg->line into key=value attributes, in place. */
static int pmi_parse(struct pmi_msg *msg)
{
	char *save = NULL;

	msg->nattrs = 0;
	for (char *tok = strtok_r(msg->line, " \t\r", &save); tok;
	     tok = strtok_r(NULL, " \t\r", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq || eq == tok || msg->nattrs == PMI_MAX_ATTRS)
			return -EPROTO;
		*eq = '\0';
		msg->attrs[msg->nattrs].key = tok;
		msg->attrs[msg->nattrs].val = eq + 1;
		msg->nattrs++;
	}
	return msg->nattrs > 0 ? 0 : -EPROTO;
}

static const char *pmi_attr(const struct pmi_msg *msg, const char *key)
{
	for (int i = 0; i < msg->nattrs; i++)
		if (strcmp(msg->attrs[i].key, key) == 0)
			return msg->attrs[i].val;
	return NULL;
}

/* Read the reply to a request: it must be "cmd=<expect> ...". */
static int pmi_expect(struct pmi_msg *msg, const char *expect)
{
	const char *cmd;
	char what[160];
	int err = pmi_read_line(msg->line);

	if (err)
		return err;
	if (pmi_parse(msg) != 0)
		return pmi_fail(-EPROTO, "malformed reply from the launcher");
	cmd = pmi_attr(msg, "cmd");
	if (!cmd || strcmp(cmd, expect) != 0) {
		snprintf(what, sizeof(what), "expected cmd=%s from the launcher, got cmd=%.40s",
			 expect, cmd ? cmd : "(none)");
		return pmi_fail(-EPROTO, what);
	}
	return 0;
}

/* The reply's rc: 0 when absent (barrier_out, maxes carry none). */
static int pmi_rc(const struct pmi_msg *msg)
{
	const char *rc = pmi_attr(msg, "rc");
	long v;

	if (!rc)
		return 0;
	if (!pmi_parse_int(rc, INT_MIN, INT_MAX, &v))
		return -EPROTO;
	return v == 0 ? 0 : -EIO;
}

/* Request and reply in one. */
static int pmi_call(struct pmi_msg *reply, const char *expect, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int pmi_call(struct pmi_msg *reply, const char *expect, const char *fmt, ...)
{
	char line[PMI_LINE_MAX];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -EOVERFLOW;
	n = pmi_send("%s", line);
	return n ? n : pmi_expect(reply, expect);
}

/* ---- init ---------------------------------------------------------------- */

/* PMI_FD, PMI_RANK, PMI_SIZE from the launcher. */
static int pmi_read_env(const char *fdstr)
{
	long fd, rank, size;

	if (!pmi_parse_int(fdstr, 0, INT_MAX, &fd) || fcntl((int)fd, F_GETFD) < 0)
		return pmi_fail(-EBADF, "PMI_FD is not an open file descriptor");
	if (!pmi_parse_int(getenv("PMI_SIZE"), 1, PMI_SIZE_MAX, &size))
		return pmi_fail(-EINVAL, "PMI_FD is set but PMI_SIZE is missing or invalid");
	if (!pmi_parse_int(getenv("PMI_RANK"), 0, size - 1, &rank))
		return pmi_fail(-EINVAL, "PMI_FD is set but PMI_RANK is missing or invalid");
	pmi.fd = (int)fd;
	pmi.rank = (int)rank;
	pmi.size = (int)size;
	return 0;
}

/* A size limit from the maxes reply: at least 2 (one char and the NUL),
 * never above ours. */
static size_t pmi_limit(const struct pmi_msg *msg, const char *key, size_t ours)
{
	long v;

	if (!pmi_parse_int(pmi_attr(msg, key), 2, INT_MAX, &v))
		return ours;
	return (size_t)v < ours ? (size_t)v : ours;
}

static int pmi_handshake(void)
{
	struct pmi_msg msg;
	const char *kvs;
	int err;

	err = pmi_call(&msg, "response_to_init", "cmd=init pmi_version=1 pmi_subversion=1");
	if (!err && pmi_rc(&msg) != 0)
		return pmi_fail(-EPROTO, "the launcher refused PMI version 1");
	if (!err)
		err = pmi_call(&msg, "maxes", "cmd=get_maxes");
	if (err)
		return err;
	pmi.keylen_max = pmi_limit(&msg, "keylen_max", PMI_KEY_MAX);
	pmi.vallen_max = pmi_limit(&msg, "vallen_max", PMI_VAL_MAX);
	err = pmi_call(&msg, "my_kvsname", "cmd=get_my_kvsname");
	if (err)
		return err;
	kvs = pmi_attr(&msg, "kvsname");
	if (pmi_rc(&msg) != 0 || !kvs || !pmi_word_ok(kvs, sizeof(pmi.kvsname)))
		return pmi_fail(-EPROTO, "the launcher sent no valid kvsname");
	strcpy(pmi.kvsname, kvs);
	return 0;
}

/* Which command of the launch line started this rank (MPI_APPNUM).
 * Every PMI-1 server MPICH runs under answers get_appnum (MPICH asks at
 * its own MPI_Init: vdrun, Hydra, Slurm do); a reply of another kind, a
 * refusal or a negative number means none.  A server that leaves the
 * command unanswered would block here, as it would block MPICH. */
static int pmi_get_appnum(void)
{
	struct pmi_msg msg;
	const char *cmd;
	long v;
	int err = pmi_send("cmd=get_appnum");

	if (!err)
		err = pmi_read_line(msg.line);
	if (err)
		return err;
	if (pmi_parse(&msg) != 0 || !(cmd = pmi_attr(&msg, "cmd")) || strcmp(cmd, "appnum"))
		return 0;
	if (pmi_rc(&msg) == 0 && pmi_parse_int(pmi_attr(&msg, "appnum"), 0, INT_MAX, &v))
		pmi.appnum = (int)v;
	return 0;
}

/* FNV-1a: a stable short name for a kvsname that does not fit. */
static uint64_t pmi_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* The job id given to the MPI layer, which names files after it: the
 * kvsname if it is short and made of [A-Za-z0-9_.-], else a hash of it
 * (the same in every rank, since they all have the same kvsname). */
static int pmi_make_jobid(char *jobid, size_t len)
{
	size_t n = strlen(pmi.kvsname);
	bool plain = n < len && strspn(pmi.kvsname,
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
	int w;

	if (plain) {
		memcpy(jobid, pmi.kvsname, n + 1);
		return 0;
	}
	w = snprintf(jobid, len, "kvs-%016llx", (unsigned long long)pmi_hash(pmi.kvsname));
	return w > 0 && (size_t)w < len ? 0 : -ENAMETOOLONG;
}

/* ---- launchers viaduct does not speak ------------------------------------
 * Without PMI_FD a program runs as a singleton.  That is right when it was
 * started by hand, and wrong when a launcher started several copies of it:
 * each would be "rank 0 of 1" and the job would seem to work.  So the
 * variables such launchers set are looked for first. */

/* The value of an environment variable that is an integer above 1. */
static long env_count(const char *name)
{
	long v;

	return pmi_parse_int(getenv(name), 2, INT_MAX, &v) ? v : 0;
}

static const char *env_set(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* Describe the launcher seen in `seen` (empty: none viaduct must refuse). */
static void pmi_foreign_launcher(char *seen, size_t len)
{
	const char *v;
	long n;

	seen[0] = '\0';
	if ((n = env_count("OMPI_COMM_WORLD_SIZE")) != 0)
		snprintf(seen, len, "Open MPI's mpirun (OMPI_COMM_WORLD_SIZE=%ld)", n);
	else if ((v = env_set("PMIX_NAMESPACE")) || (v = env_set("PMIX_RANK")))
		snprintf(seen, len, "a PMIx launcher such as srun --mpi=pmix "
			 "(PMIX_NAMESPACE/PMIX_RANK=%.64s)", v);
	else if ((n = env_count("SLURM_STEP_NUM_TASKS")) != 0 && env_set("SLURM_PROCID"))
		snprintf(seen, len, "srun with %ld tasks and no PMI "
			 "(SLURM_STEP_NUM_TASKS=%ld; srun --mpi=none?)", n, n);
	else if ((v = env_set("PMI_PORT")) != NULL)
		snprintf(seen, len, "a launcher serving PMI on a TCP port "
			 "(PMI_PORT=%.64s; viaduct speaks PMI-1 on PMI_FD)", v);
	else if ((n = env_count("PMI_SIZE")) != 0)
		snprintf(seen, len, "a PMI launcher for %ld ranks without PMI_FD "
			 "(PMI_SIZE=%ld)", n, n);
	else if ((n = env_count("MPI_LOCALNRANKS")) != 0)
		snprintf(seen, len, "an MPICH launcher for %ld local ranks without "
			 "PMI_FD (MPI_LOCALNRANKS=%ld)", n, n);
}

static int pmi_refuse_foreign(const char *seen)
{
	fprintf(stderr,
		"viaduct PMI: this program was started by %s, which viaduct cannot "
		"talk to; every copy would run as rank 0 of 1.  Start viaduct "
		"programs with vdrun -n N, MPICH's mpiexec.hydra, srun --mpi=pmi2%s.\n",
		seen, PMI_PMIX_LAUNCHERS);
	return -EPROTONOSUPPORT;
}

static int pmi_init_singleton(void)
{
	char seen[192];
	int n;

	pmi_foreign_launcher(seen, sizeof(seen));
	if (seen[0])
		return pmi_refuse_foreign(seen);
	n = snprintf(pmi.kvsname, sizeof(pmi.kvsname), "singleton-%ld", (long)getpid());

	if (n < 0 || (size_t)n >= sizeof(pmi.kvsname))
		return -EOVERFLOW;
	pmi.rank = 0;
	pmi.size = 1;
	pmi.keylen_max = PMI_KEY_MAX;
	pmi.vallen_max = PMI_VAL_MAX;
	pmi.state = PMI_SINGLETON;
	return 0;
}

#ifdef VIADUCT_HAVE_PMIX
static bool pmi_use_pmix(void)
{
	return env_set("PMIX_NAMESPACE") != NULL;
}

static int pmi_init_pmix(void)
{
	int err = vd_pmix_init(&pmi.rank, &pmi.size, pmi.kvsname, sizeof(pmi.kvsname));

	if (err)
		return err;
	pmi.keylen_max = PMI_KEY_MAX;
	pmi.vallen_max = PMI_VAL_MAX;
	pmi.state = PMI_PMIX;
	pmi.appnum = vd_pmix_appnum();
	return 0;
}
#else
static bool pmi_use_pmix(void) { return false; }
static int pmi_init_pmix(void) { return -ENOSYS; }
#endif

int vd_pmi_init(int *rank, int *size, char *jobid, size_t jobid_len)
{
	const char *fdstr = getenv("PMI_FD");
	int err;

	if (!rank || !size || !jobid || jobid_len == 0)
		return -EINVAL;
	if (pmi.state != PMI_NONE)
		return -EALREADY;
	if (fdstr && *fdstr) {
		err = pmi_read_env(fdstr);
		if (!err)
			err = pmi_handshake();
		if (!err)
			err = pmi_get_appnum();
		if (err) {
			pmi.fd = -1;
			return err;
		}
		pmi.state = PMI_CONNECTED;
	} else if (pmi_use_pmix()) {
		if ((err = pmi_init_pmix()) != 0)
			return err;
	} else if ((err = pmi_init_singleton()) != 0) {
		return err;
	}
	err = pmi_make_jobid(jobid, jobid_len);
	if (err)
		return err;
	*rank = pmi.rank;
	*size = pmi.size;
	return 0;
}

/* ---- singleton key-value space ------------------------------------------- */

static struct pmi_kv *pmi_local_find(const char *key)
{
	for (size_t i = 0; i < pmi.nkvs; i++)
		if (strcmp(pmi.kvs[i].key, key) == 0)
			return &pmi.kvs[i];
	return NULL;
}

static int pmi_local_put(const char *key, const char *value)
{
	struct pmi_kv *kv = pmi_local_find(key);
	char *v = strdup(value);

	if (!v)
		return -ENOMEM;
	if (kv) {
		free(kv->val);
		kv->val = v;
		return 0;
	}
	kv = realloc(pmi.kvs, (pmi.nkvs + 1) * sizeof(*kv));
	if (kv)
		pmi.kvs = kv;
	if (!kv || !(pmi.kvs[pmi.nkvs].key = strdup(key))) {
		free(v);
		return -ENOMEM;
	}
	pmi.kvs[pmi.nkvs++].val = v;
	return 0;
}

static void pmi_local_free(void)
{
	for (size_t i = 0; i < pmi.nkvs; i++) {
		free(pmi.kvs[i].key);
		free(pmi.kvs[i].val);
	}
	free(pmi.kvs);
	pmi.kvs = NULL;
	pmi.nkvs = 0;
}

/* ---- key-value space ----------------------------------------------------- */

static int pmi_check_running(void)
{
	return pmi.state == PMI_SINGLETON || pmi.state == PMI_CONNECTED ||
	       pmi.state == PMI_PMIX ? 0 : -EINVAL;
}

#ifndef VIADUCT_HAVE_PMIX
/* Never called without the client (pmi.state is never PMI_PMIX). */
static int vd_pmix_put(const char *k, const char *v) { (void)k, (void)v; return -ENOSYS; }
static int vd_pmix_fence(void) { return -ENOSYS; }
static int vd_pmix_get(int f, const char *k, char *v, size_t l)
{ (void)f, (void)k, (void)v, (void)l; return -ENOSYS; }
static void vd_pmix_finalize(void) {}
static void vd_pmix_abort(int c, const char *m) { (void)c, (void)m; }
#endif

int vd_pmi_put(const char *key, const char *value)
{
	struct pmi_msg msg;
	int err = pmi_check_running();

	if (err)
		return err;
	if (!key || !value || !pmi_word_ok(key, pmi.keylen_max) ||
	    !pmi_word_ok(value, pmi.vallen_max))
		return -EINVAL;
	pmi.nput++;
	if (pmi.state == PMI_SINGLETON)
		return pmi_local_put(key, value);
	if (pmi.state == PMI_PMIX)
		return vd_pmix_put(key, value);
	err = pmi_call(&msg, "put_result", "cmd=put kvsname=%s key=%s value=%s",
		       pmi.kvsname, key, value);
	if (err)
		return err;
	return pmi_rc(&msg);
}

int vd_pmi_fence(void)
{
	struct pmi_msg msg;
	int err = pmi_check_running();

	if (err || pmi.state == PMI_SINGLETON)
		return err;
	pmi.nfence++;
	if (pmi.state == PMI_PMIX)
		return vd_pmix_fence();
	/* PMI-1 has no separate commit: puts are sent at once, and the
	 * barrier makes every put before it visible to every get after. */
	err = pmi_call(&msg, "barrier_out", "cmd=barrier_in");
	return err ? err : pmi_rc(&msg);
}

/* Copy a found value out, if it fits. */
static int pmi_copy_value(const char *v, char *value, size_t len)
{
	size_t n = strlen(v);

	if (n >= len)
		return -EOVERFLOW;
	memcpy(value, v, n + 1);
	return 0;
}

int vd_pmi_get(const char *key, char *value, size_t len)
{
	return vd_pmi_get_from(-1, key, value, len);
}

int vd_pmi_appnum(void)
{
	return pmi.appnum;
}

int vd_pmi_get_from(int from, const char *key, char *value, size_t len)
{
	struct pmi_msg msg;
	const char *v;
	int err = pmi_check_running();

	if (err)
		return err;
	if (!key || !value || len == 0 || !pmi_word_ok(key, pmi.keylen_max))
		return -EINVAL;
	pmi.nget++;
	if (pmi.state == PMI_SINGLETON) {
		struct pmi_kv *kv = pmi_local_find(key);

		return kv ? pmi_copy_value(kv->val, value, len) : -ENOENT;
	}
	if (pmi.state == PMI_PMIX)
		return vd_pmix_get(from, key, value, len);
	err = pmi_call(&msg, "get_result", "cmd=get kvsname=%s key=%s", pmi.kvsname, key);
	if (err)
		return err;
	if (pmi_rc(&msg) != 0)
		return -ENOENT;         /* Hydra: rc=-1 msg=key_..._not_found */
	v = pmi_attr(&msg, "value");
	if (!v || (*v && !pmi_word_ok(v, PMI_LINE_MAX)))
		return pmi_fail(-EPROTO, "malformed get_result from the launcher");
	return pmi_copy_value(v, value, len);
}

/* VIADUCT_DEBUG=1: what this rank asked of the launcher's key-value
 * space (bench/mpi/scale.sh adds them up over the job).  getenv, not the
 * parameter registry: vdrun's PMI probe links this file alone. */
static void pmi_report(void)
{
	const char *dbg = getenv("VIADUCT_DEBUG");

	if (!dbg || strcmp(dbg, "1") != 0)
		return;
	fprintf(stderr, "viaduct MPI: rank %d: PMI requests: %lu put, %lu get, %lu fence\n",
		pmi.rank, pmi.nput, pmi.nget, pmi.nfence);
}

void vd_pmi_finalize(void)
{
	struct pmi_msg msg;

	pmi_report();
	if (pmi.state == PMI_CONNECTED) {
		/* The ack tells the launcher saw the finalize before our
		 * exit, so it does not count the exit as a failure. */
		if (pmi_call(&msg, "finalize_ack", "cmd=finalize") != 0)
			pmi_fail(0, "finalize was not acknowledged by the launcher");
		close(pmi.fd);
		pmi.fd = -1;
	}
	if (pmi.state == PMI_PMIX)
		vd_pmix_finalize();
	pmi_local_free();
	pmi.state = PMI_DONE;
}

/* ---- abort --------------------------------------------------------------- */

/* msg as one PMI word: bytes other than [A-Za-z0-9_.,:/+-] become %XX
 * (vdrun decodes them; Hydra passes the word on untouched). */
static void pmi_encode(const char *msg, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; msg && *msg && o + 4 < len; msg++) {
		unsigned char c = (unsigned char)*msg;

		if (strchr("_.,:/+-", c) || (c >= '0' && c <= '9') ||
		    (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	if (o == 0)
		out[o++] = '-';         /* an empty word would not parse */
	out[o] = '\0';
}

void vd_pmi_abort(int code, const char *msg)
{
	char enc[512];

	if (pmi.state == PMI_CONNECTED) {
		pmi_encode(msg, enc, sizeof(enc));
		/* No reply comes: the launcher tears the job down. */
		(void)pmi_send("cmd=abort exitcode=%d message=%s", code, enc);
	}
	if (pmi.state == PMI_PMIX)
		vd_pmix_abort(code, msg);
	_exit(code);
}
