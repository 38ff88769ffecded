/*
 * What the probes need from the machine and from libbpf, shared by every loader:
 * the BTF check, the permission message, and libbpf's log kept instead of printed.
 * Internal to probes/ (probe__ prefix); probe_bpf_available() is in probes.h.
 */
#ifndef SCHEDLAB_PROBES_COMMON_ENV_H
#define SCHEDLAB_PROBES_COMMON_ENV_H

#include <stdbool.h>
#include <stddef.h>

#define PROBE__VMLINUX_BTF "/sys/kernel/btf/vmlinux"
/* The fix for EPERM/EACCES from bpf() or perf_event_open(). */
#define PROBE__NOT_PERMITTED "not permitted: run as root or grant CAP_BPF and CAP_PERFMON"

/* Whether the kernel's BTF is readable; if not, why and the fix (no prefix). */
bool probe__have_btf(char *why, size_t len);

/* Route libbpf's messages to a per-thread buffer instead of stderr (idempotent), and
 * clear it: call before a sequence of libbpf calls whose failure you will report. */
void probe__libbpf_capture(void);
/* The last warning libbpf printed on this thread since the capture, "" if none. */
const char *probe__libbpf_last(void);

/* "PROBE: STEP failed: strerror" plus libbpf's last word when it said one; EPERM and
 * EACCES lead with the fix. e is a positive errno. */
void probe__step_error(char *err, size_t len, const char *probe, const char *step, int e);

#endif /* SCHEDLAB_PROBES_COMMON_ENV_H */
