/*
 * The alloc probe against tests/probes/helpers/allocs, a child whose allocator calls are
 * known: calls and bytes exact per function, sampled bytes within the estimator's bound
 * of the true total, stacks that name the allocating function, and every loss of a
 * tiny map counted and drawn.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "harness/harness.h"
#include "probes/probes.h"
#include "tests/probes/busy.h"
#include "tests/probes/helpers/allocs.h"

/* The child, stopped before its allocations: to_child starts them, from_child says
 * "done". */
struct child {
	pid_t pid;
	int to_child, from_child;
};

static void read_line(int fd, const char *want)
{
	char buf[16];
	size_t n = 0;

	while (n < strlen(want)) {
		ssize_t r = read(fd, buf + n, strlen(want) - n);

		cr_assert_gt(r, 0, "allocs said nothing (waiting for '%s')", want);
		n += (size_t)r;
	}
	cr_assert_eq(memcmp(buf, want, n), 0, "allocs said '%.*s', not '%s'", (int)n, buf, want);
}

static struct child spawn_allocs(void)
{
	const char *build = getenv("SCHEDLAB_BUILD");
	char path[PATH_MAX];
	int in[2], out[2];
	struct child c;

	snprintf(path, sizeof(path), "%s/tests/helpers/allocs", build ? build : "build");
	cr_assert_eq(pipe2(in, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	c.pid = fork();
	cr_assert_geq(c.pid, 0, "fork: %s", strerror(errno));
	if (c.pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(in[0], STDIN_FILENO);
		dup2(out[1], STDOUT_FILENO);
		execl(path, "allocs", (char *)NULL);
		fprintf(stderr, "exec %s: %s\n", path, strerror(errno));
		_exit(127);
	}
	kids[nkids++] = c.pid;
	close(in[0]);
	close(out[1]);
	c.to_child = in[1];
	c.from_child = out[0];
	read_line(c.from_child, "ready\n");
	return c;
}

/* Let the child make its calls, and wait until it has. */
static void run_allocs(struct child *c)
{
	cr_assert_eq(write(c->to_child, "g", 1), 1);
	read_line(c->from_child, "done\n");
}

static void end_child(struct child *c)
{
	close(c->to_child);
	close(c->from_child);
}

/* What the drain handed over, the stacks named against the child's mappings. */
struct seen {
	struct an_usyms *usyms;
	uint64_t bytes, samples;
	uint64_t fn_bytes[PROBE_ALLOC_NFN + 1];
	uint64_t many_bytes;    /* in stacks through alloc_known_many */
	uint64_t big_bytes;     /* ... alloc_known_big */
	bool many_calls_malloc; /* its leaf is malloc, its next frame alloc_known_many */
	uint64_t lost_bytes[5]; /* by loss bit */
};

static int collect(const struct probe_alloc_stack *s, void *arg)
{
	struct seen *w = arg;
	char name[256];

	w->bytes += s->bytes;
	w->samples += s->samples;
	w->fn_bytes[s->fn <= PROBE_ALLOC_NFN ? s->fn : PROBE_ALLOC_NFN] += s->bytes;
	for (int b = 0; b < 5; b++)
		if (s->lost & (1u << b))
			w->lost_bytes[b] += s->bytes;
	for (uint32_t i = 0; i < s->nuser; i++) {
		an_usyms_name(w->usyms, i ? s->ustack[i] - 1 : s->ustack[i], name, sizeof(name));
		if (!strcmp(name, "alloc_known_many")) {
			w->many_bytes += s->bytes;
			if (i == 1 && s->fn == PROBE_ALLOC_MALLOC)
				w->many_calls_malloc = true;
			break;
		}
		if (!strcmp(name, "alloc_known_big")) {
			w->big_bytes += s->bytes;
			break;
		}
	}
	return 0;
}

static struct an_usyms *child_usyms(struct an_symcache *cache, pid_t pid)
{
	struct an_procmaps *maps = an_procmaps_read(pid);
	struct an_usyms *u;

	cr_assert_not_null(maps, "cannot read /proc/%d/maps", (int)pid);
	u = an_usyms_new(cache, maps);
	cr_assert_not_null(u);
	return u;
}

TestSuite(alloc, .fini = reap_kids);

/* 64 KiB periods: about 1,800 samples of the child's 120 MB. */
#define PERIOD (64u << 10)

Test(alloc, calls_and_bytes_are_exact_and_samples_unbiased)
{
	struct probe_alloc_opts o = { .sample_bytes = PERIOD };
	struct probe_alloc_stats st = { 0 };
	struct an_symcache *cache = an_symcache_new();
	struct seen w = { 0 };
	struct probe_alloc *p;
	struct child c;
	char err[512] = "";
	uint64_t total = 0;
	int64_t diff;

	need_bpf();
	p = probe_alloc_open(&o, err, sizeof(err));
	cr_assert_not_null(p, "%s", err);
	c = spawn_allocs();
	cr_assert_eq(probe_alloc_start(p, c.pid, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(probe_alloc_attached(p), (1u << PROBE_ALLOC_NFN) - 1,
		     "functions attached: %#x in %s", probe_alloc_attached(p), probe_alloc_libc(p));
	run_allocs(&c);
	cr_assert_eq(probe_alloc_stop(p), 0);
	w.usyms = child_usyms(cache, c.pid);
	cr_assert_eq(probe_alloc_drain(p, collect, &w, &st), 0);

	/* exact: every call, every byte asked for */
	cr_expect_eq(st.calls[PROBE_ALLOC_MALLOC], ALLOCS_MALLOC_CALLS);
	cr_expect_eq(st.bytes[PROBE_ALLOC_MALLOC], ALLOCS_MALLOC_BYTES);
	cr_expect_eq(st.calls[PROBE_ALLOC_CALLOC], ALLOCS_CALLOC_N);
	cr_expect_eq(st.bytes[PROBE_ALLOC_CALLOC],
		     (uint64_t)ALLOCS_CALLOC_N * ALLOCS_CALLOC_NMEMB * ALLOCS_CALLOC_SIZE);
	cr_expect_eq(st.calls[PROBE_ALLOC_REALLOC], ALLOCS_REALLOC_N);
	cr_expect_eq(st.bytes[PROBE_ALLOC_REALLOC], (uint64_t)ALLOCS_REALLOC_N * ALLOCS_REALLOC_SIZE);
	cr_expect_eq(st.realloc_null, ALLOCS_REALLOC_NULL_N);
	cr_expect_eq(st.calls[PROBE_ALLOC_POSIX_MEMALIGN], ALLOCS_ALIGNED_N);
	cr_expect_eq(st.bytes[PROBE_ALLOC_POSIX_MEMALIGN],
		     (uint64_t)ALLOCS_ALIGNED_N * ALLOCS_ALIGNED_SIZE);
	cr_expect_eq(st.calls[PROBE_ALLOC_ALIGNED_ALLOC], ALLOCS_ALIGNED_N);
	cr_expect_eq(st.bytes[PROBE_ALLOC_ALIGNED_ALLOC],
		     (uint64_t)ALLOCS_ALIGNED_N * ALLOCS_ALIGNED_SIZE);

	/* what was drained is what was sampled, nothing lost at the default sizes */
	cr_expect_eq(w.bytes, st.sampled_bytes);
	cr_expect_eq(w.samples, st.samples);
	cr_expect_eq(st.counts_full + st.stack_full + st.stack_errors + st.no_thread, 0,
		     "lost: counts %llu, stacks %llu, errors %llu, threads %llu",
		     (unsigned long long)st.counts_full, (unsigned long long)st.stack_full,
		     (unsigned long long)st.stack_errors, (unsigned long long)st.no_thread);

	/* One thread made every call: with fixed-interval counting its sampled total is
	 * within one period of the true one, whatever the phase (alloc.bpf.c). */
	for (int i = 0; i < PROBE_ALLOC_NFN; i++)
		total += st.bytes[i];
	diff = (int64_t)st.sampled_bytes - (int64_t)total;
	cr_expect(diff > -(int64_t)PERIOD && diff <= (int64_t)PERIOD,
		  "sampled %llu bytes of %llu: off by %lld, more than one period (%u)",
		  (unsigned long long)st.sampled_bytes, (unsigned long long)total, (long long)diff,
		  PERIOD);
	/* each function's calls come in one run, so its share is within two periods */
	diff = (int64_t)w.many_bytes - (int64_t)ALLOCS_MANY_N * ALLOCS_MANY_SIZE;
	cr_expect(diff > -2 * (int64_t)PERIOD && diff < 2 * (int64_t)PERIOD,
		  "alloc_known_many: sampled %llu of %llu bytes", (unsigned long long)w.many_bytes,
		  (unsigned long long)ALLOCS_MANY_N * ALLOCS_MANY_SIZE);
	diff = (int64_t)w.big_bytes - (int64_t)ALLOCS_BIG_N * ALLOCS_BIG_SIZE;
	cr_expect(diff > -2 * (int64_t)PERIOD && diff < 2 * (int64_t)PERIOD,
		  "alloc_known_big: sampled %llu of %llu bytes", (unsigned long long)w.big_bytes,
		  (unsigned long long)ALLOCS_BIG_N * ALLOCS_BIG_SIZE);
	/* the walk at malloc's entry has the allocating function as the second frame */
	cr_expect(w.many_calls_malloc, "no stack with malloc called from alloc_known_many");

	end_child(&c);
	an_usyms_free(w.usyms);
	an_symcache_free(cache);
	probe_alloc_free(p);
}
