/* SPDX-License-Identifier: MIT */
/*
 * Description: the Locked Memory Area tree (src/lmm/lma_tree.h).
 *
 * 1. Deterministic: the five intersection cases of the LMM paper's figure 3
 *    (new area before, after, inside, containing, overlapping one end of an
 *    existing LMA), identical and adjacent ranges, a new area spanning
 *    several LMAs and gaps as in figure 4, a sub that is not fully covered,
 *    and lock failures with rollback -- each step against hand-computed
 *    intervals and callbacks.
 * 2. Randomised (seed printed, argv[1] overrides): >= 10^5 operations on a
 *    2048-unit space against a brute-force per-unit count model.  Every
 *    add/sub must call lock/unlock for exactly the maximal runs going 0->1
 *    / 1->0, in address order; injected lock failures (first, second or
 *    third run) must roll back completely; a sub that is not fully covered
 *    must fail with -EINVAL and change nothing.  lma_tree_check() after
 *    every operation, full comparison (count_at of every unit, covered,
 *    nr_areas, for_each, for_each_gap) periodically.
 * 3. Scale: 10000 nested ranges; removing and re-adding the outermost one
 *    calls back only for its two edge units.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lmm/lma_tree.h"
#include "vdtest.h"
#include "vdtest_scale.h"

/* ---- failure context ------------------------------------------------- */

static uint64_t g_seed;
static char g_op[200]; /* the operation under test, printed on failure */

#define TCHECK(cond)                                                         \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "seed %" PRIu64 ", during: %s\n",    \
				g_seed, g_op);                               \
			VDT_CHECK(cond);                                     \
		}                                                            \
	} while (0)

#define TCHECK_EQ(a, b)                                                      \
	do {                                                                 \
		if ((long long)(a) != (long long)(b)) {                      \
			fprintf(stderr, "seed %" PRIu64 ", during: %s\n",    \
				g_seed, g_op);                               \
			VDT_CHECK_EQ(a, b);                                  \
		}                                                            \
	} while (0)

/* ---- random numbers (splitmix64) -------------------------------------- */

static uint64_t g_rng;

static uint64_t rnd(void)
{
	uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [0, n), n > 0. */
static size_t below(size_t n)
{
	return (size_t)(rnd() % n);
}

static size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* ---- callback recorder ----------------------------------------------- */

struct call {
	char kind; /* '+' lock, '-' unlock */
	int failed; /* the lock callback returned an error */
	uintptr_t start, end;
};

struct recorder {
	size_t universe;       /* units [0, universe) may be touched */
	unsigned char *locked; /* model of units currently "mlocked" */
	struct call *calls;    /* callbacks of the current operation */
	size_t nr_calls, cap_calls;
	int fail_at;  /* index of the lock call to fail in this op, -1 none */
	int nr_locks; /* lock calls in this op */
};

static void recorder_init(struct recorder *r, size_t universe)
{
	r->universe = universe;
	r->locked = calloc(universe, 1);
	r->cap_calls = universe + 8;
	r->calls = calloc(r->cap_calls, sizeof(*r->calls));
	VDT_CHECK(r->locked && r->calls);
	r->nr_calls = 0;
	r->fail_at = -1;
	r->nr_locks = 0;
}

static void recorder_fini(struct recorder *r)
{
	free(r->locked);
	free(r->calls);
}

static void recorder_start_op(struct recorder *r, int fail_at)
{
	r->nr_calls = 0;
	r->nr_locks = 0;
	r->fail_at = fail_at;
}

static void record_call(struct recorder *r, char kind, uintptr_t s,
			uintptr_t e, int failed)
{
	TCHECK(r->nr_calls < r->cap_calls);
	r->calls[r->nr_calls].kind = kind;
	r->calls[r->nr_calls].failed = failed;
	r->calls[r->nr_calls].start = s;
	r->calls[r->nr_calls].end = e;
	r->nr_calls++;
}

/* Every unit of [s, e) must currently be in state `from`; set it to `to`. */
static void flip_locked(struct recorder *r, uintptr_t s, uintptr_t e,
			unsigned char from, unsigned char to)
{
	TCHECK(s < e && e <= r->universe);
	for (uintptr_t u = s; u < e; u++) {
		if (r->locked[u] != from)
			fprintf(stderr, "unit %" PRIuPTR " is %slocked\n", u,
				from ? "not " : "already ");
		TCHECK(r->locked[u] == from);
		r->locked[u] = to;
	}
}

static int rec_lock(void *ctx, uintptr_t s, uintptr_t e)
{
	struct recorder *r = ctx;
	int fail = r->fail_at >= 0 && r->nr_locks == r->fail_at;

	r->nr_locks++;
	record_call(r, '+', s, e, fail);
	if (fail) {
		TCHECK(s < e && e <= r->universe);
		return -ENOMEM;
	}
	flip_locked(r, s, e, 0, 1);
	return 0;
}

static void rec_unlock(void *ctx, uintptr_t s, uintptr_t e)
{
	struct recorder *r = ctx;

	record_call(r, '-', s, e, 0);
	flip_locked(r, s, e, 1, 0);
}

static struct lma_range_ops recorder_ops(struct recorder *r)
{
	struct lma_range_ops ops = { rec_lock, rec_unlock, r };

	return ops;
}

/* The locked model must equal "count > 0" for every unit. */
static void check_locked_matches_tree(const struct lma_tree *t,
				      const struct recorder *r)
{
	for (uintptr_t u = 0; u < r->universe; u++)
		TCHECK_EQ(r->locked[u], lma_tree_count_at(t, u) > 0);
}

/* ---- text forms, for the deterministic part -------------------------- */

struct strbuf {
	char s[1024];
	size_t len;
};

static void __attribute__((format(printf, 2, 3)))
sb_add(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->len)
		b->s[b->len++] = ' ';
	va_start(ap, fmt);
	n = vsnprintf(b->s + b->len, sizeof(b->s) - b->len, fmt, ap);
	va_end(ap);
	VDT_CHECK(n > 0 && (size_t)n < sizeof(b->s) - b->len);
	b->len += (size_t)n;
}

static void visit_to_str(void *ctx, uintptr_t s, uintptr_t e, uint64_t c)
{
	sb_add(ctx, "%" PRIuPTR "-%" PRIuPTR ":%" PRIu64, s, e, c);
}

/* "10-20:1 20-30:2": every interval in order. */
static const char *tree_str(const struct lma_tree *t, struct strbuf *b)
{
	b->len = 0;
	b->s[0] = 0;
	lma_tree_for_each(t, visit_to_str, b);
	return b->s;
}

static int cmp_call_start(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* "+0,10 +20,40! -0,10": the calls of the last op; '!' marks the failed
 * lock.  Rollback unlocks (those after a failed lock) may come in any
 * order and are listed sorted. */
static const char *calls_str(struct recorder *r, struct strbuf *b)
{
	size_t i, fail = r->nr_calls;

	for (i = 0; i < r->nr_calls; i++)
		if (r->calls[i].failed)
			fail = i;
	if (fail + 1 < r->nr_calls)
		qsort(r->calls + fail + 1, r->nr_calls - fail - 1,
		      sizeof(*r->calls), cmp_call_start);
	b->len = 0;
	b->s[0] = 0;
	for (i = 0; i < r->nr_calls; i++) {
		const struct call *c = &r->calls[i];

		sb_add(b, "%c%" PRIuPTR ",%" PRIuPTR "%s", c->kind, c->start,
		       c->end, c->failed ? "!" : "");
	}
	return b->s;
}

/* ---- deterministic part ---------------------------------------------- */

/* One step: op '+' (add) or '-' (sub) of [s, e), failing lock call
 * fail_at (-1: none); expect return value, callbacks and resulting tree. */
static void step(struct lma_tree *t, struct recorder *r, char op, uintptr_t s,
		 uintptr_t e, int fail_at, int want_ret, const char *want_calls,
		 const char *want_tree)
{
	struct lma_range_ops ops = recorder_ops(r);
	struct strbuf b;
	int ret;

	snprintf(g_op, sizeof(g_op), "figure step %c[%" PRIuPTR ",%" PRIuPTR
		 ") fail_at %d", op, s, e, fail_at);
	recorder_start_op(r, fail_at);
	ret = op == '+' ? lma_tree_add(t, s, e, &ops)
			: lma_tree_sub(t, s, e, &ops);
	TCHECK_EQ(ret, want_ret);
	TCHECK_EQ(lma_tree_check(t), 0);
	if (strcmp(calls_str(r, &b), want_calls)) {
		fprintf(stderr, "callbacks \"%s\", expected \"%s\"\n", b.s,
			want_calls);
		TCHECK(!"callbacks as expected");
	}
	if (strcmp(tree_str(t, &b), want_tree)) {
		fprintf(stderr, "tree \"%s\", expected \"%s\"\n", b.s,
			want_tree);
		TCHECK(!"tree as expected");
	}
	check_locked_matches_tree(t, r);
}

#define BASE "100-200:1"

/* Figure 3: a new area against one existing LMA [100, 200): callbacks and
 * tree after adding it, callbacks when removing it again. */
static void test_figure3_cases(void)
{
	static const struct {
		const char *what;
		uintptr_t s, e;
		const char *locks, *tree, *unlocks;
	} cases[] = {
		{ "before", 20, 50, "+20,50", "20-50:1 " BASE, "-20,50" },
		{ "after", 250, 300, "+250,300", BASE " 250-300:1", "-250,300" },
		{ "adjacent left", 50, 100, "+50,100", "50-200:1", "-50,100" },
		{ "adjacent right", 200, 260, "+200,260", "100-260:1",
		  "-200,260" },
		{ "inside", 120, 150, "", "100-120:1 120-150:2 150-200:1", "" },
		{ "inside at left edge", 100, 150, "", "100-150:2 150-200:1",
		  "" },
		{ "inside at right edge", 150, 200, "", "100-150:1 150-200:2",
		  "" },
		{ "identical", 100, 200, "", "100-200:2", "" },
		{ "containing", 50, 250, "+50,100 +200,250",
		  "50-100:1 100-200:2 200-250:1", "-50,100 -200,250" },
		{ "overlapping left", 50, 150, "+50,100",
		  "50-100:1 100-150:2 150-200:1", "-50,100" },
		{ "overlapping right", 150, 250, "+200,250",
		  "100-150:1 150-200:2 200-250:1", "-200,250" },
		{ "one unit over the end", 199, 201, "+200,201",
		  "100-199:1 199-200:2 200-201:1", "-200,201" },
		{ "unit 0", 0, 1, "+0,1", "0-1:1 " BASE, "-0,1" },
	};
	struct lma_tree t;
	struct recorder r;
	size_t i;

	recorder_init(&r, 1024);
	lma_tree_init(&t);
	step(&t, &r, '+', 100, 200, -1, 0, "+100,200", BASE);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		step(&t, &r, '+', cases[i].s, cases[i].e, -1, 0,
		     cases[i].locks, cases[i].tree);
		step(&t, &r, '-', cases[i].s, cases[i].e, -1, 0,
		     cases[i].unlocks, BASE);
	}
	step(&t, &r, '-', 100, 200, -1, 0, "-100,200", "");
	TCHECK_EQ(lma_tree_nr_areas(&t), 0);
	TCHECK_EQ(lma_tree_covered(&t), 0);
	lma_tree_fini(&t);
	recorder_fini(&r);
}

/* Figure 4: a new area spanning several LMAs of different counts and the
 * gaps between them; merging when counts become equal again; a sub that
 * is not fully covered; lock failure and rollback. */
static void test_figure4_spanning(void)
{
	const char *orig = "10-20:1 20-30:2 40-50:1 60-70:3";
	struct lma_tree t;
	struct recorder r;

	recorder_init(&r, 1024);
	lma_tree_init(&t);
	step(&t, &r, '+', 10, 30, -1, 0, "+10,30", "10-30:1");
	step(&t, &r, '+', 20, 30, -1, 0, "", "10-20:1 20-30:2");
	step(&t, &r, '+', 40, 50, -1, 0, "+40,50", "10-20:1 20-30:2 40-50:1");
	step(&t, &r, '+', 60, 70, -1, 0, "+60,70",
	     "10-20:1 20-30:2 40-50:1 60-70:1");
	step(&t, &r, '+', 60, 70, -1, 0, "", "10-20:1 20-30:2 40-50:1 60-70:2");
	step(&t, &r, '+', 60, 70, -1, 0, "", orig);
	TCHECK_EQ(lma_tree_nr_areas(&t), 4);
	TCHECK_EQ(lma_tree_covered(&t), 40);

	step(&t, &r, '+', 15, 65, -1, 0, "+30,40 +50,60",
	     "10-15:1 15-20:2 20-30:3 30-40:1 40-50:2 50-60:1 60-65:4 65-70:3");
	TCHECK_EQ(lma_tree_nr_areas(&t), 8);
	TCHECK_EQ(lma_tree_count_at(&t, 14), 1);
	TCHECK_EQ(lma_tree_count_at(&t, 15), 2);
	TCHECK_EQ(lma_tree_count_at(&t, 64), 4);
	TCHECK_EQ(lma_tree_count_at(&t, 70), 0);
	TCHECK_EQ(lma_tree_count_at(&t, 9), 0);
	step(&t, &r, '-', 15, 65, -1, 0, "-30,40 -50,60", orig);

	/* Not fully covered: gap [30, 40) inside, or a gap at either end. */
	step(&t, &r, '-', 25, 45, -1, -EINVAL, "", orig);
	step(&t, &r, '-', 5, 15, -1, -EINVAL, "", orig);
	step(&t, &r, '-', 65, 75, -1, -EINVAL, "", orig);
	step(&t, &r, '-', 30, 40, -1, -EINVAL, "", orig);
	step(&t, &r, '-', 100, 200, -1, -EINVAL, "", orig);

	/* Rollback: the 1st, 2nd and 3rd lock call fails. */
	step(&t, &r, '+', 0, 80, 0, -ENOMEM, "+0,10!", orig);
	step(&t, &r, '+', 0, 80, 1, -ENOMEM, "+0,10 +30,40! -0,10", orig);
	step(&t, &r, '+', 0, 80, 2, -ENOMEM,
	     "+0,10 +30,40 +50,60! -0,10 -30,40", orig);
	step(&t, &r, '+', 0, 80, 3, -ENOMEM,
	     "+0,10 +30,40 +50,60 +70,80! -0,10 -30,40 -50,60", orig);
	step(&t, &r, '+', 0, 80, 4, 0, "+0,10 +30,40 +50,60 +70,80",
	     "0-10:1 10-20:2 20-30:3 30-40:1 40-50:2 50-60:1 60-70:4 70-80:1");
	step(&t, &r, '-', 0, 80, -1, 0, "-0,10 -30,40 -50,60 -70,80", orig);

	/* Merging: removing [20, 30)'s second count joins it with [10, 20). */
	step(&t, &r, '-', 20, 30, -1, 0, "", "10-30:1 40-50:1 60-70:3");
	/* Filling the gap joins three areas into one. */
	step(&t, &r, '+', 30, 40, -1, 0, "+30,40", "10-50:1 60-70:3");
	step(&t, &r, '-', 10, 50, -1, 0, "-10,50", "60-70:3");

	lma_tree_clear(&t);
	TCHECK_EQ(lma_tree_nr_areas(&t), 0);
	TCHECK_EQ(lma_tree_covered(&t), 0);
	TCHECK_EQ(lma_tree_count_at(&t, 65), 0);
	TCHECK_EQ(lma_tree_check(&t), 0);
	/* The tree is usable after clear. */
	memset(r.locked, 0, r.universe);
	step(&t, &r, '+', 1, 2, -1, 0, "+1,2", "1-2:1");
	lma_tree_fini(&t);
	recorder_fini(&r);
}

/* ---- brute-force model ------------------------------------------------ */

#define UNITS 2048u
#define MAX_LIVE 128

struct iv {
	uintptr_t start, end;
	uint64_t count;
};

struct model {
	uint32_t count[UNITS];
	struct iv ivs[UNITS]; /* maximal runs of equal nonzero count */
	size_t nr_ivs;
	struct iv live[MAX_LIVE]; /* ranges added and not yet removed */
	size_t nr_live;
};

static void model_intervals(struct model *m)
{
	size_t u = 0;

	m->nr_ivs = 0;
	while (u < UNITS) {
		size_t v = u + 1;

		while (v < UNITS && m->count[v] == m->count[u])
			v++;
		if (m->count[u]) {
			struct iv *iv = &m->ivs[m->nr_ivs++];

			iv->start = u;
			iv->end = v;
			iv->count = m->count[u];
		}
		u = v;
	}
}

/* Maximal runs inside [s, e) whose model count equals value. */
static size_t model_runs(const struct model *m, size_t s, size_t e,
			 uint32_t value, struct iv *out)
{
	size_t n = 0, u = s;

	while (u < e) {
		size_t v;

		if (m->count[u] != value) {
			u++;
			continue;
		}
		for (v = u + 1; v < e && m->count[v] == value; v++)
			;
		out[n].start = u;
		out[n].end = v;
		out[n].count = value;
		n++;
		u = v;
	}
	return n;
}

static size_t model_covered(const struct model *m)
{
	size_t u, n = 0;

	for (u = 0; u < UNITS; u++)
		n += m->count[u] != 0;
	return n;
}

struct collect {
	struct iv *ivs;
	size_t nr, cap;
};

static void visit_collect(void *ctx, uintptr_t s, uintptr_t e, uint64_t c)
{
	struct collect *col = ctx;

	TCHECK(col->nr < col->cap);
	col->ivs[col->nr].start = s;
	col->ivs[col->nr].end = e;
	col->ivs[col->nr].count = c;
	col->nr++;
}

static void check_ivs_equal(const struct iv *got, size_t nr_got,
			    const struct iv *want, size_t nr_want,
			    const char *what)
{
	size_t i;

	if (nr_got != nr_want)
		fprintf(stderr, "%s: %zu intervals, expected %zu\n", what,
			nr_got, nr_want);
	TCHECK_EQ(nr_got, nr_want);
	for (i = 0; i < nr_got; i++) {
		if (got[i].start != want[i].start || got[i].end != want[i].end ||
		    got[i].count != want[i].count)
			fprintf(stderr,
				"%s #%zu: [%" PRIuPTR ",%" PRIuPTR ")x%" PRIu64
				", expected [%" PRIuPTR ",%" PRIuPTR ")x%" PRIu64
				"\n",
				what, i, got[i].start, got[i].end,
				got[i].count, want[i].start, want[i].end,
				want[i].count);
		TCHECK(got[i].start == want[i].start &&
		       got[i].end == want[i].end &&
		       got[i].count == want[i].count);
	}
}

/* for_each, nr_areas and covered against the model (cheap: every op). */
static void check_intervals(const struct lma_tree *t, struct model *m)
{
	static struct iv got[UNITS + 1];
	struct collect col = { got, 0, UNITS + 1 };

	model_intervals(m);
	lma_tree_for_each(t, visit_collect, &col);
	check_ivs_equal(got, col.nr, m->ivs, m->nr_ivs, "for_each");
	TCHECK_EQ(lma_tree_nr_areas(t), m->nr_ivs);
	TCHECK_EQ(lma_tree_covered(t), model_covered(m));
}

static void check_gaps(const struct lma_tree *t, const struct model *m,
		       size_t s, size_t e)
{
	static struct iv got[UNITS + 1], want[UNITS + 1];
	struct collect col = { got, 0, UNITS + 1 };
	size_t n = model_runs(m, s, e, 0, want);

	lma_tree_for_each_gap(t, s, e, visit_collect, &col);
	check_ivs_equal(got, col.nr, want, n, "for_each_gap");
}

/* Everything: count of every unit, locked model, gaps. */
static void check_full(const struct lma_tree *t, struct model *m,
		       const struct recorder *r)
{
	size_t u, i;

	check_intervals(t, m);
	for (u = 0; u < UNITS; u++)
		TCHECK_EQ(lma_tree_count_at(t, u), m->count[u]);
	TCHECK_EQ(lma_tree_count_at(t, UNITS), 0);
	TCHECK_EQ(lma_tree_count_at(t, UINTPTR_MAX), 0);
	check_locked_matches_tree(t, r);
	check_gaps(t, m, 0, UNITS);
	for (i = 0; i < 4; i++) {
		size_t s = below(UNITS), e = s + 1 + below(UNITS - s);

		check_gaps(t, m, s, e);
	}
}

/* ---- random operations ----------------------------------------------- */

enum add_kind {
	ADD_RANDOM,
	ADD_BEFORE,
	ADD_AFTER,
	ADD_INSIDE,
	ADD_CONTAINING,
	ADD_OVERLAP_LEFT,
	ADD_OVERLAP_RIGHT,
	ADD_IDENTICAL,
	ADD_ADJACENT,
	ADD_DUPLICATE_LIVE,
	ADD_SPANNING,
	ADD_KINDS
};

static const char *const add_kind_names[ADD_KINDS] = {
	"random",	"before",	 "after",	  "inside",
	"containing",	"overlap-left", "overlap-right", "identical",
	"adjacent",	"duplicate",	 "spanning",
};

struct stats {
	unsigned long adds[ADD_KINDS], subs, subs_uncovered;
	unsigned long fails[3], multi_run_adds, multi_run_subs;
	unsigned long long sum_covered, sum_areas;
};

static size_t random_length(size_t room)
{
	size_t r = below(20), len;

	if (r < 9)
		len = 1 + below(8);
	else if (r < 19)
		len = 1 + below(64);
	else
		len = 1 + below(UNITS / 2);
	return min_sz(len, room);
}

static void random_range(size_t *s, size_t *e)
{
	*s = below(UNITS);
	*e = *s + random_length(UNITS - *s);
}

/* A range in relation `kind` to an existing area [a, b) (figure 3).
 * Returns 0 when the relation is impossible for this area. */
static int range_for_kind(enum add_kind kind, size_t a, size_t b, size_t *s,
			  size_t *e)
{
	switch (kind) {
	case ADD_BEFORE: /* ends at or before a, possibly touching */
		if (a == 0)
			return 0;
		*e = a - below(min_sz(a, 8));
		*s = *e - 1 - below(min_sz(*e, 64));
		return 1;
	case ADD_AFTER:
		if (b >= UNITS)
			return 0;
		*s = b + below(min_sz(UNITS - b, 8));
		*e = *s + 1 + below(min_sz(UNITS - *s, 64));
		return 1;
	case ADD_INSIDE:
		*s = a + below(b - a);
		*e = *s + 1 + below(b - *s);
		return 1;
	case ADD_CONTAINING:
		*s = a - below(min_sz(a + 1, 32));
		*e = b + below(min_sz(UNITS - b + 1, 32));
		return 1;
	case ADD_OVERLAP_LEFT: /* s < a < e < b */
		if (a == 0 || b - a < 2)
			return 0;
		*s = a - 1 - below(min_sz(a, 32));
		*e = a + 1 + below(b - a - 1);
		return 1;
	case ADD_OVERLAP_RIGHT: /* a < s < b < e */
		if (b >= UNITS || b - a < 2)
			return 0;
		*s = a + 1 + below(b - a - 1);
		*e = b + 1 + below(min_sz(UNITS - b, 32));
		return 1;
	case ADD_IDENTICAL:
		*s = a;
		*e = b;
		return 1;
	case ADD_ADJACENT:
		if (rnd() & 1) {
			if (a == 0)
				return 0;
			*e = a;
			*s = a - 1 - below(min_sz(a, 64));
		} else {
			if (b >= UNITS)
				return 0;
			*s = b;
			*e = b + 1 + below(min_sz(UNITS - b, 64));
		}
		return 1;
	default:
		return 0;
	}
}

/* From inside one gap to inside a later one: the range covers up to four
 * gaps and the areas between them, so locking it takes several runs. */
static int spanning_range(const struct model *m, size_t *s, size_t *e)
{
	static struct iv gaps[UNITS];
	size_t n = model_runs(m, 0, UNITS, 0, gaps), i, j;

	if (n < 2)
		return 0;
	i = below(n - 1);
	j = i + 1 + below(min_sz(n - i - 1, 3));
	*s = gaps[i].start + below(gaps[i].end - gaps[i].start);
	*e = gaps[j].start + 1 + below(gaps[j].end - gaps[j].start);
	return 1;
}

static enum add_kind choose_add_range(const struct model *m, size_t *s,
				      size_t *e)
{
	enum add_kind kind = (enum add_kind)below(ADD_KINDS);

	if (kind == ADD_DUPLICATE_LIVE && m->nr_live) {
		const struct iv *l = &m->live[below(m->nr_live)];

		*s = l->start;
		*e = l->end;
		return kind;
	}
	if (kind == ADD_SPANNING && spanning_range(m, s, e))
		return kind;
	if (kind != ADD_RANDOM && kind != ADD_DUPLICATE_LIVE &&
	    kind != ADD_SPANNING && m->nr_ivs) {
		const struct iv *iv = &m->ivs[below(m->nr_ivs)];

		if (range_for_kind(kind, iv->start, iv->end, s, e))
			return kind;
	}
	random_range(s, e);
	return ADD_RANDOM;
}

/* The callbacks of the last op must be exactly `want` (in order) of the
 * given kind, nothing else. */
static void check_calls_exact(const struct call *calls, size_t nr_calls,
			      char kind, const struct iv *want, size_t n)
{
	size_t i;

	if (nr_calls != n)
		fprintf(stderr, "%zu callbacks, expected %zu\n", nr_calls, n);
	TCHECK_EQ(nr_calls, n);
	for (i = 0; i < n; i++) {
		const struct call *c = &calls[i];

		if (c->kind != kind || c->start != want[i].start ||
		    c->end != want[i].end)
			fprintf(stderr,
				"callback #%zu: %c[%" PRIuPTR ",%" PRIuPTR
				"), expected %c[%" PRIuPTR ",%" PRIuPTR ")\n",
				i, c->kind, c->start, c->end, kind,
				want[i].start, want[i].end);
		TCHECK(c->kind == kind && c->start == want[i].start &&
		       c->end == want[i].end);
	}
}

/* After lock call #k failed: locks of runs 0..k in order, then unlocks of
 * runs 0..k-1 in any order. */
static void check_calls_rollback(struct recorder *r, const struct iv *runs,
				 size_t k)
{
	size_t i;

	TCHECK_EQ(r->nr_calls, 2 * k + 1);
	check_calls_exact(r->calls, k + 1, '+', runs, k + 1);
	TCHECK(r->calls[k].failed);
	qsort(r->calls + k + 1, k, sizeof(*r->calls), cmp_call_start);
	for (i = 0; i < k; i++) {
		const struct call *c = &r->calls[k + 1 + i];

		TCHECK(c->kind == '-' && c->start == runs[i].start &&
		       c->end == runs[i].end);
	}
}

static void do_add(struct lma_tree *t, struct model *m, struct recorder *r,
		   struct stats *st)
{
	static struct iv runs[UNITS];
	struct lma_range_ops ops = recorder_ops(r);
	size_t s, e, n, u;
	enum add_kind kind = choose_add_range(m, &s, &e);
	int fail_at = below(6) == 0 ? (int)below(3) : -1;
	int ret;

	n = model_runs(m, s, e, 0, runs);
	snprintf(g_op, sizeof(g_op), "add %s [%zu,%zu) fail_at %d, %zu runs",
		 add_kind_names[kind], s, e, fail_at, n);
	recorder_start_op(r, fail_at);
	ret = lma_tree_add(t, s, e, &ops);
	TCHECK_EQ(lma_tree_check(t), 0);
	if (fail_at >= 0 && (size_t)fail_at < n) {
		TCHECK_EQ(ret, -ENOMEM);
		check_calls_rollback(r, runs, (size_t)fail_at);
		st->fails[fail_at]++;
		return;
	}
	TCHECK_EQ(ret, 0);
	check_calls_exact(r->calls, r->nr_calls, '+', runs, n);
	for (u = s; u < e; u++)
		m->count[u]++;
	m->live[m->nr_live].start = s;
	m->live[m->nr_live].end = e;
	m->nr_live++;
	st->adds[kind]++;
	st->multi_run_adds += n > 1;
}

static void do_sub_live(struct lma_tree *t, struct model *m,
			struct recorder *r, struct stats *st)
{
	static struct iv runs[UNITS];
	struct lma_range_ops ops = recorder_ops(r);
	size_t i = below(m->nr_live), s = m->live[i].start, e = m->live[i].end;
	size_t n = model_runs(m, s, e, 1, runs), u;

	snprintf(g_op, sizeof(g_op), "sub live [%zu,%zu), %zu runs", s, e, n);
	recorder_start_op(r, -1);
	TCHECK_EQ(lma_tree_sub(t, s, e, &ops), 0);
	TCHECK_EQ(lma_tree_check(t), 0);
	check_calls_exact(r->calls, r->nr_calls, '-', runs, n);
	for (u = s; u < e; u++)
		m->count[u]--;
	m->live[i] = m->live[--m->nr_live];
	st->subs++;
	st->multi_run_subs += n > 1;
}

/* A range containing at least one unit of count 0. */
static int uncovered_range(const struct model *m, size_t *s, size_t *e)
{
	size_t z = below(UNITS), tries;

	for (tries = 0; tries < UNITS && m->count[z]; tries++)
		z = (z + 1) % UNITS;
	if (m->count[z])
		return 0;
	*s = z - below(min_sz(z + 1, below(2) ? 4 : 200));
	*e = z + 1 + below(min_sz(UNITS - z, below(2) ? 4 : 200));
	return 1;
}

static void do_sub_uncovered(struct lma_tree *t, struct model *m,
			     struct recorder *r, struct stats *st)
{
	struct lma_range_ops ops = recorder_ops(r);
	size_t s, e;

	if (!uncovered_range(m, &s, &e))
		return;
	snprintf(g_op, sizeof(g_op), "sub uncovered [%zu,%zu)", s, e);
	recorder_start_op(r, -1);
	TCHECK_EQ(lma_tree_sub(t, s, e, &ops), -EINVAL);
	TCHECK_EQ(lma_tree_check(t), 0);
	TCHECK_EQ(r->nr_calls, 0);
	st->subs_uncovered++;
}

static void drain(struct lma_tree *t, struct model *m, struct recorder *r,
		  struct stats *st)
{
	while (m->nr_live)
		do_sub_live(t, m, r, st);
	snprintf(g_op, sizeof(g_op), "after draining");
	TCHECK_EQ(lma_tree_nr_areas(t), 0);
	TCHECK_EQ(lma_tree_covered(t), 0);
}

static void test_random(long nr_ops)
{
	static struct model m;
	struct stats st;
	struct lma_tree t;
	struct recorder r;
	long op;
	int k;

	memset(&m, 0, sizeof(m));
	memset(&st, 0, sizeof(st));
	recorder_init(&r, UNITS);
	lma_tree_init(&t);
	for (op = 0; op < nr_ops; op++) {
		size_t roll = below(100), add_pct = m.nr_live < 24 ? 65 : 45;

		if (m.nr_live < MAX_LIVE && (m.nr_live == 0 || roll < add_pct))
			do_add(&t, &m, &r, &st);
		else if (roll < 88 || m.nr_live == MAX_LIVE)
			do_sub_live(&t, &m, &r, &st);
		else
			do_sub_uncovered(&t, &m, &r, &st);
		check_intervals(&t, &m);
		st.sum_covered += lma_tree_covered(&t);
		st.sum_areas += m.nr_ivs;
		if (op % 61 == 0)
			check_full(&t, &m, &r);
		if (op % 20000 == 19999)
			drain(&t, &m, &r, &st);
	}
	check_full(&t, &m, &r);
	drain(&t, &m, &r, &st);
	check_full(&t, &m, &r);

	printf("random: %ld ops, subs %lu, uncovered subs %lu, failed adds "
	       "%lu/%lu/%lu, multi-run adds %lu subs %lu\n",
	       nr_ops, st.subs, st.subs_uncovered, st.fails[0], st.fails[1],
	       st.fails[2], st.multi_run_adds, st.multi_run_subs);
	printf("  mean covered %llu of %u units, mean areas %llu\n",
	       st.sum_covered / (unsigned long long)nr_ops, UNITS,
	       st.sum_areas / (unsigned long long)nr_ops);
	printf("  adds:");
	for (k = 0; k < ADD_KINDS; k++)
		printf(" %s %lu", add_kind_names[k], st.adds[k]);
	printf("\n");
	/* The interesting cases really happened (minimums far below what
	 * any seed gives). */
	if (nr_ops >= 10000) {
		for (k = 0; k < ADD_KINDS; k++)
			VDT_CHECK(st.adds[k] >= (unsigned long)nr_ops / 2000);
		for (k = 0; k < 3; k++)
			VDT_CHECK(st.fails[k] >= (unsigned long)nr_ops / 15000);
		VDT_CHECK(st.subs_uncovered >= (unsigned long)nr_ops / 100);
		VDT_CHECK(st.multi_run_adds >= (unsigned long)nr_ops / 200);
		VDT_CHECK(st.multi_run_subs >= (unsigned long)nr_ops / 200);
	}
	lma_tree_fini(&t);
	recorder_fini(&r);
}

/* ---- scale ----------------------------------------------------------- */

/* N nested ranges [i, 2N-i): one lock for the first, none for the rest;
 * removing/re-adding the outermost only touches its two edge units. */
static void test_nested_scale(void)
{
	enum { N = 10000 };
	struct lma_tree t;
	struct recorder r;
	struct lma_range_ops ops;
	struct strbuf b;
	uintptr_t i;
	size_t locks = 0;

	recorder_init(&r, 2 * N);
	ops = recorder_ops(&r);
	lma_tree_init(&t);
	snprintf(g_op, sizeof(g_op), "nested adds");
	for (i = 0; i < N; i++) {
		recorder_start_op(&r, -1);
		TCHECK_EQ(lma_tree_add(&t, i, 2 * N - i, &ops), 0);
		locks += r.nr_calls;
	}
	TCHECK_EQ(locks, 1);
	TCHECK_EQ(lma_tree_check(&t), 0);
	TCHECK_EQ(lma_tree_nr_areas(&t), 2 * N - 1);
	TCHECK_EQ(lma_tree_covered(&t), 2 * N);
	TCHECK_EQ(lma_tree_count_at(&t, 0), 1);
	TCHECK_EQ(lma_tree_count_at(&t, N - 1), N);
	TCHECK_EQ(lma_tree_count_at(&t, N), N);
	TCHECK_EQ(lma_tree_count_at(&t, 2 * N - 1), 1);
	TCHECK_EQ(lma_tree_count_at(&t, 1234), 1235);

	snprintf(g_op, sizeof(g_op), "nested: sub outermost");
	recorder_start_op(&r, -1);
	TCHECK_EQ(lma_tree_sub(&t, 0, 2 * N, &ops), 0);
	TCHECK(!strcmp(calls_str(&r, &b), "-0,1 -19999,20000"));
	TCHECK_EQ(lma_tree_nr_areas(&t), 2 * N - 3);
	snprintf(g_op, sizeof(g_op), "nested: re-add outermost");
	recorder_start_op(&r, -1);
	TCHECK_EQ(lma_tree_add(&t, 0, 2 * N, &ops), 0);
	TCHECK(!strcmp(calls_str(&r, &b), "+0,1 +19999,20000"));
	TCHECK_EQ(lma_tree_check(&t), 0);
	TCHECK_EQ(lma_tree_nr_areas(&t), 2 * N - 1);

	/* Outermost first: two edge units each time, one run at the end. */
	snprintf(g_op, sizeof(g_op), "nested: sub all");
	for (i = 0; i < N; i++) {
		recorder_start_op(&r, -1);
		TCHECK_EQ(lma_tree_sub(&t, i, 2 * N - i, &ops), 0);
		TCHECK_EQ(r.nr_calls, i == N - 1 ? 1 : 2);
	}
	TCHECK_EQ(lma_tree_nr_areas(&t), 0);
	TCHECK_EQ(lma_tree_check(&t), 0);
	for (i = 0; i < 2 * N; i++)
		TCHECK_EQ(r.locked[i], 0);
	lma_tree_fini(&t);
	recorder_fini(&r);
}

int main(int argc, char **argv)
{
	long nr_ops = vdt_iterations(120000, 30000);

	g_seed = argc > 1 ? strtoull(argv[1], NULL, 0)
			  : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	g_rng = g_seed;
	printf("seed %" PRIu64 " (rerun: %s %" PRIu64 ")\n", g_seed, argv[0],
	       g_seed);
	fflush(stdout);

	test_figure3_cases();
	printf("ok figure 3 cases\n");
	test_figure4_spanning();
	printf("ok figure 4 spanning, rollback, merging\n");
	test_random(nr_ops);
	printf("ok random\n");
	test_nested_scale();
	printf("ok nested scale\n");
	return VDT_PASS;
}
