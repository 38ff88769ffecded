/*
 * schedlab profile: any program, as a command or a running process, its children
 * followed; checked against the program's own clock (tests/cli/helpers/three_split
 * spends a known split of its CPU time in three functions and prints what each took);
 * the folder is one that diagnose and compare read; bad input is one line and exit 2.
 */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <time.h>

#include "tests/cli/cli_run.h"

static char helper[600];

/* The helpers a test started in the background, killed and reaped at its end however it
 * ended. */
static pid_t started[8];
static size_t nstarted;

static void profile_teardown(void)
{
	for (size_t i = 0; i < nstarted; i++) {
		int status;

		/* still our child, not reaped by the test: only then is the pid still its */
		if (waitpid(started[i], &status, WNOHANG) == 0) {
			kill(started[i], SIGKILL);
			waitpid(started[i], &status, 0);
		}
	}
	nstarted = 0;
	teardown();
}

static void profile_setup(void)
{
	setup();
	snprintf(helper, sizeof(helper), "%s/tests/helpers/three_split", schedlab_build());
	cr_assert_eq(access(helper, X_OK), 0, "%s is not built; run make first", helper);
}

/* The run folder a profile printed on stdout (its first line that names a folder). */
static void profile_dir(char *buf, size_t len)
{
	const char *p = strstr(out_text, in_dir("s/"));

	cr_assert_not_null(p, "no run folder on stdout: %s", out_text);
	snprintf(buf, len, "%.*s", (int)strcspn(p, "\n"), p);
}

/* The program's own figure for name ("split_a 0.7500" on stdout), in seconds. */
static double own_seconds(const char *name)
{
	const char *p = strstr(out_text, name);

	cr_assert_not_null(p, "%s not on stdout: %s", name, out_text);
	return atof(p + strlen(name) + 1);
}

/* Whether the folded line's stack (its count cut off at sp) holds frame name, or with a
 * name ending in '*' a frame that begins with the rest. */
static bool holds_frame(const char *line, const char *sp, const char *name)
{
	size_t n = strlen(name);
	bool prefix = n && name[n - 1] == '*';

	for (const char *f = line; f < sp;) {
		size_t len = strcspn(f, ";");

		if (f + len > sp)
			len = (size_t)(sp - f);
		if (prefix ? len >= n - 1 && !strncmp(f, name, n - 1)
			   : len == n && !strncmp(f, name, n))
			return true;
		f += len + 1;
	}
	return false;
}

/* Of the folded samples whose stacks hold frame within (any: NULL), the share that also
 * hold frame (holds_frame()). */
static double frame_share_within(const char *run, const char *within, const char *frame)
{
	char path[1024], *text, *line, *save = NULL;
	double in = 0, all = 0;

	snprintf(path, sizeof(path), "%s/oncpu.folded", run);
	text = slurp(path, NULL);
	cr_assert_not_null(text, "%s", path);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *sp = strrchr(line, ' ');

		cr_assert_not_null(sp, "not a folded line: %s", line);
		if (within && !holds_frame(line, sp, within))
			continue;
		all += atof(sp + 1);
		if (holds_frame(line, sp, frame))
			in += atof(sp + 1);
	}
	free(text);
	/* the profile's own account of its samples is on its stderr */
	cr_assert_gt(all, 0, "no samples under %s in %s; the profile said: %s",
		     within ? within : "any frame", path, err_text);
	return in / all;
}

/* The share of the folded samples whose stacks hold frame name (holds_frame()). */
static double folded_share(const char *run, const char *name)
{
	return frame_share_within(run, NULL, name);
}

/* The run's four heaviest folded lines whose stacks hold frame within (any, if NULL),
 * each cut to its last 160 characters, for a failure message: what the samples were,
 * where a share fell short. */
static const char *heaviest_within(const char *run, const char *within)
{
	static char out[1024];
	char path[1024], *text, *line, *save = NULL;
	const char *top[4] = { 0 };
	double topn[4] = { 0 };
	size_t used = 0;

	snprintf(path, sizeof(path), "%s/oncpu.folded", run);
	text = slurp(path, NULL);
	if (!text)
		return "(no oncpu.folded)";
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *sp = strrchr(line, ' ');
		double n = sp ? atof(sp + 1) : 0;

		if (within && (!sp || !holds_frame(line, sp, within)))
			continue;
		for (int i = 0; i < 4; i++)
			if (n > topn[i]) {
				memmove(&top[i + 1], &top[i], (size_t)(3 - i) * sizeof(*top));
				memmove(&topn[i + 1], &topn[i], (size_t)(3 - i) * sizeof(*topn));
				top[i] = line;
				topn[i] = n;
				break;
			}
	}
	out[0] = '\0';
	for (int i = 0; i < 4 && top[i]; i++) {
		size_t len = strlen(top[i]);
		const char *from = len > 160 ? top[i] + len - 160 : top[i];

		used += (size_t)snprintf(out + used, sizeof(out) - used, "\n  %s", from);
		if (used >= sizeof(out))
			break;
	}
	free(text);
	return out;
}

static const char *heaviest(const char *run)
{
	return heaviest_within(run, NULL);
}

/* Each function's share of the three's samples within 3 points of its share of the three's
 * CPU time by the program's own clock, and the three most of the samples (the rest: start,
 * exit, the loop around them). */
static void expect_split(const char *run)
{
	static const char *const fns[] = { "split_a", "split_b", "split_c" };
	double own[3], got[3], total = 0, sampled = 0;

	for (int i = 0; i < 3; i++) {
		total += own[i] = own_seconds(fns[i]);
		sampled += got[i] = folded_share(run, fns[i]);
	}
	cr_expect_gt(sampled, 0.85,
		     "the three functions hold %.1f%% of the samples; the heaviest:%s",
		     100 * sampled, heaviest(run));
	for (int i = 0; i < 3; i++)
		cr_expect(fabs(got[i] / sampled - own[i] / total) <= 0.03,
			  "%s: %.1f%% of the three's samples, %.1f%% of their own CPU time",
			  fns[i], 100 * got[i] / sampled, 100 * own[i] / total);
}

/* The CPU time the profile clocked for what it sampled (result.json's sampling.cpu_ns),
 * in seconds. */
static double clocked_seconds(const char *run)
{
	char path[1100], *json;
	double s;

	snprintf(path, sizeof(path), "%s/result.json", run);
	json = slurp(path, NULL);
	cr_assert_not_null(json, "%s", path);
	s = (double)json_u64(json, "\"sampling\"", "cpu_ns") / 1e9;
	free(json);
	return s;
}

/* The profile's clock against the program's own: at least the three functions' CPU time
 * (the program's own clock, the child's where it forked), and at most 10% and 0.1 s more
 * (its start, its exit, the loop around them). */
static void expect_clocked(const char *run)
{
	double own = own_seconds("split_a") + own_seconds("split_b") + own_seconds("split_c");
	double got = clocked_seconds(run);

	cr_expect(got >= own && got <= 1.1 * own + 0.1,
		  "the profile clocked %.3f s of CPU time, the program %.3f s by its own clock",
		  got, own);
}

Test(profile, a_command_split_matches_its_own_clock, .init = profile_setup,
     .fini = profile_teardown, .timeout = 120)
{
	const char *args[] = { "profile", "-o", in_dir("s"), "--", helper, "1", NULL };
	char run[1024], path[1100], *json;

	cr_assert_eq(run_schedlab(args), 0, "%s", err_text);
	profile_dir(run, sizeof(run));
	expect_split(run);
	expect_clocked(run);
	snprintf(path, sizeof(path), "%s/result.json", run);
	json = slurp(path, NULL);
	cr_assert_not_null(json);
	cr_expect_not_null(strstr(json, "\"kind\": \"profile\""));
	cr_expect_not_null(strstr(json, "three_split exited with status 0"), "%s", json);
	/* the program's own file among those that named frames, with its build id */
	{
		const char *o = strstr(json, "three_split\", \"build_id\": \"");
		size_t hex;

		cr_assert_not_null(o, "the program is not among the objects: %s", json);
		o = strchr(o + strlen("three_split\", \"build_id\": "), '"') + 1;
		hex = strspn(o, "0123456789abcdef");
		cr_expect(hex >= 16 && o[hex] == '"', "not a build id: %.60s", o);
	}
	free(json);
	cr_expect_not_null(strstr(err_text, "three_split exited with status 0"), "%s", err_text);
}

Test(profile, frame_pointers_alone_give_the_split_too, .init = profile_setup,
     .fini = profile_teardown, .timeout = 120)
{
	const char *args[] = { "profile", "--call-graph", "fp", "-o", in_dir("s"), "--", helper,
			       "1", NULL };
	char run[1024];

	cr_assert_eq(run_schedlab(args), 0, "%s", err_text);
	profile_dir(run, sizeof(run));
	expect_split(run);
}

Test(profile, a_child_process_is_followed_and_named, .init = profile_setup,
     .fini = profile_teardown, .timeout = 120)
{
	/* the work runs in a child the command forks, which exits before the profile ends:
	 * its frames keep their names, and its CPU time is clocked with the command's */
	const char *args[] = { "profile", "-o", in_dir("s"), "--", helper, "1", "--fork", NULL };
	char run[1024];

	cr_assert_eq(run_schedlab(args), 0, "%s", err_text);
	profile_dir(run, sizeof(run));
	expect_split(run);
	expect_clocked(run);
}

Test(profile, code_opened_with_dlopen_while_profiled_is_named, .init = profile_setup,
     .fini = profile_teardown, .timeout = 120)
{
	/* the program opens libm after its mappings were first read, and spins in cos */
	const char *args[] = { "profile", "-o", in_dir("s"), "--", helper, "--dlopen", "0.6",
			       NULL };
	char run[1024];

	cr_assert_eq(run_schedlab(args), 0, "%s", err_text);
	profile_dir(run, sizeof(run));
	/* __cos_fma, __cos_avx...: the one the ifunc chose for this CPU */
	cr_expect_gt(folded_share(run, "__cos*"), 0.5,
		     "libm's cos named in most samples; the heaviest stacks:%s\n%s", heaviest(run),
		     err_text);
}

Test(profile, generated_code_is_named_from_its_perf_map, .init = profile_setup,
     .fini = profile_teardown, .timeout = 120)
{
	const char *args[] = { "profile", "-o", in_dir("s"), "--", helper, "--jit", "0.6", NULL };
	char run[1024], map[64];
	const char *pid;

	cr_assert_eq(run_schedlab(args), 0, "%s", err_text);
	pid = strstr(out_text, "pid ");
	cr_assert_not_null(pid, "%s", out_text);
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", atoi(pid + 4));
	unlink(map);
	profile_dir(run, sizeof(run));
	cr_expect_gt(folded_share(run, "jitted_spin_[j]"), 0.5,
		     "the generated code named in most samples; the heaviest stacks:%s\n%s",
		     heaviest(run), err_text);
}

/* Of the folded samples whose stacks hold frame within, the share whose category (the
 * line's first frame, "[allocation]") is cat. */
static double category_share_within(const char *run, const char *within, const char *cat)
{
	char frame[64];

	snprintf(frame, sizeof(frame), "[%s]", cat);
	return frame_share_within(run, within, frame);
}

/* A category's share of the kept samples (got) within 3 points of its share by the
 * program's clock (want), where a share lost of all the samples had no stack kept: the
 * true share lies between got * (1 - lost) and got * (1 - lost) + lost. */
static void expect_share_within(const char *cat, double got, double lost, double want,
				const char *heaviest)
{
	double lo = got * (1 - lost), hi = lo + lost;

	cr_expect(want >= lo - 0.03 && want <= hi + 0.03,
		  "%s: %.1f%% of the samples kept (%.1f%% to %.1f%% with the %.1f%% lost), "
		  "%.1f%% by the program's clock; the heaviest:%s\n%s",
		  cat, 100 * got, 100 * lo, 100 * hi, 100 * lost, 100 * want, heaviest, err_text);
}

/* The program's turns in glibc's malloc and free, in its backtrace() and in a spin of its
 * own, each timed by its thread's CPU clock: the allocation and stack-capture categories
 * of the samples under those turns within 3 points of the shares that clock gives. DWARF
 * unwinding, because glibc has no frame pointers: a frame-pointer walk from inside the
 * unwinder under backtrace() loses backtrace's own frame, and with it the category (5% of
 * the samples against 23% measured, in one run). 5 kHz over 2 s: 10,000 samples, a share's
 * standard error under half a point; the turns' own loops and clock reads, outside glibc
 * but inside the clock's measure, cost about 2 points of the allocation turn's share. */
Test(profile, allocation_and_stack_capture_match_the_programs_own_clock,
     .init = profile_setup, .fini = profile_teardown, .timeout = 120)
{
	const char *args[] = { "profile", "--call-graph", "dwarf", "--freq", "4999", "-o",
			       in_dir("s"), "--", helper, "--libc", "2", NULL };
	double alloc, capture, own, total, got_alloc, got_capture, lost;
	char run[1024];

	cr_assert_eq(run_schedlab(args), 0, "%s", err_text);
	profile_dir(run, sizeof(run));
	alloc = own_seconds("libc_alloc");
	capture = own_seconds("libc_capture");
	own = own_seconds("libc_work");
	total = alloc + capture + own;
	/* every address of the program's stacks named: the libraries ld.so maps after the
	 * exec are read before their first frame is named (samples before the exec are the
	 * profiler's own image, named from the program's: the comm tells them apart) */
	cr_expect_lt(frame_share_within(run, "three_split", "[unknown*"), 0.01,
		     "frames in no mapping read:%s", heaviest_within(run, "[unknown*"));
	got_alloc = category_share_within(run, "in_libc", "allocation");
	got_capture = category_share_within(run, "in_libc", "stack-capture");
	/* samples of the program that the profile kept no stack of (a ring buffer full while
	 * the machine was busy) could have been any turn's: each share may lie anywhere
	 * between its count over all and its count with all of them added */
	lost = frame_share_within(run, "three_split", "[lost*");
	cr_expect_lt(lost, 0.2, "%.1f%% of the program's samples lost: too many to tell",
		     100 * lost);
	expect_share_within("allocation", got_alloc, lost, alloc / total,
			    heaviest_within(run, "in_libc"));
	expect_share_within("stack-capture", got_capture, lost, capture / total,
			    heaviest_within(run, "in_libc"));
}

Test(profile, no_follow_leaves_out_the_processes_it_starts, .init = profile_setup,
     .fini = profile_teardown, .timeout = 120)
{
	/* the work is the child's: without it, the profile holds the parent's wait alone */
	const char *args[] = { "profile", "--no-follow", "-o", in_dir("s"), "--", helper, "0.5",
			       "--fork", NULL };
	char run[1024];

	cr_assert_eq(run_schedlab(args), 0, "%s", err_text);
	profile_dir(run, sizeof(run));
	cr_expect_lt(folded_share(run, "split_a"), 0.01, "the child's work was sampled");
	cr_expect_lt(clocked_seconds(run), 0.1, "the child's work was clocked");
}

/* Start `three_split ARGS` in the background with its stdout in dir/own; its pid. */
static pid_t start_helper(const char *arg)
{
	pid_t pid;

	unlink(in_dir("own")); /* what an earlier helper said is not this one's */
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = open(in_dir("own"), O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(127);
		execl(helper, helper, arg, (char *)NULL);
		_exit(127);
	}
	if (nstarted < sizeof(started) / sizeof(started[0]))
		started[nstarted++] = pid;
	return pid;
}

/* Wait until the helper started with --wait says "waiting" (its SIGUSR1 handler is in
 * place): a minute at most, and not past its exit. */
static void await_waiting(pid_t pid)
{
	char own[64] = "";

	for (int i = 0; !strstr(own, "waiting"); i++) {
		int status;

		cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "the helper exited: %s", own);
		cr_assert_lt(i, 6000, "the helper said nothing for 60 s");
		usleep(10000);
		read_into(in_dir("own"), own, sizeof(own));
	}
}

Test(profile, a_running_process_by_pid_until_it_exits, .init = profile_setup,
     .fini = profile_teardown, .timeout = 120)
{
	pid_t pid = start_helper("1.5");
	char pidarg[32], run[1024], own[4096];
	const char *args[] = { "profile", "-p", pidarg, "-o", in_dir("s"), NULL };
	int status;

	snprintf(pidarg, sizeof(pidarg), "%d", (int)pid);
	cr_assert_eq(run_schedlab(args), 0, "%s", err_text);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect_not_null(strstr(err_text, "every process had exited"), "%s", err_text);
	profile_dir(run, sizeof(run));
	/* what it printed, where own_seconds() reads */
	read_into(in_dir("own"), own, sizeof(own));
	strncat(out_text, own, sizeof(out_text) - strlen(out_text) - 1);
	expect_split(run);
	/* clocked from the attach to its exit: some of its own time, none that it did not */
	cr_expect(clocked_seconds(run) > 0.1 &&
			  clocked_seconds(run) <= own_seconds("split_a") + own_seconds("split_b") +
							   own_seconds("split_c") + 0.1,
		  "the profile clocked %.3f s", clocked_seconds(run));
}

Test(profile, a_duration_ends_it_and_interrupting_a_pid_profile_is_its_end,
     .init = profile_setup, .fini = profile_teardown, .timeout = 120)
{
	pid_t pid = start_helper("--wait");
	char pidarg[32], run[1024], out[600];
	const char *args[] = { "profile", "-p", pidarg, "--duration", "0.5", "-o", out, NULL };
	int status;

	snprintf(out, sizeof(out), "%s", in_dir("s"));

	snprintf(pidarg, sizeof(pidarg), "%d", (int)pid);
	/* its handler is in place once it says so */
	await_waiting(pid);
	cr_assert_eq(kill(pid, SIGUSR1), 0); /* spin: 60 s of the split */
	cr_assert_eq(run_schedlab(args), 0, "%s", err_text);
	cr_expect_not_null(strstr(err_text, "--duration ended"), "%s", err_text);
	profile_dir(run, sizeof(run));
	cr_expect_gt(folded_share(run, "split_a"), 0.2);
	cr_expect_eq(kill(pid, 0), 0, "a -p process is not stopped by its profile");
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
}

Test(profile, its_folder_is_one_diagnose_and_compare_read, .init = profile_setup,
     .fini = profile_teardown, .timeout = 120)
{
	const char *prof[] = { "profile", "-o", in_dir("s"), "--", helper, "0.3", NULL };
	char run[1024];
	const char *diag[] = { "diagnose", run, NULL };
	const char *cmp[] = { "compare", run, run, "-o", in_dir("cmp"), NULL };

	cr_assert_eq(run_schedlab(prof), 0, "%s", err_text);
	profile_dir(run, sizeof(run));
	cr_expect_eq(run_schedlab(diag), 0, "%s", err_text);
	cr_expect_not_null(strstr(out_text, "three_split"), "%s", out_text);
	cr_expect_eq(run_schedlab(cmp), 0, "%s", err_text);
	cr_expect_not_null(strstr(out_text, "Not compared: both are a profile"), "%s", out_text);
	cr_expect_not_null(strstr(out_text, "| other |"), "%s", out_text);
}

Test(profile, a_command_that_exits_at_once_is_written, .init = profile_setup,
     .fini = profile_teardown, .timeout = 60)
{
	const char *args[] = { "profile", "-o", in_dir("s"), "--", "true", NULL };
	char run[1024], path[1100], *json;

	cr_assert_eq(run_schedlab(args), 0, "%s", err_text);
	profile_dir(run, sizeof(run));
	snprintf(path, sizeof(path), "%s/result.json", run);
	json = slurp(path, NULL);
	cr_assert_not_null(json, "%s", path);
	cr_expect_not_null(strstr(json, "true exited with status 0"), "%s", json);
	free(json);
}

Test(profile, bad_input_is_one_line_and_exit_2, .init = profile_setup, .fini = profile_teardown,
     .timeout = 60)
{
	char out[600], plain[600];
	const char *nothing[] = { "profile", "-o", out, NULL };
	const char *both[] = { "profile", "-p", "1", "-o", out, "--", "true", NULL };
	const char *letters[] = { "profile", "-p", "12x", NULL };
	const char *empty[] = { "profile", "-p", "1,,2", NULL };
	const char *zero[] = { "profile", "--duration", "0", "--", "true", NULL };
	const char *gone[] = { "profile", "-p", "2147483647", "-o", out, NULL };
	const char *missing[] = { "profile", "-o", out, "--", "/nonexistent/program",
				  NULL };
	const char *notexec[] = { "profile", "-o", out, "--", plain, NULL };

	snprintf(out, sizeof(out), "%s", in_dir("s"));
	snprintf(plain, sizeof(plain), "%s", in_dir("plain"));
	write_file(plain, "not a program\n"); /* 0644: no one may run it */
	cr_expect_eq(run_schedlab(nothing), 2);
	expect_one_error_line("nothing to profile");
	cr_expect_eq(run_schedlab(both), 2);
	expect_one_error_line("one or the other");
	cr_expect_eq(run_schedlab(letters), 2);
	expect_one_error_line("not a process id");
	cr_expect_eq(run_schedlab(empty), 2);
	expect_one_error_line("expected PID or PID,PID");
	cr_expect_eq(run_schedlab(zero), 2);
	expect_one_error_line("--duration '0'");
	cr_expect_eq(run_schedlab(gone), 2);
	expect_one_error_line("no process 2147483647");
	cr_expect_eq(run_schedlab(missing), 2);
	expect_one_error_line("cannot start /nonexistent/program: No such file");
	cr_expect_eq(run_schedlab(notexec), 2);
	expect_one_error_line("Permission denied");
	/* nothing was sampled, and nothing written */
	cr_expect_neq(access(in_dir("s/latest"), F_OK), 0);
}

Test(profile, a_rules_file_of_ones_own_gives_the_categories, .init = profile_setup,
     .fini = profile_teardown, .timeout = 120)
{
	char mine[600], bogus[600], out[600], run[1024], path[1100], *json;
	const char *args[] = { "profile", "--rules", mine, "-o", out, "--", helper, "0.5", NULL };
	const char *bad[] = { "profile", "--rules", bogus, "--", "true", NULL };

	snprintf(mine, sizeof(mine), "%s", in_dir("my.rules"));
	snprintf(bogus, sizeof(bogus), "%s", in_dir("bad.rules"));
	snprintf(out, sizeof(out), "%s", in_dir("s"));
	write_file(mine, "work split_a\nallocation split_b split_c\n");
	write_file(bogus, "bogus split_a\n");
	cr_assert_eq(run_schedlab(args), 0, "%s", err_text);
	profile_dir(run, sizeof(run));
	/* the root frame is the category: split_a's samples are [work], b and c's [allocation] */
	cr_expect_gt(folded_share(run, "[work]"), 0.4);
	cr_expect_gt(folded_share(run, "[allocation]"), 0.4);
	snprintf(path, sizeof(path), "%s/result.json", run);
	json = slurp(path, NULL);
	cr_assert_not_null(json);
	cr_expect_not_null(strstr(json, "\"rules_file\": "), "%s", json);
	free(json);
	cr_expect_eq(run_schedlab(bad), 2);
	expect_one_error_line("unknown category 'bogus'");
}

/* Where each thread of pid is, for a failure message: "TID STATE KERNEL-FUNCTION" each
 * (the kernel's own /proc/PID/task/TID/{stat,wchan}). */
static const char *threads_of(pid_t pid)
{
	static char out[2048];
	char path[96], buf[512];
	size_t used = 0;
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	out[0] = '\0';
	d = opendir(path);
	if (!d)
		return "(gone)";
	while ((e = readdir(d)) && used < sizeof(out) - 1) {
		char stat[512] = "", wchan[128] = "";
		const char *paren;

		if (e->d_name[0] == '.')
			continue;
		snprintf(buf, sizeof(buf), "%s/%s/stat", path, e->d_name);
		read_into(buf, stat, sizeof(stat));
		snprintf(buf, sizeof(buf), "%s/%s/wchan", path, e->d_name);
		read_into(buf, wchan, sizeof(wchan));
		paren = strrchr(stat, ')');
		used += (size_t)snprintf(out + used, sizeof(out) - used, " [%s %c %s]", e->d_name,
					 paren && paren[1] ? paren[2] : '?', wchan);
	}
	closedir(d);
	return out;
}

/* `schedlab profile ARGS` in the background, its stdout and stderr in dir/bg.out and
 * dir/bg.err; its pid once it says it is profiling (a condition, not a sleep). */
static pid_t start_profile(const char *const *args)
{
	char bin[512], err[4096] = "";
	const char *argv[16] = { bin };
	size_t n = 1;
	pid_t pid;

	snprintf(bin, sizeof(bin), "%s/schedlab", schedlab_build());
	for (size_t i = 0; args[i]; i++) {
		cr_assert_lt(n, 15);
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	/* an earlier profile's words gone first: its "profiling" read here would send the
	 * interrupt to a process not yet able to take it */
	unlink(in_dir("bg.out"));
	unlink(in_dir("bg.err"));
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int o = open(in_dir("bg.out"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(in_dir("bg.err"), O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(127);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	if (nstarted < sizeof(started) / sizeof(started[0]))
		started[nstarted++] = pid;
	for (int i = 0; !strstr(err, "profiling"); i++) {
		int status;

		cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "it ended before profiling: %s",
			     err);
		cr_assert_lt(i, 6000, "not profiling after 60 s; its threads:%s\n%s",
			     threads_of(pid), err);
		usleep(10000);
		read_into(in_dir("bg.err"), err, sizeof(err));
	}
	return pid;
}

/* Wait until process pid has run seconds more of CPU time (its own clock). */
static void spun(pid_t pid, double seconds)
{
	struct timespec t0, t;
	clockid_t cid;

	cr_assert_eq(clock_getcpuclockid(pid, &cid), 0);
	cr_assert_eq(clock_gettime(cid, &t0), 0);
	do {
		usleep(10000);
		cr_assert_eq(clock_gettime(cid, &t), 0, "process %d is gone", (int)pid);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 <
		 seconds);
}

/* SIGINT to it, as Ctrl-C sends; its exit status. A profile still running 60 s later
 * fails the test with where its threads were. */
static int interrupt(pid_t pid)
{
	struct timespec t0, t;
	int status;
	pid_t w;

	cr_assert_eq(kill(pid, SIGINT), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while ((w = waitpid(pid, &status, WNOHANG)) == 0) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec >= 60) {
			const char *where = threads_of(pid);

			read_into(in_dir("bg.err"), err_text, sizeof(err_text));
			kill(pid, SIGKILL);
			cr_assert_fail("still running 60 s after SIGINT; its threads:%s\n%s", where,
				       err_text);
		}
		usleep(10000);
	}
	cr_assert_eq(w, pid);
	cr_assert(WIFEXITED(status), "killed by a signal");
	read_into(in_dir("bg.out"), out_text, sizeof(out_text));
	read_into(in_dir("bg.err"), err_text, sizeof(err_text));
	return WEXITSTATUS(status);
}

Test(profile, ctrl_c_ends_a_pid_profile_whole_and_a_commands_partial, .init = profile_setup,
     .fini = profile_teardown, .timeout = 120)
{
	pid_t spinner = start_helper("--wait");
	char pidarg[32], out[600], run[1024], path[1100], *json;
	const char *by_pid[] = { "profile", "-p", pidarg, "-o", out, NULL };
	const char *by_cmd[] = { "profile", "-o", out, "--", helper, "--wait", NULL };
	pid_t p;
	int status;

	snprintf(pidarg, sizeof(pidarg), "%d", (int)spinner);
	snprintf(out, sizeof(out), "%s", in_dir("s"));
	await_waiting(spinner);
	cr_assert_eq(kill(spinner, SIGUSR1), 0);

	/* running processes and no duration: Ctrl-C is how it ends, whole, once the spinner
	 * has run a while under it */
	p = start_profile(by_pid);
	spun(spinner, 0.3);
	cr_expect_eq(interrupt(p), 0, "%s", err_text);
	profile_dir(run, sizeof(run));
	snprintf(path, sizeof(path), "%s/result.json", run);
	json = slurp(path, NULL);
	cr_assert_not_null(json, "%s", path);
	cr_expect_not_null(strstr(json, "\"partial\": false"), "%s", json);
	cr_expect_gt(folded_share(run, "split_a"), 0.2, "what was sampled is written");
	free(json);
	cr_expect_eq(kill(spinner, 0), 0, "a -p process is not stopped by its profile");
	kill(spinner, SIGKILL);
	cr_assert_eq(waitpid(spinner, &status, 0), spinner);

	/* a command it was to follow to its end: stopped early, partial, 130, the command
	 * stopped and reaped with it */
	p = start_profile(by_cmd);
	cr_expect_eq(interrupt(p), 130, "%s", err_text);
	profile_dir(run, sizeof(run));
	snprintf(path, sizeof(path), "%s/result.json", run);
	json = slurp(path, NULL);
	cr_assert_not_null(json, "%s", path);
	cr_expect_not_null(strstr(json, "\"partial\": true"), "%s", json);
	free(json);
}
