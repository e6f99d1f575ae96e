/* SPDX-License-Identifier: MIT */
/*
 * Queue lock for short critical sections on the data path.
 *
 * Work-queue and CQ locks guard a few dozen instructions and are almost
 * never contended (one thread per queue is the common case), so the
 * uncontended pair must be cheap: one exchange to take it, a plain
 * release store to drop it -- half the locked instructions of a pthread
 * mutex, which matters at ~10 ns per locked instruction in a VM.  Waiters
 * spin briefly, then yield; a holder never sleeps with it held.
 */
#ifndef VIADUCT_UTIL_LOCK_H
#define VIADUCT_UTIL_LOCK_H

#include <stdatomic.h>

typedef struct {
	_Atomic int v;
} vd_lock_t;

void vd_lock_slow(vd_lock_t *l);

static inline void vd_lock_init(vd_lock_t *l)
{
	atomic_init(&l->v, 0);
}

static inline void vd_lock(vd_lock_t *l)
{
	/* Acquire pairs with vd_unlock()'s release. */
	if (!atomic_exchange_explicit(&l->v, 1, memory_order_acquire))
		return;
	vd_lock_slow(l);
}

static inline int vd_trylock(vd_lock_t *l)
{
	/* Acquire pairs with vd_unlock()'s release. */
	return !atomic_load_explicit(&l->v, memory_order_relaxed) &&
	       !atomic_exchange_explicit(&l->v, 1, memory_order_acquire);
}

static inline void vd_unlock(vd_lock_t *l)
{
	atomic_store_explicit(&l->v, 0, memory_order_release);
}

static inline void vd_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

#endif /* VIADUCT_UTIL_LOCK_H */
