/* SPDX-License-Identifier: MIT */
/*
 * shm provider: completion queues (the CLAN asynchronous event queue of
 * the CLAN VIA paper, section 3.6), made safe against peers.
 *
 * A sender no longer writes events into the receiver's memory.  It counts
 * what it announced in its own connection region, sets its connection's
 * bit in the CQ's doorbell page and rings the bell (shm_layout.h).  The
 * owner harvests: for each connection whose bit is set it compares the
 * count with what it has already turned into events, checks the count
 * against the receives it offered on that connection (a sender cannot
 * complete more), and queues one event per new completion in process-
 * local memory, naming the VI from its own table.  A count beyond the
 * bound is a forgery and breaks that connection only.  Events of one VI
 * keep their order; events of different VIs come in slot order.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prov/shm/shm.h"

/* Local events a CQ holds: the largest size VipResizeCQ accepts, twice. */
#define VD_CQ_EVENTS (2u * VD_MAX_CQ_ENTRIES)
/* A sleeping owner looks at every connection at least this often, so a
 * peer that clears `waiting` or eats a bit delays a wake-up, never
 * loses it. */
#define VD_CQ_SLICE_NS 50000000ull
/* How long after arming a sleeper looks at its rings again, still armed:
 * a ring message published as it armed may not have rung the bell
 * (shm_ring.c, publish()).  Far above the time a store takes to become
 * visible; short enough that such a message is late by little. */
#define VD_CQ_RECHECK_NS 200000ull

static int doorbell_map(struct vd_shm_cq *sc)
{
	size_t len = sizeof(struct vd_cq_ring);

	sc->memfd = memfd_create("viaduct-cq", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (sc->memfd < 0 || ftruncate(sc->memfd, (off_t)len) ||
	    fcntl(sc->memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		return -errno;
	sc->ring = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, sc->memfd, 0);
	if (sc->ring == MAP_FAILED) {
		sc->ring = NULL;
		return -errno;
	}
	sc->len = len;
	sc->ring->magic = VD_CQR_MAGIC;
	sc->ring->version = VD_CQR_VERSION;
	sc->ring->size = (uint32_t)len;
	sc->ring->slots = VD_CQR_SLOTS;
	return 0;
}

static void cq_free(struct vd_shm_cq *sc)
{
	if (sc->ring)
		munmap(sc->ring, sc->len);
	if (sc->memfd >= 0)
		close(sc->memfd);
	pthread_mutex_destroy(&sc->rings_lock);
	pthread_mutex_destroy(&sc->events_lock);
	free(sc->events);
	free(sc->slot_conn);
	free(sc);
}

int vd_shm_cq_open(struct vd_cq *cq)
{
	struct vd_shm_cq *sc = calloc(1, sizeof(*sc));
	int err;

	if (!sc)
		return -ENOMEM;
	sc->memfd = -1;
	pthread_mutex_init(&sc->rings_lock, NULL);
	pthread_mutex_init(&sc->events_lock, NULL);
	vd_list_init(&sc->rings);
	sc->events = malloc(VD_CQ_EVENTS * sizeof(*sc->events));
	err = sc->events ? doorbell_map(sc) : -ENOMEM;
	if (err) {
		cq_free(sc);
		return err;
	}
	cq->prov = sc;
	return 0;
}

static void ring_the_bell(struct vd_cq_ring *r)
{
	atomic_fetch_add(&r->b.bell, 1);
	vd_futex_wake_shared(&r->b.bell);
}

/* After publishing.  An announcement is published with a seq_cst
 * operation, and this seq_cst load pairs with cq_arm()'s increment:
 * either we see its count and ring, or it sees what we published.  A
 * ring message is published with a release store only, which this load
 * may pass; cq_arm() asks its sleeper to look again (recheck_ns).
 * Only the first sender after a sleeper armed rings: the seq_cst
 * exchange of `rung` pairs with cq_arm()'s store of 0, made after its
 * snapshot of the bell, so a bell left unrung by us was bumped after
 * that snapshot by the sender that set `rung`.  True if rung. */
bool vd_cq_ring_wake(struct vd_cq_ring *r)
{
	if (!atomic_load(&r->c.waiting))
		return false;
	/* The plain load keeps the line shared while one sender streams
	 * into a sleeper that has not woken yet. */
	if (atomic_load(&r->c.rung) || atomic_exchange(&r->c.rung, 1))
		return false;
	ring_the_bell(r);
	return true;
}

/* Set a bit unless it is set already: a bit the owner has not taken yet
 * will make it look (the caller's seq_cst add of cq_announced precedes
 * this seq_cst load, which precedes the owner's exchange, which precedes
 * its load of the count), and skipping the RMW keeps the line shared
 * while the owner is busy. */
static void set_bit(_Atomic uint64_t *word, uint64_t bit)
{
	if (!(atomic_load(word) & bit))
		atomic_fetch_or(word, bit);
}

void vd_cq_ring_signal(struct vd_cq_ring *r, uint32_t slot)
{
	/* seq_cst throughout: pairs with the owner's exchanges in
	 * harvest_signalled(), and orders the bits before the load of the
	 * waiter count in vd_cq_ring_wake(). */
	if (slot < VD_CQR_SLOTS) {
		set_bit(&r->pending[slot / 64], 1ull << (slot % 64));
		set_bit(&r->summary, 1ull << (slot / 64));
	} else {
		set_bit(&r->everyone, 1);
	}
	atomic_thread_fence(memory_order_seq_cst);
	vd_cq_ring_wake(r);
}

/* Called with cq->lock held, no VI bound any more (so no connection is
 * listed).  Sleepers are woken (the word changes, so none can miss it)
 * and waited for before the page is unmapped. */
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
	cq_free(sc);
}

/* ---- process-local events ------------------------------------------------------ */

static uint32_t events_room(const struct vd_shm_cq *sc)
{
	return VD_CQ_EVENTS - (sc->ev_tail - sc->ev_head);
}

/* events_lock held. */
static void events_put(struct vd_shm_cq *sc, uint64_t ev, uint32_t n)
{
	while (n--)
		sc->events[sc->ev_tail++ % VD_CQ_EVENTS] = ev;
	/* Release pairs with vd_shm_cq_pop()'s lock-free look. */
	atomic_store_explicit(&sc->ev_count, sc->ev_tail - sc->ev_head, memory_order_release);
}

int vd_shm_cq_push_local(struct vd_cq *cq, struct vd_vi *vi, bool recv)
{
	struct vd_shm_cq *sc = cq->prov;
	int err = 0;

	if (!sc)
		return -EINVAL;
	pthread_mutex_lock(&sc->events_lock);
	if (events_room(sc))
		events_put(sc, vd_obj_handle_bits(vi) | (recv ? VD_CQR_RECV : 0), 1);
	else
		err = -ENOSPC;
	pthread_mutex_unlock(&sc->events_lock);
	if (err) {
		atomic_store(&sc->overflow, true);
		return err;
	}
	/* The mutex is only a release: order the event before the load of
	 * the waiter count (pairs with vd_shm_cq_sleep's arming). */
	atomic_thread_fence(memory_order_seq_cst);
	vd_cq_ring_wake(sc->ring);
	return 0;
}

/* ---- harvesting announcements ----------------------------------------------------- */

/* Turn what connection c announced since the last look into events.
 * rings_lock held. */
static void harvest_conn(struct vd_shm_cq *sc, struct vd_shm_conn *c)
{
	/* Acquire pairs with the sender's release add in announce(); the
	 * bound is loaded after it, so it is at least the bound the sender
	 * saw (cookies offered only grow; release in vd_shm_recv_publish). */
	uint32_t announced = atomic_load_explicit(&c->rx->s.cq_announced, memory_order_acquire);
	uint32_t offered = atomic_load_explicit(&c->rx_offered, memory_order_acquire);
	uint32_t fresh = announced - c->cq_seen, take;

	if (!fresh || atomic_load(&c->broken))
		return;
	if (fresh > offered - c->cq_seen) {
		vd_shm_conn_fail(c, "completion-queue announcements beyond the receives offered");
		return;
	}
	pthread_mutex_lock(&sc->events_lock);
	take = events_room(sc) < fresh ? events_room(sc) : fresh;
	events_put(sc, c->cq_vi_bits, take);
	pthread_mutex_unlock(&sc->events_lock);
	c->cq_seen += take;
	if (take < fresh)
		atomic_store(&sc->rescan, true);        /* the rest later */
}

static void harvest_all(struct vd_shm_cq *sc)
{
	for (struct vd_list *l = sc->rings.next; l != &sc->rings; l = l->next)
		harvest_conn(sc, vd_container_of(l, struct vd_shm_conn, cq_link));
}

/* The connections of one pending word.  A bit whose slot is free (a
 * stale or forged one) costs a look and nothing else. */
static void harvest_word(struct vd_shm_cq *sc, uint32_t w)
{
	/* Pairs with vd_cq_ring_signal()'s set_bit. */
	uint64_t bits = w < VD_CQR_WORDS ? atomic_exchange(&sc->ring->pending[w], 0) : 0;

	while (bits) {
		uint32_t slot = w * 64 + (uint32_t)__builtin_ctzll(bits);

		bits &= bits - 1;
		if (w < VD_CQR_WORDS && slot < sc->nslot_conn && sc->slot_conn[slot])
			harvest_conn(sc, sc->slot_conn[slot]);
	}
}

static void harvest_signalled(struct vd_shm_cq *sc)
{
	/* Pairs with vd_cq_ring_signal()'s set_bit: a word whose summary
	 * bit we take is looked at after it.  Loaded first so that nothing
	 * signalled costs no RMW. */
	uint64_t words = atomic_load(&sc->ring->summary);

	if (words)
		words = atomic_exchange(&sc->ring->summary, 0);
	while (words) {
		harvest_word(sc, (uint32_t)__builtin_ctzll(words));
		words &= words - 1;
	}
}

static void harvest(struct vd_shm_cq *sc)
{
	pthread_mutex_lock(&sc->rings_lock);
	if (atomic_exchange(&sc->rescan, false) ||
	    (atomic_load(&sc->ring->everyone) && atomic_exchange(&sc->ring->everyone, 0)))
		harvest_all(sc);
	else
		harvest_signalled(sc);
	pthread_mutex_unlock(&sc->rings_lock);
}

/* ---- doorbell slots ------------------------------------------------------------- */

static int slot_free_index(struct vd_shm_cq *sc, uint32_t *out)
{
	uint32_t n = sc->nslot_conn, i;
	struct vd_shm_conn **t;

	for (i = 0; i < n; i++)
		if (!sc->slot_conn[i]) {
			*out = i;
			return 0;
		}
	if (n >= VD_CQR_SLOTS)
		return -ENOSPC;
	n = n ? (n * 2 < VD_CQR_SLOTS ? n * 2 : VD_CQR_SLOTS) : 64;
	t = realloc(sc->slot_conn, n * sizeof(*t));
	if (!t)
		return -ENOMEM;
	memset(t + sc->nslot_conn, 0, (n - sc->nslot_conn) * sizeof(*t));
	*out = sc->nslot_conn;
	sc->slot_conn = t;
	sc->nslot_conn = n;
	return 0;
}

/* rings_lock held.  The connection starts with nothing announced.
 * Without a free slot it gets VD_CQR_SLOTS: its sender then signals
 * `everyone`. */
int vd_shm_cq_slot_take(struct vd_shm_cq *sc, struct vd_shm_conn *c, uint64_t vi_bits)
{
	uint32_t slot;
	int err = slot_free_index(sc, &slot);

	c->cq_seen = atomic_load(&c->rx->s.cq_announced);
	c->cq_vi_bits = vi_bits | VD_CQR_RECV;
	c->cq_slot = err ? VD_CQR_SLOTS : slot;
	if (!err)
		sc->slot_conn[slot] = c;
	return err;
}

/* rings_lock held.  What the connection announced is kept as events. */
void vd_shm_cq_slot_drop(struct vd_shm_cq *sc, struct vd_shm_conn *c)
{
	harvest_conn(sc, c);
	if (c->cq_slot < sc->nslot_conn && sc->slot_conn[c->cq_slot] == c)
		sc->slot_conn[c->cq_slot] = NULL;
}

/* ---- the owner's calls -------------------------------------------------------------- */

static bool local_pop(struct vd_shm_cq *sc, uint64_t *ev)
{
	bool got;

	pthread_mutex_lock(&sc->events_lock);
	got = sc->ev_head != sc->ev_tail;
	if (got) {
		*ev = sc->events[sc->ev_head++ % VD_CQ_EVENTS];
		atomic_store_explicit(&sc->ev_count, sc->ev_tail - sc->ev_head,
				      memory_order_relaxed);
	}
	pthread_mutex_unlock(&sc->events_lock);
	return got;
}

static bool signalled(struct vd_shm_cq *sc);

int vd_shm_cq_pop(struct vd_cq *cq, uint64_t *bits, bool *recv)
{
	struct vd_shm_cq *sc = cq->prov;
	uint64_t ev;

	if (!sc)
		return -EAGAIN;
	if (atomic_load_explicit(&sc->overflow, memory_order_relaxed) &&
	    atomic_exchange(&sc->overflow, false))
		vd_async_error(cq->nic, NULL, cq, NULL, VIP_RESOURCE_CQ, VIP_ERROR_CATASTROPHIC);
	/* An empty poll takes no lock: nothing queued, nothing signalled.
	 * (A local event is queued before its pusher's seq_cst fence.) */
	if (!atomic_load_explicit(&sc->ev_count, memory_order_acquire) && !signalled(sc))
		return -EAGAIN;
	if (!local_pop(sc, &ev)) {
		harvest(sc);
		if (!local_pop(sc, &ev))
			return -EAGAIN;
	}
	*recv = ev & VD_CQR_RECV;
	*bits = ev & ~VD_CQR_RECV;
	return 0;
}

static bool signalled(struct vd_shm_cq *sc)
{
	return atomic_load(&sc->rescan) ||
	       atomic_load_explicit(&sc->ring->summary, memory_order_relaxed) ||
	       atomic_load_explicit(&sc->ring->everyone, memory_order_relaxed);
}

/* Harvests what was signalled, so a forged or stale bit is no event. */
static bool events_ready(struct vd_shm_cq *sc)
{
	bool ready;

	if (signalled(sc))
		harvest(sc);
	pthread_mutex_lock(&sc->events_lock);
	ready = sc->ev_head != sc->ev_tail;
	pthread_mutex_unlock(&sc->events_lock);
	return ready;
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

/* The recheck of an armed sleep (vd_futex_waitv_recheck), asked only by
 * a sleep that counts ring messages: the rings alone, under rings_lock
 * (not cq->lock, which vd_shm_cq_close holds while it waits for the
 * sleepers to leave). */
static bool armed_ready(void *armed)
{
	return vd_shm_cq_rings_ready(armed);
}

/* Register as a sleeper of cq's bell: senders that see the count ring
 * it.  1 when there is no need to sleep (ready, or closing); else 0, the
 * bell's word in *w and, in *armed, what disarm needs (cq->prov is
 * cleared by a close while we sleep). */
static int cq_arm(struct vd_cq *cq, bool rings, struct vd_waitv *w, void **armed)
{
	struct vd_shm_cq *sc;
	struct vd_cq_ring *r;

	/* Registered under the lock, so vd_shm_cq_close (which holds it)
	 * either runs before -- prov is NULL -- or waits for us. */
	vd_lock(&cq->lock);
	sc = cq->prov;
	if (sc)
		atomic_fetch_add(&sc->sleepers, 1);
	vd_unlock(&cq->lock);
	if (!sc)
		return 1;
	r = sc->ring;
	*armed = sc;
	/* seq_cst RMW pairs with the senders' seq_cst signal and the fence
	 * in vd_shm_cq_push_local: either they see the count and ring the
	 * bell, or we see what they published.  Ring messages are published
	 * without a fence: for them the sleeper looks again after
	 * VD_CQ_RECHECK_NS (armed_ready). */
	atomic_fetch_add(&r->c.waiting, 1);
	*w = (struct vd_waitv){ &r->b.bell, atomic_load(&r->b.bell), true,
				rings ? VD_CQ_RECHECK_NS : 0, armed_ready, sc };
	/* After the snapshot (seq_cst, pairs with vd_cq_ring_wake()'s
	 * exchange): the next sender rings again, and one that still finds
	 * `rung` set follows a bump we will not miss. */
	atomic_store(&r->c.rung, 0);
	if (events_ready(sc) || atomic_load(&sc->closing) ||
	    (rings && vd_shm_cq_rings_ready(sc))) {
		vd_shm_cq_disarm(cq, sc, false);
		return 1;
	}
	return 0;
}

/* timed_out: the sleep ran its course; the next look covers every
 * connection (a bell a sender failed to ring is not missed for good). */
void vd_shm_cq_disarm(struct vd_cq *cq, void *armed, bool timed_out)
{
	struct vd_shm_cq *sc = armed;

	(void)cq;
	atomic_fetch_sub(&sc->ring->c.waiting, 1);
	if (timed_out)
		atomic_store(&sc->rescan, true);
	atomic_fetch_sub(&sc->sleepers, 1);
}

int vd_shm_cq_arm(struct vd_cq *cq, struct vd_waitv *w, void **armed)
{
	return cq_arm(cq, true, w, armed);
}

/* rings: a message in a ring feeding the CQ also ends the sleep
 * (viaduct_cq_wait_any); VipCQWait waits for events only.  Sleeps at most
 * one slice, then asks for a look at every connection. */
int vd_shm_cq_sleep(struct vd_cq *cq, uint64_t deadline, bool rings)
{
	uint64_t slice_end = vd_now_ns() + VD_CQ_SLICE_NS;
	bool sliced = !deadline || deadline > slice_end;
	struct vd_waitv w;
	void *armed;
	int err;

	if (cq_arm(cq, rings, &w, &armed))
		return 0;
	err = vd_futex_waitv_recheck(&w, 1, sliced ? slice_end : deadline);
	vd_shm_cq_disarm(cq, armed, err == -ETIMEDOUT && sliced);
	return err == -ETIMEDOUT && sliced ? 0 : err;
}
