/*
 * Can this machine load BPF programs, and if not, why — answered by trying what the
 * probes will do (privileges, kernel BTF for CO-RE, creating a map), so the message
 * names the fix. Also keeps libbpf quiet: its messages go to a per-thread buffer that
 * loaders append to their one-line errors, and a program the kernel's verifier refuses
 * is named with the log's line that says why, the whole log saved to a file, and what
 * to do about it.
 */
#include "probes/probes.h"
#include "probes/common/env.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/capability.h>
#include <linux/membarrier.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* The oldest kernel the probes load on, and what they use that it brought: bpf_loop()
 * (5.17: the stack walks, oncpu's code-range search) and sched_switch's prev_state
 * argument, which its raw tracepoint passes since 5.18 (offcpu and sched read it; a
 * program that reads a fourth argument does not load before). An older kernel is
 * refused before anything loads (probe__host_get()); a verifier that refuses a program
 * on a newer one finds the program at fault. */
#define MIN_KERNEL_MAJOR 5
#define MIN_KERNEL_MINOR 18
#define MIN_KERNEL_NEEDS "bpf_loop, sched_switch's prev_state"

/* libbpf's print hook is process-wide and takes no context, so the last message lives
 * in thread-local storage: libbpf prints from the thread that called it. */
static __thread char libbpf_last[256];
static pthread_once_t libbpf_once = PTHREAD_ONCE_INIT;
/* Whether libbpf has met the open-files limit in this process. A map it could not
 * create for want of an fd leaves its programs referring to none, which the verifier
 * then refuses; and a feature probe that failed so is cached for the process as a
 * feature the kernel lacks (global data, say), which breaks every later load. Either
 * way the refusal is not the news. */
static bool libbpf_out_of_fds;

/* The last program the verifier refused on this thread since the capture: its name
 * (prog[0] == 0: none), the line of its log that says why, and the file the whole log
 * went to ("": not saved, log_errno says why). */
static __thread struct {
	char prog[64];
	char why[100];
	char log[192];
	int log_errno;
} refusal;

/* The line of a verifier's log that says why: the last one, less the statistics the
 * kernel adds after it ("processed N insns ...", and with more logging the time and
 * stack depth). One line of printable text, cut with "..." where too long. */
static void refusal_line(const char *log, size_t n, char *buf, size_t len)
{
	const char *end = log + n, *start;

	for (;;) {
		while (end > log && (end[-1] == '\n' || end[-1] == ' '))
			end--;
		for (start = end; start > log && start[-1] != '\n'; start--)
			;
		if (start == log || (strncmp(start, "processed ", 10) &&
				     strncmp(start, "verification time", 17) &&
				     strncmp(start, "stack depth", 11)))
			break;
		end = start;
	}
	n = (size_t)(end - start);
	if (n >= len)
		snprintf(buf, len, "%.*s...", (int)(len - 4), start);
	else
		snprintf(buf, len, "%.*s", (int)n, start);
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < ' ')
			*c = ' ';
}

/* Save a refused program's log in $TMPDIR (or /tmp), as schedlab-verifier-PROG-*.log:
 * the log is what a report of the refusal needs, and too long for a message. */
static void refusal_save(const char *log, size_t n)
{
	const char *dir = getenv("TMPDIR");
	char name[sizeof(refusal.prog)];
	ssize_t wrote;
	int fd, err;

	snprintf(name, sizeof(name), "%s", refusal.prog);
	for (char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '_'))
			*c = '_';
	if (snprintf(refusal.log, sizeof(refusal.log), "%s/schedlab-verifier-%s-XXXXXX.log",
		     dir && *dir ? dir : "/tmp", name) >= (int)sizeof(refusal.log)) {
		refusal.log[0] = '\0';
		refusal.log_errno = ENAMETOOLONG;
		return;
	}
	fd = mkstemps(refusal.log, 4);
	if (fd < 0) {
		refusal.log_errno = errno;
		refusal.log[0] = '\0';
		return;
	}
	wrote = write(fd, log, n);
	err = wrote == (ssize_t)n ? 0 : wrote < 0 ? errno : EIO;
	if (close(fd) && !err)
		err = errno;
	if (err) {
		refusal.log_errno = err;
		unlink(refusal.log);
		refusal.log[0] = '\0';
	}
}

/* libbpf prints a refused program's whole log as one message: "prog 'NAME': -- BEGIN
 * PROG LOAD LOG --\nLOG-- END PROG LOAD LOG --\n". Keep the name and the line that says
 * why, and save the log. */
static void keep_refusal(const char *fmt, va_list ap)
{
	static const char begin[] = "BEGIN PROG LOAD LOG --\n";
	static const char end_mark[] = "-- END PROG LOAD LOG";
	const char *name, *quote, *log, *end;
	va_list again;
	char *msg;
	int n;

	va_copy(again, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	msg = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (msg)
		vsnprintf(msg, (size_t)n + 1, fmt, again);
	va_end(again);
	if (!msg)
		return;
	name = strstr(msg, "prog '");
	quote = name ? strchr(name + 6, '\'') : NULL;
	log = strstr(msg, begin);
	end = log ? strstr(log, end_mark) : NULL;
	if (name && quote && log && end) {
		log += sizeof(begin) - 1;
		snprintf(refusal.prog, sizeof(refusal.prog), "%.*s", (int)(quote - name - 6),
			 name + 6);
		refusal_line(log, (size_t)(end - log), refusal.why, sizeof(refusal.why));
		refusal_save(log, (size_t)(end - log));
	}
	free(msg);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0;
	if (strstr(fmt, "BEGIN PROG LOAD LOG")) {
		va_list copy;

		va_copy(copy, ap);
		keep_refusal(fmt, copy);
		va_end(copy);
	}
	vsnprintf(libbpf_last, sizeof(libbpf_last), fmt, ap);
	n = strlen(libbpf_last);
	while (n && (libbpf_last[n - 1] == '\n' || libbpf_last[n - 1] == ' '))
		libbpf_last[--n] = '\0';
	/* EMFILE's text, and ENFILE's, which begins with it */
	if (strstr(libbpf_last, strerror(EMFILE)))
		__atomic_store_n(&libbpf_out_of_fds, true, __ATOMIC_RELAXED);
	return 0;
}

static void libbpf_install(void)
{
	libbpf_set_print(libbpf_print);
}

void probe__libbpf_capture(void)
{
	pthread_once(&libbpf_once, libbpf_install);
	libbpf_last[0] = '\0';
	refusal.prog[0] = '\0';
}

/* The last warning libbpf printed on this thread since the capture, "" if none. */
static const char *probe__libbpf_last(void)
{
	return libbpf_last;
}

void probe__step_error(char *err, size_t len, const char *probe, const char *step, int e)
{
	const char *lb = probe__libbpf_last();

	/* EACCES with a word from libbpf is the verifier refusing a program, not a
	 * missing privilege: what it said is the news */
	if (e == EPERM || (e == EACCES && !*lb))
		snprintf(err, len, "%s: %s (%s: %s)", probe, PROBE__NOT_PERMITTED, step, strerror(e));
	else if (*lb)
		snprintf(err, len, "%s: %s failed: %s (%s)", probe, step, strerror(e), lb);
	else
		snprintf(err, len, "%s: %s failed: %s", probe, step, strerror(e));
}

/* "PROBE: load failed: the kernel's verifier refused program 'NAME': WHY; " and what to
 * do: on a kernel older than the probes need, run a newer one; on one new enough, the
 * program is wrong, and the log is what a report of it needs. */
static void refusal_error(char *err, size_t len, const char *probe)
{
	unsigned major = 0, minor = 0;
	struct utsname u;
	char log[sizeof(refusal.log) + 64];

	if (refusal.log[0])
		snprintf(log, sizeof(log), "the verifier's log, %s", refusal.log);
	else
		snprintf(log, sizeof(log), "the verifier's log (not saved: %s)",
			 strerror(refusal.log_errno));
	/* a release that cannot be read is taken for new enough: the log says the rest */
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "(release unknown)");
	if (sscanf(u.release, "%u.%u", &major, &minor) != 2) {
		major = MIN_KERNEL_MAJOR;
		minor = MIN_KERNEL_MINOR;
	}
	if (major < MIN_KERNEL_MAJOR || (major == MIN_KERNEL_MAJOR && minor < MIN_KERNEL_MINOR))
		snprintf(err, len, "%s: load failed: the kernel's verifier refused program '%s': "
			 "%s; Linux %s is older than the %d.%d the probes need (%s): run them on a "
			 "newer kernel (%s)", probe, refusal.prog, refusal.why, u.release,
			 MIN_KERNEL_MAJOR, MIN_KERNEL_MINOR, MIN_KERNEL_NEEDS, log);
	else
		snprintf(err, len, "%s: load failed: the kernel's verifier refused program '%s': "
			 "%s; Linux %s is new enough for the probes (%d.%d or later), so it is a "
			 "schedlab bug: report it with %s", probe, refusal.prog, refusal.why,
			 u.release, MIN_KERNEL_MAJOR, MIN_KERNEL_MINOR, log);
}

int probe__load(struct bpf_object_skeleton *s, const char *probe, char *err, size_t len)
{
	int ret;

	probe__libbpf_capture();
	ret = bpf_object__load_skeleton(s);
	if (!ret)
		return 0;
	if (__atomic_load_n(&libbpf_out_of_fds, __ATOMIC_RELAXED)) {
		struct rlimit r = { 0 };

		getrlimit(RLIMIT_NOFILE, &r);
		snprintf(err, len, "%s: load failed: %s: raise the open-files limit (ulimit -n, "
			 "now %llu; a probe holds a few dozen fds)", probe, strerror(EMFILE),
			 (unsigned long long)r.rlim_cur);
		return -EMFILE;
	}
	if (refusal.prog[0])
		refusal_error(err, len, probe);
	else
		probe__step_error(err, len, probe, "load", -ret);
	return ret;
}

/* libbpf parses the kernel's BTF (5.5 MB, 127,000 types here) into fresh heap for every
 * object it loads, two copies of it, and frees them after the load. Fresh memory is
 * what costs: on this VM the first touch of each page takes 12-15 us, faulted or
 * populated in advance alike (the hypervisor's page tables), some 40 ms a parse. glibc
 * serves blocks that large from mmap(2) and unmaps them on free, or trims the heap, so
 * every loader paid it again. With the thresholds raised the freed pages stay in the
 * heap and the next loader's parse reuses them. Only the loading process's allocator
 * changes: a benchmark's fork is exec'd, with glibc's defaults. */
static void keep_heap(void)
{
	/* 32 MiB: the largest mmap threshold glibc takes on 64-bit */
	if (mallopt(M_MMAP_THRESHOLD, 32 << 20))
		mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

bool probe__kernel_at_least(const char *release, unsigned major, unsigned minor)
{
	unsigned long ma, mi;
	char *end;

	if (!release || *release < '0' || *release > '9')
		return false;
	ma = strtoul(release, &end, 10);
	if (*end != '.' || end[1] < '0' || end[1] > '9')
		return false;
	mi = strtoul(end + 1, NULL, 10);
	return ma > major || (ma == major && mi >= minor);
}

int probe__host_get(struct probe__host *h, const char *probe, char *err, size_t len)
{
	static pthread_once_t heap_once = PTHREAD_ONCE_INIT;
	struct utsname u;
	char why[256];
	struct stat ns;

	pthread_once(&heap_once, keep_heap);

	if (!probe__have_btf(why, sizeof(why))) {
		snprintf(err, len, "%s: %s", probe, why);
		return -ENOENT;
	}
	/* a release that cannot be read is taken for new enough: a refusal says the rest */
	if (!uname(&u) && (u.release[0] >= '0' && u.release[0] <= '9') &&
	    !probe__kernel_at_least(u.release, MIN_KERNEL_MAJOR, MIN_KERNEL_MINOR)) {
		snprintf(err, len, "%s: Linux %s is older than the %d.%d the probes need (%s): run "
			 "them on a newer kernel", probe, u.release, MIN_KERNEL_MAJOR,
			 MIN_KERNEL_MINOR, MIN_KERNEL_NEEDS);
		return -EOPNOTSUPP;
	}
	h->ncpus = libbpf_num_possible_cpus();
	if (h->ncpus <= 0) {
		int ret = h->ncpus ? h->ncpus : -EINVAL;

		snprintf(err, len, "%s: cannot count possible CPUs: %s", probe, strerror(-ret));
		return ret;
	}
	if (stat("/proc/self/ns/pid", &ns)) {
		int ret = -errno;

		snprintf(err, len, "%s: cannot stat /proc/self/ns/pid: %s", probe, strerror(errno));
		return ret;
	}
	h->pidns_dev = ns.st_dev;
	h->pidns_ino = ns.st_ino;
	return 0;
}

void *probe__state_new(const char *probe, size_t size, struct probe__host *h, char *err,
		       size_t len)
{
	int ret = probe__host_get(h, probe, err, len);
	void *state;

	if (ret) {
		errno = -ret;
		return NULL;
	}
	state = calloc(1, size);
	if (!state) {
		snprintf(err, len, "%s: out of memory", probe);
		errno = ENOMEM;
	}
	return state;
}

bool probe__have_btf(char *why, size_t len)
{
	if (!access(PROBE__VMLINUX_BTF, R_OK))
		return true;
	if (errno == ENOENT)
		snprintf(why, len, "no kernel BTF (%s missing): use a kernel built with "
			 "CONFIG_DEBUG_INFO_BTF=y", PROBE__VMLINUX_BTF);
	else
		snprintf(why, len, "cannot read %s: %s: run as root", PROBE__VMLINUX_BTF,
			 strerror(errno));
	return false;
}

static bool cap_effective(const struct __user_cap_data_struct d[2], int cap)
{
	return d[cap / 32].effective & (1u << (cap % 32));
}

bool probe_bpf_available(char *why, size_t len)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct caps[2] = {};
	int fd;

	if (len)
		why[0] = '\0';
	if (syscall(SYS_capget, &hdr, caps)) {
		snprintf(why, len, "capget failed: %s", strerror(errno));
		return false;
	}
	/* CAP_SYS_ADMIN implies both on kernels before 5.8, which lack CAP_BPF. */
	if (!cap_effective(caps, CAP_SYS_ADMIN) &&
	    !(cap_effective(caps, CAP_BPF) && cap_effective(caps, CAP_PERFMON))) {
		snprintf(why, len, "%s", PROBE__NOT_PERMITTED);
		return false;
	}
	if (!probe__have_btf(why, len))
		return false;
	probe__libbpf_capture();
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "probe_check", 4, 4, 1, NULL);
	if (fd < 0) {
		int err = errno;

		if (err == EPERM || err == EACCES)
			snprintf(why, len, "cannot create a BPF map: %s (a seccomp filter or an "
				 "LSM blocks bpf()): %s", strerror(err), PROBE__NOT_PERMITTED);
		else if (err == ENOSYS)
			snprintf(why, len, "cannot create a BPF map: the kernel has no bpf() "
				 "(CONFIG_BPF_SYSCALL)");
		else
			snprintf(why, len, "cannot create a BPF map: %s", strerror(err));
		return false;
	}
	close(fd);
	return true;
}

void probe__wait_programs(void)
{
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0))
		usleep(20 * 1000);
}

static int stats_fd = -ENOTSUP;

static void stats_enable(void)
{
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);

	stats_fd = fd < 0 ? -errno : fd;
}

int probe_bpf_stats_fd(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, stats_enable);
	return stats_fd;
}

int probe__prog_stats(int stats_fd, const struct bpf_program *prog, uint64_t *runs,
		      uint64_t *ns)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	if (stats_fd < 0)
		return -ENOTSUP;
	if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
		return -errno;
	*runs = info.run_cnt;
	*ns = info.run_time_ns;
	return 0;
}
