/*
 * The dispatcher's conventions, run as a user runs them: --version prints one line
 * from the VERSION file, `help` and `help COMMAND` print what --help prints, -h works
 * wherever --help does (and is left alone as an option's argument), and help for no
 * such command is one line on stderr with exit status 2.
 */
#include "tests/cli/cli_run.h"

TestSuite(main_cli, .init = setup, .fini = teardown);

static const char *const commands[] = { "run", "list", "flame", "diagnose" };

static int run1(const char *a0)
{
	const char *argv[] = { a0, NULL };

	return run_schedlab(argv);
}

static int run2(const char *a0, const char *a1)
{
	const char *argv[] = { a0, a1, NULL };

	return run_schedlab(argv);
}

/* stdout of the last run, kept: the next run overwrites out_text */
static char *kept(void)
{
	char *copy = strdup(out_text);

	cr_assert_not_null(copy);
	return copy;
}

/* ---- version ------------------------------------------------------------------------------ */

static void expect_version_line(void)
{
	char version[64] = "", want[128];
	FILE *fp = fopen("VERSION", "r");
	size_t len = strlen(out_text);

	cr_assert_not_null(fp);
	cr_assert_eq(fscanf(fp, "%63s", version), 1);
	fclose(fp);
	snprintf(want, sizeof(want), "schedlab %s", version);
	cr_expect(!strncmp(out_text, want, strlen(want)), "'%s' does not start '%s'", out_text,
		  want);
	cr_expect(out_text[strlen(want)] == '\n' || out_text[strlen(want)] == ' ', "%s", out_text);
	cr_expect(len > 0 && out_text[len - 1] == '\n' && !memchr(out_text, '\n', len - 1),
		  "not one line: %s", out_text);
	cr_expect_str_eq(err_text, "");
}

Test(main_cli, version_is_one_line_from_the_version_file)
{
	char *first;

	cr_assert_eq(run1("--version"), 0, "stderr: %s", err_text);
	expect_version_line();
	first = kept();
	cr_assert_eq(run1("-V"), 0, "stderr: %s", err_text);
	cr_expect_str_eq(out_text, first);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		cr_assert_eq(run2(commands[i], "--version"), 0, "%s: %s", commands[i], err_text);
		cr_expect_str_eq(out_text, first, "%s --version", commands[i]);
	}
	free(first);
}

/* ---- help --------------------------------------------------------------------------------- */

Test(main_cli, help_and_h_print_the_overview)
{
	const char *spellings[] = { "help", "-h", "-?" };
	char *want;

	cr_assert_eq(run1("--help"), 0);
	cr_expect_not_null(strstr(out_text, "Commands:"), "%s", out_text);
	cr_expect_not_null(strstr(out_text, "schedlab help COMMAND"), "%s", out_text);
	want = kept();
	for (size_t i = 0; i < sizeof(spellings) / sizeof(spellings[0]); i++) {
		cr_assert_eq(run1(spellings[i]), 0, "%s: %s", spellings[i], err_text);
		cr_expect_str_eq(out_text, want, "%s", spellings[i]);
		cr_expect_str_eq(err_text, "");
	}
	free(want);
}

Test(main_cli, help_command_is_the_commands_help)
{
	char *want, usage[64];

	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		cr_assert_eq(run2(commands[i], "--help"), 0, "%s: %s", commands[i], err_text);
		snprintf(usage, sizeof(usage), "Usage: schedlab %s ", commands[i]);
		cr_expect(!strncmp(out_text, usage, strlen(usage)), "%s", out_text);
		want = kept();
		cr_assert_eq(run2("help", commands[i]), 0, "help %s: %s", commands[i], err_text);
		cr_expect_str_eq(out_text, want, "help %s", commands[i]);
		cr_assert_eq(run2(commands[i], "-h"), 0, "%s -h: %s", commands[i], err_text);
		cr_expect_str_eq(out_text, want, "%s -h", commands[i]);
		cr_expect_str_eq(err_text, "");
		free(want);
	}
}

Test(main_cli, h_lists_itself_in_the_commands_help)
{
	cr_assert_eq(run2("list", "--help"), 0);
	cr_expect_not_null(strstr(out_text, "  -h "), "%s", out_text);
}

Test(main_cli, h_as_an_options_argument_is_the_argument)
{
	const char *argv[] = { "flame", in_dir("none.folded"), "--title", "-h", NULL };

	/* the title is "-h"; what fails is the missing input, not a help request */
	cr_expect_eq(run_schedlab(argv), 2);
	cr_expect_str_eq(out_text, "");
	expect_one_error_line("none.folded");
}

Test(main_cli, help_for_no_such_command_is_bad_input)
{
	cr_expect_eq(run2("help", "nosuch"), 2);
	cr_expect_str_eq(out_text, "");
	expect_one_error_line("'nosuch'");
	cr_expect_not_null(strstr(err_text, "run, list, flame, compare, diagnose, sweep, profile and suite"), "%s", err_text);
	/* the internal commands are not offered */
	cr_expect_eq(run2("help", "__fork"), 2);
	expect_one_error_line("'__fork'");
}

Test(main_cli, help_takes_one_command)
{
	const char *argv[] = { "help", "run", "list", NULL };

	cr_expect_eq(run_schedlab(argv), 2);
	cr_expect_str_eq(out_text, "");
	expect_one_error_line("'list'");
}

Test(main_cli, unknown_command_names_the_commands)
{
	cr_expect_eq(run1("nosuch"), 2);
	expect_one_error_line("'nosuch'");
	cr_expect_not_null(strstr(err_text, "run, list, flame, compare, diagnose, sweep, profile and suite"), "%s", err_text);
}
