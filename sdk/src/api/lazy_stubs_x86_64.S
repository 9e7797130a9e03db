// The debug-information libraries' functions as libinprof.so calls them (lazy_libraries.cpp):
// each is a jump through its slot, and a slot starts at its function's resolver, which loads
// the library, stores the real address in the slot and goes on to it with the caller's
// arguments untouched. Hidden: the library's own calls bind here, the program's do not.
#define INPROF_LAZY_LIBRARY(id, soname)
#define INPROF_LAZY_FUNCTION(id, name) INPROF_LAZY_STUB name

        .set inprof_lazy_count, 0

        .macro INPROF_LAZY_STUB name
        .text
        .globl \name
        .hidden \name
        .type \name, @function
        .p2align 4
\name:
        .cfi_startproc
        jmp *inprof_lazy_slot_\name(%rip)
        .cfi_endproc
        .size \name, . - \name
        .type inprof_lazy_first_\name, @function
inprof_lazy_first_\name:
        .cfi_startproc
        pushq $inprof_lazy_count
        .cfi_adjust_cfa_offset 8
        jmp inprof_lazy_bind
        .cfi_endproc
        .size inprof_lazy_first_\name, . - inprof_lazy_first_\name
        .data
        .p2align 3
inprof_lazy_slot_\name:
        .quad inprof_lazy_first_\name
        .set inprof_lazy_count, inprof_lazy_count + 1
        .endm

// On entry: the function's index above the caller's return address. Saves every register a
// call may carry arguments in (rax: the vector-register count of a variadic call), asks
// inprof_lazy_resolve(index) for the address, restores them and jumps, leaving the stack as
// the caller made it.
        .text
        .p2align 4
        .type inprof_lazy_bind, @function
inprof_lazy_bind:
        .cfi_startproc
        .cfi_adjust_cfa_offset 8
        pushq %rbp
        .cfi_adjust_cfa_offset 8
        .cfi_offset %rbp, -24
        movq %rsp, %rbp
        .cfi_def_cfa_register %rbp
        pushq %rdi
        pushq %rsi
        pushq %rdx
        pushq %rcx
        pushq %r8
        pushq %r9
        pushq %rax
        andq $-16, %rsp
        subq $128, %rsp
        movdqu %xmm0, 0(%rsp)
        movdqu %xmm1, 16(%rsp)
        movdqu %xmm2, 32(%rsp)
        movdqu %xmm3, 48(%rsp)
        movdqu %xmm4, 64(%rsp)
        movdqu %xmm5, 80(%rsp)
        movdqu %xmm6, 96(%rsp)
        movdqu %xmm7, 112(%rsp)
        movl 8(%rbp), %edi
        call inprof_lazy_resolve
        movq %rax, %r11
        movdqu 0(%rsp), %xmm0
        movdqu 16(%rsp), %xmm1
        movdqu 32(%rsp), %xmm2
        movdqu 48(%rsp), %xmm3
        movdqu 64(%rsp), %xmm4
        movdqu 80(%rsp), %xmm5
        movdqu 96(%rsp), %xmm6
        movdqu 112(%rsp), %xmm7
        movq -8(%rbp), %rdi
        movq -16(%rbp), %rsi
        movq -24(%rbp), %rdx
        movq -32(%rbp), %rcx
        movq -40(%rbp), %r8
        movq -48(%rbp), %r9
        movq -56(%rbp), %rax
        movq %rbp, %rsp
        popq %rbp
        .cfi_def_cfa %rsp, 16
        addq $8, %rsp
        .cfi_adjust_cfa_offset -8
        jmp *%r11
        .cfi_endproc
        .size inprof_lazy_bind, . - inprof_lazy_bind

// The slots, one after another in the order of lazy_symbols.inc: inprof_lazy_resolve
// stores each function's address at its index.
        .data
        .p2align 3
        .globl inprof_lazy_slots
        .hidden inprof_lazy_slots
inprof_lazy_slots:
#include "api/lazy_symbols.inc"

        .section .note.GNU-stack, "", @progbits
