/* SPDX-License-Identifier: MIT */
/*
 * The Locked Memory Area tree: a set of disjoint intervals [start, end) with
 * a positive count, ordered by address (the LMM paper, figure 3; the paper's
 * "future work" balanced tree).  Internally a treap with lazy range-add, so
 * adding or removing one registration costs O(log n) plus O(log n) per run
 * whose count crosses zero -- independent of how many other registrations
 * overlap it.
 *
 * Adjacent, touching intervals always have different counts (equal ones are
 * merged), so the tree holds at most 2R+1 intervals for R registrations.
 *
 * Units are opaque to the tree (the LMM uses page-aligned addresses).  The
 * tree is not thread-safe; the LMM serialises calls.
 */
#ifndef VIADUCT_LMM_LMA_TREE_H
#define VIADUCT_LMM_LMA_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "util/pool.h"

struct lma_node;

struct lma_tree {
	struct lma_node *root;
	struct vd_pool pool; /* nodes; grow-only, never returned to libc */
	uint64_t rng;        /* treap priorities */
};

/* Callbacks for runs whose count crosses zero.  Runs are maximal: the tree
 * never reports two touching runs in one call of add/sub. */
struct lma_range_ops {
	/* Pages [start, end) go 0 -> 1.  Return 0 or a negative errno; on
	 * error lma_tree_add() undoes everything (calling unlock for the runs
	 * already locked) and returns that error. */
	int (*lock)(void *ctx, uintptr_t start, uintptr_t end);
	/* Pages [start, end) go 1 -> 0. */
	void (*unlock)(void *ctx, uintptr_t start, uintptr_t end);
	void *ctx;
};

typedef void (*lma_visit_fn)(void *ctx, uintptr_t start, uintptr_t end,
			     uint64_t count);

void lma_tree_init(struct lma_tree *t);
/* Drop every interval without callbacks and give the nodes back to the
 * tree's pool (memory stays with the pool until lma_tree_fini). */
void lma_tree_clear(struct lma_tree *t);
void lma_tree_fini(struct lma_tree *t);

/* Count +1 on [start, end), start < end.  0, or the lock callback's error,
 * or -ENOMEM (no node memory); on error the tree is unchanged. */
int lma_tree_add(struct lma_tree *t, uintptr_t start, uintptr_t end,
		 const struct lma_range_ops *ops);

/* Count -1 on [start, end).  -EINVAL (tree unchanged) unless every unit of
 * the range has a count >= 1; -ENOMEM if a node for splitting could not be
 * allocated (tree unchanged). */
int lma_tree_sub(struct lma_tree *t, uintptr_t start, uintptr_t end,
		 const struct lma_range_ops *ops);

uint64_t lma_tree_count_at(const struct lma_tree *t, uintptr_t addr);
size_t lma_tree_nr_areas(const struct lma_tree *t);
/* Sum of interval lengths. */
uintptr_t lma_tree_covered(const struct lma_tree *t);

/* Every interval in address order. */
void lma_tree_for_each(const struct lma_tree *t, lma_visit_fn fn, void *ctx);
/* Every maximal run of count 0 inside [start, end), in order (count is 0). */
void lma_tree_for_each_gap(const struct lma_tree *t, uintptr_t start,
			   uintptr_t end, lma_visit_fn fn, void *ctx);

/* Verify every invariant (order, disjointness, positive counts, merged
 * neighbours, subtree aggregates, heap order).  0 or -EUCLEAN. */
int lma_tree_check(const struct lma_tree *t);

#endif
