/* SPDX-License-Identifier: MIT */
/*
 * bench_vipl: what the parts of the VIPL benchmark share.
 *
 * Every experiment runs in two processes: the bench forks, the parent
 * plays the server (receiver, responder) on one CPU and the child the
 * client (sender, initiator) on another.  Nothing VIPL-related is open
 * in the parent when it forks: each side opens its own NIC, as two VIA
 * programs on two nodes would.  They share one anonymous MAP_SHARED
 * block, made once before the first fork, for the busy-poll cache line,
 * a few control flags and the child's results.
 */
#ifndef BENCH_VIPL_H
#define BENCH_VIPL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vipl.h>

#include "benchlib.h"

#define MAX_SIZES 24            /* 16 B .. 16 MiB, powers of two */
#define BW_MAX_SIZE (4 * MIB)   /* largest VIPL message in figure 6 */
#define CACHELINE 64
#define RULE_WIDTH 92

/* ---- options (bench_vipl.c) ----------------------------------------------- */
enum section {
	SEC_LIMITS = 1u << 0,
	SEC_LATENCY = 1u << 1,
	SEC_BANDWIDTH = 1u << 2,
	SEC_CQ = 1u << 3,
	SEC_REG = 1u << 4,
	SEC_ALL = 0x1f,
};

struct options {
	const char *csv_path;
	const char *device;     /* VipOpenNic name */
	bool quick;
	unsigned sections;      /* enum section bits */
	int runs;               /* latency runs; the median is reported */
	int lat_iters;          /* round trips per latency run (polling) */
	int lat_wait_iters;     /* round trips per run with VipRecvWait */
	int bw_runs;            /* runs per bandwidth point */
	size_t bw_bytes;        /* bytes per bandwidth run (10 MB in the CLAN VIA paper) */
	int bw_min_msgs;        /* at least this many messages per run */
	int cq_runs;            /* measurement windows per N */
	double cq_window_s;     /* seconds per window */
	int cq_max_conns;       /* 256 */
};

extern struct options opt;

/* Message sizes shared by the limits and figure 6: 16 B .. 16 MiB, every
 * power of two (full) or of four (quick). */
extern size_t sizes[MAX_SIZES];
extern int nr_sizes;

/* ---- results kept for the targets section -------------------------------- */
enum lat_case { LAT_PIO, LAT_DMA, LAT_AUTO, LAT_AUTO_WAIT, LAT_RING, NR_LAT_CASES };
#define NR_LAT_SIZES 3
enum bw_case { BW_PIO, BW_DMA, BW_AUTO, BW_AUTO_FC, NR_BW_CASES };
enum cq_case { CQ_POLL, CQ_WAIT, NR_CQ_CASES };
#define MAX_CQ_POINTS 12        /* N = 1, 2, 4, ..., 2048 at most */

struct results {
	double floor_ns;                        /* busy-poll half round trip */
	double pvw_mbs[MAX_SIZES];              /* raw process_vm_writev */
	double memcpy_mbs[MAX_SIZES];
	double lat_ns[NR_LAT_CASES][NR_LAT_SIZES];
	double lat_ratio[NR_LAT_CASES][NR_LAT_SIZES];   /* x busy-poll floor */
	double lat_floor_ns[NR_LAT_CASES][NR_LAT_SIZES]; /* its paired floor */
	double bw_mbs[NR_BW_CASES][MAX_SIZES];
	double bw_raw_mbs[MAX_SIZES];           /* raw pvw inside the AUTO job */
	double bw_auto_ratio[MAX_SIZES];        /* AUTO / raw, per run pair */
	int nr_bw_sizes;                        /* sizes[] <= BW_MAX_SIZE */
	int cq_n[MAX_CQ_POINTS];
	int nr_cq;
	double cq_rps[NR_CQ_CASES][MAX_CQ_POINTS];
};

extern struct results res;
extern const size_t lat_sizes[NR_LAT_SIZES];

/* ---- shared block between parent and child (pair.c) ------------------------ */
#define RESULT_BYTES (64 * 1024)

struct shared {
	/* The busy-poll ping-pong line: nothing else lives on it. */
	_Alignas(CACHELINE) _Atomic uint64_t ping;
	_Alignas(CACHELINE) _Atomic uint32_t abort;     /* a side failed */
	_Atomic uint32_t stop;          /* server -> client: stop sending */
	_Atomic uint32_t client_done;   /* client -> server: drained */
	_Atomic uint32_t progress;      /* client -> server: points done */
	char child_err[256];            /* the child's first error */
	_Alignas(CACHELINE) unsigned char result[RESULT_BYTES];
};

extern struct shared *sh;

/* Map the shared block; call once, before any fork. */
int shared_init(void);
/* Run server(arg) here and client(arg) in a forked child, pinned to two
 * different CPUs when there are two.  0 when both succeeded, else -1
 * with the reason printed.  A watchdog kills both after
 * `limit_s` seconds so that a broken library cannot hang the bench. */
int pair_run(int (*server)(void *), int (*client)(void *), void *arg,
	     unsigned limit_s);
/* Which CPUs the two sides are pinned to ("0 and 1", or "not pinned"). */
const char *pin_description(void);
bool in_child(void);

/* Record a failure (first one wins), tell the other side, return -1. */
int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int vip_fail(const char *call, VIP_RETURN r);
/* True once the other side failed or the job's deadline passed; cheap
 * enough to call every few thousand polls. */
bool should_stop(void);
const char *vip_text(VIP_RETURN r);

/* ---- VIPL endpoint helpers (endpoint.c) ------------------------------------ */
#define ADDR_BYTES 64

struct ep {
	VIP_NIC_HANDLE nic;
	VIP_NIC_ATTRIBUTES attrs;
	VIP_PROTECTION_HANDLE ptag;
	VIP_NET_ADDRESS *self;          /* host address + discriminator */
	VIP_NET_ADDRESS *peer;
	_Alignas(8) unsigned char addr[2][ADDR_BYTES];
};

/* A registered area: descriptors and buffers carved from it. */
struct area {
	char *base;
	size_t len;
	VIP_MEM_HANDLE mh;
};

enum role { ROLE_SERVER = 0, ROLE_CLIENT = 1 };

/* Open the NIC, look up "localhost" and build both addresses for job
 * `job` (distinct discriminators per job and role). */
int ep_open(struct ep *e, enum role role, uint32_t job);
void ep_close(struct ep *e);
/* A VI at reliable delivery with the NIC's MaxTransferSize; ext may be
 * NULL (standard behaviour). */
int ep_vi(struct ep *e, VIP_CQ_HANDLE scq, VIP_CQ_HANDLE rcq,
	  const struct viaduct_vi_ext *ext, VIP_VI_HANDLE *vi);
/* Server: wait for the client's request and accept it on vi. */
int ep_accept(struct ep *e, VIP_VI_HANDLE vi);
/* Client: connect vi, retrying while the server is not listening yet. */
int ep_connect(struct ep *e, VIP_VI_HANDLE vi);
int area_alloc(struct ep *e, struct area *a, size_t len);
void area_free(struct ep *e, struct area *a);
/* The i-th 64-byte descriptor slot of an area. */
static inline VIP_DESCRIPTOR *area_desc(struct area *a, size_t i)
{
	return (VIP_DESCRIPTOR *)(a->base + i * sizeof(VIP_DESCRIPTOR));
}

/* Fill a descriptor: one data segment (none for 0 bytes). */
void desc_fill(VIP_DESCRIPTOR *d, void *buf, VIP_MEM_HANDLE mh, uint32_t len);
void desc_imm(VIP_DESCRIPTOR *d, uint32_t imm);
/* Re-arm a completed receive for reposting (Status and Length). */
void desc_rearm(VIP_DESCRIPTOR *d);

/* Poll VipRecvDone / VipSendDone until a descriptor completes. */
int recv_poll(VIP_VI_HANDLE vi, VIP_DESCRIPTOR **d);
int send_poll(VIP_VI_HANDLE vi, VIP_DESCRIPTOR **d);
/* Blocking forms (VipRecvWait / VipSendWait with a finite timeout). */
int recv_wait(VIP_VI_HANDLE vi, VIP_DESCRIPTOR **d);
int send_wait(VIP_VI_HANDLE vi, VIP_DESCRIPTOR **d);
int post_recv(VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh);
int post_send(VIP_VI_HANDLE vi, VIP_DESCRIPTOR *d, VIP_MEM_HANDLE mh);

/* ---- busy-poll ping-pong on sh->ping (limits.c) ---------------------------- */
/* Both sides call it with the same `iters` and their own running `seq`;
 * the client initiates and returns the half round trip in ns (the server
 * returns 0).  NAN if the other side went away. */
double busy_ping(enum role role, uint64_t *seq, int iters);

/* Bytes this process may register: SIZE_MAX with CAP_IPC_LOCK or an
 * unlimited RLIMIT_MEMLOCK (bench_vipl.c). */
size_t memlock_budget(void);

/* ---- the experiments -------------------------------------------------------- */
void section_limits(void);     /* limits.c */
void section_latency(void);    /* latency.c */
void section_bandwidth(void);  /* bandwidth.c */
void section_cq(void);         /* cq.c */
void section_reg(void);        /* reg.c */
/* A child that opens the NIC and reports its attributes (endpoint.c). */
int probe_nic(char *desc, size_t len);
/* A fresh job number: discriminators never repeat within a run. */
uint32_t next_job(void);

#endif /* BENCH_VIPL_H */
