// SPDX-License-Identifier: MIT
/*
 * bench_vipl -- figures for VIPL (over the provider --device names), not
 * asserts.
 *
 * Reproduces on this machine what the CLAN VIA paper measured
 * in section 4: Table 1 (small-message latency with PIO, DMA and the
 * automatic choice), figure 6 (bandwidth against message size with
 * credit-based flow control) and figure 7 (completion-queue server
 * throughput against the number of connections).  In the same run it
 * measures the limits those figures should be read against: a busy-poll
 * ping-pong on one shared cache line, raw process_vm_writev and memcpy.
 * Prints tables, writes one long-format CSV for bench/vipl/plot.py, and
 * ends with a targets section that says "met" or "NOT met" from the
 * numbers actually measured.
 *
 * Usage: bench_vipl [--csv FILE] [--quick] [--only LIST] [--device NAME]
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench_vipl.h"

#define MIN_SIZE 16
#define MAX_LIMIT_SIZE (16 * MIB)

struct options opt;
struct results res;
size_t sizes[MAX_SIZES];
int nr_sizes;

/* ------------------------------------------------------------------ */
/* Machine context                                                      */

size_t memlock_budget(void)
{
	struct rlimit rl;

	if (has_cap_ipc_lock() || getrlimit(RLIMIT_MEMLOCK, &rl) != 0 ||
	    rl.rlim_cur == RLIM_INFINITY)
		return SIZE_MAX;
	return (size_t)rl.rlim_cur;
}

/* 256 connections take a few descriptors each, on both sides. */
static void raise_nofile(char *desc, size_t len)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	getrlimit(RLIMIT_NOFILE, &rl);
	snprintf(desc, len, "%" PRIu64, (uint64_t)rl.rlim_cur);
}

static void print_context(void)
{
	char buf[512];
	struct utsname u;

	printf("viaduct bench_vipl -- VIPL over %s (the CLAN VIA paper section 4)\n",
	       strncmp(opt.device, "ofi", 3) && strncmp(opt.device, "/dev/ofi", 8) ?
	       "the provider VIADUCT_PROVIDER names (default shm)" : "the ofi provider");
	print_rule(RULE_WIDTH);
	read_first_match("/proc/cpuinfo", "model name", buf, sizeof(buf));
	print_context_line("cpu_model", "CPU model", buf);
	snprintf(buf, sizeof(buf), "%ld online", sysconf(_SC_NPROCESSORS_ONLN));
	print_context_line("cpus", "CPUs", buf);
	print_context_line("pinning", "pinning", pin_description());
	uname(&u);
	snprintf(buf, sizeof(buf), "%s %s %s", u.sysname, u.release, u.machine);
	print_context_line("kernel", "kernel", buf);
	describe_memlock(buf, sizeof(buf));
	print_context_line("rlimit_memlock", "RLIMIT_MEMLOCK (soft)", buf);
	raise_nofile(buf, sizeof(buf));
	print_context_line("rlimit_nofile", "RLIMIT_NOFILE (raised)", buf);
	snprintf(buf, sizeof(buf), "%s (VipOpenNic)", opt.device);
	print_context_line("device", "device", buf);
	probe_nic(buf, sizeof(buf));
	print_context_line("nic", "NIC", buf);
	snprintf(buf, sizeof(buf), "%s: %d latency runs, %d bandwidth runs",
		 opt.quick ? "quick" : "full", opt.runs, opt.bw_runs);
	print_context_line("mode", "mode", buf);
	print_rule(RULE_WIDTH);
}

/* ------------------------------------------------------------------ */
/* Targets                                                              */

static void print_target(const char *what, const char *value,
			 const char *target, bool met)
{
	printf("  %-50s %-22s %-10s %s\n", what, value ? value : "not measured",
	       target, !value ? "n/a" : met ? "met" : "NOT met");
}

static void target_latency(void)
{
	double r = res.lat_ratio[LAT_AUTO][0];
	char val[48];

	snprintf(val, sizeof(val), "%.2fx (%.0f / %.0f ns)", r,
		 res.lat_ns[LAT_AUTO][0], res.lat_floor_ns[LAT_AUTO][0]);
	print_target("0-byte half round trip, AUTO polling / busy-poll",
		     isnan(r) ? NULL : val, "<= 4x", r <= 4.0);
	if (!isnan(r))
		csv_row("targets", "latency", 0, "auto_0b_ratio_floor", r);
}

static void target_bandwidth(void)
{
	double worst = INFINITY;
	size_t worst_size = 0;
	char val[48], label[32];

	for (int si = 0; si < res.nr_bw_sizes; si++) {
		if (sizes[si] < MIB || isnan(res.bw_auto_ratio[si]))
			continue;
		if (res.bw_auto_ratio[si] < worst) {
			worst = res.bw_auto_ratio[si];
			worst_size = sizes[si];
		}
	}
	snprintf(val, sizeof(val), "worst %.3f @ %s", worst,
		 size_label(worst_size, label, sizeof(label)));
	print_target("bandwidth AUTO / raw process_vm_writev, >= 1 MiB",
		     worst_size ? val : NULL, ">= 0.95", worst >= 0.95);
	if (worst_size)
		csv_row("targets", "bandwidth", worst_size,
			"worst_auto_ratio_raw_ge1m", worst);
}

static void target_cq(enum cq_case c, const char *what)
{
	int last = res.nr_cq - 1;
	double r = last > 0 ? res.cq_rps[c][last] / res.cq_rps[c][0] : NAN;
	char val[48], label[80];

	snprintf(label, sizeof(label), "CQ req/s, %d connections / 1, %s",
		 last > 0 ? res.cq_n[last] : 0, what);
	snprintf(val, sizeof(val), "%.3f", r);
	print_target(label, isnan(r) ? NULL : val, ">= 0.90", r >= 0.90);
	if (!isnan(r))
		csv_row("targets", c == CQ_POLL ? "cq_poll" : "cq_wait",
			(uint64_t)res.cq_n[last], "ratio_to_1", r);
}

static void section_targets(void)
{
	printf("\n[targets] measured vs target (noisy shared machine: a ratio "
	       "within a few %% of its\n          bound may change verdict from "
	       "run to run)\n");
	printf("  %-50s %-22s %-10s %s\n", "what", "measured", "target",
	       "verdict");
	if (opt.sections & SEC_LATENCY)
		target_latency();
	if (opt.sections & SEC_BANDWIDTH)
		target_bandwidth();
	if (opt.sections & SEC_CQ) {
		target_cq(CQ_POLL, "VipCQDone");
		target_cq(CQ_WAIT, "VipCQWait");
	}
}

/* ------------------------------------------------------------------ */
/* Options                                                              */

static void usage(FILE *out, const char *prog)
{
	fprintf(out, "usage: %s [--csv FILE] [--quick] [--only LIST] "
		"[--device NAME]\n"
		"  --csv FILE     write every measurement as CSV "
		"(section,case,x,metric,value)\n"
		"  --quick        fewer and shorter runs (smoke run)\n"
		"  --only LIST    comma-separated subset of "
		"limits,latency,bandwidth,cq,reg\n"
		"  --device NAME  the device VipOpenNic opens (default "
		"/dev/via_lo)\n", prog);
}

static int parse_only(const char *list)
{
	static const char *const names[] = { "limits", "latency", "bandwidth",
					      "cq", "reg" };
	char buf[128], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	opt.sections = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned bit = 0;

		for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strcmp(t, names[i]) == 0)
				bit = 1u << i;
		if (!bit)
			return -1;
		opt.sections |= bit;
	}
	return opt.sections ? 0 : -1;
}

static int parse_args(int argc, char **argv)
{
	opt.device = "/dev/via_lo";
	opt.sections = SEC_ALL;
	for (int i = 1; i < argc; i++) {
		if (common_option(argc, argv, &i, &opt.csv_path, &opt.quick, usage)) {
			continue;
		} else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
			opt.device = argv[++i];
		} else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
			if (parse_only(argv[++i]) != 0)
				goto bad;
		} else {
			goto bad;
		}
	}
	return 0;
bad:
	usage(stderr, argv[0]);
	return -1;
}

static void set_repetitions(void)
{
	opt.runs = opt.quick ? 5 : 11;
	opt.lat_iters = opt.quick ? 2000 : 10000;
	opt.lat_wait_iters = opt.quick ? 1000 : 5000;
	opt.bw_runs = 3;
	opt.bw_bytes = opt.quick ? 1 * MIB : 10 * MIB;
	opt.bw_min_msgs = 8;
	opt.cq_runs = opt.quick ? 3 : 5;
	opt.cq_window_s = opt.quick ? 0.1 : 0.25;
	opt.cq_max_conns = 256;
	/* Every power of two (full) or of four (quick), 16 B .. 16 MiB. */
	nr_sizes = 0;
	for (size_t s = MIN_SIZE; s <= MAX_LIMIT_SIZE && nr_sizes < MAX_SIZES;
	     s *= opt.quick ? 4 : 2)
		sizes[nr_sizes++] = s;
}

int main(int argc, char **argv)
{
	if (parse_args(argc, argv) != 0)
		return 2;
	set_repetitions();
	if (shared_init() != 0) {
		fprintf(stderr, "bench_vipl: cannot map the shared block: %s\n",
			strerror(errno));
		return 1;
	}
	if (csv_open("bench_vipl", opt.csv_path) != 0)
		return 1;
	print_context();
	if (opt.sections & SEC_LIMITS)
		section_limits();
	if (opt.sections & SEC_LATENCY)
		section_latency();
	if (opt.sections & SEC_BANDWIDTH)
		section_bandwidth();
	if (opt.sections & SEC_CQ)
		section_cq();
	if (opt.sections & SEC_REG)
		section_reg();
	section_targets();
	return csv_close("bench_vipl") == 0 ? 0 : 1;
}
