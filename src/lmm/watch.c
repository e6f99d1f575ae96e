/* SPDX-License-Identifier: MIT */
/*
 * The invalidation monitor: userfaultfd used purely as a kernel event
 * source (see docs/lmm.md for why not symbol interposition).
 *
 * Locked ranges are registered in write-protect mode but never protected,
 * so no page fault is ever delivered; what we get are the non-cooperative
 * events UNMAP (munmap, brk shrink, mremap shrink, mmap MAP_FIXED over,
 * free() of mmapped chunks), REMOVE (MADV_DONTNEED[_LOCKED], MADV_REMOVE)
 * and REMAP (mremap moves).  The kernel holds the thread that caused an
 * event until the event has been read.  The monitor reads only while
 * holding lmm_g.lock and applies the whole batch before unlocking, so once
 * that thread returns from munmap, every later lmm call sees the
 * invalidation: no window in which a stale registration can be handed out
 * (libfabric's uffd monitor has that window; peer-designs.md 2.2).
 *
 * Deadlock rule (lmm_internal.h): no code holding lmm_g.lock may raise an
 * event, or it would wait for a monitor that waits for the lock.
 */
#include "lmm/lmm_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

#define WATCH_FEATURES                                                       \
	(UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE |              \
	 UFFD_FEATURE_EVENT_REMAP)

bool lmm_watch_active(void)
{
	return lmm_g.watch.state == LMM_CACHE_MONITOR_USERFAULTFD;
}

/* Unprivileged users (vm.unprivileged_userfaultfd = 0) may still open one
 * that only handles user-mode faults -- all an event source needs. */
static int open_uffd(void)
{
	int flags = O_CLOEXEC | O_NONBLOCK;
	int fd = (int)syscall(SYS_userfaultfd, flags);

	if (fd < 0)
		fd = (int)syscall(SYS_userfaultfd, flags | UFFD_USER_MODE_ONLY);
	if (fd < 0)
		return -errno;
	struct uffdio_api api = { .api = UFFD_API, .features = WATCH_FEATURES };
	if (ioctl(fd, UFFDIO_API, &api) ||
	    (api.features & WATCH_FEATURES) != WATCH_FEATURES) {
		close(fd);
		return -ENOTSUP;
	}
	return fd;
}

int lmm_watch_range(uintptr_t s, uintptr_t e)
{
	struct uffdio_register reg = {
		.range = { .start = s, .len = e - s },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	if (lmm_g.watch.uffd < 0)
		return -ENOTSUP;
	/* Idempotent for ranges this descriptor already watches. */
	return ioctl(lmm_g.watch.uffd, UFFDIO_REGISTER, &reg) ? -errno : 0;
}

/* Like munlock, tolerate holes by splitting. */
void lmm_unwatch_range(uintptr_t s, uintptr_t e)
{
	struct uffdio_range r = { .start = s, .len = e - s };
	uintptr_t mid;

	if (s >= e || lmm_g.watch.uffd < 0)
		return;
	if (!ioctl(lmm_g.watch.uffd, UFFDIO_UNREGISTER, &r) ||
	    e - s <= lmm_g.page_size)
		return;
	mid = s + (e - s) / 2 / lmm_g.page_size * lmm_g.page_size;
	lmm_unwatch_range(s, mid);
	lmm_unwatch_range(mid, e);
}

/* A write-protect fault cannot happen (nothing is protected); if one ever
 * does, un-protect and wake so no thread is left hanging. */
static void resolve_fault(const struct uffd_msg *m)
{
	uintptr_t page = m->arg.pagefault.address & ~(uintptr_t)(lmm_g.page_size - 1);
	struct uffdio_writeprotect wp = {
		.range = { .start = page, .len = lmm_g.page_size },
	};
	struct uffdio_range wake = { .start = page, .len = lmm_g.page_size };

	if (ioctl(lmm_g.watch.uffd, UFFDIO_WRITEPROTECT, &wp))
		(void)ioctl(lmm_g.watch.uffd, UFFDIO_WAKE, &wake);
}

static void handle_event(const struct uffd_msg *m)
{
	switch (m->event) {
	case UFFD_EVENT_UNMAP:
		lmm_revoke_range_locked(m->arg.remove.start, m->arg.remove.end,
					true);
		break;
	case UFFD_EVENT_REMOVE:
		/* Sent before the pages are zapped: still mapped now. */
		lmm_revoke_range_locked(m->arg.remove.start, m->arg.remove.end,
					false);
		break;
	case UFFD_EVENT_REMAP:
		lmm_revoke_range_locked(m->arg.remap.from,
					m->arg.remap.from + m->arg.remap.len,
					true);
		/* The moved VMA took VM_LOCKED and our watch along. */
		lmm_release_unaccounted_locked(m->arg.remap.to,
					       m->arg.remap.to + m->arg.remap.len);
		break;
	case UFFD_EVENT_PAGEFAULT:
		resolve_fault(m);
		break;
	default:
		break;
	}
}

/* Called with the lock held: read and apply everything pending. */
static void drain_events(int fd)
{
	struct uffd_msg msgs[32];
	ssize_t n, i;

	for (;;) {
		n = read(fd, msgs, sizeof(msgs));
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return;
		}
		for (i = 0; i < n / (ssize_t)sizeof(msgs[0]); i++)
			handle_event(&msgs[i]);
	}
}

/* A monitor that cannot go on (poll failure): the cache must not trust
 * what it no longer watches.  Closing the descriptor drops every watch. */
static void monitor_failed(int fd)
{
	lmm_global_lock();
	if (lmm_g.watch.uffd == fd) {
		lmm_cache_forget_locked();
		lmm_g.watch.uffd = lmm_g.watch.stop_fd = -1;
		lmm_g.watch.state = LMM_CACHE_MONITOR_UNAVAILABLE;
	}
	lmm_global_unlock();
}

/* Wait for events or the stop signal; false when the thread must exit. */
static bool monitor_wait(struct pollfd p[2], bool *failed)
{
	uint64_t v;

	if (poll(p, 2, -1) < 0 && errno != EINTR) {
		*failed = true;
		return false;
	}
	if (p[1].revents) {
		/* Consume it: the read pairs with lmm_watch_stop_locked's
		 * write, ordering everything before it with our close. */
		(void)!read(p[1].fd, &v, sizeof(v));
		return false;
	}
	*failed = p[0].revents & (POLLERR | POLLNVAL);
	return !*failed;
}

/* The thread owns both descriptors and closes them when told to stop;
 * closing the userfaultfd also releases any thread still waiting on it. */
static void *monitor_main(void *arg)
{
	uint64_t fds = (uint64_t)(uintptr_t)arg;
	int fd = (int)(fds & 0xffffffffu), stop = (int)(fds >> 32);
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN },
			       { .fd = stop, .events = POLLIN } };
	bool failed = false;

	while (monitor_wait(p, &failed)) {
		if (!(p[0].revents & POLLIN))
			continue;
		lmm_global_lock();
		/* After lmm_cleanup the descriptor is no longer current. */
		if (lmm_g.watch.uffd == fd)
			drain_events(fd);
		lmm_global_unlock();
	}
	if (failed)
		monitor_failed(fd);
	close(fd);
	close(stop);
	return NULL;
}

static void watch_existing(void *ctx, uintptr_t s, uintptr_t e, uint64_t c)
{
	(void)ctx;
	(void)c;
	(void)lmm_watch_range(s, e);
}

static int spawn_monitor(int fd, int stop)
{
	uint64_t fds = (uint64_t)(uint32_t)fd | (uint64_t)(uint32_t)stop << 32;
	sigset_t all, old;
	pthread_attr_t attr;
	int err;

	/* The monitor must never run a signal handler while holding the lock. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&lmm_g.watch.thread, &attr, monitor_main,
			     (void *)(uintptr_t)fds);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return -err;
}

int lmm_watch_start_locked(void)
{
	int fd, stop, err;

	if (lmm_g.watch.state != LMM_CACHE_MONITOR_NONE)
		return lmm_watch_active() ? 0 : -ENOTSUP;
	fd = open_uffd();
	if (fd < 0) {
		lmm_g.watch.state = LMM_CACHE_MONITOR_UNAVAILABLE;
		return fd;
	}
	stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	err = stop < 0 ? -errno : spawn_monitor(fd, stop);
	if (err) {
		close(fd);
		if (stop >= 0)
			close(stop);
		lmm_g.watch.state = LMM_CACHE_MONITOR_UNAVAILABLE;
		return err;
	}
	lmm_g.watch.uffd = fd;
	lmm_g.watch.stop_fd = stop;
	lmm_g.watch.state = LMM_CACHE_MONITOR_USERFAULTFD;
	/* From now on every locked page is watched, plain registrations too:
	 * otherwise an unwatched unmap would leave counts the cache trusts. */
	lmm_for_each_area(watch_existing, NULL);
	return 0;
}

void lmm_watch_reset_child(void)
{
	/* The inherited descriptors belong to the parent's monitor; the
	 * child has no monitor thread.  Start afresh on first use. */
	if (lmm_g.watch.uffd >= 0)
		close(lmm_g.watch.uffd);
	if (lmm_g.watch.stop_fd >= 0)
		close(lmm_g.watch.stop_fd);
	lmm_g.watch.uffd = lmm_g.watch.stop_fd = -1;
	lmm_g.watch.state = LMM_CACHE_MONITOR_NONE;
}

void lmm_watch_stop_locked(void)
{
	uint64_t one = 1;

	if (lmm_watch_active() &&
	    write(lmm_g.watch.stop_fd, &one, sizeof(one)) != sizeof(one))
		return; /* cannot tell it: keep it running, still correct */
	/* The thread closes the descriptors; forget them here. */
	if (lmm_watch_active())
		lmm_g.watch.uffd = lmm_g.watch.stop_fd = -1;
	lmm_g.watch.state = LMM_CACHE_MONITOR_NONE;
}
