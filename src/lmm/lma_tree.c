/* SPDX-License-Identifier: MIT */
/*
 * Treap of Locked Memory Areas with lazy range-add (see lma_tree.h).
 *
 * Invariants.  A node's count and min are exact once every ancestor's
 * pending lazy has been pushed; a node's lazy is owed to its children only.
 * So a child's true min is child->min + parent->lazy, and read-only walks
 * (which may not push) carry the sum of ancestors' lazies along.
 *
 * Subtree aggregates: lo/hi (first start, last end), covered (sum of
 * lengths) -- a subtree has no hole iff covered == hi - lo, which lets gap
 * searches skip whole subtrees -- min (smallest count, for finding counts
 * that reached zero) and size (node count).
 */
#include "lmm/lma_tree.h"

#include <errno.h>
#include <stdbool.h>

struct lma_node {
	uintptr_t start, end;
	int64_t count;
	int64_t lazy;
	int64_t min;
	uintptr_t lo, hi, covered;
	size_t size;
	uint32_t prio;
	struct lma_node *l, *r;
};

/* ---- node primitives --------------------------------------------------- */

static uint32_t next_prio(struct lma_tree *t)
{
	/* xorshift64: priorities only need to look random to the treap. */
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 7;
	t->rng ^= t->rng << 17;
	return (uint32_t)(t->rng >> 32);
}

static void apply_add(struct lma_node *n, int64_t d)
{
	if (!n)
		return;
	n->count += d;
	n->min += d;
	n->lazy += d;
}

static void push(struct lma_node *n)
{
	if (n->lazy) {
		apply_add(n->l, n->lazy);
		apply_add(n->r, n->lazy);
		n->lazy = 0;
	}
}

/* Recompute n's aggregates; n must have been pushed. */
static void update(struct lma_node *n)
{
	n->min = n->count;
	n->lo = n->start;
	n->hi = n->end;
	n->covered = n->end - n->start;
	n->size = 1;
	if (n->l) {
		if (n->l->min < n->min)
			n->min = n->l->min;
		n->lo = n->l->lo;
		n->covered += n->l->covered;
		n->size += n->l->size;
	}
	if (n->r) {
		if (n->r->min < n->min)
			n->min = n->r->min;
		n->hi = n->r->hi;
		n->covered += n->r->covered;
		n->size += n->r->size;
	}
}

static struct lma_node *node_new(struct lma_tree *t, uintptr_t start,
				 uintptr_t end, int64_t count)
{
	struct lma_node *n = vd_pool_alloc(&t->pool);

	if (!n)
		return NULL;
	*n = (struct lma_node){ .start = start, .end = end, .count = count,
				.prio = next_prio(t) };
	update(n);
	return n;
}

/* Nodes with start < key go to *a, the rest to *b. */
static void split(struct lma_node *n, uintptr_t key, struct lma_node **a,
		  struct lma_node **b)
{
	if (!n) {
		*a = *b = NULL;
		return;
	}
	push(n);
	if (n->start < key) {
		split(n->r, key, &n->r, b);
		*a = n;
	} else {
		split(n->l, key, a, &n->l);
		*b = n;
	}
	update(n);
}

/* Every node of a lies before every node of b. */
static struct lma_node *merge(struct lma_node *a, struct lma_node *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (a->prio > b->prio) {
		push(a);
		a->r = merge(a->r, b);
		update(a);
		return a;
	}
	push(b);
	b->l = merge(a, b->l);
	update(b);
	return b;
}

static struct lma_node *merge3(struct lma_node *a, struct lma_node *b,
			       struct lma_node *c)
{
	return merge(merge(a, b), c);
}

/* Insert a node that overlaps no other node. */
static struct lma_node *insert(struct lma_node *root, struct lma_node *n)
{
	struct lma_node *a, *b;

	split(root, n->start, &a, &b);
	return merge3(a, n, b);
}

static struct lma_node *pop_leftmost(struct lma_node *n, struct lma_node **out)
{
	push(n);
	if (!n->l) {
		*out = n;
		return n->r;
	}
	n->l = pop_leftmost(n->l, out);
	update(n);
	return n;
}

static void extend_rightmost(struct lma_node *n, uintptr_t end)
{
	push(n);
	if (n->r)
		extend_rightmost(n->r, end);
	else
		n->end = end;
	update(n);
}

/* Exact count of the rightmost/leftmost node (pushes along the spine). */
static struct lma_node *rightmost(struct lma_node *n)
{
	for (; n; n = n->r) {
		push(n);
		if (!n->r)
			break;
	}
	return n;
}

static struct lma_node *leftmost(struct lma_node *n)
{
	for (; n; n = n->l) {
		push(n);
		if (!n->l)
			break;
	}
	return n;
}

/* ---- structural operations on the whole tree --------------------------- */

/* Split the node straddling x (start < x < end) in two, so that x becomes
 * an interval boundary.  Needs one free node (reserved by the caller). */
static void cut_at(struct lma_tree *t, uintptr_t x)
{
	struct lma_node *n = t->root, *a, *mid, *b, *tail;

	while (n && !(n->start < x && x < n->end)) {
		push(n);
		n = x <= n->start ? n->l : n->r;
	}
	if (!n)
		return;
	split(t->root, n->start, &a, &mid);
	split(mid, n->start + 1, &mid, &b); /* mid is now n alone */
	tail = node_new(t, x, n->end, n->count);
	n->end = x;
	update(n);
	t->root = merge3(a, mid, merge(tail, b));
}

/* Merge the intervals meeting at x if they touch and have equal counts. */
static void merge_at(struct lma_tree *t, uintptr_t x)
{
	struct lma_node *a, *b, *left, *right, *gone;

	split(t->root, x, &a, &b);
	left = rightmost(a);
	right = leftmost(b);
	if (left && right && left->end == x && right->start == x &&
	    left->count == right->count) {
		b = pop_leftmost(b, &gone);
		extend_rightmost(a, gone->end);
		vd_pool_free(&t->pool, gone);
	}
	t->root = merge(a, b);
}

/* ---- gap walks ----------------------------------------------------------- */

struct gap_walk {
	uintptr_t cursor, end;
	lma_visit_fn fn;
	void *ctx;
	size_t found;
	size_t limit; /* stop reporting after this many gaps (0: no limit) */
};

static void gap_emit(struct gap_walk *w, uintptr_t until)
{
	if (until > w->end)
		until = w->end;
	if (w->cursor >= until)
		return;
	if (!w->limit || w->found < w->limit) {
		if (w->fn)
			w->fn(w->ctx, w->cursor, until, 0);
		w->found++;
	}
}

static void gap_advance(struct gap_walk *w, uintptr_t start, uintptr_t end)
{
	gap_emit(w, start);
	if (end > w->cursor)
		w->cursor = end;
}

static void gap_walk_node(const struct lma_node *n, struct gap_walk *w)
{
	if (!n || n->hi <= w->cursor || n->lo >= w->end || w->cursor >= w->end)
		return;
	if (n->covered == n->hi - n->lo) { /* no hole inside this subtree */
		gap_advance(w, n->lo, n->hi);
		return;
	}
	gap_walk_node(n->l, w);
	gap_advance(w, n->start, n->end);
	gap_walk_node(n->r, w);
}

static size_t walk_gaps(const struct lma_node *root, uintptr_t start,
			uintptr_t end, lma_visit_fn fn, void *ctx,
			size_t limit)
{
	struct gap_walk w = { .cursor = start, .end = end, .fn = fn,
			      .ctx = ctx, .limit = limit };

	gap_walk_node(root, &w);
	gap_emit(&w, end);
	return w.found;
}

/* ---- add ------------------------------------------------------------------- */

struct lock_walk {
	const struct lma_range_ops *ops;
	size_t done;    /* gaps locked so far */
	size_t undo;    /* while undoing: how many to unlock */
	int err;
};

static void lock_one_gap(void *ctx, uintptr_t s, uintptr_t e, uint64_t c)
{
	struct lock_walk *w = ctx;

	(void)c;
	if (w->err)
		return;
	w->err = w->ops->lock ? w->ops->lock(w->ops->ctx, s, e) : 0;
	if (!w->err)
		w->done++;
}

static void unlock_one_gap(void *ctx, uintptr_t s, uintptr_t e, uint64_t c)
{
	struct lock_walk *w = ctx;

	(void)c;
	if (w->undo) {
		w->undo--;
		if (w->ops->unlock)
			w->ops->unlock(w->ops->ctx, s, e);
	}
}

/* Lock every gap of m in [s, e); all or nothing. */
static int lock_gaps(const struct lma_node *m, uintptr_t s, uintptr_t e,
		     const struct lma_range_ops *ops)
{
	struct lock_walk w = { .ops = ops };

	walk_gaps(m, s, e, lock_one_gap, &w, 0);
	if (w.err) {
		w.undo = w.done;
		walk_gaps(m, s, e, unlock_one_gap, &w, 0);
	}
	return w.err;
}

struct fill_walk {
	struct lma_tree *t;
	struct lma_node *list; /* new gap nodes, chained through ->l */
};

static void make_gap_node(void *ctx, uintptr_t s, uintptr_t e, uint64_t c)
{
	struct fill_walk *w = ctx;
	struct lma_node *n = node_new(w->t, s, e, 1); /* reserved: never NULL */

	(void)c;
	n->l = w->list;
	w->list = n;
}

/* Fill every gap of m in [s, e) with a count-1 node. */
static struct lma_node *fill_gaps(struct lma_tree *t, struct lma_node *m,
				  uintptr_t s, uintptr_t e)
{
	struct fill_walk w = { .t = t };
	struct lma_node *n, *next;

	walk_gaps(m, s, e, make_gap_node, &w, 0);
	for (n = w.list; n; n = next) {
		next = n->l;
		n->l = NULL;
		m = insert(m, n);
	}
	return m;
}

/* Split the tree into L | M | R with M exactly the intervals in [s, e). */
static void carve(struct lma_tree *t, uintptr_t s, uintptr_t e,
		  struct lma_node **l, struct lma_node **m, struct lma_node **r)
{
	struct lma_node *mr;

	cut_at(t, s);
	cut_at(t, e);
	split(t->root, s, l, &mr);
	split(mr, e, m, r);
	t->root = NULL;
}

static void uncarve(struct lma_tree *t, uintptr_t s, uintptr_t e,
		    struct lma_node *l, struct lma_node *m, struct lma_node *r)
{
	t->root = merge3(l, m, r);
	merge_at(t, s);
	merge_at(t, e);
}

int lma_tree_add(struct lma_tree *t, uintptr_t start, uintptr_t end,
		 const struct lma_range_ops *ops)
{
	struct lma_node *l, *m, *r;
	size_t gaps;
	int err;

	if (start >= end)
		return -EINVAL;
	if (vd_pool_reserve(&t->pool, 2))
		return -ENOMEM;
	carve(t, start, end, &l, &m, &r);
	gaps = walk_gaps(m, start, end, NULL, NULL, 0);
	err = vd_pool_reserve(&t->pool, gaps);
	if (!err)
		err = lock_gaps(m, start, end, ops);
	if (!err) {
		apply_add(m, 1);
		m = fill_gaps(t, m, start, end);
	}
	uncarve(t, start, end, l, m, r);
	return err;
}

/* ---- sub ------------------------------------------------------------------- */

struct unlock_runs {
	const struct lma_range_ops *ops;
	uintptr_t start, end; /* pending run, coalesced across nodes */
};

static void flush_run(struct unlock_runs *u)
{
	if (u->start < u->end && u->ops->unlock)
		u->ops->unlock(u->ops->ctx, u->start, u->end);
	u->start = u->end = 0;
}

static void note_zero(struct unlock_runs *u, uintptr_t s, uintptr_t e)
{
	if (u->start < u->end && u->end == s) {
		u->end = e;
		return;
	}
	flush_run(u);
	u->start = s;
	u->end = e;
}

/* Remove nodes whose count reached 0, in address order. */
static struct lma_node *remove_zeros(struct lma_tree *t, struct lma_node *n,
				     struct unlock_runs *u)
{
	struct lma_node *rest;

	if (!n || n->min > 0)
		return n;
	push(n);
	n->l = remove_zeros(t, n->l, u);
	if (n->count == 0)
		note_zero(u, n->start, n->end);
	n->r = remove_zeros(t, n->r, u);
	if (n->count != 0) {
		update(n);
		return n;
	}
	rest = merge(n->l, n->r);
	vd_pool_free(&t->pool, n);
	return rest;
}

int lma_tree_sub(struct lma_tree *t, uintptr_t start, uintptr_t end,
		 const struct lma_range_ops *ops)
{
	struct unlock_runs u = { .ops = ops };
	struct lma_node *l, *m, *r;

	if (start >= end || walk_gaps(t->root, start, end, NULL, NULL, 1))
		return -EINVAL;
	if (vd_pool_reserve(&t->pool, 2))
		return -ENOMEM;
	carve(t, start, end, &l, &m, &r);
	apply_add(m, -1);
	m = remove_zeros(t, m, &u);
	flush_run(&u);
	uncarve(t, start, end, l, m, r);
	return 0;
}

/* ---- queries ---------------------------------------------------------------- */

void lma_tree_init(struct lma_tree *t)
{
	t->root = NULL;
	t->rng = 0x9e3779b97f4a7c15ULL;
	vd_pool_init(&t->pool, sizeof(struct lma_node));
}

static void free_subtree(struct lma_tree *t, struct lma_node *n)
{
	if (!n)
		return;
	free_subtree(t, n->l);
	free_subtree(t, n->r);
	vd_pool_free(&t->pool, n);
}

void lma_tree_clear(struct lma_tree *t)
{
	free_subtree(t, t->root);
	t->root = NULL;
}

void lma_tree_fini(struct lma_tree *t)
{
	t->root = NULL;
	vd_pool_fini(&t->pool);
}

uint64_t lma_tree_count_at(const struct lma_tree *t, uintptr_t addr)
{
	const struct lma_node *n = t->root;
	int64_t pending = 0;

	while (n) {
		if (addr >= n->start && addr < n->end)
			return (uint64_t)(n->count + pending);
		pending += n->lazy;
		n = addr < n->start ? n->l : n->r;
	}
	return 0;
}

size_t lma_tree_nr_areas(const struct lma_tree *t)
{
	return t->root ? t->root->size : 0;
}

uintptr_t lma_tree_covered(const struct lma_tree *t)
{
	return t->root ? t->root->covered : 0;
}

static void visit_in_order(const struct lma_node *n, int64_t pending,
			   lma_visit_fn fn, void *ctx)
{
	if (!n)
		return;
	visit_in_order(n->l, pending + n->lazy, fn, ctx);
	fn(ctx, n->start, n->end, (uint64_t)(n->count + pending));
	visit_in_order(n->r, pending + n->lazy, fn, ctx);
}

void lma_tree_for_each(const struct lma_tree *t, lma_visit_fn fn, void *ctx)
{
	visit_in_order(t->root, 0, fn, ctx);
}

void lma_tree_for_each_gap(const struct lma_tree *t, uintptr_t start,
			   uintptr_t end, lma_visit_fn fn, void *ctx)
{
	if (start < end)
		walk_gaps(t->root, start, end, fn, ctx, 0);
}

/* ---- self check ------------------------------------------------------------ */

struct check_state {
	bool have_prev;
	uintptr_t prev_end;
	int64_t prev_count;
	bool bad;
};

static bool aggregates_ok(const struct lma_node *n)
{
	int64_t min = n->count;
	uintptr_t lo = n->start, hi = n->end, cov = n->end - n->start;
	size_t size = 1;

	if (n->l) {
		min = n->l->min + n->lazy < min ? n->l->min + n->lazy : min;
		lo = n->l->lo;
		cov += n->l->covered;
		size += n->l->size;
	}
	if (n->r) {
		min = n->r->min + n->lazy < min ? n->r->min + n->lazy : min;
		hi = n->r->hi;
		cov += n->r->covered;
		size += n->r->size;
	}
	return min == n->min && lo == n->lo && hi == n->hi &&
	       cov == n->covered && size == n->size;
}

static void check_node(const struct lma_node *n, int64_t pending,
		       struct check_state *s)
{
	int64_t count;

	if (!n)
		return;
	if (!aggregates_ok(n) || n->start >= n->end ||
	    (n->l && n->l->prio > n->prio) || (n->r && n->r->prio > n->prio))
		s->bad = true;
	check_node(n->l, pending + n->lazy, s);
	count = n->count + pending;
	if (count <= 0)
		s->bad = true;
	if (s->have_prev && (n->start < s->prev_end ||
			     (n->start == s->prev_end && count == s->prev_count)))
		s->bad = true;
	s->have_prev = true;
	s->prev_end = n->end;
	s->prev_count = count;
	check_node(n->r, pending + n->lazy, s);
}

int lma_tree_check(const struct lma_tree *t)
{
	struct check_state s = { 0 };

	check_node(t->root, 0, &s);
	return s.bad ? -EUCLEAN : 0;
}
