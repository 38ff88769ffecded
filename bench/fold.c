/*
 * Folding and symbolizing a recorded profile, for `make bench` (bench/analysis.sh): the
 * samples of a `perf record -g -p PID` of one fork, as `perf script -F tid,ip,dso`
 * prints them, turned into folded stacks with the analysis library the probe's samples
 * go through: identical stacks counted together (as the probe's maps do in the kernel),
 * each distinct one named frame by frame (an_usyms_name, an_ksyms_lookup), folded.
 *
 *   fold MAPS PID OUT.folded < perf-script-output
 *
 * MAPS is /proc/PID/maps as read while the fork lived. perf prints a user address as an
 * offset into its mapping's file; it is turned back into the address the process ran at
 * (the mapping holding that file offset), as the probe would have read it, before the
 * clock starts. Timed: reading the maps and kallsyms, counting, naming, folding; not
 * timed: parsing perf's text, writing OUT. One line on stdout:
 *   samples N stacks D frames F ms T
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/analysis.h"

#define MAX_FRAMES 256
#define NAME_LEN   256
#define KERNEL_MIN 0xffff800000000000ull

struct mapping {
	uint64_t start, end, off;
	char path[256];
};

struct stack {
	uint64_t hash;
	uint32_t first, n; /* frames[first .. first + n), leaf first */
	uint64_t count;
};

static struct mapping *maps;
static size_t nmaps;
static uint64_t *frames;
static size_t nframes, frames_cap;
static struct stack *stacks;
static size_t nstacks, stacks_cap;

static void die(const char *what)
{
	fprintf(stderr, "fold: %s: %s\n", what, strerror(errno));
	exit(1);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);

	if (!f || !buf)
		die(path);
	for (size_t n; (n = fread(buf + len, 1, cap - len - 1, f)) > 0;) {
		len += n;
		if (cap - len < 2 && !(buf = realloc(buf, cap *= 2)))
			die(path);
	}
	buf[len] = '\0';
	fclose(f);
	return buf;
}

static void read_maps(const char *text)
{
	static size_t cap;

	for (const char *line = text; *line;) {
		const char *nl = strchr(line, '\n');
		unsigned long long start, end, off;
		char perms[8], path[256] = "";

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %255s", &start, &end, perms, &off,
			   path) >= 4 && perms[2] == 'x' &&
		    (path[0] == '/' || !strcmp(path, "[vdso]"))) {
			if (nmaps == cap && !(maps = realloc(maps, (cap = cap ? 2 * cap : 64) *
								     sizeof(*maps))))
				die("maps");
			maps[nmaps++] = (struct mapping){ start, end, off, "" };
			snprintf(maps[nmaps - 1].path, sizeof(maps[0].path), "%s", path);
		}
		line = nl ? nl + 1 : line + strlen(line);
	}
}

/* perf's offset into dso back to the address the process ran it at. */
static uint64_t absolute(uint64_t rel, const char *dso)
{
	for (size_t i = 0; i < nmaps; i++)
		if (!strcmp(maps[i].path, dso) && rel >= maps[i].off &&
		    rel < maps[i].off + (maps[i].end - maps[i].start))
			return rel - maps[i].off + maps[i].start;
	return rel; /* [unknown], [vdso] and the kernel: as printed */
}

static void push_frame(uint64_t addr)
{
	if (nframes == frames_cap &&
	    !(frames = realloc(frames, (frames_cap = frames_cap ? 2 * frames_cap : 1 << 20) *
					       sizeof(*frames))))
		die("frames");
	frames[nframes++] = addr;
}

/* The samples, as perf script prints them: the tid alone on a line (right-aligned in five
 * columns), then a line per frame "\t ADDR (DSO)" leaf first, then an empty line. */
static void read_samples(FILE *in)
{
	char line[1024];
	struct stack cur = { 0 };
	bool open = false;

	while (fgets(line, sizeof(line), in)) {
		unsigned long long addr;
		char dso[512];

		if (line[0] != '\t') { /* "  TID": a sample begins (or ends, when empty) */
			if (open && cur.n) {
				if (nstacks == stacks_cap &&
				    !(stacks = realloc(stacks, (stacks_cap = stacks_cap ? 2 * stacks_cap
									  : 1 << 16) *
								       sizeof(*stacks))))
					die("stacks");
				stacks[nstacks++] = cur;
			}
			open = line[0] != '\n';
			cur = (struct stack){ .first = (uint32_t)nframes, .count = 1 };
			continue;
		}
		if (!open || cur.n == MAX_FRAMES ||
		    sscanf(line, " %llx (%511[^)])", &addr, dso) != 2)
			continue;
		push_frame(absolute(addr, dso));
		cur.n++;
	}
	if (open && cur.n) {
		if (nstacks == stacks_cap && !(stacks = realloc(stacks, ++stacks_cap * sizeof(*stacks))))
			die("stacks");
		stacks[nstacks++] = cur;
	}
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static bool same(const struct stack *a, const struct stack *b)
{
	return a->hash == b->hash && a->n == b->n &&
	       !memcmp(&frames[a->first], &frames[b->first], a->n * sizeof(*frames));
}

int main(int argc, char **argv)
{
	static char names[MAX_FRAMES][NAME_LEN];
	const char *ptrs[MAX_FRAMES];
	struct stack **slots;
	size_t nslots = 1, distinct = 0;
	uint64_t samples, named = 0;
	struct an_procmaps *pm;
	struct an_symcache *cache;
	struct an_usyms *u;
	struct an_ksyms *k;
	struct an_folded *f;
	char *maps_text;
	double t0, t1;
	FILE *out;

	if (argc != 4) {
		fprintf(stderr, "usage: fold MAPS PID OUT.folded < perf-script-output\n");
		return 2;
	}
	maps_text = slurp(argv[1]);
	read_maps(maps_text);
	read_samples(stdin);
	samples = nstacks;
	while (nslots < 2 * nstacks)
		nslots *= 2;

	t0 = now_ms();
	pm = an_procmaps_parse(maps_text, (pid_t)atoi(argv[2]));
	cache = an_symcache_new();
	u = pm && cache ? an_usyms_new(cache, pm) : NULL;
	k = an_ksyms_load(NULL);
	f = an_folded_new();
	slots = calloc(nslots, sizeof(*slots));
	if (!u || !f || !slots)
		die("setup");
	/* count identical stacks together, as the probe's stack and count maps do */
	for (size_t i = 0; i < nstacks; i++) {
		struct stack *s = &stacks[i];
		size_t h;

		s->hash = an_hash((const char *)&frames[s->first], s->n * sizeof(*frames));
		for (h = s->hash & (nslots - 1); slots[h] && !same(slots[h], s); h = (h + 1) & (nslots - 1))
			;
		if (slots[h]) {
			slots[h]->count++;
			s->count = 0;
		} else {
			slots[h] = s;
			distinct++;
		}
	}
	/* name each distinct stack, root first: user frames, then the kernel's with _[k] */
	for (size_t i = 0; i < nstacks; i++) {
		const struct stack *s = &stacks[i];
		size_t n = 0, nk = 0;

		if (!s->count)
			continue;
		for (uint32_t j = 0; j < s->n && frames[s->first + j] >= KERNEL_MIN; j++)
			nk++;
		for (uint32_t j = s->n; j-- > nk;) {
			uint64_t addr = frames[s->first + j];

			/* a return address, but the leaf's pc, names the call's caller */
			an_usyms_name(u, j == nk && !nk ? addr : addr - 1, names[n], NAME_LEN);
			ptrs[n] = names[n];
			n++;
		}
		for (size_t j = nk; j-- > 0;) {
			uint64_t off, addr = frames[s->first + j];
			const char *sym = k ? an_ksyms_lookup(k, addr, &off) : NULL;

			if (sym)
				snprintf(names[n], NAME_LEN, "%s_[k]", sym);
			else
				snprintf(names[n], NAME_LEN, "[k]+0x%" PRIx64 "_[k]", addr);
			ptrs[n] = names[n];
			n++;
		}
		named += n;
		if (n && an_folded_add(f, ptrs, n, s->count))
			die("fold");
	}
	an_folded_lines(f, &distinct); /* sorted, as written */
	t1 = now_ms();

	out = fopen(argv[3], "w");
	if (!out || an_folded_write(f, out) || fclose(out))
		die(argv[3]);
	printf("samples %" PRIu64 " stacks %zu frames %" PRIu64 " ms %.1f total %" PRIu64 "\n",
	       samples, distinct, named, t1 - t0, an_folded_total(f));
	an_folded_free(f);
	an_usyms_free(u);
	an_symcache_free(cache);
	an_ksyms_free(k);
	free(slots);
	free(maps_text);
	return 0;
}
