/*
 * run --probes counters as a user runs it: a real quick run of workers writes each
 * event's count per op into result.json and report.md, n/a with its reason for what the
 * machine cannot count; a name libpfm4 does not know is refused before anything runs,
 * with the closest names; list --events shows what it knows.
 */
#include <json-c/json.h>
#include <math.h>

#include "tests/cli/cli_run.h"

TestSuite(counters_cli, .init = setup, .fini = teardown);

static json_object *event(json_object *events, const char *name)
{
	for (size_t i = 0; i < json_object_array_length(events); i++) {
		json_object *e = json_object_array_get_idx(events, i);

		if (!strcmp(json_object_get_string(json_object_object_get(e, "name")), name))
			return e;
	}
	cr_assert_fail("%s not in the counters", name);
	return NULL;
}

static double num(json_object *o, const char *key)
{
	json_object *v = json_object_object_get(o, key);

	cr_assert_not_null(v, "no %s", key);
	return json_object_get_double(v);
}

Test(counters_cli, a_quick_run_writes_counts_per_op, .timeout = 120)
{
	const char *argv[] = { "run", "workers", "--quick", "--time", "0.1", "--probes", "counters",
			       "--out", in_dir("results"), NULL };
	json_object *j, *ctr, *events, *tc, *cyc, *iters;
	char path[1024], *md;
	double ops;

	cr_assert_eq(run_schedlab(argv), 0, "stderr: %s", err_text);
	snprintf(path, sizeof(path), "%s/latest/result.json", in_dir("results"));
	j = json_object_from_file(path);
	cr_assert_not_null(j, "%s", path);
	ops = num(json_object_object_get(j, "runtime"), "ops");
	cr_assert_gt(ops, 0);
	ctr = json_object_object_get(j, "counters");
	cr_assert_not_null(ctr, "no counters in result.json");
	cr_expect_str_eq(json_object_get_string(json_object_object_get(ctr, "status")), "attached");
	cr_expect(json_object_get_boolean(json_object_object_get(ctr, "attached")));
	/* libpfm4's encoding and perf_event_open of the groups, in the fork */
	cr_expect_gt(num(ctr, "attach_ns"), 0);
	cr_expect_not_null(strstr(json_object_get_string(json_object_object_get(ctr, "summary")),
				  "of 9 events counted"));
	events = json_object_object_get(ctr, "events");
	cr_assert_eq(json_object_array_length(events), 9, "the default events");

	/* software: counted over every thread of the fork, never multiplexed */
	tc = event(events, "perf::task-clock");
	cr_expect(json_object_get_boolean(json_object_object_get(tc, "counted")));
	cr_expect_gt(num(tc, "per_op"), 0);
	cr_expect_float_eq(num(tc, "per_op") * ops, num(tc, "total"), 1e-6 * num(tc, "total"));
	cr_expect_float_eq(num(tc, "running_share"), 1.0, 1e-12);
	iters = json_object_object_get(tc, "per_iteration");
	cr_expect_eq(json_object_array_length(iters), 3, "one per measured iteration");
	for (size_t i = 0; i < json_object_array_length(iters); i++)
		cr_expect_gt(json_object_get_double(json_object_array_get_idx(iters, i)), 0);

	/* hardware: counted where the machine has a PMU, else n/a with the reason */
	cyc = event(events, "cycles");
	if (json_object_get_boolean(json_object_object_get(cyc, "counted"))) {
		cr_expect_gt(num(cyc, "per_op"), 0);
	} else {
		const char *na = json_object_get_string(json_object_object_get(cyc, "na"));

		cr_expect(na && !strncmp(na, "n/a: ", 5) && strlen(na) > 5, "%s", na);
		cr_expect(json_object_is_type(json_object_object_get(cyc, "per_op"),
					      json_type_null), "n/a, not 0");
	}

	snprintf(path, sizeof(path), "%s/latest/report.md", in_dir("results"));
	md = slurp(path, NULL);
	cr_assert_not_null(md);
	cr_expect_not_null(strstr(md, "- **counters**: attached in "), "%s", md);
	cr_expect_not_null(strstr(md, " ms; "), "%s", md);
	cr_expect_not_null(strstr(md, "### Counters"), "%s", md);
	cr_expect_not_null(strstr(md, "| perf::task-clock | "), "%s", md);
	if (!json_object_get_boolean(json_object_object_get(cyc, "counted"))) {
		/* the degraded run says which events were not counted, and why */
		cr_expect_not_null(strstr(md, "| cycles | n/a: "), "%s", md);
		cr_expect_not_null(strstr(md, "not counted: cycles, instructions"), "%s", md);
	}
	/* the command that reproduces the run counts the same events */
	cr_expect_not_null(strstr(json_object_get_string(json_object_object_get(j, "command")),
				  "--probes counters --events cycles,"));
	free(md);
	json_object_put(j);
}

/* --overhead with the counters: the forks without the probes count nothing, so the
 * ratio holds the counters' cost, and the counts are the probed forks' iterations. */
Test(counters_cli, overhead_sets_the_counted_forks_against_forks_counting_nothing,
     .timeout = 120)
{
	const char *argv[] = { "run", "workers", "--quick", "--forks", "2", "--time", "0.05",
			       "--probes", "counters", "--events", "perf::task-clock",
			       "--overhead", "--out", in_dir("results"), NULL };
	json_object *j, *ov, *tc, *iters;
	char path[1024];
	double ops;

	cr_assert_eq(run_schedlab(argv), 0, "stderr: %s", err_text);
	snprintf(path, sizeof(path), "%s/latest/result.json", in_dir("results"));
	j = json_object_from_file(path);
	cr_assert_not_null(j, "%s", path);
	ov = json_object_object_get(j, "overhead");
	cr_assert_not_null(ov);
	cr_expect_str_eq(json_object_get_string(json_object_object_get(ov, "probes")), "counters");
	cr_expect(json_object_get_boolean(json_object_object_get(ov, "measured")));
	cr_expect_gt(num(ov, "ratio"), 0);
	cr_expect_eq(num(json_object_object_get(ov, "without_probes"), "n"), 6);
	cr_expect_gt(num(json_object_object_get(j, "counters"), "attach_ns"), 0);
	ops = num(json_object_object_get(j, "runtime"), "ops");
	tc = event(json_object_object_get(json_object_object_get(j, "counters"), "events"),
		   "perf::task-clock");
	cr_expect_float_eq(num(tc, "per_op") * ops, num(tc, "total"), 1e-6 * num(tc, "total"),
			   "counted over the ops of the probed forks");
	iters = json_object_object_get(tc, "per_iteration");
	cr_assert_eq(json_object_array_length(iters), 6, "the probed forks' iterations");
	for (size_t i = 0; i < json_object_array_length(iters); i++)
		cr_expect_gt(json_object_get_double(json_object_array_get_idx(iters, i)), 0,
			     "iteration %zu", i);
	json_object_put(j);
}

Test(counters_cli, an_unknown_event_is_refused_with_the_closest_names)
{
	const char *argv[] = { "run", "workers", "--quick", "--probes", "oncpu,counters",
			       "--events", "perf::task-clock,instructionz", "--out",
			       in_dir("results"), NULL };

	cr_expect_eq(run_schedlab(argv), 2);
	expect_one_error_line("'instructionz'");
	cr_expect_not_null(strstr(err_text, "closest: perf::instructions"), "%s", err_text);
	cr_expect_eq(entries(), 0, "nothing was created");
}

Test(counters_cli, events_without_the_counters_probe_is_bad_input)
{
	const char *argv[] = { "run", "workers", "--quick", "--events", "perf::task-clock",
			       "--out", in_dir("results"), NULL };
	const char *bad[] = { "run", "workers", "--probes", "counters,offcpux", NULL };

	cr_expect_eq(run_schedlab(argv), 2);
	expect_one_error_line("--probes oncpu,counters");
	cr_expect_eq(run_schedlab(bad), 2);
	expect_one_error_line("'offcpux'");
}

Test(counters_cli, list_events_shows_what_libpfm4_knows)
{
	const char *argv[] = { "list", "--events", NULL };
	const char *probes[] = { "list", "--probes", NULL };

	cr_expect_eq(run_schedlab(argv), 0, "%s", err_text);
	cr_expect_not_null(strstr(out_text, "perf::task-clock"), "%s", out_text);
	cr_expect_not_null(strstr(out_text, "perf::cycles"), "%s", out_text);
	cr_expect_eq(run_schedlab(probes), 0, "%s", err_text);
	cr_expect_not_null(strstr(out_text, "counters"), "%s", out_text);
	cr_expect_not_null(strstr(out_text, "here: software events (perf::) count"), "%s",
			   out_text);
}

/* Two clocks of the same threads: the counters' task-clock over the measured iterations
 * and the on-CPU probe's reading of the fork's process CPU clock from the start of
 * measuring to its end, a window that holds the iterations and the messages between
 * them. CPU time, not wall time, so other work on the CPUs does not matter; counting the
 * harness thread alone, or any thread twice, would be far off. */
Test(counters_cli, task_clock_is_the_forks_cpu_time, .timeout = 120)
{
	const char *argv[] = { "run", "workers", "--quick", "--time", "0.1", "--probes",
			       "oncpu,counters", "--out", in_dir("results"), NULL };
	json_object *j, *probe, *sampling, *tc;
	char path[1024];
	double cpu, clock;

	cr_assert_eq(run_schedlab(argv), 0, "stderr: %s", err_text);
	snprintf(path, sizeof(path), "%s/latest/result.json", in_dir("results"));
	j = json_object_from_file(path);
	cr_assert_not_null(j, "%s", path);
	probe = json_object_array_get_idx(json_object_object_get(j, "probes"), 0);
	cr_assert(json_object_get_boolean(json_object_object_get(probe, "attached")),
		  "root with BTF: oncpu attaches here");
	sampling = json_object_object_get(probe, "sampling");
	cr_assert_not_null(sampling);
	cpu = num(sampling, "cpu_ns");
	tc = event(json_object_object_get(json_object_object_get(j, "counters"), "events"),
		   "perf::task-clock");
	clock = num(tc, "total");
	cr_expect_gt(clock, 0);
	/* the process clock read from outside leaves out what each running thread ran since
	 * its last tick, at either end: a few ms, beside the 10% */
	cr_expect(fabs(clock - cpu) <= 0.1 * cpu + 10e6,
		  "task-clock %.0f ns, the fork's CPU clock %.0f ns; task-clock by iteration %s "
		  "(per op), the probe's window %.0f ns, raw %.0f, running share %g", clock, cpu,
		  json_object_to_json_string(json_object_object_get(tc, "per_iteration")),
		  num(sampling, "window_ns"), num(tc, "raw"), num(tc, "running_share"));
	json_object_put(j);
}
