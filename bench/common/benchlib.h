/* SPDX-License-Identifier: MIT */
/*
 * What bench_lmm, bench_vipl and the probes of bench/net share: the
 * clock, pinning, samples and their median, the long-format CSV
 * (section,case,x,metric,value) that the plot scripts read, size labels,
 * the machine-context lines and the options every bench takes.  Not used by bench/mpi, whose programs must build
 * with any MPI's compiler wrapper.
 */
#ifndef BENCH_COMMON_BENCHLIB_H
#define BENCH_COMMON_BENCHLIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define KIB ((size_t)1024)
#define MIB (KIB * KIB)
#define MAX_RUNS 15

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t now_ns(void);
/* Run the calling thread on `cpu` only: 0, or -1 (errno set). */
int pin_to_cpu(int cpu);

/* Up to MAX_RUNS figures of one measurement; more are dropped. */
struct samples {
	double v[MAX_RUNS];
	int n;
};
void samples_add(struct samples *s, double x);
double samples_median(const struct samples *s); /* NAN when empty */
double samples_min(const struct samples *s);    /* NAN when empty */

/* The CSV, written only when csv_open() got a path (NULL: no CSV).  Both
 * report failures on stderr prefixed with `prog` and return -1. */
int csv_open(const char *prog, const char *path);
int csv_close(const char *prog);
void csv_row(const char *section, const char *cas, uint64_t x,
	     const char *metric, double value);
/* A context row "context,machine,0,METRIC,"TEXT"" (text quoted). */
void csv_text(const char *metric, const char *text);

/* "16 B", "4 KiB", "2 MiB". */
const char *size_label(size_t bytes, char *buf, size_t len);
/* A line of `width` dashes. */
void print_rule(int width);

/* Machine context: the value after "KEY:" on the first matching line of
 * a /proc file ("unknown" if none); one "  label  value" line that is
 * also a CSV context row. */
void read_first_match(const char *path, const char *key, char *out, size_t len);
void print_context_line(const char *metric, const char *label, const char *value);
bool has_cap_ipc_lock(void);
/* RLIMIT_MEMLOCK's soft limit in words, and whether CAP_IPC_LOCK
 * overrides it. */
void describe_memlock(char *desc, size_t len);

/* The options every bench takes: --csv FILE, --quick, --help / -h.
 * Returns true when argv[*i] was one of them (*i then at its last word);
 * --help prints usage() to stdout and exits 0. */
bool common_option(int argc, char **argv, int *i, const char **csv_path,
		   bool *quick, void (*usage)(FILE *out, const char *prog));

#endif /* BENCH_COMMON_BENCHLIB_H */
