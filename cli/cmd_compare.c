/*
 * schedlab compare RUN_A RUN_B — is B faster than A, how sure, and where the time
 * moved (analysis/compare.c), with a differential flame graph of B against A.
 *
 * Both runs are read and checked before anything is written: a missing folder, a
 * failed run, two workloads or two units are one line on stderr and exit 2. The output
 * folder gets compare.md (what is printed), compare.json and diff.svg, each written
 * whole or not at all (analysis/files.c). 'schedlab run --baseline RUN' calls the same
 * code for the run it has just made.
 */
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "cli/cli.h"
#include "flamegraphs/flamegraph.h"

enum { OPT_JSON = 0x100 };

static const char doc[] =
	"Compare two finished runs of one workload, B against the baseline A: the throughput "
	"ratio B / A with its 99.9% confidence interval (Fieller's theorem over each run's "
	"measured iterations, Welch-Satterthwaite degrees of freedom) and a verdict, faster or "
	"slower only when the interval excludes 1 and the change is beyond a 5% noise band, "
	"cannot tell when the ratio has no interval; "
	"on-CPU category shares side by side, runtime counters per op where they differ "
	"materially, the functions whose own share of the samples changed beyond chance, and "
	"a differential flame graph, diff.svg: B's stacks, red where B spends a larger share "
	"of its samples than A, blue where a smaller one.\n\n"
	"USAGE: schedlab compare RUN_A RUN_B [-o DIR] [--json]\n\n"
	"EXAMPLES:\n"
	"    schedlab run spawn-join --quick && schedlab run spawn-join --quick --preset kyo\n"
	"    schedlab compare results/20261202-010209-spawn-join-ce results/latest\n"
	"    schedlab compare /tmp/a /tmp/b -o /tmp/a-vs-b --json\n"
	"    schedlab run spawn-join --preset kyo --baseline results/latest\n"
	"\v"
	"A run is a folder that 'schedlab run' wrote (or its result.json). The report goes "
	"to DIR, by default a folder compare-<A>-vs-<B> beside B's run folder, as "
	"compare.md (what is printed), compare.json and diff.svg. Exit status: 0 written, 1 "
	"a file could not be written, 2 bad input (a missing run, a failed run, runs of two "
	"workloads or in two units).";

static const struct argp_option options[] = {
	{ "out", 'o', "DIR", 0,
	  "folder for compare.md, compare.json and diff.svg (default: compare-<A>-vs-<B> "
	  "beside B's run folder)",
	  0 },
	{ "json", OPT_JSON, NULL, 0, "print compare.json instead of compare.md", 0 },
	{ 0 },
};

struct compare_args {
	const char *runs[2];
	size_t nruns;
	const char *out;
	bool json;
	int bad;
};

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct compare_args *a = state->input;

	switch (key) {
	case 'o':
		if (!*arg) {
			a->bad = cli_usage_error("-o needs a folder, e.g. -o /tmp/a-vs-b");
			return EINVAL;
		}
		a->out = arg;
		return 0;
	case OPT_JSON:
		a->json = true;
		return 0;
	case ARGP_KEY_ARG:
		if (a->nruns == 2) {
			a->bad = cli_usage_error("compare takes two runs, A and B; '%s' is a third",
						 arg);
			return EINVAL;
		}
		a->runs[a->nruns++] = arg;
		return 0;
	case ARGP_KEY_END:
		if (a->nruns != 2) {
			a->bad = cli_usage_error("compare needs two run folders, e.g. 'schedlab "
						 "compare results/RUN_A results/latest'");
			return EINVAL;
		}
		return 0;
	}
	return ARGP_ERR_UNKNOWN;
}

static void on_signal(int sig)
{
	an_files_interrupt();
}

/* Load a run for comparing: read, and comparable at all. NULL after one line on stderr. */
static struct an_result *load_run(const char *path)
{
	char err[PATH_MAX + 512];
	struct an_result *r = an_result_load(path, err, sizeof(err));

	if (!r) {
		cli_usage_error("%s", err);
		return NULL;
	}
	if (an_compare_check(r, err, sizeof(err))) {
		cli_usage_error("%s", err);
		an_result_free(r);
		return NULL;
	}
	return r;
}

int cli_compare_check_baseline(const char *run, const char *workload)
{
	struct an_result *r = load_run(run);
	const char *w;
	int status = CLI_EXIT_OK;

	if (!r)
		return CLI_EXIT_USAGE;
	w = an_result_str(r, "workload");
	if (!w || strcmp(w, workload))
		status = cli_usage_error("--baseline %s is a run of %s, not of %s: give a run of "
					 "the workload being run", run, w ? w : "(no workload)",
					 workload);
	an_result_free(r);
	return status;
}

/* The default output folder: compare-<A>-vs-<B> beside B's run folder. */
static void default_out(const struct an_result *a, const struct an_result *b, char *buf,
			size_t len)
{
	const char *dir = an_result_dir(b), *slash = strrchr(dir, '/');
	const char *ida = an_result_str(a, "id"), *idb = an_result_str(b, "id");
	int plen = slash ? (int)(slash - dir) : 1;

	if (slash == dir)
		plen = 1; /* a run folder in / */
	snprintf(buf, len, "%.*s/compare-%s-vs-%s", plen, slash ? dir : ".", ida ? ida : "A",
		 idb ? idb : "B");
}

/* The output folder, opened for writing into by name: made when absent (*made set), or
 * an existing folder. One this command chose itself (the default, from the runs' names)
 * must be a real folder of this user's, not a link: a results folder may be shared, and
 * what another user left there is not ours to write into as root. The descriptor, or
 * -1 after one line. */
static int open_out_dir(const char *dir, bool user_named, bool *made, int *status)
{
	struct stat st;
	int fd;

	*made = false;
	if (mkdir(dir, 0777) == 0) {
		*made = true;
	} else if (errno != EEXIST) {
		*status = cli_exit_for(errno);
		cli_usage_error("cannot create %s: %s (choose another folder with -o)", dir,
				strerror(errno));
		return -1;
	} else if (!user_named && (lstat(dir, &st) || !S_ISDIR(st.st_mode) ||
			       st.st_uid != geteuid())) {
		*status = CLI_EXIT_USAGE;
		cli_usage_error("%s exists and is not a folder of this user's (a link, a file, "
				"or another user's): remove it, or choose a folder with -o", dir);
		return -1;
	}
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC | (user_named ? 0 : O_NOFOLLOW));
	if (fd < 0) {
		*status = cli_exit_for(errno);
		cli_usage_error("%s: %s (choose another folder with -o)", dir,
				errno == ENOTDIR ? "exists and is not a folder" : strerror(errno));
		return -1;
	}
	return fd;
}

static int write_md(void *ctx, FILE *out)
{
	return an_compare_markdown(ctx, out);
}

static int write_json(void *ctx, FILE *out)
{
	return an_compare_json(ctx, out);
}

/* One file of the output folder; its exit status, after one line when not 0. */
static int write_error(const char *dir, const char *name, int err)
{
	if (!err)
		return CLI_EXIT_OK;
	if (err == -EINTR)
		cli_usage_error("interrupted while writing %s/%s; it was left as it was", dir,
				name);
	else
		cli_usage_error("%s/%s: cannot write: %s", dir, name, an_file_strerror(err));
	return cli_exit_for(err);
}

/* diff.svg: B's profile, coloured against A's. */
static int write_flame(struct an_compare *c, const struct an_result *a,
		       const struct an_result *b, const char *dir, int dirfd)
{
	const struct an_folded *fa = an_compare_folded(c, 'a'), *fb = an_compare_folded(c, 'b');
	const char *ida = an_result_str(a, "id"), *idb = an_result_str(b, "id");
	char title[256], subtitle[1024], na[32], nb[32];
	struct fg_options fo;
	int err;

	if (!fa || !fb)
		return 0;
	fg_options_default(&fo);
	snprintf(title, sizeof(title), "%s · %s against %s · differential on-CPU",
		 an_result_str(b, "workload"), an_result_str(b, "preset"),
		 an_result_str(a, "preset"));
	an_format_number((double)an_folded_total(fa), 0, na, sizeof(na));
	an_format_number((double)an_folded_total(fb), 0, nb, sizeof(nb));
	snprintf(subtitle, sizeof(subtitle), "B %s (%s samples, drawn) against A %s (%s "
		 "samples) · red: a larger share of B's samples than of A's, blue: a smaller one · "
		 "tooltips: A's share, the change, B's share",
		 idb ? idb : "", nb, ida ? ida : "", na);
	fo.title = title;
	fo.subtitle = subtitle;
	fo.baseline = fa;
	err = fg_svg_write_at(fb, &fo, dirfd, "diff.svg");
	if (err)
		return write_error(dir, "diff.svg", err);
	an_compare_set_flame(c, "diff.svg");
	return 0;
}

/* A failed compare leaves no folder of its own behind: the files it wrote, then the
 * folder it made (rmdir keeps anything someone else put there meanwhile). */
static void remove_out_dir(const char *dir, int dirfd)
{
	static const char *const names[] = { "diff.svg", "compare.md", "compare.json" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlinkat(dirfd, names[i], 0);
	rmdir(dir);
}

int cli_compare_write(const char *run_a, const char *run_b, const char *out,
		      enum cli_compare_print print)
{
	char err[PATH_MAX * 2 + 256], dir[PATH_MAX];
	struct an_result *a, *b = NULL;
	struct an_compare *c = NULL;
	int status = CLI_EXIT_USAGE, dirfd = -1;
	bool made = false;

	a = load_run(run_a);
	if (a)
		b = load_run(run_b);
	if (!b)
		goto out_free;
	c = an_compare_new(a, b, err, sizeof(err));
	if (!c) {
		status = errno == ENOMEM ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
		cli_usage_error("%s", err);
		goto out_free;
	}
	if (out)
		snprintf(dir, sizeof(dir), "%s", out);
	else
		default_out(a, b, dir, sizeof(dir));
	dirfd = open_out_dir(dir, out != NULL, &made, &status);
	if (dirfd < 0)
		goto out_free;
	status = write_flame(c, a, b, dir, dirfd);
	if (!status)
		status = write_error(dir, "compare.md",
				     an_write_file_at(dirfd, "compare.md", write_md, c));
	if (!status)
		status = write_error(dir, "compare.json",
				     an_write_file_at(dirfd, "compare.json", write_json, c));
	if (status) {
		if (made)
			remove_out_dir(dir, dirfd);
		goto out_free;
	}
	if (print == CLI_COMPARE_JSON)
		an_compare_json(c, stdout);
	else if (print == CLI_COMPARE_MD)
		an_compare_markdown(c, stdout);
	fflush(stdout);
	fprintf(stderr, "# written to %s: compare.md, compare.json%s\n", dir,
		an_compare_folded(c, 'a') && an_compare_folded(c, 'b') ? ", diff.svg" : "");
	status = CLI_EXIT_OK;
out_free:
	if (an_files_interrupted())
		status = CLI_EXIT_INTERRUPTED;
	if (dirfd >= 0)
		close(dirfd);
	an_compare_free(c);
	an_result_free(a);
	an_result_free(b);
	return status;
}

int cmd_compare(int argc, char **argv)
{
	static const struct argp argp = { options, parse, "RUN_A RUN_B", doc, NULL, NULL, NULL };
	struct compare_args a = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };

	if (cli_argp_parse(&argp, "compare", argc, argv, &a))
		return a.bad ? a.bad : CLI_EXIT_USAGE;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	return cli_compare_write(a.runs[0], a.runs[1], a.out,
				 a.json ? CLI_COMPARE_JSON : CLI_COMPARE_MD);
}
