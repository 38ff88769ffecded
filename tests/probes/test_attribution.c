/*
 * Categories on a thread that is not the runtime's, from a real profile: the profile
 * the harness keeps (harness/profile.c) around tests/helpers/busy in its alloc mode,
 * whose thread has no phase word and spends its time in glibc's malloc and free and in
 * a spin of its own. Every sample must be attributed by the stack rules, not the phase
 * word; the allocator's samples must be "allocation" and the spin's "other"; and each
 * folded line's root must be what the built-in rules give its own frames.
 */
#include <criterion/criterion.h>

#include "analysis/analysis.h"
#include "tests/probes/windows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TestSuite(attribution, .fini = reap_kids, .timeout = 120);

/* Both kinds of sample plentiful. */
static bool enough_of_both(const struct hx_profile *p)
{
	return p->attribution.by_category[AN_CAT_ALLOC] >= 100 &&
	       p->attribution.by_category[AN_CAT_OTHER] >= 100;
}

static void both_seen(const struct hx_profile *p, char *buf, size_t len)
{
	snprintf(buf, len, "%llu allocation and %llu other samples",
		 (unsigned long long)p->attribution.by_category[AN_CAT_ALLOC],
		 (unsigned long long)p->attribution.by_category[AN_CAT_OTHER]);
}

/* The category the rules give one folded line's own frames, read leaf first: kernel
 * frames (after the "-") from the last, then user frames back to the comm; the probe's
 * own markers ("[lost: ...]", "[truncated]") are no frames. */
static int rules_category(const struct an_rules *r, const char *stack, char *root, size_t len)
{
	char *copy = strdup(stack), *save = NULL, *frames[512], *leaf[512];
	size_t n = 0, m = 0, dash;
	int c;

	cr_assert_not_null(copy);
	for (char *f = strtok_r(copy, ";", &save); f && n < 512; f = strtok_r(NULL, ";", &save))
		frames[n++] = f;
	cr_assert_geq(n, 2, "no category and comm: %s", stack);
	snprintf(root, len, "%s", frames[0]);
	for (dash = 2; dash < n && strcmp(frames[dash], "-"); dash++)
		;
	for (size_t i = n; i-- > dash + 1;)
		leaf[m++] = frames[i];
	for (size_t i = dash; i-- > 2;)
		if (frames[i][0] != '[' || !strncmp(frames[i], "[unknown", 8))
			leaf[m++] = frames[i];
	c = an_rules_classify(r, (const char *const *)leaf, m, false);
	free(copy);
	return c < 0 ? AN_CAT_OTHER : c;
}

Test(attribution, a_thread_without_a_phase_word_gets_the_rules_categories)
{
	struct probe_oncpu_opts o = { .freq = 999, .callgraph = PROBE_CG_AUTO };
	struct hx_profile p;
	const struct an_attribution *a = &p.attribution;
	const struct an_folded_line *lines;
	struct an_rules *rules;
	char err[256], root[64], want[64];
	uint64_t sum = 0, alloc_lines = 0;
	size_t n;

	/* windows until both kinds of sample are plentiful */
	profile_busy(&p, &o, "alloc", "busy-alloc", 250, enough_of_both, both_seen);

	cr_log_info("allocation %llu, other %llu, kernel %llu of %llu samples",
		    (unsigned long long)a->by_category[AN_CAT_ALLOC],
		    (unsigned long long)a->by_category[AN_CAT_OTHER],
		    (unsigned long long)a->by_category[AN_CAT_KERNEL],
		    (unsigned long long)a->by_rules);
	/* every sample by the rules, none by a phase word; nothing named is "other" */
	cr_expect_eq(a->by_phase, 0, "%llu samples attributed by a phase word",
		     (unsigned long long)a->by_phase);
	cr_expect_eq(p.agreement.samples + p.agreement.no_stack, 0);
	for (unsigned c = 0; c < AN_CAT_COUNT; c++)
		sum += a->by_category[c];
	cr_expect_eq(a->by_rules, sum);
	cr_expect_eq(sum, an_folded_total(p.folded));
	cr_expect_eq(a->no_rule, a->by_category[AN_CAT_OTHER]);
	/* the phases a runtime thread would have are not guessed for this one */
	cr_expect_eq(a->by_category[AN_CAT_WORK], 0);

	/* each line's root is what the rules make of its own frames, and the allocator's
	 * lines hold an allocator frame */
	rules = an_rules_builtin(err, sizeof(err));
	cr_assert_not_null(rules, "%s", err);
	lines = an_folded_lines(p.folded, &n);
	for (size_t i = 0; i < n; i++) {
		int c = rules_category(rules, lines[i].stack, root, sizeof(root));

		snprintf(want, sizeof(want), "[%s]", an_category_name((unsigned)c));
		cr_expect_str_eq(root, want, "%s", lines[i].stack);
		if (strcmp(root, "[allocation]"))
			continue;
		alloc_lines++;
		cr_expect(strstr(lines[i].stack, ";malloc") || strstr(lines[i].stack, ";free") ||
				  strstr(lines[i].stack, ";_int_") ||
				  strstr(lines[i].stack, ";cfree") ||
				  strstr(lines[i].stack, ";sysmalloc"),
			  "allocation without an allocator frame: %s", lines[i].stack);
		cr_expect(strstr(lines[i].stack, "[allocation];busy-alloc;"), "%s",
			  lines[i].stack);
	}
	cr_expect_gt(alloc_lines, 0);
	an_rules_free(rules);
	hx_profile_close(&p);
}
