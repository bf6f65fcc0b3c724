/* SPDX-License-Identifier: (GPL-2.0-only OR MIT) */
/* Which TCP socket states prove that a packet's source answered us: shared by the XDP
 * program (bpf/connected.bpf.h) and its unit test. */
#ifndef FLOODGATE_TCP_STATE_H
#define FLOODGATE_TCP_STATE_H

#include <linux/bpf.h>

#include "fg_gcra.h"

/* A connection that was established: the peer answered our SYN-ACK or SYN. A listener, a
 * handshake half made (SYN sent, SYN received, a request socket) or a closed socket prove
 * nothing: a spoofed address gets a request socket for the price of a SYN. */
FG_INLINE int fg_tcp_state_proves(__u32 state)
{
	switch (state) {
	case BPF_TCP_ESTABLISHED:
	case BPF_TCP_FIN_WAIT1:
	case BPF_TCP_FIN_WAIT2:
	case BPF_TCP_TIME_WAIT:
	case BPF_TCP_CLOSE_WAIT:
	case BPF_TCP_LAST_ACK:
	case BPF_TCP_CLOSING:
		return 1;
	}
	return 0;
}

#endif /* FLOODGATE_TCP_STATE_H */
