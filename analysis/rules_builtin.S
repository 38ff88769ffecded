/*
 * analysis/categories.rules, compiled into the binary (categories.c parses it), with a
 * NUL after it. The Makefile names the rules file as this object's prerequisite: the
 * assembler's dependency output does not list .incbin files.
 */
	.section .rodata
	.globl	an__rules_text
	.globl	an__rules_text_end
an__rules_text:
	.incbin	"analysis/categories.rules"
an__rules_text_end:
	.byte	0

	.section .note.GNU-stack,"",@progbits
