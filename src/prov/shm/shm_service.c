/* SPDX-License-Identifier: MIT */
/*
 * shm provider: the service thread.  One per process while a NIC is open,
 * started on the first connection: epoll over every connection's socket
 * and pidfd, turning peer death, VipDisconnect at the peer and the data
 * path's error notices into vd_vi_conn_broken() / vd_async_error().
 *
 * Race with vd_shm_service_remove(): epoll events carry (slot, generation),
 * never pointers, and are resolved under svc.lock, so an event for a
 * connection removed meanwhile is dropped.  While the thread calls into
 * the core (no lock held: the core takes VI locks and runs the user's
 * error handler, which may call VIPL) the slot is marked busy, and remove
 * waits for it -- unless the remove comes from that handler, on this
 * very thread; the thread then never looks at the slot again.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "prov/shm/shm_conn.h"

#define WAKE_KEY UINT64_MAX
#define MAX_CODES 8

struct svc_slot {
	struct vd_shm_conn *c;          /* NULL: free */
	uint32_t gen;                   /* bumped at every add and remove */
	bool watching;                  /* in the epoll set */
	bool busy;                      /* the thread is calling the core */
};

struct svc {
	pthread_t thread;
	int epfd, evfd;
	bool stop;
	bool self_stop;                 /* stopped from its own thread */
	struct svc_slot *slots;
	uint32_t nslots;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t idle;            /* a slot stopped being busy */
	int nic_refs;
	struct svc *cur;
} g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, NULL };

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* ---- notices ------------------------------------------------------------------ */

void vd_shm_notice(struct vd_shm_conn *c, enum vd_shm_notice n, bool breaks)
{
	struct vd_shm_notice_msg m = {
		.magic = VD_SHM_NOTICE_MAGIC, .type = (uint16_t)n, .breaks = breaks,
	};

	/* Best effort: a full or dead socket means the peer learns of the
	 * loss another way (EOF, pidfd). */
	if (c && c->sock >= 0)
		(void)send(c->sock, &m, sizeof(m), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* What one batch of events asks the core to do. */
struct svc_act {
	VIP_ERROR_CODE codes[MAX_CODES];    /* async errors only */
	unsigned ncodes;
	bool brk;
	VIP_ERROR_CODE brk_code;
};

static void act_break(struct svc_act *a, VIP_ERROR_CODE code)
{
	if (!a->brk) {
		a->brk = true;
		a->brk_code = code;
	}
}

static bool notice_code(const struct vd_shm_notice_msg *m, VIP_ERROR_CODE *code)
{
	switch (m->type) {
	case VD_SHM_NOTICE_DISCONNECT:
		*code = VIP_ERROR_CONN_LOST;
		return true;
	case VD_SHM_NOTICE_RECVQ_EMPTY:
	case VD_SHM_NOTICE_LENGTH:
		*code = VIP_ERROR_RECVQ_EMPTY;
		return true;
	case VD_SHM_NOTICE_RDMAW_PROT:
		*code = VIP_ERROR_RDMAW_PROT;
		return true;
	case VD_SHM_NOTICE_RDMAR_PROT:
		*code = VIP_ERROR_RDMAR_PROT;
		return true;
	default:
		return false;
	}
}

/* Read the notices waiting on c's socket (svc.lock held; non-blocking).
 * EOF, errors and malformed messages break the connection. */
static void read_notices(struct vd_shm_conn *c, struct svc_act *a)
{
	for (int k = 0; k < 16 && !a->brk; k++) {
		union {
			struct vd_shm_notice_msg m;
			char room[256];
		} u;
		VIP_ERROR_CODE code;
		ssize_t r = recv(c->sock, &u, sizeof(u), MSG_DONTWAIT);

		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (r <= 0) {
			act_break(a, VIP_ERROR_CONN_LOST);
			return;
		}
		if (r != (ssize_t)sizeof(u.m) || u.m.magic != VD_SHM_NOTICE_MAGIC ||
		    u.m.breaks > 1 || !notice_code(&u.m, &code)) {
			vd_log("shm: malformed notice from pid %d", (int)c->peer_pid);
			act_break(a, VIP_ERROR_CONN_LOST);
			return;
		}
		if (u.m.breaks || u.m.type == VD_SHM_NOTICE_DISCONNECT)
			act_break(a, code);
		else if (a->ncodes < MAX_CODES)
			a->codes[a->ncodes++] = code;
	}
}

/* ---- the thread ------------------------------------------------------------------- */

static uint64_t slot_key(uint32_t idx, uint32_t gen, bool pidfd)
{
	return (uint64_t)gen << 32 | (uint64_t)idx << 1 | (pidfd ? 1u : 0u);
}

static void unwatch(struct svc *s, struct svc_slot *sl)
{
	if (!sl->watching)
		return;
	epoll_ctl(s->epfd, EPOLL_CTL_DEL, sl->c->sock, NULL);
	if (sl->c->pidfd >= 0)
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, sl->c->pidfd, NULL);
	sl->watching = false;
	sl->c->in_epoll = false;
}

static void run_act(struct vd_vi *vi, const struct svc_act *a)
{
	for (unsigned i = 0; i < a->ncodes; i++)
		vd_async_error(vi->nic, vi, NULL, NULL, VIP_RESOURCE_VI, a->codes[i]);
	if (a->brk)
		vd_vi_conn_broken(vi, a->brk_code);
}

static void svc_event(struct svc *s, uint64_t key, uint32_t events)
{
	uint32_t idx = (uint32_t)(key >> 1) & 0x7fffffffu, gen = (uint32_t)(key >> 32);
	struct svc_act a = { .ncodes = 0 };
	struct svc_slot *sl;
	struct vd_vi *vi;

	pthread_mutex_lock(&g.lock);
	sl = idx < s->nslots ? &s->slots[idx] : NULL;
	if (!sl || sl->gen != gen || !sl->c || !sl->watching) {
		pthread_mutex_unlock(&g.lock);
		return;                 /* removed since epoll_wait returned */
	}
	if (!(key & 1))
		read_notices(sl->c, &a);        /* first: they say more than EOF */
	if ((key & 1) || (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)))
		act_break(&a, VIP_ERROR_CONN_LOST);
	if (a.brk)
		unwatch(s, sl);         /* once is enough; the core frees it later */
	if (!a.brk && !a.ncodes) {
		pthread_mutex_unlock(&g.lock);
		return;
	}
	sl->busy = true;
	vi = sl->c->vi;
	pthread_mutex_unlock(&g.lock);
	run_act(vi, &a);
	pthread_mutex_lock(&g.lock);
	s->slots[idx].busy = false;     /* slots may have moved: by index */
	pthread_cond_broadcast(&g.idle);
	pthread_mutex_unlock(&g.lock);
}

static void svc_free(struct svc *s)
{
	close(s->epfd);
	close(s->evfd);
	free(s->slots);
	free(s);
}

static void *svc_main(void *arg)
{
	struct svc *s = arg;
	struct epoll_event ev[32];
	bool stop = false, self_stop;

	while (!stop) {
		int n = epoll_wait(s->epfd, ev, 32, -1);

		for (int i = 0; i < n; i++) {
			if (ev[i].data.u64 == WAKE_KEY) {
				uint64_t v;
				(void)!read(s->evfd, &v, sizeof(v));
			} else {
				svc_event(s, ev[i].data.u64, ev[i].events);
			}
		}
		pthread_mutex_lock(&g.lock);
		stop = s->stop;
		pthread_mutex_unlock(&g.lock);
	}
	pthread_mutex_lock(&g.lock);
	self_stop = s->self_stop;
	pthread_mutex_unlock(&g.lock);
	if (self_stop)
		svc_free(s);            /* nobody joins a thread that stopped itself */
	return NULL;
}

/* g.lock held. */
static int svc_start(void)
{
	struct svc *s = calloc(1, sizeof(*s));
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = WAKE_KEY };
	sigset_t all, old;
	int err;

	if (!s)
		return -ENOMEM;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->epfd < 0 || s->evfd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->evfd, &ev)) {
		err = -errno;
		goto fail;
	}
	/* The thread inherits a full mask: signals go to the application's
	 * threads, never to ours. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&s->thread, NULL, svc_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		goto fail;
	g.cur = s;
	return 0;
fail:
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->evfd >= 0)
		close(s->evfd);
	free(s);
	return err ? err : -EMFILE;
}

/* g.lock held: a free slot index, growing the table if needed. */
static int slot_get(struct svc *s, uint32_t *idx)
{
	struct svc_slot *n;
	uint32_t cap;

	for (uint32_t i = 0; i < s->nslots; i++)
		if (!s->slots[i].c && !s->slots[i].busy) {
			*idx = i;
			return 0;
		}
	cap = s->nslots ? 2 * s->nslots : 16;
	if (cap > 0x40000000u)
		return -EMFILE;
	n = realloc(s->slots, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	memset(n + s->nslots, 0, (cap - s->nslots) * sizeof(*n));
	s->slots = n;
	*idx = s->nslots;
	s->nslots = cap;
	return 0;
}

static int watch(struct svc *s, struct vd_shm_conn *c, uint32_t idx, uint32_t gen)
{
	struct epoll_event ev = {
		.events = EPOLLIN | EPOLLRDHUP, .data.u64 = slot_key(idx, gen, false),
	};

	if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, c->sock, &ev))
		return -errno;
	ev.events = EPOLLIN;
	ev.data.u64 = slot_key(idx, gen, true);
	if (c->pidfd >= 0 && epoll_ctl(s->epfd, EPOLL_CTL_ADD, c->pidfd, &ev)) {
		int err = -errno;
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->sock, NULL);
		return err;
	}
	return 0;
}

int vd_shm_service_add(struct vd_shm_conn *c)
{
	struct svc_slot *sl;
	uint32_t idx;
	int err = 0;

	if (!c || c->sock < 0 || !c->vi)
		return -EINVAL;
	pthread_mutex_lock(&g.lock);
	if (!g.cur)
		err = svc_start();
	if (!err)
		err = slot_get(g.cur, &idx);
	if (!err) {
		sl = &g.cur->slots[idx];
		sl->gen++;
		err = watch(g.cur, c, idx, sl->gen);
	}
	if (!err) {
		sl->c = c;
		sl->watching = true;
		c->in_epoll = true;
	}
	pthread_mutex_unlock(&g.lock);
	return err;
}

void vd_shm_service_remove(struct vd_shm_conn *c)
{
	struct svc *s;
	uint32_t i;

	pthread_mutex_lock(&g.lock);
	s = g.cur;
	for (i = 0; s && i < s->nslots && s->slots[i].c != c; i++)
		;
	if (!s || i == s->nslots) {
		pthread_mutex_unlock(&g.lock);
		return;
	}
	unwatch(s, &s->slots[i]);
	/* From the error handler on the service thread itself the slot is
	 * busy with this very call: waiting would deadlock, and the thread
	 * re-checks the slot by generation when the handler returns. */
	while (g.cur == s && s->slots[i].busy && !pthread_equal(pthread_self(), s->thread))
		pthread_cond_wait(&g.idle, &g.lock);
	if (g.cur == s) {
		s->slots[i].c = NULL;
		s->slots[i].gen++;
	}
	pthread_mutex_unlock(&g.lock);
}

/* ---- lifetime ------------------------------------------------------------------------- */

/* fork(): g.lock is held across it, so the child sees a consistent
 * state; the child starts without a service thread and starts its own
 * when it connects. */
static void at_prepare(void)
{
	pthread_mutex_lock(&g.lock);
}

static void at_parent(void)
{
	pthread_mutex_unlock(&g.lock);
}

static void at_child(void)
{
	struct svc *s = g.cur;

	/* The forking thread took g.lock in at_prepare and is the only
	 * thread here; nobody waits on g.idle in the child. */
	pthread_cond_init(&g.idle, NULL);
	g.cur = NULL;
	if (s) {
		/* The parent's thread does not exist here; its fds are ours to
		 * close (the parent keeps its own). */
		close(s->epfd);
		close(s->evfd);
		free(s->slots);
		free(s);
	}
	pthread_mutex_unlock(&g.lock);
}

static void register_atfork(void)
{
	pthread_atfork(at_prepare, at_parent, at_child);
}

static void svc_stop(struct svc *s)
{
	uint64_t one = 1;

	s->stop = true;
	if (pthread_equal(pthread_self(), s->thread)) {
		/* VipCloseNic from an error handler: the thread frees itself
		 * when the handler returns. */
		s->self_stop = true;
		pthread_detach(s->thread);
		pthread_mutex_unlock(&g.lock);
		return;
	}
	pthread_mutex_unlock(&g.lock);
	(void)!write(s->evfd, &one, sizeof(one));
	pthread_join(s->thread, NULL);
	svc_free(s);
}

void vd_shm_service_nic_ref(int delta)
{
	struct svc *s;

	pthread_once(&g_once, register_atfork);
	pthread_mutex_lock(&g.lock);
	g.nic_refs += delta;
	s = g.cur;
	if (g.nic_refs > 0 || !s) {
		pthread_mutex_unlock(&g.lock);
		return;
	}
	g.cur = NULL;
	svc_stop(s);                    /* unlocks */
}
