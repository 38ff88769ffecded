/*
 * usyms.c — naming user-space addresses of one process, and the symbol-table cache that
 * every process's symbolizer shares.
 *
 * An address is found in the process's executable mappings, turned into a file offset
 * (addr - start + pgoff), then into the ELF virtual address through the file's PT_LOAD
 * segments — which works the same for PIE, shared libraries and fixed-address
 * executables — and looked up in the file's symbol table. Tables are cached by the
 * device and inode that /proc/PID/maps prints, so a library mapped by many processes is
 * read once; a file is opened at its path only when the inode there is the one mapped,
 * else (deleted, replaced, or in another mount namespace) through
 * /proc/PID/map_files/START-END while the process lives. The vDSO is read from this
 * process's own image: the kernel maps the same one into every process.
 *
 * C++ names are demangled by the C++ runtime's own demangler (libstdc++'s __cxa_demangle,
 * a shared library: nothing of it is linked into this binary, whose functions all keep
 * their frame pointers), without parameter lists; Rust's legacy names are Itanium ones
 * with a hash suffix, dropped, and $...$ escapes undone; Rust's v0 names (_R) are kept as
 * they are; Go's need nothing. Code a JIT generated lies in
 * anonymous mappings, and is named from the perf map the runtime writes for it
 * (/tmp/perf-PID.map: a JVM with -XX:+DumpPerfMapAtExit or `jcmd PID Compiler.perfmap`,
 * Node with --perf-basic-prof), suffixed "_[j]" as kernel frames are "_[k]". The map is
 * anyone's to write in /tmp, so it is read only as a regular file not reached through a
 * link, owned by the process's user or root, and each line checked.
 *
 * A name is never refused: "function", else "module+0xOFF", else "[unknown]+0xADDR".
 * Neither the cache nor a symbolizer locks: callers serialize their use.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "analysis/sym_internal.h"

#define AN_VDSO_MAX_SIZE (1u << 20) /* sanity bound on the image size read from its headers */

struct cache_entry {
	uint64_t dev, ino;
	struct an_symtab *st;
};

struct an_symcache {
	struct cache_entry *ents; /* sorted by (dev, ino) */
	size_t n, cap;
	struct an_symtab *vdso;
	size_t vdso_size;
	bool vdso_tried;
};

enum map_state { MAP_UNRESOLVED, MAP_READ, MAP_UNREADABLE };

struct map_sym {
	struct an_symtab *st; /* owned by the cache */
	enum map_state state;
};

/* A JIT's perf map: [start, end) and a name each, sorted by start. */
struct jit_sym {
	uint64_t start, end;
	size_t seq; /* its line's place in the map: a later line for the same start wins */
	char *name;
};

struct an_usyms {
	struct an_symcache *cache;
	struct an_symcache *own_cache; /* when the caller gave none */
	struct an_procmaps *maps;
	struct map_sym *res; /* parallel to maps->maps, resolved on first use */
	struct jit_sym *jit; /* the process's perf map, read at the first address in no file */
	size_t njit;
	bool jit_tried;
};

struct an_symcache *an_symcache_new(void)
{
	struct an_symcache *c = calloc(1, sizeof(*c));

	if (!c)
		errno = ENOMEM;
	return c;
}

void an_symcache_free(struct an_symcache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		an_symtab_free(c->ents[i].st);
	free(c->ents);
	an_symtab_free(c->vdso);
	free(c);
}

/* Index of the first entry not below (dev, ino). */
static size_t cache_lower_bound(const struct an_symcache *c, uint64_t dev, uint64_t ino)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct cache_entry *e = &c->ents[mid];

		if (e->dev < dev || (e->dev == dev && e->ino < ino))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct an_symtab *cache_get(const struct an_symcache *c, uint64_t dev, uint64_t ino)
{
	size_t i = cache_lower_bound(c, dev, ino);

	if (i < c->n && c->ents[i].dev == dev && c->ents[i].ino == ino)
		return c->ents[i].st;
	return NULL;
}

static int cache_put(struct an_symcache *c, uint64_t dev, uint64_t ino, struct an_symtab *st)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 32;
		struct cache_entry *p = realloc(c->ents, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->ents = p;
		c->cap = cap;
	}
	size_t i = cache_lower_bound(c, dev, ino);
	memmove(&c->ents[i + 1], &c->ents[i], (c->n - i) * sizeof(*c->ents));
	c->ents[i] = (struct cache_entry){.dev = dev, .ino = ino, .st = st};
	c->n++;
	return 0;
}

/* The extent of an ELF image in memory, from its own headers. 0 when they make no sense. */
static size_t elf_image_size(const unsigned char *base)
{
	const GElf_Ehdr *eh = (const GElf_Ehdr *)base; /* the vDSO is ELF64 on x86-64 */
	uint64_t size;

	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64)
		return 0;
	size = eh->e_phoff + (uint64_t)eh->e_phnum * eh->e_phentsize;
	if (eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize > size)
		size = eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
	if (eh->e_phentsize != sizeof(GElf_Phdr) || size > AN_VDSO_MAX_SIZE)
		return 0;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		const GElf_Phdr *ph = (const GElf_Phdr *)(base + eh->e_phoff) + i;

		if (ph->p_type == PT_LOAD && ph->p_offset + ph->p_filesz > size)
			size = ph->p_offset + ph->p_filesz;
	}
	return size <= AN_VDSO_MAX_SIZE ? (size_t)size : 0;
}

static struct an_symtab *cache_vdso(struct an_symcache *c, size_t *size)
{
	if (!c->vdso_tried) {
		c->vdso_tried = true;
		const unsigned char *base = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
		size_t n = base ? elf_image_size(base) : 0;

		if (n) {
			c->vdso = an__symtab_load_mem(base, n);
			c->vdso_size = n;
		}
	}
	*size = c->vdso_size;
	return c->vdso;
}

struct an_usyms *an_usyms_new(struct an_symcache *cache, struct an_procmaps *maps)
{
	struct an_usyms *u;
	int err;

	if (!maps) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u) {
		err = -ENOMEM;
		goto out_free_maps;
	}
	if (!cache) {
		u->own_cache = an_symcache_new();
		if (!u->own_cache) {
			err = -ENOMEM;
			goto out_free_u;
		}
		cache = u->own_cache;
	}
	u->res = calloc(maps->n ? maps->n : 1, sizeof(*u->res));
	if (!u->res) {
		err = -ENOMEM;
		goto out_free_cache;
	}
	u->cache = cache;
	u->maps = maps;
	return u;

out_free_cache:
	an_symcache_free(u->own_cache);
out_free_u:
	free(u);
out_free_maps:
	/* Ownership of maps passed on the call, whatever its outcome. */
	an_procmaps_free(maps);
	errno = -err;
	return NULL;
}

void an_usyms_free(struct an_usyms *u)
{
	if (!u)
		return;
	an_procmaps_free(u->maps);
	free(u->res);
	for (size_t i = 0; i < u->njit; i++)
		free(u->jit[i].name);
	free(u->jit);
	an_symcache_free(u->own_cache);
	free(u);
}

/* Open path only if it is still the file mapped there (same inode): a path can have
 * been replaced since (a package upgrade) or name another file in this mount namespace. */
static int open_same_file(const char *path, uint64_t ino)
{
	struct stat sb;
	/* without blocking: whatever is at the path now may be a FIFO */
	int fd = an_open_input(AT_FDCWD, path, false);

	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_ino != ino) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The symbol table of a file mapping, from the cache or read into it; NULL when the
 * file cannot be read. */
static struct an_symtab *load_mapped_file(struct an_usyms *u, const struct an__map *m)
{
	struct an_symtab *st;
	int fd = -1;

	if (m->ino == 0)
		return NULL;
	st = cache_get(u->cache, m->dev, m->ino);
	if (st)
		return st;
	if (!m->deleted)
		fd = open_same_file(m->path, m->ino);
	if (fd < 0 && u->maps->pid > 0) {
		/* Deleted, replaced or elsewhere: the kernel still holds the mapped file. */
		char path[96];

		snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
			 (int)u->maps->pid, m->start, m->end);
		fd = open_same_file(path, m->ino);
	}
	if (fd < 0)
		return NULL;
	st = an__symtab_load_fd(fd);
	close(fd);
	if (st && cache_put(u->cache, m->dev, m->ino, st) != 0) {
		an_symtab_free(st);
		st = NULL;
	}
	return st;
}

static struct an_symtab *resolve(struct an_usyms *u, size_t i, size_t *vdso_size)
{
	const struct an__map *m = &u->maps->maps[i];
	struct map_sym *r = &u->res[i];

	*vdso_size = 0;
	if (strcmp(m->path, "[vdso]") == 0)
		return cache_vdso(u->cache, vdso_size);
	if (r->state == MAP_UNRESOLVED) {
		r->st = m->path[0] == '/' ? load_mapped_file(u, m) : NULL;
		r->state = r->st ? MAP_READ : MAP_UNREADABLE;
	}
	return r->st;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* libstdc++'s demangler (cxxabi.h's abi::__cxa_demangle), declared here for C. */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

/* Rust's legacy mangling escapes what an Itanium name cannot hold: $LT$ <, $GT$ >, $RF$ &,
 * $BP$ *, $C$ ',', $SP$ @, $uXX$ the character XX in hex, and '.' for ':' ("..": "::"). */
static void rust_unescape(char *s)
{
	static const struct {
		const char *esc;
		char c;
	} escs[] = { { "$LT$", '<' }, { "$GT$", '>' }, { "$RF$", '&' }, { "$BP$", '*' },
		     { "$C$", ',' },  { "$SP$", '@' }, { "$LP$", '(' }, { "$RP$", ')' } };
	char *w = s;

	for (const char *r = s; *r;) {
		size_t k = 0, n = sizeof(escs) / sizeof(escs[0]);
		unsigned x;

		for (; k < n && strncmp(r, escs[k].esc, strlen(escs[k].esc)); k++)
			;
		if (k < n) {
			*w++ = escs[k].c;
			r += strlen(escs[k].esc);
		} else if (r[0] == '$' && r[1] == 'u' && sscanf(r + 2, "%2x", &x) == 1 &&
			   r[4] == '$' && x >= 0x20 && x < 0x7f) {
			*w++ = (char)x;
			r += 5;
		} else if (r[0] == '.' && r[1] == '.') {
			*w++ = ':';
			*w++ = ':';
			r += 2;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

/* "ns::f(int, char) const" -> "ns::f": the parameter list that ends the name (and its
 * qualifiers), matched from its closing parenthesis, so that "(anonymous namespace)::f"
 * and "operator()" keep theirs. */
static void cut_parameters(char *d)
{
	static const char *const quals[] = { " const", " volatile", " &&", " &" };
	size_t n = strlen(d);
	int depth = 0;

	for (bool again = true; again;) {
		again = false;
		for (size_t k = 0; k < sizeof(quals) / sizeof(quals[0]); k++) {
			size_t q = strlen(quals[k]);

			if (n > q && !strcmp(d + n - q, quals[k])) {
				n -= q;
				d[n] = '\0';
				again = true;
			}
		}
	}
	if (!n || d[n - 1] != ')')
		return;
	for (size_t i = n; i-- > 0;) {
		depth += d[i] == ')' ? 1 : d[i] == '(' ? -1 : 0;
		if (!depth) {
			if (i > 0)
				d[i] = '\0';
			return;
		}
	}
}

void an_demangle(const char *name, char *buf, size_t len)
{
	const char *llvm = strstr(name, ".llvm.");
	char *d = NULL, *p, *cut = NULL;
	size_t n;
	int status = -1;

	/* LLVM's suffix on a function it made local and renamed in one unit of a link-time
	 * build ("...E.llvm.12345"): no demangler reads it, so the name goes without it */
	if (llvm && llvm[6] && strspn(llvm + 6, "0123456789") == strlen(llvm + 6) &&
	    (cut = strndup(name, (size_t)(llvm - name))))
		name = cut;
	/* Itanium C++ and Rust's legacy names start _Z; anything else is a C or Go name (or
	 * Rust v0, _R), which is kept */
	if (name[0] == '_' && name[1] == 'Z')
		d = __cxa_demangle(name, NULL, NULL, &status);
	if (!d || status != 0) {
		free(d);
		snprintf(buf, len, "%s", name);
		free(cut);
		return;
	}
	/* a Rust legacy name ends in its hash, "::h" and 16 hex digits */
	n = strlen(d);
	p = n > 19 ? d + n - 19 : NULL;
	if (p && !strncmp(p, "::h", 3) && strspn(p + 3, "0123456789abcdef") == 16) {
		*p = '\0';
		rust_unescape(d);
	} else {
		cut_parameters(d); /* C++: the function, not its parameter list */
	}
	snprintf(buf, len, "%s", d);
	free(d);
	free(cut);
}

/* The real uid of process pid, or -1. */
static long process_uid(pid_t pid)
{
	char path[64], line[256];
	long uid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "Uid:", 4)) {
			uid = strtol(line + 4, NULL, 10);
			break;
		}
	if (f)
		fclose(f);
	return uid;
}

static int jit_cmp(const void *pa, const void *pb)
{
	const struct jit_sym *a = pa, *b = pb;

	if (a->start != b->start)
		return (a->start > b->start) - (a->start < b->start);
	return (a->seq > b->seq) - (a->seq < b->seq);
}

/* One line of a perf map, "START SIZE NAME" with START and SIZE in hex (0x optional):
 * 0 and *sym filled (its name still to copy), or -EINVAL. */
static int jit_line(char *line, struct jit_sym *sym)
{
	char *p = line, *end;
	uint64_t size;

	errno = 0;
	sym->start = strtoull(p, &end, 16);
	if (errno || end == p || *end != ' ')
		return -EINVAL;
	p = end + 1;
	size = strtoull(p, &end, 16);
	if (errno || end == p || *end != ' ' || !size || sym->start + size < sym->start)
		return -EINVAL;
	sym->end = sym->start + size;
	sym->name = end + 1;
	sym->name[strcspn(sym->name, "\r\n")] = '\0';
	return *sym->name ? 0 : -EINVAL;
}

/* Read /tmp/perf-PID.map once. A missing, foreign or malformed map names nothing: the
 * addresses it would have named stay "[unknown]+0xADDR". */
static void jit_load(struct an_usyms *u)
{
	char path[64], *line = NULL;
	size_t cap = 0, lines = 0;
	struct stat st;
	long uid;
	FILE *f;
	int fd;

	u->jit_tried = true;
	if (!u->maps->pid)
		return;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)u->maps->pid);
	fd = an_open_input(AT_FDCWD, path, true);
	if (fd < 0)
		return;
	uid = process_uid(u->maps->pid);
	if (fstat(fd, &st) || (st.st_uid != 0 && st.st_uid != geteuid() &&
			       (uid < 0 || st.st_uid != (uid_t)uid))) {
		close(fd);
		return; /* not the process's own map, nor root's */
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return;
	}
	while (getline(&line, &cap, f) > 0 && lines++ < AN_JIT_MAX_SYMBOLS) {
		struct jit_sym sym, *v;

		if (jit_line(line, &sym))
			continue;
		if (u->njit % 1024 == 0) {
			v = realloc(u->jit, (u->njit + 1024) * sizeof(*v));
			if (!v)
				break;
			u->jit = v;
		}
		sym.name = strdup(sym.name);
		if (!sym.name)
			break;
		sym.seq = u->njit;
		u->jit[u->njit++] = sym;
	}
	free(line);
	fclose(f);
	/* the runtime writes a region again when it reuses it: among entries of one start
	 * the latest line sorts last, where the lookup looks first */
	qsort(u->jit, u->njit, sizeof(*u->jit), jit_cmp);
}

/* The JIT's name for addr, or NULL: the last entry starting at or below it that holds it. */
static const char *jit_name(struct an_usyms *u, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!u->jit_tried)
		jit_load(u);
	hi = u->njit;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->jit[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* entries may overlap: look back from the last start at or below addr */
	for (size_t k = lo; k-- > 0 && lo - k <= 64;)
		if (addr < u->jit[k].end)
			return u->jit[k].name;
	return NULL;
}

size_t an_usyms_frames(struct an_usyms *u, uint64_t addr, char *buf, size_t len,
		       char (*inlined)[AN_INLINE_NAME_LEN], size_t max)
{
	const char *raw[AN_INLINES_MAX];
	size_t n = 0;

	if (!buf || len == 0)
		return 0;
	ptrdiff_t i = u ? an__procmaps_find(u->maps, addr) : -1;
	if (i < 0 || u->maps->maps[i].path[0] == '\0') {
		/* No mapping, or an anonymous one: a JIT's code, named by its perf map, or no
		 * module to be relative to. */
		const char *jit = u ? jit_name(u, addr) : NULL;

		if (jit)
			snprintf(buf, len, "%s_[j]", jit);
		else
			snprintf(buf, len, "[unknown]+0x%" PRIx64, addr);
		return 0;
	}

	const struct an__map *m = &u->maps->maps[i];
	uint64_t off = addr - m->start + m->pgoff, vaddr;
	size_t vdso_size;
	struct an_symtab *st = resolve(u, (size_t)i, &vdso_size);

	/* Another process's vDSO is ours only if its mapping can hold our image. */
	if (st && vdso_size && (m->end - m->start < vdso_size || off >= vdso_size))
		st = NULL;
	if (st && an_symtab_offset_to_vaddr(st, off, &vaddr) == 0) {
		const char *name = an_symtab_lookup(st, vaddr, NULL);

		if (name)
			an_demangle(name, buf, len);
		else
			snprintf(buf, len, "%s+0x%" PRIx64, base_name(m->path), vaddr);
		/* the vDSO is read from memory, without its DWARF */
		if (inlined && !vdso_size)
			n = an__symtab_inlines(st, vaddr, raw,
					       max < AN_INLINES_MAX ? max : AN_INLINES_MAX);
		for (size_t k = 0; k < n; k++)
			an_demangle(raw[k], inlined[k], AN_INLINE_NAME_LEN);
		return n;
	}
	snprintf(buf, len, "%s+0x%" PRIx64, base_name(m->path), off);
	return 0;
}

void an_usyms_name(struct an_usyms *u, uint64_t addr, char *buf, size_t len)
{
	an_usyms_frames(u, addr, buf, len, NULL, 0);
}


void an_usyms_objects(struct an_usyms *u, void (*fn)(const char *path, const char *build_id,
						     void *ctx),
		      void *ctx)
{
	const struct an_symtab *last = NULL;

	for (size_t i = 0; u && i < u->maps->n; i++) {
		const struct map_sym *r = &u->res[i];

		/* a file's mappings are adjacent, all with the one table */
		if (r->state != MAP_READ || r->st == last)
			continue;
		last = r->st;
		fn(u->maps->maps[i].path, an_symtab_build_id(r->st), ctx);
	}
}

bool an_usyms_jit(struct an_usyms *u, uint64_t addr, char *buf, size_t len)
{
	ptrdiff_t i = u ? an__procmaps_find(u->maps, addr) : -1;
	const char *jit;

	/* a JIT's code is in an anonymous mapping, executable when sampled */
	if (!u || (i >= 0 && u->maps->maps[i].path[0] != '\0'))
		return false;
	jit = jit_name(u, addr);
	if (jit && buf && len)
		snprintf(buf, len, "%s_[j]", jit);
	return jit != NULL;
}

bool an_usyms_module(struct an_usyms *u, uint64_t addr, char *buf, size_t len)
{
	ptrdiff_t i = u ? an__procmaps_find(u->maps, addr) : -1;

	if (i < 0 || u->maps->maps[i].path[0] == '\0')
		return false;
	if (buf && len)
		snprintf(buf, len, "%s", base_name(u->maps->maps[i].path));
	return true;
}

/* A file built with frame pointers sets one up in nearly every function; below this
 * share it is taken to have been built without them. */
#define AN_FP_SHARE_MIN 0.5

static int range_cmp(const void *pa, const void *pb)
{
	const struct an_code_range *a = pa, *b = pb;

	return (a->start > b->start) - (a->start < b->start);
}

/* The root functions inside mapping i, in runtime addresses, appended to roots; those
 * past max are counted in *dropped. */
static size_t find_roots(struct an_usyms *u, size_t i, struct an_symtab *st,
			 const char *const *names, struct an_code_range *roots, size_t n,
			 size_t max, size_t *dropped)
{
	const struct an__map *m = &u->maps->maps[i];

	for (size_t k = 0; names && names[k]; k++) {
		uint64_t vaddr, size, off;

		if (an_symtab_find(st, names[k], &vaddr, &size) || !size ||
		    an_symtab_vaddr_to_offset(st, vaddr, &off) || off < m->pgoff ||
		    off - m->pgoff >= m->end - m->start)
			continue;
		if (n == max) {
			(*dropped)++;
			continue;
		}
		roots[n++] = (struct an_code_range){
			.start = m->start + (off - m->pgoff),
			.end = m->start + (off - m->pgoff) + size,
			.kind = AN_CODE_ROOT,
		};
	}
	return n;
}

/* The part of mapping m that holds st's PLT stubs, as a range without frame pointers:
 * 1, or 0 where the mapping holds none of them. */
static size_t plt_range(const struct an__map *m, struct an_symtab *st, struct an_code_range *out)
{
	uint64_t vaddr, size, off, lo, hi;

	if (an_symtab_plt(st, &vaddr, &size) || an_symtab_vaddr_to_offset(st, vaddr, &off))
		return 0;
	lo = off > m->pgoff ? m->start + (off - m->pgoff) : m->start;
	hi = off + size > m->pgoff ? m->start + (off + size - m->pgoff) : m->start;
	if (hi > m->end)
		hi = m->end;
	if (lo >= hi)
		return 0;
	*out = (struct an_code_range){ lo, hi, AN_CODE_NOFP };
	return 1;
}

int an_usyms_code_ranges(struct an_usyms *u, const char *const *roots,
			 struct an_code_range *out, size_t max, size_t *dropped)
{
	struct an_code_range rbuf[64], *nofp;
	size_t nroots = 0, nnofp = 0, n = 0;

	*dropped = 0;
	if (!u)
		return -EINVAL;
	nofp = calloc(u->maps->n ? 2 * u->maps->n : 1, sizeof(*nofp)); /* an object or its PLT */
	if (!nofp)
		return -ENOMEM;
	for (size_t i = 0; i < u->maps->n; i++) {
		const struct an__map *m = &u->maps->maps[i];
		size_t vdso_size;
		struct an_symtab *st = resolve(u, i, &vdso_size);

		if (!st || (vdso_size && m->end - m->start < vdso_size))
			continue;
		nroots = find_roots(u, i, st, roots, rbuf, nroots, sizeof(rbuf) / sizeof(rbuf[0]),
				    dropped);
		/* unknown (nothing could be read) counts as built with them: a walk through
		 * it is no worse off for being trusted */
		if (an_symtab_frame_pointer_share(st) < AN_FP_SHARE_MIN)
			nofp[nnofp++] = (struct an_code_range){ m->start, m->end, AN_CODE_NOFP };
		else
			nnofp += plt_range(m, st, &nofp[nnofp]);
	}
	qsort(rbuf, nroots, sizeof(*rbuf), range_cmp);
	/* one range for a root named twice (or two roots that overlap): the table the
	 * probe searches must be disjoint */
	if (nroots) {
		size_t k = 0;

		for (size_t r = 1; r < nroots; r++) {
			if (rbuf[r].start >= rbuf[k].end)
				rbuf[++k] = rbuf[r];
			else if (rbuf[r].end > rbuf[k].end)
				rbuf[k].end = rbuf[r].end;
		}
		nroots = k + 1;
	}
	/* roots first, so that a full table drops pieces of objects, never a root */
	for (size_t r = 0; r < nroots; r++) {
		if (n < max)
			out[n++] = rbuf[r];
		else
			(*dropped)++;
	}
	/* each object without frame pointers, less the roots inside it */
	for (size_t i = 0; i < nnofp; i++) {
		uint64_t cur = nofp[i].start;

		for (size_t r = 0; r <= nroots; r++) {
			uint64_t upto = r < nroots ? rbuf[r].start : nofp[i].end;

			if (r < nroots && (rbuf[r].end <= cur || rbuf[r].start >= nofp[i].end))
				continue;
			if (upto > nofp[i].end)
				upto = nofp[i].end;
			if (upto > cur) {
				if (n < max)
					out[n++] = (struct an_code_range){ cur, upto, AN_CODE_NOFP };
				else
					(*dropped)++;
			}
			if (r < nroots && rbuf[r].end > cur)
				cur = rbuf[r].end;
		}
	}
	free(nofp);
	qsort(out, n, sizeof(*out), range_cmp);
	return (int)n;
}
