/*
 * schedlab — a kernel-instrumented profiling workbench for task runtimes.
 *
 * This file only dispatches to a subcommand; each lives in cmd_<name>.c and parses its
 * own options. It also answers --version (the string comes from the VERSION file, via
 * the generated version.h) and `help [COMMAND]`, and gives every command's argp -h
 * beside argp's own -? and --help. Shared helpers for number parsing and error lines
 * are here too.
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "harness/harness.h"
#include "version.h"

/* process-wide by nature: argp reads it to give every command -V and --version */
const char *argp_program_version = "schedlab " SCHEDLAB_VERSION;

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "run", cmd_run, "run workloads under the probes; throughput, folded stacks, flame graphs" },
	{ "list", cmd_list, "list workloads, presets, knobs and probes" },
	{ "flame", cmd_flame, "render a folded-stack file as an interactive SVG flame graph" },
	{ "compare", cmd_compare, "compare two runs: verdict, deltas, differential flame graph" },
	{ "diagnose", cmd_diagnose, "why a run was slow: its findings, ranked, with evidence" },
	{ "sweep", cmd_sweep, "run a grid of parameter values; growth exponents of time and bytes per op" },
	{ "profile", cmd_profile, "profile any program, running (-p PID) or started (-- CMD): stacks, categories, findings" },
	{ "suite", cmd_suite, "run a study's grid: our figures beside the published ones, and whether the shape holds" },
	{ "__fork", cmd_fork, NULL }, /* the benchmark process `run` re-executes */
	{ "__tcp-server", cmd_tcp_server, NULL }, /* the tcp workloads' server process */
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: schedlab COMMAND [OPTION...]\n\n"
		     "A profiling workbench for task runtimes: it runs workloads on its own\n"
		     "runtime under eBPF probes and writes throughput (mean ± 99.9%% CI), folded\n"
		     "stacks and flame graphs side by side; and it profiles any program.\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].summary)
			fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nExamples:\n"
		     "  schedlab list\n"
		     "  schedlab run spawn-join workers\n"
		     "  schedlab run spawn-join --quick --probes none\n"
		     "  schedlab flame results/latest/oncpu.folded -o /tmp/oncpu.svg\n"
		     "  schedlab compare results/RUN_A results/latest\n"
		     "  schedlab diagnose results/latest\n"
		     "  schedlab sweep bind-chain -P depth=1000,2000,5000,10000 --quick\n"
		     "  schedlab suite kyo-blocking --quick\n"
		     "  schedlab profile -- ./server --port 8080\n\n"
		     "'schedlab help COMMAND' (or 'schedlab COMMAND --help') shows a command's\n"
		     "options and examples; 'schedlab --version' its version.\n");
}

/* The commands people run, "run, list, flame, compare, diagnose, sweep, profile and
 * suite", for error lines. */
static const char *command_list(void)
{
	static char buf[128];
	size_t n = 0, left = 0, len = 0;

	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		left += commands[i].summary != NULL;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (!commands[i].summary)
			continue;
		n++;
		len += snprintf(buf + len, sizeof(buf) - len, "%s%s",
				n == 1 ? "" : n == left ? " and " : ", ", commands[i].name);
		if (len >= sizeof(buf))
			break;
	}
	return buf;
}

/* `schedlab help [COMMAND]`: the overview, or the command's own --help. */
static int help(int argc, char **argv)
{
	char help_opt[] = "--help";

	if (argc < 2) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (argc > 2)
		return cli_usage_error("help takes one command, not '%s'; try 'schedlab help %s'",
				       argv[2], argv[1]);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].summary && !strcmp(argv[1], commands[i].name))
			return commands[i].fn(2, (char *[]){ argv[1], help_opt, NULL });
	return cli_usage_error("no help for '%s': the commands are %s", argv[1], command_list());
}

#define MAX_SAMPLE_RATE_PATH "/proc/sys/kernel/perf_event_max_sample_rate"

/* The kernel's sampling ceiling, which it also lowers by itself when samples take too
 * long (perf_cpu_time_max_percent): a --freq above it is throttled, not delivered.
 * 0 when the file cannot be read, and then only the fixed range applies. */
static long kernel_max_sample_rate(void)
{
	FILE *f = fopen(MAX_SAMPLE_RATE_PATH, "re");
	long v = 0;

	if (!f)
		return 0;
	if (fscanf(f, "%ld", &v) != 1 || v < 0)
		v = 0;
	fclose(f);
	return v;
}

int cli_parse_freq(const char *arg, long *freq)
{
	long max_rate = kernel_max_sample_rate();

	if (!cli_parse_long(arg, 1, 100000, freq))
		return cli_usage_error("--freq '%s': expected samples per second from 1 to 100000, "
				       "e.g. --freq 999", arg);
	if (max_rate > 0 && *freq > max_rate)
		return cli_usage_error("--freq '%s': above " MAX_SAMPLE_RATE_PATH " (%ld), the "
				       "most samples per second the kernel delivers; choose at most "
				       "--freq %ld or raise the sysctl", arg, max_rate, max_rate);
	return CLI_EXIT_OK;
}

int cli_parse_call_graph(const char *arg, int *mode)
{
	int cg = hx_callgraph_parse(arg);

	if (cg < 0)
		return cli_usage_error("--call-graph '%s': the modes are fp, dwarf and auto", arg);
	*mode = cg;
	return CLI_EXIT_OK;
}

int cli_parse_out(const char *arg, const char **out)
{
	if (!*arg)
		return cli_usage_error("--out needs a folder, e.g. --out results");
	*out = arg;
	return CLI_EXIT_OK;
}

int cli_use_rules(struct hx_profile *p, const char *path)
{
	char why[512];
	struct an_rules *rules = an_rules_load(path, why, sizeof(why));

	if (!rules)
		return cli_usage_error("--rules %s", why);
	hx_profile_use_rules(p, rules, path);
	return CLI_EXIT_OK;
}

int cli_mkdir_p(const char *dir)
{
	char buf[PATH_MAX];
	struct stat st;

	if (snprintf(buf, sizeof(buf), "%s", dir) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0777) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0777) && errno != EEXIST)
		return -errno;
	/* something that is there already must be a folder (or a link to one) */
	if (stat(buf, &st))
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* A folder that cannot be made, named with the reason: the user's --out when it runs
 * through or onto what is not a folder, a link, or is too long (exit 2); a full,
 * read-only file system is the machine's (exit 1): cli_exit_for()'s table. */
int cli_folder_error(const char *out, const char *path, int err)
{
	if (cli_exit_for(err) == CLI_EXIT_USAGE) {
		cli_usage_error("--out %s: cannot create %s: %s (choose a folder with --out)", out,
				path, strerror(-err));
		return CLI_EXIT_USAGE;
	}
	cli_usage_error("cannot create %s: %s", path, strerror(-err));
	return cli_exit_for(err);
}

/* -h, for the commands whose own options leave the key free. */
static error_t help_key_parse(int key, char *arg, struct argp_state *state)
{
	if (key != 'h')
		return ARGP_ERR_UNKNOWN;
	argp_state_help(state, state->out_stream, ARGP_HELP_STD_HELP);
	return 0;
}

static const struct argp_option help_key_options[] = {
	{ NULL, 'h', NULL, 0, "Give this help list, as --help does", -1 },
	{ 0 },
};

static const struct argp help_key_argp = { .options = help_key_options,
					   .parser = help_key_parse };

static bool argp_uses_key(const struct argp *argp, int key)
{
	for (const struct argp_option *o = argp->options; o && (o->name || o->key || o->doc); o++)
		if (o->key == key)
			return true;
	for (const struct argp_child *c = argp->children; c && c->argp; c++)
		if (argp_uses_key(c->argp, key))
			return true;
	return false;
}

int cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("schedlab: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CLI_EXIT_USAGE;
}

int cli_exit_for(int err)
{
	switch (err < 0 ? -err : err) {
	case 0:
		return CLI_EXIT_OK;
	case EINTR:
		return CLI_EXIT_INTERRUPTED;
	/* a path or an input the user can fix */
	case ENOENT:
	case ENOTDIR:
	case EISDIR:
	case ELOOP:
	case EACCES:
	case EPERM:
	case ENAMETOOLONG:
	case ENXIO:
	case EINVAL: /* AN_ENOTREG */
	case EEXIST: /* AN_EOCCUPIED */
	case EFBIG:
	case E2BIG:
		return CLI_EXIT_USAGE;
	/* the machine's: a full or read-only file system, an I/O error, no memory */
	default:
		return CLI_EXIT_FAIL;
	}
}

int cli_argp_parse(const struct argp *argp, const char *command, int argc, char **argv,
		   void *input)
{
	char name[64], *av[argc + 1];
	size_t nchildren = 0;
	struct argp root = *argp;

	for (const struct argp_child *c = argp->children; c && c->argp; c++)
		nchildren++;

	struct argp_child children[nchildren + 2];

	/* the command's children keep their places, so its child_inputs stay right */
	if (!argp_uses_key(argp, 'h')) {
		for (size_t i = 0; i < nchildren; i++)
			children[i] = argp->children[i];
		children[nchildren] = (struct argp_child){ &help_key_argp, 0, NULL, 0 };
		children[nchildren + 1] = (struct argp_child){ 0 };
		root.children = children;
	}
	snprintf(name, sizeof(name), "schedlab %s", command);
	av[0] = name;
	for (int i = 1; i < argc; i++)
		av[i] = argv[i];
	av[argc] = NULL;
	/* process-wide by nature: argp's own usage errors exit with our status */
	argp_err_exit_status = CLI_EXIT_USAGE;
	return argp_parse(&root, argc, av, 0, NULL, input);
}

/* Decimal as people write it: an optional '-', digits, and for a fraction an optional
 * '.' with digits and an exponent. strtol and strtod take more (leading spaces, '+', hex,
 * "inf"), which a number typed on a command line is not meant to be. */
static bool decimal_syntax(const char *s, bool fraction)
{
	size_t digits = 0;

	if (*s == '-')
		s++;
	for (; *s >= '0' && *s <= '9'; s++)
		digits++;
	if (fraction && *s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++)
			digits++;
	if (!digits)
		return false;
	if (fraction && (*s == 'e' || *s == 'E')) {
		s++;
		if (*s == '-' || *s == '+')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

bool cli_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !decimal_syntax(s, false))
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

bool cli_parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	if (!s || !decimal_syntax(s, true))
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v < min || v > max)
		return false;
	*out = v;
	return true;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "-?")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "help"))
		return help(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("%s\n", argp_program_version);
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	return cli_usage_error("unknown command '%s'; the commands are %s (see 'schedlab --help')",
			       argv[1], command_list());
}
