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

/* Start `allocs [MODE]` (mode NULL: none). */
static struct child spawn_allocs(const char *mode)
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
		execl(path, "allocs", mode, (char *)NULL);
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

/* Open the probe with o, let a fresh child make its calls inside one window, and drain
 * into *w (its stacks named against the child's mappings) and *st. */
static void probe_child(const struct probe_alloc_opts *o, struct an_symcache *cache,
			struct seen *w, struct probe_alloc_stats *st)
{
	struct probe_alloc *p;
	struct child c;
	char err[512] = "";

	p = probe_alloc_open(o, err, sizeof(err));
	cr_assert_not_null(p, "%s", err);
	c = spawn_allocs(NULL);
	cr_assert_eq(probe_alloc_start(p, c.pid, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(probe_alloc_attached(p), (1u << PROBE_ALLOC_NFN) - 1,
		     "functions attached: %#x in %s", probe_alloc_attached(p), probe_alloc_libc(p));
	run_allocs(&c);
	cr_assert_eq(probe_alloc_stop(p), 0);
	w->usyms = child_usyms(cache, c.pid);
	cr_assert_eq(probe_alloc_drain(p, collect, w, st), 0);
	end_child(&c);
	probe_alloc_free(p);
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
	uint64_t total = 0;
	int64_t diff;

	need_bpf();
	probe_child(&o, cache, &w, &st);

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

	an_usyms_free(w.usyms);
	an_symcache_free(cache);
}

Test(alloc, tiny_maps_count_every_loss_and_keep_its_bytes)
{
	/* one stack and two keys: the first sample's stack is kept, the next new stack
	 * finds the stacks map full (its key says so), and a third key finds no room */
	struct probe_alloc_opts o = { .sample_bytes = PERIOD, .stack_entries = 1,
				      .count_entries = 2 };
	struct probe_alloc_stats st = { 0 };
	struct an_symcache *cache = an_symcache_new();
	struct seen w = { 0 };

	need_bpf();
	probe_child(&o, cache, &w, &st);

	cr_expect_gt(st.stack_full, 0);
	cr_expect_gt(st.counts_full, 0);
	/* the counts: each equals the samples of the records with its bit */
	cr_expect_eq(w.bytes, st.sampled_bytes, "drained %llu bytes of %llu sampled",
		     (unsigned long long)w.bytes, (unsigned long long)st.sampled_bytes);
	cr_expect_eq(w.samples, st.samples);
	cr_expect_eq(w.lost_bytes[3], st.counts_full_bytes);
	cr_expect_gt(w.lost_bytes[0], 0);
	/* exact totals do not depend on the maps */
	cr_expect_eq(st.calls[PROBE_ALLOC_MALLOC], ALLOCS_MALLOC_CALLS);
	cr_expect_eq(st.bytes[PROBE_ALLOC_MALLOC], ALLOCS_MALLOC_BYTES);

	an_usyms_free(w.usyms);
	an_symcache_free(cache);
}

Test(alloc, nothing_is_counted_outside_a_window)
{
	struct probe_alloc_stats st = { 0 };
	struct probe_alloc *p;
	struct child c;
	char err[512] = "";

	need_bpf();
	p = probe_alloc_open(NULL, err, sizeof(err));
	cr_assert_not_null(p, "%s", err);
	c = spawn_allocs(NULL);
	/* attached and stopped before the calls: the uprobes are gone */
	cr_assert_eq(probe_alloc_start(p, c.pid, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(probe_alloc_stop(p), 0);
	run_allocs(&c);
	cr_assert_eq(probe_alloc_drain(p, NULL, NULL, &st), 0);
	for (int i = 0; i < PROBE_ALLOC_NFN; i++)
		cr_expect_eq(st.calls[i], 0, "%s: %llu calls", probe_alloc_fn_name(i),
			     (unsigned long long)st.calls[i]);
	cr_expect_eq(st.samples, 0);
	end_child(&c);
	probe_alloc_free(p);
}

Test(alloc, a_process_without_libc_is_refused_clearly)
{
	struct probe_alloc *p;
	char err[512] = "";

	need_bpf();
	p = probe_alloc_open(NULL, err, sizeof(err));
	cr_assert_not_null(p, "%s", err);
	/* pid 2 is kthreadd: no user mappings at all */
	cr_expect_eq(probe_alloc_start(p, 2, err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "maps no libc"), "%s", err);
	cr_expect_eq(probe_alloc_start(p, 0, err, sizeof(err)), -EINVAL);
	probe_alloc_free(p);
}

/* The harness's side: alloc.folded in bytes, its total the sampled bytes, the stacks
 * named while the child lives, the losses drawn as frames. */
static uint64_t folded_bytes(const struct an_folded *f, const char *needle)
{
	const struct an_folded_line *l;
	uint64_t sum = 0;
	size_t n;

	l = an_folded_lines(f, &n);
	for (size_t i = 0; i < n; i++)
		if (!needle || strstr(l[i].stack, needle))
			sum += l[i].count;
	return sum;
}

static void run_harness(const struct probe_alloc_opts *o, const char *mode, char *dir,
			struct an_folded **out, char *json, size_t jsonlen)
{
	struct hx_probe_config cfg = { .measure_s = 1, .forks = 1 };
	struct an_probe_part part = { 0 };
	char why[256] = "", path[PATH_MAX + 32];
	void *state = NULL;
	struct child c;
	FILE *f;

	cr_assert_eq(hx_alloc_open_sized(&state, &cfg, o, why, sizeof(why)), 0, "%s", why);
	c = spawn_allocs(mode);
	cr_assert_eq(hx_alloc_ops.begin(state, c.pid, 0), 0);
	run_allocs(&c);
	cr_assert_eq(hx_alloc_ops.end(state, c.pid), 0);
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(hx_alloc_ops.finish(state, dir, &part), 0);
	cr_expect_str_eq(part.files[0], "alloc.folded");
	cr_expect_str_eq(part.files[1], "alloc.svg");
	cr_assert_not_null(part.json);
	f = fmemopen(json, jsonlen, "w");
	cr_assert_not_null(f);
	part.json(f, part.data);
	fclose(f);
	snprintf(path, sizeof(path), "%s/alloc.folded", dir);
	*out = an_folded_read(path, why, sizeof(why));
	cr_assert_not_null(*out, "%s", why);
	unlink(path);
	snprintf(path, sizeof(path), "%s/alloc.svg", dir);
	cr_expect_eq(unlink(path), 0, "no %s", path);
	rmdir(dir);
	end_child(&c);
	hx_alloc_ops.close(state);
}

Test(alloc, folded_in_bytes_names_the_allocating_function)
{
	struct probe_alloc_opts o = { .sample_bytes = PERIOD };
	char dir[] = "/tmp/schedlab-alloc-XXXXXX", json[8192], want[64];
	struct an_folded *f;
	uint64_t many;

	need_bpf();
	run_harness(&o, NULL, dir, &f, json, sizeof(json));
	/* the JSON's sampled bytes are the folded total */
	snprintf(want, sizeof(want), "\"sampled_bytes\": %llu,",
		 (unsigned long long)an_folded_total(f));
	cr_expect(strstr(json, want), "%s not in %s", want, json);
	cr_expect(strstr(json, "\"lost\": {\"samples\": 0,"), "%s", json);
	many = folded_bytes(f, "[alloc];allocs;");
	cr_expect_eq(many, an_folded_total(f), "every stack under [alloc];allocs");
	many = folded_bytes(f, ";main;alloc_known_many;malloc");
	cr_expect_gt(many, (uint64_t)ALLOCS_MANY_N * ALLOCS_MANY_SIZE - 2 * PERIOD);
	cr_expect_lt(many, (uint64_t)ALLOCS_MANY_N * ALLOCS_MANY_SIZE + 2 * PERIOD);
	cr_expect_eq(folded_bytes(f, "[lost"), 0);
	an_folded_free(f);
}

Test(alloc, folded_draws_the_losses_of_tiny_maps)
{
	struct probe_alloc_opts o = { .sample_bytes = PERIOD, .stack_entries = 1,
				      .count_entries = 2 };
	char dir[] = "/tmp/schedlab-alloc-XXXXXX", json[8192], want[64];
	struct an_folded *f;

	need_bpf();
	run_harness(&o, NULL, dir, &f, json, sizeof(json));
	snprintf(want, sizeof(want), "\"sampled_bytes\": %llu,",
		 (unsigned long long)an_folded_total(f));
	cr_expect(strstr(json, want), "%s not in %s", want, json);
	cr_expect_gt(folded_bytes(f, "[alloc];allocs;[lost: stack map full];"), 0);
	cr_expect_gt(folded_bytes(f, "[alloc];[lost: counts map full]"), 0);
	cr_expect(!strstr(json, "\"lost\": {\"samples\": 0,"), "%s", json);
	an_folded_free(f);
}

/* Calls 200 frames down, deeper than the walk's 127: every sample's stack is cut, drawn
 * under a [truncated] frame above the frames kept, and result.json counts the samples
 * and their bytes, the bytes those drawn there. */
Test(alloc, folded_draws_a_stack_deeper_than_the_walk_as_truncated)
{
	struct probe_alloc_opts o = { .sample_bytes = PERIOD };
	char dir[] = "/tmp/schedlab-alloc-XXXXXX", json[8192], want[64];
	const char *part;
	struct an_folded *f;
	uint64_t bytes;

	need_bpf();
	run_harness(&o, "deep", dir, &f, json, sizeof(json));
	bytes = folded_bytes(f, ";[truncated];alloc_deep;");
	cr_expect_gt(bytes, 0, "no stack under [truncated]");
	cr_expect_eq(folded_bytes(f, "[truncated]"), bytes, "only the deep calls were made");
	/* at least the 64 MiB of alloc_known_big, less a period */
	cr_expect_gt(bytes, (uint64_t)ALLOCS_BIG_N * ALLOCS_BIG_SIZE - PERIOD);
	snprintf(want, sizeof(want), "\"sampled_bytes\": %llu,",
		 (unsigned long long)an_folded_total(f));
	cr_expect(strstr(json, want), "%s not in %s", want, json);
	part = strstr(json, "\"lost\": {");
	cr_assert_not_null(part, "%s", json);
	snprintf(want, sizeof(want), "\"truncated_bytes\": %llu", (unsigned long long)bytes);
	cr_expect(strstr(part, want), "%s not in %s", want, part);
	cr_expect(!strstr(part, "\"truncated\": 0,"), "truncated samples counted: %s", part);
	an_folded_free(f);
}
