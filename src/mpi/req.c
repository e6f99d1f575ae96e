/* SPDX-License-Identifier: MIT */
/*
 * Requests and the two matching queues: posted receives and unexpected
 * messages, both in arrival/post order, so the first match is the one the
 * non-overtaking rule asks for.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "util/copy.h"

static struct vd_req **reqs;            /* index = handle - 1 */
static uint32_t nreqs, cap;
static uint32_t *freelist, nfree;

/* A standard send whose message went into the ring as it started is
 * complete from the start: MPI_Isend hands out this one shared request
 * for it (VD_REQ_SENT) instead of one of its own -- nothing to take,
 * clear or give back, a sixth of a small windowed send's time -- as Open
 * MPI's ob1 does for its inline sends.  Waits and tests see a complete
 * send with a zeroed status, as for any send; releasing it does nothing;
 * the message handlers pass over it (done). */
static struct vd_req sent_req = { .kind = VD_REQ_SEND, .id = VD_REQ_SENT, .done = true };

static struct vd_req *posted_head, **posted_tail = &posted_head;
static struct vd_unexp *unexp_head, **unexp_tail = &unexp_head;
static uint32_t recv_open_n;            /* receives started, not complete */

static void payloads_drop(void);

static int grow(void)
{
	uint32_t ncap = cap ? cap * 2 : 256;
	struct vd_req **nr = realloc(reqs, ncap * sizeof(*nr));
	uint32_t *nf;

	if (!nr)
		return -ENOMEM;
	reqs = nr;
	nf = realloc(freelist, ncap * sizeof(*nf));
	if (!nf)
		return -ENOMEM;
	freelist = nf;
	cap = ncap;
	return 0;
}

/* Zero in 64-byte pieces: GCC (12, -O2) turns one constant memset above
 * 64 bytes into `rep stos`, whose start-up (~35 cycles) was an eighth of
 * a small MPI_Isend; the pieces become plain vector stores. */
static inline void zero_req(struct vd_req *r)
{
	unsigned char *p = (unsigned char *)r;
	size_t i;

#pragma GCC unroll 4
	for (i = 0; i + 64 <= sizeof(*r); i += 64)
		memset(p + i, 0, 64);
	memset(p + i, 0, sizeof(*r) - i);
}

struct vd_req *vd_req_new(enum vd_req_kind kind)
{
	struct vd_req *r;
	uint32_t idx;

	if (nfree) {
		idx = freelist[--nfree];
		r = reqs[idx];
	} else {
		if (nreqs == cap && grow())
			return NULL;
		r = malloc(sizeof(*r));
		if (!r)
			return NULL;
		idx = nreqs++;
		reqs[idx] = r;
	}
	zero_req(r);
	r->kind = kind;
	r->id = idx + 1;
	return r;
}

struct vd_req *vd_req_get(MPI_Request handle)
{
	uint32_t i = (uint32_t)handle - 1;

	if (handle == VD_REQ_SENT)
		return &sent_req;
	if (handle <= 0 || i >= nreqs || reqs[i]->kind == VD_REQ_FREE)
		return NULL;
	return reqs[i];
}

static void recv_close(struct vd_req *r)
{
	if (r->recv_open) {
		r->recv_open = false;
		recv_open_n--;
	}
}

void vd_req_release(struct vd_req *r)
{
	if (r == &sent_req)
		return;
	recv_close(r);
	/* receives and persistent requests retained their datatype */
	if ((r->kind == VD_REQ_RECV || r->kind == VD_REQ_PERSIST) && r->t)
		vd_dtype_release(r->t);
	if (r->kind == VD_REQ_GREQ)
		vd_greq_release(r);
	if (r->kind == VD_REQ_PERSIST && r->pcomm)
		vd_comm_release(r->pcomm);
	r->pcomm = NULL;
	r->t = NULL;
	r->kind = VD_REQ_FREE;
	freelist[nfree++] = r->id - 1;
}

void vd_req_complete(struct vd_req *r, int err)
{
	if (r == &sent_req)
		return;
	r->done = true;
	r->err = err;
	recv_close(r);
	if (r->kind == VD_REQ_SEND && r->tmp) {
		free(r->tmp);           /* packed copy: nobody reads it now */
		r->tmp = NULL;
	}
	if (r->freed)
		vd_req_release(r);      /* MPI_Request_free'd before it ended */
}

/* A generalized request may be completed by another thread of the
 * program while this one polls (the waits re-check between bounded
 * sleeps), hence the atomic read. */
bool vd_req_ready(struct vd_req *r)
{
	if (r->kind == VD_REQ_PERSIST)
		return vd_persist_ready(r);
	if (r->kind == VD_REQ_GREQ)
		return __atomic_load_n(&r->done, __ATOMIC_ACQUIRE);
	return r->done;
}

bool vd_req_inactive(const struct vd_req *r)
{
	return r->kind == VD_REQ_PERSIST && !r->active;
}

/* What a request still holds at MPI_Finalize: a program may leave
 * requests pending or persistent requests unfreed, and their datatypes
 * (which MPI_Type_free left to them) and packed copies go with them. */
static void req_drop_at_finalize(struct vd_req *r)
{
	if ((r->kind == VD_REQ_SEND || r->kind == VD_REQ_RECV) && r->tmp)
		free(r->tmp);
	r->tmp = NULL;
	if (r->kind != VD_REQ_FREE)
		vd_req_release(r);
}

void vd_req_finalize(void)
{
	vd_message_finalize();
	for (uint32_t i = 0; i < nreqs; i++) {
		req_drop_at_finalize(reqs[i]);
		free(reqs[i]);
	}
	free(reqs);
	free(freelist);
	reqs = NULL;
	freelist = NULL;
	nreqs = cap = nfree = 0;
	while (unexp_head) {
		struct vd_unexp *u = unexp_head;
		unexp_head = u->next;
		vd_payload_free(u->payload);
		free(u);
	}
	payloads_drop();
	unexp_tail = &unexp_head;
	posted_head = NULL;
	posted_tail = &posted_head;
}

/* ---- unexpected payloads ---------------------------------------------------------- */

/* Payloads of up to 32 KiB come from freed ones of their power-of-two
 * class, up to PAYLOAD_KEEP a class: glibc gives the top of its heap
 * back to the kernel once 128 KiB are free there, so the unexpected
 * 8 KiB messages of a window of 64, taken and freed together, had their
 * pages faulted in again every window (5% of an 8 KiB both-ways run). */
#define PAYLOAD_MIN_SHIFT 8             /* 256 B */
#define PAYLOAD_CLASSES 8               /* .. 32 KiB */
#define PAYLOAD_KEEP 64u

struct payload_hdr {
	union {
		struct payload_hdr *next;       /* while kept */
		size_t cls;                     /* while in use */
	};
	size_t pad;                     /* the payload stays 16-byte aligned */
};
static_assert(sizeof(struct payload_hdr) == 16, "payload header");

static struct payload_hdr *kept[PAYLOAD_CLASSES];
static unsigned nkept[PAYLOAD_CLASSES];

static size_t payload_class(size_t n)
{
	size_t cls = 0;

	while (cls < PAYLOAD_CLASSES && ((size_t)1 << (PAYLOAD_MIN_SHIFT + cls)) < n)
		cls++;
	return cls;
}

void *vd_payload_alloc(size_t n)
{
	size_t cls = payload_class(n);
	struct payload_hdr *h = cls < PAYLOAD_CLASSES ? kept[cls] : NULL;

	if (h) {
		kept[cls] = h->next;
		nkept[cls]--;
	} else {
		size_t room = cls < PAYLOAD_CLASSES ? (size_t)1 << (PAYLOAD_MIN_SHIFT + cls) : n;
		h = malloc(sizeof(*h) + room);
		if (!h)
			return NULL;
	}
	h->cls = cls;
	return h + 1;
}

void vd_payload_free(void *p)
{
	struct payload_hdr *h = p ? (struct payload_hdr *)p - 1 : NULL;
	size_t cls;

	if (!h)
		return;
	cls = h->cls;
	if (cls >= PAYLOAD_CLASSES || nkept[cls] >= PAYLOAD_KEEP) {
		free(h);
		return;
	}
	h->next = kept[cls];
	kept[cls] = h;
	nkept[cls]++;
}

static void payloads_drop(void)
{
	for (size_t cls = 0; cls < PAYLOAD_CLASSES; cls++) {
		while (kept[cls]) {
			struct payload_hdr *h = kept[cls];
			kept[cls] = h->next;
			free(h);
		}
		nkept[cls] = 0;
	}
}

/* ---- matching -------------------------------------------------------------------- */

static bool matches(uint32_t ctx, int src, int tag, uint32_t mctx, int msrc, int mtag)
{
	return ctx == mctx && (src == MPI_ANY_SOURCE || src == msrc) &&
	       (tag == MPI_ANY_TAG || tag == mtag);
}

struct vd_req *vd_match_posted(uint32_t ctx, int src, int tag)
{
	for (struct vd_req **pp = &posted_head; *pp; pp = &(*pp)->next) {
		struct vd_req *r = *pp;
		if (!matches(r->ctx, r->src, r->tag, ctx, src, tag))
			continue;
		*pp = r->next;
		if (!*pp)
			posted_tail = pp;
		r->next = NULL;
		return r;
	}
	return NULL;
}

void vd_post_recv(struct vd_req *r)
{
	r->next = NULL;
	*posted_tail = r;
	posted_tail = &r->next;
}

void vd_recv_open(struct vd_req *r)
{
	if (!r->recv_open) {
		r->recv_open = true;
		recv_open_n++;
	}
}

bool vd_recv_busy(void)
{
	return recv_open_n != 0;
}

/* Take a posted receive out of the queue (MPI_Cancel); false if it was
 * already matched. */
bool vd_unpost_recv(struct vd_req *r)
{
	for (struct vd_req **pp = &posted_head; *pp; pp = &(*pp)->next) {
		if (*pp != r)
			continue;
		*pp = r->next;
		if (!*pp)
			posted_tail = pp;
		return true;
	}
	return false;
}

struct vd_unexp *vd_unexp_add(int peer, const struct vd_msg *m, const void *payload,
			      size_t plen)
{
	struct vd_unexp *u = malloc(sizeof(*u));

	if (!u)
		vd_pmi_abort(MPI_ERR_NO_MEM, "viaduct MPI: out of memory for a message");
	u->hdr = *m;
	u->peer = peer;
	u->payload = NULL;
	if (plen) {
		u->payload = vd_payload_alloc(plen);
		if (!u->payload)
			vd_pmi_abort(MPI_ERR_NO_MEM, "viaduct MPI: out of memory for a message");
		vd_copy(u->payload, payload, plen);
	}
	u->next = NULL;
	*unexp_tail = u;
	unexp_tail = &u->next;
	return u;
}

/* The first unexpected message matching (ctx, src, tag); with `take` it
 * is removed from the queue (the caller frees it). */
struct vd_unexp *vd_unexp_find(uint32_t ctx, int src, int tag, bool take)
{
	for (struct vd_unexp **pp = &unexp_head; *pp; pp = &(*pp)->next) {
		struct vd_unexp *u = *pp;
		if (!matches(ctx, src, tag, u->hdr.ctx, u->hdr.src, u->hdr.tag))
			continue;
		if (take) {
			*pp = u->next;
			if (!*pp)
				unexp_tail = pp;
		}
		return u;
	}
	return NULL;
}
