/*
 * The alloc probe around a benchmark: attached to each fork's libc when it begins its
 * measured iterations, muted when they end, when the fork's mappings are read (while it
 * lives, so that its stacks are named against its own), then detached and drained once
 * the fork has exited (gone: the kernel can take a uprobe out of no live process while
 * we may be killed, see hx_hooks.fork_gone). Folded over all forks into
 * alloc.folded, weighted in bytes: "[alloc]", the thread's name, the user frames root
 * first, the allocator function last (the walk starts there). Nothing is dropped: a
 * sample whose stack or key could not be kept keeps its bytes under a "[lost: ...]"
 * frame, and one whose stack was cut at the walk's depth under "[truncated]" above the
 * frames kept, so the folded total equals the sampled bytes.
 *
 * The runtime counts its own allocations (rt_alloc, rt_calloc: bytes per op, exact);
 * those go through malloc and calloc too, so what the probe counts over the same
 * iterations is at least that, and the report shows both, per op.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flamegraphs/flamegraph.h"
#include "harness/harness.h"

#define MAX_FRAMES (PROBE_MAX_DEPTH + 6) /* [alloc], comm, markers, user frames */
/* The kernel's maps are sized for the samples a fork can take: measure_s × threads ×
 * this allocation rate ÷ the sample period, each sample at most one new stack and key,
 * between the bounds below (a stack takes 1 KiB of kernel memory once used). 1 GiB/s
 * a thread is more than a uprobe'd allocator reaches (each call traps). */
#define SIZING_RATE	   (1ull << 30)
#define MIN_ENTRIES	   1024u
#define MAX_ENTRIES	   16384u

struct hx_alloc {
	struct probe_alloc *p;
	struct an_symcache *cache;
	struct an_folded *folded;
	struct probe_alloc_stats stats;
	char names[MAX_FRAMES][HX_FRAME_LEN];
	const char *frames[MAX_FRAMES];
	struct an_usyms *usyms;       /* the fork being drained, its maps read at its end */
	bool begun;                   /* attached to a fork not gone yet */
	uint64_t truncated, truncated_bytes; /* samples drawn under [truncated], their bytes */
	unsigned sized_threads;       /* what the maps were sized for */
	double sized_s;
	char libc[PATH_MAX];
	char start_error[320];        /* why a fork could not be probed; "" */
	/* the benchmark's, from hx_probeset_observe() */
	bool have_result;
	uint64_t ops;
	uint64_t rt_calls, rt_bytes;
	char summary[256];
};

static const char *lost_frame(uint32_t lost)
{
	if (lost & PROBE_ALLOC_LOST_COUNTS_FULL)
		return "[lost: counts map full]";
	if (lost & PROBE_ALLOC_LOST_STACK_FULL)
		return "[lost: stack map full]";
	if (lost & PROBE_ALLOC_LOST_NO_THREAD)
		return "[lost: no thread state]";
	if (lost & PROBE_ALLOC_LOST_STACK_ERROR)
		return "[lost: user stack error]";
	return NULL;
}

/* One aggregate into the folded profile. */
static int fold(const struct probe_alloc_stack *s, void *arg)
{
	struct hx_alloc *a = arg;
	const char *marker = lost_frame(s->lost);
	bool rooted = false, garbage = false, past = false;
	unsigned nuser = 0;
	size_t n = 0;

	a->frames[n++] = "[alloc]";
	if (!(s->lost & PROBE_ALLOC_LOST_COUNTS_FULL)) {
		hx_comm_frame(s->comm, a->names[0], HX_FRAME_LEN);
		a->frames[n++] = a->names[0];
	}
	if (marker)
		a->frames[n++] = marker;
	if (s->nuser && a->usyms)
		nuser = hx_user_frames(a->usyms, s->ustack, s->nuser, false, &a->names[1],
				      MAX_FRAMES - 5, &rooted, &garbage, &past);
	/* a walk at the depth limit that ended at its thread's root lost nothing */
	if (nuser && (s->lost & PROBE_ALLOC_TRUNCATED) && !rooted) {
		a->frames[n++] = "[truncated]";
		a->truncated += s->samples;
		a->truncated_bytes += s->bytes;
	}
	for (unsigned i = nuser; i-- > 0;)
		a->frames[n++] = a->names[1 + i];
	/* a stack that was lost still says which function was called */
	if (!nuser && s->fn < PROBE_ALLOC_NFN)
		a->frames[n++] = probe_alloc_fn_name(s->fn);
	return an_folded_add(a->folded, a->frames, n, s->bytes);
}

static unsigned clamp_entries(double want)
{
	if (want < MIN_ENTRIES)
		return MIN_ENTRIES;
	return want > MAX_ENTRIES ? MAX_ENTRIES : (unsigned)want;
}

static int cpus_online(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int)n : 1;
}

int hx_alloc_open_sized(void **state, const struct hx_probe_config *cfg,
			const struct probe_alloc_opts *o, char *why, size_t len)
{
	struct hx_alloc *a;
	char err[HX_WHY_LEN];
	int ret;

	a = calloc(1, sizeof(*a));
	if (!a) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	a->folded = an_folded_new();
	a->cache = an_symcache_new();
	if (!a->folded || !a->cache) {
		ret = -ENOMEM;
		snprintf(why, len, "out of memory");
		goto out_free;
	}
	a->p = probe_alloc_open(o, err, sizeof(err));
	if (!a->p) {
		ret = -errno;
		snprintf(why, len, "%s", err);
		if (ret == -EINVAL)
			ret = -EPERM; /* a probe that cannot load is no bad input */
		goto out_free;
	}
	a->sized_s = cfg->measure_s;
	a->sized_threads = (unsigned)cpus_online();
	*state = a;
	return 0;

out_free:
	an_symcache_free(a->cache);
	an_folded_free(a->folded);
	free(a);
	return ret;
}

static int alloc_open(void **state, const struct hx_probe_config *cfg, char *why, size_t len)
{
	uint64_t period = cfg->alloc_sample ? cfg->alloc_sample : PROBE_ALLOC_SAMPLE_DEFAULT;
	double samples = (cfg->measure_s > 0 ? cfg->measure_s : 1) * cpus_online() *
			 (double)SIZING_RATE / (double)period;
	struct probe_alloc_opts o = {
		.sample_bytes = period,
		.stack_entries = clamp_entries(samples),
		.count_entries = clamp_entries(samples),
	};

	return hx_alloc_open_sized(state, cfg, &o, why, len);
}

static int alloc_gone(void *state, pid_t pid);

/* For hooks that never say the fork is gone: let go of it before anything that starts
 * again or reads the counts. */
static int settle(struct hx_alloc *a)
{
	return a->begun ? alloc_gone(a, 0) : 0;
}

static int alloc_begin(void *state, pid_t pid, int64_t tls_off)
{
	struct hx_alloc *a = state;
	char err[320];
	int ret;

	(void)tls_off;
	ret = settle(a);
	if (ret)
		return ret;
	ret = probe_alloc_start(a->p, pid, err, sizeof(err));
	if (ret) {
		if (!a->start_error[0])
			snprintf(a->start_error, sizeof(a->start_error), "%s", err);
		return ret;
	}
	a->begun = true;
	snprintf(a->libc, sizeof(a->libc), "%s", probe_alloc_libc(a->p));
	return 0;
}

/* The fork measured: count no more, and read its mappings while it lives; the uprobes
 * stay in it until alloc_gone(). */
static int alloc_end(void *state, pid_t pid)
{
	struct hx_alloc *a = state;
	struct an_procmaps *maps;

	if (!a->begun)
		return 0;
	probe_alloc_mute(a->p);
	an_usyms_free(a->usyms);
	maps = an_procmaps_read(pid);
	a->usyms = maps ? an_usyms_new(a->cache, maps) : NULL; /* owns maps */
	if (!a->usyms)
		return errno ? -errno : -ENOMEM;
	return 0;
}

/* The fork has exited: detach (nothing left to write back into, so the unregister
 * cannot fail), then drain, naming the stacks by the maps its end read. Without them
 * (its end failed, or never came) the counts stay for the next drain, as before. */
static int alloc_gone(void *state, pid_t pid)
{
	struct hx_alloc *a = state;
	int ret;

	(void)pid;
	if (!a->begun)
		return 0;
	a->begun = false;
	ret = probe_alloc_stop(a->p);
	if (!ret && a->usyms)
		ret = probe_alloc_drain(a->p, fold, a, &a->stats);
	an_usyms_free(a->usyms);
	a->usyms = NULL;
	return ret;
}

static int alloc_reset(void *state)
{
	struct hx_alloc *a = state;
	struct an_folded *fresh;

	settle(a);
	fresh = an_folded_new();
	if (!fresh)
		return -ENOMEM;
	an_folded_free(a->folded);
	a->folded = fresh;
	memset(&a->stats, 0, sizeof(a->stats));
	a->truncated = a->truncated_bytes = 0;
	a->start_error[0] = a->libc[0] = '\0';
	a->have_result = false;
	a->ops = a->rt_calls = a->rt_bytes = 0;
	return 0;
}

static void alloc_result(void *state, const struct hx_result *res)
{
	struct hx_alloc *a = state;

	a->have_result = true;
	a->ops = res->ops;
	a->rt_calls = res->rt.alloc_calls;
	a->rt_bytes = res->rt.alloc_bytes;
}

static uint64_t total_calls(const struct probe_alloc_stats *st)
{
	uint64_t n = 0;

	for (int i = 0; i < PROBE_ALLOC_NFN; i++)
		n += st->calls[i];
	return n;
}

static uint64_t total_bytes(const struct probe_alloc_stats *st)
{
	uint64_t n = 0;

	for (int i = 0; i < PROBE_ALLOC_NFN; i++)
		n += st->bytes[i];
	return n;
}

static uint64_t lost_samples(const struct probe_alloc_stats *st)
{
	return st->counts_full + st->stack_full + st->stack_errors + st->no_thread;
}

/* x / ops as a JSON number, null without ops. */
static void per_op(FILE *out, const struct hx_alloc *a, uint64_t x)
{
	if (a->have_result && a->ops)
		an_json_num(out, (double)x / (double)a->ops);
	else
		fputs("null", out);
}

static void alloc_json(FILE *out, const void *data)
{
	const struct hx_alloc *a = data;
	const struct probe_alloc_stats *st = &a->stats;

	fprintf(out, ", \"sample_bytes\": %" PRIu64 ", \"libc\": ", probe_alloc_sample_bytes(a->p));
	an_json_str(out, a->libc[0] ? a->libc : NULL);
	fputs(", \"functions\": {", out);
	for (int i = 0; i < PROBE_ALLOC_NFN; i++)
		fprintf(out, "%s\"%s\": {\"calls\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
			i ? ", " : "", probe_alloc_fn_name(i), st->calls[i], st->bytes[i]);
	fprintf(out, "}, \"realloc_null\": %" PRIu64 ", \"calloc_overflow\": %" PRIu64
		", \"calls\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"sampled_bytes\": %" PRIu64
		", \"samples\": %" PRIu64 ", \"ops\": ",
		st->realloc_null, st->overflow, total_calls(st), total_bytes(st), st->sampled_bytes,
		st->samples);
	if (a->have_result)
		fprintf(out, "%" PRIu64, a->ops);
	else
		fputs("null", out);
	fputs(", \"per_op\": {\"calls\": ", out);
	per_op(out, a, total_calls(st));
	fputs(", \"bytes\": ", out);
	per_op(out, a, total_bytes(st));
	fputs(", \"sampled_bytes\": ", out);
	per_op(out, a, st->sampled_bytes);
	fputs(", \"samples\": ", out);
	per_op(out, a, st->samples);
	fputs("}, \"runtime_accounting\": {\"calls\": ", out);
	if (a->have_result)
		fprintf(out, "%" PRIu64 ", \"bytes\": %" PRIu64, a->rt_calls, a->rt_bytes);
	else
		fputs("null, \"bytes\": null", out);
	fputs(", \"bytes_per_op\": ", out);
	per_op(out, a, a->rt_bytes);
	fprintf(out, "}, \"maps\": {\"stack_entries\": %u, \"count_entries\": %u, "
		"\"sized_for_s\": ", probe_alloc_stack_entries(a->p), probe_alloc_count_entries(a->p));
	an_json_num(out, a->sized_s);
	fprintf(out, ", \"sized_for_threads\": %u, \"sized_for_bytes_per_s\": %llu}, "
		"\"forks\": %" PRIu64 ", \"attach_ns_per_fork\": ",
		a->sized_threads, SIZING_RATE, st->starts);
	if (st->starts)
		an_json_num(out, (double)st->attach_ns / (double)st->starts);
	else
		fputs("null", out);
	fputs(", \"prog_runs\": ", out);
	if (st->prog_timed)
		fprintf(out, "%" PRIu64 ", \"prog_ns\": %" PRIu64 ", \"prog_ns_per_call\": ",
			st->prog_runs, st->prog_ns);
	else
		fputs("null, \"prog_ns\": null, \"prog_ns_per_call\": ", out);
	if (st->prog_timed && st->prog_runs)
		an_json_num(out, (double)st->prog_ns / (double)st->prog_runs);
	else
		fputs("null", out);
	/* truncated: the samples drawn under [truncated], and their bytes */
	fprintf(out, ", \"lost\": {\"samples\": %" PRIu64 ", \"stack_map_full\": %" PRIu64
		", \"counts_map_full\": %" PRIu64 ", \"counts_map_full_bytes\": %" PRIu64
		", \"user_stack_errors\": %" PRIu64 ", \"no_thread_state\": %" PRIu64
		", \"truncated\": %" PRIu64 ", \"truncated_bytes\": %" PRIu64 "}, "
		"\"start_error\": ",
		lost_samples(st), st->stack_full, st->counts_full, st->counts_full_bytes,
		st->stack_errors, st->no_thread, a->truncated, a->truncated_bytes);
	an_json_str(out, a->start_error[0] ? a->start_error : NULL);
}

static void md_row(FILE *out, const char *what, uint64_t calls, uint64_t bytes,
		   const struct hx_alloc *a)
{
	char c[48], b[48], cpo[48] = "–", bpo[48] = "–";

	an_format_number((double)calls, 0, c, sizeof(c));
	an_format_number((double)bytes, 0, b, sizeof(b));
	if (a->have_result && a->ops) {
		an_format_number((double)calls / (double)a->ops, 3, cpo, sizeof(cpo));
		an_format_number((double)bytes / (double)a->ops, 1, bpo, sizeof(bpo));
	}
	fprintf(out, "| %s | %s | %s | %s | %s |\n", what, c, b, cpo, bpo);
}

static void alloc_md(FILE *out, const void *data)
{
	const struct hx_alloc *a = data;
	const struct probe_alloc_stats *st = &a->stats;
	char n1[48], n2[48], n3[48];

	fputs("### Allocation (alloc)\n\n", out);
	fprintf(out, "Uprobes on the C allocator in `%s`, for the measured iterations. Calls and "
		"bytes asked for are exact; stacks (alloc.folded, alloc.svg) are sampled once per "
		"%" PRIu64 " bytes a thread asks for, from a random phase (unbiased; each thread's "
		"sampled total within one period of its true one).\n\n",
		a->libc[0] ? a->libc : "(none attached)", probe_alloc_sample_bytes(a->p));
	fputs("| counted | calls | bytes | calls per op | bytes per op |\n"
	      "| --- | ---: | ---: | ---: | ---: |\n", out);
	for (int i = 0; i < PROBE_ALLOC_NFN; i++)
		if (st->calls[i])
			md_row(out, probe_alloc_fn_name(i), st->calls[i], st->bytes[i], a);
	md_row(out, "all (probe)", total_calls(st), total_bytes(st), a);
	if (a->have_result)
		md_row(out, "the runtime's accounting (rt_alloc, rt_calloc)", a->rt_calls,
		       a->rt_bytes, a);
	fputs("\n", out);
	if (a->have_result)
		fputs("The runtime's allocations go through malloc and calloc too, so the probe's "
		      "totals are at least the accounting's; the rest is the workload's and "
		      "libraries' own calls, and the harness thread's.\n\n", out);
	fputs("Every call traps into the kernel (the uprobe), which is most of what the probe "
	      "costs: the throughput under it is not the workload's, and an on-CPU profile "
	      "taken alongside counts the traps in the allocation phase.\n\n", out);
	if (st->realloc_null)
		fprintf(out, "realloc(NULL, n): %" PRIu64 " calls, counted as the malloc glibc "
			"makes for them.\n\n", st->realloc_null);
	an_format_number((double)st->samples, 0, n1, sizeof(n1));
	an_format_number((double)st->sampled_bytes, 0, n2, sizeof(n2));
	an_format_number((double)lost_samples(st), 0, n3, sizeof(n3));
	fprintf(out, "%s samples, %s sampled bytes; lost: %s samples (stack map full %" PRIu64
		", counts map full %" PRIu64 " holding %" PRIu64 " bytes, user stack errors %" PRIu64
		", no thread state %" PRIu64 "), %" PRIu64 " stacks cut at the walk's %d frames "
		"(%" PRIu64 " bytes); every lost sample's bytes are in alloc.folded under a "
		"[lost: ...] frame, a cut stack's under [truncated]. Maps: %u stacks, %u keys, "
		"sized for %g s × %u threads × %llu bytes/s ÷ the period.", n1, n2, n3,
		st->stack_full, st->counts_full, st->counts_full_bytes, st->stack_errors,
		st->no_thread, a->truncated, PROBE_MAX_DEPTH, a->truncated_bytes,
		probe_alloc_stack_entries(a->p),
		probe_alloc_count_entries(a->p), a->sized_s, a->sized_threads, SIZING_RATE);
	if (st->starts)
		fprintf(out, " Attaching to a fork's libc took %.1f ms.",
			(double)st->attach_ns / (double)st->starts / 1e6);
	if (st->prog_timed && st->prog_runs)
		fprintf(out, " The program took %.0f ns a call (the kernel's BPF run-time "
			"statistics; the uprobe's trap, which costs more, comes on top).",
			(double)st->prog_ns / (double)st->prog_runs);
	fputs("\n", out);
	if (a->start_error[0])
		fprintf(out, "\nA fork could not be probed: %s\n", a->start_error);
}

static int alloc_finish(void *state, const char *dir, struct an_probe_part *part)
{
	struct hx_alloc *a = state;
	const struct probe_alloc_stats *st = &a->stats;
	char path[PATH_MAX + 32], n1[48], n2[48];
	struct fg_options fo;
	int ret;

	ret = settle(a);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/alloc.folded", dir);
	ret = an_folded_write_file(a->folded, path);
	if (ret)
		return ret;
	fg_options_default(&fo);
	fo.title = "Allocation (bytes asked for, sampled)";
	fo.count_name = "bytes";
	snprintf(path, sizeof(path), "%s/alloc.svg", dir);
	ret = fg_svg_write_file(a->folded, &fo, path);
	if (ret)
		return ret;
	an_format_number((double)total_bytes(st), 0, n1, sizeof(n1));
	an_format_number((double)total_calls(st), 0, n2, sizeof(n2));
	snprintf(a->summary, sizeof(a->summary), "%s bytes in %s calls; %" PRIu64 " samples of %"
		 PRIu64 " bytes; %s", n1, n2, st->samples, probe_alloc_sample_bytes(a->p),
		 lost_samples(st) || a->truncated ? "some stacks lost or truncated (see lost)"
						  : "nothing lost");
	part->summary = a->summary;
	part->files[0] = "alloc.folded";
	part->files[1] = "alloc.svg";
	part->files[2] = NULL;
	part->json = alloc_json;
	part->md = alloc_md;
	part->data = a;
	return 0;
}

static void alloc_close(void *state)
{
	struct hx_alloc *a = state;

	if (!a)
		return;
	settle(a);
	probe_alloc_free(a->p);
	an_usyms_free(a->usyms);
	an_symcache_free(a->cache);
	an_folded_free(a->folded);
	free(a);
}

const struct hx_probe_ops hx_alloc_ops = {
	.id = HX_PROBE_ALLOC,
	.name = "alloc",
	.summary = "allocation stacks sampled by bytes, exact calls and bytes per allocator "
		   "function (uprobes on the libc the benchmark maps)",
	.opt_in = true, /* every allocator call traps: 14-18 µs each on this project's VMs */
	.available = probe_bpf_available,
	.open = alloc_open,
	.begin = alloc_begin,
	.end = alloc_end,
	.gone = alloc_gone,
	.reset = alloc_reset,
	.finish = alloc_finish,
	.close = alloc_close,
	.observe = alloc_result,
};
