/* SPDX-License-Identifier: MIT */
/*
 * ofi provider: the job key (VIADUCT_JOB_KEY or ~/.viaduct/job-key) and
 * the keyed hash that authenticates the connection handshake.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prov/ofi/ofi.h"
#include "util/siphash.h"

/* ---- the job key ---------------------------------------------------------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* 32 hex digits -> 128 bits; -EINVAL otherwise. */
static int parse_key(const char *s, uint64_t key[2])
{
	key[0] = key[1] = 0;
	for (int i = 0; i < 32; i++) {
		int v = hexval(s[i]);
		if (v < 0)
			return -EINVAL;
		key[i / 16] = key[i / 16] << 4 | (uint64_t)v;
	}
	return s[32] == '\0' || s[32] == '\n' ? 0 : -EINVAL;
}

/* ~/.viaduct/job-key: made (0600, in a 0700 directory) if missing.  A
 * key file another user could read or write is refused. */
static int key_file(char *path, size_t room)
{
	const char *home = getenv("HOME");
	struct passwd *pw;

	if (!home || !*home) {
		pw = getpwuid(getuid());
		home = pw ? pw->pw_dir : NULL;
	}
	if (!home)
		return -ENOENT;
	snprintf(path, room, "%s/.viaduct", home);
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	snprintf(path, room, "%s/.viaduct/job-key", home);
	return 0;
}

static int key_create(const char *path)
{
	uint64_t k[2];
	char buf[40];
	int fd;

	/* A key that outlives the process: straight from the kernel, waiting
	 * for its entropy if need be. */
	if (getrandom(k, sizeof(k), 0) != (ssize_t)sizeof(k))
		return -EIO;
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return errno == EEXIST ? 0 : -errno;
	snprintf(buf, sizeof(buf), "%016llx%016llx\n", (unsigned long long)k[0],
		 (unsigned long long)k[1]);
	if (write(fd, buf, 33) != 33) {
		close(fd);
		unlink(path);
		return -EIO;
	}
	close(fd);
	return 0;
}

static int key_read(const char *path, uint64_t key[2])
{
	char buf[40] = { 0 };
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		fprintf(stderr, "viaduct: ofi: %s must belong to you and be private (0600)\n", path);
		return -EACCES;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n >= 32 ? parse_key(buf, key) : -EINVAL;
}

int vd_ofi_job_key(uint64_t key[2])
{
	const char *env = getenv("VIADUCT_JOB_KEY");
	char path[512];
	int err;

	if (env && *env) {
		if (parse_key(env, key)) {
			fprintf(stderr, "viaduct: VIADUCT_JOB_KEY must be 32 hex digits\n");
			return -EINVAL;
		}
		return 0;
	}
	err = key_file(path, sizeof(path));
	if (!err)
		err = key_create(path);
	if (!err)
		err = key_read(path, key);
	if (err)
		fprintf(stderr, "viaduct: ofi: no job key (VIADUCT_JOB_KEY or ~/.viaduct/job-key): %s\n",
			strerror(-err));
	return err;
}

uint64_t vd_ofi_mac(const struct vd_ofi_nic *on, const char *label,
		    const void *p, size_t n, uint64_t salt)
{
	uint64_t k[2] = { on->job_key[0] ^ vd_siphash24(on->job_key, label, strlen(label)),
			  on->job_key[1] ^ salt };

	return vd_siphash24(k, p, n);
}

/* ---- interface and addresses -------------------------------------------------------- */
