/*
 * schedlab __fork: the benchmark process that `schedlab run` re-executes.
 *
 * Its arguments are written by hx_fork_argv() and parsed here with the same spec
 * functions `run` used, so controller and fork always agree on what runs. Not for
 * people: an argument that does not parse means a mismatched binary.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "harness/harness.h"

int cmd_fork(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "fd", required_argument, NULL, 'd' },
		{ "preset", required_argument, NULL, 'p' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "time", required_argument, NULL, 't' },
		{ "events", required_argument, NULL, 'e' },
		{ NULL, 0, NULL, 0 },
	};
	const char *preset = NULL, *events = "", *params[WL_MAX_PARAMS], *knobs[HX_MAX_ASSIGN];
	long fd = -1, warmup = -1, iterations = -1;
	double time_s = -1;
	struct hx_spec spec;
	size_t nparams = 0, nknobs = 0;
	char err[512];
	int c;

	while ((c = getopt_long(argc, argv, "P:c:", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			if (!cli_parse_long(optarg, 0, 1 << 20, &fd))
				return cli_usage_error("__fork: bad --fd %s", optarg);
			break;
		case 'p':
			preset = optarg;
			break;
		case 'w':
			if (!cli_parse_long(optarg, 0, 1000000, &warmup))
				return cli_usage_error("__fork: bad --warmup %s", optarg);
			break;
		case 'i':
			if (!cli_parse_long(optarg, 1, 1000000, &iterations))
				return cli_usage_error("__fork: bad --iterations %s", optarg);
			break;
		case 't':
			if (!cli_parse_double(optarg, 1e-6, 1e6, &time_s))
				return cli_usage_error("__fork: bad --time %s", optarg);
			break;
		case 'e':
			events = optarg;
			break;
		case 'c':
			if (nknobs == HX_MAX_ASSIGN)
				return cli_usage_error("__fork: too many knobs");
			knobs[nknobs++] = optarg;
			break;
		case 'P':
			if (nparams == WL_MAX_PARAMS)
				return cli_usage_error("__fork: too many parameters");
			params[nparams++] = optarg;
			break;
		default:
			return CLI_EXIT_USAGE;
		}
	}
	if (optind != argc - 1 || fd < 0 || warmup < 0 || iterations < 1 || time_s <= 0)
		return cli_usage_error("__fork is run by 'schedlab run', not by hand");
	if (hx_spec_init(&spec, argv[optind], preset, err, sizeof(err)))
		return cli_usage_error("__fork: %s", err);
	for (size_t i = 0; i < nparams; i++)
		if (hx_spec_param(&spec, params[i], err, sizeof(err)))
			return cli_usage_error("__fork: %s", err);
	for (size_t i = 0; i < nknobs; i++)
		if (hx_spec_knob(&spec, knobs[i], err, sizeof(err)))
			return cli_usage_error("__fork: %s", err);
	if (hx_spec_events(&spec, events, err, sizeof(err)))
		return cli_usage_error("__fork: %s", err);
	spec.opt.warmup = (unsigned)warmup;
	spec.opt.iterations = (unsigned)iterations;
	spec.opt.time_s = time_s;
	return hx_fork_main(&spec, (int)fd);
}
