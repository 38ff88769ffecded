/*
 * Performance counters: libpfm4 names → perf_event_attr → perf_event_open groups on the
 * calling thread, inherited by the threads it starts.
 *
 * Why inherit on the calling thread rather than one event per thread opened from
 * outside: a benchmark process starts and retires threads while it runs (workers, spare
 * workers, a blocking pool, a workload's server), and a per-thread event misses every
 * thread born after it was opened. An inherited event follows each clone from the
 * moment it happens, and a read of the parent's event sums its own count with every
 * inherited copy's, live ones read in place and exited ones folded in as they exit
 * (kernel perf_event_read_value() / perf_read_group()), so the count covers every thread
 * of the process that began after the open, exactly, with no enumeration race.
 *
 * Grouping: events of one PMU go into one group (the kernel schedules a group on the PMU
 * all together or not at all, so ratios such as instructions per cycle compare the same
 * instants), software events into a group of their own (they never multiplex, so a
 * starved hardware group cannot starve them), and a hardware group holds at most
 * MAX_HW_GROUP events so that it fits the generic counters of any x86 core. A group read
 * (PERF_FORMAT_GROUP) with inherit is refused by some kernels with EINVAL: then every
 * event is opened and read on its own. An event that would not join its group is
 * tried alone before it is given up.
 */
#include "probes/counters/counters.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <math.h>
#include <perfmon/pfmlib_perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probes/common/env.h"

#define MAX_HW_GROUP 4 /* generic counters of an x86 core with hyper-threading on */

struct event {
	char name[PROBE_COUNTER_NAME_LEN];
	char note[PROBE_COUNTER_NOTE_LEN];
	int fd;          /* -1: not counted */
	int leader;      /* index of the group leader (itself for a leader); -1: not counted */
	bool group_read; /* a leader read with PERF_FORMAT_GROUP */
	bool software;   /* never multiplexed: a group of any size */
	uint32_t pmu;    /* events group with those of the same PMU (pmu_of()) */
	uint64_t id;     /* PERF_EVENT_IOC_ID, to find it in its group's read */
	unsigned members; /* a leader: events in its group, itself included */
};

struct probe_counters {
	unsigned n;
	bool no_group_read; /* the kernel refused PERF_FORMAT_GROUP with inherit */
	struct event ev[PROBE_COUNTERS_MAX];
};

static int pfm_start(char *err, size_t errlen)
{
	int r = pfm_initialize();

	if (r != PFM_SUCCESS) {
		snprintf(err, errlen, "libpfm4 does not start: %s", pfm_strerror(r));
		return -ENODEV;
	}
	return 0;
}

/* libpfm4's encoding of name for perf_event_open, counting user and kernel. */
static int encode(const char *name, struct perf_event_attr *attr)
{
	pfm_perf_encode_arg_t arg;

	memset(attr, 0, sizeof(*attr));
	memset(&arg, 0, sizeof(arg));
	arg.attr = attr;
	arg.size = sizeof(arg);
	return pfm_get_os_event_encoding(name, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
}

/* ---- names -------------------------------------------------------------------------- */

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[PROBE_COUNTER_NAME_LEN * 2 + 1];

	if (lb >= sizeof(row) / sizeof(row[0]))
		return (size_t)-1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (tolower((unsigned char)a[i - 1]) !=
							   tolower((unsigned char)b[j - 1]));

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

#define NSUGGEST 3

struct suggestion {
	char name[PROBE_COUNTER_NAME_LEN * 2];
	size_t dist;
};

/* Visit every event of every PMU present here as "pmu::event". */
static int each_event(int (*fn)(const char *full, const pfm_event_info_t *info, void *ctx),
		      void *ctx)
{
	int n = 0;

	for (int pmu = PFM_PMU_NONE; pmu < PFM_PMU_MAX; pmu++) {
		pfm_pmu_info_t pinfo;

		memset(&pinfo, 0, sizeof(pinfo));
		pinfo.size = sizeof(pinfo);
		if (pfm_get_pmu_info(pmu, &pinfo) != PFM_SUCCESS || !pinfo.is_present)
			continue;
		for (int idx = pinfo.first_event; idx != -1; idx = pfm_get_event_next(idx)) {
			pfm_event_info_t info;
			char full[PROBE_COUNTER_NAME_LEN * 2];
			int r;

			memset(&info, 0, sizeof(info));
			info.size = sizeof(info);
			if (pfm_get_event_info(idx, PFM_OS_PERF_EVENT_EXT, &info) != PFM_SUCCESS)
				continue;
			snprintf(full, sizeof(full), "%s::%s", pinfo.name, info.name);
			for (char *s = full; *s; s++)
				*s = (char)tolower((unsigned char)*s);
			r = fn(full, &info, ctx);
			if (r < 0)
				return r;
			n++;
		}
	}
	return n;
}

struct suggest_ctx {
	const char *name;
	struct suggestion best[NSUGGEST];
};

static int suggest_one(const char *full, const pfm_event_info_t *info, void *arg)
{
	struct suggest_ctx *sc = arg;
	const char *bare = strstr(full, "::") + 2;
	size_t d = edit_distance(sc->name, full), d2 = edit_distance(sc->name, bare);
	int at;

	if (d2 < d)
		d = d2;
	for (at = 0; at < NSUGGEST && sc->best[at].dist <= d; at++)
		if (!strcmp(sc->best[at].name, full))
			return 0;
	if (at == NSUGGEST)
		return 0;
	memmove(&sc->best[at + 1], &sc->best[at], (NSUGGEST - 1 - at) * sizeof(sc->best[0]));
	snprintf(sc->best[at].name, sizeof(sc->best[at].name), "%s", full);
	sc->best[at].dist = d;
	return 0;
}

/* The known event names closest to name by edit distance, comma-separated, into buf
 * ("" when none is close). */
static void probe_counters_suggest(const char *name, char *buf, size_t len)
{
	struct suggest_ctx sc = { .name = name };
	/* a name is close when at most a third of it (two letters at least) differs */
	size_t limit = strlen(name) / 3 > 2 ? strlen(name) / 3 : 2;
	size_t off = 0;
	char err[128];

	if (len)
		buf[0] = '\0';
	for (int i = 0; i < NSUGGEST; i++)
		sc.best[i].dist = (size_t)-1;
	if (pfm_start(err, sizeof(err)))
		return;
	each_event(suggest_one, &sc);
	for (int i = 0; i < NSUGGEST && off < len; i++) {
		if (sc.best[i].dist > limit)
			break;
		off += snprintf(buf + off, len - off, "%s%s", off ? ", " : "", sc.best[i].name);
	}
}

static int list_one(const char *full, const pfm_event_info_t *info, void *arg)
{
	FILE *out = arg;

	fprintf(out, "  %-40s %s\n", full, info->desc ? info->desc : "");
	return ferror(out) ? -EIO : 0;
}

int probe_counters_list(FILE *out)
{
	char err[128];

	if (pfm_start(err, sizeof(err)))
		return -ENODEV;
	return each_event(list_one, out);
}

int probe_counters_split(const char *list, char names[][PROBE_COUNTER_NAME_LEN], char *err,
			 size_t errlen)
{
	char local[PROBE_COUNTERS_MAX][PROBE_COUNTER_NAME_LEN];
	const char *s = list, *end;
	int n = 0;

	if (!names)
		names = local;
	if (!*list) {
		snprintf(err, errlen, "no event named: give libpfm4 event names separated by "
			 "commas, e.g. %s", "cycles,perf::task-clock");
		return -EINVAL;
	}
	for (;; s = end + 1) {
		size_t len;

		end = strchr(s, ',');
		if (!end)
			end = s + strlen(s);
		len = (size_t)(end - s);
		if (!len) {
			snprintf(err, errlen, "'%s': an empty event name; separate names by single "
				 "commas", list);
			return -EINVAL;
		}
		if (len >= PROBE_COUNTER_NAME_LEN) {
			snprintf(err, errlen, "'%.*s': event names are at most %d characters",
				 (int)len, s, PROBE_COUNTER_NAME_LEN - 1);
			return -EINVAL;
		}
		if (n == PROBE_COUNTERS_MAX) {
			snprintf(err, errlen, "'%s': at most %d events in one list", list,
				 PROBE_COUNTERS_MAX);
			return -EINVAL;
		}
		memcpy(names[n], s, len);
		names[n][len] = '\0';
		for (int i = 0; i < n; i++)
			if (!strcasecmp(names[i], names[n])) {
				snprintf(err, errlen, "'%s' is named twice; name each event once",
					 names[n]);
				return -EINVAL;
			}
		n++;
		if (!*end)
			break;
	}
	return n;
}

int probe_counters_parse(const char *list, char names[][PROBE_COUNTER_NAME_LEN], char *err,
			 size_t errlen)
{
	char local[PROBE_COUNTERS_MAX][PROBE_COUNTER_NAME_LEN];
	int n, r;

	if (!names)
		names = local;
	n = probe_counters_split(list, names, err, errlen);
	if (n < 0)
		return n;
	if (pfm_start(err, errlen))
		return -ENODEV;
	for (int i = 0; i < n; i++) {
		struct perf_event_attr attr;
		char hint[3 * PROBE_COUNTER_NAME_LEN * 2 + 8];

		r = encode(names[i], &attr);
		if (r == PFM_ERR_NOTFOUND) {
			probe_counters_suggest(names[i], hint, sizeof(hint));
			snprintf(err, errlen, "'%s' is no event libpfm4 knows here; %s%s%s", names[i],
				 *hint ? "closest: " : "",
				 *hint ? hint : "",
				 *hint ? " (all: schedlab list --events)"
				       : "see 'schedlab list --events' for the events it knows");
			return -ENOENT;
		}
		if (r != PFM_SUCCESS) {
			snprintf(err, errlen, "'%s': libpfm4 cannot encode it: %s (see 'schedlab "
				 "list --events' for the names it knows)",
				 names[i], pfm_strerror(r));
			return -EINVAL;
		}
	}
	return n;
}

/* ---- opening -------------------------------------------------------------------------- */

/* Whether the kernel has a core PMU at all: a VM without one has no "cpu" (or hybrid
 * "cpu_core"/"cpu_atom") event source. */
static bool have_core_pmu(void)
{
	DIR *d = opendir("/sys/bus/event_source/devices");
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while (!found && (e = readdir(d)))
		found = !strcmp(e->d_name, "cpu") || !strncmp(e->d_name, "cpu_", 4);
	closedir(d);
	return found;
}

static bool is_software(const struct perf_event_attr *a)
{
	return a->type == PERF_TYPE_SOFTWARE;
}

/* The PMU an event is counted on: the generic hardware types and raw codes are all the
 * core PMU's; every other type (software, tracepoints, a dynamic PMU) is its own. */
static uint32_t pmu_of(const struct perf_event_attr *a)
{
	if (a->type == PERF_TYPE_HARDWARE || a->type == PERF_TYPE_HW_CACHE ||
	    a->type == PERF_TYPE_RAW)
		return PERF_TYPE_RAW;
	return a->type;
}

static void why_not(char *buf, size_t len, const struct perf_event_attr *a, int e)
{
	bool hw = a->type == PERF_TYPE_HARDWARE || a->type == PERF_TYPE_HW_CACHE ||
		  a->type == PERF_TYPE_RAW;

	if ((e == ENOENT || e == EOPNOTSUPP || e == ENODEV) && hw && !have_core_pmu())
		snprintf(buf, len, "no hardware PMU (perf_event_open: %s)", strerror(e));
	else if (e == ENOENT || e == EOPNOTSUPP || e == ENODEV)
		snprintf(buf, len, "this machine's PMU cannot count it (perf_event_open: %s)",
			 strerror(e));
	else if (e == EACCES || e == EPERM)
		snprintf(buf, len, "perf_event_open: %s: %s", strerror(e), PROBE__NOT_PERMITTED);
	else if (e == EMFILE || e == ENFILE)
		snprintf(buf, len, "perf_event_open: %s: raise the open-files limit (ulimit -n)",
			 strerror(e));
	else
		snprintf(buf, len, "the kernel refused it (perf_event_open: %s)", strerror(e));
}

static int sys_open(struct perf_event_attr *a, int group_fd)
{
	return (int)syscall(SYS_perf_event_open, a, 0, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
}

/* The group event i may join: the newest leader on its PMU, if it has room. -1: none. */
static int find_leader(struct probe_counters *c, unsigned i)
{
	for (int j = (int)i - 1; j >= 0; j--) {
		struct event *l = &c->ev[j];

		if (l->fd < 0 || l->leader != j || l->pmu != c->ev[i].pmu)
			continue;
		if (!l->software && l->members >= MAX_HW_GROUP)
			return -1;
		return j;
	}
	return -1;
}

static int open_event(struct probe_counters *c, unsigned i)
{
	struct event *ev = &c->ev[i];
	struct perf_event_attr attr;
	int leader, fd, e, r;

	r = encode(ev->name, &attr);
	if (r != PFM_SUCCESS) {
		snprintf(ev->note, sizeof(ev->note), "libpfm4 cannot encode it: %s",
			 pfm_strerror(r));
		return 0;
	}
	attr.size = sizeof(attr);
	attr.inherit = 1;
	attr.disabled = 0;
	attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
			   PERF_FORMAT_ID;
	ev->software = is_software(&attr);
	ev->pmu = pmu_of(&attr);
	leader = c->no_group_read ? -1 : find_leader(c, i);
	if (leader < 0 && !c->no_group_read)
		attr.read_format |= PERF_FORMAT_GROUP;
	fd = sys_open(&attr, leader >= 0 ? c->ev[leader].fd : -1);
	if (fd < 0 && leader >= 0) {
		/* it would not fit the group (no counter can take it beside the others):
		 * alone, it may still be multiplexed in */
		leader = -1;
		attr.read_format |= PERF_FORMAT_GROUP;
		fd = sys_open(&attr, -1);
	}
	if (fd < 0 && errno == EINVAL && (attr.read_format & PERF_FORMAT_GROUP)) {
		/* PERF_FORMAT_GROUP with inherit: refused before Linux 6.x allowed it */
		attr.read_format &= ~(uint64_t)PERF_FORMAT_GROUP;
		fd = sys_open(&attr, -1);
		if (fd >= 0)
			c->no_group_read = true;
	}
	if (fd < 0 && (errno == EACCES || errno == EPERM) && !attr.exclude_kernel) {
		/* kernel.perf_event_paranoid keeps the kernel out (perf's pfm.c does the
		 * same): count user space, and say so */
		attr.exclude_kernel = attr.exclude_hv = 1;
		fd = sys_open(&attr, leader >= 0 ? c->ev[leader].fd : -1);
		if (fd >= 0)
			snprintf(ev->note, sizeof(ev->note), "user space only: the kernel's "
				 "perf_event_paranoid setting keeps the kernel out");
	}
	if (fd < 0) {
		e = errno;
		why_not(ev->note, sizeof(ev->note), &attr, e);
		return e == EMFILE || e == ENFILE ? -e : 0;
	}
	if (ioctl(fd, PERF_EVENT_IOC_ID, &ev->id)) {
		e = errno;
		close(fd);
		snprintf(ev->note, sizeof(ev->note), "PERF_EVENT_IOC_ID: %s", strerror(e));
		return 0;
	}
	ev->fd = fd;
	ev->group_read = leader < 0 && (attr.read_format & PERF_FORMAT_GROUP);
	ev->leader = leader >= 0 ? leader : (int)i;
	ev->members = 1;
	if (leader >= 0)
		c->ev[leader].members++;
	return 0;
}

struct probe_counters *probe_counters_open(const char *list, char *err, size_t errlen)
{
	char names[PROBE_COUNTERS_MAX][PROBE_COUNTER_NAME_LEN];
	struct probe_counters *c;
	int n, r;

	n = probe_counters_split(list, names, err, errlen);
	if (n < 0) {
		errno = -n;
		return NULL;
	}
	if (pfm_start(err, errlen)) {
		errno = ENODEV;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	c->n = (unsigned)n;
	for (unsigned i = 0; i < c->n; i++) {
		snprintf(c->ev[i].name, sizeof(c->ev[i].name), "%s", names[i]);
		c->ev[i].fd = -1;
		c->ev[i].leader = -1;
	}
	for (unsigned i = 0; i < c->n; i++) {
		r = open_event(c, i);
		if (r) {
			snprintf(err, errlen, "%s: %s", c->ev[i].name, c->ev[i].note);
			probe_counters_free(c);
			errno = -r;
			return NULL;
		}
	}
	return c;
}

void probe_counters_free(struct probe_counters *c)
{
	if (!c)
		return;
	/* members before their leaders: closing a leader first would detach them */
	for (unsigned i = c->n; i-- > 0;)
		if (c->ev[i].fd >= 0)
			close(c->ev[i].fd);
	free(c);
}

unsigned probe_counters_count(const struct probe_counters *c)
{
	return c->n;
}

const char *probe_counters_name(const struct probe_counters *c, unsigned i)
{
	return c->ev[i].name;
}

bool probe_counters_counted(const struct probe_counters *c, unsigned i)
{
	return c->ev[i].fd >= 0;
}

const char *probe_counters_note(const struct probe_counters *c, unsigned i)
{
	return c->ev[i].note;
}

/* ---- reading -------------------------------------------------------------------------- */

static int read_all(int fd, void *buf, size_t len, ssize_t *got)
{
	ssize_t n;

	do
		n = read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	*got = n;
	return 0;
}

int probe_counters_read(struct probe_counters *c, struct probe_counter_value *out)
{
	/* a group read: nr, time enabled, time running, then {value, id} per member */
	uint64_t buf[3 + 2 * PROBE_COUNTERS_MAX];
	ssize_t got = 0;
	int err;

	memset(out, 0, c->n * sizeof(*out));
	for (unsigned i = 0; i < c->n; i++) {
		struct event *ev = &c->ev[i];

		if (ev->fd < 0 || ev->leader != (int)i)
			continue;
		if (!ev->group_read) {
			err = read_all(ev->fd, buf, 4 * sizeof(uint64_t), &got);
			if (err)
				return err;
			if (got < (ssize_t)(3 * sizeof(uint64_t)))
				return -EIO;
			out[i] = (struct probe_counter_value){ buf[0], buf[1], buf[2] };
			continue;
		}
		err = read_all(ev->fd, buf, sizeof(buf), &got);
		if (err)
			return err;
		if (got < (ssize_t)(3 * sizeof(uint64_t)) ||
		    got < (ssize_t)((3 + 2 * buf[0]) * sizeof(uint64_t)))
			return -EIO;
		for (uint64_t k = 0; k < buf[0]; k++)
			for (unsigned j = i; j < c->n; j++)
				if (c->ev[j].leader == (int)i && c->ev[j].id == buf[4 + 2 * k]) {
					out[j] = (struct probe_counter_value){ buf[3 + 2 * k],
									       buf[1], buf[2] };
					break;
				}
	}
	return 0;
}

void probe_counters_delta(const struct probe_counter_value *b, const struct probe_counter_value *a,
			  struct probe_counter_value *out, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		out[i].value = b[i].value - a[i].value;
		out[i].enabled = b[i].enabled - a[i].enabled;
		out[i].running = b[i].running - a[i].running;
	}
}

double probe_counter_scaled(const struct probe_counter_value *v)
{
	if (!v->running)
		return v->enabled ? NAN : 0;
	if (v->running >= v->enabled)
		return (double)v->value;
	return (double)v->value * ((double)v->enabled / (double)v->running);
}
