/*
 * The offcpu probe as the probe set drives it (harness/offcpu.c) against
 * tests/helpers/sleeper: offcpu.folded and wakers.folded in oncpu.folded's grammar,
 * weighted in microseconds, their totals what the probe kept, and every loss a frame.
 */
#include "tests/probes/sleeper.h"

#include <ftw.h>

#include "analysis/analysis.h"
#include "harness/harness.h"

static char dir[] = "/tmp/schedlab-offcpu-XXXXXX";

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	reap_kids();
	nftw(dir, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

TestSuite(harness_offcpu, .init = setup, .fini = teardown);

/* Open with o, run the sleeper (COUNT MS MODE) under it, finish into dir; the part. */
static void *measure(const struct probe_offcpu_opts *o, const char *count, const char *ms,
		     const char *mode, uint64_t *measured, struct an_probe_part *part)
{
	const struct hx_probe_ops *ops = &hx_offcpu_ops;
	struct sleeper s;
	char why[256];
	void *st = NULL;

	need_bpf();
	cr_assert_eq(hx_offcpu_open(&st, o, why, sizeof(why)), 0, "%s", why);
	sleeper_spawn(&s, count, ms, mode);
	cr_assert_eq(ops->begin(st, s.pid, s.tls_off), 0);
	*measured = sleeper_run(&s);
	cr_assert_eq(ops->end(st, s.pid), 0);
	sleeper_end(&s);
	memset(part, 0, sizeof(*part));
	cr_assert_eq(ops->finish(st, dir, part), 0);
	return st;
}

static struct an_folded *read_folded(const char *name)
{
	char path[256], err[256];
	struct an_folded *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = an_folded_read(path, err, sizeof(err));
	cr_assert_not_null(f, "%s", err);
	return f;
}

/* The microseconds of f's lines that contain every one of the NULL-terminated parts. */
static uint64_t weight_of(const struct an_folded *f, const char *const *parts)
{
	const struct an_folded_line *l;
	uint64_t w = 0;
	size_t n;

	l = an_folded_lines(f, &n);
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		while (parts[k] && strstr(l[i].stack, parts[k]))
			k++;
		if (!parts[k])
			w += l[i].count;
	}
	return w;
}

/* The part's JSON members, written out. */
static void part_json(const struct an_probe_part *part, char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");

	cr_assert_not_null(f);
	part->json(f, part->data);
	fclose(f);
}

/* Intervals whose switch-in the program did not see (counted as "restarted": rare, and
 * each costs the interval it ended, one nap at most), from the part's JSON. The
 * switch-in never reached the tracepoint: perf record -e sched:sched_switch shows the
 * same gaps. A nap is allowed for at its measured length (measured / naps), which under
 * load is well over the nap asked for. */
static double restarted_of(const char *json)
{
	const char *p = strstr(json, "\"restarted\": ");

	cr_assert_not_null(p, "%s", json);
	return strtod(p + strlen("\"restarted\": "), NULL);
}

/* The microseconds the part says the thread spent preempted: switched out runnable,
 * under whatever stack it ran (a clock read around the nap, say). */
static double preempted_us_of(const char *json)
{
	const char *p = strstr(json, "\"preempted_us\": ");

	cr_assert_not_null(p, "%s", json);
	return strtod(p + strlen("\"preempted_us\": "), NULL);
}

/* naps_us, the blocking time folded under the nap, against what the child measured of
 * COUNT naps: its own clocks hold the time it was preempted inside the nap's span too,
 * under stacks that end in the clock read, not in the nap (one make test under two busy
 * loops folded only 66% of the measure under the nap, when this check left preemption
 * out), so the nap's time and the preempted time together must reach the measure, as
 * the probe test's expect_naps_timed has it;
 * the nap's alone must stay within it, and reach the count's naps as asked (the kernel
 * never ends a sleep early). */
static void expect_naps_timed(uint64_t naps_us, const char *json, uint64_t measured,
			      unsigned count, unsigned ms)
{
	double preempted = preempted_us_of(json), restarted = restarted_of(json);
	double floor = (measured - restarted * (double)measured / count) / 1000.0;

	cr_expect((double)naps_us + preempted > 0.95 * floor &&
			  (double)naps_us < 1.05 * measured / 1000.0 &&
			  (double)naps_us > 0.95 * count * ms * 1000.0,
		  "%llu us of naps and %.0f us preempted, the child measured %llu ns of %u "
		  "naps of %u ms, %.0f restarted: %s",
		  (unsigned long long)naps_us, preempted, (unsigned long long)measured, count, ms,
		  restarted, json);
}

Test(harness_offcpu, folded_names_the_nap_under_its_class_in_microseconds)
{
	struct probe_offcpu_opts o = { 0 };
	struct an_probe_part part;
	/* the system call is in raw_syscall4's copy inlined into the nap: a frame of its own */
	const char *nap[] = { "[blocking];offcpu-nap;", ";sleeper_nap;raw_syscall4_[i];-;", "_[k]",
			      NULL };
	const char *own[] = { "bpf_prog_", NULL };
	struct an_folded *f;
	uint64_t measured, us;
	char json[16384], md[16384];
	FILE *m;
	void *st;

	st = measure(&o, "50", "2", "nap", &measured, &part);
	cr_expect_str_eq(part.files[0], "offcpu.folded");
	cr_expect_str_eq(part.files[1], "offcpu.svg");
	cr_expect_null(part.files[2], "no wakers.folded without wakers");
	f = read_folded("offcpu.folded");
	us = weight_of(f, nap);
	part_json(&part, json, sizeof(json));
	expect_naps_timed(us, json, measured, 50, 2);
	cr_expect_eq(weight_of(f, own), 0, "the probe's own frames are not the thread's");
	cr_expect_not_null(strstr(json, "\"by_class_us\": {\"parked\": "), "%s", json);
	{
		char want[64];

		snprintf(want, sizeof(want), "\"folded_us\": %llu",
			 (unsigned long long)an_folded_total(f));
		cr_expect_not_null(strstr(json, want), "folded total in result.json: %s", json);
	}
	m = fmemopen(md, sizeof(md), "w");
	part.md(m, part.data);
	fclose(m);
	cr_expect(!strncmp(md, "### Off-CPU\n", 12), "%s", md);
	cr_expect_not_null(strstr(md, "| blocking |"), "%s", md);
	cr_expect_not_null(strstr(md, "sleeper_nap"), "the top stack names the nap: %s", md);
	an_folded_free(f);
	hx_offcpu_ops.close(st);
}

Test(harness_offcpu, wakers_folded_puts_the_waker_after_the_wait)
{
	struct probe_offcpu_opts o = { .wakers = true };
	struct an_probe_part part;
	const char *wait[] = { ";sleeper_wait;raw_syscall4_[i];-;", NULL };
	struct an_folded *f, *w;
	uint64_t measured;
	void *st;

	st = measure(&o, "30", "2", "pipe", &measured, &part);
	cr_expect_str_eq(part.files[2], "wakers.folded");
	f = read_folded("offcpu.folded");
	w = read_folded("wakers.folded");
	cr_expect_eq(an_folded_total(w), an_folded_total(f), "the same time, waker added");
	/* the waker's user leaf, then its name, end the line: match on the text */
	{
		const struct an_folded_line *l;
		uint64_t by_waker = 0;
		size_t n;

		l = an_folded_lines(w, &n);
		for (size_t i = 0; i < n; i++)
			if (strstr(l[i].stack, ";sleeper_wait;raw_syscall4_[i];-;") &&
			    strstr(l[i].stack, ";--;") &&
			    strstr(l[i].stack, ";sleeper_wake;") &&
			    !strcmp(strrchr(l[i].stack, ';'), ";sleeper-waker"))
				by_waker += l[i].count;
		/* a wait preempted (runnable, never woken) has none: most are the waker's */
		cr_expect_geq(by_waker, 0.5 * weight_of(w, wait),
			      "%llu of %llu us waiting were woken by sleeper_wake",
			      (unsigned long long)by_waker, (unsigned long long)weight_of(w, wait));
	}
	an_folded_free(f);
	an_folded_free(w);
	hx_offcpu_ops.close(st);
}

/* The number after `key` in json, past the first `within` (NULL: from the start). */
static uint64_t json_u64(const char *json, const char *within, const char *key)
{
	const char *p = within ? strstr(json, within) : json;

	cr_assert_not_null(p, "no %s in %s", within, json);
	p = strstr(p, key);
	cr_assert_not_null(p, "no %s after %s in %s", key, within ? within : "", json);
	return strtoull(p + strlen(key), NULL, 10);
}

/* A loss of kind `counter` (result.json's name) as the part's JSON gives it and as
 * `folded` draws it under the `frame`: there, the intervals the JSON counts under "lost"
 * (`lost_key`; NULL: the kind's own name) are the intervals drawn, and the time drawn is
 * the weight under the frame. */
static void expect_drawn(const char *json, const struct an_folded *folded, const char *frame,
			 const char *counter, const char *lost_key)
{
	const char *parts[] = { frame, NULL };
	char key[96], in[96];
	uint64_t counted, drawn, us;

	snprintf(key, sizeof(key), "\"%s\": ", lost_key ? lost_key : counter);
	counted = json_u64(json, "\"lost\": {", key);
	snprintf(in, sizeof(in), "\"lost_frames\": {");
	snprintf(key, sizeof(key), "\"%s\": {\"intervals\": ", counter);
	drawn = json_u64(json, in, key);
	snprintf(key, sizeof(key), "\"%s\": {\"intervals\": %llu, \"us\": ", counter,
		 (unsigned long long)drawn);
	us = json_u64(json, in, key);
	cr_expect_gt(counted, 0, "%s not counted: %s", counter, json);
	cr_expect_eq(drawn, counted, "%s: %llu intervals counted, %llu drawn as %s: %s", counter,
		     (unsigned long long)counted, (unsigned long long)drawn, frame, json);
	cr_expect_gt(us, 0, "%s", json);
	cr_expect_eq(weight_of(folded, parts), us, "%s: %llu us under %s, result.json says %llu",
		     counter, (unsigned long long)weight_of(folded, parts), frame,
		     (unsigned long long)us);
}

/* Run the many-stacks sleeper with o: the folded weight under lost, which must be
 * there, and the folded total in the part's JSON. */
static void expect_lost_frame(const struct probe_offcpu_opts *o, const char *lost,
			      const char *counter)
{
	struct an_probe_part part;
	struct an_folded *f;
	uint64_t measured;
	char json[16384], want[96];
	void *st;

	st = measure(o, "48", "1", "many", &measured, &part);
	f = read_folded("offcpu.folded");
	part_json(&part, json, sizeof(json));
	snprintf(want, sizeof(want), "\"folded_us\": %llu", (unsigned long long)an_folded_total(f));
	cr_expect_not_null(strstr(json, want), "%s", json);
	expect_drawn(json, f, lost, counter, NULL);
	/* the naps are all there, lost parts included. Each 1 ms nap's own measure also holds
	 * its time on a CPU around the sleep, which no interval covers: with both CPUs busy
	 * 47 intervals came to 1.117 ms each against naps of 1.189 ms, hence 0.90 */
	cr_expect_geq((double)an_folded_total(f),
		      0.90 * (measured - restarted_of(json) * (double)measured / 48) / 1000.0,
		      "%llu us folded, %llu ns measured: %s", (unsigned long long)an_folded_total(f),
		      (unsigned long long)measured, json);
	an_folded_free(f);
	hx_offcpu_ops.close(st);
}

Test(harness_offcpu, a_full_stacks_map_is_a_lost_frame)
{
	struct probe_offcpu_opts o = { .stack_entries = 4 };

	expect_lost_frame(&o, "[lost: user stack storage full]", "user_stack_map_full");
}

Test(harness_offcpu, a_full_counts_map_is_a_lost_root)
{
	struct probe_offcpu_opts o = { .count_entries = 2 };

	expect_lost_frame(&o, "[lost: counts map full]", "counts_map_full");
}

/* Naps 200 frames down, deeper than the walk's 127: each nap's user stack ends in a
 * [truncated] frame (the kernel's stack is whole), counted in result.json with the time
 * drawn under it, and the file's total still every microsecond kept. */
Test(harness_offcpu, a_stack_deeper_than_the_walk_is_a_truncated_frame)
{
	struct probe_offcpu_opts o = { 0 };
	const char *truncated[] = { "[blocking];offcpu-nap;[truncated];sleeper_deep;", NULL };
	struct an_probe_part part;
	struct an_folded *f;
	uint64_t measured;
	char json[16384], want[64];
	void *st;

	st = measure(&o, "20", "1", "deep", &measured, &part);
	f = read_folded("offcpu.folded");
	part_json(&part, json, sizeof(json));
	expect_drawn(json, f, "[truncated]", "truncated", NULL);
	/* the naps: cut below their 200 frames of sleeper_deep, their leaf sleeper_nap */
	cr_expect_gt(weight_of(f, truncated), 0, "no nap under [truncated]");
	snprintf(want, sizeof(want), "\"folded_us\": %llu", (unsigned long long)an_folded_total(f));
	cr_expect_not_null(strstr(json, want), "%s", json);
	an_folded_free(f);
	hx_offcpu_ops.close(st);
}

/* With room for one thread's waker, the other thread's wake-ups find the wakers map
 * full: counted, and each interval they ended drawn as [lost: waker map full] in
 * wakers.folded, whose total stays offcpu.folded's. */
Test(harness_offcpu, a_full_wakers_map_is_a_lost_frame_in_wakers_folded)
{
	struct probe_offcpu_opts o = { .wakers = true, .waker_entries = 1 };
	struct an_probe_part part;
	struct an_folded *f, *w;
	uint64_t measured;
	char json[16384];
	void *st;

	st = measure(&o, "20", "2", "pipe", &measured, &part);
	f = read_folded("offcpu.folded");
	w = read_folded("wakers.folded");
	part_json(&part, json, sizeof(json));
	cr_expect_gt(json_u64(json, "\"lost\": {", "\"waker_map_full\": "), 0,
		     "no wake-up found the map full: %s", json);
	expect_drawn(json, w, "[lost: waker map full]", "waker_map_full",
		     "waker_map_full_intervals");
	cr_expect_eq(an_folded_total(w), an_folded_total(f));
	cr_expect_not_null(strstr(json, "\"wakers\": 1,"), "the map's size: %s", json);
	an_folded_free(f);
	an_folded_free(w);
	hx_offcpu_ops.close(st);
}

/* --offcpu-stacks user: the naps end at their user frames, no kernel frame anywhere,
 * and the report and result.json say which stacks were taken. */
Test(harness_offcpu, user_stacks_only_fold_no_kernel_frames)
{
	struct probe_offcpu_opts o = { .stacks = PROBE_OFFCPU_USER };
	struct an_probe_part part;
	const char *kernel[] = { "_[k]", NULL };
	const char *leaf = ";sleeper_nap;raw_syscall4_[i]";
	const struct an_folded_line *l;
	struct an_folded *f;
	uint64_t measured, naps = 0;
	char json[16384], md[16384];
	size_t n;
	FILE *m;
	void *st;

	st = measure(&o, "50", "2", "nap", &measured, &part);
	f = read_folded("offcpu.folded");
	cr_expect_eq(weight_of(f, kernel), 0, "no kernel frame without kernel stacks");
	l = an_folded_lines(f, &n);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(l[i].stack);

		if (strstr(l[i].stack, "[blocking];offcpu-nap;") && len > strlen(leaf) &&
		    !strcmp(l[i].stack + len - strlen(leaf), leaf))
			naps += l[i].count;
	}
	part_json(&part, json, sizeof(json));
	expect_naps_timed(naps, json, measured, 50, 2);
	/* each line's microseconds rounded apart: one each at most */
	cr_expect_leq(an_folded_total(f), naps + preempted_us_of(json) + n,
		      "only the naps and preemptions are folded: %s", json);
	cr_expect_not_null(strstr(json, "\"stacks\": \"user\""), "%s", json);
	cr_expect_not_null(strstr(json, "\"preempted_us\": "), "%s", json);
	m = fmemopen(md, sizeof(md), "w");
	part.md(m, part.data);
	fclose(m);
	cr_expect_not_null(strstr(md, "user stacks)"), "%s", md);
	cr_expect_not_null(strstr(md, "Kernel stacks were not taken"), "%s", md);
	an_folded_free(f);
	hx_offcpu_ops.close(st);
}

/* Without --offcpu-maps the stacks and keys grow with the fork's measured time, twice as
 * fast with wakers, between the probe's defaults and the cap. */
Test(harness_offcpu, its_stacks_and_keys_are_sized_for_the_measured_time)
{
	struct hx_probe_config cfg = { .measure_s = 0.1 };
	unsigned stacks, keys;

	hx_offcpu_maps_for_run(&cfg, &stacks, &keys);
	cr_expect_eq(stacks, PROBE_OFFCPU_STACK_ENTRIES);
	cr_expect_eq(keys, PROBE_OFFCPU_COUNT_ENTRIES);
	cfg.measure_s = 10;
	hx_offcpu_maps_for_run(&cfg, &stacks, &keys);
	cr_expect_eq(stacks, 10 * HX_OFFCPU_STACKS_PER_S);
	cr_expect_eq(keys, 2 * 10 * HX_OFFCPU_STACKS_PER_S);
	cfg.wakers = true;
	hx_offcpu_maps_for_run(&cfg, &stacks, &keys);
	cr_expect_eq(stacks, 2 * 10 * HX_OFFCPU_STACKS_PER_S);
	cr_expect_eq(keys, 4 * 10 * HX_OFFCPU_STACKS_PER_S);
	cfg.measure_s = 1e6;
	hx_offcpu_maps_for_run(&cfg, &stacks, &keys);
	cr_expect_eq(stacks, HX_OFFCPU_STACK_ENTRIES_MAX);
	cr_expect_eq(keys, 2 * HX_OFFCPU_STACK_ENTRIES_MAX);
}
