/*
 * `schedlab list --probes` says whether each probe can attach here by trying it: each
 * BPF probe is opened as `run` opens it (its programs through the kernel's verifier,
 * the tracepoint probes attached) and closed. Under an open-files limit too low for
 * any probe, each says so with the limit and the fix, never as a verifier refusal.
 */
#include "tests/cli/cli_run.h"

#include "probes/probes.h"

TestSuite(list_cli, .init = setup, .fini = teardown);

static const char *const bpf_probes[] = { "oncpu", "offcpu", "sched", "runtime", "alloc" };

/* The "here:" line under probe name's line in out_text. */
static const char *here_line(const char *name, char *buf, size_t len)
{
	char head[32];
	const char *p, *nl;

	snprintf(head, sizeof(head), "\n  %-10s ", name);
	p = strstr(out_text, head);
	cr_assert_not_null(p, "%s not listed: %s", name, out_text);
	p = strstr(p + 1, "\n");
	cr_assert_not_null(p, "%s", out_text);
	nl = strchr(p + 1, '\n');
	snprintf(buf, len, "%.*s", nl ? (int)(nl - p - 1) : (int)strlen(p + 1), p + 1);
	cr_assert_not_null(strstr(buf, "here: "), "%s: %s", name, buf);
	return buf;
}

Test(list_cli, each_probe_is_tried_and_can_attach_here, .timeout = 60)
{
	const char *argv[] = { "list", "--probes", NULL };
	char why[256], line[512];

	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("BPF cannot load here: %s", why);
	cr_assert_eq(run_schedlab(argv), 0, "%s", err_text);
	for (size_t i = 0; i < sizeof(bpf_probes) / sizeof(bpf_probes[0]); i++)
		cr_expect_str_eq(here_line(bpf_probes[i], line, sizeof(line)),
				 "               here: can attach", "%s", bpf_probes[i]);
}

/* 12 fds: enough to start and to create a map (what probe_bpf_available() tries), too
 * few to load any probe. libbpf then fails its maps, or caches a feature probe that
 * failed as a feature the kernel lacks, and the verifier refuses the programs left
 * referring to no map: each line must name the limit, not a schedlab bug. */
Test(list_cli, too_few_open_files_is_named_with_the_limit_and_the_fix, .timeout = 60)
{
	char bin[512], why[256], line[512];
	const char *argv[] = { "--nofile=12", bin, "list", "--probes", NULL };

	if (!probe_bpf_available(why, sizeof(why)))
		cr_skip_test("BPF cannot load here: %s", why);
	snprintf(bin, sizeof(bin), "%s/schedlab", schedlab_build());
	cr_assert_eq(run_program("prlimit", argv), 0, "%s", err_text);
	for (size_t i = 0; i < sizeof(bpf_probes) / sizeof(bpf_probes[0]); i++) {
		char named[64];

		here_line(bpf_probes[i], line, sizeof(line));
		cr_expect_not_null(strstr(line, "here: cannot attach: "), "%s", line);
		/* the probe's name heads the line above: the reason does not repeat it */
		snprintf(named, sizeof(named), "cannot attach: %s: ", bpf_probes[i]);
		cr_expect_null(strstr(line, named), "%s", line);
		cr_expect_not_null(strstr(line, "Too many open files"), "%s", line);
		cr_expect_null(strstr(line, "verifier"), "%s", line);
	}
	here_line("offcpu", line, sizeof(line));
	cr_expect_not_null(strstr(line, "raise the open-files limit (ulimit -n, now 12;"), "%s",
			   line);
}

Test(list_cli, rules_prints_the_built_in_rules_as_a_file_rules_takes, .timeout = 60)
{
	const char *list[] = { "list", "--rules", NULL };
	char *want = slurp("analysis/categories.rules", NULL);
	const char *run[] = { "run", "spawn-join", "--quick", "--probes", "oncpu", "--rules",
			      in_dir("my.rules"), "-o", in_dir("s"), NULL };

	cr_assert_not_null(want, "run from the source tree");
	cr_assert_eq(run_schedlab(list), 0, "%s", err_text);
	cr_expect_str_eq(out_text, want, "not the built-in rules verbatim");
	write_file(in_dir("my.rules"), out_text);
	free(want);
	/* what it printed is a rules file run takes */
	cr_expect_eq(run_schedlab(run), 0, "%s", err_text);
}
