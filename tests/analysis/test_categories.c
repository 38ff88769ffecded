/*
 * Categories and stack rules (categories.c): the category names and the phase numbers
 * they share, every way a rules file is refused (each naming SOURCE:LINE), comments,
 * prefixes, leaf-only rules, the leaf-first order with kernel frames first, loading from
 * a file, the built-in rules against the runtime's phase functions, and against real
 * runtimes' stacks (Go, Tokio, the JDK and its collectors, glibc's threads) as perf
 * recorded them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "runtime/phase.h"

#define NFRAMES(a) (sizeof(a) / sizeof((a)[0]))

/* Parse text that must be accepted. */
static struct an_rules *rules_ok(const char *text)
{
	char err[256] = "";
	struct an_rules *r = an_rules_parse(text, strlen(text), "t.rules", err, sizeof(err));

	cr_assert_not_null(r, "refused: %s", err);
	return r;
}

/* Parse text that must be refused with EINVAL and exactly the message want. */
static void expect_refused(const char *text, const char *want)
{
	char err[512] = "";
	struct an_rules *r;

	errno = 0;
	r = an_rules_parse(text, strlen(text), "t.rules", err, sizeof(err));
	cr_expect_null(r, "accepted: %s", text);
	an_rules_free(r);
	cr_expect_eq(errno, EINVAL, "errno %d for: %s", errno, text);
	cr_expect_str_eq(err, want, "for: %s", text);
}

/* Parse text that must be refused; err must start with "t.rules:LINE: ". */
static void expect_refused_at(const char *text, unsigned line)
{
	char err[512] = "", want[32];
	struct an_rules *r;

	errno = 0;
	r = an_rules_parse(text, strlen(text), "t.rules", err, sizeof(err));
	cr_expect_null(r, "accepted: %s", text);
	an_rules_free(r);
	cr_expect_eq(errno, EINVAL);
	snprintf(want, sizeof(want), "t.rules:%u: ", line);
	cr_expect(!strncmp(err, want, strlen(want)), "'%s' does not start with '%s'", err, want);
	cr_expect_null(strchr(err, '\n'), "not one line: %s", err);
}

/* The frames' category (leaf first) on a runtime thread (rt true) or another. */
#define expect_class_on(r, rt, want, ...)                                                        \
	do {                                                                                     \
		const char *const f_[] = { __VA_ARGS__ };                                        \
		int got_ = an_rules_classify((r), f_, NFRAMES(f_), (rt));                        \
		cr_expect_eq(got_, (int)(want), "%s... (leaf first, %s): %d (%s), want %d (%s)", \
			     f_[0], (rt) ? "runtime thread" : "other thread", got_,              \
			     got_ < 0 ? "none" : an_category_name(got_), (int)(want),            \
			     (int)(want) < 0 ? "none" : an_category_name(want));                 \
	} while (0)
#define expect_class(r, want, ...)    expect_class_on(r, false, want, __VA_ARGS__)
#define expect_class_rt(r, want, ...) expect_class_on(r, true, want, __VA_ARGS__)

/* ---- names -------------------------------------------------------------------------- */

Test(categories, names_parse_back_to_their_number)
{
	static const char *const want[AN_CAT_COUNT] = {
		"other",      "work",	    "scheduling",    "submission", "parking",
		"blocking",   "allocation", "stack-capture", "kernel",
	};

	for (unsigned i = 0; i < AN_CAT_COUNT; i++) {
		cr_expect_str_eq(an_category_name(i), want[i]);
		cr_expect_eq(an_category_parse(want[i]), (int)i, "%s", want[i]);
	}
	cr_expect_str_eq(an_category_name(AN_CAT_COUNT), "other");
	cr_expect_str_eq(an_category_name(~0u), "other");
	cr_expect_eq(an_category_parse("Work"), -1, "names are case-sensitive");
	cr_expect_eq(an_category_parse("sched"), -1, "no abbreviations");
	cr_expect_eq(an_category_parse(""), -1);
	cr_expect_eq(an_category_parse("kernel "), -1);
}

Test(categories, a_phase_is_the_category_of_its_number)
{
	cr_expect_eq(an_phase_category(RT_PHASE_NONE), AN_CAT_OTHER);
	cr_expect_eq(an_phase_category(RT_PHASE_RUN), AN_CAT_WORK);
	cr_expect_eq(an_phase_category(RT_PHASE_SCHED), AN_CAT_SCHED);
	cr_expect_eq(an_phase_category(RT_PHASE_SUBMIT), AN_CAT_SUBMIT);
	cr_expect_eq(an_phase_category(RT_PHASE_PARK), AN_CAT_PARK);
	cr_expect_eq(an_phase_category(RT_PHASE_BLOCK), AN_CAT_BLOCK);
	cr_expect_eq(an_phase_category(RT_PHASE_ALLOC), AN_CAT_ALLOC);
	cr_expect_eq(an_phase_category(RT_PHASE_STACKCAP), AN_CAT_STACKCAP);
	/* no phase means "kernel": that category comes from stack rules only */
	cr_expect_eq(an_phase_category(RT_PHASE_COUNT), AN_CAT_OTHER);
	cr_expect_eq(an_phase_category(AN_CAT_KERNEL), AN_CAT_OTHER);
	cr_expect_eq(an_phase_category(255), AN_CAT_OTHER);
	cr_expect_eq(an_phase_category(RT_PHASE_KIND(RT_PHASE_WORD(RT_PHASE_PARK, 7, 99))),
		     AN_CAT_PARK);
}

/* ---- refusals ----------------------------------------------------------------------- */

Test(rules, unknown_category_names_source_line_and_word)
{
	expect_refused("work a\n\nbogus b\n",
		       "t.rules:3: unknown category 'bogus' (the categories: work, scheduling, "
		       "submission, parking, blocking, allocation, stack-capture, kernel, other)");
	/* a category longer than any buffer is still just unknown */
	expect_refused_at("# x\nwork a\nscheduling b\n"
			  "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopq f\n",
			  4);
	/* a function name where the category goes */
	expect_refused_at("rt_spawn submission\n", 1);
	/* categories are case-sensitive in files too */
	expect_refused_at("Work a\n", 1);
}

Test(rules, category_without_a_name_is_refused)
{
	expect_refused("work a\nparking\n",
		       "t.rules:2: 'parking' names no function (write CATEGORY NAME...)");
	/* a comment after the category is no name either */
	expect_refused_at("work a\n\n  allocation   # rt_alloc\n", 3);
	/* nor is trailing white space, CR included */
	expect_refused_at("kernel \t\r\n", 1);
}

Test(rules, lone_star_or_equals_is_refused)
{
	expect_refused("work a\nwork b *\n", "t.rules:2: '*' alone names no function"
		       " (write a name, '=name' or a pattern such as 'rt_*')");
	expect_refused("# c\n\nscheduling = x\n", "t.rules:3: '=' alone names no function"
		       " (write a name, '=name' or a pattern such as 'rt_*')");
	expect_refused_at("work *\n", 1);
	expect_refused_at("work =\n", 1);
}

Test(rules, duplicate_name_is_refused_with_both_lines)
{
	expect_refused("work foo\nscheduling bar\nparking foo\n",
		       "t.rules:3: 'foo' already has a rule (line 1; keep one)");
	/* on one line, and reported at the later line whatever the sort did */
	expect_refused_at("work a b c d e a\n", 1);
	expect_refused_at("work zz\nwork aa\n\n\nwork mm zz\n", 5);
	/* a leaf-only rule and a plain one for the same function: one name, two rules */
	expect_refused("work foo\n# between\nscheduling =foo\n",
		       "t.rules:3: 'foo' already has a rule (line 1; keep one)");
	/* a pattern too, in whichever section */
	expect_refused("kernel futex_*_[k]\n[other threads]\nparking futex_*_[k]\n",
		       "t.rules:3: 'futex_*_[k]' already has a rule (line 1; keep one)");
}

Test(rules, refusals_need_no_message_buffer)
{
	const char *bad = "nope x\n";

	errno = 0;
	cr_expect_null(an_rules_parse(bad, strlen(bad), "t.rules", NULL, 0));
	cr_expect_eq(errno, EINVAL);

	/* a short buffer is cut, and still terminated */
	char err[8];
	memset(err, 'x', sizeof(err));
	cr_expect_null(an_rules_parse(bad, strlen(bad), "t.rules", err, sizeof(err)));
	cr_expect_eq(err[sizeof(err) - 1], '\0');
	cr_expect_str_eq(err, "t.rules");
}

/* ---- what a file may hold ----------------------------------------------------------- */

Test(rules, comments_blank_lines_and_white_space)
{
	const char *text = "# a comment line\n"
			   "\n"
			   "   \t\n"
			   "work\tone   two # three is a comment\n"
			   "  scheduling four#five\n"
			   "#parking six\n"
			   "parking seven\r\n"
			   "allocation eight"; /* no newline at the end */
	struct an_rules *r = rules_ok(text);

	cr_expect_eq(an_rules_count(r), 5, "one two four seven eight");
	expect_class(r, AN_CAT_WORK, "one");
	expect_class(r, AN_CAT_WORK, "two");
	expect_class(r, -1, "three");
	expect_class(r, AN_CAT_SCHED, "four");
	expect_class(r, -1, "five");
	expect_class(r, -1, "four#five");
	expect_class(r, -1, "six");
	expect_class(r, AN_CAT_PARK, "seven");
	expect_class(r, -1, "seven\r");
	expect_class(r, AN_CAT_ALLOC, "eight");
	an_rules_free(r);

	/* nothing but comments: a valid, empty rule set */
	r = rules_ok("# only\n\n# comments\n");
	cr_expect_eq(an_rules_count(r), 0);
	expect_class(r, -1, "one");
	an_rules_free(r);
	r = rules_ok("");
	cr_expect_eq(an_rules_count(r), 0);
	an_rules_free(r);
}

Test(rules, len_bounds_the_text)
{
	const char *text = "work a\nbogus b\n";
	char err[256] = "";
	/* only the first line: the bad second one is past len */
	struct an_rules *r = an_rules_parse(text, 7, "t.rules", err, sizeof(err));

	cr_assert_not_null(r, "%s", err);
	cr_expect_eq(an_rules_count(r), 1);
	an_rules_free(r);
}

Test(rules, prefix_rules)
{
	struct an_rules *r = rules_ok("parking io_wait_exact\n"
				      "work io_*\n"
				      "scheduling io_wait*\n"
				      "kernel __x64_sys_*\n");

	cr_expect_eq(an_rules_count(r), 4);
	expect_class(r, AN_CAT_WORK, "io_read");
	expect_class(r, AN_CAT_WORK, "io_");
	expect_class(r, -1, "io");
	expect_class(r, -1, "xio_read");
	/* two prefixes match: the first in the file wins */
	expect_class(r, AN_CAT_WORK, "io_wait_more");
	/* an exact name wins over any prefix */
	expect_class(r, AN_CAT_PARK, "io_wait_exact");
	/* prefixes apply to kernel frames too */
	expect_class(r, AN_CAT_KERNEL, "__x64_sys_read_[k]");
	an_rules_free(r);
}

Test(rules, star_anywhere_is_a_pattern)
{
	struct an_rules *r = rules_ok("stack-capture *fillInStackTrace*\n"
				      "work *ForkJoinTask*doExec*\n"
				      "scheduling *ForkJoinPool*\n"
				      "kernel futex_*_[k]\n"
				      "allocation *_alloc\n");

	cr_expect_eq(an_rules_count(r), 5);
	/* infix: anywhere in the name, at its start or its end too */
	expect_class(r, AN_CAT_STACKCAP, "Ljava/lang/Throwable;::fillInStackTrace");
	expect_class(r, AN_CAT_STACKCAP, "fillInStackTrace");
	expect_class(r, AN_CAT_STACKCAP, "java.lang.Throwable.fillInStackTrace(int)");
	expect_class(r, -1, "fillInStack");
	expect_class(r, -1, "FillInStackTrace"); /* case counts */
	/* two stars: both parts, in that order */
	expect_class(r, AN_CAT_WORK, "java/util/concurrent/ForkJoinTask.doExec");
	expect_class(r, -1, "doExec.ForkJoinTask");
	/* the first pattern in the file that matches wins */
	expect_class(r, AN_CAT_WORK, "ForkJoinPool.ForkJoinTask.doExec");
	expect_class(r, AN_CAT_SCHED, "java/util/concurrent/ForkJoinPool.awaitWork");
	/* a suffix after the star, as kernel names have */
	expect_class(r, AN_CAT_KERNEL, "futex_wait_queue_[k]");
	expect_class(r, -1, "futex_wait_queue");
	expect_class(r, AN_CAT_ALLOC, "rt_alloc");
	expect_class(r, -1, "rt_alloc2");
	/* a task's frames leafward of doExec are its own, and the pool's below them lose */
	expect_class(r, AN_CAT_WORK, "Main.compute", "java/util/concurrent/ForkJoinTask.doExec",
		     "java/util/concurrent/ForkJoinPool.runWorker");
	an_rules_free(r);

	expect_refused("work a\nwork **\n", "t.rules:2: '**' alone names no function"
		       " (write a name, '=name' or a pattern such as 'rt_*')");
	expect_refused("work =a*b\n",
		       "t.rules:1: '=a*b': a leaf rule ('=') names one function, not a pattern "
		       "('*')");
}

Test(rules, compiler_clones_take_their_function_s_rule)
{
	struct an_rules *r = rules_ok("allocation _int_free sysmalloc_mmap\n"
				      "kernel finish_task_switch_[k]\n");

	expect_class(r, AN_CAT_ALLOC, "_int_free.part.0");
	expect_class(r, AN_CAT_ALLOC, "sysmalloc_mmap.constprop.0");
	expect_class(r, AN_CAT_ALLOC, "_int_free.cold");
	expect_class(r, AN_CAT_ALLOC, "_int_free.isra.0.cold");
	expect_class(r, AN_CAT_KERNEL, "finish_task_switch.isra.0_[k]");
	/* only the compiler's suffixes: a dotted name is not a clone */
	expect_class(r, -1, "_int_free.java");
	expect_class(r, -1, "_int_free.");
	expect_class(r, -1, "_int_free..0");
	expect_class(r, -1, "finish_task_switch.isra.0");
	expect_class(r, -1, ".part.0");
	an_rules_free(r);
}

Test(rules, sections_scope_rules_to_other_threads)
{
	struct an_rules *r = rules_ok("parking rt__park\n"
				      "[other threads]   # libc and the kernel\n"
				      "allocation malloc\n"
				      "kernel futex_*_[k]\n"
				      "  [all threads]\n"
				      "submission rt_spawn\n");

	cr_expect_eq(an_rules_count(r), 4);
	/* on other threads every rule applies */
	expect_class(r, AN_CAT_ALLOC, "malloc", "rt_spawn");
	expect_class(r, AN_CAT_KERNEL, "futex_wait_[k]", "syscall", "server_loop_main");
	expect_class(r, AN_CAT_PARK, "futex_wait_[k]", "syscall", "rt__park");
	/* on the runtime's threads the other threads' rules are passed over, and the phase
	 * function under them decides */
	expect_class_rt(r, AN_CAT_SUBMIT, "malloc", "rt_spawn");
	expect_class_rt(r, AN_CAT_PARK, "futex_wait_[k]", "syscall", "rt__park");
	expect_class_rt(r, -1, "malloc", "task_fn");
	/* rules before any section, and after [all threads], apply everywhere */
	expect_class_rt(r, AN_CAT_PARK, "rt__park");
	expect_class_rt(r, AN_CAT_SUBMIT, "rt_spawn");
	an_rules_free(r);

	expect_refused("work a\n[other thread]\n",
		       "t.rules:2: unknown section '[other thread]' (write [all threads] or "
		       "[other threads] alone on the line)");
	expect_refused_at("[other threads] malloc\n", 1);
	expect_refused_at("work a\n\n[all threads\n", 3);
	expect_refused_at("[]\n", 1);
}

Test(rules, leaf_only_rules_count_as_the_user_leaf_only)
{
	struct an_rules *r = rules_ok("scheduling =tramp\n"
				      "work task_fn\n"
				      "kernel =irq_[k]\n"
				      "parking later\n");

	expect_class(r, AN_CAT_SCHED, "tramp");
	expect_class(r, AN_CAT_SCHED, "tramp", "main", "start_thread");
	/* deeper than the leaf it names nothing, and the walk goes on */
	expect_class(r, -1, "foo", "tramp");
	expect_class(r, AN_CAT_PARK, "foo", "tramp", "later");
	/* the task's own function at the leaf is the task's, whatever is below it */
	expect_class(r, AN_CAT_WORK, "task_fn", "tramp");
	/* kernel frames come first, and are not the user stack's leaf */
	expect_class(r, AN_CAT_SCHED, "schedule_[k]", "tramp");
	expect_class(r, AN_CAT_SCHED, "a_[k]", "b_[k]", "tramp", "x");
	expect_class(r, -1, "schedule_[k]", "foo", "tramp");
	expect_class(r, -1, "a_[k]", "b_[k]", "foo", "tramp");
	/* a leaf-only rule on a kernel name never applies: no kernel frame is a user leaf */
	expect_class(r, -1, "irq_[k]");
	expect_class(r, -1, "irq_[k]", "foo");
	an_rules_free(r);
}

/* A rule names a function whether it was called or inlined ("NAME_[i]"); the inlined
 * calls at the leaf belong to the leaf's function, so a leaf-only rule still holds there. */
Test(rules, inlined_frames_take_their_function_s_rule)
{
	struct an_rules *r = rules_ok("allocation tcache_get _int_malloc\n"
				      "scheduling =tramp\n"
				      "parking rt__futex*\n");

	expect_class(r, AN_CAT_ALLOC, "tcache_get_[i]", "malloc");
	expect_class(r, AN_CAT_ALLOC, "helper_[i]", "_int_malloc", "main");
	expect_class(r, AN_CAT_PARK, "rt__futex_[i]", "park_[i]", "rt__park");
	/* the leaf function with the calls inlined at its address */
	expect_class(r, AN_CAT_SCHED, "a_[i]", "b_[i]", "tramp", "main");
	expect_class(r, AN_CAT_SCHED, "schedule_[k]", "a_[i]", "tramp");
	/* past the leaf function, inlined calls do not make a deeper frame a leaf */
	expect_class(r, -1, "f", "a_[i]", "tramp");
	/* only the whole suffix: a name that merely ends in "]" is itself */
	expect_class(r, -1, "tcache_get[i]");
	an_rules_free(r);
}

Test(rules, frames_are_read_leaf_first_kernel_first)
{
	struct an_rules *r = rules_ok("kernel do_syscall_64_[k]\n"
				      "allocation rt_alloc\n"
				      "scheduling rt__drive worker_main\n");

	expect_class(r, AN_CAT_KERNEL, "do_syscall_64_[k]", "main");
	expect_class(r, AN_CAT_ALLOC, "clear_page_[k]", "asm_exc_page_fault_[k]", "memset",
		     "rt_alloc", "rt__drive", "worker_main");
	an_rules_free(r);
	/* a kernel frame named anything but "kernel" decides as it is read; "kernel" gives
	 * way to the first user frame a rule names, and stands where none does */
	r = rules_ok("kernel do_syscall_64_[k] schedule_[k]\n"
		     "allocation rt_alloc clear_page_[k]\n"
		     "scheduling rt__drive worker_main\n");
	expect_class(r, AN_CAT_ALLOC, "do_syscall_64_[k]", "rt_alloc", "rt__drive");
	expect_class(r, AN_CAT_SCHED, "schedule_[k]", "do_syscall_64_[k]", "memset", "rt__drive");
	expect_class(r, AN_CAT_ALLOC, "clear_page_[k]", "schedule_[k]", "rt__drive");
	expect_class(r, AN_CAT_ALLOC, "schedule_[k]", "clear_page_[k]", "rt__drive");
	expect_class(r, AN_CAT_KERNEL, "schedule_[k]", "do_syscall_64_[k]", "memset", "main");
	an_rules_free(r);
	r = rules_ok("kernel do_syscall_64_[k]\n"
		     "allocation rt_alloc\n"
		     "scheduling rt__drive worker_main\n");
	expect_class(r, AN_CAT_SCHED, "memset", "rt__drive", "rt_alloc");
	/* "_[k]" is a suffix of the whole name, not somewhere in it */
	expect_class(r, -1, "do_syscall_64_[k]x");
	an_rules_free(r);
	r = rules_ok("scheduling =tramp\n");
	expect_class(r, -1, "not_[k]_kernel", "tramp");
	expect_class(r, AN_CAT_SCHED, "kernel_[k]", "tramp");
	an_rules_free(r);
}

Test(rules, nothing_named_is_minus_one)
{
	struct an_rules *r = rules_ok("work a\n");

	expect_class(r, -1, "b");
	expect_class(r, -1, "b_[k]", "c", "d");
	expect_class(r, -1, "A");
	expect_class(r, -1, "aa");
	cr_expect_eq(an_rules_classify(r, NULL, 0, false), -1);
	cr_expect_eq(an_rules_classify(NULL, (const char *const[]){ "a" }, 1, false), -1);
	cr_expect_eq(an_rules_count(NULL), 0);
	an_rules_free(r);
	an_rules_free(NULL);
}

/* ---- files -------------------------------------------------------------------------- */

static char dir[] = "/tmp/schedlab-rules-XXXXXX";

static void mkdir_tmp(void)
{
	strcpy(dir, "/tmp/schedlab-rules-XXXXXX");
	cr_assert_not_null(mkdtemp(dir), "mkdtemp: %s", strerror(errno));
}

static void rm_tmp(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", dir);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
	cr_assert_eq(fclose(f), 0);
}

TestSuite(rules_file, .init = mkdir_tmp, .fini = rm_tmp);

Test(rules_file, missing_file_sets_errno_and_names_the_path)
{
	char path[128], err[256] = "", want[256];

	snprintf(path, sizeof(path), "%s/none.rules", dir);
	errno = 0;
	cr_expect_null(an_rules_load(path, err, sizeof(err)));
	cr_expect_eq(errno, ENOENT);
	snprintf(want, sizeof(want), "%s: %s", path, strerror(ENOENT));
	cr_expect_str_eq(err, want);

	/* a directory cannot be read as a file */
	errno = 0;
	cr_expect_null(an_rules_load(dir, err, sizeof(err)));
	cr_expect_eq(errno, EISDIR);
	cr_expect(!strncmp(err, dir, strlen(dir)), "%s", err);
}

Test(rules_file, a_file_is_read_and_its_errors_name_it)
{
	char path[128], err[256] = "", want[160];
	struct an_rules *r;

	snprintf(path, sizeof(path), "%s/good.rules", dir);
	write_file(path, "# mine\nparking my_wait\nwork my_task*\n");
	r = an_rules_load(path, err, sizeof(err));
	cr_assert_not_null(r, "%s", err);
	cr_expect_eq(an_rules_count(r), 2);
	expect_class(r, AN_CAT_PARK, "futex_wait_[k]", "my_wait", "my_task_main");
	expect_class(r, AN_CAT_WORK, "my_task_body");
	an_rules_free(r);

	snprintf(path, sizeof(path), "%s/bad.rules", dir);
	write_file(path, "parking my_wait\n\nwork\n");
	errno = 0;
	cr_expect_null(an_rules_load(path, err, sizeof(err)));
	cr_expect_eq(errno, EINVAL);
	snprintf(want, sizeof(want), "%s:3: ", path);
	cr_expect(!strncmp(err, want, strlen(want)), "'%s' does not start with '%s'", err, want);
}

/* The limit is 16 MiB: a file of exactly that size is read, one byte more is not. */
Test(rules_file, larger_than_16_mib_is_refused)
{
	const size_t limit = 16u << 20;
	char path[128], err[256] = "";
	struct an_rules *r;
	char *text = malloc(limit + 1);
	FILE *f;

	cr_assert_not_null(text);
	/* lines of 63 '#' and a newline: all comment, one rule at the end */
	memset(text, '#', limit + 1);
	for (size_t i = 63; i < limit; i += 64)
		text[i] = '\n';
	memcpy(text + limit - 12, "\nwork tail\n", 11);
	text[limit - 1] = '\n';
	snprintf(path, sizeof(path), "%s/big.rules", dir);

	f = fopen(path, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(text, 1, limit, f), limit);
	cr_assert_eq(fclose(f), 0);
	r = an_rules_load(path, err, sizeof(err));
	cr_expect_not_null(r, "exactly 16 MiB refused: %s", err);
	cr_expect_eq(an_rules_count(r), 1);
	an_rules_free(r);

	f = fopen(path, "a");
	cr_assert_not_null(f);
	cr_assert_eq(fputc('\n', f), '\n');
	cr_assert_eq(fclose(f), 0);
	errno = 0;
	cr_expect_null(an_rules_load(path, err, sizeof(err)));
	cr_expect_eq(errno, EFBIG);
	cr_expect(!strncmp(err, path, strlen(path)) && strstr(err, "16 MiB"), "%s", err);
	free(text);
}

/* ---- the built-in rules ------------------------------------------------------------- */

static struct an_rules *builtin_rules(void)
{
	char err[256] = "";
	struct an_rules *r = an_rules_builtin(err, sizeof(err));

	cr_assert_not_null(r, "the built-in rules are refused: %s", err);
	return r;
}

Test(rules_builtin, parse_and_name_the_phase_functions)
{
	struct an_rules *r = builtin_rules();

	cr_expect_geq(an_rules_count(r), 40, "%zu rules", an_rules_count(r));

	expect_class(r, AN_CAT_SUBMIT, "rt_spawn");
	expect_class(r, AN_CAT_SUBMIT, "rt__wake");
	expect_class(r, AN_CAT_PARK, "rt__park");
	expect_class(r, AN_CAT_ALLOC, "rt_alloc");
	expect_class(r, AN_CAT_ALLOC, "rt_free");
	expect_class(r, AN_CAT_SCHED, "rt__drive");
	expect_class(r, AN_CAT_SCHED, "rt__switch");
	expect_class(r, AN_CAT_BLOCK, "rt_blocking");
	expect_class(r, AN_CAT_STACKCAP, "backtrace");

	/* a phase function covers what it calls that no rule names */
	expect_class(r, AN_CAT_ALLOC, "malloc", "rt_alloc", "loop");
	expect_class(r, AN_CAT_ALLOC, "malloc", "rt_alloc", "rt__drive", "worker_thread_main");
	expect_class_rt(r, AN_CAT_PARK, "schedule_[k]", "futex_wait_[k]", "syscall", "rt__park",
			"rt__drive", "worker_thread_main", "start_thread");
	/* the nearest phase function to the leaf decides */
	expect_class(r, AN_CAT_SUBMIT, "rt_spawn", "task_fn", "rt__fiber_start");
	expect_class(r, -1, "loop");
	expect_class(r, -1, "task_fn", "rt__fiber_start");

	/* a fiber's entry stores RUN on its first instruction and its body is the task's:
	 * neither is a rule, leaf or not */
	expect_class(r, -1, "rt__fiber_start");
	expect_class(r, -1, "rt__task_main", "rt__fiber_start");
	expect_class(r, -1, "asm_sysvec_apic_timer_interrupt_[k]", "rt__fiber_start");
	an_rules_free(r);
}

/* Each family of rules for threads that are not the runtime's, on a stack as the probe
 * folds it, and what the same frames give on a runtime thread. */
Test(rules_builtin, libc_allocation)
{
	struct an_rules *r = builtin_rules();

	expect_class(r, AN_CAT_ALLOC, "malloc", "send_workers", "hx_fork_main", "main");
	expect_class(r, AN_CAT_ALLOC, "_int_malloc", "malloc", "main");
	expect_class(r, AN_CAT_ALLOC, "native_set_pte_[k]", "do_anonymous_page_[k]",
		     "asm_exc_page_fault_[k]", "sysmalloc_mmap.constprop.0", "sysmalloc",
		     "_int_malloc", "malloc", "send_workers", "main");
	expect_class(r, AN_CAT_ALLOC, "_int_free", "free", "main");
	expect_class(r, AN_CAT_ALLOC, "malloc_consolidate", "_int_malloc", "malloc");
	expect_class(r, AN_CAT_ALLOC, "_int_free.part.0", "main");
	expect_class(r, AN_CAT_ALLOC, "memset", "calloc", "main");
	expect_class(r, AN_CAT_ALLOC, "_int_realloc", "realloc", "main");
	expect_class(r, AN_CAT_ALLOC, "cfree", "main");
	expect_class(r, AN_CAT_ALLOC, "tcache_init", "malloc", "main");
	expect_class(r, AN_CAT_ALLOC, "_Znwm", "main");
	/* the runtime's own calls: the phase function around them decides */
	expect_class_rt(r, AN_CAT_SUBMIT, "_int_malloc", "calloc", "rt__task_new", "rt_spawn",
			"task_fn", "rt__fiber_start");
	expect_class_rt(r, AN_CAT_ALLOC, "_int_malloc", "malloc", "rt_alloc", "task_fn",
			"rt__fiber_start");
	expect_class_rt(r, -1, "_int_malloc", "malloc", "task_fn", "rt__fiber_start");
	/* names that only look like the allocator's */
	expect_class(r, -1, "mallocx", "main");
	expect_class(r, -1, "free_list_push", "main");
	an_rules_free(r);
}

Test(rules_builtin, stack_capture)
{
	struct an_rules *r = builtin_rules();

	expect_class(r, AN_CAT_STACKCAP, "_Unwind_Find_FDE", "_Unwind_Backtrace", "backtrace",
		     "main");
	/* a frame-pointer walk through libgcc lost backtrace: the unwinder still names it */
	expect_class_rt(r, AN_CAT_STACKCAP, "uw_frame_state_for", "_Unwind_Backtrace");
	expect_class_rt(r, AN_CAT_STACKCAP, "_Unwind_Backtrace", "backtrace", "rt_error_new",
			"task_fn", "rt__fiber_start");
	expect_class(r, AN_CAT_STACKCAP, "_ULx86_64_step", "unw_backtrace", "main");
	expect_class(r, AN_CAT_STACKCAP, "unw_step", "main");
	expect_class(r, AN_CAT_STACKCAP, "backtrace_symbols", "main");
	/* a JVM's Throwable, as its perf map, async-profiler and HotSpot name it */
	expect_class(r, AN_CAT_STACKCAP, "Ljava/lang/Throwable;::fillInStackTrace", "Main.run");
	expect_class(r, AN_CAT_STACKCAP, "java/lang/Throwable.fillInStackTrace", "Main.run");
	expect_class(r, AN_CAT_STACKCAP, "JVM_FillInStackTrace", "Main.run");
	expect_class(r, AN_CAT_STACKCAP,
		     "java_lang_Throwable::fill_in_stack_trace(Handle, methodHandle const&)",
		     "JVM_FillInStackTrace");
	an_rules_free(r);
}

Test(rules_builtin, kernel_scheduling_and_futexes)
{
	struct an_rules *r = builtin_rules();

	/* a thread that is not ours, in the kernel's scheduler or futex paths */
	expect_class(r, AN_CAT_KERNEL, "finish_task_switch.isra.0_[k]", "__schedule_[k]",
		     "schedule_[k]", "futex_wait_queue_[k]", "__futex_wait_[k]",
		     "futex_wait_[k]", "do_futex_[k]", "__x64_sys_futex_[k]",
		     "do_syscall_64_[k]", "entry_SYSCALL_64_after_hwframe_[k]", "syscall",
		     "server_loop_main");
	expect_class(r, AN_CAT_KERNEL, "_raw_spin_unlock_irqrestore_[k]", "try_to_wake_up_[k]",
		     "wake_up_q_[k]", "futex_wake_[k]", "do_futex_[k]", "__x64_sys_futex_[k]",
		     "syscall", "main");
	expect_class(r, AN_CAT_KERNEL, "hrtimer_start_range_ns_[k]", "do_nanosleep_[k]",
		     "hrtimer_nanosleep_[k]", "__x64_sys_clock_nanosleep_[k]",
		     "clock_nanosleep", "server_loop_main");
	expect_class(r, AN_CAT_KERNEL, "schedule_hrtimeout_range_[k]", "ep_poll_[k]",
		     "do_epoll_wait_[k]", "epoll_wait", "server_loop_main");
	expect_class(r, AN_CAT_KERNEL, "preempt_schedule_irq_[k]",
		     "asm_sysvec_apic_timer_interrupt_[k]", "compute", "main");
	/* the kernel's other paths are not these: the user frames decide */
	expect_class(r, -1, "copy_user_generic_[k]", "tcp_recvmsg_[k]", "recv", "main");
	expect_class(r, -1, "__napi_schedule_[k]", "main");
	/* on the runtime's threads the same kernel frames are the phase function's */
	expect_class_rt(r, AN_CAT_PARK, "__schedule_[k]", "schedule_[k]", "futex_wait_[k]",
			"do_futex_[k]", "syscall", "rt__park", "rt__drive",
			"worker_thread_main", "start_thread");
	expect_class_rt(r, AN_CAT_SUBMIT, "try_to_wake_up_[k]", "futex_wake_[k]", "syscall",
			"rt__unpark_worker", "rt__wake", "rt_spawn", "task_fn",
			"rt__fiber_start");
	expect_class_rt(r, -1, "__schedule_[k]", "preempt_schedule_irq_[k]", "task_fn",
			"rt__fiber_start");
	an_rules_free(r);
}

Test(rules_builtin, managed_runtime_frames)
{
	struct an_rules *r = builtin_rules();

	/* a fork-join pool: its run loop is scheduling, a task under doExec its own work,
	 * fork() submission, a worker with nothing to do parking */
	expect_class(r, AN_CAT_PARK, "java/util/concurrent/ForkJoinPool.awaitWork",
		     "java/util/concurrent/ForkJoinPool.runWorker",
		     "java/util/concurrent/ForkJoinWorkerThread.run");
	expect_class(r, AN_CAT_SCHED, "java/util/concurrent/ForkJoinPool.runWorker",
		     "java/util/concurrent/ForkJoinWorkerThread.run");
	expect_class(r, AN_CAT_SCHED, "Ljava/util/concurrent/ForkJoinPool;::scan",
		     "Ljava/util/concurrent/ForkJoinPool;::runWorker");
	expect_class(r, AN_CAT_WORK, "Main$Fib.compute", "java/util/concurrent/RecursiveTask.exec",
		     "java/util/concurrent/ForkJoinTask.doExec",
		     "java/util/concurrent/ForkJoinPool$WorkQueue.topLevelExec",
		     "java/util/concurrent/ForkJoinPool.scan",
		     "java/util/concurrent/ForkJoinPool.runWorker");
	expect_class(r, AN_CAT_SUBMIT, "java/util/concurrent/ForkJoinPool.signalWork",
		     "java/util/concurrent/ForkJoinTask.fork", "Main$Fib.compute",
		     "java/util/concurrent/ForkJoinTask.doExec");
	/* TLAB allocation */
	expect_class(r, AN_CAT_ALLOC, "ThreadLocalAllocBuffer::fill(HeapWordImpl**, unsigned long)",
		     "MemAllocator::allocate_inside_tlab_slow(MemAllocator::Allocation&) const",
		     "Main.run");
	expect_class(r, AN_CAT_ALLOC, "G1CollectedHeap::allocate_new_tlab(unsigned long)",
		     "Main.run");
	expect_class(r, AN_CAT_ALLOC, "TLAB_refill", "Main.run");
	expect_class(r, -1, "Main.run", "java/lang/Thread.run");
	an_rules_free(r);
}

/* ---- real runtimes' frames ------------------------------------------------------------
 * Stacks as `perf record -g` (frame pointers) took them from small spawn-join programs on
 * Go 1.19, Tokio 1.24 (Debian's rustc 1.63) and OpenJDK 17, named as schedlab names them
 * (Rust and C++ demangled, JIT frames "_[j]" from the JVM's perf map), leaf first. The
 * roots that recur are macros. */

/* a goroutine the spawn-join op started; the op's own goroutine; main, asleep */
#define GO_TASK "main.leaf", "main.op.func1", "main.op.func2", "runtime.goexit.abi0"
#define GO_OP	"main.op", "main.main.func1", "runtime.goexit.abi0"
#define GO_MAIN "time.Sleep", "main.main", "runtime.main", "runtime.goexit.abi0"
/* a futex wait's kernel half, which the kernel rules name first */
#define K_FUTEX_WAIT                                                                           \
	"pvm_irq_enable_[k]", "__raw_callee_save_pvm_irq_enable_[k]",                          \
		"finish_task_switch.isra.0_[k]", "__schedule_[k]", "schedule_[k]",             \
		"futex_do_wait_[k]", "__futex_wait_[k]", "futex_wait_[k]", "do_futex_[k]",     \
		"__x64_sys_futex_[k]", "do_syscall_64_[k]", "entry_SYSCALL_64_after_hwframe_[k]"
/* a system call's return, which no kernel rule names */
#define K_SYSCALL_RET                                                                          \
	"pvm_irq_enable_[k]", "__raw_callee_save_pvm_irq_enable_[k]", "do_syscall_64_[k]",     \
		"entry_SYSCALL_64_after_hwframe_[k]"

Test(rules_builtin, go_runtime_frames)
{
	struct an_rules *r = builtin_rules();

	/* the scheduler loop: a finished goroutine's M picking the next, stealing, a
	 * goroutine blocking, and its exit */
	expect_class(r, AN_CAT_SCHED, "runtime.runqget", "runtime.schedule", "runtime.goexit0",
		     "runtime.mcall", "runtime.goexit.abi0");
	expect_class(r, AN_CAT_SCHED, "runtime.usleep.abi0", "runtime.runqgrab",
		     "runtime.runqsteal", "runtime.stealWork", "runtime.findRunnable",
		     "runtime.schedule", "runtime.park_m", "runtime.mcall", GO_MAIN);
	expect_class(r, AN_CAT_SCHED, "runtime.gopark", "runtime.gcMarkDone",
		     "runtime.gcAssistAlloc", "runtime.mallocgc", "runtime.makeslice", GO_TASK);
	expect_class(r, AN_CAT_SCHED, "runtime.goexit1.abi0");
	/* runqput is its caller's: moving a batch off the global queue is scheduling,
	 * queueing a new goroutine submission */
	expect_class(r, AN_CAT_SCHED, "runtime.runqput", "runtime.globrunqget",
		     "runtime.findRunnable", "runtime.schedule", "runtime.goexit0",
		     "runtime.mcall", "runtime.goexit.abi0");
	expect_class(r, AN_CAT_SUBMIT, "runtime.runqput", "runtime.newproc.func1",
		     "runtime.systemstack.abi0", GO_OP);

	/* spawning (newproc: the walk crosses systemstack to the goroutine that spawns),
	 * readying a goroutine a channel send unblocked, and waking an M */
	expect_class(r, AN_CAT_SUBMIT, "runtime.gfget", "runtime.newproc1",
		     "runtime.newproc.func1", "runtime.systemstack.abi0", GO_OP);
	expect_class(r, AN_CAT_SUBMIT, "runtime.casgstatus", "runtime.ready",
		     "runtime.goready.func1", "runtime.systemstack.abi0", "runtime.send",
		     "runtime.chansend", "runtime.chansend1", "main.main.func2",
		     "runtime.goexit.abi0");
	expect_class(r, AN_CAT_SUBMIT, K_SYSCALL_RET, "runtime.futex.abi0",
		     "runtime.notewakeup", "runtime.startm", "runtime.wakep",
		     "runtime.resetspinning", "runtime.schedule", "runtime.park_m",
		     "runtime.mcall", GO_MAIN);

	/* an M going to sleep, inside the futex system call too: the kernel rules give way */
	expect_class(r, AN_CAT_PARK, "runtime.futex.abi0", "runtime.notesleep", "runtime.stopm",
		     "runtime.findRunnable", "runtime.schedule", "runtime.park_m",
		     "runtime.mcall", GO_MAIN);
	expect_class(r, AN_CAT_PARK, K_SYSCALL_RET, "runtime.futex.abi0", "runtime.notesleep",
		     "runtime.stopm", "runtime.findRunnable", "runtime.schedule",
		     "runtime.park_m", "runtime.mcall", GO_MAIN);
	expect_class(r, AN_CAT_PARK, K_FUTEX_WAIT, "runtime.futex.abi0", "runtime.notesleep",
		     "runtime.stopm", "runtime.findRunnable", "runtime.schedule",
		     "runtime.park_m", "runtime.mcall", GO_MAIN);
	/* the futex with no frame of the runtime's under it is the kernel's */
	expect_class(r, AN_CAT_KERNEL, K_FUTEX_WAIT, "runtime.futex.abi0");

	/* allocation: mallocgc, a goroutine's stack (grown, or made for a new goroutine
	 * under newproc), the GC's workers, assists, sweeping and scavenging */
	expect_class(r, AN_CAT_ALLOC, "runtime.mallocgc", "runtime.makeslice", GO_TASK);
	expect_class(r, AN_CAT_ALLOC, "runtime.stackpoolalloc", "runtime.stackcacherefill",
		     "runtime.stackalloc", "runtime.copystack", "runtime.newstack",
		     "runtime.morestack.abi0", "runtime.newobject", "runtime.acquireSudog",
		     "runtime.semacquire1", "runtime.gcMarkDone", "runtime.gcAssistAlloc",
		     "runtime.mallocgc", "runtime.makeslice", GO_TASK);
	expect_class(r, AN_CAT_ALLOC, "runtime.stackpoolalloc", "runtime.stackcacherefill",
		     "runtime.stackalloc", "runtime.gfget.func2", "runtime.gfget",
		     "runtime.newproc1", "runtime.newproc.func1", "runtime.systemstack.abi0",
		     GO_OP);
	expect_class(r, AN_CAT_ALLOC, "runtime.scanobject", "runtime.gcDrain",
		     "runtime.gcBgMarkWorker.func2", "runtime.systemstack.abi0",
		     "runtime.goexit.abi0");
	expect_class(r, AN_CAT_ALLOC, "runtime.sweepone", "runtime.deductSweepCredit",
		     "runtime.(*mcentral).cacheSpan", "runtime.(*mcache).refill",
		     "runtime.(*mcache).nextFree", "runtime.mallocgc", "runtime.makeslice",
		     GO_TASK);
	expect_class(r, AN_CAT_ALLOC, "pvm_irq_enable_[k]",
		     "__raw_callee_save_pvm_irq_enable_[k]", "smp_call_function_many_cond_[k]",
		     "on_each_cpu_cond_mask_[k]", "flush_tlb_mm_range_[k]",
		     "tlb_flush_mmu_tlbonly_[k]", "tlb_finish_mmu_[k]", "do_madvise_[k]",
		     "__x64_sys_madvise_[k]", "do_syscall_64_[k]",
		     "entry_SYSCALL_64_after_hwframe_[k]", "runtime.madvise.abi0",
		     "runtime.sysUnused", "runtime.(*pageAlloc).scavengeOne",
		     "runtime.(*pageAlloc).scavenge.func1", "runtime.systemstack.abi0",
		     "runtime.(*scavengerState).init.func2", "runtime.(*scavengerState).run",
		     "runtime.bgscavenge", "runtime.gcenable.func2", "runtime.goexit.abi0");
	/* gentraceback is its caller's: the GC scanning a stack is allocation ... */
	expect_class(r, AN_CAT_ALLOC, "runtime.gentraceback", "runtime.scanstack",
		     "runtime.markroot.func1", "runtime.markroot", "runtime.gcDrain",
		     "runtime.gcBgMarkWorker.func2", "runtime.systemstack.abi0",
		     "runtime.goexit.abi0");
	/* ... runtime.Callers capturing one is stack capture */
	expect_class(r, AN_CAT_STACKCAP, "runtime.pcvalue", "runtime.funcspdelta",
		     "runtime.gentraceback", "runtime.callers.func1", "runtime.systemstack.abi0",
		     GO_TASK);

	/* a goroutine's own code, the runtime's channel locks in it included */
	expect_class(r, AN_CAT_WORK, GO_TASK);
	expect_class(r, AN_CAT_WORK, "runtime.lock2", "runtime.chansend", "runtime.chansend1",
		     GO_TASK);
	/* what stays other: a walk that lost the goroutine's root (a sample on a
	 * function's first instruction), and the process's start before the scheduler */
	expect_class(r, -1, "main.op.func2");
	expect_class(r, -1, "pvm_irq_enable_[k]", "__raw_callee_save_pvm_irq_enable_[k]",
		     "exc_page_fault_[k]", "asm_exc_page_fault_[k]", "runtime.vdsoFindVersion",
		     "runtime.vdsoauxv", "runtime.sysauxv", "runtime.sysargs", "runtime.args",
		     "runtime.args.abi0", "runtime.rt0_go.abi0");
	/* names that only look like the runtime's */
	expect_class(r, -1, "runtime.goexitx", "main.main");
	expect_class(r, -1, "main.schedule", "main.main");
	an_rules_free(r);
}

/* a multi-threaded runtime's worker thread (a blocking-pool thread running the worker
 * loop), and a task's future polled in it */
#define TOKIO_WORKER                                                                           \
	"tokio::runtime::scheduler::multi_thread::worker::Context::run",                      \
		"tokio::macros::scoped_tls::ScopedKey<T>::set",                                \
		"tokio::runtime::scheduler::multi_thread::worker::run",                        \
		"tokio::loom::std::unsafe_cell::UnsafeCell<T>::with_mut",                      \
		"tokio::runtime::task::core::Core<T,S>::poll",                                 \
		"tokio::runtime::task::harness::Harness<T,S>::poll",                           \
		"tokio::runtime::blocking::pool::Inner::run",                                  \
		"std::sys_common::backtrace::__rust_begin_short_backtrace",                    \
		"core::ops::function::FnOnce::call_once{{vtable.shim}}",                       \
		"std::sys::unix::thread::Thread::new::thread_start"
#define TOKIO_TASK                                                                             \
	"_<core::future::from_generator::GenFuture<T> as core::future::future::Future>::poll", \
		"tokio::runtime::task::core::Core<T,S>::poll",                                 \
		"tokio::runtime::task::harness::Harness<T,S>::poll",                           \
		"tokio::runtime::scheduler::multi_thread::worker::Context::run_task",          \
		TOKIO_WORKER

Test(rules_builtin, tokio_runtime_frames)
{
	struct an_rules *r = builtin_rules();

	/* the worker loop: the injection queue, a task's state change around its poll,
	 * its release when it completed, a JoinHandle reading its output */
	expect_class(r, AN_CAT_SCHED, "tokio::runtime::task::inject::Inject<T>::pop",
		     TOKIO_WORKER);
	expect_class(r, AN_CAT_SCHED, "tokio::runtime::task::state::State::transition_to_running",
		     "tokio::runtime::task::harness::Harness<T,S>::poll",
		     "tokio::runtime::scheduler::multi_thread::worker::Context::run_task",
		     TOKIO_WORKER);
	/* (Harness::complete is an LLVM clone, ".llvm.N", as a name without a rule: the
	 * rules around it decide) */
	expect_class(r, AN_CAT_SCHED,
		     "tokio::runtime::scheduler::multi_thread::worker::_<impl "
		     "tokio::runtime::task::Schedule for "
		     "alloc::sync::Arc<tokio::runtime::scheduler::multi_thread::handle::Handle>>"
		     "::release",
		     "_ZN5tokio7runtime4task7harness20Harness$LT$T$C$S$GT$8complete17h1a5b17eca1e4e"
		     "27dE.llvm.11307515491380826114",
		     "tokio::runtime::task::harness::Harness<T,S>::poll",
		     "tokio::runtime::scheduler::multi_thread::worker::Context::run_task",
		     TOKIO_WORKER);
	expect_class(r, AN_CAT_SCHED,
		     "tokio::runtime::task::harness::Harness<T,S>::try_read_output",
		     "_<tokio::runtime::task::join::JoinHandle<T> as "
		     "core::future::future::Future>::poll",
		     TOKIO_TASK);

	/* spawning (tokio::spawn itself is inlined into the task that spawns: binding the
	 * new task and the handle it looks up are what show) and waking: scheduling a
	 * woken task and picking a parked worker to notify */
	expect_class(r, AN_CAT_SUBMIT, "tokio::runtime::task::list::OwnedTasks<S>::bind",
		     TOKIO_TASK);
	expect_class(r, AN_CAT_SUBMIT, "tokio::runtime::scheduler::Handle::current", TOKIO_TASK);
	expect_class(r, AN_CAT_SUBMIT,
		     "tokio::runtime::scheduler::multi_thread::idle::Idle::worker_to_notify",
		     "tokio::runtime::scheduler::multi_thread::worker::_<impl "
		     "tokio::runtime::scheduler::multi_thread::handle::Handle>::schedule_task",
		     TOKIO_TASK);
	expect_class(r, AN_CAT_SUBMIT, "tokio::sync::task::atomic_waker::AtomicWaker::wake",
		     "tokio::sync::mpsc::unbounded::UnboundedSender<T>::send", TOKIO_TASK);
	/* the same frames with the LLVM clones demangled: a waker's wake */
	expect_class(r, AN_CAT_SUBMIT, "tokio::runtime::task::waker::wake_by_val",
		     "std::thread::local::LocalKey<T>::with", TOKIO_TASK);

	/* a worker parking, and the time driver it holds while parked (whose
	 * park_internal is an LLVM clone) */
	expect_class(r, AN_CAT_PARK,
		     "tokio::runtime::scheduler::multi_thread::park::Parker::park_timeout",
		     "tokio::runtime::scheduler::multi_thread::worker::Context::park_timeout",
		     TOKIO_WORKER);
	expect_class(r, AN_CAT_PARK,
		     "tokio::runtime::time::_<impl "
		     "tokio::runtime::time::handle::Handle>::process_at_time",
		     "_ZN5tokio7runtime4time6Driver13park_internal17h2ab7b1c7be705671E.llvm."
		     "4566857722245592318",
		     "tokio::runtime::scheduler::multi_thread::park::Parker::park_timeout",
		     "tokio::runtime::scheduler::multi_thread::worker::Context::park_timeout",
		     TOKIO_WORKER);

	/* a finished task's cell freed when its JoinHandle drops; the allocator under
	 * anything */
	expect_class(r, AN_CAT_ALLOC, "tokio::runtime::task::harness::Harness<T,S>::dealloc",
		     "tokio::runtime::task::harness::Harness<T,S>::drop_join_handle_slow",
		     TOKIO_TASK);
	expect_class(r, AN_CAT_ALLOC, "malloc", "[unknown]+0x0");

	/* a task's own code: its future, the channel it sends on, a contended std mutex */
	expect_class(r, AN_CAT_WORK, TOKIO_TASK);
	expect_class(r, AN_CAT_WORK, "tokio::sync::mpsc::list::Tx<T>::push",
		     "tokio::sync::mpsc::unbounded::UnboundedSender<T>::send", TOKIO_TASK);
	expect_class(r, AN_CAT_WORK, "std::sys::unix::locks::futex::Mutex::lock_contended",
		     TOKIO_TASK);
	/* what stays other: std's futex calls through glibc's syscall(), where the walk
	 * stops, and the main thread's block_on outside the workers */
	expect_class(r, -1, "syscall");
	expect_class(r, -1, "tokio::runtime::park::CachedParkThread::block_on",
		     "tokio::runtime::runtime::Runtime::block_on", "tokspawn::main",
		     "std::rt::lang_start_internal", "main");
	an_rules_free(r);
}

/* a fork-join worker thread (its run loop interpreted), and the JVM's main thread */
#define FJ_THREAD                                                                              \
	"Interpreter_[j]", "StubRoutines (1)_[j]", "JavaCalls::call_helper",                   \
		"JavaCalls::call_virtual", "thread_entry", "JavaThread::thread_main_inner",    \
		"Thread::call_run", "thread_native_entry", "start_thread"
#define FJ_WORKER                                                                              \
	"int java.util.concurrent.ForkJoinPool.scan(java.util.concurrent.ForkJoinPool$"        \
	"WorkQueue, int, int)_[j]",                                                            \
		FJ_THREAD
#define JVM_MAIN                                                                               \
	"StubRoutines (1)_[j]", "JavaCalls::call_helper",                                      \
		"jni_invoke_static(JNIEnv_*, JavaValue*, _jobject*, JNICallType, _jmethodID*, "\
		"JNI_ArgumentPusher*, JavaThread*) [clone .constprop.1]",                      \
		"jni_CallStaticVoidMethod", "JavaMain", "ThreadJavaMain", "start_thread"
/* a RecursiveTask forked and joined (its recursion cut to two levels) */
#define FJ_TASK                                                                                \
	"java.lang.Long FJ$Tree.compute()_[j]",                                                \
		"int java.util.concurrent.ForkJoinTask.doExec()_[j]",                          \
		"int java.util.concurrent.ForkJoinTask.awaitDone(java.util.concurrent."        \
		"ForkJoinPool, boolean, boolean, boolean, long)_[j]",                          \
		"java.lang.Long FJ$Tree.compute()_[j]",                                        \
		"int java.util.concurrent.ForkJoinTask.doExec()_[j]",                          \
		"void java.util.concurrent.ForkJoinPool$WorkQueue.topLevelExec(java.util."     \
		"concurrent.ForkJoinTask, java.util.concurrent.ForkJoinPool$WorkQueue)_[j]",   \
		FJ_WORKER
#define FJ_AWAIT_WORK                                                                          \
	"int java.util.concurrent.ForkJoinPool.awaitWork(java.util.concurrent.ForkJoinPool$"   \
	"WorkQueue)_[j]",                                                                      \
		"void java.util.concurrent.ForkJoinPool.runWorker(java.util.concurrent."       \
		"ForkJoinPool$WorkQueue)_[j]",                                                 \
		FJ_THREAD

Test(rules_builtin, jdk_runtime_frames)
{
	struct an_rules *r = builtin_rules();

	/* the pool as the JVM's perf map names it: a task's own work, the run loop, a
	 * fork's push, a submission from outside, and a worker parking in awaitWork */
	expect_class(r, AN_CAT_WORK, FJ_TASK);
	/* a task's blocking java.net.Socket read, in the system call, and in the poll */
	expect_class(r, AN_CAT_BLOCK, "tcp_recvmsg_[k]", "__x64_sys_recvfrom_[k]", "recv",
		     "Java_sun_nio_ch_SocketDispatcher_read0",
		     "int sun.nio.ch.SocketDispatcher.read0(java.io.FileDescriptor, long, int)_[j]",
		     "int sun.nio.ch.NioSocketImpl.implRead(byte[], int, int)_[j]",
		     "int sun.nio.ch.NioSocketImpl.read(byte[], int, int)_[j]", FJ_TASK);
	expect_class(r, AN_CAT_BLOCK, "do_sys_poll_[k]", "poll", "Java_sun_nio_ch_Net_poll",
		     "void sun.nio.ch.NioSocketImpl.park(java.io.FileDescriptor, int, long)_[j]",
		     FJ_TASK);
	expect_class(r, AN_CAT_SCHED,
		     "void java.util.concurrent.ForkJoinPool.runWorker(java.util.concurrent."
		     "ForkJoinPool$WorkQueue)_[j]",
		     FJ_THREAD);
	expect_class(r, AN_CAT_SUBMIT,
		     "void java.util.concurrent.ForkJoinPool$WorkQueue.push(java.util.concurrent."
		     "ForkJoinTask, java.util.concurrent.ForkJoinPool)_[j]",
		     "java.util.concurrent.ForkJoinTask java.util.concurrent.ForkJoinTask."
		     "fork()_[j]",
		     FJ_TASK);
	expect_class(r, AN_CAT_SUBMIT, "__tls_get_addr", "Unsafe_Unpark",
		     "void jdk.internal.misc.Unsafe.unpark(java.lang.Object)_[j]",
		     "java.util.concurrent.ForkJoinTask java.util.concurrent.ForkJoinPool."
		     "externalSubmit(java.util.concurrent.ForkJoinTask)_[j]",
		     "void FJ.main(java.lang.String[])_[j]", JVM_MAIN);
	expect_class(r, AN_CAT_PARK, "Parker::park", "Unsafe_Park",
		     "void jdk.internal.misc.Unsafe.park(boolean, long)_[j]", FJ_AWAIT_WORK);
	/* parking unlocks the Parker's mutex, which wakes the thread that waits for it */
	expect_class(r, AN_CAT_SUBMIT, K_SYSCALL_RET, "__lll_lock_wake", "Unsafe_Park",
		     "void jdk.internal.misc.Unsafe.park(boolean, long)_[j]", FJ_AWAIT_WORK);
	/* the main thread joining a task it submitted, its own code, and a
	 * CompletableFuture made on the pool */
	expect_class(r, AN_CAT_SCHED,
		     "int java.util.concurrent.ForkJoinTask.awaitDone(java.util.concurrent."
		     "ForkJoinPool, boolean, boolean, boolean, long)_[j]",
		     "java.lang.Object java.util.concurrent.ForkJoinTask.get()_[j]",
		     "void FJ.main(java.lang.String[])_[j]", JVM_MAIN);
	expect_class(r, AN_CAT_SUBMIT,
		     "java.util.concurrent.CompletableFuture java.util.concurrent."
		     "CompletableFuture.asyncSupplyStage(java.util.concurrent.Executor, "
		     "java.util.function.Supplier)_[j]",
		     "long FJ.futures(int)_[j]", "Interpreter_[j]", JVM_MAIN);
	/* a task's completion unparking the thread that waits to join it */
	expect_class(r, AN_CAT_SUBMIT, "Unsafe_Unpark",
		     "void jdk.internal.misc.Unsafe.unpark(java.lang.Object)_[j]",
		     "int java.util.concurrent.ForkJoinTask.setDone()_[j]", "Interpreter_[j]",
		     "void java.util.concurrent.ForkJoinPool$WorkQueue.topLevelExec(java.util."
		     "concurrent.ForkJoinTask, java.util.concurrent.ForkJoinPool$WorkQueue)_[j]",
		     FJ_WORKER);
	/* the main thread in CompletableFuture.get(), parked (the pool's managedBlock
	 * around it would say scheduling) */
	expect_class(r, AN_CAT_PARK, "__pthread_mutex_unlock_usercnt", "Unsafe_Park",
		     "void jdk.internal.misc.Unsafe.park(boolean, long)_[j]",
		     "void java.util.concurrent.locks.LockSupport.park(java.lang.Object)_[j]",
		     "boolean java.util.concurrent.CompletableFuture$Signaller.block()_[j]",
		     "void java.util.concurrent.ForkJoinPool.managedBlock(java.util.concurrent."
		     "ForkJoinPool$ManagedBlocker)_[j]",
		     "java.lang.Object java.util.concurrent.CompletableFuture.waitingGet("
		     "boolean)_[j]",
		     "long FJ.futures(int)_[j]", "Interpreter_[j]", JVM_MAIN);
	expect_class(r, AN_CAT_SCHED,
		     "java.lang.Object java.util.concurrent.CompletableFuture.waitingGet("
		     "boolean)_[j]",
		     "long FJ.futures(int)_[j]", "Interpreter_[j]", JVM_MAIN);
	/* completing a future runs its synchronous dependant inline: the task's work */
	expect_class(r, AN_CAT_WORK,
		     "java.util.concurrent.CompletableFuture java.util.concurrent."
		     "CompletableFuture$UniApply.tryFire(int)_[j]",
		     "void java.util.concurrent.CompletableFuture.postComplete()_[j]",
		     "void java.util.concurrent.CompletableFuture$AsyncSupply.run()_[j]",
		     "boolean java.util.concurrent.CompletableFuture$AsyncSupply.exec()_[j]",
		     "Interpreter_[j]",
		     "void java.util.concurrent.ForkJoinPool$WorkQueue.topLevelExec(java.util."
		     "concurrent.ForkJoinTask, java.util.concurrent.ForkJoinPool$WorkQueue)_[j]",
		     FJ_WORKER);

	/* a Throwable: filling its trace, and making StackTraceElements of it */
	expect_class(r, AN_CAT_STACKCAP, "pvm_irq_enable_[k]",
		     "__raw_callee_save_pvm_irq_enable_[k]", "exc_page_fault_[k]",
		     "asm_exc_page_fault_[k]",
		     "java.lang.StackTraceElement[] java.lang.StackTraceElement.of("
		     "java.lang.Throwable, int)_[j]",
		     "java.lang.StackTraceElement[] java.lang.Throwable.getOurStackTrace()_[j]",
		     FJ_TASK);
	expect_class(r, AN_CAT_STACKCAP, "StringTable::intern", "StringTable::intern",
		     "java_lang_StackTraceElement::fill_in",
		     "java_lang_Throwable::get_stack_trace_elements",
		     "JVM_InitStackTraceElementArray",
		     "void java.lang.StackTraceElement.initStackTraceElements(java.lang."
		     "StackTraceElement[], java.lang.Throwable)_[j]",
		     FJ_TASK);
	/* ... but the allocation inside it is allocation */
	expect_class(r, AN_CAT_ALLOC, "__memset_avx512_unaligned_erms", "MemAllocator::allocate",
		     "TypeArrayKlass::allocate_common", "BacktraceBuilder::expand",
		     "java_lang_Throwable::fill_in_stack_trace",
		     "java_lang_Throwable::fill_in_stack_trace", "JVM_FillInStackTrace",
		     "Java_java_lang_Throwable_fillInStackTrace",
		     "java.lang.Throwable java.lang.Throwable.fillInStackTrace(int)_[j]",
		     "void java.lang.IllegalStateException.<init>(java.lang.String)_[j]", FJ_TASK);
	expect_class(r, AN_CAT_ALLOC, "pvm_irq_enable_[k]",
		     "__raw_callee_save_pvm_irq_enable_[k]", "exc_page_fault_[k]",
		     "asm_exc_page_fault_[k]", "ObjAllocator::initialize",
		     "MemAllocator::allocate", "InstanceKlass::allocate_instance",
		     "Unsafe_AllocateInstance",
		     "java.lang.Object jdk.internal.misc.Unsafe.allocateInstance(java.lang."
		     "Class)_[j]",
		     "long FJ.futures(int)_[j]", "Interpreter_[j]", JVM_MAIN);

	/* what stays other: the JIT compiler's threads, a safepoint that is not a
	 * collection, the main thread's own code */
	expect_class(r, -1, "PhaseChaitin::elide_copy", "PhaseChaitin::post_allocate_copy_removal",
		     "PhaseChaitin::Register_Allocate", "Compile::Code_Gen", "Compile::Compile",
		     "C2Compiler::compile_method", "CompileBroker::invoke_compiler_on_method",
		     "CompileBroker::compiler_thread_loop", "JavaThread::thread_main_inner",
		     "Thread::call_run", "thread_native_entry", "start_thread");
	expect_class(r, -1, "clock_nanosleep", "SafepointSynchronize::synchronize_threads",
		     "SafepointSynchronize::begin", "VMThread::inner_execute", "VMThread::run",
		     "Thread::call_run", "thread_native_entry", "start_thread");
	expect_class(r, -1, "long FJ.futures(int)_[j]", "Interpreter_[j]", JVM_MAIN);
	an_rules_free(r);
}

Test(rules_builtin, jvm_garbage_collectors)
{
	struct an_rules *r = builtin_rules();

	/* G1's workers evacuating, and a template of its closures */
	expect_class(r, AN_CAT_ALLOC, "SpinPause", "G1ParEvacuateFollowersClosure::do_void",
		     "G1EvacuateRegionsTask::evacuate_live_objects",
		     "G1EvacuateRegionsBaseTask::work", "GangWorker::loop", "libjvm.so+0xf55d4e",
		     "Thread::call_run", "thread_native_entry", "start_thread");
	expect_class(r, AN_CAT_ALLOC,
		     "void OopOopIterateDispatch<G1ScanCardClosure>::Table::oop_oop_iterate"
		     "<ObjArrayKlass, narrowOop>",
		     "libjvm.so+0xf55d4e");
	/* Parallel's scavenge, its template named with its return type first */
	expect_class(r, AN_CAT_ALLOC,
		     "oopDesc* PSPromotionManager::copy_unmarked_to_survivor_space<false>",
		     "libjvm.so+0x1234");
	expect_class(r, AN_CAT_ALLOC,
		     "oopDesc* PSPromotionManager::copy_unmarked_to_survivor_space<false>",
		     "PSPromotionManager::drain_stacks_depth",
		     "PSCardTable::scavenge_contents_parallel", "ScavengeRootsTask::work",
		     "GangWorker::loop", "libjvm.so+0xf55d4e", "Thread::call_run",
		     "thread_native_entry", "start_thread");
	/* Serial's young collection, run by the VM thread at a safepoint */
	expect_class(r, AN_CAT_ALLOC, "ContiguousSpace::block_size",
		     "BlockOffsetArrayContigSpace::block_start_unsafe",
		     "DirtyCardToOopClosure::do_MemRegion",
		     "ClearNoncleanCardWrapper::do_MemRegion",
		     "CardTableRS::younger_refs_in_space_iterate",
		     "SerialHeap::young_process_roots", "DefNewGeneration::collect",
		     "GenCollectedHeap::collect_generation", "GenCollectedHeap::do_collection",
		     "GenCollectedHeap::satisfy_failed_allocation",
		     "VM_GenCollectForAllocation::doit", "VM_Operation::evaluate",
		     "VMThread::evaluate_operation", "VMThread::inner_execute", "VMThread::run",
		     "Thread::call_run", "thread_native_entry", "start_thread");
	expect_class(r, AN_CAT_ALLOC, "VM_GenCollectForAllocation::doit",
		     "VM_Operation::evaluate", "VMThread::run");
	/* full collections (System.gc()): Serial's mark-compact of the old generation,
	 * Parallel's compaction in its workers (a clone whose parameters stay on) */
	expect_class(r, AN_CAT_ALLOC, "ContiguousSpace::prepare_for_compaction",
		     "Generation::prepare_for_compaction",
		     "GenCollectedHeap::prepare_for_compaction",
		     "GenMarkSweep::invoke_at_safepoint", "TenuredGeneration::collect",
		     "GenCollectedHeap::collect_generation", "GenCollectedHeap::do_collection",
		     "GenCollectedHeap::do_full_collection", "VM_GenCollectFull::doit",
		     "VM_Operation::evaluate", "VMThread::evaluate_operation",
		     "VMThread::inner_execute", "VMThread::run", "Thread::call_run",
		     "thread_native_entry", "start_thread");
	expect_class(r, AN_CAT_ALLOC, "MarkSweep::follow_array_chunk", "MarkSweep::follow_stack",
		     "libjvm.so+0x1234");
	expect_class(r, AN_CAT_ALLOC, "__memmove_avx512_unaligned_erms", "ParMarkBitMap::iterate",
		     "PSParallelCompact::fill_region(ParCompactionManager*, "
		     "MoveAndUpdateClosure&, unsigned long) [clone .constprop.0]",
		     "libjvm.so+0x1234");
	/* a name with G1 in it that is no C++ method of the collector's */
	expect_class(r, -1, "void FooG1.bar()_[j]", "Main.run");
	an_rules_free(r);
}

Test(rules_builtin, glibc_thread_frames)
{
	struct an_rules *r = builtin_rules();

	/* a walk that stops in glibc: its leaf is all there is */
	expect_class(r, AN_CAT_SUBMIT, "pthread_cond_signal");
	expect_class(r, AN_CAT_SUBMIT, K_SYSCALL_RET, "pthread_cond_signal");
	expect_class(r, AN_CAT_SUBMIT, "__lll_lock_wake", "__libc_start_call_main");
	expect_class(r, AN_CAT_PARK, "__futex_abstimed_wait_common");
	expect_class(r, AN_CAT_PARK, K_SYSCALL_RET, "__futex_abstimed_wait_common");
	expect_class(r, AN_CAT_PARK, K_SYSCALL_RET, "__lll_lock_wait");
	expect_class(r, AN_CAT_PARK, "__condvar_dec_grefs");
	/* in the futex system call the wait it serves decides; alone, the kernel's */
	expect_class(r, AN_CAT_PARK, K_FUTEX_WAIT, "__futex_abstimed_wait_common");
	expect_class(r, AN_CAT_KERNEL, K_FUTEX_WAIT, "syscall", "server_loop_main");
	/* making a thread: pthread_create, and the clone3 system call it makes */
	expect_class(r, AN_CAT_SUBMIT, "pthread_create");
	expect_class(r, AN_CAT_SUBMIT, "pthread_create", "asm_exc_page_fault_[k]",
		     "exc_page_fault_[k]", "handle_mm_fault_[k]", "__handle_mm_fault_[k]",
		     "do_anonymous_page_[k]", "__pte_alloc_[k]", "pmd_install_[k]",
		     "native_set_pmd_[k]");
	expect_class(r, AN_CAT_SUBMIT, "copy_process_[k]", "kernel_clone_[k]",
		     "__do_sys_clone3_[k]", "do_syscall_64_[k]",
		     "entry_SYSCALL_64_after_hwframe_[k]", "clone3", "[unknown]+0x557c4bc3b2b0");
	/* clone3 only as the leaf: a thread's own frames above it are not submission */
	expect_class(r, -1, "pong", "clone3");
	/* start_thread, every thread's root, names nothing */
	expect_class(r, -1, "pong", "start_thread");
	expect_class(r, -1, "main", "__libc_start_call_main");
	an_rules_free(r);
}
