/*
 * The kernel types the CO-RE relocations of oncpu, offcpu and sched need, as
 * `bpftool gen min_core_btf` extracted them at build time from the build machine's
 * kernel BTF, and that kernel's /sys/kernel/notes (its GNU build ID): core_btf.c hands
 * libbpf an extract only on the kernel it came from. The Makefile generates the files
 * (empty where it could not) under $(BUILD)/probes and names them as this object's
 * prerequisites; the assembler finds them through the -I it passes. The other objects
 * need none: alloc's and runtime's programs relocate no kernel type (their extracts
 * would be empty), so libbpf reads nothing for them.
 */
	.section .rodata
	.balign	8
core_notes:
	.incbin	"kernel.notes"
core_notes_end:
core_oncpu:
	.incbin	"oncpu/oncpu.min.btf"
core_oncpu_end:
core_offcpu:
	.incbin	"offcpu/offcpu.min.btf"
core_offcpu_end:
core_sched:
	.incbin	"sched/sched.min.btf"
core_sched_end:
name_oncpu:
	.asciz	"oncpu"
name_offcpu:
	.asciz	"offcpu"
name_sched:
	.asciz	"sched"
name_notes:
	.asciz	""

/* struct probe__core_blob { const char *name; const void *start, *end; }, NULL-ended;
 * the first entry, named "", is the notes */
	.section .data.rel.ro, "aw"
	.balign	8
	.globl	probe__core_blobs
probe__core_blobs:
	.quad	name_notes, core_notes, core_notes_end
	.quad	name_oncpu, core_oncpu, core_oncpu_end
	.quad	name_offcpu, core_offcpu, core_offcpu_end
	.quad	name_sched, core_sched, core_sched_end
	.quad	0, 0, 0

	.section .note.GNU-stack,"",@progbits
