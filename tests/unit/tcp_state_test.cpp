// SPDX-License-Identifier: MIT
// Which socket states prove a source under `remember: connected` (bpf/include/fg_tcp_state.h):
// every state a connection reaches only after its handshake completed, and none before.
#include <gtest/gtest.h>

#include <set>

#include "fg_tcp_state.h"

namespace floodgate {
namespace {

TEST(TcpStateProves, OnlyStatesAfterACompletedHandshake) {
  const std::set<uint32_t> proving = {BPF_TCP_ESTABLISHED, BPF_TCP_FIN_WAIT1,  BPF_TCP_FIN_WAIT2,
                                      BPF_TCP_TIME_WAIT,   BPF_TCP_CLOSE_WAIT, BPF_TCP_LAST_ACK,
                                      BPF_TCP_CLOSING};
  for (uint32_t state = 0; state <= BPF_TCP_MAX_STATES + 1; ++state)
    EXPECT_EQ(fg_tcp_state_proves(state), proving.count(state) ? 1 : 0) << "state " << state;
  // what a spoofed address gets for a SYN, and what a listener or a dial-out is
  for (uint32_t state :
       {BPF_TCP_NEW_SYN_RECV, BPF_TCP_SYN_RECV, BPF_TCP_SYN_SENT, BPF_TCP_LISTEN, BPF_TCP_CLOSE})
    EXPECT_EQ(fg_tcp_state_proves(state), 0) << "state " << state;
}

}  // namespace
}  // namespace floodgate
