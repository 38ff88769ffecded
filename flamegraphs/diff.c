/*
 * diff.c — what a differential flame graph needs beyond an ordinary one: the baseline
 * profile's frames as a tree, to find each drawn frame's share of the baseline by its
 * path from the root, and the red-white-blue scale that colours the difference.
 *
 * The tree is a table of nodes keyed by (parent, name) in one open-addressing hash, so
 * a lookup is one probe sequence whatever a node's fan-out; names are not copied but
 * point into the profile's own lines.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraphs/internal.h"

struct node {
	const char *name; /* into the profile's lines, not NUL-terminated */
	size_t len;
	long parent;      /* -1 for the root */
	uint64_t count;   /* samples of every stack through this frame */
};

struct fg__tree {
	struct node *v;
	size_t n, cap;
	long *slots;      /* node indexes; -1: empty. A power of two of them */
	size_t nslots;
};

static uint64_t key_hash(long parent, const char *name, size_t len)
{
	/* the parent is mixed in by a multiply with the golden ratio, as Fibonacci hashing
	 * does, so siblings and cousins of one name spread apart */
	return an_hash(name, len) ^ ((uint64_t)(parent + 1) * 0x9e3779b97f4a7c15ull);
}

/* The slot holding (parent, name), or the empty one where it would go. */
static size_t find_slot(const struct fg__tree *t, long parent, const char *name, size_t len)
{
	size_t mask = t->nslots - 1, i = key_hash(parent, name, len) & mask;

	for (;; i = (i + 1) & mask) {
		long k = t->slots[i];

		if (k < 0)
			return i;
		if (t->v[k].parent == parent && t->v[k].len == len &&
		    !memcmp(t->v[k].name, name, len))
			return i;
	}
}

static int grow_slots(struct fg__tree *t)
{
	size_t nslots = t->nslots ? t->nslots * 2 : 1024;
	long *slots = malloc(nslots * sizeof(*slots)), *old = t->slots;

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < nslots; i++)
		slots[i] = -1;
	t->slots = slots;
	t->nslots = nslots;
	for (size_t k = 1; k < t->n; k++) /* the root is in no slot */
		t->slots[find_slot(t, t->v[k].parent, t->v[k].name, t->v[k].len)] = (long)k;
	free(old);
	return 0;
}

/* The child of parent called name, made when it is not there yet. -1: out of memory. */
static long child_or_new(struct fg__tree *t, long parent, const char *name, size_t len)
{
	size_t slot;

	if ((t->n + 1) * 2 > t->nslots && grow_slots(t))
		return -1;
	slot = find_slot(t, parent, name, len);
	if (t->slots[slot] >= 0)
		return t->slots[slot];
	if (t->n == t->cap) {
		size_t cap = t->cap * 2;
		struct node *v = reallocarray(t->v, cap, sizeof(*v));

		if (!v)
			return -1;
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n] = (struct node){ name, len, parent, 0 };
	t->slots[slot] = (long)t->n;
	return (long)t->n++;
}

struct fg__tree *fg__tree_new(const struct an_folded *f)
{
	const struct an_folded_line *lines;
	struct fg__tree *t;
	size_t n;

	if (!f) {
		errno = EINVAL;
		return NULL;
	}
	lines = an_folded_lines(f, &n);
	if (!lines && n)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		goto out_nomem;
	t->cap = 256;
	t->v = malloc(t->cap * sizeof(*t->v));
	if (!t->v || grow_slots(t))
		goto out_nomem;
	t->v[0] = (struct node){ "all", 3, -1, an_folded_total(f) };
	t->n = 1;
	for (size_t i = 0; i < n; i++) {
		const char *p = lines[i].stack;
		long node = 0;

		for (;;) {
			const char *semi = strchr(p, ';');
			size_t len = semi ? (size_t)(semi - p) : strlen(p);

			node = child_or_new(t, node, p, len);
			if (node < 0)
				goto out_nomem;
			t->v[node].count += lines[i].count;
			if (!semi)
				break;
			p = semi + 1;
		}
	}
	return t;
out_nomem:
	fg__tree_free(t);
	errno = ENOMEM;
	return NULL;
}

void fg__tree_free(struct fg__tree *t)
{
	if (!t)
		return;
	free(t->v);
	free(t->slots);
	free(t);
}

long fg__tree_child(const struct fg__tree *t, long node, const char *name, size_t len)
{
	if (node < 0)
		return -1;
	return t->slots[find_slot(t, node, name, len)];
}

uint64_t fg__tree_count(const struct fg__tree *t, long node)
{
	return node < 0 ? 0 : t->v[node].count;
}

uint64_t fg__tree_total(const struct fg__tree *t)
{
	return t->v[0].count;
}

/* flamegraph.pl's scale: the other two channels at 210 for the least change, falling
 * to 0 at the largest, so that even a small change is told from white. */
void fg__diff_color(FILE *out, double delta, double max)
{
	double rel = max > 0 ? fmin(fabs(delta) / max, 1) : 0;
	unsigned fade = (unsigned)(210 * (1 - rel));

	if (delta > 0)
		fprintf(out, "rgb(255,%u,%u)", fade, fade);
	else if (delta < 0)
		fprintf(out, "rgb(%u,%u,255)", fade, fade);
	else
		fputs("rgb(255,255,255)", out);
}
