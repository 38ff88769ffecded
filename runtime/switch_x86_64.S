/*
 * Fiber context switch for x86-64 System V: save the callee-saved registers and the
 * stack pointer of the running context, load another's. No syscall, no signal mask
 * (which is what makes swapcontext slow). The x87 control word and MXCSR are not
 * switched: tasks share the worker thread's floating-point environment.
 *
 * void rt__switch(void **save_sp, void *load_sp)
 *
 * Unwinders see through it. It sets up a frame pointer first, so a frame-pointer walk
 * from inside it finds its caller (on the old stack until the final pops: %rbp is
 * reloaded last). The CFI describes every push and pop, and stays right across the
 * load of the new stack pointer: both stacks hold the same six-register frame below
 * their return address (a new fiber's is laid out by frame_init() in fiber.c), so the
 * same CFA offset describes the new stack, and a DWARF unwinder goes on into the
 * context being resumed.
 */
#include "runtime/phase.h"

	.text
	.globl	rt__switch
	.type	rt__switch, @function
	.p2align 4
rt__switch:
	.cfi_startproc
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset rbp, -16
	movq	%rsp, %rbp
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_offset rbx, -24
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	.cfi_offset r12, -32
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	.cfi_offset r13, -40
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	.cfi_offset r14, -48
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	.cfi_offset r15, -56
	movq	%rsp, (%rdi)
	movq	%rsi, %rsp		/* CFA = %rsp + 56 here as on the old stack */
	popq	%r15
	.cfi_adjust_cfa_offset -8
	.cfi_restore r15
	popq	%r14
	.cfi_adjust_cfa_offset -8
	.cfi_restore r14
	popq	%r13
	.cfi_adjust_cfa_offset -8
	.cfi_restore r13
	popq	%r12
	.cfi_adjust_cfa_offset -8
	.cfi_restore r12
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbx
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbp
	ret
	.cfi_endproc
	.size	rt__switch, .-rt__switch

/*
 * First code a new fiber runs: rt__switch "returns" here with %r12 = the task and
 * %rbp = 0. The zero frame pointer ends every frame-pointer walk at the fiber's entry,
 * and the undefined return address ends DWARF unwinds (gdb, backtrace(), libdw) here
 * too. The return address frame_init() lays out is rt__fiber_start + 1, past the nop:
 * an unwinder looks a caller up by its return address minus one, which must fall
 * inside this function's CFI, not in the padding before it.
 */
	.globl	rt__fiber_start
	.type	rt__fiber_start, @function
	.p2align 4
rt__fiber_start:
	.cfi_startproc
	.cfi_undefined rip
	nop
	/* the task's own work begins: the first store, before rt__task_main's prologue
	 * (the thread switched in as SCHED; rt__task_main puts the task id in) */
	movb	$RT_PHASE_RUN, %fs:rt_phase_word@tpoff
	movq	%r12, %rdi
	call	rt__task_main
	ud2
	.cfi_endproc
	.size	rt__fiber_start, .-rt__fiber_start

	.section .note.GNU-stack,"",@progbits
