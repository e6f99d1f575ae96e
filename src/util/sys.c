/* SPDX-License-Identifier: MIT */
/* Clock, randomness, debug log, futex words and the queue lock's slow path. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <viaduct/viaduct.h>

#include "util/lock.h"
#include "util/siphash.h"
#include "util/sys.h"

/* splitmix64 finaliser: spreads weak inputs over all bits. */
static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Random values are SipHash of a counter under a 128-bit key taken once
 * from getrandom: as unpredictable to anyone without the key, without a
 * system call each (0.6 us here; a zero-copy transfer over ofi draws one
 * value, and the registration table drew one per slot, 4096 at a time).
 *
 * The state lives in a page the kernel empties in a forked child
 * (MADV_WIPEONFORK), so a child made by any kind of fork -- _Fork and a
 * raw clone too, which skip atfork handlers -- finds it unseeded and
 * takes a key of its own instead of repeating its parent's values.
 * Where that page cannot be had, a static state and an atfork handler do
 * the same for fork(). */
struct rng {
	uint64_t key[2];
	_Atomic uint64_t counter;
	_Atomic uint32_t state;         /* RNG_* */
};
enum { RNG_UNSEEDED, RNG_SEEDING, RNG_SEEDED };
/* A seeder that never finishes (it was forked away mid-seed, in a child
 * without the wiped page or the handler) is waited for this many yields,
 * then seeded over. */
#define RNG_SEED_PATIENCE 10000

static struct rng rng_static;
static struct rng *rng;
static pthread_once_t rng_once = PTHREAD_ONCE_INIT;

static void rng_forked(void)
{
	/* Relaxed: the child has one thread when this runs. */
	atomic_store_explicit(&rng_static.state, RNG_UNSEEDED, memory_order_relaxed);
}

static void rng_setup(void)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != MAP_FAILED && madvise(p, (size_t)page, MADV_WIPEONFORK) == 0) {
		rng = p;
		return;
	}
	if (p != MAP_FAILED)
		munmap(p, (size_t)page);
	rng = &rng_static;
	if (pthread_atfork(NULL, NULL, rng_forked))
		vd_log("viaduct: no fork handler for the random values: a forked child "
		       "repeats its parent's\n");
}

/* getrandom, or when the kernel has no entropy yet (early boot), the
 * kernel's 16 random bytes of this program (AT_RANDOM), time and pid
 * through SipHash: still unpredictable to another process. */
static void rng_seed(struct rng *r)
{
	uint64_t k[2], in[2];

	if (getrandom(k, sizeof(k), GRND_NONBLOCK) != (ssize_t)sizeof(k)) {
		const uint64_t *at = (const uint64_t *)getauxval(AT_RANDOM);
		uint64_t base[2] = { at ? at[0] : mix64(vd_now_ns()), at ? at[1] : 0 };

		in[0] = vd_now_ns();
		in[1] = (uint64_t)getpid();
		k[0] = vd_siphash24(base, in, sizeof(in));
		in[0] ^= 1;
		k[1] = vd_siphash24(base, in, sizeof(in));
	}
	memcpy(r->key, k, sizeof(k));
	/* Release: pairs with rng_ready's acquire load; the key first. */
	atomic_store_explicit(&r->state, RNG_SEEDED, memory_order_release);
}

static struct rng *rng_ready(void)
{
	struct rng *r;
	uint32_t st;

	pthread_once(&rng_once, rng_setup);
	r = rng;
	/* Acquire: pairs with rng_seed's release store (the key). */
	st = atomic_load_explicit(&r->state, memory_order_acquire);
	for (int waited = 0; st != RNG_SEEDED; waited++) {
		if ((st == RNG_UNSEEDED &&
		     atomic_compare_exchange_weak_explicit(&r->state, &st, RNG_SEEDING,
							   memory_order_acquire,
							   memory_order_acquire)) ||
		    waited > RNG_SEED_PATIENCE) {
			rng_seed(r);
			break;
		}
		if (st == RNG_SEEDING)
			sched_yield();
		st = atomic_load_explicit(&r->state, memory_order_acquire);
	}
	return r;
}

uint64_t vd_random64(void)
{
	struct rng *r = rng_ready();
	/* Relaxed: each value needs a counter of its own, not an order. */
	uint64_t n = atomic_fetch_add_explicit(&r->counter, 1, memory_order_relaxed);

	return vd_siphash24(r->key, &n, sizeof(n));
}

uint32_t vd_random32(void)
{
	return (uint32_t)(vd_random64() >> 32);
}

void vd_log(const char *fmt, ...)
{
	uint64_t dbg = 0;
	char buf[512];
	va_list ap;
	int n;

	if (viaduct_param_uint("VIADUCT_DEBUG", 0, &dbg) || !dbg)
		return;
	n = snprintf(buf, sizeof(buf), "viaduct[%d]: ", (int)getpid());
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	/* One write per line so lines of several threads do not interleave. */
	fprintf(stderr, "%s\n", buf);
}

static int futex_wait(_Atomic uint32_t *word, uint32_t seen, uint64_t deadline_ns, int op)
{
	struct timespec ts, *tsp = NULL;

	if (deadline_ns) {
		uint64_t now = vd_now_ns();
		if (now >= deadline_ns)
			return -ETIMEDOUT;
		uint64_t left = deadline_ns - now;
		ts.tv_sec = (time_t)(left / 1000000000u);
		ts.tv_nsec = (long)(left % 1000000000u);
		tsp = &ts;
	}
	if (syscall(SYS_futex, word, op, seen, tsp, NULL, 0) && errno == ETIMEDOUT)
		return -ETIMEDOUT;
	return 0;
}

int vd_futex_wait(_Atomic uint32_t *word, uint32_t seen, uint64_t deadline_ns)
{
	return futex_wait(word, seen, deadline_ns, FUTEX_WAIT_PRIVATE);
}

int vd_futex_wait_shared(_Atomic uint32_t *word, uint32_t seen, uint64_t deadline_ns)
{
	return futex_wait(word, seen, deadline_ns, FUTEX_WAIT);
}

void vd_futex_wake_shared(_Atomic uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* futex_waitv takes an absolute CLOCK_MONOTONIC deadline, as ours. */
static int waitv_call(const struct vd_waitv *w, unsigned n, uint64_t deadline_ns)
{
	struct futex_waitv v[VD_WAITV_MAX];
	struct timespec ts = { (time_t)(deadline_ns / 1000000000u),
			       (long)(deadline_ns % 1000000000u) };

	memset(v, 0, sizeof(v));
	for (unsigned i = 0; i < n; i++) {
		v[i].val = w[i].seen;
		v[i].uaddr = (uint64_t)(uintptr_t)w[i].word;
		v[i].flags = FUTEX_32 | (w[i].shared ? 0 : FUTEX_PRIVATE_FLAG);
	}
	if (syscall(SYS_futex_waitv, v, n, 0, deadline_ns ? &ts : NULL,
		    CLOCK_MONOTONIC) >= 0)
		return 0;
	return errno == ETIMEDOUT ? -ETIMEDOUT : errno == ENOSYS ? -ENOSYS : 0;
}

int vd_futex_waitv(const struct vd_waitv *w, unsigned n, uint64_t deadline_ns)
{
	static _Atomic bool no_waitv;
	uint64_t slice;
	int r;

	if (!n || n > VD_WAITV_MAX)
		return -EINVAL;
	if (deadline_ns && vd_now_ns() >= deadline_ns)
		return -ETIMEDOUT;
	/* Relaxed: a cache of what the kernel answered; pairs with nothing. */
	if (!atomic_load_explicit(&no_waitv, memory_order_relaxed)) {
		r = waitv_call(w, n, deadline_ns);
		if (r != -ENOSYS)
			return r;
		atomic_store_explicit(&no_waitv, true, memory_order_relaxed);
	}
	slice = vd_now_ns() + 200000;
	r = futex_wait(w[0].word, w[0].seen, deadline_ns && deadline_ns < slice ?
		       deadline_ns : slice, w[0].shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE);
	return r == -ETIMEDOUT && (!deadline_ns || vd_now_ns() < deadline_ns) ? 0 : r;
}

static bool any_recheck_ready(const struct vd_waitv *w, unsigned n)
{
	for (unsigned i = 0; i < n && i < VD_WAITV_MAX; i++)
		if (w[i].recheck_ns && w[i].recheck && w[i].recheck(w[i].recheck_arg))
			return true;
	return false;
}

int vd_futex_waitv_recheck(const struct vd_waitv *w, unsigned n, uint64_t deadline_ns)
{
	uint64_t recheck = 0, at;
	int r;

	for (unsigned i = 0; i < n && i < VD_WAITV_MAX; i++)
		if (w[i].recheck_ns && (!recheck || w[i].recheck_ns < recheck))
			recheck = w[i].recheck_ns;
	if (!recheck)
		return vd_futex_waitv(w, n, deadline_ns);
	at = vd_now_ns() + recheck;
	if (deadline_ns && deadline_ns < at)
		at = deadline_ns;
	r = vd_futex_waitv(w, n, at);
	if (r != -ETIMEDOUT)
		return r;
	/* Even at the caller's deadline: a message that missed the bell
	 * before it is not a timeout. */
	if (any_recheck_ready(w, n))
		return 0;
	return at == deadline_ns ? r : vd_futex_waitv(w, n, deadline_ns);
}

void vd_futex_bump(_Atomic uint32_t *word)
{
	/* Release pairs with the caller's load of *word before
	 * vd_futex_wait(): a bump after that load makes the wait fail with
	 * EAGAIN. */
	atomic_fetch_add_explicit(word, 1, memory_order_release);
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

uint32_t vd_event_seen(struct vd_event *e)
{
	/* Acquire pairs with vd_event_bump's increment: what the bumper
	 * published before it is visible once the new value is seen. */
	return atomic_load_explicit(&e->seq, memory_order_acquire);
}

int vd_event_wait(struct vd_event *e, uint32_t seen, uint64_t deadline_ns)
{
	int r;

	/* Seq_cst increment: pairs with vd_event_bump's seq_cst load of
	 * `sleepers` (Dekker): either the bumper sees us and wakes, or its
	 * increment of seq precedes ours and the kernel finds seq != seen. */
	atomic_fetch_add(&e->sleepers, 1);
	r = vd_futex_wait(&e->seq, seen, deadline_ns);
	atomic_fetch_sub(&e->sleepers, 1);
	return r;
}

void vd_event_arm(struct vd_event *e, struct vd_waitv *w)
{
	*w = (struct vd_waitv){ &e->seq, vd_event_seen(e), false, 0, NULL, NULL };
	/* Seq_cst: as in vd_event_wait. */
	atomic_fetch_add(&e->sleepers, 1);
}

void vd_event_disarm(struct vd_event *e)
{
	atomic_fetch_sub(&e->sleepers, 1);
}

void vd_event_bump(struct vd_event *e)
{
	/* Seq_cst: see vd_event_wait. */
	atomic_fetch_add(&e->seq, 1);
	if (atomic_load(&e->sleepers))
		syscall(SYS_futex, &e->seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* Contended vd_lock: spin on a plain load (no cache-line ping-pong of
 * exchanges), then give the CPU away -- with more threads than cores the
 * holder may be waiting for ours. */
void vd_lock_slow(vd_lock_t *l)
{
	for (unsigned spins = 0;; spins++) {
		if (!atomic_load_explicit(&l->v, memory_order_relaxed) &&
		    !atomic_exchange_explicit(&l->v, 1, memory_order_acquire))
			return;
		if (spins < 200)
			vd_cpu_relax();
		else
			sched_yield();
	}
}
