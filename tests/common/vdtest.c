/* SPDX-License-Identifier: MIT */
#include "vdtest.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

long long vdt_vmlck_bytes(int pid)
{
	char path[64], line[256];
	long long kb = -1;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %lld kB", &kb) == 1)
			break;
	fclose(f);
	return kb < 0 ? -1 : kb * 1024;
}

uint64_t vdt_pagemap_entry(const void *addr)
{
	uint64_t entry = 0;
	size_t ps = vdt_page_size();
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	if (pread(fd, &entry, sizeof(entry),
		  (off_t)((uintptr_t)addr / ps * sizeof(entry))) != sizeof(entry))
		entry = 0;
	close(fd);
	return entry;
}

uint64_t vdt_pfn(const void *addr)
{
	uint64_t e = vdt_pagemap_entry(addr);

	if (!(e >> 63)) /* not present */
		return 0;
	return e & ((1ULL << 55) - 1);
}

int vdt_pfns_readable(void)
{
	static volatile char probe[1];
	void *p = (void *)probe;

	probe[0] = 1;
	return vdt_pfn(p) != 0;
}

size_t vdt_page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}
