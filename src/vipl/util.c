/* SPDX-License-Identifier: MIT */
/*
 * vipl helpers: errno -> VIP_RETURN, clocks and timeouts, randomness, the
 * debug log.
 */
#include <errno.h>
#include <sched.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "vipl/vipl_internal.h"

/* The one place where a negative errno becomes a VIPL return code. */
VIP_RETURN vd_ret(int err)
{
	switch (err) {
	case 0:
		return VIP_SUCCESS;
	case -EAGAIN:
		return VIP_NOT_DONE;
	case -EINVAL: case -EBADF: case -EFAULT: case -ERANGE: case -EPROTO:
	case -EADDRINUSE:
		return VIP_INVALID_PARAMETER;
	case -ETIMEDOUT:
		return VIP_TIMEOUT;
	case -ECONNREFUSED:
		return VIP_REJECT;
	case -EBADSLT:
		return VIP_INVALID_RELIABILITY_LEVEL;
	case -EMSGSIZE:
		return VIP_INVALID_MTU;
	case -EXDEV:
		return VIP_INVALID_QOS;
	case -EACCES:
		return VIP_INVALID_PTAG;
#if EOPNOTSUPP != ENOTSUP
	case -EOPNOTSUPP:
#endif
	case -ENOTSUP: case -ENOSYS:
		return VIP_ERROR_NOT_SUPPORTED;
	case -EBUSY: case -EISCONN: case -ENOTCONN: case -EALREADY:
		return VIP_INVALID_STATE;
	case -ENOENT:
		return VIP_NO_MATCH;
	case -EHOSTUNREACH:
		return VIP_NOT_REACHABLE;
	case -ENXIO:
		return VIP_ERROR_NAMESERVICE;
	case -ECANCELED:
		return VIP_DESCRIPTOR_ERROR;
	default:
		/* -ENOMEM, -EMFILE, -ENFILE, -ENOSPC, -EPERM and anything
		 * unexpected: the provider ran out of something. */
		return VIP_ERROR_RESOURCE;
	}
}

/* VIP_INFINITE is 0xFFFFFFFF, but VIP_ULONG is 64-bit on LP64, so clients
 * that write (VIP_ULONG)-1 or ULONG_MAX mean "forever" as well. */
static bool timeout_infinite(VIP_ULONG ms)
{
	return ms == VIP_INFINITE || ms == (VIP_ULONG)-1;
}

uint64_t vd_deadline(VIP_ULONG timeout_ms)
{
	uint64_t now, d;

	if (timeout_infinite(timeout_ms))
		return 0;
	now = vd_now_ns();
	if (timeout_ms > (UINT64_MAX - now) / 1000000u)
		return UINT64_MAX;   /* centuries away: saturate, stay finite */
	d = now + (uint64_t)timeout_ms * 1000000u;
	return d ? d : 1;            /* 0 would mean infinite */
}

int vd_timeout_ms(VIP_ULONG timeout_ms)
{
	if (timeout_infinite(timeout_ms))
		return -1;
	return timeout_ms > INT_MAX ? INT_MAX : (int)timeout_ms;
}

/* VIADUCT_SPIN_US when given, else the provider's own budget (caps
 * spin_ns), else 20 us. */
uint64_t vd_spin_ns(const struct vd_nic *nic)
{
	static _Atomic int64_t given = -2;      /* -2: not read yet, -1: not given */
	/* Relaxed, pairs with nothing: every thread computes the same. */
	int64_t v = atomic_load_explicit(&given, memory_order_relaxed);

	if (v == -2) {
		/* UINT64_MAX, above the parameter's bound: not given. */
		uint64_t us = UINT64_MAX;

		(void)viaduct_param_uint("VIADUCT_SPIN_US", UINT64_MAX, &us);   /* checked at open */
		v = us == UINT64_MAX ? -1 : (int64_t)us * 1000;
		atomic_store_explicit(&given, v, memory_order_relaxed);
	}
	if (v >= 0)
		return (uint64_t)v;
	return nic && nic->caps->spin_ns ? nic->caps->spin_ns : 20000;
}

VIP_RETURN vd_poll_wait(const struct vd_nic *nic, VIP_RETURN (*poll)(void *),
			int (*sleep)(void *, uint64_t), void *arg, VIP_ULONG timeout)
{
	return vd_poll_wait_spin(poll, sleep, arg, timeout, vd_spin_ns(nic));
}

VIP_RETURN vd_poll_wait_spin(VIP_RETURN (*poll)(void *), int (*sleep)(void *, uint64_t),
			     void *arg, VIP_ULONG timeout, uint64_t spin)
{
	uint64_t deadline = vd_deadline(timeout);
	uint64_t spin_until = spin ? vd_now_ns() + spin : 0;
	unsigned polls = 0;

	for (;;) {
		VIP_RETURN r = poll(arg);
		if (r != VIP_NOT_DONE)
			return r;
		/* Reading the clock costs more than a poll (tens of ns in a
		 * VM): look at it every 32 polls while spinning. */
		if (++polls & 31 && spin_until) {
			vd_cpu_relax();
			continue;
		}
		uint64_t now = vd_now_ns();
		if (deadline && now >= deadline)
			return VIP_TIMEOUT;
		if (now < spin_until)
			continue;
		spin_until = 0;
		if (sleep(arg, deadline) == -ETIMEDOUT)
			return VIP_TIMEOUT;
	}
}
