/* SPDX-License-Identifier: MIT */
/*
 * vdinfo: what this machine lets viaduct do, as one `key: value` line per
 * fact.  Each probe tries the real operation (the kernel's answer is the
 * only reliable one: limits, capabilities, sysctls and seccomp all play a
 * part).  A missing feature is a fact, not an error: vdinfo exits 0.
 */
#include <viaduct/viaduct.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1 /* Linux >= 5.11 */
#endif

#define CAP_IPC_LOCK_BIT 14
#define PAGEMAP_PRESENT (1ULL << 63)
#define PAGEMAP_PFN_MASK ((1ULL << 55) - 1)
#define UFFD_WANTED_EVENTS                                                   \
	(UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMOVE |              \
	 UFFD_FEATURE_EVENT_REMAP)
#define CHILD_MAGIC 0x76696164756374ULL /* "viaduct" */

static void put(const char *key, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(const char *key, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", key);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* ---- limits and capabilities ------------------------------------------ */

/* "8 MiB (8388608 bytes)", or "unlimited". */
static void format_limit(rlim_t v, char *buf, size_t len)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB",
					     "TiB" };
	unsigned long long unit = 1;
	unsigned i = 0;

	if (v == RLIM_INFINITY) {
		snprintf(buf, len, "unlimited");
		return;
	}
	while (i + 1 < sizeof(units) / sizeof(units[0]) && v >= unit * 1024) {
		unit *= 1024;
		i++;
	}
	if (i == 0)
		snprintf(buf, len, "%llu bytes", (unsigned long long)v);
	else if (v % unit == 0)
		snprintf(buf, len, "%llu %s (%llu bytes)",
			 (unsigned long long)(v / unit), units[i],
			 (unsigned long long)v);
	else
		snprintf(buf, len, "%.1f %s (%llu bytes)",
			 (double)v / (double)unit, units[i],
			 (unsigned long long)v);
}

static void report_memlock(void)
{
	struct rlimit rl;
	char soft[64], hard[64];

	if (getrlimit(RLIMIT_MEMLOCK, &rl)) {
		put("memlock_soft", "unknown (%s)", strerror(errno));
		put("memlock_hard", "unknown (%s)", strerror(errno));
		return;
	}
	format_limit(rl.rlim_cur, soft, sizeof(soft));
	format_limit(rl.rlim_max, hard, sizeof(hard));
	put("memlock_soft", "%s", soft);
	put("memlock_hard", "%s", hard);
}

/* CapEff of /proc/self/status: the capabilities in force right now. */
static int read_cap_eff(unsigned long long *caps)
{
	char line[256];
	int found = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", caps) == 1;
	fclose(f);
	return found ? 0 : -1;
}

static void report_cap_ipc_lock(void)
{
	unsigned long long caps;

	if (read_cap_eff(&caps))
		put("cap_ipc_lock", "unknown (cannot read /proc/self/status)");
	else
		put("cap_ipc_lock", "%s",
		    caps >> CAP_IPC_LOCK_BIT & 1 ? "yes (locking is not limited)"
						 : "no");
}

/* ---- /proc/self/pagemap ----------------------------------------------- */

static int read_pagemap(const void *addr, size_t page, uint64_t *entry)
{
	off_t off = (off_t)((uintptr_t)addr / page * sizeof(*entry));
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = pread(fd, entry, sizeof(*entry), off);
	close(fd);
	return n == (ssize_t)sizeof(*entry) ? 0 : -EIO;
}

/* Frame numbers read as 0 without CAP_SYS_ADMIN; a locked page is
 * present, so a zero PFN means "hidden", not "swapped out". */
static void report_pagemap(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t entry = 0;
	int locked, err;

	if (p == MAP_FAILED) {
		put("pagemap_pfn", "unknown (mmap: %s)", strerror(errno));
		return;
	}
	memset(p, 0x5a, page);
	locked = mlock(p, page) == 0;
	err = read_pagemap(p, page, &entry);
	if (locked)
		munlock(p, page);
	munmap(p, page);

	if (err)
		put("pagemap_pfn", "no (/proc/self/pagemap: %s)", strerror(-err));
	else if (!(entry & PAGEMAP_PRESENT))
		put("pagemap_pfn", "no (page not present%s)",
		    locked ? "" : "; mlock failed");
	else if (!(entry & PAGEMAP_PFN_MASK))
		put("pagemap_pfn",
		    "no (frame numbers hidden: needs CAP_SYS_ADMIN; lmm page "
		    "lists are virtual)");
	else
		put("pagemap_pfn", "yes (lmm page lists are physical)");
}

/* ---- a child process to probe ----------------------------------------- */

/* Set by the child after fork, read by the parent through
 * process_vm_readv at the same (inherited) address. */
static volatile uint64_t child_word;

struct child {
	pid_t pid;
	int release_fd; /* closing it lets the child exit */
};

/* The child publishes CHILD_MAGIC, says it is ready, then waits for the
 * parent to close its end of the pipe.  It must close its own copies of
 * the parent's ends first, or it would never see EOF.  Only
 * async-signal-safe calls. */
static _Noreturn void child_main(const int ready[2], const int release[2])
{
	int ready_fd = ready[1], release_fd = release[0];
	char c = 'r';

	close(ready[0]);
	close(release[1]);
	child_word = CHILD_MAGIC;
	if (write(ready_fd, &c, 1) != 1)
		_exit(1);
	while (read(release_fd, &c, 1) > 0)
		;
	_exit(0);
}

static void child_release(struct child *ch)
{
	close(ch->release_fd);
}

static void child_reap(struct child *ch)
{
	while (waitpid(ch->pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* Fork the child and wait until it is ready: 0 or -errno. */
static int child_start(struct child *ch)
{
	int ready[2], release[2], err = 0;
	char c;

	if (pipe2(ready, O_CLOEXEC))
		return -errno;
	if (pipe2(release, O_CLOEXEC)) {
		err = -errno;
		close(ready[0]);
		close(ready[1]);
		return err;
	}
	ch->pid = fork();
	if (ch->pid == 0)
		child_main(ready, release);
	if (ch->pid < 0)
		err = -errno;
	close(ready[1]);
	close(release[0]);
	ch->release_fd = release[1];
	/* EOF instead of the byte: the child died before it was ready. */
	if (!err && read(ready[0], &c, 1) != 1)
		err = -ECHILD;
	close(ready[0]);
	if (err) {
		child_release(ch);
		if (ch->pid > 0)
			child_reap(ch);
	}
	return err;
}

/* ---- process_vm_readv ------------------------------------------------- */

static void report_process_vm_readv(void)
{
	struct child ch;
	uint64_t value = 0;
	struct iovec local = { &value, sizeof(value) };
	struct iovec remote = { (void *)&child_word, sizeof(value) };
	ssize_t n;
	int err = child_start(&ch);

	if (err) {
		put("process_vm_readv", "unknown (fork: %s)", strerror(-err));
		return;
	}
	n = process_vm_readv(ch.pid, &local, 1, &remote, 1, 0);
	err = errno;
	child_release(&ch);
	child_reap(&ch);

	if (n < 0)
		put("process_vm_readv", "no (%s)", strerror(err));
	else if (n != (ssize_t)sizeof(value) || value != CHILD_MAGIC)
		put("process_vm_readv", "no (read wrong data from the child)");
	else
		put("process_vm_readv", "yes");
}

/* ---- pidfd ------------------------------------------------------------ */

/* 1 when the pidfd polls readable within timeout_ms, 0 when not, -errno. */
static int pidfd_wait(int pidfd, int timeout_ms)
{
	struct pollfd pfd = { .fd = pidfd, .events = POLLIN };
	int n = poll(&pfd, 1, timeout_ms);

	if (n < 0)
		return -errno;
	return n == 1 && (pfd.revents & POLLIN);
}

/* A pidfd must stay quiet while the child lives and poll readable once it
 * has exited: that is how viaduct notices a dead peer. */
static void report_pidfd(void)
{
	struct child ch;
	int alive, exited, pidfd, err = child_start(&ch);

	if (err) {
		put("pidfd", "unknown (fork: %s)", strerror(-err));
		return;
	}
	pidfd = (int)syscall(SYS_pidfd_open, ch.pid, 0);
	err = errno;
	alive = pidfd < 0 ? 0 : pidfd_wait(pidfd, 0);
	child_release(&ch);
	exited = pidfd < 0 ? 0 : pidfd_wait(pidfd, 5000);
	child_reap(&ch);
	if (pidfd >= 0)
		close(pidfd);

	if (pidfd < 0)
		put("pidfd", "no (pidfd_open: %s)", strerror(err));
	else if (alive != 0 || exited != 1)
		put("pidfd", "no (poll did not report the child's exit)");
	else
		put("pidfd", "yes");
}

/* ---- userfaultfd ------------------------------------------------------ */

/* Open a userfaultfd and do the UFFDIO_API handshake asking for
 * `features`; on success *got holds the features the kernel supports.
 * 0 or -errno (-EINVAL from the handshake: a feature is missing). */
static int uffd_handshake(int flags, uint64_t features, uint64_t *got)
{
	struct uffdio_api api = { .api = UFFD_API, .features = features };
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | flags);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, UFFDIO_API, &api))
		err = -errno;
	close(fd);
	*got = api.features;
	return err;
}

static void put_uffd_events(uint64_t features)
{
	put("userfaultfd_events", "unmap=%s remove=%s remap=%s",
	    features & UFFD_FEATURE_EVENT_UNMAP ? "yes" : "no",
	    features & UFFD_FEATURE_EVENT_REMOVE ? "yes" : "no",
	    features & UFFD_FEATURE_EVENT_REMAP ? "yes" : "no");
}

/* Full mode needs CAP_SYS_PTRACE or vm.unprivileged_userfaultfd=1; the
 * user-mode-only flag (Linux >= 5.11) is enough for the non-fault events
 * the pin-down cache watches. */
static void report_userfaultfd(void)
{
	const char *mode = "full mode";
	uint64_t got = 0;
	int err = uffd_handshake(0, UFFD_WANTED_EVENTS, &got);

	if (err == -EPERM) {
		mode = "user-mode-only";
		err = uffd_handshake(UFFD_USER_MODE_ONLY, UFFD_WANTED_EVENTS,
				     &got);
	}
	if (err == -EINVAL) { /* some event is missing: ask which exist */
		int flags = strcmp(mode, "full mode") ? UFFD_USER_MODE_ONLY : 0;

		uffd_handshake(flags, 0, &got);
		put("userfaultfd", "no (%s: lacks events the cache needs)",
		    mode);
		put_uffd_events(got);
		return;
	}
	if (err) {
		put("userfaultfd", "no (%s)", strerror(-err));
		put_uffd_events(0);
		return;
	}
	put("userfaultfd", "yes (%s)", mode);
	put_uffd_events(got);
}

/* ---- the rest --------------------------------------------------------- */

static void report_system(void)
{
	struct utsname u;

	put("version", "%s", viaduct_version());
	if (uname(&u) == 0)
		put("kernel", "%s %s", u.release, u.machine);
	put("page_size", "%ld", sysconf(_SC_PAGESIZE));
}

/* Every VIADUCT_* variable: name, type, default, allowed values, meaning,
 * and the value in this environment (as fi_info -e and ucx_info -c do).
 * Exit 1 if a set value is not valid. */
static int report_params(void)
{
	int n = viaduct_param_count();

	for (int i = 0; i < n; i++) {
		struct viaduct_param p;

		if (viaduct_param_info(i, &p))
			continue;
		printf("%s\n    %s\n    type: %s; default: %s\n    allowed: %s\n"
		       "    value: %s%s\n",
		       p.name, p.desc, p.type, p.dflt, p.range,
		       p.value ? p.value : "(unset: the default)",
		       p.value ? " (from the environment)" : "");
	}
	return viaduct_params_check() ? 1 : 0;
}

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [--params]\n"
		"Print what this system lets viaduct do, one `key: value` line per fact.\n"
		"  --params   list every VIADUCT_* environment variable: type, default,\n"
		"             allowed values, meaning and current value\n"
		"  -h, --help this text\n", prog);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--params") && argc == 2)
		return report_params();
	if (argc > 1) {
		bool help = !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help");

		usage(help ? stdout : stderr, argv[0]);
		return help ? 0 : 2;
	}
	/* Line-buffer, so output stays in order around the fork()s. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	report_system();
	report_memlock();
	report_cap_ipc_lock();
	report_pagemap();
	report_process_vm_readv();
	report_userfaultfd();
	report_pidfd();
	return 0;
}
