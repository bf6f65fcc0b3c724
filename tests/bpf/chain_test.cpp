// SPDX-License-Identifier: MIT
// The tail call to the next program, run with BPF_PROG_TEST_RUN: an empty slot passes, a
// program in it decides, floodgate counts its pass first, only XDP programs get in, and a
// next program that tail-calls back into floodgate is stopped by the kernel's bound.
#include <bpf/bpf.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>

#include <cerrno>
#include <cstring>

#include "bpf/xdp_fixture.h"
#include "controller/next_program.h"
#include "controller/rule_compiler.h"
#include "kernel/pins.h"
#include "kernel/unique_fd.h"
#include "kernel/xdp_neighbour.h"

namespace floodgate::test {
namespace {

bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn out{};
  out.code = code;
  out.dst_reg = dst;
  out.src_reg = src;
  out.off = off;
  out.imm = imm;
  return out;
}

bpf_insn movImm(uint8_t dst, int32_t imm) {
  return insn(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm);
}
bpf_insn exitInsn() { return insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0); }

// A program of `type` that returns `verdict`; with `tail_array` >= 0 it first tail-calls
// slot 0 of that prog array.
UniqueFd tinyProgram(bpf_prog_type type, int verdict, int tail_array = -1) {
  std::vector<bpf_insn> code;
  if (tail_array >= 0) {
    // r1 is still the context; r2 = the array (a two-slot ld_imm64), r3 = slot 0
    code.push_back(insn(BPF_LD | BPF_DW | BPF_IMM, 2, BPF_PSEUDO_MAP_FD, 0, tail_array));
    code.push_back(insn(0, 0, 0, 0, 0));
    code.push_back(movImm(3, 0));
    code.push_back(insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_tail_call));
  }
  code.push_back(movImm(0, verdict));
  code.push_back(exitInsn());
  // a prog array takes programs of its owner's attach type too: libbpf's SEC("xdp") is BPF_XDP
  LIBBPF_OPTS(bpf_prog_load_opts, options);
  if (type == BPF_PROG_TYPE_XDP) options.expected_attach_type = BPF_XDP;
  return UniqueFd(bpf_prog_load(type, "chain_test", "GPL", code.data(), code.size(), &options));
}

class ChainTest : public XdpProgramTest {
 protected:
  ProgArray nextArray() {
    auto array = ProgArray::openPinned(mapPinPath(pin_name_, "next_program"));
    EXPECT_TRUE(array.ok()) << array.error().message;
    return std::move(*array);
  }

  // Packets floodgate passed (verdict pass, any reason).
  uint64_t passedCount() {
    uint64_t total = 0;
    for (uint32_t reason = 0; reason < FG_REASON_COUNT; ++reason)
      total += counted(FG_VERDICT_PASS, reason);
    return total;
  }

  Status putNext(int fd) {
    PreparedNextProgram prepared{NextProgramSpec{}, UniqueFd(dup(fd))};
    ProgArray array = nextArray();
    auto change = placeNextProgram(array, std::move(prepared), false);
    return change ? okStatus() : Status(change.error());
  }
};

TEST_F(ChainTest, AnEmptySlotPassesAndTheNextProgramDecidesWhatFloodgatePasses) {
  AttachOptions options;
  options.test_clock_hz = 250;  // the clock stands still: the third packet is over the burst
  load({sourceRule(1, 2)}, options);
  setClock(1000);
  const auto frame = udpFrom("192.0.2.7");
  EXPECT_EQ(run(frame), XDP_PASS) << "no next program: a pass is XDP_PASS";

  UniqueFd tx = tinyProgram(BPF_PROG_TYPE_XDP, XDP_TX);
  ASSERT_TRUE(tx.valid()) << std::strerror(errno);
  ASSERT_TRUE(putNext(tx.get()).ok());
  EXPECT_EQ(run(frame), XDP_TX) << "the next program's verdict is the packet's";
  EXPECT_EQ(passedCount(), 2u) << "floodgate counts its own pass before the tail call";

  // what floodgate drops never reaches the next program
  EXPECT_EQ(run(frame), XDP_DROP);
  EXPECT_EQ(counted(FG_VERDICT_DROP, FG_REASON_RATE), 1u);

  ASSERT_TRUE(nextArray().clear(FG_NEXT_PROGRAM_SLOT).ok());
  EXPECT_EQ(run(udpFrom("192.0.2.8")), XDP_PASS) << "removed: XDP_PASS again";
}

TEST_F(ChainTest, OnlyAnXdpProgramGetsIntoTheSlot) {
  load({sourceRule(1000, 1000)});
  UniqueFd filter = tinyProgram(BPF_PROG_TYPE_SOCKET_FILTER, 0);
  ASSERT_TRUE(filter.valid()) << std::strerror(errno);
  // the kernel refuses it even when written straight into the pinned array
  ProgArray array = nextArray();
  Status refused = array.set(FG_NEXT_PROGRAM_SLOT, filter.get());
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("takes only programs of the type"), std::string::npos)
      << refused.error().message;
  EXPECT_EQ(run(udpFrom("192.0.2.7")), XDP_PASS) << "the slot stayed empty";

  // and by pin, floodgate says what it is before trying
  const std::string pin = pinDirectory(pin_name_) + "/test_filter";
  ASSERT_EQ(bpf_obj_pin(filter.get(), pin.c_str()), 0) << std::strerror(errno);
  auto opened = prepareNextProgram(NextProgramSpec{"", "", pin});
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().message, "the program pinned at " + pin +
                                        " is a socket_filter program, not XDP: a tail call from "
                                        "XDP reaches only XDP programs");
}

TEST_F(ChainTest, AnObjectThatDoesNotLoadChangesNothing) {
  load({sourceRule(1000, 1000)});
  UniqueFd tx = tinyProgram(BPF_PROG_TYPE_XDP, XDP_TX);
  ASSERT_TRUE(putNext(tx.get()).ok());
  AttachOptions options;
  options.next = NextProgramSpec{"/nonexistent/next.o", "", ""};
  options.interface = pin_name_;
  options.rules = named({sourceRule(5, 5)});
  Status status = limiter().reload(options);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("cannot open the BPF object /nonexistent/next.o"),
            std::string::npos)
      << status.error().message;
  EXPECT_EQ(run(udpFrom("192.0.2.7")), XDP_TX) << "the next program stayed";
  auto rules = limiter().activeRules();
  ASSERT_TRUE(rules.ok());
  EXPECT_EQ(describeLimits((*rules)[0], (*rules)[0].limits).pps, 1000u) << "the rules stayed";
}

TEST_F(ChainTest, ANextProgramThatTailCallsBackIsStoppedByTheKernelsBound) {
  load({sourceRule(1000000, 1000000)});
  // back: a prog array of the test's own holding floodgate's program
  UniqueFd back(bpf_map_create(BPF_MAP_TYPE_PROG_ARRAY, "back", 4, 4, 1, nullptr));
  ASSERT_TRUE(back.valid()) << std::strerror(errno);
  uint32_t zero = 0;
  int floodgate_fd = loaded_->programFd();
  ASSERT_EQ(bpf_map_update_elem(back.get(), &zero, &floodgate_fd, BPF_ANY), 0)
      << std::strerror(errno);
  UniqueFd looping = tinyProgram(BPF_PROG_TYPE_XDP, XDP_ABORTED, back.get());
  ASSERT_TRUE(looping.valid()) << std::strerror(errno);
  ASSERT_TRUE(putNext(looping.get()).ok());

  // floodgate → next → floodgate → ...: the kernel allows 33 tail calls a packet
  // (MAX_TAIL_CALL_CNT); the 33rd reaches the next program, whose 34th falls through
  EXPECT_EQ(run(udpFrom("192.0.2.7")), XDP_ABORTED);
  EXPECT_EQ(passedCount(), 17u) << "floodgate ran once and then after every second tail call";
  // nothing of the loop outlives the packet: an array without it is a plain pass again
  ASSERT_EQ(bpf_map_delete_elem(back.get(), &zero), 0);
  EXPECT_EQ(run(udpFrom("192.0.2.8")), XDP_ABORTED) << "the next program's own verdict";
}

}  // namespace
}  // namespace floodgate::test
