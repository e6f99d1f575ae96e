/* SPDX-License-Identifier: MIT */
/*
 * The PMI-1 server: one key-value space for the job, barriers across all
 * ranks, abort.  It sees request lines and sends reply lines; whether a
 * rank is vdrun's child or a remote proxy's is rank_reply's business
 * (job.c), so a job over many hosts has the one key-value space and the
 * one barrier a job on one host has.
 *
 * Every line is untrusted input: split into at most MAX_ATTRS attributes,
 * keys and values checked for length and characters.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "vdrun.h"

#define MAX_ATTRS 16
#define KEY_MAX 64              /* PMI limits, including the NUL */
#define VAL_MAX 1024
#define KVSNAME_MAX 256
#define KVS_MAX_ENTRIES 65536   /* bounds a runaway rank's memory use */

struct attrs {
	int n;
	const char *key[MAX_ATTRS], *val[MAX_ATTRS];
};

/* ---- the job's key-value space ------------------------------------------- */

/* Every rank gets every other rank's keys at start-up, so lookups must
 * not scan: a hash index (open addressing, linear probing) over the
 * entries, twice their capacity so it stays at most half full. */
static uint32_t kvs_hash(const char *key)
{
	uint32_t h = 2166136261u;       /* FNV-1a */

	for (; *key; key++)
		h = (h ^ (unsigned char)*key) * 16777619u;
	return h;
}

static uint32_t *kvs_slot(uint32_t *idx, size_t nslots, const struct kv *kvs,
			  const char *key)
{
	size_t mask = nslots - 1;

	for (size_t i = kvs_hash(key) & mask;; i = (i + 1) & mask)
		if (!idx[i] || strcmp(kvs[idx[i] - 1].key, key) == 0)
			return &idx[i];
}

static struct kv *kvs_find(struct job *job, const char *key)
{
	uint32_t *slot;

	if (!job->kvidx)
		return NULL;
	slot = kvs_slot(job->kvidx, 2 * job->cap, job->kvs, key);
	return *slot ? &job->kvs[*slot - 1] : NULL;
}

/* Room for one more entry: entries and index grown together. */
static int kvs_grow(struct job *job)
{
	size_t cap = job->cap ? job->cap * 2 : 64;
	struct kv *n;
	uint32_t *idx;

	if (job->nkvs < job->cap)
		return 0;
	if (cap > KVS_MAX_ENTRIES)
		return -1;
	n = realloc(job->kvs, cap * sizeof(*n));
	if (!n)
		return -1;
	job->kvs = n;
	idx = calloc(2 * cap, sizeof(*idx));
	if (!idx)
		return -1;
	for (size_t i = 0; i < job->nkvs; i++)
		*kvs_slot(idx, 2 * cap, n, n[i].key) = (uint32_t)i + 1;
	free(job->kvidx);
	job->kvidx = idx;
	job->cap = cap;
	return 0;
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
	if (kvs_grow(job) != 0 || !(job->kvs[job->nkvs].key = strdup(key))) {
		free(v);
		return -1;
	}
	job->kvs[job->nkvs].val = v;
	*kvs_slot(job->kvidx, 2 * job->cap, job->kvs, key) = (uint32_t)job->nkvs + 1;
	job->nkvs++;
	return 0;
}

void kvs_free(struct job *job)
{
	for (size_t i = 0; i < job->nkvs; i++) {
		free(job->kvs[i].key);
		free(job->kvs[i].val);
	}
	free(job->kvs);
	free(job->kvidx);
}

/* ---- replies ------------------------------------------------------------- */

static void reply(struct job *job, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reply(struct job *job, int r, const char *fmt, ...)
{
	char line[LINE_MAX_PMI];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (len < 0 || len >= (int)sizeof(line) - 1)
		return protocol_error(job, r, "reply too long");
	rank_reply(job, r, line);
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
	char map[VAL_MAX];
	struct kv *kv;

	if (!kvsname_ok(job, a))
		return reply(job, r, "cmd=get_result rc=-1 msg=unknown_kvsname");
	if (!word_ok(key, KEY_MAX))
		return reply(job, r, "cmd=get_result rc=-1 msg=invalid_key");
	kv = kvs_find(job, key);
	if (kv)
		return reply(job, r, "cmd=get_result rc=0 msg=success value=%s", kv->val);
	/* MPICH asks which ranks share a host. */
	if (strcmp(key, "PMI_process_mapping") == 0 &&
	    hosts_mapping(job->opts, map, sizeof(map)) == 0)
		return reply(job, r, "cmd=get_result rc=0 msg=success value=%s", map);
	reply(job, r, "cmd=get_result rc=-1 msg=key_%s_not_found", key);
}

/* A rank that is gone from PMI but still alive after the grace time. */
static bool rank_left_pmi(const struct rank *rk)
{
	return rk->alive && !rk->pmi_open && elapsed_ns(&rk->eof_time) >= EOF_GRACE_NS;
}

/* Release the barrier when every rank is in; fail the job when a rank that
 * is not in it can never come (it exited, or closed its PMI socket and
 * lives on). */
void pmi_check_barrier(struct job *job)
{
	char name[VDRUN_HOST_MAX + 32];

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

		if (!rk->in_barrier && (!rk->alive || rank_left_pmi(rk)))
			return fail(job, 1, "%s %s while other ranks wait in a PMI barrier",
				    rank_name(job, r, name, sizeof(name)),
				    !rk->alive ? "exited" : "closed its PMI connection");
	}
}

static void cmd_barrier(struct job *job, int r)
{
	if (job->ranks[r].in_barrier)
		return protocol_error(job, r, "barrier_in twice");
	job->ranks[r].in_barrier = true;
	job->in_barrier++;
	pmi_check_barrier(job);
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
	char msg[400] = "", name[VDRUN_HOST_MAX + 32];
	long c = 1;

	if (code && !wire_int(code, LONG_MIN, LONG_MAX, &c))
		c = 1;
	decode_message(attr(a, "message"), msg, sizeof(msg));
	rank_name(job, r, name, sizeof(name));
	if (msg[0] && strcmp(msg, "-") != 0)
		fail(job, (int)(c & 0xff), "%s called MPI_Abort(%ld): %s", name, c, msg);
	else
		fail(job, (int)(c & 0xff), "%s called MPI_Abort(%ld)", name, c);
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

void pmi_handle_line(struct job *job, int r, char *line)
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

/* The rank closed its PMI connection (it exits, or closed PMI_FD). */
void pmi_rank_left(struct job *job, int r)
{
	job->ranks[r].pmi_open = false;
	clock_gettime(CLOCK_MONOTONIC, &job->ranks[r].eof_time);
}
