/*
 * tcp-blocking and tcp-callback: ops and their checks under several presets on the
 * real runtime with a real server process; the server's life (it starts, answers,
 * stops, and dies with a benchmark that dies without teardown) with no descriptor or
 * process left behind; the errors setup and check report; and the headline preset
 * behaviour: under kyo, blocking TCP collapses (the exchanges run one after another on
 * one worker), and kyo-tuned recovers it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/workloads/wl_test.h"

static struct wl_ctx tcp_ctx(const char *name, const char *preset, unsigned workers,
			     const char *delay)
{
	struct wl_ctx ctx;

	wl_test_use_schedlab();
	ctx = wl_test_ctx(name, preset, workers);
	wl_test_param(&ctx, "delay", delay);
	return ctx;
}

/* Two ops on the same connections: the second finds them as the first left them. */
static void two_ops_under(const char *name, const char *preset)
{
	struct wl_ctx ctx = tcp_ctx(name, preset, 2, "100");
	char err[512] = "";

	cr_expect_eq(wl_int(&ctx, "conns"), 64, "the studies' size is the default");
	cr_expect_eq(wl_int(&ctx, "exchanges"), 256);
	wl_test_setup(&ctx);
	for (int i = 0; i < 2; i++)
		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s under %s, op %d: %s", name,
			  preset, i + 1, err);
	wl_test_finish(&ctx);
}

static const char *const presets[] = { "ce", "tokio", "go", "kyo", "kyo-flush", "loom", "global" };

Test(tcp_blocking, ops_check_under_2_workers_and_each_pool_preset, .timeout = 120)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		two_ops_under("tcp-blocking", presets[i]);
}

Test(tcp_callback, ops_check_under_2_workers_and_each_pool_preset, .timeout = 120)
{
	for (size_t i = 0; i < sizeof(presets) / sizeof(presets[0]); i++)
		two_ops_under("tcp-callback", presets[i]);
	two_ops_under("tcp-callback", "threads");
}

/* rt_blocking_end() on a task of the threads executor (a section begun without a
 * worker) suspends the task into the pool, which has no workers: the op never ends.
 * Enable once runtime/blocking.c ends such a section in place. */
Test(tcp_blocking, ops_check_under_the_threads_executor, .timeout = 60)
{
	two_ops_under("tcp-blocking", "threads");
}

Test(tcp_blocking, uneven_exchanges_and_no_delay_still_check, .timeout = 60)
{
	struct wl_ctx ctx = tcp_ctx("tcp-blocking", "ce", 2, "0");
	char err[512] = "";

	wl_test_param(&ctx, "conns", "7");
	wl_test_param(&ctx, "exchanges", "100"); /* 2 connections do 15, 5 do 14 */
	wl_test_setup(&ctx);
	for (int i = 0; i < 3; i++)
		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "op %d: %s", i + 1, err);
	wl_test_finish(&ctx);
}

/* ---- the server's life ------------------------------------------------------------------ */

static bool process_gone(pid_t pid)
{
	char path[64], state = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return true;
	/* "pid (comm) S ...": a zombie has exited and holds nothing but its slot */
	if (fscanf(f, "%*d (%*[^)]) %c", &state) != 1)
		state = 0;
	fclose(f);
	return state == 'Z' || state == 'X';
}

Test(tcp_server, starts_answers_and_stops_leaving_no_descriptor_or_process, .timeout = 60)
{
	const char *names[] = { "tcp-blocking", "tcp-callback" };

	for (size_t k = 0; k < 2; k++) {
		int fds = wl_test_open_fds();
		struct wl_ctx ctx = tcp_ctx(names[k], "ce", 2, "100");
		pid_t kids[8];
		char err[512] = "";

		cr_assert_eq(wl_test_children(kids, 8), 0, "no child before setup");
		wl_test_setup(&ctx);
		cr_assert_eq(wl_test_children(kids, 8), 1, "%s: one server process", names[k]);
		/* 64 connections and the control socket */
		cr_expect_eq(wl_test_open_fds(), fds + 65, "%s", names[k]);
		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s", err);
		ctx.desc->teardown(&ctx);
		cr_expect_eq(wl_test_children(kids + 1, 7), 0, "%s: the server is reaped",
			     names[k]);
		cr_expect(kill(kids[0], 0) && errno == ESRCH, "%s: server %d still exists",
			  names[k], (int)kids[0]);
		/* the runtime's reactor (epoll and eventfd) lives until rt_sched_free() */
		rt_sched_free(ctx.sched);
		cr_expect_eq(wl_test_open_fds(), fds, "%s: every descriptor closed", names[k]);
	}
}

/* A benchmark killed before its teardown: the server sees its control socket close and
 * exits rather than outliving it. */
Test(tcp_server, exits_when_its_benchmark_dies_without_teardown, .timeout = 60)
{
	int p[2], status;
	pid_t child, server = 0;

	wl_test_use_schedlab();
	cr_assert_eq(pipe(p), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (child == 0) {
		/* a fresh process: no runtime threads until the one made here */
		struct rt_config c;
		struct wl_ctx ctx = { .desc = wl_find("tcp-blocking") };
		pid_t kids[2] = { 0, 0 };
		char err[512];

		rt_config_default(&c);
		c.workers = 2;
		ctx.sched = rt_sched_new(&c);
		wl_params_default(ctx.desc, ctx.values);
		if (!ctx.sched || ctx.desc->setup(&ctx, err, sizeof(err)) ||
		    wl_test_children(kids, 2) != 1 ||
		    write(p[1], &kids[0], sizeof(kids[0])) != sizeof(kids[0]))
			_exit(1);
		_exit(0); /* no teardown: as if killed */
	}
	close(p[1]);
	cr_assert_eq(read(p[0], &server, sizeof(server)), sizeof(server), "the child set up");
	close(p[0]);
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	for (int i = 0; i < 500 && !process_gone(server); i++)
		usleep(10000);
	cr_expect(process_gone(server), "server %d outlived its benchmark", (int)server);
	if (!process_gone(server))
		kill(server, SIGKILL);
}

/* ---- errors ----------------------------------------------------------------------------- */

Test(tcp_blocking, setup_says_when_the_binary_is_no_schedlab, .timeout = 60)
{
	struct wl_ctx ctx = tcp_ctx("tcp-blocking", "ce", 2, "100");
	int fds = wl_test_open_fds();
	pid_t kids[2];
	char err[512] = "";

	setenv("SCHEDLAB_EXE", "/bin/true", 1);
	cr_expect_neq(ctx.desc->setup(&ctx, err, sizeof(err)), 0);
	cr_expect(strstr(err, "tcp-blocking: cannot start the server"), "%s", err);
	cr_expect(strstr(err, "/bin/true") && strstr(err, "exited with status 0"), "%s", err);
	cr_expect(strstr(err, "SCHEDLAB_EXE"), "%s", err);
	cr_expect_null(strchr(err, '\n'), "one line: %s", err);
	setenv("SCHEDLAB_EXE", "/nonexistent/schedlab", 1);
	cr_expect_eq(ctx.desc->setup(&ctx, err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "cannot start the server") && strstr(err, "No such file"), "%s", err);
	cr_expect_eq(wl_test_open_fds(), fds, "a failed setup leaves nothing open");
	cr_expect_eq(wl_test_children(kids, 2), 0, "nor any process");
	rt_sched_free(ctx.sched);
}

Test(tcp_blocking, bad_parameters_are_refused_with_their_bounds)
{
	const struct wl_desc *d = wl_find("tcp-blocking");
	char err[256];

	cr_assert_not_null(d);
	cr_expect_eq(wl_test_parse(d, "conns", "0", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "conns=0") && strstr(err, "1 to 512"), "%s", err);
	cr_expect_eq(wl_test_parse(d, "conns", "513", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(d, "exchanges", "0", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(d, "delay", "-1", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(d, "delay", "1ms", err, sizeof(err)), -EINVAL);
	cr_expect_eq(wl_test_parse(d, "delay", "0", err, sizeof(err)), 0);
	cr_expect_eq(wl_test_parse(wl_find("tcp-callback"), "conns", "1000", err, sizeof(err)),
		     -EINVAL);
}

Test(tcp_blocking, check_names_a_dead_server_and_a_wrong_fold, .timeout = 60)
{
	const char *names[] = { "tcp-blocking", "tcp-callback" };

	for (size_t k = 0; k < 2; k++) {
		struct wl_ctx ctx = tcp_ctx(names[k], "ce", 2, "100");
		pid_t kids[2];
		char err[512] = "";
		uint64_t good;

		wl_test_setup(&ctx);
		good = wl_test_op(&ctx);
		cr_expect(ctx.desc->check(&ctx, good, err, sizeof(err)), "%s", err);
		cr_expect_not(ctx.desc->check(&ctx, good + 1, err, sizeof(err)));
		cr_expect(strstr(err, names[k]) && strstr(err, "out of order"), "%s", err);

		cr_assert_eq(wl_test_children(kids, 2), 1);
		kill(kids[0], SIGKILL);
		cr_expect_not(wl_test_op_check(&ctx, err, sizeof(err)), "%s: no server", names[k]);
		cr_expect(strstr(err, "the server closed the connection"), "%s", err);
		wl_test_finish(&ctx); /* reaps the killed server */
		cr_expect_eq(wl_test_children(kids, 2), 0);
	}
}

/* ---- the preset behaviour: Kyo's blocking-TCP collapse -------------------------------- */

struct tcp_rate {
	double ops_per_s;
	struct rt_worker_stats st;
	unsigned workers;
};

/* ops/s of tcp-blocking with the server's 1 ms delay under preset, as configured (its
 * own worker count): one op to warm up, then ops for at least min_s, checking each. */
static struct tcp_rate blocking_rate(const char *preset, double min_s)
{
	struct wl_ctx ctx = tcp_ctx("tcp-blocking", preset, 0, "1000");
	struct rt_worker_stats before;
	struct tcp_rate r = { 0 };
	char err[512] = "";
	uint64_t t0, t, n = 0;

	wl_test_setup(&ctx);
	cr_assert(wl_test_op_check(&ctx, err, sizeof(err)), "%s: warm-up: %s", preset, err);
	rt_sched_stats_total(ctx.sched, &before);
	t0 = rt_now_ns();
	do {
		cr_assert(wl_test_op_check(&ctx, err, sizeof(err)), "%s: %s", preset, err);
		n++;
		t = rt_now_ns();
	} while (t - t0 < (uint64_t)(min_s * 1e9) || n < 3);
	rt_sched_stats_total(ctx.sched, &r.st);
	for (size_t i = 0; i < sizeof(r.st) / sizeof(uint64_t); i++)
		((uint64_t *)&r.st)[i] -= ((const uint64_t *)&before)[i];
	r.ops_per_s = (double)n / ((double)(t - t0) / 1e9);
	r.workers = rt_sched_workers(ctx.sched);
	wl_test_finish(&ctx);
	return r;
}

static void rate_describe(const char *preset, const struct tcp_rate *r, char *buf, size_t len)
{
	snprintf(buf, len,
		 "%s: %.1f ops/s on %u workers (place local %llu scan %llu fallback %llu flush "
		 "%llu, stolen %llu, missed_idle %llu, stranded %.0f ms, detector misses %llu "
		 "flags %llu, handoffs %llu)",
		 preset, r->ops_per_s, r->workers, (unsigned long long)r->st.place_local,
		 (unsigned long long)r->st.place_scan, (unsigned long long)r->st.place_fallback,
		 (unsigned long long)r->st.place_flush, (unsigned long long)r->st.stolen,
		 (unsigned long long)r->st.missed_idle, r->st.stranded_ns / 1e6,
		 (unsigned long long)r->st.detector_misses,
		 (unsigned long long)r->st.detector_flags, (unsigned long long)r->st.handoffs);
}

Test(tcp_blocking, kyo_collapses_and_kyo_tuned_recovers, .timeout = 120)
{
	struct tcp_rate ce = blocking_rate("ce", 1.5), kyo = blocking_rate("kyo", 1.5);
	struct tcp_rate flush = blocking_rate("kyo-flush", 1.0);
	struct tcp_rate tuned = blocking_rate("kyo-tuned", 1.5);
	char a[400], b[400], c[400], d[400];

	rate_describe("ce", &ce, a, sizeof(a));
	rate_describe("kyo", &kyo, b, sizeof(b));
	rate_describe("kyo-flush", &flush, c, sizeof(c));
	rate_describe("kyo-tuned", &tuned, d, sizeof(d));
	/* the figures, for the record; kyo-flush (the partial fix) is not asserted on */
	cr_log_info("%s", a);
	cr_log_info("%s", b);
	cr_log_info("%s", c);
	cr_log_info("%s", d);
	/* the studies: 145 vs 4.95 (29x); 5x leaves room for a noisy 2-CPU machine */
	cr_expect_geq(ce.ops_per_s, 5 * kyo.ops_per_s, "kyo must collapse:\n%s\n%s", a, b);
	/* the studies: 144.89 vs 149 */
	cr_expect_geq(3 * tuned.ops_per_s, ce.ops_per_s, "kyo-tuned must recover:\n%s\n%s", a, d);
	/* how: kyo leaves every connection task on the spawning worker and sees no 1 ms
	 * block; ce hands a blocked worker's queue off */
	cr_expect_gt(kyo.st.detector_misses, 0, "%s", b);
	cr_expect_eq(kyo.st.handoffs, 0, "%s", b);
	cr_expect_gt(ce.st.handoffs, 0, "%s", a);
}

/* The client's footprint mid-op: RSS and PSS of this process, sampled while the
 * connections' tasks run (each has its stack mapped and touched by then), and ops still
 * check after the sampled one. Under ce all 64 tasks are under way at the middle
 * exchange, so RSS holds at least a touched page of each task's stack. */
Test(tcp_blocking, report_samples_the_client_footprint_mid_op, .timeout = 60)
{
	const char *names[] = { "tcp-blocking", "tcp-callback" };

	for (size_t k = 0; k < 2; k++) {
		struct wl_ctx ctx = tcp_ctx(names[k], "ce", 2, "100");
		struct wl_metric m[WL_MAX_METRICS];
		char err[512] = "";
		size_t n;

		cr_assert_not_null(ctx.desc->report, "%s", names[k]);
		wl_test_setup(&ctx);
		n = ctx.desc->report(&ctx, m, WL_MAX_METRICS);
		cr_assert_eq(n, 2, "%s: client_rss and client_pss", names[k]);
		cr_expect_str_eq(m[0].name, "client_rss");
		cr_expect_str_eq(m[1].name, "client_pss");
		cr_expect_str_eq(m[0].unit, "MiB");
		cr_expect_geq(m[0].value, 64 * 4.0 / 1024, "%s: %.2f MiB", names[k], m[0].value);
		cr_expect_gt(m[1].value, 0);
		cr_expect_leq(m[1].value, m[0].value + 1e-9, "PSS is at most RSS");
		cr_expect(wl_test_op_check(&ctx, err, sizeof(err)), "%s: %s", names[k], err);
		cr_expect_eq(ctx.desc->report(&ctx, m, 1), 1, "no more than asked for");
		wl_test_finish(&ctx);
	}
}
