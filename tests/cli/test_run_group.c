/*
 * `schedlab run --group`: a value that is neither thread nor task is bad input (one line,
 * exit 2, nothing run); a run says its grouping in result.json and report.md and puts it
 * in the command that reproduces it; grouping by task, the folded stacks of the tasks
 * have their entry function as a "[task: NAME]" frame right below the thread, and by
 * thread none has such a frame.
 */
#include <stdbool.h>
#include <stdint.h>

#include "probes/probes.h"
#include "tests/cli/cli_run.h"

TestSuite(run_group, .init = setup, .fini = teardown);

Test(run_group, an_unknown_grouping_is_bad_input)
{
	static const char *const bad[] = { "", "Task", "tasks", "fiber", "thread,task" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *argv[] = { "run", "spawn-join", "--group", bad[i], "--out",
				       in_dir("r"), NULL };

		cr_expect_eq(run_schedlab(argv), 2, "--group '%s'", bad[i]);
		expect_one_error_line("--group");
		cr_expect_not_null(strstr(err_text, "thread and task"), "the choices: %s",
				   err_text);
	}
	cr_expect_eq(entries(), 0, "nothing was created");
}

/* The two kinds of task in a spawn-join fork: the harness's op_task, which runs the
 * operation, and the children it spawns with spawn_join_child. */
static bool known_task(const char *frame)
{
	return !strncmp(frame, ";[task: op_task];", 17) ||
	       !strncmp(frame, ";[task: spawn_join_child];", 26);
}

/* Samples of oncpu.folded with a "[task: " frame: *at_thread those where it is the
 * third frame, right below [category] and the thread; *known those naming one of the
 * fork's two kinds of task. */
static uint64_t task_frames(const char *path, uint64_t *at_thread, uint64_t *known)
{
	char *text = slurp(path, NULL), *line, *save = NULL;
	uint64_t n = 0;

	cr_assert_not_null(text, "%s", path);
	*at_thread = *known = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(line, ' '), *task = strstr(line, ";[task: ");
		const char *p = line;
		int semis = 0;

		cr_assert_not_null(sp, "no count: %s", line);
		if (!task)
			continue;
		n += strtoull(sp + 1, NULL, 10);
		while (p < task)
			semis += *p++ == ';';
		if (semis == 1)
			*at_thread += strtoull(sp + 1, NULL, 10);
		if (known_task(task))
			*known += strtoull(sp + 1, NULL, 10);
	}
	free(text);
	return n;
}

static char *run_with_group(const char *group, const char *out)
{
	const char *with[] = { "run", "spawn-join", "--quick", "--time", "0.2", "--group", group,
			       "--out", out, NULL };
	const char *without[] = { "run", "spawn-join", "--quick", "--time", "0.2", "--out", out,
				  NULL };
	char path[1024], *json, *md;

	cr_assert_eq(run_schedlab(group ? with : without), 0, "stderr: %s", err_text);
	snprintf(path, sizeof(path), "%s/latest/result.json", out);
	json = slurp(path, NULL);
	cr_assert_not_null(json, "%s", path);
	snprintf(path, sizeof(path), "%s/latest/report.md", out);
	md = slurp(path, NULL);
	cr_assert_not_null(md, "%s", path);
	if (group && !strcmp(group, "task")) {
		cr_expect_not_null(strstr(json, "\"group\": \"task\""), "%s", json);
		cr_expect_not_null(strstr(json, " --group task "), "the command: %s", json);
		cr_expect_not_null(strstr(md, "Grouping: by task (--group task)"), "%s", md);
		cr_expect_not_null(strstr(md, " --group task "), "the command: %s", md);
	} else {
		cr_expect_not_null(strstr(json, "\"group\": \"thread\""), "%s", json);
		cr_expect_not_null(strstr(json, " --group thread "), "the command: %s", json);
		cr_expect_not_null(strstr(md, "Grouping: by thread (--group thread)"), "%s", md);
	}
	free(md);
	return json;
}

Test(run_group, by_task_the_tasks_stacks_have_their_entry_below_the_thread, .timeout = 120)
{
	char path[1024], why[256], *json;
	uint64_t at_thread, known, n;

	json = run_with_group("task", in_dir("results"));
	if (!probe_bpf_available(why, sizeof(why))) {
		free(json);
		cr_skip_test("BPF cannot load here: %s", why);
	}
	cr_assert_not_null(strstr(json, "\"attached\": true"), "%s", json);
	snprintf(path, sizeof(path), "%s/latest/oncpu.folded", in_dir("results"));
	n = task_frames(path, &at_thread, &known);
	cr_expect_gt(n, 0, "no sample has a [task: ...] frame");
	cr_expect_eq(at_thread, n, "%llu of %llu task frames right below the thread",
		     (unsigned long long)at_thread, (unsigned long long)n);
	cr_expect_eq(known, n, "%llu of %llu task frames name op_task or spawn_join_child",
		     (unsigned long long)known, (unsigned long long)n);
	free(json);
}

Test(run_group, by_thread_by_default_and_no_task_frame, .timeout = 120)
{
	char path[1024], why[256], *json;
	uint64_t at_thread, known;

	json = run_with_group(NULL, in_dir("default"));
	free(json);
	json = run_with_group("thread", in_dir("thread"));
	if (!probe_bpf_available(why, sizeof(why))) {
		free(json);
		cr_skip_test("BPF cannot load here: %s", why);
	}
	snprintf(path, sizeof(path), "%s/latest/oncpu.folded", in_dir("thread"));
	cr_expect_eq(task_frames(path, &at_thread, &known), 0);
	snprintf(path, sizeof(path), "%s/latest/oncpu.folded", in_dir("default"));
	cr_expect_eq(task_frames(path, &at_thread, &known), 0);
	free(json);
}
