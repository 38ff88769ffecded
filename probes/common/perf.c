/*
 * One sampling perf event per online CPU for the probes. Hardware cycles are tried
 * first on every CPU and used only if every CPU accepts them, so one run never mixes
 * units; otherwise all CPUs get cpu-clock and pe->note says why (a VM without a PMU
 * answers ENOENT). Detected each time, never assumed. CPUs that come online later are
 * not sampled.
 */
#include "probes/common/perf.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int probe__read_sysctl(const char *name, long *val)
{
	char path[128];
	FILE *f;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/sys/%s", name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (fscanf(f, "%ld", val) != 1)
		err = -EINVAL;
	fclose(f);
	return err;
}

/* Online CPU numbers from /sys/devices/system/cpu/online into a malloc'd array.
 * Count, or -errno. */
static int probe__online_cpus(int **cpus)
{
	char buf[4096];
	int *out = NULL, n = 0, cap = 0, err;
	char *s, *end;
	FILE *f;

	f = fopen("/sys/devices/system/cpu/online", "re");
	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		err = -EIO;
		goto out_close;
	}
	/* "0-3,5,7-8\n" */
	for (s = buf; *s && *s != '\n';) {
		long a, b;

		errno = 0;
		a = b = strtol(s, &end, 10);
		if (errno || end == s || a < 0) {
			err = -EINVAL;
			goto out_free;
		}
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (errno || end == s || b < a) {
				err = -EINVAL;
				goto out_free;
			}
		}
		for (; a <= b; a++) {
			if (n == cap) {
				int *grown;

				cap = cap ? 2 * cap : 64;
				grown = realloc(out, cap * sizeof(*out));
				if (!grown) {
					err = -ENOMEM;
					goto out_free;
				}
				out = grown;
			}
			out[n++] = (int)a;
		}
		s = *end == ',' ? end + 1 : end;
	}
	if (!n) {
		err = -ENOENT;
		goto out_free;
	}
	fclose(f);
	*cpus = out;
	return n;

out_free:
	free(out);
out_close:
	fclose(f);
	return err;
}

static int perf_open(bool hardware, unsigned freq, int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = hardware ? PERF_TYPE_HARDWARE : PERF_TYPE_SOFTWARE,
		.config = hardware ? PERF_COUNT_HW_CPU_CYCLES : PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = freq,
		.disabled = 1,
	};

	return syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void close_fds(struct probe__perf *pe)
{
	for (int i = 0; i < pe->n; i++) {
		if (pe->fds[i] >= 0)
			close(pe->fds[i]);
		pe->fds[i] = -1;
	}
}

/* Open the event on every CPU; on the first failure close them all: -errno, *cpu. */
static int open_all(struct probe__perf *pe, bool hardware, unsigned freq, int *cpu)
{
	for (int i = 0; i < pe->n; i++) {
		pe->fds[i] = perf_open(hardware, freq, pe->cpus[i]);
		if (pe->fds[i] < 0) {
			int err = -errno;

			*cpu = pe->cpus[i];
			close_fds(pe);
			return err;
		}
	}
	return 0;
}

static const char *hw_why(int err)
{
	switch (err) {
	case -ENOENT:
	case -ENODEV:
		return "no hardware PMU";
	case -EOPNOTSUPP:
		return "the PMU cannot sample";
	case -EACCES:
	case -EPERM:
		return "not permitted";
	case -EBUSY:
		return "PMU in use";
	default:
		return "unexpected";
	}
}

int probe__perf_open(struct probe__perf *pe, unsigned freq, bool software_only, char *err,
		     size_t errlen)
{
	long max_rate = 0, paranoid = -99;
	int ret, cpu = -1;

	memset(pe, 0, sizeof(*pe));
	/* The kernel refuses a frequency above this with a bare EINVAL; say why. */
	if (!probe__read_sysctl("kernel/perf_event_max_sample_rate", &max_rate) &&
	    freq > max_rate) {
		snprintf(err, errlen,
			 "freq %u Hz exceeds kernel.perf_event_max_sample_rate (%ld): lower the "
			 "frequency or raise the sysctl", freq, max_rate);
		return -EINVAL;
	}
	ret = probe__online_cpus(&pe->cpus);
	if (ret < 0) {
		snprintf(err, errlen, "cannot read online CPUs: %s", strerror(-ret));
		return ret;
	}
	pe->n = ret;
	pe->fds = malloc(pe->n * sizeof(*pe->fds));
	if (!pe->fds) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out_free;
	}
	for (int i = 0; i < pe->n; i++)
		pe->fds[i] = -1;

	if (software_only) {
		snprintf(pe->note, sizeof(pe->note), "cycles not tried: software event requested");
	} else {
		ret = open_all(pe, true, freq, &cpu);
		if (!ret) {
			pe->hardware = true;
			return 0;
		}
		if (cpu == pe->cpus[0])
			snprintf(pe->note, sizeof(pe->note), "cycles refused: %s (%s)",
				 strerror(-ret), hw_why(ret));
		else
			snprintf(pe->note, sizeof(pe->note), "cycles refused on cpu %d: %s (%s)",
				 cpu, strerror(-ret), hw_why(ret));
	}
	ret = open_all(pe, false, freq, &cpu);
	if (!ret)
		return 0;
	probe__read_sysctl("kernel/perf_event_paranoid", &paranoid);
	snprintf(err, errlen, "perf_event_open(cpu-clock, cpu %d) failed: %s "
		 "(kernel.perf_event_paranoid = %ld)%s", cpu, strerror(-ret), paranoid,
		 ret == -EACCES || ret == -EPERM ?
		 ": run as root or grant CAP_PERFMON" : "");
out_free:
	free(pe->fds);
	free(pe->cpus);
	memset(pe, 0, sizeof(*pe));
	return ret;
}

void probe__perf_close(struct probe__perf *pe)
{
	if (pe->fds)
		close_fds(pe);
	free(pe->fds);
	free(pe->cpus);
	memset(pe, 0, sizeof(*pe));
}
