/*
 * Sampling perf events for the probes: one event per online CPU (pid -1), hardware
 * cycles where the PMU allows it, else the cpu-clock software event, with the reason
 * recorded. Internal to probes/ (probe__ prefix); one helper instead of a copy per
 * probe.
 */
#ifndef SCHEDLAB_PROBES_COMMON_PERF_H
#define SCHEDLAB_PROBES_COMMON_PERF_H

#include <stdbool.h>
#include <stddef.h>

struct probe__perf {
	int n;            /* online CPUs, and entries in cpus[] and fds[] */
	int *cpus;
	int *fds;         /* -1 once closed or handed to a bpf_link (which then owns it) */
	bool hardware;    /* cycles, else cpu-clock */
	char note[160];   /* why cpu-clock was used; "" with cycles */
};

/* Open a disabled sampling event at freq Hz on every online CPU (attaching a BPF
 * program enables it). 0, or -errno with err filled (no probe prefix). */
int probe__perf_open(struct probe__perf *pe, unsigned freq, bool software_only, char *err,
		     size_t errlen);
/* Close the fds still owned, free the arrays; safe on a zeroed or closed pe. */
void probe__perf_close(struct probe__perf *pe);


/* An integer sysctl under /proc/sys (e.g. "kernel/perf_event_paranoid"); -errno. */
int probe__read_sysctl(const char *name, long *val);

#endif /* SCHEDLAB_PROBES_COMMON_PERF_H */
