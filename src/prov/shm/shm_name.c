/* SPDX-License-Identifier: MIT */
/*
 * shm provider: the names of listening sockets.
 *
 * Abstract Unix socket names carry no permissions: anybody who can guess
 * a name may bind it first.  So every name holds a secret of this user:
 * 128 random bits kept in a file only this user can read, in a directory
 * only this user can enter ($XDG_RUNTIME_DIR/viaduct when the session
 * has one, else /tmp/viaduct-<uid>).  Processes of the same user read the
 * same secret and meet; another user cannot compute the name, so cannot
 * take it.  The sockets stay abstract: they vanish with their process and
 * are scoped to the network namespace, as "hosts" are in our multi-host
 * tests.  The directory and the secret are all that stays behind.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prov/shm/shm_conn.h"

#define SECRET_HEX 32

static char g_secret[SECRET_HEX + 1];
static int g_secret_err;
static pthread_once_t g_secret_once = PTHREAD_ONCE_INIT;

/* fd is ours and nobody else may use it (mode: the bits others may not
 * have).  Logs what is wrong. */
static int owned_privately(int fd, const char *path, mode_t forbidden, bool dir)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (st.st_uid != geteuid() || (st.st_mode & forbidden) ||
	    (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))) {
		vd_log("shm: %s is not a private %s of uid %u (owner %u, mode %03o): "
		       "refusing to use it; remove it", path, dir ? "directory" : "file",
		       (unsigned)geteuid(), (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
		return -EACCES;
	}
	return 0;
}

/* Open (making it 0700 if missing) a directory that must be ours alone. */
static int open_private_dir(const char *path)
{
	int fd, err;

	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err == -ELOOP || err == -ENOTDIR) {
			vd_log("shm: %s is not a directory of ours (a symlink?): refusing "
			       "to use it; remove it", path);
			return -EACCES;
		}
		vd_log("shm: cannot open %s: %s", path, strerror(-err));
		return err;
	}
	err = owned_privately(fd, path, 077, true);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

static int open_user_dir(char *path, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;

	if (xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && st.st_uid == geteuid() &&
	    !(st.st_mode & 077))
		snprintf(path, len, "%s/viaduct", xdg);
	else
		snprintf(path, len, "/tmp/viaduct-%u", (unsigned)geteuid());
	return open_private_dir(path);
}

static bool secret_ok(const char *s, ssize_t n)
{
	if (n != SECRET_HEX)
		return false;
	for (ssize_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Read the secret from dirfd/secret: 0, -ENOENT, or an error. */
static int secret_read(int dirfd, const char *dir)
{
	char path[4200];
	int fd = openat(dirfd, "secret", O_RDONLY | O_NOFOLLOW | O_CLOEXEC), err;
	ssize_t n;

	if (fd < 0)
		return -errno;
	snprintf(path, sizeof(path), "%s/secret", dir);
	err = owned_privately(fd, path, 077, false);
	n = err ? 0 : read(fd, g_secret, SECRET_HEX + 1);
	close(fd);
	if (err)
		return err;
	if (!secret_ok(g_secret, n)) {
		vd_log("shm: %s is damaged; remove it", path);
		return -EPROTO;
	}
	g_secret[SECRET_HEX] = '\0';
	return 0;
}

/* Write a new secret under a private name, then link it into place: a
 * racing process of ours either wins (we read its secret) or loses. */
static int secret_create(int dirfd)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[SECRET_HEX / 2];
	char tmp[64], text[SECRET_HEX];
	int fd, err = 0;

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -EIO;
	for (size_t i = 0; i < sizeof(raw); i++) {
		text[2 * i] = hex[raw[i] >> 4];
		text[2 * i + 1] = hex[raw[i] & 15];
	}
	snprintf(tmp, sizeof(tmp), "secret.%ld", (long)getpid());
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, text, sizeof(text)) != (ssize_t)sizeof(text))
		err = -EIO;
	close(fd);
	if (!err && linkat(dirfd, tmp, dirfd, "secret", 0) && errno != EEXIST)
		err = -errno;
	unlinkat(dirfd, tmp, 0);
	return err;
}

static void secret_init(void)
{
	char dir[4096];
	int dirfd = open_user_dir(dir, sizeof(dir)), err;

	if (dirfd < 0) {
		g_secret_err = dirfd;
		return;
	}
	err = secret_read(dirfd, dir);
	if (err == -ENOENT) {
		err = secret_create(dirfd);
		if (!err)
			err = secret_read(dirfd, dir);
	}
	close(dirfd);
	g_secret_err = err;
}

/* base64url without padding: names must fit sun_path's 108 bytes. */
static char *b64(char *out, const uint8_t *in, size_t n)
{
	static const char al[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	uint32_t acc = 0;
	int bits = 0;

	for (size_t i = 0; i < n; i++) {
		acc = acc << 8 | in[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			*out++ = al[(acc >> bits) & 63];
		}
	}
	if (bits)
		*out++ = al[(acc << (6 - bits)) & 63];
	return out;
}

static uint8_t unhex(char c)
{
	return (uint8_t)(c <= '9' ? c - '0' : c - 'a' + 10);
}

#define B64_LEN(n) (((n) * 4 + 2) / 3)

int vd_shm_sockname(struct sockaddr_un *sa, const struct vd_shm_addr *a, socklen_t *len)
{
	size_t n = (size_t)a->host_len + a->disc_len;
	uint8_t secret[SECRET_HEX / 2];
	char *p = sa->sun_path + 1;

	static_assert(1 + 13 + 10 + 1 + B64_LEN(SECRET_HEX / 2) + 1 +
		      B64_LEN(VD_SHM_ADDR_LEN + VD_SHM_MAX_DISCRIMINATOR) <= sizeof(sa->sun_path),
		      "socket name fits");
	pthread_once(&g_secret_once, secret_init);
	if (g_secret_err)
		return g_secret_err;
	for (size_t i = 0; i < sizeof(secret); i++)
		secret[i] = (uint8_t)(unhex(g_secret[2 * i]) << 4 | unhex(g_secret[2 * i + 1]));
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* Abstract: leading NUL, no terminator counted. */
	p += snprintf(p, sizeof(sa->sun_path) - 1, "viaduct-vipl/%u/", (unsigned)geteuid());
	p = b64(p, secret, sizeof(secret));
	*p++ = '/';
	p = b64(p, a->b, n);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)(p - sa->sun_path));
	return 0;
}
