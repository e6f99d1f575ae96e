/* SPDX-License-Identifier: MIT */
/*
 * mpitest.h -- tiny helpers shared by the MPI test programs in tests/mpi.
 *
 * These programs are plain MPI programs: they include only <mpi.h>, the C
 * standard library and a little POSIX (sleeping, alarms), so they also build
 * with Open MPI's or MPICH's mpicc and can be checked against those
 * libraries.  Anything specific to viaduct is under #ifdef VIADUCT_MPI.
 *
 * Convention: a failed check prints "rank R: file:line: what" to stderr and
 * counts; mt_finish() finalizes and returns the exit status (0 pass, 1 fail).
 * An alarm turns a hang into a killed rank, which the launcher reports.
 */
#ifndef MPITEST_H
#define MPITEST_H

#if !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <mpi.h>

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int mt_rank = -1, mt_size = -1;
static int mt_errors;
static const char *mt_phase = "";      /* what is being tested, for messages */

static inline void mt_report(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline void mt_report(const char *file, int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "FAIL rank %d/%d [%s] %s:%d: %s\n", mt_rank, mt_size, mt_phase,
		file, line, msg);
	fflush(stderr);
	/* Past a screenful the rest is noise; stop the job instead. */
	if (++mt_errors >= 25) {
		fprintf(stderr, "rank %d: too many failures, aborting\n", mt_rank);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
}

/* CHECK(cond, fmt, ...): report when cond is false; evaluates to cond. */
#define CHECK(cond, ...)                                                      \
	((cond) ? 1 : (mt_report(__FILE__, __LINE__, __VA_ARGS__), 0))

/* An MPI call that must succeed (under MPI_ERRORS_RETURN it could fail
 * silently otherwise). */
#define MPI_OK(call)                                                          \
	do {                                                                  \
		int mt_rc_ = (call);                                          \
		if (mt_rc_ != MPI_SUCCESS)                                    \
			mt_report(__FILE__, __LINE__, "%s returned %d", #call, \
				  mt_rc_);                                    \
	} while (0)

static inline void mt_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* The watchdog's first words, "hung: rank R in: ", written once the
 * rank is known: the handler itself formats nothing. */
static char mt_hung_prefix[32] = "hung: rank ? in: ";

/* The watchdog's last words: which rank hung, and in what (only
 * async-signal-safe calls), then the default death by SIGALRM. */
static void mt_on_alarm(int sig)
{
	char line[160];
	const char *phase = mt_phase ? mt_phase : "";
	size_t n = strlen(mt_hung_prefix), k = strlen(phase);

	if (k > sizeof(line) - 1 - n)
		k = sizeof(line) - 1 - n;
	memcpy(line, mt_hung_prefix, n);
	memcpy(line + n, phase, k);
	line[n + k] = '\n';
	(void)!write(2, line, n + k + 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* MPI_Init plus the world's rank and size, and a watchdog: a rank still
 * running after `seconds` dies of SIGALRM, so a hang becomes a failure
 * that says where. */
static inline void mt_init(int *argc, char ***argv, unsigned seconds)
{
	signal(SIGALRM, mt_on_alarm);
	alarm(seconds);
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
	MPI_Comm_size(MPI_COMM_WORLD, &mt_size);
	snprintf(mt_hung_prefix, sizeof(mt_hung_prefix), "hung: rank %d in: ", mt_rank);
}

/* Finalize; exit status for main.  Every rank reports its own failures. */
static inline int mt_finish(const char *name)
{
	int total = 0;

	/* Agree on the outcome so rank 0 can print one summary line. */
	MPI_Allreduce(&mt_errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (mt_rank == 0)
		printf("%s: %d ranks: %s (%d failed checks)\n", name, mt_size,
		       total ? "FAIL" : "ok", total);
	fflush(stdout);
	MPI_Finalize();
	return mt_errors || total ? 1 : 0;
}

/* Byte pattern of message `id` from `src`, position i: changes with all
 * three so a misplaced, misrouted or stale byte shows. */
static inline unsigned char mt_byte(int src, int id, size_t i)
{
	return (unsigned char)(i * 131u + (size_t)src * 29u + (size_t)id * 7u + (i >> 12));
}

static inline void mt_fill(void *buf, size_t len, int src, int id)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = mt_byte(src, id, i);
}

/* Index of the first wrong byte, or -1. */
static inline long mt_verify(const void *buf, size_t len, int src, int id)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i] != mt_byte(src, id, i))
			return (long)i;
	return -1;
}

static inline void *mt_malloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "rank %d: out of memory (%zu bytes)\n", mt_rank, n);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	return p;
}

static inline int mt_get_count(const MPI_Status *st, MPI_Datatype dt)
{
	int n = -12345;

	MPI_Get_count(st, dt, &n);
	return n;
}

#endif /* MPITEST_H */
