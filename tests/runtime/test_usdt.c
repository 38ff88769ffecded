/*
 * The runtime's USDT probe points, seen as a tracer sees them: the .note.stapsdt
 * entries of this test binary name every probe with a semaphore; the semaphores stay 0
 * with no tracer; and a real uprobe attached through perf_event_open with the
 * semaphore's offset (as perf and bpftrace attach) turns the semaphore on and counts
 * exactly one rt:spawn per spawn.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/rt.h"
#include "runtime/usdt.h"

struct note {
	char name[32];
	uint64_t pc, base, sema; /* link-time addresses */
};

static size_t read_notes(const char *path, struct note *out, size_t max, uint64_t *sdt_base,
			 Elf **elf_out, int *fd_out)
{
	int fd = open(path, O_RDONLY);
	Elf_Scn *scn = NULL;
	size_t n = 0, shstrndx;
	Elf *elf;

	cr_assert_geq(fd, 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	cr_assert_eq(elf_getshdrstrndx(elf, &shstrndx), 0);
	*sdt_base = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		const char *sname;

		gelf_getshdr(scn, &sh);
		sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (sname && !strcmp(sname, ".stapsdt.base"))
			*sdt_base = sh.sh_addr;
		if (sh.sh_type != SHT_NOTE || !sname || strcmp(sname, ".note.stapsdt"))
			continue;
		d = elf_getdata(scn, NULL);
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) && n < max) {
			const char *desc = (const char *)d->d_buf + desc_off;
			uint64_t addr[3]; /* notes are 4-byte aligned: copied, not cast */
			const char *provider = desc + 24, *pname = provider + strlen(provider) + 1;

			if (strcmp(provider, "rt"))
				continue;
			memcpy(addr, desc, sizeof(addr));
			snprintf(out[n].name, sizeof(out[n].name), "%s", pname);
			out[n].pc = addr[0];
			out[n].base = addr[1];
			out[n].sema = addr[2];
			n++;
		}
	}
	*elf_out = elf;
	*fd_out = fd;
	return n;
}

/* Link-time address to file offset, through the PT_LOAD that holds it. */
static uint64_t file_offset(Elf *elf, uint64_t vaddr)
{
	size_t nph;

	elf_getphdrnum(elf, &nph);
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		gelf_getphdr(elf, (int)i, &ph);
		if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz)
			return vaddr - ph.p_vaddr + ph.p_offset;
	}
	cr_assert_fail("address 0x%lx is in no PT_LOAD", (unsigned long)vaddr);
	return 0;
}

static const char *const expected[] = { "spawn", "enqueue", "run_begin", "run_end", "steal",
					"place", "park", "unpark", "block_begin", "block_end",
					"flush" };

Test(usdt, every_probe_point_is_in_the_binary_with_a_semaphore)
{
	struct note notes[64];
	uint64_t base;
	Elf *elf;
	int fd;
	size_t n = read_notes("/proc/self/exe", notes, 64, &base, &elf, &fd);

	for (size_t e = 0; e < sizeof(expected) / sizeof(expected[0]); e++) {
		bool found = false;

		for (size_t i = 0; i < n; i++)
			if (!strcmp(notes[i].name, expected[e])) {
				found = true;
				cr_expect_neq(notes[i].sema, 0, "rt:%s has no semaphore", expected[e]);
			}
		cr_expect(found, "rt:%s is not in .note.stapsdt", expected[e]);
	}
	cr_expect_eq(rt_spawn_semaphore, 0, "no tracer: the probe is off");
	elf_end(elf);
	close(fd);
}

static uint64_t leaf(void *arg)
{
	return 1;
}

static uint64_t spawn_some(void *arg)
{
	uint64_t n = (uint64_t)(uintptr_t)arg, sum = 0;

	for (uint64_t i = 0; i < n; i++)
		sum += rt_join(rt_spawn(leaf, NULL));
	return sum;
}

Test(usdt, an_attached_uprobe_turns_the_semaphore_on_and_counts_spawns)
{
	struct perf_event_attr attr;
	struct note notes[64], *spawn = NULL;
	char exe[4096], type_text[32] = "";
	uint64_t base, count = 0;
	struct rt_config c;
	struct rt_sched *s;
	ssize_t len;
	FILE *f;
	Elf *elf;
	int fd, efd, type;
	size_t n;

	f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	if (!f || !fgets(type_text, sizeof(type_text), f))
		cr_skip_test("this kernel has no uprobe PMU (/sys/bus/event_source/devices/uprobe)");
	fclose(f);
	type = atoi(type_text);
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert_gt(len, 0);
	exe[len] = '\0';
	n = read_notes(exe, notes, 64, &base, &elf, &fd);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(notes[i].name, "spawn"))
			spawn = &notes[i];
	cr_assert_not_null(spawn);

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = (uint32_t)type;
	attr.config1 = (uint64_t)(uintptr_t)exe;
	/* a prelinked base (.stapsdt.base) moves every probe by the same delta */
	attr.config2 = file_offset(elf, spawn->pc - spawn->base + (base ? base : spawn->base));
	/* PERF_UPROBE_REF_CTR_OFFSET_SHIFT: the kernel counts tracers in the semaphore */
	attr.config = file_offset(elf, spawn->sema) << 32;
	attr.disabled = 1;
	attr.inherit = 1; /* the workers are threads this test starts after attaching */
	efd = (int)syscall(SYS_perf_event_open, &attr, getpid(), -1, -1, 0);
	if (efd < 0 && (errno == EACCES || errno == EPERM))
		cr_skip_test("perf_event_open refused a uprobe (not root): %s", strerror(errno));
	cr_assert_geq(efd, 0, "perf_event_open(uprobe): %s", strerror(errno));
	ioctl(efd, PERF_EVENT_IOC_ENABLE, 0);
	cr_expect_eq(rt_spawn_semaphore, 1, "attaching turned the probe on");

	rt_config_default(&c);
	c.workers = 2;
	s = rt_sched_new(&c);
	cr_assert_eq(rt_join(rt_submit(s, spawn_some, (void *)1000)), 1000);
	rt_sched_free(s);
	ioctl(efd, PERF_EVENT_IOC_DISABLE, 0);
	cr_assert_eq(read(efd, &count, sizeof(count)), (ssize_t)sizeof(count));
	cr_expect_eq(count, 1000, "one rt:spawn per spawn");
	close(efd);
	/* the kernel drops the probe, and its count in the semaphore, asynchronously */
	for (int i = 0; i < 400 && __atomic_load_n(&rt_spawn_semaphore, __ATOMIC_RELAXED); i++)
		usleep(5000);
	cr_expect_eq(rt_spawn_semaphore, 0, "detaching turned it off");
	elf_end(elf);
	close(fd);
}
