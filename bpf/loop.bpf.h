/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* A loop without a call per turn: the kernel's may_goto instruction (Linux 6.9). */
#ifndef FLOODGATE_LOOP_BPF_H
#define FLOODGATE_LOOP_BPF_H

/* True while the loop budget lasts: 8M turns a run up to Linux 6.14, then 65535 turns and
 * a time check a call of the function that holds the loop, either far beyond any loop of
 * floodgate's, which end on their own first (at most FG_MAX_RULES + 1 turns). The verifier then
 * checks a loop's body until its state repeats, as it does a bpf_loop callback's, yet each turn is
 * a jump and a counter on the stack instead of a call and a return, which cost most where returns
 * are made safe against speculation (SRSO on AMD). Written as the instruction's bytes, as clang 14
 * has no mnemonic for it: the opcode (0xe5), no registers, then the jump's offset in instructions
 * in the low half of a little-endian .long (its high half and the .short: imm, 0). A kernel older
 * than 6.9 refuses a program holding it, even in code never run, so it goes only into the program
 * built for kernels that have it. */
#define fg_can_loop                                                                                \
	({                                                                                         \
		__label__ l_break, l_continue;                                                     \
		int fg_more = 1;                                                                   \
		asm volatile goto(                                                                 \
		    "1:.byte 0xe5; .byte 0;"                                                       \
		    ".long ((%l[l_break] - 1b - 8) / 8) & 0xffff; .short 0" :: ::l_break);         \
		goto l_continue;                                                                   \
	l_break:                                                                                   \
		fg_more = 0;                                                                       \
	l_continue:;                                                                               \
		fg_more;                                                                           \
	})

#endif /* FLOODGATE_LOOP_BPF_H */
