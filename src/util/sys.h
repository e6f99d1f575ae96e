/* SPDX-License-Identifier: MIT */
/*
 * Small system helpers every layer uses: the monotonic clock, random
 * values, the debug log and private futex words.
 */
#ifndef VIADUCT_UTIL_SYS_H
#define VIADUCT_UTIL_SYS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds.  Inline: the layers above the core
 * library (MPI) read it on their wait paths and cannot link to the
 * core's internal symbols. */
static inline uint64_t vd_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Nanoseconds from `then` to `now`, 0 when `then` is later: a time
 * stamped by another thread after the caller read `now` (it was
 * descheduled in between) is no age at all, not 584 years. */
static inline uint64_t vd_ns_since(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}
/* Random 32/64-bit value: unpredictable to other processes, never blocks,
 * no system call after the first (SipHash of a counter, see sys.c). */
uint32_t vd_random32(void);
uint64_t vd_random64(void);
/* Debug log to stderr when VIADUCT_DEBUG is set. */
void vd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Private (one-process) futex on *word: sleep while it still holds
 * `seen`, until deadline_ns (CLOCK_MONOTONIC; 0 = infinite).  0 or
 * -ETIMEDOUT; spurious returns allowed. */
int vd_futex_wait(_Atomic uint32_t *word, uint32_t seen, uint64_t deadline_ns);
/* The same on a word in memory shared with other processes (a memfd),
 * and waking every sleeper there without changing the word. */
int vd_futex_wait_shared(_Atomic uint32_t *word, uint32_t seen, uint64_t deadline_ns);
void vd_futex_wake_shared(_Atomic uint32_t *word);
/* Bump *word and wake every sleeper on it. */
void vd_futex_bump(_Atomic uint32_t *word);

/* One word of a vectored wait: sleep while *word holds `seen`; shared:
 * the word is in memory other processes map (else private). */
struct vd_waitv {
	_Atomic uint32_t *word;
	uint32_t seen;
	bool shared;
	/* Nonzero: ask recheck(recheck_arg) this long after arming, still
	 * armed.  A publisher that crossed the arming without a store-load
	 * fence may have read the waiter count before its store was visible
	 * and not woken us; its store is visible well within this time.
	 * recheck takes no lock a closer of the object may hold while it
	 * waits for the sleepers to leave. */
	uint64_t recheck_ns;
	bool (*recheck)(void *arg);
	void *recheck_arg;
};
/* Sleep until any word of w[0..n) no longer holds its `seen` (or is
 * woken), or deadline_ns (0 = infinite): 0 or -ETIMEDOUT, spurious
 * returns allowed.  n <= VD_WAITV_MAX.  Kernels without futex_waitv
 * (before 5.16) get 200 us slices on the first word. */
#define VD_WAITV_MAX 8
int vd_futex_waitv(const struct vd_waitv *w, unsigned n, uint64_t deadline_ns);
/* vd_futex_waitv that, when words ask for it (recheck_ns), asks their
 * recheck once the shortest such time has passed (or at deadline_ns, if
 * that comes first) and returns 0 if one says ready; else sleeps on to
 * deadline_ns. */
int vd_futex_waitv_recheck(const struct vd_waitv *w, unsigned n, uint64_t deadline_ns);

/* A private futex word that counts its sleepers, so that a bump with
 * nobody asleep -- the common case on a busy-polled path -- costs no
 * system call. */
struct vd_event {
	_Atomic uint32_t seq;
	_Atomic uint32_t sleepers;
};
/* The value to hand to vd_event_wait, read before checking whatever
 * the caller waits for. */
uint32_t vd_event_seen(struct vd_event *e);
/* Sleep while seq still holds `seen`, until deadline_ns (0 = infinite):
 * 0 or -ETIMEDOUT, spurious returns allowed. */
int vd_event_wait(struct vd_event *e, uint32_t seen, uint64_t deadline_ns);
void vd_event_bump(struct vd_event *e);
/* For a vectored wait (vd_futex_waitv) that includes e: fill *w and
 * count as a sleeper; then check what is waited for, wait, and disarm. */
void vd_event_arm(struct vd_event *e, struct vd_waitv *w);
void vd_event_disarm(struct vd_event *e);

#endif /* VIADUCT_UTIL_SYS_H */
