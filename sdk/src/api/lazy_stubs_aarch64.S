// The debug-information libraries' functions as libinprof.so calls them (lazy_libraries.cpp):
// each is a jump through its slot, and a slot starts at its function's resolver, which loads
// the library, stores the real address in the slot and goes on to it with the caller's
// arguments untouched. Hidden: the library's own calls bind here, the program's do not.
// x16 and x17 are the intra-procedure-call scratch registers: a call may clobber them.
#define INPROF_LAZY_LIBRARY(id, soname)
#define INPROF_LAZY_FUNCTION(id, name) INPROF_LAZY_STUB name

        .set inprof_lazy_count, 0

        .macro INPROF_LAZY_STUB name
        .text
        .globl \name
        .hidden \name
        .type \name, %function
        .p2align 4
\name:
        .cfi_startproc
        adrp x16, inprof_lazy_slot_\name
        ldr x16, [x16, :lo12:inprof_lazy_slot_\name]
        br x16
        .cfi_endproc
        .size \name, . - \name
        .type inprof_lazy_first_\name, %function
inprof_lazy_first_\name:
        .cfi_startproc
        mov x17, #inprof_lazy_count
        b inprof_lazy_bind
        .cfi_endproc
        .size inprof_lazy_first_\name, . - inprof_lazy_first_\name
        .data
        .p2align 3
inprof_lazy_slot_\name:
        .xword inprof_lazy_first_\name
        .set inprof_lazy_count, inprof_lazy_count + 1
        .endm

// On entry: the function's index in x17. Saves every register a call may carry arguments in
// (x0-x7, x8 for an indirect result, q0-q7), asks inprof_lazy_resolve(index) for the
// address, restores them and jumps with the caller's return address in x30.
        .text
        .p2align 4
        .type inprof_lazy_bind, %function
inprof_lazy_bind:
        .cfi_startproc
        stp x29, x30, [sp, #-224]!
        .cfi_def_cfa_offset 224
        .cfi_offset x29, -224
        .cfi_offset x30, -216
        mov x29, sp
        stp x0, x1, [sp, #16]
        stp x2, x3, [sp, #32]
        stp x4, x5, [sp, #48]
        stp x6, x7, [sp, #64]
        str x8, [sp, #80]
        stp q0, q1, [sp, #96]
        stp q2, q3, [sp, #128]
        stp q4, q5, [sp, #160]
        stp q6, q7, [sp, #192]
        mov w0, w17
        bl inprof_lazy_resolve
        mov x16, x0
        ldp x0, x1, [sp, #16]
        ldp x2, x3, [sp, #32]
        ldp x4, x5, [sp, #48]
        ldp x6, x7, [sp, #64]
        ldr x8, [sp, #80]
        ldp q0, q1, [sp, #96]
        ldp q2, q3, [sp, #128]
        ldp q4, q5, [sp, #160]
        ldp q6, q7, [sp, #192]
        ldp x29, x30, [sp], #224
        .cfi_def_cfa_offset 0
        .cfi_restore x29
        .cfi_restore x30
        br x16
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

        .section .note.GNU-stack, "", %progbits
