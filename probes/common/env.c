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
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
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

void probe__step_error(char *err, size_t len, const char *probe, const char *step, int e)
{
	const char *lb = probe__libbpf_last();

	if (e == EPERM || e == EACCES)
		snprintf(err, len, "%s: %s (%s: %s)", probe, PROBE__NOT_PERMITTED, step,
			 strerror(e));
	else if (*lb)
		snprintf(err, len, "%s: %s failed: %s (%s)", probe, step, strerror(e), lb);
	else
		snprintf(err, len, "%s: %s failed: %s", probe, step, strerror(e));
}
