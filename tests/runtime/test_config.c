/*
 * Knobs and presets: every preset loads whole, every knob of every preset prints and
 * parses back to itself, and a bad knob or value is refused with a message that names
 * what would be accepted.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "runtime/rt.h"

Test(config, every_preset_loads_and_describes_itself)
{
	const char *const *names = rt_preset_names();
	const char *want[] = { "ce", "tokio", "go", "kyo", "kyo-flush", "kyo-tuned",
			       "loom", "ox", "gears", "global", "threads" };
	struct rt_config c;
	size_t n = 0;

	for (; names[n]; n++) {
		cr_expect_eq(rt_config_preset(&c, names[n]), 0);
		cr_expect_str_eq(c.preset, names[n]);
		cr_expect_not_null(rt_preset_describe(names[n]));
	}
	cr_expect_eq(n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_expect_eq(rt_config_preset(&c, want[i]), 0, "%s", want[i]);
	rt_config_default(&c);
	cr_expect_str_eq(c.preset, "ce");
}

Test(config, every_knob_of_every_preset_round_trips)
{
	const char *const *names = rt_preset_names(), *const *knobs = rt_knob_names();

	for (size_t p = 0; names[p]; p++) {
		struct rt_config a, b;
		char v[64], w[64], err[512];

		rt_config_preset(&a, names[p]);
		/* start from another preset, so that every knob has to be set to match */
		rt_config_preset(&b, names[p + 1] ? names[p + 1] : names[0]);
		for (size_t k = 0; knobs[k]; k++) {
			cr_assert_eq(rt_config_get(&a, knobs[k], v, sizeof(v)), 0, "%s", knobs[k]);
			cr_assert_eq(rt_config_set(&b, knobs[k], v, err, sizeof(err)), 0,
				     "%s: %s=%s: %s", names[p], knobs[k], v, err);
		}
		for (size_t k = 0; knobs[k]; k++) {
			rt_config_get(&a, knobs[k], v, sizeof(v));
			rt_config_get(&b, knobs[k], w, sizeof(w));
			cr_expect_str_eq(v, w, "%s: %s", names[p], knobs[k]);
		}
		cr_expect_eq(memcmp(&a.workers, &b.workers, sizeof(a.workers)), 0);
	}
}

Test(config, presets_differ_where_the_runtimes_do)
{
	struct rt_config ce, kyo, tokio, go, loom;

	rt_config_preset(&ce, "ce");
	rt_config_preset(&kyo, "kyo");
	rt_config_preset(&tokio, "tokio");
	rt_config_preset(&go, "go");
	rt_config_preset(&loom, "loom");
	cr_expect_eq(ce.notify, RT_NOTIFY_IF_NO_SEARCHERS);
	cr_expect_eq(kyo.notify, RT_NOTIFY_NEVER);
	cr_expect_not(kyo.idle_steal);
	cr_expect_eq(kyo.blocking, RT_BLOCK_DETECT);
	cr_expect_eq(kyo.detect_us, 2000);
	cr_expect_eq(kyo.detect_samples, 2);
	cr_expect_eq(kyo.adapt, RT_ADAPT_KYO);
	cr_expect_eq(kyo.overflow, RT_OVERFLOW_LOCAL);
	cr_expect_eq(ce.adapt, RT_ADAPT_FIXED);
	cr_expect_eq(ce.overflow, RT_OVERFLOW_GLOBAL);
	cr_expect_eq(tokio.spawn, RT_PLACE_LIFO);
	cr_expect_not(tokio.lifo_stealable);
	cr_expect_eq(tokio.sockets, RT_SOCKETS_PARK, "tokio::net parks the task on the reactor");
	cr_expect_eq(tokio.lifo_polls, 3);
	cr_expect_eq(go.spawn, RT_PLACE_RUNNEXT);
	cr_expect(go.lifo_stealable);
	cr_expect_eq(go.global_interval, 61);
	cr_expect_eq(go.blocking, RT_BLOCK_RETAKE);
	cr_expect_eq(loom.spawn, RT_PLACE_EXTERNAL);
	cr_expect_eq(loom.blocking, RT_BLOCK_COMPENSATE);
}

Test(config, bad_knobs_and_values_name_what_is_accepted)
{
	struct rt_config c;
	char err[1024];

	rt_config_default(&c);
	cr_expect_eq(rt_config_set(&c, "wrokers", "4", err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "'wrokers'") && strstr(err, "workers") && strstr(err, "spawn"), "%s",
		  err);
	cr_expect_eq(rt_config_set(&c, "spawn", "nowhere", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "spawn=nowhere") && strstr(err, "lifo"), "%s", err);
	cr_expect_eq(rt_config_set(&c, "capacity", "100", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "power of two"), "%s", err);
	cr_expect_eq(rt_config_set(&c, "workers", "-1", err, sizeof(err)), -EINVAL);
	cr_expect_eq(rt_config_set(&c, "workers", "999", err, sizeof(err)), -EINVAL);
	cr_expect_eq(rt_config_set(&c, "idle_steal", "maybe", err, sizeof(err)), -EINVAL);
	cr_expect_eq(rt_config_set(&c, "submit", "lifo", err, sizeof(err)), -EINVAL,
		     "submit takes only external or scan");
	cr_expect_null(strchr(err, '\n'));
	cr_expect_eq(rt_config_set(&c, "workers", "4", err, sizeof(err)), 0);
	cr_expect_eq(c.workers, 4);
	cr_expect_eq(rt_config_set(&c, "blocking", "retake", err, sizeof(err)), 0);
	cr_expect_eq(c.blocking, RT_BLOCK_RETAKE);
}

/* rt_sched_new() refuses exactly what rt_config_check() does, with the same errno. */
static void expect_refused(const struct rt_config *c, const char *want1, const char *want2)
{
	char err[1024];

	cr_expect_eq(rt_config_check(c, err, sizeof(err)), -EINVAL, "%s and %s", want1, want2);
	cr_expect(strstr(err, want1) && strstr(err, want2), "%s", err);
	errno = 0;
	cr_expect_null(rt_sched_new(c), "rt_sched_new refuses what rt_config_check does");
	cr_expect_eq(errno, EINVAL);
}

Test(config, knobs_that_cannot_go_together_are_named_with_the_fix)
{
	struct rt_config c;
	char err[1024];

	rt_config_default(&c);
	c.workers = 2;
	c.workers_max = 0;
	cr_expect_eq(rt_config_check(&c, err, sizeof(err)), 0);
	c.workers_min = 4;
	expect_refused(&c, "workers_min=4", "workers_max");
	c.workers_max = 4;
	cr_expect_eq(rt_config_check(&c, err, sizeof(err)), 0);

	c.queue = RT_QUEUE_HEAP;
	c.stack_mode = RT_STACK_COMPACT;
	expect_refused(&c, "queue=heap", "stack_mode=dedicated");
}

Test(config, fewer_max_workers_than_workers_and_threads_with_a_heap_are_refused)
{
	struct rt_config c;
	char err[1024];

	rt_config_default(&c);
	c.workers = 4;
	c.workers_max = 2;
	expect_refused(&c, "workers_max=2", "at least 4");
	c.workers_max = 4;
	cr_expect_eq(rt_config_check(&c, err, sizeof(err)), 0, "%s", err);

	cr_assert_eq(rt_config_preset(&c, "threads"), 0);
	cr_assert_eq(rt_config_set(&c, "queue", "heap", err, sizeof(err)), 0, "%s", err);
	expect_refused(&c, "queue=heap", "executor=threads");

	rt_config_default(&c);
	c.capacity = 6;
	expect_refused(&c, "capacity=6", "power of two");
	rt_config_default(&c);
	c.lifo_polls = 0;
	expect_refused(&c, "lifo_polls", "at least 1");
}
