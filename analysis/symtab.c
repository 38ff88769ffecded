/*
 * symtab.c — the function symbols of one ELF file and its PT_LOAD layout, read with
 * libelf, for naming user-space addresses.
 *
 * Symbols come from .symtab; when the file has none (Debian strips its libraries), from
 * the detached debug file its build id names under /usr/lib/debug/.build-id, where one
 * is installed; else from .dynsym. Only defined STT_FUNC and STT_GNU_IFUNC symbols are
 * kept, sorted by address with one entry per address (the name chosen among aliases by
 * an__alias_cmp(), the size the largest of theirs). A sized symbol covers
 * [addr, addr + size); a zero-size one up to the end of its section, or where it has
 * none, up to the next symbol and no further than the end of its PT_LOAD segment. Everything is copied out of libelf, so the file is
 * closed by the time a load returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "analysis/sym_internal.h"

#define AN_DEBUG_ROOT	"/usr/lib/debug/.build-id"
#define AN_BUILD_ID_MAX 64 /* bytes; GNU ld writes 20 (sha1) */
#define AN_PAGE_SIZE	4096ULL

struct an__sym {
	uint64_t addr, size;
	uint32_t name; /* offset into an_symtab.names */
	uint8_t rank;
};
_Static_assert(offsetof(struct an__sym, addr) == 0,
	       "an__count_at_or_below() reads the address first");

struct an__seg {
	uint64_t off, filesz, vaddr, memsz;
};

struct an_symtab {
	struct an__sym *syms;
	size_t nsyms;
	struct an__seg *segs;
	size_t nsegs;
	char *names;
	unsigned fp_checked, fp_with; /* functions whose prologue was read; of them, with
				       * a frame-pointer setup */
	uint64_t plt_lo, plt_hi; /* the span of the PLT sections' addresses; equal: none */
	struct an__inlines *inlines; /* its DWARF, for inlined calls; NULL: none */
	char build_id[2 * AN_BUILD_ID_MAX + 1]; /* its GNU build id in hex; "": none */
};

/* Prologues read to judge whether a file was built with frame pointers: enough to be
 * sure, few enough to cost nothing next to reading the symbols. */
#define AN_FP_SAMPLE 2048

struct sym_builder {
	struct an__sym *syms;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
};

int an__names_add(char **names, size_t *used, size_t *cap, size_t initial, const char *name,
		  size_t len, uint32_t *off)
{
	if (*used + len + 1 > *cap) {
		size_t want = *cap ? *cap * 2 : initial;
		char *p;

		while (want < *used + len + 1)
			want *= 2;
		if (want > UINT32_MAX)
			return -EOVERFLOW;
		p = realloc(*names, want);
		if (!p)
			return -ENOMEM;
		*names = p;
		*cap = want;
	}
	memcpy(*names + *used, name, len);
	(*names)[*used + len] = '\0';
	*off = (uint32_t)*used;
	*used += len + 1;
	return 0;
}

int an__alias_cmp(int rank_a, const char *a, int rank_b, const char *b)
{
	if (rank_a != rank_b)
		return rank_a < rank_b ? -1 : 1;
	/* glibc's internal-call aliases (__GI___foo) are the least readable of the names. */
	bool gi_a = strncmp(a, "__GI_", 5) == 0, gi_b = strncmp(b, "__GI_", 5) == 0;
	if (gi_a != gi_b)
		return gi_a ? 1 : -1;
	size_t ua = strspn(a, "_"), ub = strspn(b, "_");
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return strcmp(a, b);
}

static int bind_rank(unsigned bind)
{
	switch (bind) {
	case STB_GLOBAL:
	case STB_GNU_UNIQUE:
		return 0;
	case STB_WEAK:
		return 1;
	case STB_LOCAL:
		return 2;
	default:
		return 3;
	}
}

/* Adds the first len bytes of name. */
static int builder_add_len(struct sym_builder *b, uint64_t addr, uint64_t size, int rank,
			   const char *name, size_t len)
{
	uint32_t off;
	int err;

	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		struct an__sym *s = realloc(b->syms, cap * sizeof(*s));

		if (!s)
			return -ENOMEM;
		b->syms = s;
		b->cap = cap;
	}
	err = an__names_add(&b->names, &b->names_len, &b->names_cap, 4096, name, len, &off);
	if (err)
		return err;
	b->syms[b->n++] = (struct an__sym){
	    .addr = addr,
	    .size = size,
	    .name = off,
	    .rank = (uint8_t)rank,
	};
	return 0;
}

/* Adds name without a symbol-version suffix: a .symtab names versioned definitions
 * "fopen@@GLIBC_2.2.5", where .dynsym and every profiler say "fopen". */
static int builder_add(struct sym_builder *b, uint64_t addr, uint64_t size, int rank,
		       const char *name)
{
	size_t len = strcspn(name, "@");

	return builder_add_len(b, addr, size, rank, name, len ? len : strlen(name));
}

static void builder_release(struct sym_builder *b)
{
	free(b->syms);
	free(b->names);
	*b = (struct sym_builder){0};
}

static int libelf_ready(void)
{
	/* elf_version() must precede every other libelf call; repeating it is harmless. */
	return elf_version(EV_CURRENT) == EV_NONE ? -ELIBBAD : 0;
}

static Elf_Scn *find_section(Elf *elf, GElf_Word type, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		if (gelf_getshdr(scn, shdr) && shdr->sh_type == type)
			return scn;
	}
	return NULL;
}

/* Add the defined function symbols of one SHT_SYMTAB or SHT_DYNSYM section. */
static int read_symbols(Elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr, struct sym_builder *b)
{
	size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Data *data = elf_getdata(scn, NULL);
	int err;

	if (!data || entsize == 0)
		return -EINVAL;
	size_t n = data->d_size / entsize;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;

		if (!gelf_getsym(data, (int)i, &sym))
			return -EINVAL;
		int type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF)
			continue;
		const char *name = elf_strptr(elf, shdr->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		uint64_t size = sym.st_size;
		/* A symbol without a size (_init, hand-written code) covers no further than
		 * its section: the PLT stubs after .init are not _init's. */
		GElf_Shdr sec;
		Elf_Scn *in = size || sym.st_shndx >= SHN_LORESERVE ? NULL :
								  elf_getscn(elf, sym.st_shndx);
		if (in && gelf_getshdr(in, &sec) && sym.st_value >= sec.sh_addr &&
		    sym.st_value < sec.sh_addr + sec.sh_size)
			size = sec.sh_addr + sec.sh_size - sym.st_value;
		err = builder_add(b, sym.st_value, size, bind_rank(GELF_ST_BIND(sym.st_info)),
				  name);
		if (err)
			return err;
	}
	return 0;
}

static int read_segments(Elf *elf, struct an_symtab *st)
{
	size_t phnum;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return -EINVAL;
	if (phnum == 0)
		return 0;
	st->segs = calloc(phnum, sizeof(*st->segs));
	if (!st->segs)
		return -ENOMEM;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return -EINVAL;
		if (ph.p_type != PT_LOAD)
			continue;
		st->segs[st->nsegs++] = (struct an__seg){
		    .off = ph.p_offset,
		    .filesz = ph.p_filesz,
		    .vaddr = ph.p_vaddr,
		    .memsz = ph.p_memsz,
		};
	}
	return 0;
}

/* The GNU build id as lowercase hex, or -ENOENT when the file carries none. */
static int read_build_id(Elf *elf, char *hex, size_t hexlen)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		if (!data)
			continue;
		size_t off = 0, next, name_off, desc_off;
		GElf_Nhdr nh;
		while ((next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			const unsigned char *d = (const unsigned char *)data->d_buf;

			off = next;
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp(d + name_off, "GNU", 4) != 0)
				continue;
			if (nh.n_descsz < 2 || nh.n_descsz > AN_BUILD_ID_MAX ||
			    2 * nh.n_descsz + 1 > hexlen)
				return -EINVAL;
			for (size_t i = 0; i < nh.n_descsz; i++)
				snprintf(hex + 2 * i, 3, "%02x", d[desc_off + i]);
			return 0;
		}
	}
	return -ENOENT;
}

/* The detached debug file Debian's -dbg packages install for elf, by its build id, open;
 * or -1. */
static int open_debug_file(Elf *elf)
{
	char hex[2 * AN_BUILD_ID_MAX + 1], path[sizeof(AN_DEBUG_ROOT) + sizeof(hex) + 16];

	if (read_build_id(elf, hex, sizeof(hex)) != 0)
		return -1;
	snprintf(path, sizeof(path), AN_DEBUG_ROOT "/%.2s/%s.debug", hex, hex + 2);
	int fd = an_open_input(AT_FDCWD, path, false);
	return fd < 0 ? -1 : fd;
}

/* Whether elf has a section of that name. */
static bool has_section(Elf *elf, const char *want)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (gelf_getshdr(scn, &shdr) && shdr.sh_type != SHT_NOBITS &&
		    (name = elf_strptr(elf, shstrndx, shdr.sh_name)) && !strcmp(name, want))
			return true;
	}
	return false;
}

/* A descriptor of its own on the file with elf's DWARF: the object itself (fd) when it
 * has .debug_info, else its detached debug file when that has; -1 when neither. */
static int debug_info_fd(Elf *elf, int fd)
{
	int dfd;
	Elf *dbg;
	bool ok;

	if (has_section(elf, ".debug_info"))
		return fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if ((dfd = open_debug_file(elf)) < 0)
		return -1;
	dbg = elf_begin(dfd, ELF_C_READ_MMAP, NULL);
	ok = dbg && elf_kind(dbg) == ELF_K_ELF && has_section(dbg, ".debug_info");
	elf_end(dbg);
	if (!ok) {
		close(dfd);
		return -1;
	}
	return dfd;
}

/* Add the .symtab of the detached debug file, when one is installed. Called with b
 * empty. Only a failure to allocate is an error: without a usable debug file, .dynsym
 * is the fallback, so a missing or damaged one leaves b empty and returns 0. */
static int read_debug_symbols(Elf *elf, struct sym_builder *b)
{
	GElf_Shdr shdr;
	Elf_Scn *scn;
	int err = 0;
	int fd = open_debug_file(elf);

	if (fd < 0)
		return 0;
	Elf *dbg = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (dbg && elf_kind(dbg) == ELF_K_ELF && (scn = find_section(dbg, SHT_SYMTAB, &shdr))) {
		err = read_symbols(dbg, scn, &shdr, b);
		if (err && err != -ENOMEM) {
			b->n = 0;
			b->names_len = 0;
			err = 0;
		}
	}
	elf_end(dbg); /* NULL is ignored */
	close(fd);
	return err;
}

static int sym_cmp(const void *pa, const void *pb, void *names)
{
	const struct an__sym *a = pa, *b = pb;
	const char *n = names;

	if (a->addr != b->addr)
		return (a->addr > b->addr) - (a->addr < b->addr);
	return an__alias_cmp(a->rank, n + a->name, b->rank, n + b->name);
}

/* Sort, keep one entry per address, and bound zero-size symbols by their segment. */
static void finish_symbols(struct an_symtab *st, struct sym_builder *b)
{
	size_t n = 0;

	if (b->n > 1)
		qsort_r(b->syms, b->n, sizeof(*b->syms), sym_cmp, b->names);
	for (size_t i = 0; i < b->n; i++) {
		if (n > 0 && b->syms[n - 1].addr == b->syms[i].addr) {
			if (b->syms[i].size > b->syms[n - 1].size)
				b->syms[n - 1].size = b->syms[i].size;
			continue;
		}
		b->syms[n++] = b->syms[i];
	}
	for (size_t i = 0; i < n; i++) {
		struct an__sym *s = &b->syms[i];

		for (size_t j = 0; s->size == 0 && j < st->nsegs; j++) {
			const struct an__seg *g = &st->segs[j];

			if (s->addr >= g->vaddr && s->addr - g->vaddr < g->memsz)
				s->size = g->vaddr + g->memsz - s->addr;
		}
	}
	st->syms = b->syms;
	st->nsyms = n;
	st->names = b->names;
	*b = (struct sym_builder){0};
}

/* Count, over an even sample of the functions, those that begin by setting up a frame
 * pointer (push %rbp; mov %rsp,%rbp, after an endbr64 where there is one), reading
 * their first bytes from the file's own PT_LOAD contents. A build with
 * -fno-omit-frame-pointer does this in nearly every function; Debian's glibc in almost
 * none. The symbols may come from a detached debug file, whose code sections are
 * empty: the bytes are always this file's. */
static void read_frame_pointers(Elf *elf, struct an_symtab *st)
{
	size_t size, step = st->nsyms / AN_FP_SAMPLE + 1;
	const unsigned char *raw = (const unsigned char *)elf_rawfile(elf, &size);

	if (!raw)
		return;
	for (size_t i = 0; i < st->nsyms; i += step) {
		const struct an__sym *s = &st->syms[i];
		const unsigned char *p = NULL;

		/* a PLT stub is no function of the object's build */
		if (s->size < 4 || (s->addr >= st->plt_lo && s->addr < st->plt_hi))
			continue;
		for (size_t j = 0; j < st->nsegs && !p; j++) {
			const struct an__seg *g = &st->segs[j];

			uint64_t rel = s->addr - g->vaddr;

			/* 8 bytes inside the segment and the file, in differences that
			 * cannot wrap, whatever a corrupted header says */
			if (s->addr >= g->vaddr && g->filesz >= 8 && rel <= g->filesz - 8 &&
			    size >= 8 && g->off <= size - 8 && rel <= size - 8 - g->off)
				p = raw + g->off + rel;
		}
		if (!p)
			continue;
		if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
			p += 4; /* endbr64 */
		st->fp_checked++;
		/* 55: push %rbp; 48 89 e5 or 48 8b ec: mov %rsp,%rbp */
		if (p[0] == 0x55 && p[1] == 0x48 &&
		    ((p[2] == 0x89 && p[3] == 0xe5) || (p[2] == 0x8b && p[3] == 0xec)))
			st->fp_with++;
	}
}

/* Whether scn is a PLT section (.plt, .plt.sec, .plt.got): code, not empty, so named. */
static bool plt_section(Elf *elf, size_t shstrndx, Elf_Scn *scn, GElf_Shdr *shdr)
{
	const char *name;

	return gelf_getshdr(scn, shdr) && (shdr->sh_flags & SHF_EXECINSTR) && shdr->sh_size &&
	       (name = elf_strptr(elf, shstrndx, shdr->sh_name)) && !strncmp(name, ".plt", 4) &&
	       (!name[4] || name[4] == '.');
}

/* A GOT slot and the function a dynamic relocation binds it to. */
struct got_slot {
	uint64_t addr;
	const char *name; /* in the object's string table: valid while its Elf is */
};

static int slot_cmp(const void *pa, const void *pb)
{
	const struct got_slot *a = pa, *b = pb;

	return (a->addr > b->addr) - (a->addr < b->addr);
}

/* The GOT slots that JUMP_SLOT and GLOB_DAT relocations bind to named functions, sorted
 * by address: *slots, their number, or -ENOMEM. */
static ssize_t read_got_slots(Elf *elf, struct got_slot **slots)
{
	struct got_slot *v = NULL;
	size_t n = 0, cap = 0;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr, symshdr;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Scn *symscn;
		Elf_Data *rel, *syms;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_RELA ||
		    !(symscn = elf_getscn(elf, shdr.sh_link)) || !gelf_getshdr(symscn, &symshdr) ||
		    symshdr.sh_type != SHT_DYNSYM || !(rel = elf_getdata(scn, NULL)) ||
		    !(syms = elf_getdata(symscn, NULL)) || !shdr.sh_entsize)
			continue;
		for (size_t i = 0; i < shdr.sh_size / shdr.sh_entsize; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			const char *name;
			unsigned type;

			if (!gelf_getrela(rel, (int)i, &r))
				break;
			type = (unsigned)GELF_R_TYPE(r.r_info);
			if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
			    !GELF_R_SYM(r.r_info) ||
			    !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym) ||
			    !(name = elf_strptr(elf, symshdr.sh_link, sym.st_name)) || !*name)
				continue;
			if (n == cap) {
				struct got_slot *w = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));

				if (!w) {
					free(v);
					return -ENOMEM;
				}
				v = w;
			}
			v[n++] = (struct got_slot){ r.r_offset, name };
		}
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), slot_cmp);
	*slots = v;
	return (ssize_t)n;
}

/* Name each PLT stub (.plt past its header, .plt.sec, .plt.got) "NAME@plt", as perf and
 * gdb do, by the GOT slot it jumps through: a stub is "jmp *disp32(%rip)" (ff 25), after
 * an endbr64 and a bnd prefix where the object was built with them, and the slot is one
 * a relocation binds to NAME. Ranked below every symbol the tables hold at the same
 * address. x86-64 objects only; an object with no relocations keeps its stubs unnamed. */
static int read_plt_symbols(Elf *elf, struct sym_builder *b)
{
	struct got_slot *slots = NULL;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Ehdr ehdr;
	GElf_Shdr shdr;
	ssize_t nslots;
	int err = 0;

	if (!gelf_getehdr(elf, &ehdr) || ehdr.e_machine != EM_X86_64 ||
	    elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	nslots = read_got_slots(elf, &slots);
	if (nslots <= 0) {
		free(slots);
		return (int)nslots;
	}
	while (!err && (scn = elf_nextscn(elf, scn))) {
		Elf_Data *data;
		size_t ent;

		if (!plt_section(elf, shstrndx, scn, &shdr) || shdr.sh_type != SHT_PROGBITS ||
		    !(data = elf_getdata(scn, NULL)) || !data->d_buf)
			continue;
		ent = shdr.sh_entsize >= 8 && shdr.sh_entsize <= 32 ? shdr.sh_entsize : 16;
		for (size_t off = 0; !err && off + ent <= data->d_size; off += ent) {
			const unsigned char *c = (const unsigned char *)data->d_buf + off;

			for (size_t k = 0; k + 6 <= ent; k++) {
				struct got_slot key, *hit;
				int32_t disp;
				char name[256];
				int len;

				if (c[k] != 0xff || c[k + 1] != 0x25)
					continue;
				memcpy(&disp, c + k + 2, 4);
				key.addr = shdr.sh_addr + off + k + 6 + (uint64_t)(int64_t)disp;
				hit = bsearch(&key, slots, (size_t)nslots, sizeof(*slots), slot_cmp);
				if (!hit)
					break; /* the header's jump to the resolver */
				len = snprintf(name, sizeof(name), "%.*s@plt",
					       (int)strcspn(hit->name, "@"), hit->name);
				if (len > 0 && (size_t)len < sizeof(name))
					err = builder_add_len(b, shdr.sh_addr + off, ent, 4, name,
							      (size_t)len);
				break;
			}
		}
	}
	free(slots);
	return err;
}

/* The PLT stubs (.plt, .plt.sec, .plt.got): a stub is a bare jump that keeps no frame,
 * in every object, whatever its compiler flags. */
static void read_plt(Elf *elf, struct an_symtab *st)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!plt_section(elf, shstrndx, scn, &shdr))
			continue;
		if (st->plt_lo == st->plt_hi || shdr.sh_addr < st->plt_lo)
			st->plt_lo = shdr.sh_addr;
		if (shdr.sh_addr + shdr.sh_size > st->plt_hi)
			st->plt_hi = shdr.sh_addr + shdr.sh_size;
	}
}

static struct an_symtab *load_elf(Elf *elf, bool try_debug)
{
	struct sym_builder b = {0};
	struct an_symtab *st;
	GElf_Ehdr ehdr;
	GElf_Shdr shdr;
	Elf_Scn *scn;
	int err;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr)) {
		errno = ENOEXEC;
		return NULL;
	}
	st = calloc(1, sizeof(*st));
	if (!st) {
		errno = ENOMEM;
		return NULL;
	}
	err = read_segments(elf, st);
	if (err)
		goto out_free;

	scn = find_section(elf, SHT_SYMTAB, &shdr);
	if (scn) {
		err = read_symbols(elf, scn, &shdr, &b);
		if (err)
			goto out_free;
	}
	if (b.n == 0 && try_debug) {
		err = read_debug_symbols(elf, &b);
		if (err)
			goto out_free;
	}
	if (b.n == 0 && (scn = find_section(elf, SHT_DYNSYM, &shdr))) {
		err = read_symbols(elf, scn, &shdr, &b);
		if (err)
			goto out_free;
	}
	err = read_plt_symbols(elf, &b);
	if (err)
		goto out_free;
	finish_symbols(st, &b);
	if (read_build_id(elf, st->build_id, sizeof(st->build_id)))
		st->build_id[0] = '\0';
	read_plt(elf, st);
	read_frame_pointers(elf, st);
	return st;

out_free:
	builder_release(&b);
	an_symtab_free(st);
	errno = -err;
	return NULL;
}

struct an_symtab *an__symtab_load_fd(int fd)
{
	struct an_symtab *st;
	int err = libelf_ready();

	if (err) {
		errno = -err;
		return NULL;
	}
	errno = 0;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf) {
		/* elf_begin() leaves errno from the read or mmap that failed, if any. */
		if (errno == 0)
			errno = ENOEXEC;
		return NULL;
	}
	st = load_elf(elf, true);
	err = st ? 0 : errno;
	if (st) {
		int dfd = debug_info_fd(elf, fd);

		/* out of memory here costs the inlined frames only */
		if (dfd >= 0 && !(st->inlines = an__inlines_new(dfd)))
			close(dfd);
	}
	elf_end(elf);
	errno = err;
	return st;
}

size_t an__symtab_inlines(struct an_symtab *st, uint64_t vaddr, const char **names, size_t max)
{
	return st ? an__inlines_at(st->inlines, vaddr, names, max) : 0;
}

struct an_symtab *an__symtab_load_mem(const void *image, size_t size)
{
	struct an_symtab *st;
	int err = libelf_ready();

	if (err) {
		errno = -err;
		return NULL;
	}
	/* elf_memory() wants a writable image; the vDSO is not, so work on a copy. */
	char *copy = malloc(size);
	if (!copy) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(copy, image, size);
	Elf *elf = elf_memory(copy, size);
	if (!elf) {
		free(copy);
		errno = ENOEXEC;
		return NULL;
	}
	st = load_elf(elf, false);
	err = st ? 0 : errno;
	elf_end(elf);
	free(copy);
	errno = err;
	return st;
}

struct an_symtab *an_symtab_load(const char *path)
{
	if (!path) {
		errno = EINVAL;
		return NULL;
	}
	/* a regular file only, opened without blocking: the path comes from another
	 * process's mappings, which can change under it */
	int fd = an_open_input(AT_FDCWD, path, false);
	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	struct an_symtab *st = an__symtab_load_fd(fd);
	int err = errno;
	close(fd);
	errno = err;
	return st;
}

const char *an_symtab_build_id(const struct an_symtab *st)
{
	return st ? st->build_id : "";
}

const char *an_symtab_lookup(const struct an_symtab *st, uint64_t vaddr, uint64_t *offset)
{
	if (!st || st->nsyms == 0)
		return NULL;
	size_t lo = an__count_at_or_below(st->syms, st->nsyms, sizeof(st->syms[0]), vaddr);

	if (lo == 0)
		return NULL;
	const struct an__sym *s = &st->syms[lo - 1];
	/* size 0 here means "unbounded up to the next symbol" (outside any segment). */
	if (s->size && vaddr - s->addr >= s->size)
		return NULL;
	if (offset)
		*offset = vaddr - s->addr;
	return st->names + s->name;
}

int an_symtab_find(const struct an_symtab *st, const char *name, uint64_t *vaddr, uint64_t *size)
{
	if (!st || !name)
		return -EINVAL;
	for (size_t i = 0; i < st->nsyms; i++) {
		if (strcmp(st->names + st->syms[i].name, name))
			continue;
		*vaddr = st->syms[i].addr;
		*size = st->syms[i].size;
		/* what an_symtab_lookup() names it: no further than the next symbol (a
		 * zero-size one was given the rest of its segment by finish_symbols()) */
		if (i + 1 < st->nsyms && st->syms[i + 1].addr - st->syms[i].addr < *size)
			*size = st->syms[i + 1].addr - st->syms[i].addr;
		return 0;
	}
	return -ENOENT;
}

double an_symtab_frame_pointer_share(const struct an_symtab *st)
{
	return st && st->fp_checked ? (double)st->fp_with / st->fp_checked : NAN;
}

int an_symtab_plt(const struct an_symtab *st, uint64_t *vaddr, uint64_t *size)
{
	if (!st || st->plt_lo == st->plt_hi)
		return -ENOENT;
	*vaddr = st->plt_lo;
	*size = st->plt_hi - st->plt_lo;
	return 0;
}

int an_symtab_vaddr_to_offset(const struct an_symtab *st, uint64_t vaddr, uint64_t *file_off)
{
	if (!st || !file_off)
		return -EINVAL;
	for (size_t i = 0; i < st->nsegs; i++) {
		const struct an__seg *g = &st->segs[i];

		if (vaddr >= g->vaddr && vaddr - g->vaddr < g->filesz) {
			*file_off = vaddr - g->vaddr + g->off;
			return 0;
		}
	}
	return -ENOENT;
}

int an_symtab_offset_to_vaddr(const struct an_symtab *st, uint64_t file_off, uint64_t *vaddr)
{
	if (!st || !vaddr)
		return -EINVAL;
	for (size_t i = 0; i < st->nsegs; i++) {
		const struct an__seg *g = &st->segs[i];

		if (file_off >= g->off && file_off - g->off < g->filesz) {
			*vaddr = file_off - g->off + g->vaddr;
			return 0;
		}
	}
	/* The loader maps whole pages, so an offset in the page around a segment's first
	 * or last byte is still mapped with the segment's offset-to-vaddr difference. */
	for (size_t i = 0; i < st->nsegs; i++) {
		const struct an__seg *g = &st->segs[i];
		uint64_t lo = g->off & ~(AN_PAGE_SIZE - 1);
		uint64_t hi = (g->off + g->filesz + AN_PAGE_SIZE - 1) & ~(AN_PAGE_SIZE - 1);

		if (g->filesz && file_off >= lo && file_off < hi) {
			*vaddr = file_off - g->off + g->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

void an_symtab_free(struct an_symtab *st)
{
	if (!st)
		return;
	an__inlines_free(st->inlines);
	free(st->syms);
	free(st->segs);
	free(st->names);
	free(st);
}
