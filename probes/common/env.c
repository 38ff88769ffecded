/*
 * Can this machine load BPF programs, and if not, why — answered by trying what the
 * probes will do (privileges, kernel BTF for CO-RE, creating a map), so the message
 * names the fix. Also keeps libbpf quiet: its messages go to a per-thread buffer that
 * loaders append to their one-line errors.
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
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* libbpf's print hook is process-wide and takes no context, so the last message lives
 * in thread-local storage: libbpf prints from the thread that called it. */
static __thread char libbpf_last[256];
static pthread_once_t libbpf_once = PTHREAD_ONCE_INIT;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(libbpf_last, sizeof(libbpf_last), fmt, ap);
	n = strlen(libbpf_last);
	while (n && (libbpf_last[n - 1] == '\n' || libbpf_last[n - 1] == ' '))
		libbpf_last[--n] = '\0';
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
}

const char *probe__libbpf_last(void)
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

int probe__host_get(struct probe__host *h, const char *probe, char *err, size_t len)
{
	static pthread_once_t heap_once = PTHREAD_ONCE_INIT;
	char why[256];
	struct stat ns;

	pthread_once(&heap_once, keep_heap);

	if (!probe__have_btf(why, sizeof(why))) {
		snprintf(err, len, "%s: %s", probe, why);
		return -ENOENT;
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
