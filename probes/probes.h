/*
 * probes — the kernel-side instruments, loaded with libbpf (CO-RE), and their loaders.
 *
 * oncpu: a perf-event sampler on every online CPU (hardware cycles where the machine
 * has a PMU, else the cpu-clock software event, and it says which) that keeps only the
 * threads of one target process, walks user and kernel stacks, reads the runtime's
 * phase word, and aggregates counts in the kernel. Stacks are stored once each, keyed
 * by a hash of their contents, so distinct stacks never evict or refuse one another.
 * Every sample that cannot be kept whole (a full stacks map, a failed walk, a full
 * counts map, a stack at the depth limit) is counted, and comes back as a sample with
 * the loss marked, so that the folded totals still equal the samples taken.
 *
 * Every constructor fills err with one line that names what failed and how to fix it
 * ("oncpu: not root: run as root or grant CAP_BPF and CAP_PERFMON").
 */
#ifndef SCHEDLAB_PROBES_H
#define SCHEDLAB_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Whether this machine can load BPF programs at all; if not, why (one line). */
bool probe_bpf_available(char *why, size_t len);

/* ---- oncpu ---------------------------------------------------------------------------- */

struct probe_oncpu_opts {
	unsigned freq;           /* samples per second per CPU; 0: 999 */
	unsigned stack_entries;  /* distinct stacks (user and kernel) kept per drain; 0: 16384
				  * (about 1 KiB of kernel memory each, preallocated) */
	unsigned count_entries;  /* aggregated-counts map size; 0: 40960 */
	bool software_only;      /* skip hardware cycles even where a PMU exists */
};

struct probe_target {
	pid_t tgid;              /* the process whose threads are sampled */
	int64_t phase_tls_off;   /* offset of rt_phase_ptr from the thread pointer; 0: none */
};

struct probe_oncpu;

struct probe_oncpu *probe_oncpu_open(const struct probe_oncpu_opts *o, char *err, size_t errlen);
void probe_oncpu_free(struct probe_oncpu *p);

/* "cycles" or "cpu-clock", and the frequency in use. */
const char *probe_oncpu_event(const struct probe_oncpu *p);
unsigned probe_oncpu_freq(const struct probe_oncpu *p);
/* Why the software event was used ("cycles refused: No such file or directory (no
 * hardware PMU)"), or "" when cycles are in use. */
const char *probe_oncpu_event_note(const struct probe_oncpu *p);

/* Start keeping samples of t's threads; stop keeping any. Aggregates persist across
 * start/stop until drained. 0 or -errno. */
int probe_oncpu_start(struct probe_oncpu *p, const struct probe_target *t);
int probe_oncpu_stop(struct probe_oncpu *p);

/* Loss markers on a sample: which parts of it could not be kept. */
#define PROBE_LOST_USTACK_FULL      (1u << 0) /* a new stack found the stacks map full */
#define PROBE_LOST_KSTACK_FULL      (1u << 1)
#define PROBE_LOST_USTACK_ERROR     (1u << 2) /* the walk failed, or found no user frame */
#define PROBE_LOST_KSTACK_ERROR     (1u << 3)
#define PROBE_LOST_COUNTS_FULL      (1u << 4) /* no room in the counts map: stacks unknown */
#define PROBE_TRUNCATED_USTACK      (1u << 5) /* the walk reached the depth limit */
#define PROBE_TRUNCATED_KSTACK      (1u << 6)

struct probe_stack {
	uint32_t tgid;
	char comm[16];           /* the sampled thread's name */
	uint64_t phase;          /* the runtime's phase word (runtime/phase.h) without the task
				  * id, which would split every task's samples apart; 0: none */
	const uint64_t *ustack;  /* leaf first; ustack[0] is the sampled IP */
	uint32_t nuser;
	const uint64_t *kstack;  /* leaf first */
	uint32_t nkernel;
	uint32_t lost;           /* PROBE_LOST_* / PROBE_TRUNCATED_* */
	uint64_t count;
};

struct probe_oncpu_stats {
	uint64_t samples;          /* samples of the target kept or counted as lost */
	/* samples whose user/kernel stack found the stacks map full; like the errors,
	 * counted only for samples not in counts_full, so each equals the count of the
	 * stacks flagged */
	uint64_t ustack_full;
	uint64_t kstack_full;
	uint64_t ustack_errors;
	uint64_t kstack_errors;
	uint64_t counts_full;      /* samples whose stacks are unknown: counts map full */
	uint64_t truncated;        /* stacks at the depth limit */
};

typedef int (*probe_stack_fn)(const struct probe_stack *s, void *ctx);

/* Hand every aggregated stack to fn (a non-zero return stops the walk and is
 * returned), add this drain's losses to *stats, and empty the maps. Call it while
 * stopped. 0 or -errno. */
int probe_oncpu_drain(struct probe_oncpu *p, probe_stack_fn fn, void *ctx,
		      struct probe_oncpu_stats *stats);

#endif /* SCHEDLAB_PROBES_H */
