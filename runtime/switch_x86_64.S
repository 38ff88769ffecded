/*
 * Fiber context switch for x86-64 System V: save the callee-saved registers and the
 * stack pointer of the running context, load another's. No syscall, no signal mask
 * (which is what makes swapcontext slow). The x87 control word and MXCSR are not
 * switched: tasks share the worker thread's floating-point environment.
 *
 * void rt__switch(void **save_sp, void *load_sp)
 */
	.text
	.globl	rt__switch
	.type	rt__switch, @function
	.p2align 4
rt__switch:
	.cfi_startproc
	pushq	%rbp
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	movq	%rsp, (%rdi)
	movq	%rsi, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	ret
	.cfi_endproc
	.size	rt__switch, .-rt__switch

/*
 * First code a new fiber runs: rt__switch "returns" here with %r12 = the task and
 * %rbp = 0. The zero frame pointer ends every frame-pointer walk at the fiber's entry,
 * and the undefined return address ends DWARF unwinds (gdb, backtrace()) here too.
 */
	.globl	rt__fiber_start
	.type	rt__fiber_start, @function
	.p2align 4
rt__fiber_start:
	.cfi_startproc
	.cfi_undefined rip
	movq	%r12, %rdi
	call	rt__task_main
	ud2
	.cfi_endproc
	.size	rt__fiber_start, .-rt__fiber_start

	.section .note.GNU-stack,"",@progbits
