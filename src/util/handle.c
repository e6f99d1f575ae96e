/* SPDX-License-Identifier: MIT */
/*
 * Handles: (type << 56) | (generation << 24) | (index + 1).
 *
 * The index names a slot of a grow-only two-level table: chunks of
 * SLOTS_PER_CHUNK slots, allocated once and never freed, their pointers
 * published with release and read with acquire, so vd_obj_lookup() needs
 * no lock.  The slot's generation is odd while an object lives in it and
 * is bumped on every vd_obj_new() and vd_obj_free(), so a stale handle
 * (freed, or the slot reused) never matches.
 *
 * Object memory comes from per-size-class chunks that are never unmapped:
 * a lookup that races with a free reads recycled memory, never a hole.
 * The object header (struct vd_obj) is only ever accessed with atomic
 * operations -- never memset, never used as a free-list link -- because
 * lookups of stale handles read it at any time.  Free objects are linked
 * through the first word after the header.
 *
 * vd_obj.reserved holds the object's size class (written by vd_obj_new,
 * read by vd_obj_free; no one else uses it).
 *
 * Allocation and free are serialised by one mutex (rare operations:
 * opening NICs, creating VIs and CQs); lookups never take it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "util/handle.h"

#define IDX_BITS 24
#define GEN_SHIFT 24
#define TYPE_SHIFT 56
#define MAX_SLOTS (1u << IDX_BITS)
#define SLOTS_PER_CHUNK 1024u
#define NCHUNKS (MAX_SLOTS / SLOTS_PER_CHUNK)

/* Size classes: 64 B << k, for k < NCLASSES (64 B .. 1 MiB). */
#define CLASS_MIN_SHIFT 6
#define NCLASSES 15
#define CLASS_CHUNK_BYTES (64u * 1024u)

struct slot {
	_Atomic(struct vd_obj *) obj;   /* current or last occupant */
	uint32_t gen;                   /* under g_lock; odd while live */
	uint32_t next_free;             /* index + 1; 0: end of list */
};

/* A freed object waits in a FIFO quarantine before it can be reused, with
 * its contents untouched: a thread that looked the object up just before
 * it was destroyed (a notify thread inside VipCQWait, a waiter woken by
 * VipDestroyVi) finds its fields -- nic pointer, lock -- still intact
 * while it notices that the handle died. */
#define QUARANTINE 256

struct size_class {
	void *free;                     /* linked through obj + FREE_LINK */
	char *bump;                     /* unused tail of the newest chunk */
	size_t left;
	void *quar[QUARANTINE];         /* ring, oldest at qhead */
	unsigned qhead, qcount;
};

/* Where a free object keeps its free-list link: past the header. */
#define FREE_LINK sizeof(struct vd_obj)

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(struct slot *) g_chunks[NCHUNKS];
static uint32_t g_nslots;               /* slots ever made, under g_lock */
static uint32_t g_free_head;            /* index + 1, under g_lock */
static struct size_class g_classes[NCLASSES];

/* fork() while another thread allocates: the child must not inherit a
 * locked g_lock (it would hang in its first vd_obj_new). */
static void fork_prepare(void)
{
	pthread_mutex_lock(&g_lock);
}

static void fork_release(void)
{
	pthread_mutex_unlock(&g_lock);
}

static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;

static void atfork_init(void)
{
	pthread_atfork(fork_prepare, fork_release, fork_release);
}

/* ---- object memory --------------------------------------------------------- */

static int size_class_of(size_t size)
{
	int k;

	for (k = 0; k < NCLASSES; k++)
		if (size <= ((size_t)1 << (CLASS_MIN_SHIFT + k)))
			return k;
	return -1;
}

static void *class_alloc(int k)
{
	struct size_class *c = &g_classes[k];
	size_t sz = (size_t)1 << (CLASS_MIN_SHIFT + k), bytes;
	void *o = c->free;

	if (o) {
		c->free = *(void **)((char *)o + FREE_LINK);
		return o;
	}
	if (c->left < sz) {
		bytes = sz > CLASS_CHUNK_BYTES ? sz : CLASS_CHUNK_BYTES;
		/* Never unmapped: see the comment at the top. */
		o = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (o == MAP_FAILED)
			return NULL;
		c->bump = o;
		c->left = bytes;
	}
	o = c->bump;
	c->bump += sz;
	c->left -= sz;
	return o;
}

static void class_free(int k, void *o)
{
	struct size_class *c = &g_classes[k];

	if (c->qcount == QUARANTINE) {  /* the oldest becomes reusable */
		void *old = c->quar[c->qhead];
		*(void **)((char *)old + FREE_LINK) = c->free;
		c->free = old;
		c->qhead = (c->qhead + 1) % QUARANTINE;
		c->qcount--;
	}
	c->quar[(c->qhead + c->qcount) % QUARANTINE] = o;
	c->qcount++;
}

/* ---- slots ------------------------------------------------------------------ */

static struct slot *slot_at(uint32_t idx)
{
	/* Acquire: pairs with the release store in grow_table(), so the
	 * chunk's zeroed contents are visible. */
	struct slot *chunk = atomic_load_explicit(&g_chunks[idx / SLOTS_PER_CHUNK],
						  memory_order_acquire);

	return chunk ? &chunk[idx % SLOTS_PER_CHUNK] : NULL;
}

/* Add one chunk of slots to the free list.  g_lock held. */
static int grow_table(void)
{
	uint32_t first = g_nslots, i;
	struct slot *chunk;

	if (first >= MAX_SLOTS)
		return -ENOMEM;
	chunk = mmap(NULL, SLOTS_PER_CHUNK * sizeof(*chunk),
		     PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (chunk == MAP_FAILED)
		return -ENOMEM;
	/* Push in reverse so low indices are handed out first. */
	for (i = SLOTS_PER_CHUNK; i-- > 0;) {
		chunk[i].next_free = g_free_head;
		g_free_head = first + i + 1;
	}
	/* Release: pairs with the acquire in slot_at(). */
	atomic_store_explicit(&g_chunks[first / SLOTS_PER_CHUNK], chunk,
			      memory_order_release);
	g_nslots = first + SLOTS_PER_CHUNK;
	return 0;
}

/* A free slot index, or -1.  g_lock held. */
static int64_t slot_get(void)
{
	uint32_t idx;

	if (!g_free_head && grow_table())
		return -1;
	idx = g_free_head - 1;
	g_free_head = slot_at(idx)->next_free;
	return idx;
}

static void slot_put(uint32_t idx)
{
	slot_at(idx)->next_free = g_free_head;
	g_free_head = idx + 1;
}

/* ---- objects ---------------------------------------------------------------- */

void *vd_obj_new(unsigned type, size_t size)
{
	int k = size_class_of(size < 64 ? 64 : size);
	struct vd_obj *o = NULL;
	struct slot *s;
	int64_t idx;

	if (k < 0 || size < sizeof(struct vd_obj))
		return NULL;
	pthread_once(&g_atfork_once, atfork_init);
	pthread_mutex_lock(&g_lock);
	idx = slot_get();
	if (idx >= 0) {
		o = class_alloc(k);
		if (!o)
			slot_put((uint32_t)idx);
	}
	if (o) {
		s = slot_at((uint32_t)idx);
		s->gen += 1;    /* even (free) -> odd (live) */
		memset((char *)o + sizeof(*o), 0, size - sizeof(*o));
		/* Header stores are seq_cst, like the loads in
		 * vd_obj_lookup(): see there. */
		__atomic_store_n(&o->type, (uint32_t)type, __ATOMIC_SEQ_CST);
		__atomic_store_n(&o->idx, (uint32_t)idx, __ATOMIC_SEQ_CST);
		__atomic_store_n(&o->reserved, (uint32_t)k, __ATOMIC_SEQ_CST);
		atomic_store(&o->gen, s->gen);
		/* Release: pairs with the acquire load in vd_obj_lookup();
		 * the zeroed body is visible with the pointer. */
		atomic_store_explicit(&s->obj, o, memory_order_release);
	}
	pthread_mutex_unlock(&g_lock);
	return o;
}

void vd_obj_free(void *obj)
{
	struct vd_obj *o = obj;
	uint32_t idx, k;
	struct slot *s;

	if (!o)
		return;
	pthread_mutex_lock(&g_lock);
	idx = __atomic_load_n(&o->idx, __ATOMIC_RELAXED);
	k = __atomic_load_n(&o->reserved, __ATOMIC_RELAXED);
	s = slot_at(idx);
	if (s && atomic_load_explicit(&s->obj, memory_order_relaxed) == o &&
	    (s->gen & 1)) {
		s->gen += 1;    /* odd (live) -> even (free) */
		/* Seq_cst (see vd_obj_lookup): a lookup that still sees the
		 * old (odd) gen may return the object; one that sees this
		 * value returns NULL. */
		atomic_store(&o->gen, s->gen);
		slot_put(idx);
		class_free((int)k, o);
	}
	pthread_mutex_unlock(&g_lock);
}

void *vd_obj_handle(const void *obj)
{
	const struct vd_obj *o = obj;
	uint64_t type, gen, idx;

	if (!o)
		return NULL;
	type = __atomic_load_n(&o->type, __ATOMIC_RELAXED);
	idx = __atomic_load_n(&o->idx, __ATOMIC_RELAXED);
	/* Relaxed: the caller owns the live object. */
	gen = atomic_load_explicit(&((struct vd_obj *)o)->gen, memory_order_relaxed);
	return (void *)(uintptr_t)((type << TYPE_SHIFT) | (gen << GEN_SHIFT) |
				   (idx + 1));
}

/* Hot path (every post): no lock, a handful of loads. */
void *vd_obj_lookup(const void *handle, unsigned type)
{
	uint64_t h = (uint64_t)(uintptr_t)handle;
	uint32_t idx = (uint32_t)(h & (MAX_SLOTS - 1)) - 1;
	uint32_t hgen = (uint32_t)(h >> GEN_SHIFT);
	struct vd_obj *o;
	struct slot *s;
	uint32_t g;

	if ((h >> TYPE_SHIFT) != (uint64_t)type || !(hgen & 1) ||
	    idx >= MAX_SLOTS)   /* index part 0 wraps to >= MAX_SLOTS */
		return NULL;
	s = slot_at(idx);
	if (!s)
		return NULL;
	/* Acquire: pairs with the release store of s->obj in vd_obj_new(). */
	o = atomic_load_explicit(&s->obj, memory_order_acquire);
	if (!o)
		return NULL;
	/* Seqlock-style read of the header: gen, type and idx, gen again --
	 * the memory may be recycled for another slot meanwhile, and a free
	 * always changes gen before a new incarnation writes type and idx.
	 * Every header access is seq_cst (plain loads on x86; no fences,
	 * which TSan cannot check), so if type or idx came from a newer
	 * incarnation, the second load of gen sees the change. */
	g = atomic_load(&o->gen);
	if (g != hgen || __atomic_load_n(&o->type, __ATOMIC_SEQ_CST) != (uint32_t)type ||
	    __atomic_load_n(&o->idx, __ATOMIC_SEQ_CST) != idx)
		return NULL;
	if (atomic_load(&o->gen) != g)
		return NULL;
	return o;
}
