/* SPDX-License-Identifier: MIT */
/*
 * bench/mpi common part: options, message sizes, calibration, statistics,
 * the table and the CSV.  Plain MPI (mpi.h only) so that every program
 * here builds unchanged with vdcc, mpicc.openmpi and mpicc.mpich.
 *
 * Every program is `PROG [options]`, run on 2 ranks (coll.c: any
 * number); rank 0 prints and writes the CSV.  Options (common_usage()):
 *   --label NAME   the case name in the table and the CSV (default: the
 *                  first word of MPI_Get_library_version)
 *   --csv FILE     append long-format rows section,case,x,metric,value
 *   --quick        sizes in powers of four, shorter runs
 *   --min-size B, --max-size B   message sizes (bytes) measured
 *   --time SEC     target duration of one timed run per size
 *   --runs N       timed runs per size; the median is reported
 */
#ifndef BENCH_MPI_COMMON_H
#define BENCH_MPI_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <mpi.h>

#define MB 1e6 /* MB/s means 10^6 bytes per second, as OSU and bench_vipl */
#define MAX_RUNS 31

struct bench_opts {
	const char *label;
	const char *csv_path;
	bool quick;
	size_t min_size, max_size;
	double run_time;        /* seconds per timed run */
	int runs;
	size_t offset;          /* buffers this far past a page boundary */
};

struct bench_ctx {
	struct bench_opts o;
	int rank, size;
	FILE *csv;              /* rank 0 only */
	const char *section;    /* "latency", "bw", ... */
};

/* Parse argv (after MPI_Init); on a bad option rank 0 prints usage and
 * every rank exits through MPI_Finalize with status 2.  `defaults` gives
 * the program's own size range and times. */
void common_init(struct bench_ctx *b, const char *section, int argc, char **argv,
		 const struct bench_opts *defaults);
/* Close the CSV; MPI_Finalize is the caller's. */
void common_finish(struct bench_ctx *b);

/* The next size after s (0 -> 1, then x2; with --quick x4 except
 * 4 -> 8 -> 16); 0 after the end of the range. */
size_t next_size(const struct bench_ctx *b, size_t s);
/* A zeroed and touched buffer (first-touch outside timing), page aligned
 * or --offset bytes past; aborts the job when out of memory. */
void *bench_alloc(const struct bench_ctx *b, size_t bytes);

/* Deterministic byte pattern for (size, salt): data moves, not just
 * completions.  fill writes it, check returns 0 or the index+1 of the
 * first wrong byte it finds (both ends and a stride through the middle). */
void pattern_fill(unsigned char *p, size_t n, unsigned salt);
size_t pattern_check(const unsigned char *p, size_t n, unsigned salt);
/* Report a bad pattern and abort the job. */
void pattern_fail(const struct bench_ctx *b, size_t size, size_t where);
/* A received message: `size` bytes by the count in `st`, and the pattern
 * of `salt`; aborts the job otherwise. */
void check_received(const struct bench_ctx *b, const unsigned char *buf, size_t size,
		    MPI_Status *st, unsigned salt);

/* Iterations for one timed run: `warm_iters` took `warm_secs` on rank 0;
 * aim at o.run_time, clamped to [lo, hi].  Rank 0 decides and tells every
 * other rank by point-to-point messages, so that the p2p benchmarks
 * depend on no collective. */
long calibrate(const struct bench_ctx *b, double warm_secs, long warm_iters,
	       long lo, long hi);

/* The p2p programs need exactly two ranks: otherwise rank 0 says so and
 * every rank leaves through MPI_Finalize with status 2. */
void require_two_ranks(const struct bench_ctx *b, const char *prog);
/* measure(arg, size) for every size from --min-size up (next_size). */
void for_each_size(const struct bench_ctx *b, void (*measure)(void *arg, size_t size),
		   void *arg);

/* One size's timed runs.  run(arg, size, n) does n iterations and
 * returns rank 0's seconds.  `warm` untimed iterations calibrate n
 * (calibrate(), within [lo, hi]); then --runs runs, each turned into a
 * figure: n * unit / seconds when `rate`, else seconds * unit / n. */
struct timing {
	double (*run)(void *arg, size_t size, long n);
	void *arg;
	long warm, lo, hi;
	double unit;
	bool rate;
	/* Optional: rank 0's wall seconds of the last run, when more than the
	 * seconds run() returns (calls timed apart from untimed barriers);
	 * calibration then aims the whole run, not its timed part, at --time. */
	double (*wall)(void *arg);
};
/* Fills fig[0 .. o.runs) on every rank; returns n. */
long timed_runs(const struct bench_ctx *b, size_t size, const struct timing *t, double *fig);
/* Rank 0 (the others return 0 at once): the median and the best of fig[]
 * (the highest when higher_better, else the lowest), the start of a table
 * row "size median best iters" with `digits` decimals, and CSV rows
 * `metric`, `best_metric` and iters.  Returns the median; end_row() ends
 * the table row. */
double report_runs(const struct bench_ctx *b, size_t size, const double *fig, long iters,
		   int digits, bool higher_better, const char *metric, const char *best_metric);
void end_row(const struct bench_ctx *b);

/* The bandwidth programs (bw, bibw): timed_runs() of `transfer`, which
 * moves bytes_per_iter bytes per iteration, reported in MB/s (mb_per_s,
 * mb_per_s_max, iters). */
void bw_table_head(const struct bench_ctx *b);
void measure_bandwidth(const struct bench_ctx *b, size_t size, double bytes_per_iter,
		       double (*transfer)(void *arg, size_t size, long n), void *arg);

/* Median / minimum / maximum of n doubles (n >= 1). */
double stat_median(const double *v, int n);
double stat_min(const double *v, int n);
double stat_max(const double *v, int n);

/* Header line: the library, the ranks and where each runs (gathered by
 * point-to-point messages to rank 0), the options; and context CSV rows. */
void print_header(struct bench_ctx *b, const char *title);
/* One CSV row (rank 0, if --csv). */
void csv_row(const struct bench_ctx *b, size_t x, const char *metric, double value);

#endif /* BENCH_MPI_COMMON_H */
