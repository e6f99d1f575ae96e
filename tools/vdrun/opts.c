/* SPDX-License-Identifier: MIT */
/*
 * vdrun's command line.  Options are read with getopt_long_only, so that
 * the single-dash long options mpiexec users type (-np, -ppn, -genv,
 * -wdir, -host) work next to the short ones (-n, -H, -f, -x, -l) and the
 * GNU ones (--host, --map-by, --oversubscribe, --tag-output).  A long
 * option may be shortened, to two letters at least: a single letter is a
 * short option or an error, never a long option guessed from it.
 *
 * An MPMD line "-n 1 a : -n 2 b" is split at its ":" words first; each
 * context's options are parsed on their own (getopt reset), and stop at
 * the context's program, whose arguments are never read as options.
 * -n belongs to its context, once; every other option applies to the job,
 * and given in two contexts it must have one value (-x per variable).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vdrun.h"

#ifndef VDRUN_VERSION
#define VDRUN_VERSION "unknown"
#endif

void usage(FILE *f)
{
	fputs("usage: vdrun [options] -n N program [args...]\n"
	      "       vdrun [options] -n N program [args...] : -n M program2 [args...] ...\n"
	      "Ranks:\n"
	      "  -n, -np N             start N ranks (1 to 4096 in the whole job); without\n"
	      "                        it, a job of one context with hosts (or --map-by\n"
	      "                        core) has one a slot\n"
	      "  :                     separates application contexts (MPMD): each has its\n"
	      "                        own -n and program, ranks are numbered in order,\n"
	      "                        MPI_COMM_WORLD spans them all\n"
	      "Hosts (default: every rank on this machine):\n"
	      "  -H, --host LIST       hosts, comma-separated: a,b (one slot each) or\n"
	      "                        a:2,b:4 (slots); a host twice adds its slots\n"
	      "  -f, --hostfile FILE   hosts from FILE, one a line: 'host slots=N' (Open MPI)\n"
	      "                        or 'host:N' (MPICH); '#' comments (alias --machinefile)\n"
	      "  --map-by slot|node|core\n"
	      "                        slot: fill each host's slots in order (default);\n"
	      "                        node: one rank per host in turn; core: as slot,\n"
	      "                        each rank bound to its own CPU, and without hosts\n"
	      "                        this machine has a slot per CPU vdrun may use\n"
	      "  -ppn N                N ranks per host (replaces the slot counts)\n"
	      "  --oversubscribe       allow more ranks than slots (else vdrun refuses)\n"
	      "  --launch-agent CMD    reaches other hosts as 'CMD host command...'\n"
	      "                        (default: $VIADUCT_RSH, else ssh)\n"
	      "Ranks' environment and output:\n"
	      "  -x VAR, -x VAR=VAL    export VAR (its value here, or VAL) to every rank\n"
	      "  -genv VAR VAL         the same as -x VAR=VAL\n"
	      "  -wdir DIR             ranks start in DIR (default: vdrun's directory)\n"
	      "  -l, --tag-output      prefix every output line with [rank]\n"
	      "  --bind-to core        pin each rank to one allowed CPU of its host (the\n"
	      "                        default when a host has no more ranks than CPUs;\n"
	      "                        hosts of one machine count each other's ranks)\n"
	      "  --bind-to none        do not pin (the default for more ranks than CPUs)\n"
	      "Other:\n"
	      "  -v, --verbose         print each rank's host and command on stderr first\n"
	      "  --version             print the version\n"
	      "  -h, --help            this text\n"
	      "Environment: VIADUCT_RSH (the launch agent), VIADUCT_VDRUN_TIMEOUT (seconds\n"
	      "a remote host has to connect back, default 30), VIADUCT_VDRUN_LINK_TIMEOUT\n"
	      "(seconds of silence after which the link to a host counts as lost, default 2).\n"
	      "Exit status: 0, the first failing rank's status (128+signal if killed),\n"
	      "2 for a usage error, 126/127 for a program not executable / not found.\n", f);
}

void usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("vdrun: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n", stderr);
	usage(stderr);
	exit(EXIT_USAGE);
}

/* ---- values ---------------------------------------------------------------- */

static int parse_count(const char *opt, const char *s)
{
	long v;

	if (!wire_int(s, 1, VDRUN_MAX_RANKS, &v))
		usage_error("%s: '%s' is not a number of ranks between 1 and %d", opt, s,
			    VDRUN_MAX_RANKS);
	return (int)v;
}

static enum bind_mode parse_bind(const char *s)
{
	if (strcmp(s, "core") == 0)
		return BIND_CORE;
	if (strcmp(s, "none") == 0)
		return BIND_NONE;
	usage_error("--bind-to: '%s' is neither 'core' nor 'none'", s);
}

static enum map_mode parse_map(const char *s)
{
	if (strcmp(s, "slot") == 0)
		return MAP_SLOT;
	if (strcmp(s, "node") == 0)
		return MAP_NODE;
	if (strcmp(s, "core") == 0)
		return MAP_CORE;
	usage_error("--map-by: '%s' is not 'slot', 'node' or 'core'", s);
}

static bool env_name_ok(const char *s, size_t len)
{
	if (len == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

/* -x VAR (its value here: exported as it is now) or -x VAR=VAL. */
static void add_env(struct opts *o, const char *opt, const char *name, size_t nlen,
		    const char *value)
{
	char *n;

	if (!env_name_ok(name, nlen))
		usage_error("%s: '%.*s' is not a variable name", opt, (int)nlen, name);
	if (o->nenv == VDRUN_MAX_ENV)
		usage_error("more than %d -x/-genv variables", VDRUN_MAX_ENV);
	n = strndup(name, nlen);
	if (!n)
		usage_error("out of memory");
	if (!value && !(value = getenv(n)))
		usage_error("%s %s: %s is not set here; give a value: %s %s=VALUE", opt, n, n, opt,
			    n);
	/* The variables go to every context: one given twice with two values
	 * would silently hold one of them in both. */
	for (int i = 0; i < o->nenv; i++) {
		if (strcmp(o->env[i].name, n) != 0)
			continue;
		if (strcmp(o->env[i].value, value) != 0)
			usage_error("%s given twice, with different values ('%s' and '%s'); -x and "
				    "-genv apply to every context of the job", n, o->env[i].value,
				    value);
		free(n);
		return;
	}
	o->env[o->nenv++] = (struct envvar){ .name = n, .value = value };
}

/* Options other than -n apply to the whole job, whichever context names
 * them: given twice, in one context or two, they must agree, for no value
 * is right for one context and silently wrong for the other. */
static void set_once(const char **slot, const char *opt, const char *v)
{
	if (*slot && strcmp(*slot, v) != 0)
		usage_error("%s given twice, with different values", opt);
	*slot = v;
}

/* The same for a number or a mode, unset while 0: the value to keep. */
static int agree(int old, int v, const char *opt)
{
	if (old && old != v)
		usage_error("%s given twice, with different values; it applies to every "
			    "context of the job", opt);
	return v;
}

/* ---- getopt ---------------------------------------------------------------- */

enum {
	OPT_BIND = 256, OPT_MAP, OPT_PPN, OPT_OVERSUB, OPT_WDIR, OPT_GENV, OPT_AGENT,
	OPT_VERSION,
};

static const struct option long_opts[] = {
	{ "np", required_argument, NULL, 'n' },
	{ "host", required_argument, NULL, 'H' },
	{ "hosts", required_argument, NULL, 'H' },
	{ "hostfile", required_argument, NULL, 'f' },
	{ "machinefile", required_argument, NULL, 'f' },
	{ "bind-to", required_argument, NULL, OPT_BIND },
	{ "map-by", required_argument, NULL, OPT_MAP },
	{ "ppn", required_argument, NULL, OPT_PPN },
	{ "oversubscribe", no_argument, NULL, OPT_OVERSUB },
	{ "wdir", required_argument, NULL, OPT_WDIR },
	{ "genv", required_argument, NULL, OPT_GENV },
	{ "tag-output", no_argument, NULL, 'l' },
	{ "launch-agent", required_argument, NULL, OPT_AGENT },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The word of argv that getopt just complained about. */
static const char *bad_word(char **av, int ac)
{
	return optind > 0 && optind <= ac ? av[optind - 1] : "?";
}

/* getopt_long_only reads a single letter that is no short option as the
 * start of a long one: "-o" would be --oversubscribe, and "-v", the
 * verbose flag of other launchers, was --version.  A long option is
 * shortened to two letters at least; word is the one getopt started on. */
static void check_abbrev(const char *word, int longindex)
{
	const char *name = word + 1 + (word[1] == '-');

	if (longindex >= 0 && name[0] && (!name[1] || name[1] == '='))
		usage_error("unknown option '%s' (a long option is shortened to two letters at "
			    "least: -%.2s for --%s)", word, long_opts[longindex].name,
			    long_opts[longindex].name);
}

/* Why getopt refused the word: unknown, or the start of several options. */
static void unknown_option(const char *word)
{
	const char *name = word + 1 + (word[1] == '-');
	size_t len = strcspn(name, "=");
	int matches = 0;

	for (int i = 0; long_opts[i].name && word[0] == '-'; i++)
		matches += len > 0 && strncmp(long_opts[i].name, name, len) == 0;
	if (matches > 1)
		usage_error("ambiguous option '%s': the start of several long options", word);
	usage_error("unknown option '%s'", word);
}

static void one_option(int c, char **av, int ac, struct opts *o, struct app *app)
{
	const char *eq;

	switch (c) {
	case 'n':
		/* One context, one count (as Hydra refuses a duplicate):
		 * "-n 2 -n 3" is a slip, not a request for 3. */
		if (app->n)
			usage_error("context %d: -n given twice", (int)(app - o->apps) + 1);
		app->n = parse_count("-n", optarg);
		break;
	case 'H':
		set_once(&o->host_arg, "-H", optarg);
		break;
	case 'f':
		set_once(&o->hostfile, "--hostfile", optarg);
		break;
	case 'x':
		eq = strchr(optarg, '=');
		add_env(o, "-x", optarg, eq ? (size_t)(eq - optarg) : strlen(optarg),
			eq ? eq + 1 : NULL);
		break;
	case OPT_GENV:
		if (optind >= ac)
			usage_error("-genv %s needs a value: -genv VAR VALUE", optarg);
		add_env(o, "-genv", optarg, strlen(optarg), av[optind++]);
		break;
	case 'l':
		o->tag_output = true;
		break;
	case 'v':
		o->verbose = true;
		break;
	case OPT_BIND:
		o->bind = (enum bind_mode)agree((int)o->bind, (int)parse_bind(optarg), "--bind-to");
		break;
	case OPT_MAP:
		o->map = (enum map_mode)agree((int)o->map, (int)parse_map(optarg), "--map-by");
		break;
	case OPT_PPN:
		o->ppn = agree(o->ppn, parse_count("-ppn", optarg), "-ppn");
		break;
	case OPT_OVERSUB:
		o->oversubscribe = true;
		break;
	case OPT_WDIR:
		if (!*optarg)
			usage_error("-wdir: an empty directory name");
		set_once(&o->wdir, "-wdir", optarg);
		break;
	case OPT_AGENT:
		if (!*optarg || strlen(optarg) >= PATH_MAX)
			usage_error("--launch-agent: an empty or too long command");
		set_once(&o->agent, "--launch-agent", optarg);
		break;
	case OPT_VERSION:
		printf("vdrun (viaduct) %s\n", VDRUN_VERSION);
		exit(0);
	case 'h':
		usage(stdout);
		exit(0);
	case ':':
		usage_error("%s needs a value", bad_word(av, ac));
	default:
		unknown_option(bad_word(av, ac));
	}
}

/* Options of one context: av[1..ac-1] are its words up to its ":".
 * Returns the index in av of its program (ac if none). */
static int parse_options(int ac, char **av, struct opts *o, struct app *app)
{
	int c, at, longindex;

	optind = 0;             /* GNU: start afresh, for each context */
	opterr = 0;             /* our messages, with the usage */
	for (;;) {
		/* A long option is read from a fresh word: the one at optind
		 * (0 means 1 before the first call). */
		at = optind ? optind : 1;
		longindex = -1;
		c = getopt_long_only(ac, av, "+:n:H:f:x:lvh", long_opts, &longindex);
		if (c == -1)
			break;
		if (c != '?' && c != ':' && at < ac)
			check_abbrev(av[at], longindex);
		one_option(c, av, ac, o, app);
	}
	return optind;
}

/* ---- programs -------------------------------------------------------------- */

/* PATH lookup as a shell does: 0, EXIT_NOEXEC or EXIT_NOTFOUND. */
int resolve_in_path(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	bool seen = false;
	struct stat st;

	if (strchr(name, '/')) {
		if (snprintf(out, len, "%s", name) >= (int)len || stat(name, &st) != 0)
			return EXIT_NOTFOUND;
		return !S_ISREG(st.st_mode) || access(name, X_OK) != 0 ? EXIT_NOEXEC : 0;
	}
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path;; p++) {
		const char *colon = strchrnul(p, ':');
		int dirlen = (int)(colon - p);

		if (snprintf(out, len, "%.*s/%s", dirlen ? dirlen : 1, dirlen ? p : ".",
			     name) < (int)len && stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			seen = true;
		}
		if (!*colon)
			break;
		p = colon;
	}
	return seen ? EXIT_NOEXEC : EXIT_NOTFOUND;
}

/* Programs run here are checked here, before anything starts.  One that
 * only remote hosts run is looked up there, by its proxy. */
static void resolve_program(const char *name, char *out, size_t len)
{
	int rc = resolve_in_path(name, out, len);

	if (rc == EXIT_NOTFOUND && strchr(name, '/'))
		fprintf(stderr, "vdrun: %s: %s\n", name, strerror(errno ? errno : ENAMETOOLONG));
	else if (rc == EXIT_NOTFOUND)
		fprintf(stderr, "vdrun: %s: command not found\n", name);
	else if (rc == EXIT_NOEXEC)
		fprintf(stderr, "vdrun: %s: not an executable file\n", name);
	if (rc)
		exit(rc);
}

/* ---- contexts -------------------------------------------------------------- */

/* One application context from argv[start]; returns the index after its
 * ":" (argc at the end).  The ":" becomes the NULL that ends its argv. */
static int parse_app(int argc, char **argv, int start, struct opts *o)
{
	char **sub = calloc((size_t)argc + 1, sizeof(*sub));
	struct app *app;
	int end, ac = 1, prog;

	if (!sub)
		usage_error("out of memory");
	if (o->napps == VDRUN_MAX_APPS)
		usage_error("more than %d application contexts", VDRUN_MAX_APPS);
	app = &o->apps[o->napps];
	for (end = start; end < argc && strcmp(argv[end], ":") != 0; end++)
		;
	sub[0] = argv[0];
	for (int i = start; i < end; i++)
		sub[ac++] = argv[i];
	prog = start + parse_options(ac, sub, o, app) - 1;
	free(sub);
	if (prog >= end)
		usage_error("context %d: the program to run is missing", o->napps + 1);
	if (end < argc && end + 1 == argc)
		usage_error("nothing follows the last ':'");
	if (end < argc)
		argv[end] = NULL;
	app->argv = &argv[prog];
	app->first = o->n;
	if (o->n + app->n > VDRUN_MAX_RANKS)
		usage_error("more than %d ranks in the whole job", VDRUN_MAX_RANKS);
	o->n += app->n;
	o->napps++;
	return end < argc ? end + 1 : argc;
}

/* A path relative to vdrun's directory, made absolute: ranks may start
 * in another (-wdir), and a remote host gets it as is. */
static void absolutize(char *path, size_t len)
{
	char cwd[PATH_MAX], tmp[PATH_MAX];

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return;
	if (snprintf(tmp, sizeof(tmp), "%s/%s", cwd, path) >= (int)sizeof(tmp))
		usage_error("%s: the path is too long", path);
	snprintf(path, len, "%s", tmp);
}

/* Programs are resolved once the placement says which contexts run here;
 * a bare name that only remote hosts run is looked up there. */
static void resolve_programs(struct opts *o)
{
	for (int a = 0; a < o->napps; a++) {
		struct app *app = &o->apps[a];
		bool here = false;

		for (int r = app->first; r < app->first + app->n && !here; r++)
			here = o->hosts[o->host_of[r]].local;
		if (here)
			resolve_program(app->argv[0], app->path, sizeof(app->path));
		else if (snprintf(app->path, sizeof(app->path), "%s", app->argv[0]) >=
			 (int)sizeof(app->path))
			usage_error("%s: the path is too long", app->argv[0]);
		if (strchr(app->path, '/'))
			absolutize(app->path, sizeof(app->path));
	}
}

/* A -wdir this machine cannot enter fails every rank of it: said once,
 * before anything starts.  Other hosts' ranks try it there. */
static void check_wdir(const struct opts *o)
{
	struct stat st;
	int err = 0;
	bool here = false;

	for (int h = 0; h < o->nhosts && !here; h++)
		here = o->hosts[h].local && o->hosts[h].nranks > 0;
	if (!o->wdir || !here)
		return;
	if (stat(o->wdir, &st) != 0)
		err = errno;
	else if (!S_ISDIR(st.st_mode))
		err = ENOTDIR;
	else if (faccessat(AT_FDCWD, o->wdir, X_OK, AT_EACCESS) != 0)
		err = errno;
	if (err) {
		fprintf(stderr, "vdrun: cannot change to directory %s: %s\n", o->wdir, strerror(err));
		exit(1);
	}
}

void parse_args(int argc, char **argv, struct opts *o)
{
	memset(o, 0, sizeof(*o));
	for (int i = 1; i < argc;)
		i = parse_app(argc, argv, i, o);
	if (o->napps == 0)
		usage_error("the number of ranks is missing (-n N)");
	for (int a = 0; a < o->napps; a++)      /* one context may take the slots */
		if (o->apps[a].n == 0 && (o->napps > 1 || (!o->host_arg && !o->hostfile &&
							   o->map != MAP_CORE)))
			usage_error("context %d: the number of ranks is missing (-n N)", a + 1);
	/* --map-by core binds each rank to its core through the default
	 * binding (a rank per CPU while they are no more than the CPUs);
	 * oversubscribed, it leaves them unbound rather than stack spinning
	 * ranks on one core, unless --bind-to core asks for that. */
	if (!o->agent)
		o->agent = getenv("VIADUCT_RSH");
	if (!o->agent || !*o->agent)
		o->agent = "ssh";
	if (strlen(o->agent) >= PATH_MAX)
		usage_error("VIADUCT_RSH: the command is too long");
	hosts_setup(o);
	resolve_programs(o);
	check_wdir(o);
}

/* The context rank r belongs to. */
int app_of_rank(const struct opts *o, int r)
{
	int a = 0;

	while (a + 1 < o->napps && r >= o->apps[a + 1].first)
		a++;
	return a;
}

void opts_free(struct opts *o)
{
	for (int i = 0; i < o->nenv; i++)
		free((char *)o->env[i].name);
	free(o->hosts);
	free(o->host_of);
}
