/*
 * Tests of symbolization: kernel symbols (ksyms.c) from fixture kallsyms files, ELF
 * symbol tables (symtab.c) from ELF files this test writes with libelf so that every
 * rule (sizes, aliases, .dynsym fallback, PT_LOAD offsets) has a known answer,
 * /proc/PID/maps parsing (procmaps.c) from a fixture, and the user symbolizer (usyms.c)
 * on this very process: its own functions (PIE), libc, the vDSO, anonymous memory, a
 * deleted file reached through /proc/PID/map_files, and a forked child.
 *
 * Fixtures live in tests/analysis/data/, found relative to this file's path as the
 * compiler saw it, so the binary is run from the repository root.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/analysis.h"

/* ---- functions to find ------------------------------------------------------------ */

/* Distinct bodies, so that identical-code folding cannot merge them. */
volatile int an_test_sink;

void an_test_marker_alpha(void);
void an_test_marker_beta(void);
uintptr_t an_test_marker_caller(void);

__attribute__((noinline)) void an_test_marker_alpha(void)
{
	an_test_sink += 1;
	an_test_sink *= 3;
}

__attribute__((noinline)) void an_test_marker_beta(void)
{
	an_test_sink += 2;
	an_test_sink *= 5;
}

static __attribute__((noinline)) int an_test_static_marker(int x)
{
	an_test_sink += x;
	return an_test_sink * 7;
}

static __attribute__((noinline)) uintptr_t an_test_return_address(void)
{
	return (uintptr_t)__builtin_return_address(0);
}

__attribute__((noinline)) uintptr_t an_test_marker_caller(void)
{
	uintptr_t ra = an_test_return_address();

	an_test_sink += 3; /* after the call: the call cannot become a tail jump */
	return ra;
}

/* Through a volatile pointer, so the compiler keeps the static function's address. */
static int (*volatile an_test_static_ptr)(int) = an_test_static_marker;

/* ---- helpers ------------------------------------------------------------------------ */

static void data_path(char *buf, size_t len, const char *name)
{
	char file[PATH_MAX];

	snprintf(file, sizeof(file), "%s", __FILE__);
	snprintf(buf, len, "%s/data/%s", dirname(file), name);
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t len = 0;

	cr_assert_not_null(f, "open %s: %s", path, strerror(errno));
	FILE *mem = open_memstream(&buf, &len);
	cr_assert_not_null(mem);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, mem);
	fclose(f);
	fclose(mem);
	return buf;
}

struct self_map {
	uint64_t start, end, pgoff, ino;
	unsigned major, minor;
	char path[PATH_MAX];
};

/* The line of /proc/self/maps that holds addr. */
static void find_self_map(uintptr_t addr, struct self_map *out)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 128];

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		struct self_map m = {0};
		int pos = 0;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*4s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &m.start, &m.end, &m.pgoff, &m.major, &m.minor, &m.ino, &pos) < 6)
			continue;
		if (addr < m.start || addr >= m.end)
			continue;
		snprintf(m.path, sizeof(m.path), "%s", line + pos);
		m.path[strcspn(m.path, "\n")] = '\0';
		*out = m;
		fclose(f);
		return;
	}
	fclose(f);
	cr_assert_fail("no mapping holds %#" PRIxPTR, addr);
}

static struct an_usyms *self_usyms(struct an_symcache *cache)
{
	struct an_procmaps *maps = an_procmaps_read(getpid());

	cr_assert_not_null(maps, "an_procmaps_read: %s", strerror(errno));
	struct an_usyms *u = an_usyms_new(cache, maps);
	cr_assert_not_null(u, "an_usyms_new: %s", strerror(errno));
	return u;
}

static struct an_usyms *text_usyms(struct an_symcache *cache, const char *text)
{
	struct an_procmaps *maps = an_procmaps_parse(text, 0);

	cr_assert_not_null(maps, "an_procmaps_parse: %s", strerror(errno));
	struct an_usyms *u = an_usyms_new(cache, maps);
	cr_assert_not_null(u, "an_usyms_new: %s", strerror(errno));
	return u;
}

#define expect_name(u, addr, want)                                                                 \
	do {                                                                                       \
		char name_[256];                                                                   \
		an_usyms_name((u), (addr), name_, sizeof(name_));                                  \
		cr_expect_str_eq(name_, (want), "addr %#" PRIx64, (uint64_t)(addr));               \
	} while (0)

/* ---- a scratch directory for written ELF files -------------------------------------- */

static char tmpdir[64];

static void tmpdir_make(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/schedlab-symtest-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
}

static void tmpdir_remove(void)
{
	char cmd[128];

	if (!tmpdir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
}

/* ---- ELF files with known symbols --------------------------------------------------- */

struct fake_sym {
	const char *name;
	int seg;      /* which PT_LOAD the value is relative to */
	uint64_t rel; /* offset from that segment's vaddr */
	uint64_t size;
	unsigned char type, bind;
	bool undef;
};

struct fake_elf {
	uint16_t e_type;
	uint64_t vaddr[2]; /* PT_LOAD 0: file [0, 0x3000); PT_LOAD 1: file [0x3000, 0x4000) */
	const struct fake_sym *symtab, *dynsym;
	size_t nsymtab, ndynsym;
};

/* Offsets of the names in the section-name string table below. */
#define SHSTR_TEXT     1
#define SHSTR_SYMTAB   7
#define SHSTR_STRTAB   15
#define SHSTR_DYNSYM   23
#define SHSTR_DYNSTR   31
#define SHSTR_SHSTRTAB 39
static const char shstrtab[] = "\0.text\0.symtab\0.strtab\0.dynsym\0.dynstr\0.shstrtab";

static Elf_Scn *add_section(Elf *e, uint32_t name, uint32_t type, void *buf, size_t size,
			    Elf_Type dtype, size_t align)
{
	Elf_Scn *scn = elf_newscn(e);

	cr_assert_not_null(scn, "elf_newscn: %s", elf_errmsg(-1));
	Elf_Data *d = elf_newdata(scn);
	cr_assert_not_null(d);
	d->d_buf = buf;
	d->d_size = size;
	d->d_type = dtype;
	d->d_align = align;
	d->d_version = EV_CURRENT;
	Elf64_Shdr *sh = elf64_getshdr(scn);
	cr_assert_not_null(sh);
	sh->sh_name = name;
	sh->sh_type = type;
	return scn;
}

/* A symbol section and its string table; the buffers go in keep[] to be freed later. */
static void add_symbols(Elf *e, const struct fake_elf *fe, const struct fake_sym *syms, size_t n,
			bool dynamic, size_t text_index, void **keep)
{
	Elf64_Sym *tab = calloc(n + 1, sizeof(*tab));
	char *str = calloc(1, 4096);
	size_t str_len = 1;

	cr_assert(tab && str);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(syms[i].name);

		cr_assert(str_len + len + 1 <= 4096);
		memcpy(str + str_len, syms[i].name, len + 1);
		tab[i + 1] = (Elf64_Sym){
		    .st_name = (Elf64_Word)str_len,
		    .st_info = ELF64_ST_INFO(syms[i].bind, syms[i].type),
		    .st_shndx = syms[i].undef ? SHN_UNDEF : (Elf64_Section)text_index,
		    .st_value = syms[i].undef ? 0 : fe->vaddr[syms[i].seg] + syms[i].rel,
		    .st_size = syms[i].size,
		};
		str_len += len + 1;
	}
	Elf_Scn *strscn = add_section(e, dynamic ? SHSTR_DYNSTR : SHSTR_STRTAB, SHT_STRTAB, str,
				      str_len, ELF_T_BYTE, 1);
	Elf_Scn *symscn =
	    add_section(e, dynamic ? SHSTR_DYNSYM : SHSTR_SYMTAB, dynamic ? SHT_DYNSYM : SHT_SYMTAB,
			tab, (n + 1) * sizeof(*tab), ELF_T_SYM, 8);
	Elf64_Shdr *sh = elf64_getshdr(symscn);
	sh->sh_link = (Elf64_Word)elf_ndxscn(strscn);
	sh->sh_entsize = sizeof(Elf64_Sym);
	sh->sh_info = 1;
	keep[0] = tab;
	keep[1] = str;
}

static void write_fake_elf(const char *path, const struct fake_elf *fe)
{
	static unsigned char text[0x100];
	void *keep[4] = {0};

	cr_assert_neq(elf_version(EV_CURRENT), EV_NONE);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
	cr_assert_not_null(e, "elf_begin: %s", elf_errmsg(-1));

	Elf64_Ehdr *eh = elf64_newehdr(e);
	cr_assert_not_null(eh);
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = fe->e_type;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	cr_assert_not_null(elf64_newphdr(e, 2));

	Elf_Scn *textscn =
	    add_section(e, SHSTR_TEXT, SHT_PROGBITS, text, sizeof(text), ELF_T_BYTE, 16);
	size_t text_index = elf_ndxscn(textscn);
	if (fe->symtab)
		add_symbols(e, fe, fe->symtab, fe->nsymtab, false, text_index, keep);
	if (fe->dynsym)
		add_symbols(e, fe, fe->dynsym, fe->ndynsym, true, text_index, keep + 2);
	Elf_Scn *shstr = add_section(e, SHSTR_SHSTRTAB, SHT_STRTAB, (void *)shstrtab,
				     sizeof(shstrtab), ELF_T_BYTE, 1);
	eh->e_shstrndx = (Elf64_Half)elf_ndxscn(shstr);

	cr_assert_geq(elf_update(e, ELF_C_NULL), 0, "elf_update: %s", elf_errmsg(-1));
	Elf64_Phdr *ph = elf64_getphdr(e);
	cr_assert_not_null(ph);
	ph[0] = (Elf64_Phdr){.p_type = PT_LOAD,
			     .p_flags = PF_R | PF_X,
			     .p_offset = 0,
			     .p_vaddr = fe->vaddr[0],
			     .p_paddr = fe->vaddr[0],
			     .p_filesz = 0x3000,
			     .p_memsz = 0x3000,
			     .p_align = 0x1000};
	ph[1] = (Elf64_Phdr){.p_type = PT_LOAD,
			     .p_flags = PF_R | PF_W,
			     .p_offset = 0x3000,
			     .p_vaddr = fe->vaddr[1],
			     .p_paddr = fe->vaddr[1],
			     .p_filesz = 0x1000,
			     .p_memsz = 0x2000,
			     .p_align = 0x1000};
	elf_flagphdr(e, ELF_C_SET, ELF_F_DIRTY);
	cr_assert_geq(elf_update(e, ELF_C_WRITE), 0, "elf_update: %s", elf_errmsg(-1));
	elf_end(e);
	close(fd);
	for (size_t i = 0; i < 4; i++)
		free(keep[i]);
}

/* Every rule in one table. Aliases at rel 0x200 in both orders across the two files. */
static const struct fake_sym rule_syms[] = {
    {"sized_fn", 0, 0x100, 0x20, STT_FUNC, STB_GLOBAL, false},
    {"local_alias", 0, 0x200, 0x40, STT_FUNC, STB_LOCAL, false},
    {"weak_alias", 0, 0x200, 0x40, STT_FUNC, STB_WEAK, false},
    {"_global_under", 0, 0x200, 0x40, STT_FUNC, STB_GLOBAL, false},
    {"global_name", 0, 0x200, 0x40, STT_FUNC, STB_GLOBAL, false},
    {"nosize_fn", 0, 0x300, 0, STT_FUNC, STB_GLOBAL, false},
    {"ifunc_sel", 0, 0x400, 0x10, STT_GNU_IFUNC, STB_GLOBAL, false},
    {"data_obj", 0, 0x500, 0x100, STT_OBJECT, STB_GLOBAL, false},
    {"zeta_g", 0, 0x600, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"alpha_g", 0, 0x600, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"undef_fn", 0, 0, 0, STT_FUNC, STB_GLOBAL, true},
    {"tail_nosize", 0, 0x2f00, 0, STT_FUNC, STB_LOCAL, false},
    {"seg2_fn", 1, 0, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"versioned@@VERS_1.0", 0, 0x800, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"__GI___strtold", 0, 0x900, 0x10, STT_FUNC, STB_LOCAL, false},
    {"____strtold", 0, 0x900, 0x10, STT_FUNC, STB_LOCAL, false},
};

static const struct fake_sym dyn_syms[] = {
    {"dyn_name", 0, 0x100, 0x20, STT_FUNC, STB_GLOBAL, false},
    {"dyn_other", 0, 0x700, 0x8, STT_FUNC, STB_WEAK, false},
};

static void expect_lookup(const struct an_symtab *st, uint64_t vaddr, const char *want,
			  uint64_t want_off)
{
	uint64_t off = UINT64_MAX;
	const char *name = an_symtab_lookup(st, vaddr, &off);

	if (!want) {
		cr_expect_null(name, "vaddr %#" PRIx64 ": got %s", vaddr, name);
		return;
	}
	cr_assert_not_null(name, "vaddr %#" PRIx64 ": no symbol, want %s", vaddr, want);
	cr_expect_str_eq(name, want, "vaddr %#" PRIx64, vaddr);
	cr_expect_eq(off, want_off, "vaddr %#" PRIx64 ": offset %#" PRIx64, vaddr, off);
}

static void check_rules(const struct an_symtab *st, uint64_t b0, uint64_t b1)
{
	expect_lookup(st, b0, NULL, 0); /* below every symbol; undef_fn is not one */
	expect_lookup(st, b0 + 0x100, "sized_fn", 0);
	expect_lookup(st, b0 + 0x11f, "sized_fn", 0x1f);
	expect_lookup(st, b0 + 0x120, NULL, 0); /* past its size */
	expect_lookup(st, b0 + 0x23f, "global_name", 0x3f);
	expect_lookup(st, b0 + 0x240, NULL, 0);
	expect_lookup(st, b0 + 0x300, "nosize_fn", 0);
	expect_lookup(st, b0 + 0x3ff, "nosize_fn", 0xff); /* up to the next symbol */
	expect_lookup(st, b0 + 0x404, "ifunc_sel", 4);
	expect_lookup(st, b0 + 0x500, NULL, 0); /* objects are not functions */
	expect_lookup(st, b0 + 0x608, "alpha_g", 8);
	expect_lookup(st, b0 + 0x801, "versioned", 1);	 /* the version suffix is dropped */
	expect_lookup(st, b0 + 0x900, "____strtold", 0); /* not glibc's __GI_ alias */
	expect_lookup(st, b0 + 0x2fff, "tail_nosize", 0xff);
	expect_lookup(st, b0 + 0x3000, NULL, 0); /* a zero-size symbol ends with its segment */
	expect_lookup(st, b1 + 0xf, "seg2_fn", 0xf);
	expect_lookup(st, b1 + 0x10, NULL, 0);

	uint64_t vaddr = 0;
	cr_expect_eq(an_symtab_offset_to_vaddr(st, 0x150, &vaddr), 0);
	cr_expect_eq(vaddr, b0 + 0x150);
	cr_expect_eq(an_symtab_offset_to_vaddr(st, 0x3008, &vaddr), 0);
	cr_expect_eq(vaddr, b1 + 0x8);
	cr_expect_eq(an_symtab_offset_to_vaddr(st, 0x5000, &vaddr), -ENOENT);
}

TestSuite(symtab, .init = tmpdir_make, .fini = tmpdir_remove);

Test(symtab, sizes_aliases_and_types)
{
	struct fake_sym reversed[sizeof(rule_syms) / sizeof(rule_syms[0])];
	const size_t n = sizeof(rule_syms) / sizeof(rule_syms[0]);
	char path[128];

	for (size_t i = 0; i < n; i++)
		reversed[i] = rule_syms[n - 1 - i];
	/* .dynsym present too: .symtab must win when it has functions. */
	struct fake_elf fe = {.e_type = ET_DYN,
			      .vaddr = {0x10000, 0x20000},
			      .symtab = rule_syms,
			      .nsymtab = n,
			      .dynsym = dyn_syms,
			      .ndynsym = 2};
	for (int order = 0; order < 2; order++) {
		if (order)
			fe.symtab = reversed;
		snprintf(path, sizeof(path), "%s/rules%d.so", tmpdir, order);
		write_fake_elf(path, &fe);
		struct an_symtab *st = an_symtab_load(path);
		cr_assert_not_null(st, "load %s: %s", path, strerror(errno));
		check_rules(st, 0x10000, 0x20000);
		expect_lookup(st, 0x10704, NULL, 0); /* dyn_other: .dynsym was not read */
		an_symtab_free(st);
	}
}

Test(symtab, dynsym_when_no_symtab)
{
	struct fake_elf fe = {
	    .e_type = ET_DYN, .vaddr = {0, 0x5000}, .dynsym = dyn_syms, .ndynsym = 2};
	char path[128];

	snprintf(path, sizeof(path), "%s/stripped.so", tmpdir);
	write_fake_elf(path, &fe);
	struct an_symtab *st = an_symtab_load(path);
	cr_assert_not_null(st, "%s", strerror(errno));
	expect_lookup(st, 0x110, "dyn_name", 0x10);
	expect_lookup(st, 0x707, "dyn_other", 7);
	expect_lookup(st, 0x708, NULL, 0);
	an_symtab_free(st);
}

Test(symtab, no_symbols_still_maps_offsets)
{
	struct fake_elf fe = {.e_type = ET_EXEC, .vaddr = {0x400000, 0x603000}};
	char path[128];
	uint64_t vaddr = 0;

	snprintf(path, sizeof(path), "%s/bare", tmpdir);
	write_fake_elf(path, &fe);
	struct an_symtab *st = an_symtab_load(path);
	cr_assert_not_null(st, "%s", strerror(errno));
	expect_lookup(st, 0x400100, NULL, 0);
	cr_expect_eq(an_symtab_offset_to_vaddr(st, 0x3010, &vaddr), 0);
	cr_expect_eq(vaddr, 0x603010);
	an_symtab_free(st);
}

Test(symtab, load_failures_set_errno)
{
	char path[PATH_MAX];

	errno = 0;
	cr_expect_null(an_symtab_load("/nonexistent/schedlab/libnothing.so"));
	cr_expect_eq(errno, ENOENT);

	data_path(path, sizeof(path), "kallsyms");
	errno = 0;
	cr_expect_null(an_symtab_load(path)); /* a text file */
	cr_expect_eq(errno, ENOEXEC, "errno %d", errno);

	snprintf(path, sizeof(path), "%s/empty", tmpdir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	errno = 0;
	cr_expect_null(an_symtab_load(path));
	cr_expect_eq(errno, ENOEXEC, "errno %d", errno);

	errno = 0;
	cr_expect_null(an_symtab_load("/"));
	cr_expect_neq(errno, 0);

	errno = 0;
	cr_expect_null(an_symtab_load(NULL));
	cr_expect_eq(errno, EINVAL);

	an_symtab_free(NULL);
}

static int main_object_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	/* The first object is the executable itself. */
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;
}

Test(symtab, own_executable)
{
	uintptr_t bias = 0;
	uint64_t off;

	dl_iterate_phdr(main_object_bias, &bias);
	struct an_symtab *st = an_symtab_load("/proc/self/exe");
	cr_assert_not_null(st, "%s", strerror(errno));

	uint64_t alpha = (uintptr_t)&an_test_marker_alpha - bias;
	expect_lookup(st, alpha, "an_test_marker_alpha", 0);
	expect_lookup(st, alpha + 5, "an_test_marker_alpha", 5);
	expect_lookup(st, (uintptr_t)an_test_static_ptr - bias, "an_test_static_marker", 0);

	/* The file offset of the function maps back to its vaddr. */
	struct self_map m;
	find_self_map((uintptr_t)&an_test_marker_alpha, &m);
	uint64_t vaddr = 0;
	off = (uintptr_t)&an_test_marker_alpha - m.start + m.pgoff;
	cr_expect_eq(an_symtab_offset_to_vaddr(st, off, &vaddr), 0);
	cr_expect_eq(vaddr, alpha);
	an_symtab_free(st);
}

/* ---- kernel symbols ------------------------------------------------------------------ */

static void expect_ksym(const struct an_ksyms *k, uint64_t addr, const char *want,
			uint64_t want_off)
{
	uint64_t off = UINT64_MAX;
	const char *name = an_ksyms_lookup(k, addr, &off);

	if (!want) {
		cr_expect_null(name, "addr %#" PRIx64 ": got %s", addr, name);
		return;
	}
	cr_assert_not_null(name, "addr %#" PRIx64 ": no symbol, want %s", addr, want);
	cr_expect_str_eq(name, want, "addr %#" PRIx64, addr);
	cr_expect_eq(off, want_off, "addr %#" PRIx64 ": offset %#" PRIx64, addr, off);
}

Test(ksyms, fixture)
{
	char path[PATH_MAX];

	data_path(path, sizeof(path), "kallsyms");
	struct an_ksyms *k = an_ksyms_load(path);
	cr_assert_not_null(k, "%s: %s", path, strerror(errno));

	expect_ksym(k, 0xffffffff80ffffffULL, NULL, 0);
	expect_ksym(k, 0xffffffff81000000ULL, "_stext", 0);
	expect_ksym(k, 0xffffffff810000ffULL, "_stext", 0xff);
	expect_ksym(k, 0xffffffff81000100ULL, "do_one_initcall", 0);
	expect_ksym(k, 0xffffffff81001010ULL, "global_alias", 0x10);
	expect_ksym(k, 0xffffffff81002100ULL, "global_alias", 0x1100); /* data is skipped */
	expect_ksym(k, 0xffffffff81003008ULL, "weak_fn", 8);
	expect_ksym(k, 0xffffffff81004000ULL, "Weak_up", 0);
	expect_ksym(k, 0xffffffffc0a00010ULL, "kvm_vcpu_ioctl", 0x10);
	expect_ksym(k, 0xffffffffc0a00104ULL, "kvm_init", 4);
	expect_ksym(k, 0xffffffffffffffffULL, "bpf_prog_6deef7357e7b4530_sd_fw_egress",
		    0xffffffffffffffffULL - 0xffffffffc0b00000ULL);
	cr_expect_str_eq(an_ksyms_lookup(k, 0xffffffff81000001ULL, NULL), "_stext");
	an_ksyms_free(k);
	an_ksyms_free(NULL);
}

Test(ksyms, kptr_restrict_zeros)
{
	char path[PATH_MAX];

	data_path(path, sizeof(path), "kallsyms_restricted");
	struct an_ksyms *k = an_ksyms_load(path);
	cr_assert_not_null(k, "%s", strerror(errno));
	cr_expect_null(an_ksyms_lookup(k, 0, NULL));
	cr_expect_null(an_ksyms_lookup(k, 0xffffffff81000000ULL, NULL));
	cr_expect_null(an_ksyms_lookup(k, UINT64_MAX, NULL));
	an_ksyms_free(k);
}

Test(ksyms, missing_file)
{
	errno = 0;
	cr_expect_null(an_ksyms_load("/nonexistent/kallsyms"));
	cr_expect_eq(errno, ENOENT);
}

/* The running kernel: the symbol at a T symbol's address is one of that address's
 * names, and one byte on is the same symbol at offset 1. */
Test(ksyms, proc_kallsyms)
{
	struct an_ksyms *k = an_ksyms_load(NULL);
	cr_assert_not_null(k, "/proc/kallsyms: %s", strerror(errno));

	FILE *f = fopen("/proc/kallsyms", "re");
	cr_assert_not_null(f);
	char line[512], name[256], type;
	uint64_t addr, want = 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) == 3 && type == 'T' &&
		    strcmp(name, "schedule") == 0) {
			want = addr;
			break;
		}
	}
	cr_assert(want != 0 || feof(f), "schedule not found");
	if (want == 0) {
		/* Addresses hidden (kptr_restrict): nothing can be named. */
		cr_expect_null(an_ksyms_lookup(k, 0xffffffff81000000ULL, NULL));
		fclose(f);
		an_ksyms_free(k);
		return;
	}
	uint64_t off = 1;
	const char *got = an_ksyms_lookup(k, want, &off);
	cr_assert_not_null(got);
	cr_expect_eq(off, 0);
	const char *again = an_ksyms_lookup(k, want + 1, &off);
	cr_expect_eq(again, got);
	cr_expect_eq(off, 1);

	/* got must be one of the text names at that address. */
	bool found = false;
	rewind(f);
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) == 3 && addr == want &&
		    strchr("tTwW", type))
			found = strcmp(name, got) == 0;
	}
	cr_expect(found, "%s is not a name of %#" PRIx64, got, want);
	fclose(f);
	an_ksyms_free(k);
}

/* ---- /proc/PID/maps ------------------------------------------------------------------ */

Test(procmaps, fixture_lines)
{
	char path[PATH_MAX];

	data_path(path, sizeof(path), "maps");
	char *text = read_text(path);
	struct an_usyms *u = text_usyms(NULL, text);

	/* Files that cannot be read are named by file offset. */
	expect_name(u, 0x555555556010ULL, "app+0x2010");
	expect_name(u, 0x555555557fffULL, "app+0x3fff");
	expect_name(u, 0x555555554010ULL, "[unknown]+0x555555554010"); /* r--p: not code */
	expect_name(u, 0x555555558000ULL, "[unknown]+0x555555558000"); /* end is exclusive */
	expect_name(u, 0x7f0000000100ULL, "[unknown]+0x7f0000000100"); /* anonymous */
	expect_name(u, 0x7f0000100020ULL, "libgone.so.1+0x3020");      /* (deleted) */
	expect_name(u, 0x7f0000200000ULL, "[unknown]+0x7f0000200000"); /* [heap] rw */
	expect_name(u, 0x7f0000300004ULL, "libsp ace.so+0x4");	       /* spaces */
	expect_name(u, 0x7ffd00000000ULL, "[vdso]+0x0"); /* the ELF header: no function */
	expect_name(u, 0xffffffffff600400ULL, "[vsyscall]+0x400");
	expect_name(u, 0x7f0000400010ULL, "libtail.so+0x10"); /* last line, no newline */
	expect_name(u, 0x10, "[unknown]+0x10");
	an_usyms_free(u);
	free(text);
}

Test(procmaps, malformed_text)
{
	static const char *const bad[] = {
	    "zzzz-1000 r-xp 00000000 00:00 0\n",
	    "1000-2000 r-xp 00000000 00:00\n",
	    "2000-1000 r-xp 00000000 00:00 0\n",
	    "1000-2000 r-xp 00000000 0000 0 /x\n",
	    "1000-2000\n",
	    "1000-3000 r-xp 00000000 00:00 0 /a\n2000-4000 r-xp 00000000 00:00 0 /b\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		cr_expect_null(an_procmaps_parse(bad[i], 0), "accepted: %s", bad[i]);
		cr_expect_eq(errno, EINVAL, "%s", bad[i]);
	}
	struct an_procmaps *m = an_procmaps_parse("", 0);
	cr_expect_not_null(m);
	an_procmaps_free(m);
	an_procmaps_free(NULL);
}

Test(procmaps, read_errors)
{
	errno = 0;
	cr_expect_null(an_procmaps_read(-1));
	cr_expect_eq(errno, EINVAL);
	errno = 0;
	cr_expect_null(an_procmaps_read(0x7ffffff0)); /* above any pid_max */
	cr_expect_eq(errno, ENOENT);
}

/* ---- the user symbolizer on this process --------------------------------------------- */

Test(usyms, own_functions)
{
	struct an_symcache *cache = an_symcache_new();
	cr_assert_not_null(cache);
	struct an_usyms *u = self_usyms(cache);
	uintptr_t alpha = (uintptr_t)&an_test_marker_alpha;

	expect_name(u, alpha, "an_test_marker_alpha");
	expect_name(u, alpha + 5, "an_test_marker_alpha");
	expect_name(u, (uintptr_t)&an_test_marker_beta, "an_test_marker_beta");
	expect_name(u, (uintptr_t)an_test_static_ptr, "an_test_static_marker");
	/* A return address minus one names the caller. */
	expect_name(u, an_test_marker_caller() - 1, "an_test_marker_caller");
	an_usyms_free(u);
	an_symcache_free(cache);
}

Test(usyms, libc_function)
{
	struct an_usyms *u = self_usyms(NULL);
	char name[64];

	/* getpid is a weak alias of the global __getpid in glibc; the global wins. */
	an_usyms_name(u, (uintptr_t)&getpid, name, sizeof(name));
	cr_expect(strcmp(name, "__getpid") == 0 || strcmp(name, "getpid") == 0, "got %s", name);
	an_usyms_name(u, (uintptr_t)&getpid + 1, name, sizeof(name));
	cr_expect(strcmp(name, "__getpid") == 0 || strcmp(name, "getpid") == 0, "got %s", name);
	an_usyms_free(u);
}

Test(usyms, anonymous_and_unmapped)
{
	long page = sysconf(_SC_PAGESIZE);
	char *rw = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *rx = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char want[64];

	cr_assert(rw != MAP_FAILED && rx != MAP_FAILED);
	struct an_usyms *u = self_usyms(NULL);
	snprintf(want, sizeof(want), "[unknown]+0x%" PRIxPTR, (uintptr_t)rw + 16);
	expect_name(u, (uintptr_t)rw + 16, want);
	snprintf(want, sizeof(want), "[unknown]+0x%" PRIxPTR, (uintptr_t)rx + 16);
	expect_name(u, (uintptr_t)rx + 16, want);
	expect_name(u, 0x10, "[unknown]+0x10");
	an_usyms_free(u);
	munmap(rw, page);
	munmap(rx, page);
}

Test(usyms, vdso)
{
	void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
	cr_assert_not_null(h, "no vDSO: %s", dlerror());
	uintptr_t fn = (uintptr_t)dlsym(h, "__vdso_clock_gettime");
	cr_assert(fn != 0, "no __vdso_clock_gettime");
	char name[128];

	struct an_usyms *u = self_usyms(NULL);
	an_usyms_name(u, fn, name, sizeof(name));
	cr_expect(strstr(name, "clock_gettime") != NULL, "got %s", name);
	an_usyms_free(u);

	/* Another process's vDSO at another address is the same image. */
	struct self_map m;
	find_self_map(fn, &m);
	cr_assert_str_eq(m.path, "[vdso]");
	char text[256], want[128];
	uint64_t base = 0x7ffd00000000ULL;
	snprintf(text, sizeof(text), "%" PRIx64 "-%" PRIx64 " r-xp 00000000 00:00 0 [vdso]\n", base,
		 base + (m.end - m.start));
	snprintf(want, sizeof(want), "%s", name);
	u = text_usyms(NULL, text);
	expect_name(u, base + (fn - m.start), want);
	an_usyms_free(u);
	dlclose(h);
}

/* The executable text mapped at another base, from text with no pid: the name depends
 * only on the file offset, so PIE relocation is undone through PT_LOAD. Then the cache,
 * keyed by device and inode, answers for a path that no longer exists. */
Test(usyms, relocated_text_and_shared_cache)
{
	uintptr_t alpha = (uintptr_t)&an_test_marker_alpha;
	struct self_map m;
	char text[PATH_MAX + 128];
	uint64_t base = 0x100000000000ULL;

	find_self_map(alpha, &m);
	struct an_symcache *cache = an_symcache_new();
	cr_assert_not_null(cache);
	snprintf(text, sizeof(text),
		 "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " %02x:%02x %" PRIu64 " %s\n", base,
		 base + (m.end - m.start), m.pgoff, m.major, m.minor, m.ino, m.path);
	struct an_usyms *u = text_usyms(cache, text);
	expect_name(u, base + (alpha - m.start), "an_test_marker_alpha");
	an_usyms_free(u);

	snprintf(text, sizeof(text),
		 "%" PRIx64 "-%" PRIx64 " r-xp %08" PRIx64 " %02x:%02x %" PRIu64
		 " /nonexistent/renamed\n",
		 base, base + (m.end - m.start), m.pgoff, m.major, m.minor, m.ino);
	u = text_usyms(cache, text);
	expect_name(u, base + (alpha - m.start), "an_test_marker_alpha");
	an_usyms_free(u);

	/* Without the cache, that path cannot be read: module and file offset. */
	char want[64];
	snprintf(want, sizeof(want), "renamed+0x%" PRIx64, alpha - m.start + m.pgoff);
	u = text_usyms(NULL, text);
	expect_name(u, base + (alpha - m.start), want);
	an_usyms_free(u);
	an_symcache_free(cache);
}

/* A deleted file (a memfd, which maps shows as "/memfd:NAME (deleted)") holding a copy of
 * this executable: readable only through /proc/PID/map_files while we live. */
Test(usyms, deleted_file_through_map_files)
{
	uintptr_t alpha = (uintptr_t)&an_test_marker_alpha;
	struct self_map m;
	char want[128];

	find_self_map(alpha, &m);
	int fd = memfd_create("an_test_copy", MFD_CLOEXEC);
	cr_assert_geq(fd, 0, "memfd_create: %s", strerror(errno));
	int exe = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(exe, 0);
	char buf[65536];
	ssize_t n;
	while ((n = read(exe, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(fd, buf, (size_t)n), n);
	close(exe);

	size_t len = m.end - m.start;
	char *copy = mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, (off_t)m.pgoff);
	cr_assert(copy != MAP_FAILED, "mmap: %s", strerror(errno));
	close(fd);
	uintptr_t addr = (uintptr_t)copy + (alpha - m.start);

	struct self_map cm;
	find_self_map(addr, &cm);
	cr_expect(strstr(cm.path, " (deleted)") != NULL, "maps shows %s", cm.path);

	struct an_usyms *u = self_usyms(NULL);
	expect_name(u, addr, "an_test_marker_alpha");
	an_usyms_free(u);

	/* The same snapshot with no pid: no way in, so module and file offset. */
	char *text = read_text("/proc/self/maps");
	u = text_usyms(NULL, text);
	snprintf(want, sizeof(want), "memfd:an_test_copy+0x%" PRIx64, alpha - m.start + m.pgoff);
	expect_name(u, addr, want);
	an_usyms_free(u);
	free(text);
	munmap(copy, len);
}

/* Another process: a forked child has our layout. The snapshot outlives it. */
Test(usyms, other_process_snapshot)
{
	int ready[2];

	cr_assert_eq(pipe(ready), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(ready[0]);
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(ready[1]);
	char c;
	cr_assert_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);

	struct an_procmaps *maps = an_procmaps_read(pid);
	int err = errno;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	cr_assert_not_null(maps, "%s", strerror(err));

	struct an_usyms *u = an_usyms_new(NULL, maps);
	cr_assert_not_null(u);
	expect_name(u, (uintptr_t)&an_test_marker_beta, "an_test_marker_beta");
	an_usyms_free(u);
}

Test(usyms, truncates_safely)
{
	struct an_usyms *u = self_usyms(NULL);
	uintptr_t alpha = (uintptr_t)&an_test_marker_alpha;
	char buf[8];

	memset(buf, 'X', sizeof(buf));
	an_usyms_name(u, alpha, buf, 5);
	cr_expect_str_eq(buf, "an_t");
	cr_expect_eq(buf[5], 'X');

	an_usyms_name(u, alpha, buf, 1);
	cr_expect_str_eq(buf, "");

	memset(buf, 'X', sizeof(buf));
	an_usyms_name(u, alpha, buf, 0);
	cr_expect_eq(buf[0], 'X');

	an_usyms_name(u, 0x123456789aULL, buf, sizeof(buf));
	cr_expect_str_eq(buf, "[unknow");
	an_usyms_name(NULL, 0x10, buf, sizeof(buf));
	cr_expect_str_eq(buf, "[unknow");
	an_usyms_free(u);
	an_usyms_free(NULL);
	an_symcache_free(NULL);
}

Test(usyms, new_rejects_missing_maps)
{
	errno = 0;
	cr_expect_null(an_usyms_new(NULL, NULL));
	cr_expect_eq(errno, EINVAL);
}

/* Files written with known symbols, mapped by a synthetic maps text: a shared library
 * laid out at vaddr 0, and a fixed-address (non-PIE) executable. */
TestSuite(usyms_fake, .init = tmpdir_make, .fini = tmpdir_remove);

static void fake_maps_text_ino(char *text, size_t len, const char *path, uint64_t start0,
			       uint64_t start1, dev_t dev, ino_t ino)
{
	snprintf(text, len,
		 "%" PRIx64 "-%" PRIx64 " r-xp 00000000 %02x:%02x %" PRIu64 " %s\n"
		 "%" PRIx64 "-%" PRIx64 " r-xp 00003000 %02x:%02x %" PRIu64 " %s\n",
		 start0, start0 + 0x3000, major(dev), minor(dev), (uint64_t)ino, path, start1,
		 start1 + 0x1000, major(dev), minor(dev), (uint64_t)ino, path);
}

static void fake_maps_text(char *text, size_t len, const char *path, uint64_t start0,
			   uint64_t start1)
{
	struct stat sb;

	cr_assert_eq(stat(path, &sb), 0);
	fake_maps_text_ino(text, len, path, start0, start1, sb.st_dev, sb.st_ino);
}

Test(usyms_fake, replaced_file_is_not_read)
{
	struct fake_elf fe = {.e_type = ET_DYN,
			      .vaddr = {0, 0x3000},
			      .symtab = rule_syms,
			      .nsymtab = sizeof(rule_syms) / sizeof(rule_syms[0])};
	char path[128], text[512];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/libswapped.so", tmpdir);
	write_fake_elf(path, &fe);
	cr_assert_eq(stat(path, &sb), 0);
	/* The mapped inode is not the one at the path now: its symbols would lie. */
	fake_maps_text_ino(text, sizeof(text), path, 0x1000000, 0x1003000, sb.st_dev,
			   sb.st_ino + 1);
	struct an_usyms *u = text_usyms(NULL, text);
	expect_name(u, 0x1000100, "libswapped.so+0x100");
	an_usyms_free(u);
}

Test(usyms_fake, shared_library)
{
	struct fake_elf fe = {.e_type = ET_DYN,
			      .vaddr = {0, 0x3000},
			      .symtab = rule_syms,
			      .nsymtab = sizeof(rule_syms) / sizeof(rule_syms[0])};
	char path[128], text[512];
	uint64_t b = 0x7f1200000000ULL;

	snprintf(path, sizeof(path), "%s/libfake.so.1", tmpdir);
	write_fake_elf(path, &fe);
	fake_maps_text(text, sizeof(text), path, b, b + 0x3000);
	struct an_usyms *u = text_usyms(NULL, text);
	expect_name(u, b + 0x100, "sized_fn");
	expect_name(u, b + 0x120, "libfake.so.1+0x120"); /* no symbol: module + vaddr */
	expect_name(u, b + 0x210, "global_name");
	expect_name(u, b + 0x3004, "seg2_fn");
	an_usyms_free(u);
}

Test(usyms_fake, fixed_address_executable)
{
	struct fake_elf fe = {.e_type = ET_EXEC,
			      .vaddr = {0x400000, 0x603000},
			      .symtab = rule_syms,
			      .nsymtab = sizeof(rule_syms) / sizeof(rule_syms[0])};
	char path[128], text[512];

	snprintf(path, sizeof(path), "%s/app", tmpdir);
	write_fake_elf(path, &fe);
	fake_maps_text(text, sizeof(text), path, 0x400000, 0x603000);
	struct an_usyms *u = text_usyms(NULL, text);
	expect_name(u, 0x400100, "sized_fn");
	expect_name(u, 0x400120, "app+0x400120");
	expect_name(u, 0x400608, "alpha_g");
	expect_name(u, 0x603008, "seg2_fn");
	an_usyms_free(u);
}
