/* SPDX-License-Identifier: MIT */
/*
 * shm provider: completion-queue event rings (the CLAN asynchronous event
 * queue, seed 001 section 3.6).  A CQ's ring lives in a memfd that every
 * peer sending to a VI bound to the CQ maps; the sender appends the event
 * as it delivers, so VipCQDone pops one entry whatever the number of VIs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <fcntl.h>
#include <sched.h>

#include "prov/shm/shm.h"

/* Every CQ can hold the largest size VipResizeCQ accepts, twice over. */
#define VD_CQ_RING_CAP (2u * VD_MAX_CQ_ENTRIES)

static size_t ring_bytes(uint32_t cap)
{
	return sizeof(struct vd_cq_ring) + (size_t)cap * sizeof(uint64_t);
}

static int ring_init_lock(struct vd_cq_ring *r)
{
	pthread_mutexattr_t a;
	int err;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	/* Robust: a producer killed inside never blocks the others. */
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	err = pthread_mutex_init(&r->m.lock, &a);
	pthread_mutexattr_destroy(&a);
	return -err;
}

int vd_shm_cq_open(struct vd_cq *cq)
{
	struct vd_shm_cq *sc = calloc(1, sizeof(*sc));
	size_t len = ring_bytes(VD_CQ_RING_CAP);
	int err = -ENOMEM;

	if (!sc)
		return -ENOMEM;
	pthread_mutex_init(&sc->rings_lock, NULL);
	vd_list_init(&sc->rings);
	sc->memfd = memfd_create("viaduct-cq", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (sc->memfd < 0 || ftruncate(sc->memfd, (off_t)len) ||
	    fcntl(sc->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		goto fail;
	sc->ring = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, sc->memfd, 0);
	if (sc->ring == MAP_FAILED) {
		sc->ring = NULL;
		goto fail;
	}
	sc->len = len;
	sc->ring->magic = VD_CQR_MAGIC;
	sc->ring->version = VD_CQR_VERSION;
	sc->ring->size = (uint32_t)len;
	sc->ring->cap = VD_CQ_RING_CAP;
	err = ring_init_lock(sc->ring);
	if (err)
		goto fail;
	cq->prov = sc;
	return 0;
fail:
	if (!err || err == -ENOMEM)
		err = errno ? -errno : -ENOMEM;
	if (sc->ring)
		munmap(sc->ring, len);
	if (sc->memfd >= 0)
		close(sc->memfd);
	pthread_mutex_destroy(&sc->rings_lock);
	free(sc);
	return err;
}

static void ring_the_bell(struct vd_cq_ring *r)
{
	atomic_fetch_add(&r->b.bell, 1);
	vd_futex_wake(&r->b.bell);
}

/* After publishing (an event or a ring message) with a seq_cst operation:
 * the seq_cst load pairs with vd_shm_cq_sleep()'s arming, so either we
 * see its count and ring, or it sees what we published.  True if rung. */
bool vd_cq_ring_wake(struct vd_cq_ring *r)
{
	if (!atomic_load(&r->c.waiting))
		return false;
	ring_the_bell(r);
	return true;
}

/* Called with cq->lock held, no VI bound any more (so no ring is
 * listed).  Sleepers are woken (the word changes, so none can miss it)
 * and waited for before the ring is unmapped. */
void vd_shm_cq_close(struct vd_cq *cq)
{
	struct vd_shm_cq *sc = cq->prov;

	if (!sc)
		return;
	cq->prov = NULL;
	atomic_store(&sc->closing, true);
	ring_the_bell(sc->ring);
	while (atomic_load(&sc->sleepers))
		sched_yield();
	munmap(sc->ring, sc->len);
	close(sc->memfd);
	pthread_mutex_destroy(&sc->rings_lock);
	free(sc);
}

int vd_cq_ring_push(struct vd_cq_ring *r, uint32_t cap, uint64_t ev)
{
	uint32_t w, rd;
	int e = pthread_mutex_lock(&r->m.lock);

	if (e == EOWNERDEAD)
		pthread_mutex_consistent(&r->m.lock);   /* nothing was published */
	else if (e)
		return -e;
	w = atomic_load_explicit(&r->p.write, memory_order_relaxed);
	/* Acquire pairs with the consumer's release of read. */
	rd = atomic_load_explicit(&r->c.read, memory_order_acquire);
	if (w - rd >= cap) {
		atomic_store(&r->overflow, 1);
		pthread_mutex_unlock(&r->m.lock);
		return -ENOSPC;
	}
	atomic_store_explicit(&r->ev[w & (cap - 1)], ev, memory_order_relaxed);
	/* Release pairs with vd_shm_cq_pop()'s acquire: the event first. */
	atomic_store_explicit(&r->p.write, w + 1, memory_order_release);
	pthread_mutex_unlock(&r->m.lock);
	/* The unlock is only a release: the fence orders our publication
	 * before vd_cq_ring_wake()'s load of the waiter count. */
	atomic_thread_fence(memory_order_seq_cst);
	vd_cq_ring_wake(r);
	return 0;
}

int vd_shm_cq_push_local(struct vd_cq *cq, struct vd_vi *vi, bool recv)
{
	struct vd_shm_cq *sc = cq->prov;

	if (!sc)
		return -EINVAL;
	return vd_cq_ring_push(sc->ring, VD_CQ_RING_CAP,
			       vd_obj_handle_bits(vi) | (recv ? VD_CQR_RECV : 0));
}

int vd_shm_cq_pop(struct vd_cq *cq, uint64_t *bits, bool *recv)
{
	struct vd_shm_cq *sc = cq->prov;
	struct vd_cq_ring *r;
	uint32_t rd, w;
	uint64_t ev;

	if (!sc)
		return -EAGAIN;
	r = sc->ring;
	if (atomic_exchange(&r->overflow, 0))
		vd_async_error(cq->nic, NULL, cq, NULL, VIP_RESOURCE_CQ, VIP_ERROR_CATASTROPHIC);
	rd = atomic_load_explicit(&r->c.read, memory_order_relaxed);
	/* Acquire pairs with vd_cq_ring_push()'s release. */
	w = atomic_load_explicit(&r->p.write, memory_order_acquire);
	if (rd == w || w - rd > VD_CQ_RING_CAP)
		return -EAGAIN;
	ev = atomic_load_explicit(&r->ev[rd & (VD_CQ_RING_CAP - 1)], memory_order_relaxed);
	/* Release pairs with the producers' acquire of read. */
	atomic_store_explicit(&r->c.read, rd + 1, memory_order_release);
	*recv = ev & VD_CQR_RECV;
	*bits = ev & ~VD_CQR_RECV;
	return 0;
}

static bool events_ready(struct vd_shm_cq *sc)
{
	/* Acquire pairs with vd_cq_ring_push()'s release of write. */
	return atomic_load(&sc->ring->p.write) != atomic_load(&sc->ring->c.read);
}

/* Non-consuming: an event, or a message in a ring feeding the CQ. */
bool vd_shm_cq_ready(struct vd_cq *cq)
{
	struct vd_shm_cq *sc;
	bool ready;

	vd_lock(&cq->lock);
	sc = cq->prov;
	ready = sc && (events_ready(sc) || vd_shm_cq_rings_ready(sc));
	vd_unlock(&cq->lock);
	return ready;
}

/* rings: a message in a ring feeding the CQ also ends the sleep
 * (viaduct_cq_wait_any); VipCQWait waits for events only. */
int vd_shm_cq_sleep(struct vd_cq *cq, uint64_t deadline, bool rings)
{
	struct vd_shm_cq *sc;
	struct vd_cq_ring *r;
	uint32_t bell;
	int err = 0;

	/* Registered under the lock, so vd_shm_cq_close (which holds it)
	 * either runs before -- prov is NULL -- or waits for us. */
	vd_lock(&cq->lock);
	sc = cq->prov;
	if (sc)
		atomic_fetch_add(&sc->sleepers, 1);
	vd_unlock(&cq->lock);
	if (!sc)
		return 0;
	r = sc->ring;
	/* seq_cst RMW pairs with the producers' fence in vd_cq_ring_push
	 * and exchange in shm_ring.c's publish(): either they see the
	 * count and ring the bell, or we see what they published. */
	atomic_fetch_add(&r->c.waiting, 1);
	bell = atomic_load(&r->b.bell);
	if (!events_ready(sc) && !atomic_load(&sc->closing) &&
	    !(rings && vd_shm_cq_rings_ready(sc)))
		err = vd_futex_wait(&r->b.bell, bell, deadline);
	atomic_fetch_sub(&r->c.waiting, 1);
	atomic_fetch_sub(&sc->sleepers, 1);
	return err;
}
