/*
 * `schedlab flame`, run as a user runs it ($SCHEDLAB_BUILD/schedlab, "build" by
 * default, from the repository root): good input renders what the library renders,
 * bad input is one line on stderr with exit status 2, and an error never leaves an
 * output file (or a temporary one) behind.
 */
#include "flamegraphs/flamegraph.h"
#include "tests/cli/cli_run.h"

#include <errno.h>
#include <sys/sysmacros.h>

#define DATA_DIR "tests/flamegraphs/data"

TestSuite(flame_cli, .init = setup, .fini = teardown);

/* Run `schedlab flame ARGS...`. */
static int run_flame(const char *const *args)
{
	const char *argv[32] = { "flame" };
	size_t n = 1;

	for (size_t i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	return run_schedlab(argv);
}

static const char good[] = "main;a;b 5\nmain;a 3\nmain;c 2\n";

/* ---- good input ---------------------------------------------------------------------------- */

Test(flame_cli, renders_what_the_golden_file_holds)
{
	const char *out = in_dir("simple.svg");
	const char *args[] = { DATA_DIR "/simple.folded", "-o", out, "--title", "simple", NULL };
	char *want, *got;
	size_t want_len, got_len;

	cr_assert_eq(run_flame(args), 0, "stderr: %s", err_text);
	cr_expect_str_eq(err_text, "");
	want = slurp(DATA_DIR "/simple.svg", &want_len);
	got = slurp(out, &got_len);
	cr_assert_not_null(want);
	cr_assert_not_null(got);
	cr_expect(want_len == got_len && !memcmp(want, got, got_len));
	cr_expect_eq(entries(), 1, "a temporary file was left behind");
	free(want);
	free(got);
}

Test(flame_cli, default_output_replaces_the_folded_extension)
{
	const char *args1[] = { in_dir("p.folded"), NULL };
	const char *args2[] = { in_dir("q.txt"), NULL };
	struct stat st;

	write_file(in_dir("p.folded"), good);
	write_file(in_dir("q.txt"), good);
	cr_assert_eq(run_flame(args1), 0, "stderr: %s", err_text);
	cr_expect_eq(stat(in_dir("p.svg"), &st), 0);
	cr_expect_not_null(strstr(out_text, "p.svg"));
	cr_assert_eq(run_flame(args2), 0, "stderr: %s", err_text);
	cr_expect_eq(stat(in_dir("q.txt.svg"), &st), 0);
	cr_expect_eq(entries(), 4);
}

Test(flame_cli, options_reach_the_svg)
{
	const char *out = in_dir("o.svg");
	const char *args[] = { in_dir("p.folded"), "-o", out, "--title", "T <1>", "--subtitle",
			       "sub & more", "--width", "800", "--minwidth", "2.5", "--countname",
			       "us", NULL };
	char *svg;

	write_file(in_dir("p.folded"), good);
	cr_assert_eq(run_flame(args), 0, "stderr: %s", err_text);
	svg = slurp(out, NULL);
	cr_assert_not_null(svg);
	cr_expect_not_null(strstr(svg, "width=\"800\""));
	cr_expect_not_null(strstr(svg, ">T &lt;1&gt;</text>"));
	cr_expect_not_null(strstr(svg, ">sub &amp; more</text>"));
	cr_expect_not_null(strstr(svg, "<title>b (5 us, 50.00%)</title>"));
	free(svg);
}

Test(flame_cli, empty_input_renders_no_samples)
{
	const char *args[] = { in_dir("e.folded"), NULL };
	char *svg;

	write_file(in_dir("e.folded"), "");
	cr_assert_eq(run_flame(args), 0, "stderr: %s", err_text);
	svg = slurp(in_dir("e.svg"), NULL);
	cr_assert_not_null(svg);
	cr_expect_not_null(strstr(svg, "No samples"));
	free(svg);
}

Test(flame_cli, help_shows_usage_and_examples)
{
	const char *args[] = { "--help", NULL };

	cr_assert_eq(run_flame(args), 0);
	cr_expect_not_null(strstr(out_text, "USAGE: schedlab flame FILE.folded"));
	cr_expect_not_null(strstr(out_text, "EXAMPLES:"));
	cr_expect_not_null(strstr(out_text, "--minwidth"));
}

/* --diff: FILE's frames at FILE's widths, each tooltip with the baseline's share and the
 * change, red for the frame that grew and blue for the one that shrank; the same document
 * as the library draws with that baseline. */
Test(flame_cli, diff_colours_each_frame_by_its_change_in_share)
{
	char pa[512], pb[512], out[512], *svg, *want;
	const char *args[] = { pb, "--diff", pa, "-o", out, NULL };
	struct an_folded *a, *b;
	struct fg_options o;
	size_t len;
	FILE *mem;

	/* in_dir() hands out a few buffers in turn: keep each path */
	snprintf(pa, sizeof(pa), "%s", in_dir("a.folded"));
	snprintf(pb, sizeof(pb), "%s", in_dir("b.folded"));
	snprintf(out, sizeof(out), "%s", in_dir("d.svg"));
	write_file(pa, "main;grow 10\nmain;shrink 90\n");
	write_file(pb, "main;grow 50\nmain;shrink 50\n");
	cr_assert_eq(run_flame(args), 0, "stderr: %s", err_text);
	cr_expect_str_eq(err_text, "");
	svg = slurp(out, NULL);
	cr_assert_not_null(svg);
	cr_expect_not_null(strstr(svg, "<title>grow (50 samples; A 10.00%, +40.00 points, "
				       "B 50.00%)</title>"), "%s", svg);
	cr_expect_not_null(strstr(svg, "<title>shrink (50 samples; A 90.00%, -40.00 points, "
				       "B 50.00%)</title>"), "%s", svg);
	cr_expect_not_null(strstr(svg, "<title>main (100 samples; A 100.00%, +0.00 points, "
				       "B 100.00%)</title>"), "%s", svg);
	/* the library's rendering with the same baseline, byte for byte */
	a = an_folded_read(pa, NULL, 0);
	b = an_folded_read(pb, NULL, 0);
	cr_assert(a && b);
	fg_options_default(&o);
	o.baseline = a;
	mem = open_memstream(&want, &len);
	cr_assert_not_null(mem);
	cr_assert_eq(fg_svg_write(b, &o, mem), 0);
	fclose(mem);
	cr_expect_str_eq(svg, want);
	free(want);
	free(svg);
	an_folded_free(a);
	an_folded_free(b);
	cr_expect_eq(entries(), 3, "a temporary file was left behind");
}

/* ---- bad input ------------------------------------------------------------------------------ */

/* A baseline that cannot be read is bad input like FILE, named, and nothing is written. */
Test(flame_cli, a_bad_diff_baseline_is_bad_input_and_writes_nothing)
{
	char pb[512], none[512], pbad[512];
	const char *missing[] = { pb, "--diff", none, NULL };
	const char *bad[] = { pb, "--diff", pbad, NULL };
	const char *empty[] = { pb, "--diff", "", NULL };

	snprintf(pb, sizeof(pb), "%s", in_dir("b.folded"));
	snprintf(none, sizeof(none), "%s", in_dir("none.folded"));
	snprintf(pbad, sizeof(pbad), "%s", in_dir("bad.folded"));
	write_file(pb, good);
	write_file(pbad, "main;a x\n");
	cr_expect_eq(run_flame(missing), 2);
	expect_one_error_line("none.folded: No such file or directory; check the path");
	cr_expect_eq(run_flame(bad), 2);
	expect_one_error_line("bad.folded:1:");
	cr_expect_eq(run_flame(empty), 2);
	expect_one_error_line("--diff needs a folded file");
	cr_expect_eq(entries(), 2, "an output was written for bad input");
}


Test(flame_cli, malformed_line_names_file_line_and_fix)
{
	const char *args[] = { in_dir("bad.folded"), NULL };
	char want[1024];

	write_file(in_dir("bad.folded"), "main;a 1\nmain;b 2\nmain;c\nmain;d 4\n");
	cr_expect_eq(run_flame(args), 2);
	snprintf(want, sizeof(want),
		 "schedlab: %s:3: no count at the end of the line; each line is "
		 "'frame;frame;... COUNT'\n",
		 in_dir("bad.folded"));
	cr_expect_str_eq(err_text, want);
	cr_expect_eq(entries(), 1, "an output file was written for bad input");
}

Test(flame_cli, bad_input_leaves_an_existing_output_alone)
{
	const char *out = in_dir("keep.svg");
	const char *args[] = { in_dir("bad.folded"), "-o", out, NULL };
	char *kept;

	write_file(in_dir("bad.folded"), "main;a 1.5\n");
	write_file(out, "previous graph\n");
	cr_expect_eq(run_flame(args), 2);
	expect_one_error_line(":1: fractional count '1.5'");
	kept = slurp(out, NULL);
	cr_expect_str_eq(kept, "previous graph\n");
	cr_expect_eq(entries(), 2);
	free(kept);
}

Test(flame_cli, differential_input_is_refused)
{
	const char *args[] = { in_dir("diff.folded"), NULL };

	write_file(in_dir("diff.folded"), "main;a 1 2\n");
	cr_expect_eq(run_flame(args), 2);
	expect_one_error_line("differential folded files are not accepted");
	cr_expect_eq(entries(), 1);
}

Test(flame_cli, missing_file_is_bad_input)
{
	const char *args[] = { in_dir("none.folded"), NULL };

	cr_expect_eq(run_flame(args), 2);
	expect_one_error_line("none.folded: No such file or directory");
	cr_expect_eq(entries(), 0);
}

Test(flame_cli, bad_numbers_are_bad_input)
{
	const char *w1[] = { in_dir("p.folded"), "--width", "wide", NULL };
	const char *w2[] = { in_dir("p.folded"), "--width", "12", NULL };
	const char *w3[] = { in_dir("p.folded"), "--width", "1200px", NULL };
	const char *m1[] = { in_dir("p.folded"), "--minwidth", "-1", NULL };
	const char *m2[] = { in_dir("p.folded"), "--minwidth", "0.5%", NULL };

	write_file(in_dir("p.folded"), good);
	cr_expect_eq(run_flame(w1), 2);
	expect_one_error_line("--width 'wide'");
	cr_expect_eq(run_flame(w2), 2);
	expect_one_error_line("--width '12'");
	cr_expect_eq(run_flame(w3), 2);
	expect_one_error_line("--width '1200px'");
	cr_expect_eq(run_flame(m1), 2);
	expect_one_error_line("--minwidth '-1'");
	cr_expect_eq(run_flame(m2), 2);
	expect_one_error_line("--minwidth '0.5%'");
	cr_expect_eq(entries(), 1);
}

Test(flame_cli, argument_mistakes_are_bad_input)
{
	const char *none[] = { NULL };
	const char *two[] = { in_dir("p.folded"), in_dir("p.folded"), NULL };
	const char *unknown[] = { in_dir("p.folded"), "--bogus", NULL };

	write_file(in_dir("p.folded"), good);
	cr_expect_eq(run_flame(none), 2);
	expect_one_error_line("flame needs a folded file");
	cr_expect_eq(run_flame(two), 2);
	expect_one_error_line("flame takes one folded file");
	cr_expect_eq(run_flame(unknown), 2);
	cr_expect_not_null(strstr(err_text, "--bogus"), "%s", err_text);
	cr_expect_eq(entries(), 1);
}

Test(flame_cli, unwritable_output_is_reported_without_leftovers)
{
	const char *args[] = { in_dir("p.folded"), "-o", in_dir("no/such/dir/x.svg"), NULL };

	write_file(in_dir("p.folded"), good);
	cr_expect_eq(run_flame(args), 2);
	expect_one_error_line("cannot write");
	cr_expect_eq(entries(), 1);
}

/* ---- what is at the output path ------------------------------------------------------------ */

/* The tests' own device nodes (null, full), so that a regression harms no other program. */
static const char *device_node(const char *name, unsigned minor)
{
	const char *path = in_dir(name);

	cr_assert_eq(mknod(path, S_IFCHR | 0666, makedev(1, minor)), 0, "mknod %s: %s", path,
		     strerror(errno));
	return path;
}

Test(flame_cli, a_device_output_is_written_in_place_not_replaced)
{
	char null[512];
	const char *args[] = { in_dir("p.folded"), "-o", null, NULL };
	struct stat st;

	snprintf(null, sizeof(null), "%s", device_node("null", 3));
	write_file(in_dir("p.folded"), good);
	cr_assert_eq(run_flame(args), 0, "stderr: %s", err_text);
	cr_assert_eq(lstat(null, &st), 0);
	cr_expect(S_ISCHR(st.st_mode), "the device node was replaced by a file");
}

Test(flame_cli, a_symlink_output_is_written_through_and_kept)
{
	char input[512], link[512];
	const char *args[] = { input, "-o", link, NULL };
	struct stat st;
	char *svg;

	snprintf(input, sizeof(input), "%s", in_dir("p.folded"));
	snprintf(link, sizeof(link), "%s", in_dir("link.svg"));
	write_file(input, good);
	write_file(in_dir("target.svg"), "old");
	cr_assert_eq(symlink("target.svg", link), 0);
	cr_assert_eq(run_flame(args), 0, "stderr: %s", err_text);
	cr_assert_eq(lstat(in_dir("link.svg"), &st), 0);
	cr_expect(S_ISLNK(st.st_mode), "the symlink was replaced");
	svg = slurp(in_dir("target.svg"), NULL);
	cr_assert_not_null(svg);
	cr_expect(strstr(svg, "<svg") != NULL, "the target was not written");
	free(svg);
}

Test(flame_cli, a_fifo_output_is_written_to_its_reader)
{
	char input[512], pipe[512];
	const char *args[] = { input, "-o", pipe, NULL };
	int fd, status;
	char buf[64] = "";
	struct stat st;

	snprintf(input, sizeof(input), "%s", in_dir("p.folded"));
	snprintf(pipe, sizeof(pipe), "%s", in_dir("pipe"));
	write_file(input, good);
	cr_assert_eq(mkfifo(pipe, 0644), 0);
	/* the reader is open before the writer starts, so its open cannot miss one */
	fd = open(pipe, O_RDONLY | O_NONBLOCK);
	cr_assert_geq(fd, 0);
	status = run_flame(args);
	cr_assert_eq(status, 0, "stderr: %s", err_text);
	cr_expect_gt(read(fd, buf, sizeof(buf) - 1), 0);
	cr_expect(strstr(buf, "<?xml") == buf);
	close(fd);
	cr_assert_eq(lstat(pipe, &st), 0);
	cr_expect(S_ISFIFO(st.st_mode), "the FIFO was replaced");
}

Test(flame_cli, a_folder_output_is_refused)
{
	const char *args[] = { in_dir("p.folded"), "-o", in_dir("d"), NULL };

	write_file(in_dir("p.folded"), good);
	cr_assert_eq(mkdir(in_dir("d"), 0755), 0);
	cr_expect_eq(run_flame(args), 2);
	expect_one_error_line("Is a directory");
}

Test(flame_cli, absent_and_regular_outputs_are_replaced_whole)
{
	const char *args[] = { in_dir("p.folded"), "-o", in_dir("x.svg"), NULL };
	char *svg;

	write_file(in_dir("p.folded"), good);
	cr_assert_eq(run_flame(args), 0, "stderr: %s", err_text);
	write_file(in_dir("x.svg"), "old");
	cr_assert_eq(run_flame(args), 0, "stderr: %s", err_text);
	svg = slurp(in_dir("x.svg"), NULL);
	cr_expect(svg && strstr(svg, "<svg"));
	free(svg);
	cr_expect_eq(entries(), 2, "a temporary file was left behind");
}

Test(flame_cli, a_full_device_reports_no_space_not_io_error)
{
	char full[512];
	const char *args[] = { in_dir("p.folded"), "-o", full, NULL };

	snprintf(full, sizeof(full), "%s", device_node("full", 7));
	write_file(in_dir("p.folded"), good);
	cr_expect_eq(run_flame(args), 1);
	expect_one_error_line("No space left on device");
}

Test(flame_cli, a_line_without_end_is_capped_naming_file_and_line)
{
	const char *args[] = { in_dir("long.folded"), "-o", in_dir("z.svg"), NULL };
	FILE *f = fopen(in_dir("long.folded"), "w");

	cr_assert_not_null(f);
	for (int i = 0; i < (1 << 20) / 8 + 1; i++)
		fputs("frame;ab", f);
	cr_assert_eq(fclose(f), 0);
	cr_expect_eq(run_flame(args), 2);
	expect_one_error_line("long.folded:1: line longer than 1048576 bytes");
}

/* A device or a FIFO would never end or never begin: refused before any read. */
Test(flame_cli, an_input_that_is_not_a_regular_file_is_refused_at_once)
{
	const char *zero[] = { "/dev/zero", "-o", in_dir("z.svg"), NULL };
	const char *fifo[] = { in_dir("fifo.folded"), "-o", in_dir("f.svg"), NULL };

	cr_expect_eq(run_flame(zero), 2);
	expect_one_error_line("/dev/zero: not a regular file");
	cr_assert_eq(mkfifo(in_dir("fifo.folded"), 0600), 0);
	alarm(30); /* a FIFO opened to read blocks until a writer comes: a hang, not a pass */
	cr_expect_eq(run_flame(fifo), 2);
	alarm(0);
	expect_one_error_line("fifo.folded: not a regular file");
}

Test(flame_cli, a_stack_too_deep_to_draw_is_bad_input_naming_the_limit)
{
	const char *args[] = { in_dir("deep.folded"), "-o", in_dir("deep.svg"), NULL };
	FILE *f = fopen(in_dir("deep.folded"), "w");
	char want[64];

	cr_assert_not_null(f);
	for (int i = 0; i <= FG_MAX_DEPTH; i++)
		fprintf(f, "%sf%d", i ? ";" : "", i);
	fputs(" 1\n", f);
	cr_assert_eq(fclose(f), 0);
	cr_expect_eq(run_flame(args), 2);
	snprintf(want, sizeof(want), "deeper than %d frames", FG_MAX_DEPTH);
	expect_one_error_line(want);
	cr_expect_eq(entries(), 1, "an output or temporary file was left behind");
}
