/*
 * The probe set: the probes beside oncpu, opened from one --probes list and driven
 * together around each fork's measured iterations. The profile (oncpu, profile.c) is the
 * pipeline's to drive; the set only carries it, and hx_hooks_chain() puts the two in
 * order around a fork, so that nothing here calls up into the profile.
 *
 * A probe that cannot attach is not a failure of the run: its status says why, and the
 * benchmark runs without it. Each probe's attach time (open, load, attach) is measured
 * here, the same way for every probe, so the report can hold them to one budget.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness/harness.h"

/* The probes beside oncpu that are built, in enum order. */
static const struct hx_probe_ops *const built[] = {
	&hx_offcpu_ops,
	&hx_sched_ops,
	&hx_runtime_probe,
	&hx_alloc_ops,
	NULL,
};

static const char *const names[HX_NPROBES] = {
	[HX_PROBE_ONCPU] = "oncpu",	[HX_PROBE_OFFCPU] = "offcpu",
	[HX_PROBE_SCHED] = "sched",	[HX_PROBE_RUNTIME] = "runtime",
	[HX_PROBE_ALLOC] = "alloc",	[HX_PROBE_COUNTERS] = "counters",
};

const struct hx_probe_ops *const *hx_probe_ops_all(void)
{
	return built;
}

const char *hx_probe_name(enum hx_probe_id id)
{
	return (unsigned)id < HX_NPROBES ? names[id] : "?";
}

const char *hx_probe_reason(const char *name, const char *why)
{
	size_t n = strlen(name);

	return !strncmp(why, name, n) && !strncmp(why + n, ": ", 2) ? why + n + 2 : why;
}

static const struct hx_probe_ops *find_built(enum hx_probe_id id)
{
	for (const struct hx_probe_ops *const *o = built; *o; o++)
		if ((*o)->id == id)
			return *o;
	return NULL;
}

/* oncpu is the profile's and counters count inside the forks (harness/controller.c):
 * neither is driven through hx_probe_ops. */
static bool is_built(enum hx_probe_id id)
{
	return id == HX_PROBE_ONCPU || id == HX_PROBE_COUNTERS || find_built(id);
}

static uint64_t elapsed_ns(const struct timespec *a, const struct timespec *b)
{
	return (uint64_t)(b->tv_sec - a->tv_sec) * 1000000000u + (uint64_t)(b->tv_nsec - a->tv_nsec);
}

int hx_probes_parse(const char *list, unsigned *mask, char *err, size_t errlen)
{
	char word[32], known[128] = "";
	const char *p = list;
	unsigned m = 0;

	for (int id = 0; id < HX_NPROBES; id++)
		if (is_built(id))
			snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s, ",
				 names[id]);
	strcat(known, "all or none");
	if (!*list) {
		snprintf(err, errlen, "--probes '': name the probes (%s)", known);
		return -EINVAL;
	}
	while (*p) {
		size_t n = strcspn(p, ",");
		int id;

		if (n == 0 || n >= sizeof(word)) {
			snprintf(err, errlen, "--probes '%s': a list of %s, separated by commas",
				 list, known);
			return -EINVAL;
		}
		memcpy(word, p, n);
		word[n] = '\0';
		p += n + (p[n] == ',');
		if (!strcmp(word, "none"))
			continue;
		if (!strcmp(word, "all")) {
			for (id = 0; id < HX_NPROBES; id++)
				if (is_built(id))
					m |= 1u << id;
			continue;
		}
		for (id = 0; id < HX_NPROBES && strcmp(word, names[id]); id++)
			;
		if (id == HX_NPROBES) {
			snprintf(err, errlen, "--probes '%s': no probe is called '%s'; the probes are %s",
				 list, word, known);
			return -EINVAL;
		}
		if (!is_built(id)) {
			snprintf(err, errlen, "--probes '%s': the %s probe is not built yet; the probes "
				 "are %s", list, word, known);
			return -EINVAL;
		}
		m |= 1u << id;
	}
	*mask = m;
	return 0;
}

void hx_probes_text(unsigned mask, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int id = 0; id < HX_NPROBES; id++)
		if (mask & (1u << id) && off < len)
			off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "", names[id]);
	if (!off)
		snprintf(buf, len, "none");
}

unsigned hx_thread_entries(const struct hx_probe_config *cfg)
{
	uint64_t n = (uint64_t)HX_THREADS_PER_WORKER * (cfg->threads ? cfg->threads : 1) +
		     HX_THREADS_EXTRA;

	return n < HX_THREADS_MIN ? HX_THREADS_MIN : n > HX_THREADS_MAX ? HX_THREADS_MAX : n;
}

int hx_probeset_add(struct hx_probeset *s, const struct hx_probe_ops *ops,
		    const struct hx_probe_config *cfg, char *err, size_t errlen)
{
	struct hx_probeset_entry *e;
	struct timespec t0, t1;
	char why[HX_WHY_LEN] = "";
	int r;

	if (s->n == HX_NPROBES)
		return -ENOSPC;
	e = &s->probes[s->n++];
	memset(e, 0, sizeof(*e));
	e->ops = ops;
	if (ops->available && !ops->available(why, sizeof(why))) {
		snprintf(e->status, sizeof(e->status), "not attached: %s", why);
		return 0;
	}
	probe_bpf_stats_fd(); /* the instrument's one-time cost, not the probe's attach */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = ops->open(&e->state, cfg, why, sizeof(why));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (r == -EINVAL) {
		snprintf(err, errlen, "%s", why);
		e->state = NULL;
		s->n--;
		return r;
	}
	if (r) {
		e->state = NULL;
		snprintf(e->status, sizeof(e->status), "not attached: %s",
			 *why ? hx_probe_reason(ops->name, why) : strerror(-r));
		return 0;
	}
	e->attach_ns = elapsed_ns(&t0, &t1);
	snprintf(e->status, sizeof(e->status), "attached");
	return 0;
}

int hx_probeset_open(struct hx_probeset *s, struct hx_profile *prof, unsigned mask,
		     const struct hx_probe_config *cfg, char *err, size_t errlen)
{
	memset(s, 0, sizeof(*s));
	s->oncpu = prof;
	for (int id = 0; id < HX_NPROBES; id++) {
		const struct hx_probe_ops *ops = find_built(id);
		int r;

		if (id == HX_PROBE_ONCPU || !(mask & (1u << id)) || !ops)
			continue;
		r = hx_probeset_add(s, ops, cfg, err, errlen);
		if (r) {
			hx_probeset_close(s);
			return r;
		}
	}
	return 0;
}

static int set_begin(void *ctx, pid_t pid, int64_t tls_off)
{
	struct hx_probeset *s = ctx;
	int err;

	for (size_t i = 0; i < s->n; i++) {
		struct hx_probeset_entry *e = &s->probes[i];

		if (e->state && e->ops->begin && (err = e->ops->begin(e->state, pid, tls_off)) &&
		    !e->error)
			e->error = err;
	}
	return 0;
}

static int set_end(void *ctx, pid_t pid)
{
	struct hx_probeset *s = ctx;
	int err;

	for (size_t i = s->n; i-- > 0;) {
		struct hx_probeset_entry *e = &s->probes[i];

		if (e->state && e->ops->end && (err = e->ops->end(e->state, pid)) && !e->error)
			e->error = err;
	}
	return 0; /* a probe's failure is its own (hx_probeset_finish()), not the fork's */
}

static int set_gone(void *ctx, pid_t pid)
{
	struct hx_probeset *s = ctx;
	int err;

	for (size_t i = s->n; i-- > 0;) {
		struct hx_probeset_entry *e = &s->probes[i];

		if (e->state && e->ops->gone && (err = e->ops->gone(e->state, pid)) && !e->error)
			e->error = err;
	}
	return 0;
}

void hx_probeset_hooks(struct hx_probeset *s, struct hx_hooks *h)
{
	h->ctx = s;
	h->measure_begin = set_begin;
	h->measure_end = set_end;
	h->fork_gone = set_gone;
	h->probed = NULL;
}

int hx_probeset_reset(struct hx_probeset *s)
{
	int first = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct hx_probeset_entry *e = &s->probes[i];
		int err;

		e->error = 0;
		if (e->state && e->ops->reset && (err = e->ops->reset(e->state)) && !first)
			first = err;
	}
	return first;
}

void hx_probeset_observe(struct hx_probeset *s, const struct hx_result *res)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->probes[i].state && s->probes[i].ops->observe)
			s->probes[i].ops->observe(s->probes[i].state, res);
}

int hx_probeset_finish(struct hx_probeset *s, const char *dir)
{
	int first = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct hx_probeset_entry *e = &s->probes[i];
		struct an_probe_part *part = &s->parts[i];
		int err;

		memset(part, 0, sizeof(*part));
		part->name = e->ops->name;
		part->status = e->status;
		part->attach_ns = e->attach_ns;
		if (!e->state)
			continue;
		part->attached = true;
		err = e->error;
		if (!err && e->ops->finish)
			err = e->ops->finish(e->state, dir, part);
		if (err) {
			/* what it collected is incomplete: the report shows why, not its figures */
			snprintf(e->status, sizeof(e->status), "attached, but collection failed: %s",
				 strerror(-err));
			part->status = e->status;
			part->json = part->md = NULL;
			part->summary = NULL;
			if (!first)
				first = err;
		}
	}
	return first;
}

void hx_probeset_close(struct hx_probeset *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->probes[i].state && s->probes[i].ops->close)
			s->probes[i].ops->close(s->probes[i].state);
	s->n = 0;
}

/* ---- hooks around hooks ---------------------------------------------------------------- */

static int chain_begin(void *ctx, pid_t pid, int64_t tls_off)
{
	struct hx_chain *c = ctx;
	int err = c->first.measure_begin ? c->first.measure_begin(c->first.ctx, pid, tls_off) : 0;

	if (err)
		return err;
	return c->then.measure_begin ? c->then.measure_begin(c->then.ctx, pid, tls_off) : 0;
}

static int chain_end(void *ctx, pid_t pid)
{
	struct hx_chain *c = ctx;
	int then = c->then.measure_end ? c->then.measure_end(c->then.ctx, pid) : 0;
	int first = c->first.measure_end ? c->first.measure_end(c->first.ctx, pid) : 0;

	return first ? first : then;
}

static int chain_gone(void *ctx, pid_t pid)
{
	struct hx_chain *c = ctx;
	int then = c->then.fork_gone ? c->then.fork_gone(c->then.ctx, pid) : 0;
	int first = c->first.fork_gone ? c->first.fork_gone(c->first.ctx, pid) : 0;

	return first ? first : then;
}

void hx_hooks_chain(struct hx_chain *c, const struct hx_hooks *first, const struct hx_hooks *then,
		    struct hx_hooks *h)
{
	c->first = *first;
	c->then = *then;
	h->ctx = c;
	h->measure_begin = chain_begin;
	h->measure_end = chain_end;
	h->fork_gone = chain_gone;
	h->probed = NULL;
}

/* ---- --overhead: every other fork without the probes ---------------------------------- */

/* Forks 2, 4, 6 ... (k counts from 1) have the probes. */
static bool alt_probed(void *ctx, unsigned k)
{
	(void)ctx;
	return k % 2 == 0;
}

static int alt_begin(void *ctx, pid_t pid, int64_t tls_off)
{
	struct hx_alternate *a = ctx;

	a->probed = alt_probed(a, ++a->fork);
	return a->probed && a->inner.measure_begin ? a->inner.measure_begin(a->inner.ctx, pid, tls_off)
						   : 0;
}

static int alt_end(void *ctx, pid_t pid)
{
	struct hx_alternate *a = ctx;

	return a->probed && a->inner.measure_end ? a->inner.measure_end(a->inner.ctx, pid) : 0;
}

static int alt_gone(void *ctx, pid_t pid)
{
	struct hx_alternate *a = ctx;

	return a->probed && a->inner.fork_gone ? a->inner.fork_gone(a->inner.ctx, pid) : 0;
}

void hx_alternate_hooks(struct hx_alternate *a, const struct hx_hooks *inner, struct hx_hooks *h)
{
	a->inner = *inner;
	a->fork = 0;
	a->probed = false;
	h->ctx = a;
	h->measure_begin = alt_begin;
	h->measure_end = alt_end;
	h->fork_gone = alt_gone;
	h->probed = alt_probed;
}

int hx_result_split_alternate(struct hx_result *res, unsigned iterations, struct an_summary *off)
{
	size_t n = res->nsamples, non = 0, noff = 0;
	double *offs;
	int err;

	if (!iterations)
		return -EINVAL;
	offs = malloc((n + 1) * sizeof(*offs));
	if (!offs)
		return -ENOMEM;
	/* forks 1, 3, 5 ... ran without the probes (alt_probed()); an interrupted fork's
	 * iterations count for what it was */
	for (size_t i = 0; i < n; i++) {
		if (!alt_probed(NULL, (unsigned)(i / iterations) + 1)) {
			offs[noff++] = res->samples[i];
			continue;
		}
		res->samples[non] = res->samples[i];
		if (res->iter_rt)
			res->iter_rt[non] = res->iter_rt[i];
		if (res->iter_counters)
			memmove(&res->iter_counters[non * PROBE_COUNTERS_MAX],
				&res->iter_counters[i * PROBE_COUNTERS_MAX],
				PROBE_COUNTERS_MAX * sizeof(*res->iter_counters));
		non++;
	}
	res->nsamples = non;
	err = noff < 2 || non < 2 ? -EINVAL : 0;
	if (!err)
		err = an_summarize(offs, noff, 0.999, off);
	if (!err)
		err = an_summarize(res->samples, non, 0.999, &res->summary);
	free(offs);
	return err;
}
