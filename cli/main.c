/*
 * schedlab — a kernel-instrumented profiling workbench for task runtimes.
 *
 * This file only dispatches to a subcommand; each lives in cmd_<name>.c and parses its
 * own options. Shared helpers for number parsing and error lines are here too.
 */
#include <argp.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "run", cmd_run, "run workloads under the probes; throughput, folded stacks, flame graphs" },
	{ "list", cmd_list, "list workloads, presets, knobs and probes" },
	{ "flame", cmd_flame, "render a folded-stack file as an interactive SVG flame graph" },
	{ "__fork", cmd_fork, NULL }, /* the benchmark process `run` re-executes */
	{ "__tcp-server", cmd_tcp_server, NULL }, /* the tcp workloads' server process */
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: schedlab COMMAND [OPTION...]\n\n"
		     "A profiling workbench for task runtimes: it runs workloads on its own\n"
		     "runtime under eBPF probes and writes throughput (mean ± 99.9%% CI), folded\n"
		     "stacks and flame graphs side by side.\n\nCommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].summary)
			fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nExamples:\n"
		     "  schedlab list\n"
		     "  schedlab run spawn-join workers\n"
		     "  schedlab run spawn-join --quick --probes none\n"
		     "  schedlab flame results/latest/oncpu.folded -o /tmp/oncpu.svg\n\n"
		     "'schedlab COMMAND --help' shows a command's options and examples.\n");
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

int cli_argp_parse(const struct argp *argp, const char *command, int argc, char **argv,
		   void *input)
{
	char name[64], *av[argc + 1];

	snprintf(name, sizeof(name), "schedlab %s", command);
	av[0] = name;
	for (int i = 1; i < argc; i++)
		av[i] = argv[i];
	av[argc] = NULL;
	/* process-wide by nature: argp's own usage errors exit with our status */
	argp_err_exit_status = CLI_EXIT_USAGE;
	return argp_parse(argp, argc, av, 0, NULL, input);
}

bool cli_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!s || !*s)
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

	if (!s || !*s)
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
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	return cli_usage_error("unknown command '%s'; the commands are run, list and flame "
			       "(see 'schedlab --help')",
			       argv[1]);
}
