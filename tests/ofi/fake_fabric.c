/* SPDX-License-Identifier: MIT */
/*
 * A library named libfabric.so.1 that is not libfabric: no fi_getinfo,
 * no symbol versions.  test_ofi_lazy_load_fake puts it first on the
 * loader's path; opening an ofi NIC must then fail with a message, not
 * crash.
 */
int vd_fake_fabric(void);

int vd_fake_fabric(void)
{
	return 0;
}
