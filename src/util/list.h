/* SPDX-License-Identifier: MIT */
/* Intrusive doubly linked list with a sentinel head. */
#ifndef VIADUCT_UTIL_LIST_H
#define VIADUCT_UTIL_LIST_H

#include <stddef.h>

struct vd_list {
	struct vd_list *prev, *next;
};

static inline void vd_list_init(struct vd_list *l)
{
	l->prev = l->next = l;
}

static inline int vd_list_empty(const struct vd_list *l)
{
	return l->next == l;
}

static inline void vd_list_add(struct vd_list *head, struct vd_list *n)
{
	n->next = head;
	n->prev = head->prev;
	head->prev->next = n;
	head->prev = n;
}

static inline void vd_list_del(struct vd_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	vd_list_init(n);
}

#define vd_container_of(p, type, member) \
	((type *)((char *)(p) - offsetof(type, member)))

#endif /* VIADUCT_UTIL_LIST_H */
