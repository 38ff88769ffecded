/*
 * The runner behind tests/tsan/criterion/criterion.h: runs every registered test in
 * turn in this process (sorted by suite and name, --filter suite/name glob as with
 * Criterion), each under an alarm of its .timeout, and exits non-zero if any failed.
 * ThreadSanitizer itself ends the run at the first race (halt_on_error=1).
 */
#include <fnmatch.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "criterion/criterion.h"

static struct shim_test *tests;
static unsigned ntests;
static pthread_t runner;
static sigjmp_buf escape;
static unsigned failures; /* in the current test */
static const char *running;

void shim_register(struct shim_test *t)
{
	t->next = tests;
	tests = t;
	ntests++;
}

void shim_log(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("[----] ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void shim_fail(const char *file, int line, bool fatal, const char *expr, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "[----] %s:%d: %s failed", file, line, expr);
	if (*fmt) {
		fputs(": ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
	__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
	if (!fatal)
		return;
	if (!pthread_equal(pthread_self(), runner)) {
		/* inside a task or another thread: nothing to unwind to */
		fprintf(stderr, "[FAIL] %s: fatal assertion off the test's thread\n", running);
		_exit(1);
	}
	siglongjmp(escape, 1);
}

void shim_skip(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "[SKIP] %s: ", running);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	siglongjmp(escape, 2);
}

static void on_alarm(int sig)
{
	fprintf(stderr, "[FAIL] %s: timed out\n", running);
	_exit(1);
}

static int by_name(const void *a, const void *b)
{
	const struct shim_test *x = *(const struct shim_test *const *)a;
	const struct shim_test *y = *(const struct shim_test *const *)b;
	int c = strcmp(x->suite, y->suite);

	return c ? c : strcmp(x->name, y->name);
}

int main(int argc, char **argv)
{
	const char *filter = NULL;
	struct shim_test **v = calloc(ntests + 1, sizeof(*v));
	unsigned n = 0, passed = 0, failed = 0, skipped = 0;
	char full[256];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--filter") && i + 1 < argc)
			filter = argv[++i];
		else if (!strncmp(argv[i], "--filter=", 9))
			filter = argv[i] + 9;
	}
	runner = pthread_self();
	signal(SIGALRM, on_alarm);
	for (struct shim_test *t = tests; t; t = t->next)
		v[n++] = t;
	qsort(v, n, sizeof(*v), by_name);
	for (unsigned i = 0; i < n; i++) {
		struct shim_test *t = v[i];
		int how;

		snprintf(full, sizeof(full), "%s/%s", t->suite, t->name);
		if (filter && fnmatch(filter, full, 0))
			continue;
		if (t->disabled || t->signal || t->exit_code) {
			skipped++;
			continue; /* crash tests belong to the normal build */
		}
		running = full;
		failures = 0;
		alarm(t->timeout > 0 ? (unsigned)t->timeout * 4 : 240); /* TSan is slow */
		how = sigsetjmp(escape, 1);
		if (!how)
			t->fn();
		alarm(0);
		if (how == 2) {
			skipped++;
		} else if (failures) {
			failed++;
			fprintf(stderr, "[FAIL] %s\n", full);
		} else {
			passed++;
		}
	}
	fprintf(stderr, "[====] Synthesis (ThreadSanitizer): Tested: %u | Passing: %u | Failing: %u | "
			"Skipped: %u\n",
		passed + failed, passed, failed, skipped);
	free(v);
	return failed ? 1 : 0;
}
