/*
 * Categories of stacks another tool recorded, by schedlab's own stack rules, for `make
 * bench` (bench/profile.sh): folded stacks on stdin ("root;...;leaf COUNT", kernel frames
 * suffixed "_[k]", as perf script's output folds), each classified as `schedlab profile`
 * classifies a sample of a program that runs no phase word of ours (the first frame from
 * the leaf, kernel frames first, that a rule names; "other" where none does), with the
 * built-in rules or those of RULES. One line a category on stdout: "NAME SAMPLES".
 *
 *   categories [RULES] < folded
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"

#define MAX_FRAMES 512

int main(int argc, char **argv)
{
	static char line[1 << 20];
	unsigned long long counts[AN_CAT_COUNT] = { 0 };
	const char *leaf[MAX_FRAMES];
	struct an_rules *rules;
	char err[512];

	rules = argc > 1 ? an_rules_load(argv[1], err, sizeof(err))
			 : an_rules_builtin(err, sizeof(err));
	if (!rules) {
		fprintf(stderr, "categories: %s\n", err);
		return 2;
	}
	while (fgets(line, sizeof(line), stdin)) {
		char *sp = strrchr(line, ' '), *save = NULL, *f;
		char *frames[MAX_FRAMES];
		size_t n = 0;
		int cat;

		if (!sp)
			continue;
		*sp = '\0';
		for (f = strtok_r(line, ";", &save); f && n < MAX_FRAMES; f = strtok_r(NULL, ";", &save))
			frames[n++] = f;
		for (size_t i = 0; i < n; i++)
			leaf[i] = frames[n - 1 - i];
		cat = an_rules_classify(rules, leaf, n, false);
		counts[cat < 0 ? AN_CAT_OTHER : (unsigned)cat] += strtoull(sp + 1, NULL, 10);
	}
	for (unsigned c = 0; c < AN_CAT_COUNT; c++)
		printf("%s %llu\n", an_category_name(c), counts[c]);
	an_rules_free(rules);
	return 0;
}
