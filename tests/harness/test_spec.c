/*
 * Specs built from what a user types (harness/spec.c): unknown workloads and presets named
 * with the choices, parameters checked by name and value, and the fork's argument vector
 * carrying every setting.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "harness/harness.h"

Test(spec, unknown_workload_and_preset_are_named_with_the_choices)
{
	struct hx_spec s;
	char err[512];

	cr_expect_eq(hx_spec_init(&s, "spawn-jion", NULL, err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "'spawn-jion'") && strstr(err, "spawn-join"), "%s", err);
	cr_expect_eq(hx_spec_init(&s, "spawn-join", "kyoo", err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "'kyoo'") && strstr(err, "ce"), "%s", err);
	cr_expect_eq(hx_spec_init(&s, "spawn-join", NULL, err, sizeof(err)), 0);
	cr_expect_str_eq(s.rt.preset, "ce");
	cr_expect_eq(s.opt.forks, 3);
	cr_expect_eq(s.opt.warmup, 3);
	cr_expect_eq(s.opt.iterations, 3);
	cr_expect_eq(s.opt.time_s, 1.0);
}

Test(spec, parameters_are_checked_by_name_and_value)
{
	struct hx_spec s;
	char err[512], text[256];

	cr_assert_eq(hx_spec_init(&s, "workers", "ce", err, sizeof(err)), 0);
	cr_expect_eq(hx_spec_param(&s, "rounds=128", err, sizeof(err)), 0);
	cr_expect_eq(hx_spec_param(&s, "round=128", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "'round'") && strstr(err, "rounds"), "%s", err);
	cr_expect_eq(hx_spec_param(&s, "rounds", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "name=value"), "%s", err);
	cr_expect_eq(hx_spec_param(&s, "rounds=-1", err, sizeof(err)), -EINVAL);
	hx_spec_params_text(&s, text, sizeof(text));
	cr_expect_str_eq(text, "workers=8 values=4096 rounds=128");
}

Test(spec, fork_argv_carries_every_setting)
{
	struct hx_spec s;
	char err[512], **argv;
	bool saw_param = false, saw_time = false;

	cr_assert_eq(hx_spec_init(&s, "spawn-join", NULL, err, sizeof(err)), 0);
	cr_assert_eq(hx_spec_param(&s, "n=77", err, sizeof(err)), 0);
	s.opt.time_s = 0.125;
	cr_assert_eq(hx_fork_argv(&s, 9, &argv), 0);
	cr_expect_str_eq(argv[1], "__fork");
	for (size_t i = 0; argv[i]; i++) {
		saw_param |= !strcmp(argv[i], "-Pn=77");
		saw_time |= !strcmp(argv[i], "--time=0.125");
		if (!argv[i + 1])
			cr_expect_str_eq(argv[i], "spawn-join");
	}
	cr_expect(saw_param);
	cr_expect(saw_time);
	hx_fork_argv_free(argv);
}
