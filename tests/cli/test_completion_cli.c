/*
 * The bash completion (completions/schedlab.bash), sourced into bash as bash-completion
 * would and asked as the shell asks: the commands, each command's own options, the
 * workloads and presets from `schedlab list`, and folders for -o.
 */
#include "tests/cli/cli_run.h"

/* What completing `schedlab LINE` offers, one word a line, into out_text. */
static void complete_line(const char *line)
{
	char script[2048], bin[512];
	const char *args[] = { "-c", script, NULL };

	snprintf(bin, sizeof(bin), "%s/schedlab", schedlab_build());
	snprintf(script, sizeof(script),
		 "source completions/schedlab.bash || exit 9; read -ra COMP_WORDS <<< '%s %s'; "
		 "case '%s' in '' | *' ') COMP_WORDS+=(''); esac; "
		 "COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _schedlab; printf '%%s\\n' \"${COMPREPLY[@]}\"",
		 bin, line, line);
	cr_assert_eq(run_program("bash", args), 0, "%s", err_text);
}

/* Whether word is one of the lines of out_text. */
static void expect_word(const char *word)
{
	char needle[128];
	size_t n = strlen(word);

	snprintf(needle, sizeof(needle), "\n%s\n", word);
	cr_expect((!strncmp(out_text, word, n) && out_text[n] == '\n') || strstr(out_text, needle),
		  "no %s among: %s", word, out_text);
}

TestSuite(completion, .init = setup, .fini = teardown);

Test(completion, commands_options_workloads_and_presets)
{
	complete_line("pro");
	cr_expect_str_eq(out_text, "profile\n");
	complete_line("run --qu");
	cr_expect_str_eq(out_text, "--quick\n");
	complete_line("run spawn");
	cr_expect_str_eq(out_text, "spawn-join\n");
	complete_line("run spawn-join --preset kyo-");
	cr_expect_str_eq(out_text, "kyo-flush\nkyo-tuned\n");
	/* an option the help's prose names but the command does not take is not offered */
	complete_line("list --pre");
	cr_expect_str_eq(out_text, "--presets\n");
	complete_line("help swe");
	cr_expect_str_eq(out_text, "sweep\n");
	/* every command the binary lists */
	complete_line("");
	expect_word("run");
	expect_word("suite");
	expect_word("help");
}
