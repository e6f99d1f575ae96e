/* SPDX-License-Identifier: MIT */
/*
 * viaduct MPI: attribute keys and attribute lists (attr.h).
 *
 * Keyvals are handles into a table; the predefined ones (MPI_TAG_UB ...
 * MPI_APPNUM, below VD_KEYVAL_FIRST_USER) are not in it.  A user keyval
 * counts one reference for its handle and one per attribute that uses it,
 * so freeing a keyval while attributes remain leaves their delete
 * callbacks working (MPI-4.0 7.7.2).
 *
 * An object's attributes are a list in the order they were first set;
 * copies and deletions go in that order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "attr.h"

#define VD_KEYVAL_FIRST_USER 16

struct keyval {
	enum vd_attr_kind kind;
	vd_attr_copy_fn *copy;
	vd_attr_delete_fn *del;
	void *extra;
	int refs;                       /* 0: free slot */
	bool freed;                     /* the handle is gone */
};

struct vd_attr {
	int keyval;
	void *value;
	struct vd_attr *next;
};

static struct keyval *keyvals;          /* [handle - VD_KEYVAL_FIRST_USER] */
static int nkeyvals;

static struct keyval *keyval_get(int k)
{
	int i = k - VD_KEYVAL_FIRST_USER;

	if (i < 0 || i >= nkeyvals || keyvals[i].refs == 0)
		return NULL;
	return &keyvals[i];
}

bool vd_keyval_ok(enum vd_attr_kind kind, int keyval)
{
	struct keyval *kv = keyval_get(keyval);

	return kv && !kv->freed && kv->kind == kind;
}

static void keyval_release(int k)
{
	struct keyval *kv = keyval_get(k);

	if (kv && --kv->refs == 0)
		memset(kv, 0, sizeof(*kv));
}

static int null_copy(int obj, int keyval, void *extra, void *in, void *out, int *flag)
{
	(void)obj, (void)keyval, (void)extra, (void)in, (void)out;
	*flag = 0;
	return MPI_SUCCESS;
}

static int null_delete(int obj, int keyval, void *value, void *extra)
{
	(void)obj, (void)keyval, (void)value, (void)extra;
	return MPI_SUCCESS;
}

static int keyval_slot(void)
{
	struct keyval *n;
	int cap, first_new = nkeyvals;

	for (int i = 0; i < nkeyvals; i++)
		if (keyvals[i].refs == 0)
			return i;
	cap = nkeyvals ? 2 * nkeyvals : 16;
	if (!(n = realloc(keyvals, (size_t)cap * sizeof(*n))))
		return -ENOMEM;
	memset(n + nkeyvals, 0, (size_t)(cap - nkeyvals) * sizeof(*n));
	keyvals = n;
	nkeyvals = cap;
	return first_new;
}

int vd_keyval_create(enum vd_attr_kind kind, vd_attr_copy_fn *copy, vd_attr_delete_fn *del,
		     void *extra, int *keyval)
{
	int i = keyval_slot();

	if (i < 0)
		return MPI_ERR_NO_MEM;
	keyvals[i] = (struct keyval){ .kind = kind, .copy = copy ? copy : null_copy,
				      .del = del ? del : null_delete, .extra = extra, .refs = 1 };
	*keyval = VD_KEYVAL_FIRST_USER + i;
	return MPI_SUCCESS;
}

int vd_keyval_free(enum vd_attr_kind kind, int *keyval)
{
	if (!vd_keyval_ok(kind, *keyval))
		return MPI_ERR_KEYVAL;
	keyval_get(*keyval)->freed = true;
	keyval_release(*keyval);
	*keyval = MPI_KEYVAL_INVALID;
	return MPI_SUCCESS;
}

static struct vd_attr **attr_find(struct vd_attr **head, int keyval)
{
	while (*head && (*head)->keyval != keyval)
		head = &(*head)->next;
	return head;
}

/* Run the delete callback of *pp and unlink it.  The callback's code. */
static int attr_remove(int obj, struct vd_attr **pp)
{
	struct vd_attr *a = *pp;
	struct keyval *kv = keyval_get(a->keyval);
	int rc = kv->del(obj, a->keyval, a->value, kv->extra);

	if (rc != MPI_SUCCESS)
		return rc;
	*pp = a->next;
	keyval_release(a->keyval);
	free(a);
	return MPI_SUCCESS;
}

/* Store value under keyval (no callbacks): MPI code. */
static int attr_store(struct vd_attr **head, int keyval, void *value)
{
	struct vd_attr **pp = attr_find(head, keyval), *a;

	if (*pp) {
		(*pp)->value = value;
		return MPI_SUCCESS;
	}
	if (!(a = calloc(1, sizeof(*a))))
		return MPI_ERR_NO_MEM;
	a->keyval = keyval;
	a->value = value;
	*pp = a;
	keyval_get(keyval)->refs++;
	return MPI_SUCCESS;
}

int vd_attr_set(struct vd_attr **head, int obj, int keyval, void *value)
{
	struct vd_attr **pp = attr_find(head, keyval);

	if (*pp) {              /* the old value goes as at a delete */
		struct keyval *kv = keyval_get(keyval);
		int rc = kv->del(obj, keyval, (*pp)->value, kv->extra);

		if (rc != MPI_SUCCESS)
			return rc;
	}
	return attr_store(head, keyval, value);
}

bool vd_attr_get(const struct vd_attr *head, int keyval, void **value)
{
	for (; head; head = head->next) {
		if (head->keyval == keyval) {
			*value = head->value;
			return true;
		}
	}
	return false;
}

int vd_attr_delete(struct vd_attr **head, int obj, int keyval)
{
	struct vd_attr **pp = attr_find(head, keyval);

	return *pp ? attr_remove(obj, pp) : MPI_SUCCESS;
}

int vd_attr_list_copy(const struct vd_attr *from, int obj, struct vd_attr **to)
{
	for (; from; from = from->next) {
		struct keyval *kv = keyval_get(from->keyval);
		void *out = NULL;
		int flag = 0, rc = kv->copy(obj, from->keyval, kv->extra, from->value, &out, &flag);

		if (rc == MPI_SUCCESS && flag)
			rc = attr_store(to, from->keyval, out);
		if (rc != MPI_SUCCESS)
			return rc;
	}
	return MPI_SUCCESS;
}

int vd_attr_list_delete(struct vd_attr **head, int obj)
{
	int rc = MPI_SUCCESS;

	while (*head && rc == MPI_SUCCESS)
		rc = attr_remove(obj, head);
	return rc;
}

void vd_attr_list_discard(struct vd_attr **head)
{
	while (*head) {
		struct vd_attr *a = *head;

		*head = a->next;
		keyval_release(a->keyval);
		free(a);
	}
}

void vd_attr_finalize(void)
{
	free(keyvals);
	keyvals = NULL;
	nkeyvals = 0;
}
