/*
 * schedlab flame — render a folded-stack file as an interactive SVG flame graph.
 *
 * The whole input is read and checked before anything is written, and the SVG goes
 * through a temporary file and a rename: bad input never leaves a partial or stale
 * output behind. Bad input is one line on stderr naming the file (and line) and the
 * fix, with exit status 2. -o - writes to standard output; a device or FIFO is written
 * in place, a symlink through to its target, and a folder or socket is refused
 * (analysis/files.c). SIGINT or SIGTERM stops the read or the write, removes the
 * temporary file and exits 130. With --diff BASELINE.folded the graph is differential:
 * FILE's frames at FILE's widths, each coloured by how its share of FILE's samples
 * differs from its share of BASELINE's (flamegraphs/flamegraph.h).
 */
#include <argp.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "flamegraphs/flamegraph.h"

#define MIN_WIDTH_PX 120
#define MAX_WIDTH_PX 100000

enum {
	OPT_TITLE = 0x100,
	OPT_SUBTITLE,
	OPT_WIDTH,
	OPT_MINWIDTH,
	OPT_COUNTNAME,
	OPT_DIFF,
};

struct flame_args {
	const char *input;
	const char *output;
	const char *baseline; /* --diff: the profile FILE is compared against */
	struct fg_options fg;
	int bad; /* a usage error already reported; the exit status is 2 */
};

static const char doc[] =
	"Render a folded-stack file (flamegraph.pl's 'frame;frame;... COUNT' lines) as an "
	"interactive SVG flame graph: click to zoom, Ctrl-F to search.\n"
	"\n"
	"USAGE: schedlab flame FILE.folded [-o OUT.svg] [--diff BASELINE.folded]\n"
	"         [--title T] [--subtitle S] [--width PX] [--minwidth PX]\n"
	"         [--countname NAME]\n"
	"\n"
	"EXAMPLES:\n"
	"    schedlab flame results/latest/oncpu.folded   # writes oncpu.svg beside it\n"
	"    schedlab flame oncpu.folded -o /tmp/a.svg --title 'spawn-join, ce'\n"
	"    schedlab flame offcpu.folded --countname us --minwidth 1\n"
	"    schedlab flame B/oncpu.folded --diff A/oncpu.folded -o diff.svg\n"
	"\v"
	"--diff draws FILE's stacks at FILE's widths and colours each frame by the change in "
	"its share of the samples, its callees included: red where FILE spends a larger "
	"share than BASELINE, blue where smaller, white where equal, the deepest colour for "
	"the largest change; each tooltip gives both shares. Shares, not counts, so two "
	"profiles of different lengths compare. ('schedlab compare RUN_A RUN_B' draws the "
	"same for two runs, beside the rest of the comparison.)\n"
	"\n"
	"The output defaults to FILE with '.folded' replaced by '.svg'. Exit status: 0 "
	"written, 1 the output could not be written, 2 bad input.";

static const struct argp_option options[] = {
	{ "output", 'o', "OUT.svg", 0, "Write the SVG here (default: FILE.svg)", 0 },
	{ "title", OPT_TITLE, "T", 0, "Title line (default: \"Flame Graph\")", 0 },
	{ "subtitle", OPT_SUBTITLE, "S", 0, "Second line under the title", 0 },
	{ "width", OPT_WIDTH, "PX", 0, "Image width in pixels (default 1200)", 0 },
	{ "minwidth", OPT_MINWIDTH, "PX", 0,
	  "Leave out frames narrower than PX pixels (default 0.1)", 0 },
	{ "countname", OPT_COUNTNAME, "NAME", 0, "What a count is (default \"samples\")", 0 },
	{ "diff", OPT_DIFF, "BASELINE.folded", 0,
	  "A differential graph: FILE's frames coloured by the change in their share against "
	  "BASELINE's", 0 },
	{ 0 },
};

static error_t parse_opt(int key, char *arg, struct argp_state *state)
{
	struct flame_args *a = state->input;
	double d;
	long v;

	switch (key) {
	case 'o':
		if (!*arg) {
			a->bad = cli_usage_error("-o needs a file name, e.g. -o oncpu.svg");
			return EINVAL;
		}
		a->output = arg;
		break;
	case OPT_TITLE:
		a->fg.title = arg;
		break;
	case OPT_SUBTITLE:
		a->fg.subtitle = arg;
		break;
	case OPT_WIDTH:
		if (!cli_parse_long(arg, MIN_WIDTH_PX, MAX_WIDTH_PX, &v)) {
			a->bad = cli_usage_error(
				"--width '%s' is not a whole number of pixels from %d to %d; "
				"e.g. --width 1600",
				arg, MIN_WIDTH_PX, MAX_WIDTH_PX);
			return EINVAL;
		}
		a->fg.width = (unsigned)v;
		break;
	case OPT_MINWIDTH:
		if (!cli_parse_double(arg, 0, MAX_WIDTH_PX, &d)) {
			a->bad = cli_usage_error("--minwidth '%s' is not a number of pixels from 0 "
						 "to %d; e.g. --minwidth 0.5",
						 arg, MAX_WIDTH_PX);
			return EINVAL;
		}
		a->fg.min_width = d;
		break;
	case OPT_DIFF:
		if (!*arg) {
			a->bad = cli_usage_error("--diff needs a folded file, e.g. --diff "
						 "results/A/oncpu.folded");
			return EINVAL;
		}
		a->baseline = arg;
		break;
	case OPT_COUNTNAME:
		if (!*arg) {
			a->bad = cli_usage_error("--countname needs a name, e.g. --countname us");
			return EINVAL;
		}
		a->fg.count_name = arg;
		break;
	case ARGP_KEY_ARG:
		if (a->input) {
			a->bad = cli_usage_error("flame takes one folded file, got '%s' and '%s'; "
						 "render them one at a time",
						 a->input, arg);
			return EINVAL;
		}
		a->input = arg;
		break;
	case ARGP_KEY_END:
		if (!a->input) {
			a->bad = cli_usage_error("flame needs a folded file, e.g. 'schedlab flame "
						 "oncpu.folded' (see 'schedlab flame --help')");
			return EINVAL;
		}
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static void on_signal(int sig)
{
	an_files_interrupt();
}

/* FILE.folded -> FILE.svg; any other name gets ".svg" appended. */
static char *default_output(const char *input)
{
	static const char ext[] = ".folded";
	size_t len = strlen(input), n = sizeof(ext) - 1;
	char *out;

	if (len > n && !strcmp(input + len - n, ext))
		len -= n;
	if (asprintf(&out, "%.*s.svg", (int)len, input) < 0)
		return NULL;
	return out;
}

/* Whether writing output would replace one of the inputs (the same file, reached by
 * any name or link): then it is refused before anything is written, or the graph would
 * be drawn over the stacks it was drawn from. */
static bool overwrites_input(const char *output, const char *const *inputs, size_t n)
{
	struct stat out, in;

	if (!strcmp(output, "-") || stat(output, &out) || !S_ISREG(out.st_mode))
		return false;
	for (size_t i = 0; i < n; i++)
		if (inputs[i] && !stat(inputs[i], &in) && in.st_dev == out.st_dev &&
		    in.st_ino == out.st_ino)
			return true;
	return false;
}

/* Read a folded file for flame; NULL with *status set (and the one line said) when it
 * cannot be. */
static struct an_folded *read_input(const char *path, int *status)
{
	char why[512];
	struct an_folded *f = an_folded_read(path, why, sizeof(why));
	int err;

	if (f)
		return f;
	err = errno;
	if (err == EINTR) {
		cli_usage_error("flame: interrupted while reading %s; nothing written", path);
		*status = CLI_EXIT_INTERRUPTED;
	} else if (err == ENOENT) {
		*status = cli_usage_error("%s; check the path (runs write "
					  "results/<run>/oncpu.folded)",
					  why);
	} else {
		*status = cli_exit_for(err);
		cli_usage_error("%s", why);
	}
	return NULL;
}

int cmd_flame(int argc, char **argv)
{
	static const struct argp argp = { .options = options, .parser = parse_opt,
					  .args_doc = "FILE.folded", .doc = doc };
	struct flame_args a = { 0 };
	char *output = NULL;
	struct an_folded *f, *base = NULL;
	int err, status;

	fg_options_default(&a.fg);
	err = cli_argp_parse(&argp, "flame", argc, argv, &a);
	if (err)
		return a.bad ? a.bad : cli_usage_error("flame: %s", strerror(err));

	{
		struct sigaction sa = { .sa_handler = on_signal };

		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	f = read_input(a.input, &status);
	if (!f)
		return status;
	if (a.baseline) {
		base = read_input(a.baseline, &status);
		if (!base)
			goto out_free_folded;
		a.fg.baseline = base;
	}
	output = a.output ? strdup(a.output) : default_output(a.input);
	if (!output) {
		status = CLI_EXIT_FAIL;
		cli_usage_error("flame: %s", strerror(ENOMEM));
		goto out_free_folded;
	}

	if (overwrites_input(output, (const char *const[]){ a.input, a.baseline }, 2)) {
		status = cli_usage_error("-o %s would write over an input of the graph; name "
					 "another file", output);
		goto out_free_output;
	}
	err = fg_svg_write_user(f, &a.fg, output);
	if (err) {
		status = cli_exit_for(err);
		if (err == -EINTR) {
			status = CLI_EXIT_INTERRUPTED;
			cli_usage_error("flame: interrupted while writing '%s'; it was left as it was",
					output);
		} else if (err == -E2BIG) {
			status = CLI_EXIT_USAGE;
			cli_usage_error("%s: a stack deeper than %d frames cannot be drawn; "
					"cut its stacks to at most %d frames",
					a.input, FG_MAX_DEPTH, FG_MAX_DEPTH);
		} else if (err == -EISDIR || err == -ENXIO)
			cli_usage_error("cannot write '%s': %s; -o takes a file, a device, a FIFO "
					"or - for standard output",
					output, an_file_strerror(err));
		else if (status == CLI_EXIT_USAGE)
			cli_usage_error("cannot write '%s': %s; check that its folder exists "
					"and is writable, or choose another with -o",
					output, an_file_strerror(err));
		else
			cli_usage_error("cannot write '%s': %s", output, an_file_strerror(err));
		goto out_free_output;
	}
	if (an_folded_total(f) == 0)
		fprintf(stderr, "schedlab: %s holds no samples; the graph says so\n", a.input);
	if (base && an_folded_total(base) == 0)
		fprintf(stderr, "schedlab: %s (the baseline) holds no samples: every frame is "
			"new against it\n", a.baseline);
	if (strcmp(output, "-"))
		printf("wrote %s\n", output);
	status = CLI_EXIT_OK;

out_free_output:
	free(output);
out_free_folded:
	an_folded_free(base);
	an_folded_free(f);
	return status;
}
