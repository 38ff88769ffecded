/*
 * Tests of symbolization: kernel symbols (ksyms.c) from fixture kallsyms files, ELF
 * symbol tables (symtab.c) from ELF files this test writes with libelf so that every
 * rule (sizes, aliases, .dynsym fallback, PT_LOAD offsets) has a known answer,
 * /proc/PID/maps parsing (procmaps.c) from a fixture, and the user symbolizer (usyms.c)
 * on this very process: its own functions (PIE), libc, the vDSO, anonymous memory, a
 * deleted file reached through /proc/PID/map_files, and a forked child. Then what the
 * frame-pointer walk's checks are built from: the frame-pointer share of a file (from
 * written prologues, this binary and glibc), finding a function by name, the module of
 * an address, and the code ranges of a process, exactly for written files and in
 * outline for this one.
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
#include <math.h>
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
	const unsigned char *code; /* .text's FAKE_TEXT_SIZE bytes; NULL: zeros */
};

#define FAKE_TEXT_SIZE 0x100
/* A fake_sym.seg that places the symbol at .text's first byte plus rel, wherever the
 * layout put .text (inside PT_LOAD 0), so that its bytes are fake_elf.code's. */
#define SEG_TEXT 2

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
		    .st_value = syms[i].undef ? 0 : fe->vaddr[syms[i].seg & 1] + syms[i].rel,
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
	static unsigned char zeros[FAKE_TEXT_SIZE];
	unsigned char *text = fe->code ? (unsigned char *)fe->code : zeros;
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
	    add_section(e, SHSTR_TEXT, SHT_PROGBITS, text, FAKE_TEXT_SIZE, ELF_T_BYTE, 16);
	size_t text_index = elf_ndxscn(textscn);
	if (fe->symtab)
		add_symbols(e, fe, fe->symtab, fe->nsymtab, false, text_index, keep);
	if (fe->dynsym)
		add_symbols(e, fe, fe->dynsym, fe->ndynsym, true, text_index, keep + 2);
	Elf_Scn *shstr = add_section(e, SHSTR_SHSTRTAB, SHT_STRTAB, (void *)shstrtab,
				     sizeof(shstrtab), ELF_T_BYTE, 1);
	eh->e_shstrndx = (Elf64_Half)elf_ndxscn(shstr);

	cr_assert_geq(elf_update(e, ELF_C_NULL), 0, "elf_update: %s", elf_errmsg(-1));
	/* Now that .text has its offset, move the SEG_TEXT symbols onto it. */
	uint64_t text_off = elf64_getshdr(textscn)->sh_offset;
	const struct fake_sym *tabs[2] = { fe->symtab, fe->dynsym };
	size_t ns[2] = { fe->nsymtab, fe->ndynsym };
	for (int t = 0; t < 2; t++) {
		Elf64_Sym *tab = keep[2 * t];

		for (size_t i = 0; tabs[t] && i < ns[t]; i++)
			if (tabs[t][i].seg == SEG_TEXT && !tabs[t][i].undef)
				tab[i + 1].st_value += text_off;
	}
	cr_assert_leq(text_off + FAKE_TEXT_SIZE, 0x3000, "PT_LOAD 0 must hold .text");
	elf_flagelf(e, ELF_C_SET, ELF_F_DIRTY);
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

/* The PLT stubs of path named as objdump names them ("free@plt", at the stub's first
 * byte and within it), objdump's disassembly being the independent view; libc's too,
 * whose stubs jump to its own functions' GOT slots. */
static void expect_plt_as_objdump(const char *path, unsigned want_at_least)
{
	char cmd[1024], line[512];
	unsigned named = 0;
	FILE *p;

	struct an_symtab *st = an_symtab_load(path);
	cr_assert_not_null(st, "%s: %s", path, strerror(errno));
	snprintf(cmd, sizeof(cmd),
		 "objdump -d -j .plt -j .plt.sec -j .plt.got '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	cr_assert_not_null(p, "objdump: %s", strerror(errno));
	while (fgets(line, sizeof(line), p)) {
		unsigned long long addr;
		char want[256];
		uint64_t off;

		/* a function's stub; not the header ("free@plt-0x10") nor an ifunc's stub
		 * that libc binds to an address ("*ABS*+0x9f550@plt"), left unnamed */
		if (sscanf(line, "%llx <%255[^>]>:", &addr, want) != 2 ||
		    strspn(want, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") !=
			    strlen(want) - 4 ||
		    strcmp(want + strlen(want) - 4, "@plt"))
			continue;
		const char *got = an_symtab_lookup(st, addr, &off);
		cr_expect(got && !strcmp(got, want) && off == 0, "%s: %#llx is %s, objdump: %s",
			  path, addr, got ? got : "(none)", want);
		got = an_symtab_lookup(st, addr + 7, &off);
		cr_expect(got && !strcmp(got, want) && off == 7, "%s: %#llx + 7 is %s, objdump: %s",
			  path, addr, got ? got : "(none)", want);
		named++;
	}
	cr_expect_eq(pclose(p), 0, "objdump -d %s failed", path);
	cr_expect_geq(named, want_at_least, "%s: objdump named %u stubs", path, named);
	an_symtab_free(st);
}

Test(symtab, plt_stubs_are_named_as_objdump_names_them)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	cr_assert_gt(n, 0);
	self[n] = '\0'; /* objdump's own /proc/self/exe is objdump */
	expect_plt_as_objdump(self, 20);
	expect_plt_as_objdump("/lib/x86_64-linux-gnu/libc.so.6", 5);
}

/* Two calls inlined one in the other, in a function that is called: the address of an
 * instruction inside the inner copy, read there. */
static inline __attribute__((always_inline)) uintptr_t an_test_inl_inner(void)
{
	uintptr_t pc;

	__asm__ volatile("1: lea 1b(%%rip), %0" : "=r"(pc)); /* this instruction's own */
	return pc;
}

static inline __attribute__((always_inline)) uintptr_t an_test_inl_outer(void)
{
	return an_test_inl_inner() + 0 * (uintptr_t)&an_test_marker_alpha;
}

__attribute__((noinline)) uintptr_t an_test_inl_host(void)
{
	uintptr_t pc = an_test_inl_outer();

	__asm__ volatile("" ::: "memory");
	return pc;
}

/* The inlined calls at an address, from this binary's DWARF: the inner copy, then the
 * outer one it sits in, then the function the symbol table names; as addr2line -i,
 * reading the same DWARF with binutils' own reader, names them. */
Test(usyms, inlined_calls_are_named_innermost_first_as_addr2line_names_them)
{
	struct an_symcache *cache = an_symcache_new();
	struct an_usyms *u = self_usyms(cache);
	uintptr_t pc = an_test_inl_host(), bias = 0;
	char names[AN_INLINES_MAX][AN_INLINE_NAME_LEN];
	char self[PATH_MAX], cmd[PATH_MAX + 128], line[256], host[256];
	size_t n;
	FILE *p;

	n = an_usyms_frames(u, pc, host, sizeof(host), names, AN_INLINES_MAX);
	cr_assert_eq(n, 2, "%zu inlined calls at %#lx", n, (unsigned long)pc);
	cr_expect_str_eq(names[0], "an_test_inl_inner");
	cr_expect_str_eq(names[1], "an_test_inl_outer");
	cr_expect_str_eq(host, "an_test_inl_host");
	cr_expect_eq(an_usyms_frames(u, pc, host, sizeof(host), names, 1), 1,
		     "max bounds what is named");
	cr_expect_eq(an_usyms_frames(u, (uintptr_t)&an_test_marker_alpha, host, sizeof(host),
				     names, AN_INLINES_MAX), 0,
		     "nothing is inlined at a function's entry");

	/* addr2line -i -f: innermost function first, one name line and one place line each */
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	cr_assert_gt(len, 0);
	self[len] = '\0';
	dl_iterate_phdr(main_object_bias, &bias);
	snprintf(cmd, sizeof(cmd), "addr2line -i -f -e '%s' %#lx", self,
		 (unsigned long)(pc - bias));
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	const char *want[] = { "an_test_inl_inner", "an_test_inl_outer", "an_test_inl_host" };
	size_t k = 0;
	for (int i = 0; fgets(line, sizeof(line), p); i++) {
		line[strcspn(line, "\n")] = '\0';
		if (i % 2 == 0 && k < 3)
			cr_expect_str_eq(line, want[k++], "addr2line's frame %zu", k);
	}
	cr_expect_eq(pclose(p), 0, "%s failed", cmd);
	cr_expect_eq(k, 3, "addr2line named %zu frames", k);
	an_usyms_free(u);
	an_symcache_free(cache);
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

/* A kallsyms file read as the running kernel's (path NULL: /proc/kallsyms): the symbol
 * at schedule's address is one of that address's names, and one byte on is the same
 * symbol at offset 1. Where kptr_restrict hides the addresses (all zero), nothing can
 * be named at any address. */
static void check_kallsyms(const char *path)
{
	const char *file = path ? path : "/proc/kallsyms";
	struct an_ksyms *k = an_ksyms_load(path);
	cr_assert_not_null(k, "%s: %s", file, strerror(errno));

	FILE *f = fopen(file, "re");
	cr_assert_not_null(f, "%s", file);
	char line[512], name[256], type;
	uint64_t addr, want = 0;
	bool listed = false;
	while (!listed && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, name) == 3 && type == 'T' &&
		    strcmp(name, "schedule") == 0) {
			want = addr;
			listed = true;
		}
	}
	cr_assert(listed, "%s: schedule not found", file);
	if (want == 0) {
		/* Addresses hidden (kptr_restrict): nothing can be named. */
		cr_expect_null(an_ksyms_lookup(k, 0, NULL));
		cr_expect_null(an_ksyms_lookup(k, 1, NULL));
		cr_expect_null(an_ksyms_lookup(k, 0xffffffff81000000ULL, NULL));
		cr_expect_null(an_ksyms_lookup(k, UINT64_MAX, NULL));
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

Test(ksyms, proc_kallsyms)
{
	check_kallsyms(NULL);
}

/* What /proc/kallsyms shows a reader that kptr_restrict keeps from the addresses. */
Test(ksyms, proc_kallsyms_with_addresses_hidden)
{
	char path[PATH_MAX];

	data_path(path, sizeof(path), "kallsyms_restricted");
	check_kallsyms(path);
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

/* ---- frame pointers, finding functions, code ranges --------------------------------- */

/* Prologues 16 bytes apart in a fake .text, each after int3 padding. */
static unsigned char fp_code[FAKE_TEXT_SIZE];

static void put_code(unsigned rel, const char *bytes, size_t n)
{
	memcpy(fp_code + rel, bytes, n);
}

/* Three with a frame-pointer setup (plain, after endbr64, the 8b encoding of the mov),
 * three without, and one too short to judge. */
static const struct fake_sym fp_syms[] = {
    {"fp_plain", SEG_TEXT, 0x00, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"fp_endbr", SEG_TEXT, 0x10, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"fp_mov8b", SEG_TEXT, 0x20, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"nofp_push_rbx", SEG_TEXT, 0x30, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"nofp_endbr", SEG_TEXT, 0x40, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"tiny", SEG_TEXT, 0x50, 0x2, STT_FUNC, STB_GLOBAL, false},
    {"nofp_push_ret", SEG_TEXT, 0x60, 0x10, STT_FUNC, STB_LOCAL, false},
    /* in PT_LOAD 1's memory past its file contents: no bytes to read */
    {"in_bss", 1, 0x1800, 0x10, STT_FUNC, STB_GLOBAL, false},
};

static void fill_fp_code(void)
{
	memset(fp_code, 0xcc, sizeof(fp_code));
	put_code(0x00, "\x55\x48\x89\xe5", 4);		       /* push %rbp; mov %rsp,%rbp */
	put_code(0x10, "\xf3\x0f\x1e\xfa\x55\x48\x89\xe5", 8); /* endbr64; the same */
	put_code(0x20, "\x55\x48\x8b\xec", 4);		       /* push; mov, other encoding */
	put_code(0x30, "\x53\x48\x83\xec\x10", 5);	       /* push %rbx; sub $16,%rsp */
	put_code(0x40, "\xf3\x0f\x1e\xfa\x41\x57", 6);	       /* endbr64; push %r15 */
	put_code(0x50, "\x55\x48", 2);
	put_code(0x60, "\x55\xc3", 2);			       /* push %rbp; ret */
}

Test(symtab, frame_pointer_share_counts_prologues)
{
	struct fake_elf fe = {.e_type = ET_DYN,
			      .vaddr = {0, 0x3000},
			      .symtab = fp_syms,
			      .nsymtab = sizeof(fp_syms) / sizeof(fp_syms[0]),
			      .code = fp_code};
	char path[128];

	fill_fp_code();
	snprintf(path, sizeof(path), "%s/libprologues.so", tmpdir);
	write_fake_elf(path, &fe);
	struct an_symtab *st = an_symtab_load(path);
	cr_assert_not_null(st, "%s", strerror(errno));
	/* 3 of the 6 that could be read */
	cr_expect_float_eq(an_symtab_frame_pointer_share(st), 0.5, 1e-12, "share %f",
			   an_symtab_frame_pointer_share(st));
	an_symtab_free(st);

	/* only the three with frame pointers */
	fe.nsymtab = 3;
	write_fake_elf(path, &fe);
	st = an_symtab_load(path);
	cr_assert_not_null(st);
	cr_expect_float_eq(an_symtab_frame_pointer_share(st), 1.0, 1e-12);
	an_symtab_free(st);

	/* nothing readable: the short one and the one in .bss */
	struct fake_sym unreadable[] = { fp_syms[5], fp_syms[7] };
	fe.symtab = unreadable;
	fe.nsymtab = 2;
	write_fake_elf(path, &fe);
	st = an_symtab_load(path);
	cr_assert_not_null(st);
	cr_expect(isnan(an_symtab_frame_pointer_share(st)), "share %f",
		  an_symtab_frame_pointer_share(st));
	an_symtab_free(st);

	/* no symbols at all */
	fe.symtab = NULL;
	fe.nsymtab = 0;
	write_fake_elf(path, &fe);
	st = an_symtab_load(path);
	cr_assert_not_null(st);
	cr_expect(isnan(an_symtab_frame_pointer_share(st)));
	an_symtab_free(st);
	cr_expect(isnan(an_symtab_frame_pointer_share(NULL)));
}

/* Whether all of this binary's code keeps frame pointers: not under AddressSanitizer,
 * whose runtime, linked in statically, is built without them (a third of the binary's
 * functions), so the two tests of that figure are off there. */
#if defined(RT_SANITIZE_ADDRESS)
#define BINARY_LACKS_FP 1
#else
#define BINARY_LACKS_FP 0
#endif

/* This binary is built with frame pointers (the Makefile's CFLAGS); Debian's glibc is
 * not. */
Test(symtab, frame_pointer_share_of_this_binary_and_libc, .disabled = BINARY_LACKS_FP)
{
	struct self_map m;
	struct an_symtab *st = an_symtab_load("/proc/self/exe");
	double share;

	cr_assert_not_null(st, "%s", strerror(errno));
	share = an_symtab_frame_pointer_share(st);
	cr_log_info("frame-pointer share: this binary %.3f", share);
	cr_expect_geq(share, 0.9, "this binary: %f", share);
	an_symtab_free(st);

	find_self_map((uintptr_t)&getpid, &m);
	st = an_symtab_load(m.path);
	cr_assert_not_null(st, "%s: %s", m.path, strerror(errno));
	share = an_symtab_frame_pointer_share(st);
	cr_log_info("frame-pointer share: %s %.3f", m.path, share);
	cr_expect_lt(share, 0.3, "%s: %f", m.path, share);
	an_symtab_free(st);

	st = an_symtab_load("/lib/x86_64-linux-gnu/libc.so.6");
	cr_assert_not_null(st, "%s", strerror(errno));
	cr_expect_lt(an_symtab_frame_pointer_share(st), 0.3);
	an_symtab_free(st);
}

/* What find says a function spans is exactly what lookup names it for. */
static void expect_find_matches_lookup(const struct an_symtab *st, const char *name)
{
	uint64_t vaddr = 0, size = 0;

	cr_assert_eq(an_symtab_find(st, name, &vaddr, &size), 0, "%s not found", name);
	cr_assert_gt(size, 0, "%s: size 0", name);
	expect_lookup(st, vaddr, name, 0);
	expect_lookup(st, vaddr + size - 1, name, size - 1);
	uint64_t off;
	const char *next = an_symtab_lookup(st, vaddr + size, &off);
	cr_expect(!next || strcmp(next, name), "%s: %#" PRIx64 " + %#" PRIx64 " still names it",
		  name, vaddr, size);
}

Test(symtab, find_by_name)
{
	struct fake_elf fe = {.e_type = ET_DYN,
			      .vaddr = {0x10000, 0x20000},
			      .symtab = rule_syms,
			      .nsymtab = sizeof(rule_syms) / sizeof(rule_syms[0])};
	uint64_t vaddr = 0, size = 0;
	char path[128];

	snprintf(path, sizeof(path), "%s/find.so", tmpdir);
	write_fake_elf(path, &fe);
	struct an_symtab *st = an_symtab_load(path);
	cr_assert_not_null(st, "%s", strerror(errno));

	cr_expect_eq(an_symtab_find(st, "sized_fn", &vaddr, &size), 0);
	cr_expect_eq(vaddr, 0x10100);
	cr_expect_eq(size, 0x20);
	cr_expect_eq(an_symtab_find(st, "seg2_fn", &vaddr, &size), 0);
	cr_expect_eq(vaddr, 0x20000);
	cr_expect_eq(size, 0x10);
	/* the name kept for the address, not its aliases */
	cr_expect_eq(an_symtab_find(st, "global_name", &vaddr, &size), 0);
	cr_expect_eq(vaddr, 0x10200);
	cr_expect_eq(an_symtab_find(st, "weak_alias", &vaddr, &size), -ENOENT);
	cr_expect_eq(an_symtab_find(st, "versioned", &vaddr, &size), 0);
	cr_expect_eq(vaddr, 0x10800);
	/* not functions, or not defined here */
	cr_expect_eq(an_symtab_find(st, "data_obj", &vaddr, &size), -ENOENT);
	cr_expect_eq(an_symtab_find(st, "undef_fn", &vaddr, &size), -ENOENT);
	cr_expect_eq(an_symtab_find(st, "sized", &vaddr, &size), -ENOENT);
	cr_expect_eq(an_symtab_find(st, "", &vaddr, &size), -ENOENT);
	cr_expect_eq(an_symtab_find(st, NULL, &vaddr, &size), -EINVAL);
	cr_expect_eq(an_symtab_find(NULL, "sized_fn", &vaddr, &size), -EINVAL);

	/* a symbol without a size spans up to the next one, as lookup names it */
	for (size_t i = 0; i < sizeof(rule_syms) / sizeof(rule_syms[0]); i++) {
		const char *n = rule_syms[i].name;

		if (rule_syms[i].undef || rule_syms[i].type == STT_OBJECT ||
		    an_symtab_find(st, n, &vaddr, &size))
			continue; /* an alias, or no function */
		expect_find_matches_lookup(st, n);
	}
	cr_expect_eq(an_symtab_find(st, "nosize_fn", &vaddr, &size), 0);
	cr_expect_eq(vaddr, 0x10300);
	cr_expect_eq(size, 0x100, "nosize_fn: size %#" PRIx64 ", ifunc_sel is next", size);
	an_symtab_free(st);
}

Test(symtab, vaddr_to_offset)
{
	struct fake_elf fe = {.e_type = ET_DYN, .vaddr = {0x10000, 0x20000}};
	uint64_t off = 0, vaddr = 0;
	char path[128];

	snprintf(path, sizeof(path), "%s/offsets.so", tmpdir);
	write_fake_elf(path, &fe);
	struct an_symtab *st = an_symtab_load(path);
	cr_assert_not_null(st, "%s", strerror(errno));
	cr_expect_eq(an_symtab_vaddr_to_offset(st, 0x10150, &off), 0);
	cr_expect_eq(off, 0x150);
	cr_expect_eq(an_symtab_vaddr_to_offset(st, 0x12fff, &off), 0);
	cr_expect_eq(off, 0x2fff);
	cr_expect_eq(an_symtab_vaddr_to_offset(st, 0x20008, &off), 0);
	cr_expect_eq(off, 0x3008);
	cr_expect_eq(an_symtab_offset_to_vaddr(st, off, &vaddr), 0);
	cr_expect_eq(vaddr, 0x20008);
	/* between the segments, below them, and in memory past a segment's file contents */
	cr_expect_eq(an_symtab_vaddr_to_offset(st, 0x13000, &off), -ENOENT);
	cr_expect_eq(an_symtab_vaddr_to_offset(st, 0xffff, &off), -ENOENT);
	cr_expect_eq(an_symtab_vaddr_to_offset(st, 0x21000, &off), -ENOENT);
	cr_expect_eq(an_symtab_vaddr_to_offset(st, 0x21800, &off), -ENOENT);
	cr_expect_eq(an_symtab_vaddr_to_offset(NULL, 0x10150, &off), -EINVAL);
	cr_expect_eq(an_symtab_vaddr_to_offset(st, 0x10150, NULL), -EINVAL);
	an_symtab_free(st);
}

/* This executable is PIE: the address find gives, turned into a file offset and placed
 * in the mapping /proc/self/maps shows for that offset, is the function's own. */
Test(symtab, find_in_this_binary)
{
	uint64_t vaddr = 0, size = 0, off = 0;
	struct self_map m;
	Dl_info di;
	struct an_symtab *st = an_symtab_load("/proc/self/exe");

	cr_assert_not_null(st, "%s", strerror(errno));
	cr_assert_eq(an_symtab_find(st, "an_test_marker_beta", &vaddr, &size), 0);
	cr_expect_gt(size, 0);
	cr_assert_eq(an_symtab_vaddr_to_offset(st, vaddr, &off), 0);
	find_self_map((uintptr_t)&an_test_marker_beta, &m);
	cr_assert_geq(off, m.pgoff);
	cr_expect_eq(m.start + (off - m.pgoff), (uintptr_t)&an_test_marker_beta,
		     "%#" PRIx64 " != %p", m.start + (off - m.pgoff), (void *)&an_test_marker_beta);
	/* and dladdr agrees on where the function starts */
	cr_assert_neq(dladdr((void *)&an_test_marker_beta, &di), 0);
	cr_expect_eq((uintptr_t)di.dli_fbase + vaddr, (uintptr_t)&an_test_marker_beta);
	expect_find_matches_lookup(st, "an_test_marker_beta");
	expect_find_matches_lookup(st, "an_test_static_marker");
	cr_expect_eq(an_symtab_find(st, "an_test_no_such_function", &vaddr, &size), -ENOENT);
	an_symtab_free(st);
}

Test(usyms, module_of_an_address)
{
	long page = sysconf(_SC_PAGESIZE);
	char *rx = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char exe[PATH_MAX], buf[64], small[4];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct an_usyms *u;

	cr_assert(rx != MAP_FAILED);
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	u = self_usyms(NULL);

	cr_expect(an_usyms_module(u, (uintptr_t)&an_test_marker_alpha, buf, sizeof(buf)));
	cr_expect_str_eq(buf, strrchr(exe, '/') + 1);
	cr_expect(an_usyms_module(u, (uintptr_t)&getpid, buf, sizeof(buf)));
	cr_expect_str_eq(buf, "libc.so.6");
	void *h = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
	cr_assert_not_null(h);
	cr_expect(an_usyms_module(u, (uintptr_t)dlsym(h, "__vdso_clock_gettime"), buf,
				  sizeof(buf)));
	cr_expect_str_eq(buf, "[vdso]");
	dlclose(h);

	/* no file: anonymous code, data, nothing mapped */
	strcpy(buf, "unchanged");
	cr_expect_not(an_usyms_module(u, (uintptr_t)rx + 8, buf, sizeof(buf)));
	cr_expect_str_eq(buf, "unchanged");
	cr_expect_not(an_usyms_module(u, 0x10, buf, sizeof(buf)));
	cr_expect_not(an_usyms_module(u, (uintptr_t)&buf, buf, sizeof(buf)));
	cr_expect_not(an_usyms_module(NULL, (uintptr_t)&getpid, buf, sizeof(buf)));

	/* no buffer, or a short one */
	cr_expect(an_usyms_module(u, (uintptr_t)&getpid, NULL, 0));
	cr_expect(an_usyms_module(u, (uintptr_t)&getpid, small, sizeof(small)));
	cr_expect_str_eq(small, "lib");
	an_usyms_free(u);
	munmap(rx, page);
}

/* ---- code ranges, exactly, from files written here ---------------------------------- */

/* No frame pointers anywhere: two roots (one without a size) among plain functions. */
static const struct fake_sym nofp_syms[] = {
    {"n_first", SEG_TEXT, 0x00, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"n_root", SEG_TEXT, 0x40, 0x20, STT_FUNC, STB_GLOBAL, false},
    {"n_middle", SEG_TEXT, 0x80, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"n_root0", SEG_TEXT, 0xa0, 0, STT_FUNC, STB_GLOBAL, false},
    {"n_last", SEG_TEXT, 0xc0, 0x10, STT_FUNC, STB_GLOBAL, false},
};

/* Frame pointers everywhere, and one root. */
static const struct fake_sym withfp_syms[] = {
    {"f_first", SEG_TEXT, 0x00, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"f_root", SEG_TEXT, 0x20, 0x10, STT_FUNC, STB_GLOBAL, false},
    {"f_last", SEG_TEXT, 0x40, 0x10, STT_FUNC, STB_GLOBAL, false},
};

#define NOFP_BASE 0x7f0000000000ULL /* two mappings: [B, B+0x3000), [B+0x3000, B+0x4000) */
#define FP_BASE	  0x7f1000000000ULL

struct fake_objects {
	uint64_t text_nofp, text_fp; /* .text's vaddr in each file: fake_sym.rel 0 */
	struct an_usyms *u;
};

static void fake_objects(struct fake_objects *o)
{
	static unsigned char nofp_code[FAKE_TEXT_SIZE], withfp_code[FAKE_TEXT_SIZE];
	struct fake_elf fe = {.e_type = ET_DYN, .vaddr = {0, 0x3000}};
	char pn[128], pf[128], text[1024];
	uint64_t size;
	struct an_symtab *st;

	memset(nofp_code, 0xcc, sizeof(nofp_code));
	memset(withfp_code, 0xcc, sizeof(withfp_code));
	for (unsigned rel = 0; rel < FAKE_TEXT_SIZE; rel += 0x10) {
		memcpy(nofp_code + rel, "\x53\x48\x83\xec\x10", 5);
		memcpy(withfp_code + rel, "\x55\x48\x89\xe5", 4);
	}
	snprintf(pn, sizeof(pn), "%s/libnofp.so", tmpdir);
	snprintf(pf, sizeof(pf), "%s/libwithfp.so", tmpdir);
	fe.symtab = nofp_syms;
	fe.nsymtab = sizeof(nofp_syms) / sizeof(nofp_syms[0]);
	fe.code = nofp_code;
	write_fake_elf(pn, &fe);
	fe.symtab = withfp_syms;
	fe.nsymtab = sizeof(withfp_syms) / sizeof(withfp_syms[0]);
	fe.code = withfp_code;
	write_fake_elf(pf, &fe);

	st = an_symtab_load(pn);
	cr_assert_not_null(st);
	cr_assert_eq(an_symtab_find(st, "n_first", &o->text_nofp, &size), 0);
	cr_assert_float_eq(an_symtab_frame_pointer_share(st), 0.0, 1e-12);
	an_symtab_free(st);
	st = an_symtab_load(pf);
	cr_assert_not_null(st);
	cr_assert_eq(an_symtab_find(st, "f_first", &o->text_fp, &size), 0);
	cr_assert_float_eq(an_symtab_frame_pointer_share(st), 1.0, 1e-12);
	an_symtab_free(st);

	fake_maps_text(text, sizeof(text), pn, NOFP_BASE, NOFP_BASE + 0x3000);
	size_t len = strlen(text);
	fake_maps_text(text + len, sizeof(text) - len, pf, FP_BASE, FP_BASE + 0x3000);
	o->u = text_usyms(NULL, text);
}

static void expect_ranges(const struct an_code_range *got, int n,
			  const struct an_code_range *want, int nwant)
{
	cr_expect_eq(n, nwant, "%d ranges, want %d", n, nwant);
	for (int i = 0; i < n && i < nwant; i++)
		cr_expect(got[i].start == want[i].start && got[i].end == want[i].end &&
			      got[i].kind == want[i].kind,
			  "range %d: [%#" PRIx64 ", %#" PRIx64 ") kind %u, want [%#" PRIx64
			  ", %#" PRIx64 ") kind %u",
			  i, got[i].start, got[i].end, got[i].kind, want[i].start, want[i].end,
			  want[i].kind);
}

Test(usyms_fake, code_ranges_exactly)
{
	static const char *const roots[] = { "n_root", "f_root", "not_anywhere", NULL };
	struct an_code_range out[16];
	struct fake_objects o;
	size_t dropped = 99;
	int n;

	fake_objects(&o);
	const uint64_t B = NOFP_BASE, tn = o.text_nofp, tf = FP_BASE + o.text_fp;
	const struct an_code_range want[] = {
		{ B, B + tn + 0x40, AN_CODE_NOFP },
		{ B + tn + 0x40, B + tn + 0x60, AN_CODE_ROOT },
		{ B + tn + 0x60, B + 0x3000, AN_CODE_NOFP },
		{ B + 0x3000, B + 0x4000, AN_CODE_NOFP },
		{ tf + 0x20, tf + 0x30, AN_CODE_ROOT },
	};

	n = an_usyms_code_ranges(o.u, roots, out, 16, &dropped);
	expect_ranges(out, n, want, 5);
	cr_expect_eq(dropped, 0);

	/* no roots: each mapping of the object without frame pointers, whole */
	n = an_usyms_code_ranges(o.u, NULL, out, 16, &dropped);
	const struct an_code_range whole[] = {
		{ B, B + 0x3000, AN_CODE_NOFP },
		{ B + 0x3000, B + 0x4000, AN_CODE_NOFP },
	};
	expect_ranges(out, n, whole, 2);
	an_usyms_free(o.u);
}

/* A root without a size spans up to the next function, as its name does: not to the
 * end of its segment, which would make the functions after it roots too. */
Test(usyms_fake, code_ranges_root_without_size)
{
	static const char *const roots[] = { "n_root0", NULL };
	struct an_code_range out[16];
	struct fake_objects o;
	size_t dropped;
	int n;

	fake_objects(&o);
	const uint64_t B = NOFP_BASE, tn = o.text_nofp;
	const struct an_code_range want[] = {
		{ B, B + tn + 0xa0, AN_CODE_NOFP },
		{ B + tn + 0xa0, B + tn + 0xc0, AN_CODE_ROOT },
		{ B + tn + 0xc0, B + 0x3000, AN_CODE_NOFP },
		{ B + 0x3000, B + 0x4000, AN_CODE_NOFP },
	};

	n = an_usyms_code_ranges(o.u, roots, out, 16, &dropped);
	expect_ranges(out, n, want, 4);
	an_usyms_free(o.u);
}

/* The same root named twice is one range: the table stays disjoint. */
Test(usyms_fake, code_ranges_root_named_twice)
{
	static const char *const roots[] = { "f_root", "n_root", "f_root", NULL };
	struct an_code_range out[16];
	struct fake_objects o;
	size_t dropped;
	int n;

	fake_objects(&o);
	const uint64_t B = NOFP_BASE, tn = o.text_nofp, tf = FP_BASE + o.text_fp;
	const struct an_code_range want[] = {
		{ B, B + tn + 0x40, AN_CODE_NOFP },
		{ B + tn + 0x40, B + tn + 0x60, AN_CODE_ROOT },
		{ B + tn + 0x60, B + 0x3000, AN_CODE_NOFP },
		{ B + 0x3000, B + 0x4000, AN_CODE_NOFP },
		{ tf + 0x20, tf + 0x30, AN_CODE_ROOT },
	};

	n = an_usyms_code_ranges(o.u, roots, out, 16, &dropped);
	expect_ranges(out, n, want, 5);
	an_usyms_free(o.u);
}

Test(usyms_fake, code_ranges_full_table_keeps_roots)
{
	static const char *const roots[] = { "f_root", "n_root", NULL };
	struct an_code_range out[16];
	struct fake_objects o;
	size_t dropped = 99;
	int n;

	fake_objects(&o);
	const uint64_t B = NOFP_BASE, tn = o.text_nofp, tf = FP_BASE + o.text_fp;
	const struct an_code_range nroot = { B + tn + 0x40, B + tn + 0x60, AN_CODE_ROOT };
	const struct an_code_range froot = { tf + 0x20, tf + 0x30, AN_CODE_ROOT };

	/* room for the roots only: both kept, the three pieces counted */
	n = an_usyms_code_ranges(o.u, roots, out, 2, &dropped);
	expect_ranges(out, n, (const struct an_code_range[]){ nroot, froot }, 2);
	cr_expect_eq(dropped, 3);

	/* room for one: the lowest root */
	n = an_usyms_code_ranges(o.u, roots, out, 1, &dropped);
	expect_ranges(out, n, &nroot, 1);
	cr_expect_eq(dropped, 4);

	/* room for three: the roots, then the first piece, sorted */
	n = an_usyms_code_ranges(o.u, roots, out, 3, &dropped);
	expect_ranges(out, n,
		      (const struct an_code_range[]){ { B, B + tn + 0x40, AN_CODE_NOFP }, nroot,
						      froot },
		      3);
	cr_expect_eq(dropped, 2);

	/* none */
	n = an_usyms_code_ranges(o.u, roots, out, 0, &dropped);
	cr_expect_eq(n, 0);
	cr_expect_eq(dropped, 5);

	cr_expect_eq(an_usyms_code_ranges(NULL, roots, out, 16, &dropped), -EINVAL);
	an_usyms_free(o.u);
}

/* ---- code ranges of this very process ----------------------------------------------- */

/* Whether [a, b) is covered by the ranges of the given kinds (a mask of 1 << kind). */
static bool covered(const struct an_code_range *r, int n, uint64_t a, uint64_t b, unsigned kinds)
{
	for (int i = 0; i < n && a < b; i++) {
		if (!(kinds & (1u << r[i].kind)) || r[i].end <= a)
			continue;
		if (r[i].start > a)
			return false;
		a = r[i].end;
	}
	return a >= b;
}

static bool overlaps(const struct an_code_range *r, int n, uint64_t a, uint64_t b, unsigned kind)
{
	for (int i = 0; i < n; i++)
		if (r[i].kind == kind && r[i].start < b && a < r[i].end)
			return true;
	return false;
}

/* The executable mappings of path in /proc/self/maps. */
static int exec_maps_of(const char *path, uint64_t *starts, uint64_t *ends, int max)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[PATH_MAX + 128], perms[8], p[PATH_MAX];
	uint64_t s, e;
	int n = 0;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f) && n < max) {
		p[0] = '\0';
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %*s %*s %*s %4095s", &s, &e, perms,
			   p) < 3)
			continue;
		if (perms[2] == 'x' && !strcmp(p, path)) {
			starts[n] = s;
			ends[n++] = e;
		}
	}
	fclose(f);
	return n;
}

Test(usyms, code_ranges_of_this_process, .disabled = BINARY_LACKS_FP)
{
	static const char *const roots[] = { "start_thread", "an_test_marker_beta", NULL };
	struct an_code_range out[256];
	uint64_t ls[8], le[8], es[8], ee[8], vaddr, size, off;
	struct self_map libc, exe;
	size_t dropped = 99;
	int n, nroots = 0, nl, ne;

	find_self_map((uintptr_t)&getpid, &libc);
	find_self_map((uintptr_t)&an_test_marker_beta, &exe);
	struct an_usyms *u = self_usyms(NULL);
	n = an_usyms_code_ranges(u, roots, out, 256, &dropped);
	cr_assert_gt(n, 0, "an_usyms_code_ranges: %d", n);
	cr_expect_eq(dropped, 0);

	/* sorted, disjoint, not empty, of a known kind */
	for (int i = 0; i < n; i++) {
		cr_expect_lt(out[i].start, out[i].end, "range %d empty", i);
		cr_expect(out[i].kind == AN_CODE_NOFP || out[i].kind == AN_CODE_ROOT);
		if (i)
			cr_expect_leq(out[i - 1].end, out[i].start, "ranges %d and %d overlap",
				      i - 1, i);
		nroots += out[i].kind == AN_CODE_ROOT;
	}
	cr_expect_eq(nroots, 2, "start_thread and an_test_marker_beta");

	/* libc has no frame pointers: each of its executable mappings is covered, by NOFP
	 * pieces and by the root start_thread, which no NOFP piece covers */
	nl = exec_maps_of(libc.path, ls, le, 8);
	cr_assert_geq(nl, 1, "no executable mapping of %s", libc.path);
	for (int i = 0; i < nl; i++)
		cr_expect(covered(out, n, ls[i], le[i], 1u << AN_CODE_NOFP | 1u << AN_CODE_ROOT),
			  "%s [%#" PRIx64 ", %#" PRIx64 ") not covered", libc.path, ls[i], le[i]);
	struct an_symtab *st = an_symtab_load(libc.path);
	cr_assert_not_null(st);
	cr_assert_eq(an_symtab_find(st, "start_thread", &vaddr, &size), 0,
		     "start_thread is not in %s's symbols (libc6-dbg)", libc.path);
	cr_assert_eq(an_symtab_vaddr_to_offset(st, vaddr, &off), 0);
	an_symtab_free(st);
	uint64_t st_at = 0;
	for (int i = 0; i < nl; i++) {
		struct self_map m;

		find_self_map(ls[i], &m);
		if (off >= m.pgoff && off - m.pgoff < m.end - m.start)
			st_at = m.start + (off - m.pgoff);
	}
	cr_assert_neq(st_at, 0, "start_thread is in no executable mapping of libc");
	cr_expect(covered(out, n, st_at, st_at + size, 1u << AN_CODE_ROOT),
		  "start_thread [%#" PRIx64 ", +%#" PRIx64 ") is not a root", st_at, size);
	cr_expect_not(overlaps(out, n, st_at, st_at + size, AN_CODE_NOFP));

	/* this binary has frame pointers: its one NOFP piece is its PLT (stubs that keep no
	 * frame), exactly, and its root is exact */
	ne = exec_maps_of(exe.path, es, ee, 8);
	cr_assert_geq(ne, 1);
	st = an_symtab_load(exe.path);
	cr_assert_not_null(st);
	cr_assert_eq(an_symtab_plt(st, &vaddr, &size), 0, "%s has no PLT", exe.path);
	cr_assert_eq(an_symtab_vaddr_to_offset(st, vaddr, &off), 0);
	an_symtab_free(st);
	uint64_t plt_at = 0;
	for (int i = 0; i < ne; i++) {
		struct self_map m;

		find_self_map(es[i], &m);
		if (off >= m.pgoff && off - m.pgoff < m.end - m.start)
			plt_at = m.start + (off - m.pgoff);
	}
	cr_assert_neq(plt_at, 0, "the PLT is in no executable mapping of %s", exe.path);
	int nplt = 0;
	for (int i = 0; i < n; i++) {
		bool in_exe = false;

		for (int k = 0; k < ne; k++)
			in_exe |= out[i].start < ee[k] && es[k] < out[i].end;
		if (!in_exe || out[i].kind != AN_CODE_NOFP)
			continue;
		nplt++;
		cr_expect(out[i].start == plt_at && out[i].end == plt_at + size,
			  "%s: NOFP [%#" PRIx64 ", %#" PRIx64 ") is not its PLT [%#" PRIx64
			  ", +%#" PRIx64 ")", exe.path, out[i].start, out[i].end, plt_at, size);
	}
	cr_expect_eq(nplt, 1, "%s: %d NOFP pieces", exe.path, nplt);
	bool beta = false;
	for (int i = 0; i < n; i++)
		beta |= out[i].kind == AN_CODE_ROOT &&
			out[i].start == (uintptr_t)&an_test_marker_beta;
	cr_expect(beta, "no root range starts at an_test_marker_beta");

	/* a table too small: the roots first, the rest counted */
	struct an_code_range few[2];
	int nf = an_usyms_code_ranges(u, roots, few, 2, &dropped);
	cr_expect_eq(nf, 2);
	cr_expect_eq(dropped, (size_t)(n - 2));
	cr_expect(few[0].kind == AN_CODE_ROOT && few[1].kind == AN_CODE_ROOT);
	cr_expect_lt(few[0].start, few[1].start);
	an_usyms_free(u);
}

/* A corrupted program header whose file offset, added to a symbol's place in its segment,
 * wraps around: the frame-pointer check must skip the symbol, not read before the file
 * (found by fuzz/fuzz_symtab.c; ASan and UBSan report the read in the sanitizer build). */
Test(symtab, segment_offset_that_wraps_is_not_read)
{
	char path[PATH_MAX];
	struct an_symtab *st;
	double share;

	data_path(path, sizeof(path), "symtab_segment_offset_wraps.elf");
	st = an_symtab_load(path);
	cr_assert_not_null(st, "%s: %s", path, strerror(errno));
	share = an_symtab_frame_pointer_share(st);
	cr_expect(isnan(share) || (share >= 0 && share <= 1), "share %f", share);
	an_symtab_free(st);
}

/* ---- demangling, JIT code ------------------------------------------------------------ */

Test(usyms, cpp_and_rust_legacy_names_are_demangled_and_others_kept)
{
	static const char *const cases[][2] = {
		{ "_ZNSt6vectorIiSaIiEE9push_backERKi",
		  "std::vector<int, std::allocator<int> >::push_back" },
		{ "_ZN5tokio7runtime4task3raw7RawTask4poll17h3b0e2a8f6c1d9e4aE",
		  "tokio::runtime::task::raw::RawTask::poll" },
		/* Rust's legacy escapes undone; v0 names are kept as they are */
		{ "_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$"
		  "closure$u7d$$u7d$$GT$17h0123456789abcdefE",
		  "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>" },
		{ "_RNvCs15kBYyAo9fc_7mycrate7example", "_RNvCs15kBYyAo9fc_7mycrate7example" },
		/* a function LLVM made local in a link-time build: its ".llvm.N" goes */
		{ "_ZN5tokio7runtime4task3raw7RawTask4poll17h3b0e2a8f6c1d9e4aE.llvm.1234567890",
		  "tokio::runtime::task::raw::RawTask::poll" },
		{ "helper.llvm.42", "helper" },
		{ "a.llvm.name", "a.llvm.name" },
		/* C++: no parameter list, whatever the name holds */
		{ "_ZNK3Foo3barEi", "Foo::bar" },
		{ "_ZN12_GLOBAL__N_13fooEv", "(anonymous namespace)::foo" },
		{ "_ZN3FooclEv", "Foo::operator()" },
		{ "main.foo", "main.foo" },
		{ "runtime.mallocgc", "runtime.mallocgc" },
		{ "malloc", "malloc" },
		{ "_Znot_a_mangled_name", "_Znot_a_mangled_name" },
	};
	char buf[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		an_demangle(cases[i][0], buf, sizeof(buf));
		cr_expect_str_eq(buf, cases[i][1], "%s", cases[i][0]);
	}
	an_demangle("_ZNSt6vectorIiSaIiEE9push_backERKi", buf, 8);
	cr_expect_str_eq(buf, "std::ve", "truncated, terminated");
}

/* Write /tmp/perf-PID.map for this process; its path in path. */
static void write_perf_map(char *path, size_t len, const char *text)
{
	FILE *f;

	snprintf(path, len, "/tmp/perf-%d.map", (int)getpid());
	unlink(path);
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s: %s", path, strerror(errno));
	fputs(text, f);
	cr_assert_eq(fclose(f), 0);
}

/* A JIT's code in an anonymous executable mapping is named from its perf map, "_[j]";
 * a region written again takes its latest line; malformed lines name nothing. */
Test(usyms, a_jits_perf_map_names_its_code)
{
	long page = sysconf(_SC_PAGESIZE);
	char *rx = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char path[64], text[512], want[64];
	uintptr_t base = (uintptr_t)rx;

	cr_assert(rx != MAP_FAILED);
	snprintf(text, sizeof(text),
		 "%" PRIxPTR " 40 Interpreter\n"
		 "0x%" PRIxPTR " 0x20 LFoo;::bar\n"
		 "not a line of a perf map\n"
		 "%" PRIxPTR " 0 zero-sized\n"
		 "%" PRIxPTR " 20 LFoo;::baz (recompiled)\n",
		 base, base + 0x100, base + 0x300, base + 0x100);
	write_perf_map(path, sizeof(path), text);
	struct an_usyms *u = self_usyms(NULL);
	expect_name(u, base + 0x10, "Interpreter_[j]");
	expect_name(u, base + 0x110, "LFoo;::baz (recompiled)_[j]");
	snprintf(want, sizeof(want), "[unknown]+0x%" PRIxPTR, base + 0x300);
	expect_name(u, base + 0x300, want);
	snprintf(want, sizeof(want), "[unknown]+0x%" PRIxPTR, base + 0x200);
	expect_name(u, base + 0x200, want);
	an_usyms_free(u);
	unlink(path);
	munmap(rx, page);
}

/* /tmp is anyone's: a map reached through a link, or owned by another user than the
 * process's or root, names nothing. */
Test(usyms, a_perf_map_through_a_link_or_of_another_user_is_not_read)
{
	long page = sysconf(_SC_PAGESIZE);
	char *rx = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char path[64], text[128], want[64], real[] = "/tmp/schedlab-jit-XXXXXX";
	uintptr_t base = (uintptr_t)rx;
	int fd;

	cr_assert(rx != MAP_FAILED);
	snprintf(text, sizeof(text), "%" PRIxPTR " 40 Planted\n", base);
	snprintf(want, sizeof(want), "[unknown]+0x%" PRIxPTR, base + 8);
	/* another user's */
	write_perf_map(path, sizeof(path), text);
	if (geteuid() == 0) {
		cr_assert_eq(chown(path, 65534, 65534), 0);
		struct an_usyms *u = self_usyms(NULL);
		expect_name(u, base + 8, want);
		an_usyms_free(u);
	}
	/* a link to a map elsewhere */
	unlink(path);
	fd = mkstemp(real);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	cr_assert_eq(symlink(real, path), 0);
	struct an_usyms *u = self_usyms(NULL);
	expect_name(u, base + 8, want);
	an_usyms_free(u);
	unlink(path);
	unlink(real);
	munmap(rx, page);
}
