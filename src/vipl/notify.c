/* SPDX-License-Identifier: MIT */
/*
 * VipSendNotify, VipRecvNotify, VipCQNotify: one-shot handlers.  A handler
 * runs at once in the caller when a completion is already there (it is
 * removed first); otherwise it joins a FIFO of handlers served by one
 * thread per queue, which waits like *Wait and hands each completion to
 * the oldest handler.  The thread lives only while handlers are pending;
 * destroying the VI or CQ cancels them (the thread's next wait fails on
 * the dead handle and it exits).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "vipl/vipl_internal.h"

/* Poll slice of a notify thread: bounds how long it outlives a destroyed
 * object. */
#define NOTIFY_SLICE_MS 100

struct notify_target {
	void *handle;           /* VI or CQ */
	int kind;               /* 0 send, 1 recv, 2 cq */
};

static struct vd_notify *pop_handler(vd_lock_t *lock, struct vd_notify **head,
				     struct vd_notify ***tail, bool *running)
{
	struct vd_notify *n;

	vd_lock(lock);
	n = *head;
	if (n) {
		*head = n->next;
		if (!*head)
			*tail = head;
	} else {
		*running = false;
	}
	vd_unlock(lock);
	return n;
}

/* Wait for one completion; true with the handler called, false when the
 * object is gone. */
static bool serve_one(struct notify_target *t)
{
	VIP_DESCRIPTOR *d = NULL;
	VIP_VI_HANDLE vh = NULL;
	VIP_BOOLEAN recv = VIP_FALSE;
	VIP_RETURN r;

	if (t->kind == 2)
		r = VipCQWait(t->handle, NOTIFY_SLICE_MS, &vh, &recv);
	else if (t->kind == 1)
		r = VipRecvWait(t->handle, NOTIFY_SLICE_MS, &d);
	else
		r = VipSendWait(t->handle, NOTIFY_SLICE_MS, &d);
	if (r == VIP_INVALID_PARAMETER)
		return false;                   /* the object is gone */
	if (r == VIP_TIMEOUT || r == VIP_NOT_DONE)
		return true;
	if (t->kind != 2 && !d) {
		/* Nothing posted yet: check again shortly. */
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
		return true;
	}

	if (t->kind == 2) {
		struct vd_cq *cq = vd_obj_lookup(t->handle, VD_OBJ_CQ);
		struct vd_notify *n;
		if (!cq)
			return false;
		n = pop_handler(&cq->lock, &cq->notify_head, &cq->notify_tail,
				&cq->notify_thread);
		if (n) {
			n->cq_fn(n->ctx, vd_obj_handle(cq->nic), vh, recv);
			free(n);
		}
		return n != NULL;
	}
	struct vd_vi *vi = vd_obj_lookup(t->handle, VD_OBJ_VI);
	struct vd_wq *q;
	struct vd_notify *n;
	if (!vi)
		return false;
	q = t->kind ? &vi->rq : &vi->sq;
	n = pop_handler(&q->lock, &q->notify_head, &q->notify_tail, &q->notify_thread);
	if (n) {
		n->vi_fn(n->ctx, vd_obj_handle(vi->nic), t->handle, d);
		free(n);
	}
	return n != NULL;
}

static bool still_pending(struct notify_target *t)
{
	vd_lock_t *lock;
	struct vd_notify *head;
	bool *running;

	if (t->kind == 2) {
		struct vd_cq *cq = vd_obj_lookup(t->handle, VD_OBJ_CQ);
		if (!cq)
			return false;
		lock = &cq->lock;
		vd_lock(lock);
		head = cq->notify_head;
		running = &cq->notify_thread;
	} else {
		struct vd_vi *vi = vd_obj_lookup(t->handle, VD_OBJ_VI);
		struct vd_wq *q;
		if (!vi)
			return false;
		q = t->kind ? &vi->rq : &vi->sq;
		lock = &q->lock;
		vd_lock(lock);
		head = q->notify_head;
		running = &q->notify_thread;
	}
	if (!head)
		*running = false;
	vd_unlock(lock);
	return head != NULL;
}

static void *notify_thread(void *arg)
{
	struct notify_target t = *(struct notify_target *)arg;

	free(arg);
	while (still_pending(&t))
		if (!serve_one(&t))
			break;
	return NULL;
}

/* Start the serving thread (lock held, *running false). */
static int start_thread(void *handle, int kind, bool *running)
{
	struct notify_target *t = malloc(sizeof(*t));
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t tid;
	int err;

	if (!t)
		return -ENOMEM;
	t->handle = handle;
	t->kind = kind;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);   /* handlers run signal-free */
	err = pthread_create(&tid, &attr, notify_thread, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err) {
		free(t);
		return -err;
	}
	*running = true;
	return 0;
}

static VIP_RETURN vi_notify(VIP_VI_HANDLE vh, void *ctx, VIP_VI_CALLBACK fn, bool recv)
{
	struct vd_vi *vi = vd_obj_lookup(vh, VD_OBJ_VI);
	struct vd_notify *n;
	VIP_DESCRIPTOR *d = NULL;
	struct vd_wq *q;
	int err = 0;

	if (!vi || !fn)
		return VIP_INVALID_PARAMETER;
	q = recv ? &vi->rq : &vi->sq;
	vd_lock(&q->lock);
	bool queued = q->notify_head != NULL;
	vd_unlock(&q->lock);
	if (!queued) {
		/* Done hands out errored descriptors too (with d set). */
		(void)(recv ? VipRecvDone(vh, &d) : VipSendDone(vh, &d));
		if (d) {
			fn(ctx, vd_obj_handle(vi->nic), vh, d);
			return VIP_SUCCESS;
		}
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return VIP_ERROR_RESOURCE;
	n->ctx = ctx;
	n->vi_fn = fn;
	vd_lock(&q->lock);
	if (!q->notify_tail)
		q->notify_tail = &q->notify_head;
	*q->notify_tail = n;
	q->notify_tail = &n->next;
	if (!q->notify_thread)
		err = start_thread(vh, recv ? 1 : 0, &q->notify_thread);
	vd_unlock(&q->lock);
	return err ? VIP_ERROR_RESOURCE : VIP_SUCCESS;
}

VIP_RETURN VipSendNotify(VIP_VI_HANDLE vh, VIP_PVOID ctx,
			 void (*fn)(VIP_PVOID, VIP_NIC_HANDLE, VIP_VI_HANDLE, VIP_DESCRIPTOR *))
{
	return vi_notify(vh, ctx, fn, false);
}

VIP_RETURN VipRecvNotify(VIP_VI_HANDLE vh, VIP_PVOID ctx,
			 void (*fn)(VIP_PVOID, VIP_NIC_HANDLE, VIP_VI_HANDLE, VIP_DESCRIPTOR *))
{
	return vi_notify(vh, ctx, fn, true);
}

VIP_RETURN VipCQNotify(VIP_CQ_HANDLE ch, VIP_PVOID ctx,
		       void (*fn)(VIP_PVOID, VIP_NIC_HANDLE, VIP_VI_HANDLE, VIP_BOOLEAN))
{
	struct vd_cq *cq = vd_obj_lookup(ch, VD_OBJ_CQ);
	struct vd_notify *n;
	VIP_VI_HANDLE vh = NULL;
	VIP_BOOLEAN recv;
	int err = 0;

	if (!cq || !fn)
		return VIP_INVALID_PARAMETER;
	vd_lock(&cq->lock);
	bool queued = cq->notify_head != NULL;
	vd_unlock(&cq->lock);
	if (!queued && VipCQDone(ch, &vh, &recv) == VIP_SUCCESS) {
		fn(ctx, vd_obj_handle(cq->nic), vh, recv);
		return VIP_SUCCESS;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return VIP_ERROR_RESOURCE;
	n->ctx = ctx;
	n->cq_fn = fn;
	vd_lock(&cq->lock);
	if (!cq->notify_tail)
		cq->notify_tail = &cq->notify_head;
	*cq->notify_tail = n;
	cq->notify_tail = &n->next;
	if (!cq->notify_thread)
		err = start_thread(ch, 2, &cq->notify_thread);
	vd_unlock(&cq->lock);
	return err ? VIP_ERROR_RESOURCE : VIP_SUCCESS;
}
