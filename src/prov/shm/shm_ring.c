/* SPDX-License-Identifier: MIT */
/*
 * shm provider: message rings (viaduct_ring_*, docs/vipl.md "Message
 * rings").  Each direction of a connection has a ring of cache lines the
 * sender copies small messages into and the receiver reads in place: one
 * call and, for a message of up to 56 bytes, one cache line each way --
 * no descriptor, cookie or completion.  The layout is in shm_layout.h
 * (struct vd_ring_hdr).
 *
 * Stale bytes never pass for a header: a header left from an earlier lap
 * carries another line index, and a line whose first word last held
 * payload bytes ("dirty", tracked by the sender) is zeroed by the sender
 * before the message in front of it is published -- which costs nothing
 * when messages repeat one size, as they mostly do.
 *
 * The sender's queue lock serialises writers, the receiver's queue lock
 * readers (or the caller does, with VIADUCT_VI_RING_SOLO); the only shared indices are the headers themselves and the
 * receiver's msg_read, which the sender reads lazily when the ring looks
 * full.  A sender rings the receiver's CQ bell only when a thread sleeps
 * there (viaduct_cq_wait_any).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "prov/shm/shm.h"
#include "util/copy.h"

#define HDR_BYTES sizeof(struct vd_ring_hdr)

static_assert(VIADUCT_RING_MAX_MSG + HDR_BYTES <= VD_SHM_MSG_BYTES / 4,
	      "the largest message fits a quarter of the ring");

static uint32_t lines_for(uint64_t len)
{
	return (uint32_t)((HDR_BYTES + len + VD_CACHELINE - 1) / VD_CACHELINE);
}

static uint8_t *line_at(uint8_t *ring, uint32_t nlines, uint32_t abs)
{
	return ring + (size_t)(abs & (nlines - 1)) * VD_CACHELINE;
}

static uint64_t hdr_word(uint32_t len, uint32_t pos)
{
	struct vd_ring_hdr h = { len, pos };
	uint64_t w;

	memcpy(&w, &h, sizeof(w));
	return w;
}

static struct vd_ring_hdr hdr_load(const uint8_t *line)
{
	/* seq_cst (a plain load on x86) so that a sleeper's readiness check
	 * stays after its arming; acquire pairs with publish()'s release
	 * store: payload first. */
	uint64_t w = __atomic_load_n((const uint64_t *)line, __ATOMIC_SEQ_CST);
	struct vd_ring_hdr h;

	memcpy(&h, &w, sizeof(h));
	return h;
}

/* ---- sending ------------------------------------------------------------------ */

int vd_shm_ring_init(struct vd_shm_conn *c)
{
	c->msg_dirty = calloc((c->msg_lines + 63) / 64, sizeof(uint64_t));
	return c->msg_dirty ? 0 : -ENOMEM;
}

static bool dirty(const struct vd_shm_conn *c, uint32_t abs)
{
	uint32_t i = abs & (c->msg_lines - 1);

	return c->msg_dirty[i / 64] >> (i % 64) & 1;
}

static void set_dirty(struct vd_shm_conn *c, uint32_t abs, bool d)
{
	uint32_t i = abs & (c->msg_lines - 1);
	uint64_t bit = 1ull << (i % 64);

	c->msg_dirty[i / 64] = d ? c->msg_dirty[i / 64] | bit : c->msg_dirty[i / 64] & ~bit;
}

/* Mark lines [at, at + n) dirty, a word at a time (a message never wraps,
 * so the range is contiguous in the ring): a bit a line cost an 8 KiB
 * message 128 read-modify-writes, a tenth of its send. */
static void set_dirty_run(struct vd_shm_conn *c, uint32_t at, uint32_t n)
{
	uint32_t i = at & (c->msg_lines - 1), end = i + n;

	while (i < end) {
		uint32_t bit = i % 64, take = end - i < 64 - bit ? end - i : 64 - bit;
		uint64_t mask = (take == 64 ? ~0ull : ((1ull << take) - 1)) << bit;

		c->msg_dirty[i / 64] |= mask;
		i += take;
	}
}

/* The message takes [at, at + need): its first line holds a header, the
 * others payload; the line after it is where the reader looks next. */
static void mark_lines(struct vd_shm_conn *c, uint32_t at, uint32_t need, bool clean_next)
{
	set_dirty(c, at, false);
	if (need > 1)
		set_dirty_run(c, at + 1, need - 1);
	if (clean_next) {
		__atomic_store_n((uint64_t *)line_at(c->tx_msg, c->msg_lines, at + need), 0,
				 __ATOMIC_RELAXED);
		set_dirty(c, at + need, false);
	}
}

/* Lines [msg_write, msg_write + n) are free to write. */
static bool room(struct vd_shm_conn *c, uint32_t n)
{
	if (c->msg_write + n - c->msg_read_lazy <= c->msg_lines)
		return true;
	/* Acquire pairs with vd_shm_ring_release()'s release: the receiver is
	 * done reading them. */
	c->msg_read_lazy = atomic_load_explicit(&c->tx->r2.msg_read, memory_order_acquire);
	return c->msg_write + n - c->msg_read_lazy <= c->msg_lines;
}

/* Header last; release pairs with hdr_load()'s acquire, so the payload
 * is visible with it.  No store-load fence orders vd_cq_ring_wake()'s
 * load of the receiver's waiter count after this store: the fence waited
 * for the line to come back from the polling receiver and cost a sixth
 * of the small-message rate.  On x86 (TSO) the load may then pass the
 * store, so a receiver arming its sleep at that instant can miss both the
 * message and the bell; its sleep looks at the rings again, still armed,
 * VD_CQ_RECHECK_NS later (shm_cq.c), by when a store buffer has long
 * drained -- and every 50 ms regardless (docs/vipl.md). */
static void publish(uint8_t *line, uint32_t len, uint32_t abs)
{
	__atomic_store_n((uint64_t *)line, hdr_word(len, abs + 1), __ATOMIC_RELEASE);
}


int vd_shm_ring_send(struct vd_vi *vi, const void *hdr, uint32_t hlen,
		     const void *data, uint32_t len)
{
	struct vd_shm_conn *c = vi->conn;
	uint64_t total = (uint64_t)hlen + len;
	uint32_t need = lines_for(total), w, pad, at;
	bool clean_next;
	uint8_t *line;

	if (!c || atomic_load_explicit(&c->broken, memory_order_relaxed))
		return -ENOTCONN;
	if (total > VIADUCT_RING_MAX_MSG)
		return -EMSGSIZE;
	w = c->msg_write;
	pad = (w & (c->msg_lines - 1)) + need > c->msg_lines ?
	      c->msg_lines - (w & (c->msg_lines - 1)) : 0;
	at = w + pad;
	clean_next = dirty(c, at + need);
	if (!room(c, pad + need + clean_next))
		return -EAGAIN;
	line = line_at(c->tx_msg, c->msg_lines, at);
	memcpy(line + HDR_BYTES, hdr, hlen);
	if (len)
		vd_copy(line + HDR_BYTES + hlen, data, len);
	mark_lines(c, at, need, clean_next);
	publish(line, (uint32_t)total, at);
	if (pad) {      /* after the message: the reader jumps straight to it */
		set_dirty(c, w, false);
		publish(line_at(c->tx_msg, c->msg_lines, w), VD_RING_WRAP, w);
	}
	c->msg_write = at + need;
	vi->stats.sends++;
	vi->stats.send_bytes += total;
	if (c->peer_rcq && vd_cq_ring_wake(c->peer_rcq))
		vi->stats.wakes_sent++;
	return 0;
}

/* ---- receiving ---------------------------------------------------------------- */

bool vd_shm_ring_ready(struct vd_shm_conn *c)
{
	uint32_t r = atomic_load_explicit(&c->msg_next, memory_order_relaxed);

	return hdr_load(line_at(c->rx_msg, c->msg_lines, r)).pos == r + 1;
}

static int malformed(struct vd_shm_conn *c)
{
	vd_shm_conn_fail(c, "malformed message ring entry");
	return -EPROTO;
}

int vd_shm_ring_peek(struct vd_vi *vi, const void **msg, uint32_t *len)
{
	struct vd_shm_conn *c = vi->conn;

	if (!c)
		return -ENOTCONN;
	/* Two rounds at most: a wrap marker, then the message at offset 0. */
	for (int round = 0; round < 2; round++) {
		uint32_t r = atomic_load_explicit(&c->msg_next, memory_order_relaxed);
		uint32_t off = r & (c->msg_lines - 1);
		uint8_t *line = line_at(c->rx_msg, c->msg_lines, r);
		struct vd_ring_hdr h = hdr_load(line);

		if (h.pos != r + 1)
			return -EAGAIN;
		if (h.len == VD_RING_WRAP) {
			if (off == 0 || round)
				return malformed(c);
			atomic_store_explicit(&c->msg_next, r + c->msg_lines - off,
					      memory_order_relaxed);
			continue;
		}
		if (h.len > VIADUCT_RING_MAX_MSG || off + lines_for(h.len) > c->msg_lines)
			return malformed(c);
		c->msg_peeked = lines_for(h.len);
		*msg = line + HDR_BYTES;
		*len = h.len;
		return 0;
	}
	return malformed(c);
}

int vd_shm_ring_release(struct vd_vi *vi)
{
	struct vd_shm_conn *c = vi->conn;
	uint32_t next;

	if (!c || !c->msg_peeked)
		return -EINVAL;
	next = atomic_load_explicit(&c->msg_next, memory_order_relaxed) + c->msg_peeked;
	c->msg_peeked = 0;
	atomic_store_explicit(&c->msg_next, next, memory_order_relaxed);
	vi->stats.recvs++;
	/* Release pairs with room()'s acquire: we are done reading. */
	atomic_store_explicit(&c->rx->r2.msg_read, next, memory_order_release);
	return 0;
}

/* ---- the CQ's list of rings ------------------------------------------------------ */

void vd_shm_ring_link(struct vd_vi *vi, struct vd_shm_conn *c)
{
	struct vd_shm_cq *sc = vi->recv_cq ? vi->recv_cq->prov : NULL;

	if (!sc || c->linked_cq)
		return;
	pthread_mutex_lock(&sc->rings_lock);
	/* Without a slot (all taken) its sender signals `everyone`. */
	(void)vd_shm_cq_slot_take(sc, c, vd_obj_handle_bits(vi));
	vd_list_add(&sc->rings, &c->cq_link);
	c->linked_cq = sc;
	pthread_mutex_unlock(&sc->rings_lock);
}

void vd_shm_ring_unlink(struct vd_shm_conn *c)
{
	struct vd_shm_cq *sc = c->linked_cq;

	if (!sc)
		return;
	pthread_mutex_lock(&sc->rings_lock);
	vd_shm_cq_slot_drop(sc, c);
	vd_list_del(&c->cq_link);
	c->linked_cq = NULL;
	pthread_mutex_unlock(&sc->rings_lock);
}

/* A message waits in a ring feeding this CQ. */
bool vd_shm_cq_rings_ready(struct vd_shm_cq *sc)
{
	bool ready = false;

	pthread_mutex_lock(&sc->rings_lock);
	for (struct vd_list *l = sc->rings.next; l != &sc->rings && !ready; l = l->next)
		ready = vd_shm_ring_ready(vd_container_of(l, struct vd_shm_conn, cq_link));
	pthread_mutex_unlock(&sc->rings_lock);
	return ready;
}
