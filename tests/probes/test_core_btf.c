/*
 * The probes' CO-RE types from the build's extracts (probes/common/core_btf.c): which
 * kernel notes count as the build's, and, on this machine, that the extracts of oncpu,
 * offcpu and sched are used and give the kernel the very programs the kernel's full
 * BTF gives; and that the verifier's part of a load stays small.
 */
#include <criterion/criterion.h>

#include "probes/common/env.h"
#include <linux/types.h> /* before the shared header and the skeleton, which use __u64 */
#include "probes/oncpu/oncpu.h"
#include "probes/oncpu/oncpu.skel.h"
#include "probes/offcpu/offcpu.h"
#include "probes/offcpu/offcpu.skel.h"
#include "probes/sched/sched.h"
#include "probes/sched/sched.skel.h"
#include "tests/probes/busy.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One ELF note: namesz, descsz, type, the name and the descriptor padded to 4 bytes. */
static size_t put_note(unsigned char *p, const char *name, uint32_t type, const void *desc,
		       uint32_t descsz)
{
	uint32_t namesz = (uint32_t)strlen(name) + 1, hdr[3] = { namesz, descsz, type };
	size_t off = sizeof(hdr);

	memcpy(p, hdr, sizeof(hdr));
	memset(p + off, 0, (namesz + 3) & ~3u);
	memcpy(p + off, name, namesz);
	off += (namesz + 3) & ~3u;
	memset(p + off, 0, (descsz + 3) & ~3u);
	memcpy(p + off, desc, descsz);
	return off + ((descsz + 3) & ~3u);
}

static const unsigned char id_a[20] = { 0x1a, 0xb6, 0xe3, 0xd5, 0xf5 };
static const unsigned char id_b[20] = { 0x1a, 0xb6, 0xe3, 0xd5, 0xf6 };

/* A kernel's notes: its Linux note, then its build ID (when id is given). */
static size_t kernel_notes(unsigned char *p, const unsigned char *id)
{
	size_t n = put_note(p, "Linux", 0x100, "6.18.44", 8);

	if (id)
		n += put_note(p + n, "GNU", 3, id, 20);
	return n;
}

Test(core_btf, notes_with_a_build_id_are_recognised)
{
	unsigned char notes[256];
	size_t n = kernel_notes(notes, id_a);

	cr_assert(probe__notes_build_id(notes, n));
	cr_assert_not(probe__notes_build_id(notes, kernel_notes(notes, NULL)),
		      "a Linux note alone is no build ID");
}

Test(core_btf, a_note_that_runs_past_the_end_is_refused)
{
	unsigned char notes[256];
	size_t n = kernel_notes(notes, id_a);

	for (size_t cut = 1; cut < 20; cut++)
		cr_assert_not(probe__notes_build_id(notes, n - cut),
			      "notes cut %zu bytes short still read as a build ID", cut);
	/* a descriptor size beyond the notes */
	{
		uint32_t huge = 1u << 30;

		memcpy(notes + 4, &huge, sizeof(huge));
		cr_assert_not(probe__notes_build_id(notes, n));
	}
}

Test(core_btf, only_the_same_kernel_matches)
{
	unsigned char a[256], a2[256], b[256], bare[256];
	size_t na = kernel_notes(a, id_a), na2 = kernel_notes(a2, id_a);
	size_t nb = kernel_notes(b, id_b), nbare = kernel_notes(bare, NULL);

	cr_assert(probe__core_notes_match(a, na, a2, na2));
	cr_assert_not(probe__core_notes_match(a, na, b, nb), "another build ID matched");
	cr_assert_not(probe__core_notes_match(a, na, a2, na2 - 4), "a shorter image matched");
	cr_assert_not(probe__core_notes_match(bare, nbare, bare, nbare),
		      "notes without a build ID cannot tell kernels apart, yet matched");
	cr_assert_not(probe__core_notes_match(a, 0, a, 0), "an empty build image matched");
}

/* The running kernel's notes carry a build ID (every kernel since 2.6.23 links with
 * one): without it the extract is never used, and the test below would prove nothing. */
static bool kernel_has_build_id(void)
{
	unsigned char buf[4096];
	ssize_t n;
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	return n > 0 && probe__notes_build_id(buf, (size_t)n);
}

/* What the kernel says of prog, loaded. */
static struct bpf_prog_info prog_info(struct bpf_program *prog)
{
	struct bpf_prog_info info = { 0 };
	uint32_t len = sizeof(info);
	int fd = bpf_program__fd(prog);

	cr_assert_geq(fd, 0, "%s was not loaded", bpf_program__name(prog));
	cr_assert_eq(bpf_obj_get_info_by_fd(fd, &info, &len), 0);
	return info;
}

/* The instructions of every program of obj, loaded, as the kernel rewrote them, one
 * after another in *insns (malloc'd); their count. */
static size_t xlated_all(struct bpf_object *obj, struct bpf_insn **insns)
{
	struct bpf_program *prog;
	size_t n = 0;

	*insns = NULL;
	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info = prog_info(prog);
		int fd = bpf_program__fd(prog);
		uint32_t len;

		cr_assert_gt(info.xlated_prog_len, 0, "no xlated instructions (kernel.kptr_restrict?)");
		*insns = realloc(*insns, n * sizeof(**insns) + info.xlated_prog_len);
		cr_assert_not_null(*insns);
		{
			struct bpf_prog_info again = {
				.xlated_prog_len = info.xlated_prog_len,
				.xlated_prog_insns = (uintptr_t)(*insns + n),
			};

			len = sizeof(again);
			cr_assert_eq(bpf_obj_get_info_by_fd(fd, &again, &len), 0);
		}
		n += info.xlated_prog_len / sizeof(struct bpf_insn);
	}
	return n;
}

/* Load oncpu's object with types from path (NULL: the kernel's BTF); its program's
 * instructions as the kernel rewrote them, in *insns (malloc'd), and their count. */
static size_t load_xlated(const char *path, struct bpf_insn **insns)
{
	LIBBPF_OPTS(bpf_object_open_opts, o, .btf_custom_path = path);
	struct oncpu_bpf *skel = oncpu_bpf__open_opts(&o);
	size_t n;
	int ret;

	cr_assert_not_null(skel, "oncpu's object did not open (types from %s)",
			   path ? path : "the kernel");
	bpf_map__set_max_entries(skel->maps.stacks, 64);
	bpf_map__set_max_entries(skel->maps.counts, 64);
	bpf_map__set_max_entries(skel->maps.dwarf_scratch, 1);
	ret = oncpu_bpf__load(skel);
	cr_assert_eq(ret, 0, "oncpu did not load with types from %s: %s",
		     path ? path : "the kernel", strerror(-ret));
	n = xlated_all(skel->obj, insns);
	oncpu_bpf__destroy(skel);
	return n;
}

/* Instructions that differ between two loads, a map's address and id aside. */
static size_t differing(struct bpf_insn *a, struct bpf_insn *b, size_t n)
{
	size_t differ = 0;

	for (size_t i = 0; i < n; i++) {
		/* a map reference (a 64-bit load with a source) names the map by its id,
		 * which differs between loads, in both halves' imm */
		if (a[i].code == (BPF_LD | BPF_DW | BPF_IMM) && a[i].src_reg) {
			a[i].imm = b[i].imm = 0;
			if (i + 1 < n)
				a[i + 1].imm = b[i + 1].imm = 0;
		}
		if (memcmp(&a[i], &b[i], sizeof(a[i])))
			differ++;
	}
	return differ;
}

/* The extract at path with task_struct's `flags` moved 8 bytes on, written to a file. */
static void write_moved_flags(const char *from, const char *to)
{
	struct btf *btf = btf__parse(from, NULL);
	const void *raw;
	uint32_t size;
	bool moved = false;
	FILE *f;

	cr_assert_not_null(btf, "cannot parse %s", from);
	for (uint32_t id = 1; id < (uint32_t)btf__type_cnt(btf); id++) {
		struct btf_type *t = (struct btf_type *)btf__type_by_id(btf, id);
		struct btf_member *m = btf_members(t);

		if (!btf_is_struct(t) || strcmp(btf__name_by_offset(btf, t->name_off), "task_struct"))
			continue;
		for (int i = 0; i < btf_vlen(t); i++, m++)
			if (!strcmp(btf__name_by_offset(btf, m->name_off), "flags")) {
				m->offset += 64; /* bits */
				moved = true;
			}
	}
	cr_assert(moved, "the extract has no task_struct.flags to move");
	raw = btf__raw_data(btf, &size);
	f = fopen(to, "w");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(raw, 1, size, f), size);
	cr_assert_eq(fclose(f), 0);
	btf__free(btf);
}

Test(core_btf, the_extract_gives_the_program_the_kernels_btf_gives)
{
	char moved[] = "/tmp/schedlab-core-btf-XXXXXX";
	struct bpf_insn *full, *extract, *other;
	const char *path;
	size_t n_full, n_extract, n_other, differ;
	int fd;

	need_bpf();
	cr_assert(kernel_has_build_id(), "/sys/kernel/notes holds no GNU build ID");
	path = probe__core_btf("oncpu");
	cr_assert_not_null(path, "the build made no usable CO-RE extract for oncpu on this "
				 "kernel (see build/probes/oncpu/oncpu.min.btf)");
	cr_assert_str_eq(path, probe__core_btf("oncpu"), "a second call made another memfd");
	cr_assert_null(probe__core_btf("alloc"), "alloc has no extract, yet got a path");

	n_full = load_xlated(NULL, &full);
	n_extract = load_xlated(path, &extract);
	cr_assert_eq(n_extract, n_full, "%zu instructions with the extract, %zu with the "
					"kernel's BTF", n_extract, n_full);
	differ = differing(full, extract, n_full);
	cr_assert_eq(differ, 0, "%zu of %zu instructions differ: a CO-RE offset from the "
				"extract is not the kernel's", differ, n_full);

	/* and the comparison sees an offset that is not the kernel's */
	fd = mkstemp(moved);
	cr_assert_geq(fd, 0);
	close(fd);
	write_moved_flags(path, moved);
	n_other = load_xlated(moved, &other);
	unlink(moved);
	cr_assert_eq(n_other, n_full);
	cr_assert_gt(differing(full, other, n_full), 0,
		     "task_struct.flags moved in the extract, yet the program is the same");
	free(other);
	free(full);
	free(extract);
}

/* Load obj, opened with types from `from`, its hash maps small; its programs'
 * instructions. */
static size_t load_obj_xlated(struct bpf_object *obj, const char *from, struct bpf_insn **insns)
{
	struct bpf_map *m;
	int ret;

	cr_assert_not_null(obj, "the object did not open (types from %s)", from);
	bpf_object__for_each_map(m, obj)
		if (bpf_map__type(m) == BPF_MAP_TYPE_HASH)
			bpf_map__set_max_entries(m, 64);
	ret = bpf_object__load(obj);
	cr_assert_eq(ret, 0, "%s did not load with types from %s: %s", bpf_object__name(obj),
		     from, strerror(-ret));
	return xlated_all(obj, insns);
}

/* Load probe's object (offcpu or sched) with types from path (NULL: the kernel's BTF),
 * every program of it included; its programs' instructions. */
static size_t load_probe_xlated(const char *probe, const char *path, struct bpf_insn **insns)
{
	LIBBPF_OPTS(bpf_object_open_opts, o, .btf_custom_path = path);
	const char *from = path ? path : "the kernel";
	size_t n;

	if (!strcmp(probe, "offcpu")) {
		struct offcpu_bpf *skel = offcpu_bpf__open_opts(&o);

		n = load_obj_xlated(skel ? skel->obj : NULL, from, insns);
		offcpu_bpf__destroy(skel);
	} else {
		struct sched_bpf *skel = sched_bpf__open_opts(&o);

		n = load_obj_xlated(skel ? skel->obj : NULL, from, insns);
		sched_bpf__destroy(skel);
	}
	return n;
}

Test(core_btf, the_tracepoint_probes_extracts_give_the_kernels_programs)
{
	static const char *const probes[] = { "offcpu", "sched" };

	need_bpf();
	cr_assert(kernel_has_build_id(), "/sys/kernel/notes holds no GNU build ID");
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		const char *path = probe__core_btf(probes[i]);
		struct bpf_insn *full, *extract;
		size_t n_full, n_extract, differ;

		cr_assert_not_null(path, "the build made no usable CO-RE extract for %s on this "
					 "kernel (see build/probes/%s/%s.min.btf)",
				   probes[i], probes[i], probes[i]);
		n_full = load_probe_xlated(probes[i], NULL, &full);
		n_extract = load_probe_xlated(probes[i], path, &extract);
		cr_assert_eq(n_extract, n_full, "%s: %zu instructions with the extract, %zu with "
						"the kernel's BTF", probes[i], n_extract, n_full);
		differ = differing(full, extract, n_full);
		cr_assert_eq(differ, 0, "%s: %zu of %zu instructions differ: a CO-RE offset from "
					"the extract is not the kernel's", probes[i], differ, n_full);
		free(full);
		free(extract);
	}
}

/* The instructions the verifier walked to accept each program of obj, loaded: the
 * most of any (bpf_prog_info's verified_insns). */
static uint32_t verified_most(struct bpf_object *obj, const char **which)
{
	struct bpf_program *prog;
	uint32_t most = 0;

	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info = prog_info(prog);

		if (info.verified_insns > most) {
			most = info.verified_insns;
			*which = bpf_program__name(prog);
		}
	}
	return most;
}

/* What the verifier walks is most of oncpu's load: the stack hash and the code-range
 * search are global functions, checked once, and a change that inlines either again
 * (18,515 instructions for the sampler, 43 ms of a load here) fails this. The bounds
 * are about 1.5 times what each program takes today, in every call-graph mode. */
Test(core_btf, the_verifier_walks_each_probe_in_a_few_thousand_instructions)
{
	static const struct {
		const char *name;
		uint32_t callgraph;
	} modes[] = { { "fp", ONCPU_CG_FP }, { "dwarf", ONCPU_CG_DWARF }, { "auto", ONCPU_CG_AUTO } };
	const char *which = "";
	struct offcpu_bpf *off;
	struct bpf_insn *insns;
	uint32_t n;

	need_bpf();
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		LIBBPF_OPTS(bpf_object_open_opts, o, .btf_custom_path = probe__core_btf("oncpu"));
		struct oncpu_bpf *skel = oncpu_bpf__open_opts(&o);

		cr_assert_not_null(skel, "oncpu's object did not open");
		skel->rodata->callgraph = modes[i].callgraph;
		bpf_map__set_max_entries(skel->maps.stacks, 64);
		bpf_map__set_max_entries(skel->maps.counts, 64);
		bpf_map__set_max_entries(skel->maps.dwarf_scratch, 1);
		cr_assert_eq(oncpu_bpf__load(skel), 0, "oncpu (%s) did not load", modes[i].name);
		n = verified_most(skel->obj, &which);
		cr_assert_gt(n, 0, "the kernel gave no verified_insns for oncpu (%s)", modes[i].name);
		cr_expect_leq(n, 8000, "oncpu (%s): %s took %u instructions to verify", modes[i].name,
			      which, n);
		oncpu_bpf__destroy(skel);
	}
	{
		LIBBPF_OPTS(bpf_object_open_opts, o, .btf_custom_path = probe__core_btf("offcpu"));

		off = offcpu_bpf__open_opts(&o);
		cr_assert_not_null(off, "offcpu's object did not open");
		off->rodata->user_stacks = 1;
		off->rodata->kernel_stacks = 1;
		off->rodata->wakers = 1;
		load_obj_xlated(off->obj, "the extract", &insns);
		free(insns);
		n = verified_most(off->obj, &which);
		cr_assert_gt(n, 0, "the kernel gave no verified_insns for offcpu");
		cr_expect_leq(n, 3500, "offcpu: %s took %u instructions to verify", which, n);
		offcpu_bpf__destroy(off);
	}
}
