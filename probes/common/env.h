/*
 * What the probes need from the machine and from libbpf, shared by every loader:
 * the BTF check, the permission message, and libbpf's log kept instead of printed.
 * Internal to probes/ (probe__ prefix); probe_bpf_available() is in probes.h.
 */
#ifndef SCHEDLAB_PROBES_COMMON_ENV_H
#define SCHEDLAB_PROBES_COMMON_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROBE__VMLINUX_BTF "/sys/kernel/btf/vmlinux"
/* The fix for EPERM/EACCES from bpf() or perf_event_open(). */
#define PROBE__NOT_PERMITTED "not permitted: run as root or grant CAP_BPF and CAP_PERFMON"

/* Whether the kernel's BTF is readable; if not, why and the fix (no prefix). */
bool probe__have_btf(char *why, size_t len);
/* Whether a kernel release ("6.18.44-fc-v1300") is at least major.minor; false for one
 * that does not begin with two numbers. */
bool probe__kernel_at_least(const char *release, unsigned major, unsigned minor);

/* What every loader needs of the machine before it opens its object: the kernel's BTF,
 * the possible CPUs (the length of a per-CPU map value) and the loader's pid namespace
 * (device and inode, for bpf_get_ns_current_pid_tgid), so that the ids its programs
 * report mean what the loader's pids mean. The first call also has glibc keep freed
 * heap, so that each loader's BTF parse reuses the pages of the one before (env.c).
 * 0, or -errno with err filled, "PROBE: ...". */
struct probe__host {
	int ncpus;
	unsigned long long pidns_dev, pidns_ino;
};
int probe__host_get(struct probe__host *h, const char *probe, char *err, size_t len);
/* The start of every loader's open: the host (probe__host_get()) into h, then a zeroed
 * state of size bytes. NULL with errno set and one line in err naming the probe. */
void *probe__state_new(const char *probe, size_t size, struct probe__host *h, char *err,
		       size_t len);

/* Route libbpf's messages to a per-thread buffer instead of stderr (idempotent), and
 * clear it: call before a sequence of libbpf calls whose failure you will report. */
void probe__libbpf_capture(void);
/* "PROBE: STEP failed: strerror(e)" plus libbpf's last word when it said one; EPERM,
 * and EACCES without a word from libbpf (with one, the verifier refused a program), lead
 * with the fix instead. e is a positive errno. */
void probe__step_error(char *err, size_t len, const char *probe, const char *step, int e);

struct bpf_object_skeleton;

/* Load a probe's object (its skeleton's ->skeleton), as every loader does: 0, or the
 * load's -errno with err filled, "PROBE: load failed: ...". A program the kernel's
 * verifier refused is named there with the line of the verifier's log that says why
 * and what to do (on a kernel older than the probes need, run a newer one; else report
 * it), the whole log saved to a file the message names. One line. */
int probe__load(struct bpf_object_skeleton *s, const char *probe, char *err, size_t len);

/* Wait until every BPF program run that began before the call has finished, so that a
 * flag cleared before it is seen by all of them and their writes are visible: the
 * programs run in RCU read-side sections, and MEMBARRIER_CMD_GLOBAL is
 * synchronize_rcu(). nohz_full kernels refuse it: then a 20 ms wait instead. */
void probe__wait_programs(void);

/* The btf_custom_path to open probe PROBE's object with ("oncpu": core_btf_blobs.S):
 * an extract of the types its CO-RE relocations need, taken at build time from this
 * very kernel (core_btf.c), so that libbpf need not parse the kernel's whole BTF. NULL,
 * for libbpf's default, when the running kernel is not the build's, no extract was
 * built, or it cannot be handed over. */
const char *probe__core_btf(const char *probe);
/* Whether notes, an image of /sys/kernel/notes, hold a GNU build ID note. */
bool probe__notes_build_id(const void *notes, size_t len);
/* Whether the notes the build saw and the running kernel's are the same, build ID and
 * all: only then are the build's types this kernel's. */
bool probe__core_notes_match(const void *built, size_t built_len, const void *running,
			     size_t running_len);

struct bpf_program;

/* How often prog has run and for how long in all (the kernel's BPF run-time
 * statistics, on while stats_fd, from bpf_enable_stats(), is open). 0, -ENOTSUP when
 * stats_fd < 0, or -errno. */
int probe__prog_stats(int stats_fd, const struct bpf_program *prog, uint64_t *runs,
		      uint64_t *ns);

#endif /* SCHEDLAB_PROBES_COMMON_ENV_H */
