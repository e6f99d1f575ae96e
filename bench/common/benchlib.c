// SPDX-License-Identifier: MIT
/*
 * benchlib.c -- the plumbing bench_lmm and bench_vipl share (benchlib.h).
 */
#include "benchlib.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define CAP_IPC_LOCK_BIT 14
#define CONTEXT_LABEL_WIDTH 26

static FILE *csv;
static const char *csv_path;

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int pin_to_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* ------------------------------------------------------------------ */
/* Samples                                                             */

void samples_add(struct samples *s, double x)
{
	if (s->n < MAX_RUNS)
		s->v[s->n++] = x;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double samples_median(const struct samples *s)
{
	double sorted[MAX_RUNS];

	if (s->n == 0)
		return NAN;
	memcpy(sorted, s->v, sizeof(double) * (size_t)s->n);
	qsort(sorted, (size_t)s->n, sizeof(double), cmp_double);
	if (s->n % 2)
		return sorted[s->n / 2];
	return (sorted[s->n / 2 - 1] + sorted[s->n / 2]) / 2;
}

double samples_min(const struct samples *s)
{
	double m = INFINITY;

	for (int i = 0; i < s->n; i++)
		m = fmin(m, s->v[i]);
	return s->n ? m : NAN;
}

/* ------------------------------------------------------------------ */
/* CSV (long format: section,case,x,metric,value)                      */

int csv_open(const char *prog, const char *path)
{
	if (!path)
		return 0;
	csv = fopen(path, "w");
	if (!csv) {
		fprintf(stderr, "%s: cannot write %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	csv_path = path;
	fputs("section,case,x,metric,value\n", csv);
	return 0;
}

int csv_close(const char *prog)
{
	int rc = csv ? fclose(csv) : 0;

	csv = NULL;
	if (rc != 0)
		fprintf(stderr, "%s: writing %s failed\n", prog, csv_path);
	return rc != 0 ? -1 : 0;
}

void csv_row(const char *section, const char *cas, uint64_t x,
	     const char *metric, double value)
{
	if (csv)
		fprintf(csv, "%s,%s,%" PRIu64 ",%s,%.9g\n", section, cas, x,
			metric, value);
}

/* Context rows carry text; quote it (CPU model names contain commas). */
void csv_text(const char *metric, const char *text)
{
	if (!csv)
		return;
	fprintf(csv, "context,machine,0,%s,\"", metric);
	for (const char *p = text; *p; p++) {
		if (*p == '"')
			fputc('"', csv); /* CSV escapes a quote by doubling it */
		fputc(*p, csv);
	}
	fputs("\"\n", csv);
}

/* ------------------------------------------------------------------ */
/* Text                                                                */

const char *size_label(size_t bytes, char *buf, size_t len)
{
	if (bytes >= MIB && bytes % MIB == 0)
		snprintf(buf, len, "%zu MiB", bytes / MIB);
	else if (bytes >= KIB && bytes % KIB == 0)
		snprintf(buf, len, "%zu KiB", bytes / KIB);
	else
		snprintf(buf, len, "%zu B", bytes);
	return buf;
}

void print_rule(int width)
{
	for (int i = 0; i < width; i++)
		putchar('-');
	putchar('\n');
}

/* ------------------------------------------------------------------ */
/* Machine context                                                     */

void read_first_match(const char *path, const char *key, char *out, size_t len)
{
	char line[512];
	FILE *f = fopen(path, "r");

	snprintf(out, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, key, strlen(key)) != 0 || !colon)
			continue;
		colon += 1 + strspn(colon + 1, " \t");
		colon[strcspn(colon, "\n")] = 0;
		snprintf(out, len, "%s", colon);
		break;
	}
	fclose(f);
}

void print_context_line(const char *metric, const char *label, const char *value)
{
	printf("  %-*s %s\n", CONTEXT_LABEL_WIDTH, label, value);
	csv_text(metric, value);
}

bool has_cap_ipc_lock(void)
{
	char caps[64];
	unsigned long long mask;

	read_first_match("/proc/self/status", "CapEff", caps, sizeof(caps));
	if (sscanf(caps, "%llx", &mask) != 1)
		return false;
	return (mask >> CAP_IPC_LOCK_BIT) & 1;
}

void describe_memlock(char *desc, size_t len)
{
	struct rlimit rl;
	bool cap = has_cap_ipc_lock();

	getrlimit(RLIMIT_MEMLOCK, &rl);
	if (rl.rlim_cur == RLIM_INFINITY)
		snprintf(desc, len, "unlimited%s", cap ? " (CAP_IPC_LOCK)" : "");
	else
		snprintf(desc, len, "%" PRIu64 " KiB%s", (uint64_t)rl.rlim_cur / 1024,
			 cap ? " (ignored: CAP_IPC_LOCK)" : "");
}

/* ------------------------------------------------------------------ */
/* Options                                                             */

bool common_option(int argc, char **argv, int *i, const char **csv_path_out,
		   bool *quick, void (*usage)(FILE *out, const char *prog))
{
	const char *a = argv[*i];

	if (strcmp(a, "--quick") == 0) {
		*quick = true;
		return true;
	}
	if (strcmp(a, "--csv") == 0 && *i + 1 < argc) {
		*csv_path_out = argv[++*i];
		return true;
	}
	if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
		usage(stdout, argv[0]);
		exit(0);
	}
	return false;
}
