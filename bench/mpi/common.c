/* SPDX-License-Identifier: MIT */
/*
 * bench/mpi common part (see common.h).  Only mpi.h and libc: the same
 * file is compiled by vdcc, mpicc.openmpi and mpicc.mpich.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity, sched_getcpu */
#endif
#include "common.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

#define TAG_CTL 7001 /* calibration and header messages */
#define TEXT_MAX 256

/* ------------------------------------------------------------------ */
/* Options                                                             */

static void usage(FILE *out, const char *prog)
{
	fprintf(out,
		"usage: %s [--label NAME] [--csv FILE] [--quick] [--min-size B]\n"
		"          [--max-size B] [--time SEC] [--runs N] [--offset B]\n"
		"  --label NAME   case name in the table and the CSV\n"
		"  --csv FILE     append rows section,case,x,metric,value to FILE\n"
		"  --quick        sizes in powers of four, shorter runs\n"
		"  --min-size B   smallest message (bytes)\n"
		"  --max-size B   largest message (bytes; suffixes k, m)\n"
		"  --time SEC     target duration of one timed run per size\n"
		"  --runs N       timed runs per size (median reported, <= %d)\n"
		"  --offset B     buffers B bytes past a page boundary (0-4095; default 0,\n"
		"                 page aligned as the standard suites; malloc gives 16\n"
		"                 from 128 KiB up)\n",
		prog, MAX_RUNS);
}

static bool parse_size(const char *s, size_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s)
		return false;
	if (*end == 'k' || *end == 'K')
		v <<= 10, end++;
	else if (*end == 'm' || *end == 'M')
		v <<= 20, end++;
	if (*end || v > ((size_t)1 << 31))
		return false;
	*out = (size_t)v;
	return true;
}

/* 0 on success, -1 on a bad option. */
static int parse_args(struct bench_opts *o, int argc, char **argv)
{
	bool time_set = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--quick") == 0) {
			o->quick = true;
			continue;
		}
		if (!v)
			return -1;
		i++;
		if (strcmp(a, "--label") == 0)
			o->label = v;
		else if (strcmp(a, "--csv") == 0)
			o->csv_path = v;
		else if (strcmp(a, "--min-size") == 0 && parse_size(v, &o->min_size))
			;
		else if (strcmp(a, "--max-size") == 0 && parse_size(v, &o->max_size))
			;
		else if (strcmp(a, "--time") == 0 && (o->run_time = atof(v)) > 0)
			time_set = true;
		else if (strcmp(a, "--runs") == 0 && (o->runs = atoi(v)) > 0 &&
			 o->runs <= MAX_RUNS)
			;
		else if (strcmp(a, "--offset") == 0 && parse_size(v, &o->offset) &&
			 o->offset < 4096)
			;
		else
			return -1;
	}
	if (o->quick && !time_set)
		o->run_time /= 4;
	if (o->quick && o->runs > 3)
		o->runs = 3;
	return o->min_size <= o->max_size ? 0 : -1;
}

/* "Open MPI v4.1.4, ..." -> "Open"; a label must be one CSV word. */
static const char *default_label(void)
{
	static char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	int len = 0;
	if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS || len <= 0)
		return "mpi";
	lib[strcspn(lib, " ,\n\t")] = '\0';
	for (char *p = lib; *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	return lib[0] ? lib : "mpi";
}

void common_init(struct bench_ctx *b, const char *section, int argc, char **argv,
		 const struct bench_opts *defaults)
{
	memset(b, 0, sizeof(*b));
	b->o = *defaults;
	b->section = section;
	MPI_Comm_rank(MPI_COMM_WORLD, &b->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &b->size);
	if (parse_args(&b->o, argc, argv) < 0) {
		if (b->rank == 0)
			usage(stderr, argv[0]);
		MPI_Finalize();
		exit(2);
	}
	if (!b->o.label)
		b->o.label = default_label();
	if (b->rank == 0 && b->o.csv_path) {
		b->csv = fopen(b->o.csv_path, "a");
		if (!b->csv) {
			fprintf(stderr, "%s: %s: %s\n", argv[0], b->o.csv_path, strerror(errno));
			MPI_Abort(MPI_COMM_WORLD, 2);
		}
		if (ftell(b->csv) == 0)
			fputs("section,case,x,metric,value\n", b->csv);
	}
}

void common_finish(struct bench_ctx *b)
{
	if (b->csv && fclose(b->csv) != 0)
		perror("bench/mpi: closing the CSV");
	b->csv = NULL;
}

/* ------------------------------------------------------------------ */
/* Sizes, buffers, patterns                                            */

size_t next_size(const struct bench_ctx *b, size_t s)
{
	size_t n = s == 0 ? 1 : s * 2;
	/* --quick: powers of four, plus 8 bytes (the latency target), so
	 * that 1 and 4 MiB (the bandwidth targets) are still measured. */
	if (b->o.quick && s != 4 && s != 8 && s != 0)
		n = s * 4;
	return n <= b->o.max_size ? n : 0;
}

void *bench_alloc(const struct bench_ctx *b, size_t bytes)
{
	size_t len = (bytes ? bytes : 1) + b->o.offset;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "bench/mpi: mmap(%zu): %s\n", len, strerror(errno));
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	memset(p, 0, len); /* first touch now, not in the timed loop */
	return p + b->o.offset;
}

static unsigned char pattern_byte(size_t i, unsigned salt)
{
	uint32_t x = (uint32_t)i * 2654435761u + salt * 40503u;
	return (unsigned char)(x >> 13);
}

void pattern_fill(unsigned char *p, size_t n, unsigned salt)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pattern_byte(i, salt);
}

size_t pattern_check(const unsigned char *p, size_t n, unsigned salt)
{
	/* Both ends fully (a truncated or shifted copy shows there), and
	 * every 61st byte between them (odd stride: no page aliasing). */
	size_t edge = n < 4096 ? n : 4096;
	for (size_t i = 0; i < edge; i++)
		if (p[i] != pattern_byte(i, salt))
			return i + 1;
	for (size_t i = n - edge; i < n; i++)
		if (p[i] != pattern_byte(i, salt))
			return i + 1;
	for (size_t i = edge; i < n - edge; i += 61)
		if (p[i] != pattern_byte(i, salt))
			return i + 1;
	return 0;
}

void pattern_fail(const struct bench_ctx *b, size_t size, size_t where)
{
	fprintf(stderr, "bench/mpi %s (%s): rank %d: wrong data in a %zu-byte message "
		"at byte %zu\n", b->section, b->o.label, b->rank, size, where - 1);
	MPI_Abort(MPI_COMM_WORLD, 4);
}

void check_received(const struct bench_ctx *b, const unsigned char *buf, size_t size,
		    MPI_Status *st, unsigned salt)
{
	int got = -1;
	MPI_Get_count(st, MPI_BYTE, &got);
	if (got != (int)size)
		pattern_fail(b, size, (size_t)got + 1);
	size_t bad = pattern_check(buf, size, salt);
	if (bad)
		pattern_fail(b, size, bad);
}

void require_two_ranks(const struct bench_ctx *b, const char *prog)
{
	if (b->size == 2)
		return;
	if (b->rank == 0)
		fprintf(stderr, "%s: needs exactly 2 ranks\n", prog);
	MPI_Finalize();
	exit(2);
}

void for_each_size(const struct bench_ctx *b, void (*measure)(void *arg, size_t size),
		   void *arg)
{
	size_t s = b->o.min_size;
	do {
		measure(arg, s);
		s = next_size(b, s);
	} while (s != 0);
}

/* ------------------------------------------------------------------ */
/* Timed runs and their report                                         */

long timed_runs(const struct bench_ctx *b, size_t size, const struct timing *t, double *fig)
{
	double secs = t->run(t->arg, size, t->warm);
	long n = calibrate(b, t->wall ? t->wall(t->arg) : secs, t->warm, t->lo, t->hi);
	for (int r = 0; r < b->o.runs; r++) {
		secs = t->run(t->arg, size, n);
		fig[r] = t->rate ? (double)n * t->unit / secs : secs * t->unit / (double)n;
	}
	return n;
}

double report_runs(const struct bench_ctx *b, size_t size, const double *fig, long iters,
		   int digits, bool higher_better, const char *metric, const char *best_metric)
{
	if (b->rank != 0)
		return 0;
	int n = b->o.runs;
	double med = stat_median(fig, n);
	double best = higher_better ? stat_max(fig, n) : stat_min(fig, n);
	printf("%10zu %12.*f %12.*f %10ld", size, digits, med, digits, best, iters);
	csv_row(b, size, metric, med);
	csv_row(b, size, best_metric, best);
	csv_row(b, size, "iters", (double)iters);
	return med;
}

void end_row(const struct bench_ctx *b)
{
	if (b->rank != 0)
		return;
	putchar('\n');
	fflush(stdout);
}

#define BW_MIN_ITERS 2
#define BW_MAX_ITERS 100000

void bw_table_head(const struct bench_ctx *b)
{
	if (b->rank == 0)
		printf("%10s %12s %12s %10s\n", "bytes", "median MB/s", "best MB/s", "windows");
}

void measure_bandwidth(const struct bench_ctx *b, size_t size, double bytes_per_iter,
		       double (*transfer)(void *arg, size_t size, long n), void *arg)
{
	const struct timing t = { transfer, arg, size >= 65536 ? 2 : 16, BW_MIN_ITERS,
				  BW_MAX_ITERS, bytes_per_iter / MB, true, NULL };
	double mbs[MAX_RUNS];
	long n = timed_runs(b, size, &t, mbs);
	report_runs(b, size, mbs, n, 1, true, "mb_per_s", "mb_per_s_max");
	end_row(b);
}

/* ------------------------------------------------------------------ */
/* Calibration and statistics                                          */

long calibrate(const struct bench_ctx *b, double warm_secs, long warm_iters,
	       long lo, long hi)
{
	long n = hi;
	if (b->rank == 0) {
		double per = warm_secs / (double)(warm_iters > 0 ? warm_iters : 1);
		if (per > 0 && b->o.run_time / per < (double)hi)
			n = (long)(b->o.run_time / per);
		if (n < lo)
			n = lo;
		for (int r = 1; r < b->size; r++)
			MPI_Send(&n, 1, MPI_LONG, r, TAG_CTL, MPI_COMM_WORLD);
	} else {
		MPI_Recv(&n, 1, MPI_LONG, 0, TAG_CTL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double stat_median(const double *v, int n)
{
	double s[MAX_RUNS];
	memcpy(s, v, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

double stat_min(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

double stat_max(const double *v, int n)
{
	double m = v[0];
	for (int i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

/* ------------------------------------------------------------------ */
/* Header and CSV                                                      */

/* "cpu 1 of {1}" for this process: where it runs and may run. */
static void where_am_i(char *buf, size_t len)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	int n = snprintf(buf, len, "cpu %d of {", sched_getcpu());
	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		const char *sep = "";
		for (int c = 0; c < CPU_SETSIZE && n > 0 && (size_t)n < len - 8; c++)
			if (CPU_ISSET(c, &set)) {
				n += snprintf(buf + n, len - (size_t)n, "%s%d", sep, c);
				sep = ",";
			}
	}
	if (n > 0 && (size_t)n < len - 2)
		snprintf(buf + n, len - (size_t)n, "}");
}

static void csv_text(const struct bench_ctx *b, const char *metric, const char *text)
{
	if (!b->csv)
		return;
	fprintf(b->csv, "context,%s,0,%s_%s,\"", b->o.label, b->section, metric);
	for (const char *p = text; *p; p++) {
		if (*p == '\n')
			continue;
		if (*p == '"')
			fputc('"', b->csv); /* CSV escapes a quote by doubling it */
		fputc(*p, b->csv);
	}
	fputs("\"\n", b->csv);
}

/* Rank 0 collects every rank's placement; returns it joined with "; ". */
static void gather_placement(const struct bench_ctx *b, char *all, size_t len)
{
	char mine[TEXT_MAX];
	where_am_i(mine, sizeof(mine));
	if (b->rank != 0) {
		MPI_Send(mine, TEXT_MAX, MPI_CHAR, 0, TAG_CTL, MPI_COMM_WORLD);
		return;
	}
	size_t n = (size_t)snprintf(all, len, "rank 0: %s", mine);
	for (int r = 1; r < b->size && n < len; r++) {
		MPI_Recv(mine, TEXT_MAX, MPI_CHAR, r, TAG_CTL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		mine[TEXT_MAX - 1] = '\0';
		n += (size_t)snprintf(all + n, len - n, "; rank %d: %s", r, mine);
	}
}

void print_header(struct bench_ctx *b, const char *title)
{
	char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "", where[2048] = "";
	int len = 0;
	MPI_Get_library_version(lib, &len);
	lib[strcspn(lib, "\n")] = '\0';
	gather_placement(b, where, sizeof(where));
	if (b->rank != 0)
		return;
	struct utsname u;
	uname(&u);
	printf("# %s -- %s\n# library: %s\n# ranks: %d (%s)\n# host: %s %s, %ld online CPUs\n"
	       "# runs per size: %d (median reported), about %.3f s each%s\n",
	       title, b->o.label, lib, b->size, where, u.sysname, u.release,
	       sysconf(_SC_NPROCESSORS_ONLN), b->o.runs, b->o.run_time,
	       b->o.quick ? ", --quick" : "");
	if (b->o.offset)
		printf("# buffers %zu bytes past a page boundary (--offset)\n", b->o.offset);
	csv_text(b, "library", lib);
	csv_text(b, "placement", where);
	fflush(stdout);
}

void csv_row(const struct bench_ctx *b, size_t x, const char *metric, double value)
{
	if (!b->csv)
		return;
	fprintf(b->csv, "%s,%s,%zu,%s,%.9g\n", b->section, b->o.label, x, metric, value);
	/* Row by row: a run killed by its timeout keeps the sizes it did. */
	fflush(b->csv);
}
