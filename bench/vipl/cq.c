// SPDX-License-Identifier: MIT
/*
 * cq.c -- the CLAN VIA paper's figure 7: a server accepts N connections and binds
 * every VI's receive queue to one completion queue; it takes events from
 * the CQ (VipCQDone polling, or VipCQWait), reaps the receive, and echoes
 * the message.  One client process simulates N clients: it sends small
 * messages on random connections as fast as it can, with at most one
 * request outstanding per connection, and takes the replies from its own
 * CQ.  The server counts requests per second in fixed windows.
 *
 * The point of the figure is scaling: with a per-process event queue the
 * cost of taking one event must not grow with the number of VIs bound to
 * the CQ.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_vipl.h"

#define CQ_RECVS 2              /* receives kept posted per VI */
#define SLOTS_PER_CONN (CQ_RECVS + 1)
#define SLOT_BYTES 64
#define MSG_BYTES 8
#define CQ_SPARE_ENTRIES 64
#define CQ_WAIT_MS 100
#define CQ_JOB_LIMIT_S 120
#define POLLS_PER_CHECK 1024
#define STOP_CLIENT 1           /* sh->stop: windows over, stop sending */
#define STOP_SERVER_DONE 2      /* sh->stop: server idle, disconnect now */

struct cq_job {
	enum cq_case c;
	int n;
	uint32_t job;
};

struct conn {
	VIP_VI_HANDLE vi;
	VIP_DESCRIPTOR *sd;
	char *sbuf;
	bool send_posted;       /* sd is posted and not yet reaped */
};

struct cq_side {
	struct ep e;
	struct area a;
	VIP_CQ_HANDLE cq;
	struct conn *conns;
	int n;
	VIP_VI_HANDLE *keys;    /* VI handle -> connection, open addressing */
	int *vals;
	size_t mask;
	enum role role;
	bool wait;
};

/* ---- VI handle -> connection index --------------------------------------- */

static size_t slot_of(const struct cq_side *s, VIP_VI_HANDLE vi)
{
	/* Fibonacci hashing: handles are opaque, maybe sequential. */
	return (size_t)(((uint64_t)(uintptr_t)vi * 0x9E3779B97F4A7C15ull) >> 32) &
	       s->mask;
}

static void map_put(struct cq_side *s, VIP_VI_HANDLE vi, int idx)
{
	size_t i = slot_of(s, vi);

	while (s->keys[i])
		i = (i + 1) & s->mask;
	s->keys[i] = vi;
	s->vals[i] = idx;
}

static int map_get(const struct cq_side *s, VIP_VI_HANDLE vi)
{
	for (size_t i = slot_of(s, vi); s->keys[i]; i = (i + 1) & s->mask)
		if (s->keys[i] == vi)
			return s->vals[i];
	return -1;
}

/* ---- setup ------------------------------------------------------------------- */

static VIP_DESCRIPTOR *slot_desc(struct cq_side *s, int conn, int k)
{
	return area_desc(&s->a, (size_t)conn * SLOTS_PER_CONN + (size_t)k);
}

static char *slot_buf(struct cq_side *s, int conn, int k)
{
	return s->a.base + (size_t)s->n * SLOTS_PER_CONN * sizeof(VIP_DESCRIPTOR) +
	       ((size_t)conn * SLOTS_PER_CONN + (size_t)k) * SLOT_BYTES;
}

static int cq_alloc(struct cq_side *s, int n)
{
	size_t cap = 1;
	VIP_RETURN r;

	while (cap < 2 * (size_t)n)
		cap *= 2;
	s->n = n;
	s->mask = cap - 1;
	s->conns = calloc((size_t)n, sizeof(*s->conns));
	s->keys = calloc(cap, sizeof(*s->keys));
	s->vals = calloc(cap, sizeof(*s->vals));
	if (!s->conns || !s->keys || !s->vals)
		return fail("out of memory for %d connections", n);
	r = VipCreateCQ(s->e.nic, (VIP_ULONG)n * CQ_RECVS + CQ_SPARE_ENTRIES,
			&s->cq);
	if (r != VIP_SUCCESS)
		return vip_fail("VipCreateCQ", r);
	return area_alloc(&s->e, &s->a, (size_t)n * SLOTS_PER_CONN *
			  (sizeof(VIP_DESCRIPTOR) + SLOT_BYTES));
}

/* A VI whose receive queue feeds the CQ, receives pre-posted, connected. */
static int cq_conn(struct cq_side *s, int i)
{
	struct conn *c = &s->conns[i];

	if (ep_vi(&s->e, NULL, s->cq, NULL, &c->vi))
		return -1;
	map_put(s, c->vi, i);
	for (int k = 0; k < CQ_RECVS; k++) {
		VIP_DESCRIPTOR *d = slot_desc(s, i, k);

		desc_fill(d, slot_buf(s, i, k), s->a.mh, SLOT_BYTES);
		if (post_recv(c->vi, d, s->a.mh))
			return -1;
	}
	c->sd = slot_desc(s, i, CQ_RECVS);
	c->sbuf = slot_buf(s, i, CQ_RECVS);
	return s->role == ROLE_SERVER ? ep_accept(&s->e, c->vi)
				      : ep_connect(&s->e, c->vi);
}

static int cq_setup(struct cq_side *s, const struct cq_job *j)
{
	s->wait = j->c == CQ_WAIT;
	if (ep_open(&s->e, s->role, j->job) || cq_alloc(s, j->n))
		return -1;
	for (int i = 0; i < j->n; i++)
		if (cq_conn(s, i))
			return -1;
	return 0;
}

static void cq_teardown(struct cq_side *s)
{
	for (int i = 0; s->conns && i < s->n; i++) {
		if (!s->conns[i].vi)
			continue;
		VipDisconnect(s->conns[i].vi);
		VipDestroyVi(s->conns[i].vi);
	}
	if (s->cq)
		VipDestroyCQ(s->cq);
	area_free(&s->e, &s->a);
	ep_close(&s->e);
	free(s->conns);
	free(s->keys);
	free(s->vals);
}

/* ---- both sides: one message in, one out ----------------------------------- */

/* The CQ entry comes first; the descriptor is then reaped from the VI. */
static int take_recv(struct cq_side *s, VIP_VI_HANDLE vi, VIP_BOOLEAN is_recv,
		     int *idx, VIP_DESCRIPTOR **d)
{
	*idx = map_get(s, vi);
	if (*idx < 0 || !is_recv)
		return fail("CQ event for an unknown VI or queue");
	if (recv_poll(vi, d))
		return -1;
	if ((*d)->CS.Length != MSG_BYTES)
		return fail("received %u bytes, expected %d",
			    (unsigned)(*d)->CS.Length, MSG_BYTES);
	return 0;
}

static int send_on(struct cq_side *s, struct conn *c)
{
	VIP_DESCRIPTOR *done;

	if (c->send_posted && send_poll(c->vi, &done))
		return -1;
	desc_fill(c->sd, c->sbuf, s->a.mh, MSG_BYTES);
	c->send_posted = true;
	return post_send(c->vi, c->sd, s->a.mh);
}

/* Server: copy the request into the connection's send buffer, repost
 * the receive first (the client may send again as soon as it has the
 * reply), then echo. */
static int echo(struct cq_side *s, VIP_VI_HANDLE vi, VIP_BOOLEAN is_recv)
{
	VIP_DESCRIPTOR *d;
	struct conn *c;
	int idx;

	if (take_recv(s, vi, is_recv, &idx, &d))
		return -1;
	c = &s->conns[idx];
	if (c->send_posted) {
		VIP_DESCRIPTOR *done;

		if (send_poll(c->vi, &done))
			return -1;
		c->send_posted = false;
	}
	memcpy(c->sbuf, d->DS[0].Local.Data.Address, MSG_BYTES);
	desc_rearm(d);
	if (post_recv(vi, d, s->a.mh))
		return -1;
	return send_on(s, c);
}

/* ---- server -------------------------------------------------------------------- */

static struct samples server_rps;   /* the parent's, read after the job */

struct window {
	uint64_t start, end, count;
	int index;              /* -1: warm-up */
	bool stopping;          /* all windows done, client told to stop */
};

/* Close a window when its time is up; after the last, tell the client. */
static void window_tick(struct window *w)
{
	uint64_t now = now_ns(), len = (uint64_t)(opt.cq_window_s * 1e9);

	if (w->stopping || now < w->end)
		return;
	if (w->index >= 0)
		samples_add(&server_rps, (double)w->count * 1e9 /
			    (double)(now - w->start));
	w->index++;
	w->count = 0;
	w->start = now;
	w->end = now + len;
	if (w->index == opt.cq_runs) {
		w->stopping = true;
		/* Release: pairs with the client's acquire load of stop. */
		atomic_store_explicit(&sh->stop, STOP_CLIENT,
				      memory_order_release);
	}
}

static VIP_RETURN next_event(struct cq_side *s, VIP_VI_HANDLE *vi,
			     VIP_BOOLEAN *is_recv)
{
	if (s->wait)
		return VipCQWait(s->cq, CQ_WAIT_MS, vi, is_recv);
	return VipCQDone(s->cq, vi, is_recv);
}

static int serve(struct cq_side *s)
{
	uint64_t now = now_ns();
	struct window w = { now, now + (uint64_t)(opt.cq_window_s * 5e8), 0,
			    -1, false };

	for (unsigned idle = 0;;) {
		VIP_VI_HANDLE vi;
		VIP_BOOLEAN is_recv;
		VIP_RETURN r = next_event(s, &vi, &is_recv);

		if (r == VIP_SUCCESS) {
			if (echo(s, vi, is_recv))
				return -1;
			w.count++;
		} else if (r != VIP_NOT_DONE && r != VIP_TIMEOUT) {
			return vip_fail(s->wait ? "VipCQWait" : "VipCQDone", r);
		} else if (w.stopping &&
			   atomic_load_explicit(&sh->client_done,
						memory_order_acquire)) {
			/* Acquire above pairs with the client's release store.
			 * Release: the client may now disconnect; until then
			 * a flushed receive would look like a failure here. */
			atomic_store_explicit(&sh->stop, STOP_SERVER_DONE,
					      memory_order_release);
			return 0;
		} else if (++idle % POLLS_PER_CHECK == 0 && should_stop()) {
			return -1;
		}
		window_tick(&w);
	}
}

static int cq_server(void *arg)
{
	struct cq_side s = { .role = ROLE_SERVER };
	int rc = cq_setup(&s, arg);

	memset(&server_rps, 0, sizeof(server_rps));
	if (rc == 0)
		rc = serve(&s);
	cq_teardown(&s);
	return rc;
}

/* ---- client -------------------------------------------------------------------- */

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

struct load {
	int *idle;              /* connections with no request outstanding */
	int nidle, outstanding;
	uint64_t rng;
	bool stopped;
};

/* A request on a random idle connection. */
static int request(struct cq_side *s, struct load *l)
{
	int j = (int)(xorshift(&l->rng) % (uint64_t)l->nidle);
	struct conn *c = &s->conns[l->idle[j]];

	l->idle[j] = l->idle[--l->nidle];
	memcpy(c->sbuf, &l->rng, MSG_BYTES);
	l->outstanding++;
	return send_on(s, c);
}

static int reply(struct cq_side *s, struct load *l, VIP_VI_HANDLE vi,
		 VIP_BOOLEAN is_recv)
{
	VIP_DESCRIPTOR *d;
	int idx;

	if (take_recv(s, vi, is_recv, &idx, &d))
		return -1;
	desc_rearm(d);
	if (post_recv(vi, d, s->a.mh))
		return -1;
	l->idle[l->nidle++] = idx;
	l->outstanding--;
	return 0;
}

static int drive(struct cq_side *s, struct load *l)
{
	for (unsigned iter = 1; !l->stopped || l->outstanding > 0; iter++) {
		VIP_VI_HANDLE vi;
		VIP_BOOLEAN is_recv;
		VIP_RETURN r;

		if (!l->stopped && l->nidle > 0 && request(s, l))
			return -1;
		r = VipCQDone(s->cq, &vi, &is_recv);
		if (r == VIP_SUCCESS && reply(s, l, vi, is_recv))
			return -1;
		if (r != VIP_SUCCESS && r != VIP_NOT_DONE)
			return vip_fail("VipCQDone", r);
		if (iter % POLLS_PER_CHECK)
			continue;
		/* Acquire: pairs with the server's release store of stop. */
		l->stopped = atomic_load_explicit(&sh->stop,
						  memory_order_acquire) != 0;
		if (should_stop())
			return -1;
	}
	/* Release: the server stops once it sees this and the CQ is empty. */
	atomic_store_explicit(&sh->client_done, 1, memory_order_release);
	/* Disconnecting before the server has stopped would flush its
	 * receives under it.  Acquire: pairs with the server's store. */
	while (atomic_load_explicit(&sh->stop, memory_order_acquire) !=
	       STOP_SERVER_DONE)
		if (should_stop())
			return -1;
	return 0;
}

static int cq_client(void *arg)
{
	struct cq_side s = { .role = ROLE_CLIENT };
	struct load l = { .rng = 0x9E3779B97F4A7C15ull };
	int rc = cq_setup(&s, arg);

	if (rc == 0 && !(l.idle = calloc((size_t)s.n, sizeof(int))))
		rc = fail("out of memory");
	for (int i = 0; rc == 0 && i < s.n; i++)
		l.idle[l.nidle++] = i;
	if (rc == 0)
		rc = drive(&s, &l);
	cq_teardown(&s);
	free(l.idle);
	return rc;
}

/* ---- driver and output ---------------------------------------------------------- */

static void run_cq_point(int pi)
{
	static const char *const names[NR_CQ_CASES] = { "poll", "wait" };

	for (int c = 0; c < NR_CQ_CASES; c++) {
		struct cq_job j = { (enum cq_case)c, res.cq_n[pi], next_job() };

		res.cq_rps[c][pi] = NAN;
		if (pair_run(cq_server, cq_client, &j, CQ_JOB_LIMIT_S) != 0)
			continue;
		res.cq_rps[c][pi] = samples_median(&server_rps);
		csv_row("cq", names[c], (uint64_t)res.cq_n[pi], "req_per_s",
			res.cq_rps[c][pi]);
	}
	printf("  %8d %16.0f %16.0f\n", res.cq_n[pi], res.cq_rps[CQ_POLL][pi],
	       res.cq_rps[CQ_WAIT][pi]);
}

/* N = 1 waits out every round trip, so the target compares against it;
 * the best N shows how much of the peak survives at the largest N. */
static void print_scaling(void)
{
	int last = res.nr_cq - 1;

	if (last < 1)
		return;
	for (int c = 0; c < NR_CQ_CASES; c++) {
		double best = 0;

		for (int pi = 0; pi < res.nr_cq; pi++)
			if (res.cq_rps[c][pi] > best)
				best = res.cq_rps[c][pi];
		printf("  %s: N=%d is %.2fx N=1 and %.2fx the best N\n",
		       c == CQ_POLL ? "VipCQDone" : "VipCQWait", res.cq_n[last],
		       res.cq_rps[c][last] / res.cq_rps[c][0],
		       res.cq_rps[c][last] / best);
	}
}

void section_cq(void)
{
	res.nr_cq = 0;
	for (int n = 1; n <= opt.cq_max_conns && res.nr_cq < MAX_CQ_POINTS; n *= 2)
		res.cq_n[res.nr_cq++] = n;
	printf("\n[4] the CLAN VIA paper's figure 7: completion-queue server, one CQ for all "
	       "receive queues,\n    one %d-byte request outstanding per "
	       "connection, echoed; requests/s counted by the\n    server in "
	       "%d windows of %.2f s after a %.2f s warm-up (median)\n",
	       MSG_BYTES, opt.cq_runs, opt.cq_window_s, opt.cq_window_s / 2);
	printf("  %8s %16s %16s\n", "conns", "VipCQDone req/s",
	       "VipCQWait req/s");
	for (int pi = 0; pi < res.nr_cq; pi++)
		run_cq_point(pi);
	print_scaling();
}
