/* SPDX-License-Identifier: MIT */
/*
 * Where the ranks run: the host list (-H, --hostfile), which of its hosts
 * is this machine, and the placement of ranks on slots (--map-by, -ppn,
 * --oversubscribe).  --map-by core places as slot does, with a slot per
 * core on this machine when there is no host list (a remote host's CPUs
 * are not known before its ranks start: its slots are the list's).  Also the PMI_process_mapping value that tells MPICH
 * programs which ranks share a host.
 *
 * A host names no more than its slots; a host given twice adds its slots,
 * as Open MPI and MPICH both count it.  Host names become words of a
 * remote command line, so they are checked: no host name may begin with
 * '-' (it would be read as an option of ssh).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vdrun.h"

/* ---- names and slots ------------------------------------------------------- */

/* A name, an IPv4 address, or an IPv6 address in brackets. */
static bool host_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= VDRUN_HOST_MAX)
		return false;
	if (!isalnum((unsigned char)s[0]) && !(s[0] == '[' && n > 2 && s[n - 1] == ']'))
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!isalnum(c) && c != '.' && c != '-' && c != '_' && !(s[0] == '[' &&
		    (c == ':' || c == '[' || c == ']' || c == '%')))
			return false;
	}
	return true;
}

static void add_host(struct opts *o, const char *name, int slots, const char *where)
{
	for (int h = 0; h < o->nhosts; h++) {
		if (strcmp(o->hosts[h].name, name) == 0) {
			if (o->hosts[h].slots + slots > VDRUN_MAX_RANKS)
				usage_error("%s: more than %d slots on host %s", where,
					    VDRUN_MAX_RANKS, name);
			o->hosts[h].slots += slots;
			return;
		}
	}
	if (o->nhosts == VDRUN_MAX_HOSTS)
		usage_error("%s: more than %d hosts", where, VDRUN_MAX_HOSTS);
	snprintf(o->hosts[o->nhosts].name, VDRUN_HOST_MAX, "%s", name);
	o->hosts[o->nhosts++].slots = slots;
}

/* "host" or "host:N" ("[v6addr]:N" for an IPv6 address); slots 1 by default. */
static void add_host_spec(struct opts *o, char *spec, const char *where)
{
	char *colon = strrchr(spec, ':'), *close = strrchr(spec, ']');
	long slots = 1;

	if (colon && spec[0] == '[' && close && colon < close)
		colon = NULL;   /* a colon of the address itself */
	if (colon) {
		*colon = '\0';
		if (!wire_int(colon + 1, 1, VDRUN_MAX_RANKS, &slots))
			usage_error("%s: '%s' is not a number of slots (1 to %d) for host %s", where,
				    colon + 1, VDRUN_MAX_RANKS, spec);
	}
	if (!host_name_ok(spec))
		usage_error("%s: '%s' is not a host name", where, spec);
	add_host(o, spec, (int)slots, where);
}

/* -H a,b:2,c */
static void parse_host_arg(struct opts *o, const char *arg)
{
	char *copy = strdup(arg), *save = NULL;

	if (!copy)
		usage_error("out of memory");
	if (!*arg || arg[0] == ',' || arg[strlen(arg) - 1] == ',' || strstr(arg, ",,"))
		usage_error("-H: '%s' has an empty host name", arg);
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
		add_host_spec(o, t, "-H");
	free(copy);
}

/* One line of a hostfile, without its comment: "host", "host:N" (MPICH)
 * or "host slots=N" (Open MPI). */
static void parse_hostfile_line(struct opts *o, char *line, const char *where)
{
	char *save = NULL, *host = strtok_r(line, " \t\r", &save), *w;
	long slots = 0;

	if (!host)
		return;         /* a blank line */
	while ((w = strtok_r(NULL, " \t\r", &save))) {
		if (strncmp(w, "slots=", 6) != 0 || slots)
			usage_error("%s: '%s' is not 'slots=N'", where, w);
		if (!wire_int(w + 6, 1, VDRUN_MAX_RANKS, &slots))
			usage_error("%s: '%s' is not a number of slots (1 to %d)", where, w + 6,
				    VDRUN_MAX_RANKS);
	}
	if (slots && strchr(host, ':') && host[0] != '[')
		usage_error("%s: slots given twice ('%s' and slots=%ld)", where, host, slots);
	if (!slots) {
		add_host_spec(o, host, where);
		return;
	}
	if (!host_name_ok(host))
		usage_error("%s: '%s' is not a host name", where, host);
	add_host(o, host, (int)slots, where);
}

static void parse_hostfile(struct opts *o, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[1024], where[PATH_MAX + 32];
	int lineno = 0;

	if (!f)
		usage_error("--hostfile %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);

		lineno++;
		snprintf(where, sizeof(where), "%s:%d", path, lineno);
		if (len == sizeof(line) - 1 && line[len - 1] != '\n')
			usage_error("%s: a line longer than %zu bytes", where, sizeof(line) - 2);
		line[strcspn(line, "#\n")] = '\0';
		parse_hostfile_line(o, line, where);
	}
	fclose(f);
	if (o->nhosts == 0)
		usage_error("--hostfile %s: no hosts in it", path);
}

/* ---- is it this machine? --------------------------------------------------- */

static bool addr_is_local(const struct sockaddr *sa)
{
	struct ifaddrs *ifs, *i;
	bool local = false;

	if (sa->sa_family == AF_INET &&
	    (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127)
		return true;
	if (getifaddrs(&ifs) != 0)
		return false;
	for (i = ifs; i && !local; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != sa->sa_family)
			continue;
		if (sa->sa_family == AF_INET)
			local = !memcmp(&((const struct sockaddr_in *)sa)->sin_addr,
					&((const struct sockaddr_in *)i->ifa_addr)->sin_addr,
					sizeof(struct in_addr));
		else if (sa->sa_family == AF_INET6)
			local = !memcmp(&((const struct sockaddr_in6 *)sa)->sin6_addr,
					&((const struct sockaddr_in6 *)i->ifa_addr)->sin6_addr,
					sizeof(struct in6_addr));
	}
	freeifaddrs(ifs);
	return local;
}

/* localhost, this machine's name (whole or up to its first dot), or a
 * name or address of one of its interfaces. */
bool host_is_local(const char *name)
{
	char self[VDRUN_HOST_MAX] = "", bare[VDRUN_HOST_MAX];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *a;
	bool local = false;
	size_t len = strlen(name);

	if (strcmp(name, "localhost") == 0)
		return true;
	if (gethostname(self, sizeof(self) - 1) == 0 &&
	    (strcmp(name, self) == 0 || (strncmp(name, self, len) == 0 && self[len] == '.')))
		return true;
	snprintf(bare, sizeof(bare), "%s", name);
	if (bare[0] == '[') {   /* [v6] -> v6 */
		memmove(bare, bare + 1, len);
		bare[strcspn(bare, "]")] = '\0';
	}
	if (getaddrinfo(bare, NULL, &hints, &res) != 0)
		return false;   /* unknown here: maybe the agent knows it */
	for (a = res; a && !local; a = a->ai_next)
		local = addr_is_local(a->ai_addr);
	freeaddrinfo(res);
	return local;
}

/* ---- placement ------------------------------------------------------------- */

/* --map-by core without a host list: this machine has a slot per CPU
 * vdrun may use, the CPUs its ranks are bound to (launch.c). */
static int usable_cpus(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) != 0 || (n = CPU_COUNT(&set)) < 1)
		return 1;
	return n < VDRUN_MAX_RANKS ? n : VDRUN_MAX_RANKS;
}

static int slots_of(const struct opts *o, int h)
{
	return o->ppn ? o->ppn : o->hosts[h].slots;
}

static void place(struct opts *o, int r, int h)
{
	o->host_of[r] = h;
	o->hosts[h].nranks++;
}

/* slot (and core): fill each host's slots in order; past the last,
 * start over. */
static void map_by_slot(struct opts *o)
{
	int r = 0;

	while (r < o->n)
		for (int h = 0; h < o->nhosts && r < o->n; h++)
			for (int s = 0; s < slots_of(o, h) && r < o->n; s++)
				place(o, r++, h);
}

/* node: one rank per host in turn, skipping full hosts while any host
 * has a free slot; past that (oversubscribed), every host in turn. */
static void map_by_node(struct opts *o)
{
	int r = 0, h = 0, total = 0;

	for (int i = 0; i < o->nhosts; i++)
		total += slots_of(o, i);
	for (; r < o->n && r < total; h = (h + 1) % o->nhosts)
		if (o->hosts[h].nranks < slots_of(o, h))
			place(o, r++, h);
	for (h = 0; r < o->n; h = (h + 1) % o->nhosts)
		place(o, r++, h);
}

static void check_slots(const struct opts *o)
{
	long total = 0;

	for (int h = 0; h < o->nhosts; h++)
		total += slots_of(o, h);
	if (o->n > total && !o->oversubscribe)
		usage_error("%d ranks, but only %ld slot(s) on %d host(s); give more hosts or "
			    "slots, or allow it with --oversubscribe", o->n, total, o->nhosts);
}

/* Without -n, a job of one context has a rank per slot, as with mpirun. */
static void ranks_from_slots(struct opts *o)
{
	long total = 0;

	for (int h = 0; h < o->nhosts; h++)
		total += slots_of(o, h);
	if (total > VDRUN_MAX_RANKS)
		usage_error("%ld slots, more than %d ranks: give -n", total, VDRUN_MAX_RANKS);
	o->n = o->apps[0].n = (int)total;
}

void hosts_setup(struct opts *o)
{
	o->hosts = calloc(VDRUN_MAX_HOSTS, sizeof(*o->hosts));
	if (!o->hosts)
		usage_error("out of memory");
	if (o->host_arg)
		parse_host_arg(o, o->host_arg);
	if (o->hostfile)
		parse_hostfile(o, o->hostfile);
	o->have_hosts = o->nhosts > 0;
	if (!o->have_hosts) {   /* this machine: as many ranks as asked */
		snprintf(o->hosts[0].name, VDRUN_HOST_MAX, "localhost");
		o->hosts[0].slots = o->map == MAP_CORE ? usable_cpus() : o->n;
		o->nhosts = 1;
	}
	if (o->n == 0)
		ranks_from_slots(o);
	o->host_of = calloc((size_t)o->n, sizeof(*o->host_of));
	if (!o->host_of)
		usage_error("out of memory");
	if (o->have_hosts || o->ppn || o->map == MAP_CORE)
		check_slots(o);
	for (int h = 0; h < o->nhosts; h++)
		o->hosts[h].local = !o->have_hosts || host_is_local(o->hosts[h].name);
	if (o->map == MAP_NODE)
		map_by_node(o);
	else
		map_by_slot(o);
}

bool job_is_remote(const struct opts *o)
{
	for (int h = 0; h < o->nhosts; h++)
		if (!o->hosts[h].local && o->hosts[h].nranks > 0)
			return true;
	return false;
}

/* ---- -v: the mapping ------------------------------------------------------- */

/* A word as a shell reads it back: quoted when it holds more than
 * letters, digits and a few punctuation marks. */
static void print_word(FILE *f, const char *w)
{
	if (*w && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_-+=.,:/@%") == strlen(w)) {
		fputs(w, f);
		return;
	}
	fputc('\'', f);
	for (; *w; w++) {
		if (*w == '\'')
			fputs("'\\''", f);
		else
			fputc(*w, f);
	}
	fputc('\'', f);
}

/* "vdrun: rank R on HOST: PROGRAM ARGS", a line per rank, so that a job
 * log shows where each rank ran and what it ran. */
void hosts_print(const struct opts *o, FILE *f)
{
	char self[VDRUN_HOST_MAX] = "localhost";

	if (!o->have_hosts && gethostname(self, sizeof(self) - 1) != 0)
		snprintf(self, sizeof(self), "localhost");
	for (int r = 0; r < o->n; r++) {
		int a = app_of_rank(o, r);
		const struct app *app = &o->apps[a];

		fprintf(f, "vdrun: rank %d on %s", r, o->have_hosts ? o->hosts[o->host_of[r]].name : self);
		if (o->napps > 1)
			fprintf(f, " (context %d)", a + 1);
		fputs(": ", f);
		print_word(f, app->path);
		for (int i = 1; app->argv[i]; i++) {
			fputc(' ', f);
			print_word(f, app->argv[i]);
		}
		fputc('\n', f);
	}
	fflush(f);
}

/* ---- PMI_process_mapping --------------------------------------------------- */

/* MPICH's "(vector,(node,nodes,ranks-per-node),...)": each triple places
 * the next ranks, ranks-per-node at a time, on nodes node..node+nodes-1.
 * Every local host is one node (they are one machine).  -1 if it does
 * not fit in len. */
int hosts_mapping(const struct opts *o, char *out, size_t len)
{
	int node_of_host[VDRUN_MAX_HOSTS], nnodes = 0, local_node = -1;
	int a = -1, b = 0, c = 0;       /* the triple being built */
	size_t used = (size_t)snprintf(out, len, "(vector");

	for (int h = 0; h < o->nhosts; h++)
		node_of_host[h] = -1;
	for (int r = 0; r < o->n;) {
		int h = o->host_of[r], run = 0, node;

		if (node_of_host[h] < 0)
			node_of_host[h] = o->hosts[h].local && local_node >= 0 ? local_node : nnodes++;
		if (o->hosts[h].local && local_node < 0)
			local_node = node_of_host[h];
		node = node_of_host[h];
		while (r < o->n && o->host_of[r] == h)
			r++, run++;
		if (a >= 0 && run == c && node == a + b) {
			b++;
			continue;
		}
		if (a >= 0)
			used += (size_t)snprintf(out + used, used < len ? len - used : 0,
						 ",(%d,%d,%d)", a, b, c);
		a = node, b = 1, c = run;
	}
	used += (size_t)snprintf(out + used, used < len ? len - used : 0, ",(%d,%d,%d))", a, b, c);
	return used < len ? 0 : -1;
}
