/*
 * sched loader: opens, sizes, loads and attaches sched.bpf.c's four tracepoint
 * programs, switches keeping one process's events on and off (the skeleton's mmapped
 * .bss flag), and drains the per-thread entries into probe_sched_thread records.
 *
 * The programs stay attached from open to free, so a window costs no attach; between
 * windows they test one flag and return. A thread on a CPU when the window stops has
 * its time up to the stop added at the drain, so on-CPU time covers the window's end;
 * a thread already on a CPU when the window starts is counted from its next switch-in.
 * A thread's name is read from /proc at the drain while the process lives; the kernel
 * side keeps one only for the threads that exited.
 *
 * The tracepoints name tasks by their ids in the initial pid namespace, so the probe
 * opens only there: elsewhere the target's pid would not be the one the kernel sees.
 */
#include "probes/probes.h"
#include "probes/common/env.h"

#include <linux/types.h> /* before the shared header and the skeleton, which use __u64 */
#include "probes/sched/sched.h"
#include "probes/sched/sched.skel.h"
#include "runtime/clock.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

_Static_assert(sizeof(struct sched_thread) == 424, "sched_thread ABI");
_Static_assert(sizeof(struct sched_counters) == 64, "sched_counters ABI");
_Static_assert(SCHED_SLOTS == PROBE_SCHED_SLOTS && SCHED_NO_WORKER == PROBE_SCHED_NO_WORKER &&
	       SCHED_NEV == PROBE_SCHED_NEVENTS && SCHED_EV_SWITCH_OUT == PROBE_SCHED_SWITCH_OUT &&
	       SCHED_EV_SWITCH_IN == PROBE_SCHED_SWITCH_IN && SCHED_EV_WAKEUP == PROBE_SCHED_WAKEUP &&
	       SCHED_EV_MIGRATE == PROBE_SCHED_MIGRATE, "sched constants");

#define DEFAULT_THREAD_ENTRIES 1024
/* The inode of the initial pid namespace (PROC_PID_INIT_INO, include/linux/proc_ns.h). */
#define PID_INIT_INO 0xEFFFFFFCu

struct probe_sched {
	struct sched_bpf *skel;
	int stats_fd;              /* probe_bpf_stats_fd(), shared: not ours to close */
	unsigned thread_entries;
	int ncpus;                 /* possible CPUs: per-CPU map values */
	struct sched_counters *pcpu;
	__u32 *tids;               /* drain scratch, thread_entries long */
	bool started;
	uint64_t window_start_ns;
	uint64_t window_ns;        /* time started since the last drain */
	uint64_t stop_ns;          /* CLOCK_MONOTONIC (the programs' clock) at the last stop */
	pid_t tgid;                /* the target of the last start */
};

struct probe_sched *probe_sched_open(const struct probe_sched_opts *o, char *err, size_t errlen)
{
	struct probe_sched_opts d = {};
	struct probe_sched *p;
	struct stat ns;
	char why[256];
	int ret;

	if (!o)
		o = &d;
	if (!probe__have_btf(why, sizeof(why))) {
		snprintf(err, errlen, "sched: %s", why);
		errno = ENOENT;
		return NULL;
	}
	if (stat("/proc/self/ns/pid", &ns)) {
		snprintf(err, errlen, "sched: cannot stat /proc/self/ns/pid: %s", strerror(errno));
		return NULL;
	}
	if (ns.st_ino != PID_INIT_INO) {
		snprintf(err, errlen, "sched: runs in a pid namespace of its own, where the "
			 "scheduler's task ids are not its pids: run it in the host's");
		errno = EOPNOTSUPP;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		snprintf(err, errlen, "sched: out of memory");
		errno = ENOMEM;
		return NULL;
	}
	p->stats_fd = -1;
	p->thread_entries = o->thread_entries ? o->thread_entries : DEFAULT_THREAD_ENTRIES;
	p->ncpus = libbpf_num_possible_cpus();
	if (p->ncpus <= 0) {
		ret = p->ncpus ? p->ncpus : -EINVAL;
		snprintf(err, errlen, "sched: cannot count possible CPUs: %s", strerror(-ret));
		goto out_free;
	}
	p->pcpu = calloc(p->ncpus, sizeof(*p->pcpu));
	p->tids = calloc(p->thread_entries, sizeof(*p->tids));
	if (!p->pcpu || !p->tids) {
		ret = -ENOMEM;
		snprintf(err, errlen, "sched: out of memory for %u threads", p->thread_entries);
		goto out_free;
	}

	probe__libbpf_capture();
	{
		LIBBPF_OPTS(bpf_object_open_opts, open_opts,
			    .btf_custom_path = probe__core_btf("sched"));

		p->skel = sched_bpf__open_opts(&open_opts);
	}
	if (!p->skel) {
		ret = -errno;
		probe__step_error(err, errlen, "sched", "open", errno);
		goto out_free;
	}
	ret = bpf_map__set_max_entries(p->skel->maps.threads, p->thread_entries);
	if (ret) {
		probe__step_error(err, errlen, "sched", "sizing maps", -ret);
		goto out_destroy;
	}
	ret = probe__load(p->skel->skeleton, "sched", err, errlen);
	if (ret)
		goto out_destroy;
	ret = sched_bpf__attach(p->skel);
	if (ret) {
		probe__step_error(err, errlen, "sched", "attach", -ret);
		goto out_destroy;
	}
	/* What an event costs is measured, not guessed (probe_sched_prog_stats()). */
	p->stats_fd = probe_bpf_stats_fd();
	return p;

out_destroy:
	sched_bpf__destroy(p->skel);
out_free:
	free(p->tids);
	free(p->pcpu);
	free(p);
	errno = -ret;
	return NULL;
}

void probe_sched_free(struct probe_sched *p)
{
	if (!p)
		return;
	probe_sched_stop(p);
	sched_bpf__destroy(p->skel);
	free(p->tids);
	free(p->pcpu);
	free(p);
}

unsigned probe_sched_thread_entries(const struct probe_sched *p)
{
	return p->thread_entries;
}

int probe_sched_start(struct probe_sched *p, pid_t tgid, int64_t phase_tls_off)
{
	if (tgid <= 0)
		return -EINVAL;
	if (p->started)
		return -EBUSY;
	p->tgid = tgid;
	p->skel->bss->target_tgid = (__u32)tgid;
	p->skel->bss->phase_tls_off = phase_tls_off;
	/* Publish the target before the flag; pairs with the programs' read of enabled
	 * before target_tgid (x86 keeps store order; the release says so elsewhere). */
	p->window_start_ns = rt_clock_ns();
	__atomic_store_n(&p->skel->bss->enabled, 1, __ATOMIC_RELEASE);
	p->started = true;
	return 0;
}

int probe_sched_stop(struct probe_sched *p)
{
	if (!p->started)
		return 0;
	__atomic_store_n(&p->skel->bss->enabled, 0, __ATOMIC_RELEASE);
	p->stop_ns = rt_clock_ns();
	p->window_ns += p->stop_ns - p->window_start_ns;
	p->started = false;
	/* an event that saw enabled = 1 may still be running on another CPU */
	probe__wait_programs();
	return 0;
}

/* The name of a live thread of tgid into comm (left as it is for one that exited). */
static void live_name(pid_t tgid, __u32 tid, char *comm, size_t len)
{
	char path[64], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%u/comm", (int)tgid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(comm, len, "%s", buf);
}

static void to_record(const struct sched_thread *v, __u32 tid, uint64_t stop_ns,
		      struct probe_sched_thread *t)
{
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->worker = v->worker;
	t->worker_changes = v->worker_changes;
	memcpy(t->comm, v->comm, sizeof(t->comm));
	t->comm[sizeof(t->comm) - 1] = '\0';
	t->voluntary = v->voluntary;
	t->involuntary = v->involuntary;
	t->migrations = v->migrations;
	t->wakeups = v->wakeups;
	t->oncpu_ns = v->exec_last - v->exec_first;
	t->traced_ns = v->oncpu_ns;
	t->unseen_ins = v->unseen_ins;
	t->unseen_ns = v->unseen_ns;
	/* on a CPU when the window stopped: its time up to the stop */
	if (v->oncpu_since && stop_ns > v->oncpu_since) {
		t->oncpu_ns += stop_ns - v->oncpu_since;
		t->traced_ns += stop_ns - v->oncpu_since;
	}
	t->runq_ns = v->runq_ns;
	t->runq_max_ns = v->runq_max_ns;
	for (int i = 0; i < SCHED_SLOTS; i++) {
		t->hist[i] = v->hist[i];
		t->runq_count += v->hist[i];
	}
}

int probe_sched_drain(struct probe_sched *p, probe_sched_fn fn, void *ctx,
		      struct probe_sched_stats *stats)
{
	int fd = bpf_map__fd(p->skel->maps.threads);
	__u32 key, next, n = 0, zero = 0;
	struct probe_sched_thread rec;
	struct sched_thread v;
	int ret = 0;

	if (p->started)
		return -EBUSY;
	/* collect the keys first: deleting while iterating would restart the walk */
	for (int r = bpf_map_get_next_key(fd, NULL, &next); !r && n < p->thread_entries;
	     r = bpf_map_get_next_key(fd, &key, &next)) {
		p->tids[n++] = next;
		key = next;
	}
	for (__u32 i = 0; i < n; i++) {
		if (bpf_map_lookup_elem(fd, &p->tids[i], &v))
			continue; /* only the drain deletes: never expected */
		if (!ret) {
			to_record(&v, p->tids[i], p->stop_ns, &rec);
			live_name(p->tgid, p->tids[i], rec.comm, sizeof(rec.comm));
			stats->threads++;
			stats->unseen_ins += rec.unseen_ins;
			stats->unseen_ns += rec.unseen_ns;
			stats->oncpu_ns += rec.oncpu_ns;
			stats->traced_ns += rec.traced_ns;
			ret = fn(&rec, ctx);
		}
		bpf_map_delete_elem(fd, &p->tids[i]);
	}
	if (bpf_map_lookup_elem(bpf_map__fd(p->skel->maps.counters), &zero, p->pcpu)) {
		if (!ret)
			ret = -errno;
	} else {
		for (int c = 0; c < p->ncpus; c++)
			for (int k = 0; k < SCHED_NEV; k++) {
				stats->seen[k] += p->pcpu[c].seen[k];
				stats->lost[k] += p->pcpu[c].lost[k];
			}
		memset(p->pcpu, 0, p->ncpus * sizeof(*p->pcpu));
		if (bpf_map_update_elem(bpf_map__fd(p->skel->maps.counters), &zero, p->pcpu, 0) &&
		    !ret)
			ret = -errno;
	}
	stats->window_ns += p->window_ns;
	p->window_ns = 0;
	return ret;
}

int probe_sched_prog_stats(const struct probe_sched *p, uint64_t *runs, uint64_t *ns)
{
	struct bpf_program *progs[] = { p->skel->progs.sched_switch, p->skel->progs.sched_wakeup,
					p->skel->progs.sched_wakeup_new,
					p->skel->progs.sched_migrate_task };

	if (p->stats_fd < 0)
		return -ENOTSUP;
	*runs = *ns = 0;
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		if (bpf_obj_get_info_by_fd(bpf_program__fd(progs[i]), &info, &len))
			return -errno;
		*runs += info.run_cnt;
		*ns += info.run_time_ns;
	}
	return 0;
}
