/*
 * The on-CPU probe around a benchmark: start it when a fork begins its measured
 * iterations, and when they end stop it, drain the kernel's aggregates and turn them
 * into folded stacks while the fork is still alive (its /proc/PID/maps is read then,
 * so PIE and library addresses resolve).
 *
 * A folded line is: the thread's name; the user frames, root first; a "-" frame and
 * the kernel frames with "_[k]" when the sample has a kernel stack. Nothing is
 * dropped: a part of a sample that was lost is kept as a "[lost: ...]" frame, so the
 * folded total equals the samples the probe counted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/harness.h"

#define MAX_FRAMES 300 /* user and kernel stacks of 127 each, comm, markers */
#define NAME_LEN   256

struct fold_ctx {
	struct hx_profile *p;
	struct an_usyms *usyms;
	char names[MAX_FRAMES][NAME_LEN];
	const char *frames[MAX_FRAMES];
};

int hx_profile_open(struct hx_profile *p, bool want_oncpu, const struct probe_oncpu_opts *o)
{
	char why[256];

	memset(p, 0, sizeof(*p));
	p->folded = an_folded_new();
	p->symcache = an_symcache_new();
	if (!p->folded || !p->symcache) {
		hx_profile_close(p);
		return -ENOMEM;
	}
	if (!want_oncpu) {
		snprintf(p->status, sizeof(p->status), "not attached: disabled (--probes none)");
		return 0;
	}
	p->oncpu = probe_oncpu_open(o, why, sizeof(why));
	if (!p->oncpu) {
		/* the reason already names the probe: "oncpu: not permitted: ..." */
		const char *r = strncmp(why, "oncpu: ", 7) ? why : why + 7;

		snprintf(p->status, sizeof(p->status), "not attached: %s", r);
		return 0;
	}
	p->attached = true;
	snprintf(p->status, sizeof(p->status), "attached");
	p->ksyms = an_ksyms_load(NULL); /* may fail: kernel frames then read [k]+0x... */
	return 0;
}

static int begin(void *ctx, pid_t pid, int64_t tls_off)
{
	struct hx_profile *p = ctx;
	struct probe_target t = { .tgid = pid, .phase_tls_off = tls_off };

	if (!p->attached)
		return 0;
	return probe_oncpu_start(p->oncpu, &t);
}

static void kernel_name(struct hx_profile *p, uint64_t addr, char *buf, size_t len)
{
	uint64_t off;
	const char *name = p->ksyms ? an_ksyms_lookup(p->ksyms, addr, &off) : NULL;

	if (name)
		snprintf(buf, len, "%s_[k]", name);
	else
		snprintf(buf, len, "[k]+0x%llx_[k]", (unsigned long long)addr);
}

static int fold_one(const struct probe_stack *s, void *arg)
{
	struct fold_ctx *f = arg;
	struct hx_profile *p = f->p;
	size_t n = 0;

#define ADD(...)                                                             \
	do {                                                                 \
		snprintf(f->names[n], NAME_LEN, __VA_ARGS__);                \
		f->frames[n] = f->names[n];                                  \
		n++;                                                         \
	} while (0)

	p->phase_samples[RT_PHASE_KIND(s->phase) < RT_PHASE_COUNT ? RT_PHASE_KIND(s->phase) : 0] +=
		s->count;
	if (s->lost & PROBE_LOST_COUNTS_FULL) {
		ADD("[lost: counts map full]");
		return an_folded_add(p->folded, f->frames, n, s->count);
	}
	ADD("%.16s", s->comm[0] ? s->comm : "[unknown]");
	for (size_t i = 0; i < strlen(f->names[0]); i++)
		if (f->names[0][i] == ' ')
			f->names[0][i] = '_';

	if (s->lost & PROBE_LOST_USTACK_FULL) {
		ADD("[lost: user stack storage full]");
	} else if (s->lost & PROBE_LOST_USTACK_ERROR) {
		ADD("[lost: user stack error]");
	} else {
		if (s->lost & PROBE_TRUNCATED_USTACK)
			ADD("[truncated]");
		/* root first; every frame but the sampled IP holds a return address */
		for (uint32_t i = s->nuser; i-- > 0 && n < MAX_FRAMES - 140;) {
			an_usyms_name(f->usyms, i ? s->ustack[i] - 1 : s->ustack[i], f->names[n],
				      NAME_LEN);
			f->frames[n] = f->names[n];
			n++;
		}
	}

	if (s->nkernel || (s->lost & (PROBE_LOST_KSTACK_FULL | PROBE_LOST_KSTACK_ERROR))) {
		ADD("-");
		if (s->lost & PROBE_LOST_KSTACK_FULL) {
			ADD("[lost: kernel stack storage full]");
		} else if (s->lost & PROBE_LOST_KSTACK_ERROR) {
			ADD("[lost: kernel stack error]");
		} else {
			if (s->lost & PROBE_TRUNCATED_KSTACK)
				ADD("[truncated]");
			for (uint32_t i = s->nkernel; i-- > 0 && n < MAX_FRAMES;) {
				kernel_name(p, i ? s->kstack[i] - 1 : s->kstack[i], f->names[n],
					    NAME_LEN);
				f->frames[n] = f->names[n];
				n++;
			}
		}
	}
#undef ADD
	return an_folded_add(p->folded, f->frames, n, s->count);
}

static int end(void *ctx, pid_t pid)
{
	struct hx_profile *p = ctx;
	struct an_procmaps *maps;
	struct fold_ctx *f;
	int err;

	if (!p->attached)
		return 0;
	err = probe_oncpu_stop(p->oncpu);
	if (err)
		return err;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->p = p;
	maps = an_procmaps_read(pid);
	if (!maps) {
		err = -errno;
		goto out_free;
	}
	f->usyms = an_usyms_new(p->symcache, maps); /* owns maps from here */
	if (!f->usyms) {
		err = -ENOMEM;
		goto out_free;
	}
	err = probe_oncpu_drain(p->oncpu, fold_one, f, &p->stats);
	an_usyms_free(f->usyms);
out_free:
	free(f);
	if (err && !p->error)
		p->error = err;
	return err;
}

void hx_profile_hooks(struct hx_profile *p, struct hx_hooks *h)
{
	h->ctx = p;
	h->measure_begin = begin;
	h->measure_end = end;
}

int hx_profile_reset(struct hx_profile *p)
{
	struct an_folded *fresh = an_folded_new();

	if (!fresh)
		return -ENOMEM;
	an_folded_free(p->folded);
	p->folded = fresh;
	memset(&p->stats, 0, sizeof(p->stats));
	memset(p->phase_samples, 0, sizeof(p->phase_samples));
	p->error = 0;
	return 0;
}

void hx_profile_close(struct hx_profile *p)
{
	probe_oncpu_free(p->oncpu);
	an_ksyms_free(p->ksyms);
	an_symcache_free(p->symcache);
	an_folded_free(p->folded);
	memset(p, 0, sizeof(*p));
}
