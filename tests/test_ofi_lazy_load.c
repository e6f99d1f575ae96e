/* SPDX-License-Identifier: MIT */
/*
 * libfabric is loaded when an ofi NIC opens, not with libviaduct: a
 * program that uses shared memory only never maps it (its dependencies
 * cost 0.2 s at every process start), and one that opens an ofi NIC
 * gets it.  With "fake": a library of that name that is not libfabric
 * is refused with a message.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vdtest.h"
#include "viptest.h"

static bool mapped(const char *path_part)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	bool found = false;

	VDT_CHECK(f != NULL);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, path_part) != NULL;
	fclose(f);
	return found;
}

static bool fabric_mapped(void)
{
	return mapped("/libfabric.so");
}

/* With a library named libfabric.so.1 that is not libfabric first on
 * the loader's path: the ofi NIC does not open, twice, and nothing
 * crashes. */
static int fake_library(void)
{
	VIP_NIC_HANDLE nic;

	setenv("VIADUCT_JOB_KEY", "00112233445566778899aabbccddeeff", 1);
	setenv("VIADUCT_PROVIDER", "ofi:tcp", 1);
	VDT_CHECK(VipOpenNic("/dev/via_lo", &nic) != VIP_SUCCESS);
	/* It was the impostor that was opened and refused. */
	VDT_CHECK(mapped("fake_fabric/libfabric.so"));
	VDT_CHECK(VipOpenNic("/dev/via_lo", &nic) != VIP_SUCCESS);
	unsetenv("VIADUCT_PROVIDER");
	VDT_CHECK(VipOpenNic("/dev/via_lo", &nic) == VIP_SUCCESS);
	VDT_CHECK(VipCloseNic(nic) == VIP_SUCCESS);
	printf("ok: a library that is not libfabric is refused, shm still opens\n");
	return 0;
}

int main(int argc, char **argv)
{
	VIP_NIC_HANDLE nic;

	if (argc > 1 && !strcmp(argv[1], "fake"))
		return fake_library();

	unsetenv("VIADUCT_PROVIDER");
	VDT_CHECK(!fabric_mapped());
	VDT_CHECK(VipOpenNic("/dev/via_lo", &nic) == VIP_SUCCESS);
	VDT_CHECK(VipCloseNic(nic) == VIP_SUCCESS);
	VDT_CHECK(!fabric_mapped());
	printf("ok: a shared-memory NIC leaves libfabric unloaded\n");

	setenv("VIADUCT_JOB_KEY", "00112233445566778899aabbccddeeff", 1);
	setenv("VIADUCT_PROVIDER", "ofi:tcp", 1);
	if (VipOpenNic("/dev/via_lo", &nic) != VIP_SUCCESS) {
		printf("SKIP: the ofi provider cannot open here\n");
		return VDT_SKIP;
	}
	VDT_CHECK(fabric_mapped());
	VDT_CHECK(VipCloseNic(nic) == VIP_SUCCESS);
	/* A second NIC after the first closed: the library stays loaded. */
	VDT_CHECK(VipOpenNic("/dev/via_lo", &nic) == VIP_SUCCESS);
	VDT_CHECK(VipCloseNic(nic) == VIP_SUCCESS);
	printf("ok: an ofi NIC loads libfabric, and a second one opens too\n");
	return 0;
}
