/* SPDX-License-Identifier: MIT */
/*
 * The link between vdrun and its proxies: text lines of space-separated
 * words over TCP.  Words that carry user data (arguments, environment
 * values, directories) are %XX-encoded, so that a line is always one
 * line and a word always one word.  Everything read from the socket is
 * untrusted: lines have a fixed longest length, numbers a range, and
 * decoding refuses what it did not expect.
 */
#include <errno.h>
#include <sched.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vdrun.h"

/* "BOOT-ID-CPUHASH", or "-" when the boot id cannot be read: hosts that
 * report the same are network namespaces or containers of one machine
 * with the same CPUs, which their ranks share.  (Containers with CPU
 * sets of their own differ in the hash.) */
void cpus_id(char *out, size_t len)
{
	char boot[48] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	cpu_set_t set;
	uint64_t h = 1469598103934665603ull;    /* FNV-1a */

	if (f) {
		if (!fgets(boot, sizeof(boot), f))
			boot[0] = '\0';
		fclose(f);
	}
	boot[strcspn(boot, "\n ")] = '\0';
	CPU_ZERO(&set);
	if (!boot[0] || sched_getaffinity(0, sizeof(set), &set) != 0) {
		snprintf(out, len, "-");
		return;
	}
	for (size_t i = 0; i < sizeof(set); i++)
		h = (h ^ ((const unsigned char *)&set)[i]) * 1099511628211ull;
	snprintf(out, len, "%s-%016llx", boot, (unsigned long long)h);
}

/* Bytes queued for one peer that does not read: the job is broken. */
#define OUTBUF_MAX (64u << 20)

/* ---- line input ------------------------------------------------------------ */

int inbuf_init(struct inbuf *ib, size_t cap)
{
	ib->buf = malloc(cap);
	ib->len = 0;
	ib->cap = cap;
	return ib->buf ? 0 : -ENOMEM;
}

void inbuf_free(struct inbuf *ib)
{
	free(ib->buf);
	ib->buf = NULL;
	ib->len = ib->cap = 0;
}

/* Read what is there: >0 bytes read, 0 EOF, -EAGAIN nothing now,
 * -E2BIG a line longer than the buffer, else -errno. */
int inbuf_read(int fd, struct inbuf *ib)
{
	ssize_t n;

	if (ib->len == ib->cap)
		return -E2BIG;
	do
		n = read(fd, ib->buf + ib->len, ib->cap - ib->len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	ib->len += (size_t)n;
	return (int)n;
}

/* The next complete line from *pos (its newline replaced by a NUL), or
 * NULL; *pos moves past it. */
char *inbuf_line(struct inbuf *ib, size_t *pos)
{
	char *start = ib->buf + *pos, *nl;

	if (*pos >= ib->len || !(nl = memchr(start, '\n', ib->len - *pos)))
		return NULL;
	*nl = '\0';
	*pos = (size_t)(nl + 1 - ib->buf);
	return start;
}

/* Drop the lines handled, up to pos. */
void inbuf_consume(struct inbuf *ib, size_t pos)
{
	memmove(ib->buf, ib->buf + pos, ib->len - pos);
	ib->len -= pos;
}

/* ---- output ------------------------------------------------------------------ */

int outbuf_add(struct outbuf *ob, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ob->err)
		return ob->err;
	for (;;) {
		size_t room = ob->cap - ob->len;

		va_start(ap, fmt);
		n = vsnprintf(ob->buf ? ob->buf + ob->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return ob->err = -EINVAL;
		if ((size_t)n < room) {
			ob->len += (size_t)n;
			return 0;
		}
		size_t cap = ob->cap ? ob->cap * 2 : 4096;
		while (cap - ob->len <= (size_t)n)
			cap *= 2;
		if (cap > OUTBUF_MAX)
			return ob->err = -ENOBUFS;
		char *b = realloc(ob->buf, cap);
		if (!b)
			return ob->err = -ENOMEM;
		ob->buf = b;
		ob->cap = cap;
	}
}

/* Send what the socket takes now: 0 (maybe with bytes left), or -errno. */
int outbuf_flush(int fd, struct outbuf *ob)
{
	size_t off = 0;

	while (off < ob->len) {
		ssize_t n = send(fd, ob->buf + off, ob->len - off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0)
			return n < 0 ? -errno : -EPIPE;
		off += (size_t)n;
	}
	memmove(ob->buf, ob->buf + off, ob->len - off);
	ob->len -= off;
	return 0;
}

void outbuf_free(struct outbuf *ob)
{
	free(ob->buf);
	ob->buf = NULL;
	ob->len = ob->cap = 0;
	ob->err = 0;
}

/* ---- words ------------------------------------------------------------------- */

static bool plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("._/,:+@-", c));
}

/* %XX-encode in; an empty string is "%". 0, or -1 when out is too small. */
int wire_encode(const char *in, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	if (!*in)
		return snprintf(out, len, "%%") < (int)len ? 0 : -1;
	for (; *in; in++) {
		unsigned char c = (unsigned char)*in;

		if (o + 4 > len)
			return -1;
		if (c && plain(c)) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* The reverse: 0, or -1 for a malformed word, a NUL byte or no room. */
int wire_decode(const char *in, char *out, size_t len)
{
	size_t o = 0;

	if (strcmp(in, "%") == 0)
		in = "";
	for (; *in; in++) {
		int c = (unsigned char)*in;

		if (c == '%') {
			int hi = hexval(in[1]), lo = hi < 0 ? -1 : hexval(in[2]);

			if (lo < 0 || (hi == 0 && lo == 0))
				return -1;
			c = hi * 16 + lo;
			in += 2;
		} else if (!plain((unsigned char)c)) {
			return -1;
		}
		if (o + 1 >= len)
			return -1;
		out[o++] = (char)c;
	}
	if (len == 0)
		return -1;
	out[o] = '\0';
	return 0;
}

/* Split a line at single spaces, in place; the number of words, or -1
 * for more than max. */
int wire_words(char *line, char **w, int max)
{
	int n = 0;
	char *save = NULL;

	for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (n == max)
			return -1;
		w[n++] = t;
	}
	return n;
}

/* A decimal integer in [lo, hi], the whole string. */
bool wire_int(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	if (!s || !*s || !(*s == '-' || (*s >= '0' && *s <= '9')))
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* In constant time: a peer must not learn the cookie a byte at a time. */
bool cookie_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char d = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

/* A host that vanishes (powered off, cable pulled) sends no FIN: TCP
 * keepalive notices it after link_timeout_s of silence (two probes a
 * third of it apart, the last at link_timeout_s), instead of never.
 * Keepalive is silent while sent data waits for its ACK (retransmissions
 * would go on for 15 minutes): TCP_USER_TIMEOUT bounds that wait too.
 * Both are answered by the peer's kernel, so a busy peer is not lost;
 * a peer whose window stays shut is not either, as long as it answers
 * the probes (Linux 5.11 and later). */
void tcp_tune(int fd, long link_timeout_s)
{
	int on = 1, cnt = 2;
	int intvl = link_timeout_s >= 3 ? (int)(link_timeout_s / 3) : 1;
	int idle = (int)link_timeout_s - 2 * intvl > 1 ? (int)link_timeout_s - 2 * intvl : 1;
	unsigned int user_timeout_ms = (unsigned int)link_timeout_s * 1000u;

	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof(user_timeout_ms));
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}
