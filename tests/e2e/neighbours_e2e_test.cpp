// SPDX-License-Identifier: MIT
// End to end: floodgate beside other XDP programs on the veth network. A counting program of
// the test's own behind floodgate sees exactly what floodgate passes, is swapped live with
// nothing lost, and takes floodgate's place on detach; floodgate in a slot of a root
// program's prog array; and --multiprog on a kernel without ext programs.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "e2e/veth_network.h"
#include "kernel/pins.h"
#include "kernel/unique_fd.h"
#include "kernel/xdp_neighbour.h"
#include "udp_traffic/udp_traffic.h"

namespace floodgate::test {
namespace {

constexpr const char* kFlooder = "198.18.0.2";
constexpr uint16_t kPort = 9999;

// The one map named `name` of program `program_id`, opened by id: a program floodgate loaded
// from an object file has no pins, and its maps live while someone holds them.
UniqueFd mapOfProgram(uint32_t program_id, const std::string& name) {
  UniqueFd program(bpf_prog_get_fd_by_id(program_id));
  if (!program.valid()) return UniqueFd();
  uint32_t ids[8] = {};
  bpf_prog_info info{};
  info.nr_map_ids = 8;
  info.map_ids = reinterpret_cast<uint64_t>(ids);
  uint32_t length = sizeof(info);
  if (bpf_obj_get_info_by_fd(program.get(), &info, &length) != 0) return UniqueFd();
  for (uint32_t i = 0; i < info.nr_map_ids && i < 8; ++i) {
    UniqueFd map(bpf_map_get_fd_by_id(ids[i]));
    bpf_map_info map_info{};
    uint32_t map_length = sizeof(map_info);
    if (map.valid() && bpf_obj_get_info_by_fd(map.get(), &map_info, &map_length) == 0 &&
        name == map_info.name) {
      return map;
    }
  }
  return UniqueFd();
}

uint64_t readCount(int map_fd) {
  uint32_t zero = 0;
  uint64_t count = 0;
  EXPECT_EQ(bpf_map_lookup_elem(map_fd, &zero, &count), 0);
  return count;
}

struct BpfObjectCloser {
  void operator()(bpf_object* object) const { bpf_object__close(object); }
};

class NeighboursE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "network namespaces and XDP need root";
    auto net = VethNetwork::create({kFlooder});
    ASSERT_TRUE(net.ok()) << net.error().message;
    net_ = std::move(*net);
  }

  void TearDown() override {
    if (!test_pins_.empty()) std::filesystem::remove_all(test_pins_);
  }

  CommandResult run(const std::vector<std::string>& args) { return net_->floodgate(args); }
  const std::string& iface() { return net_->targetInterface(); }

  nlohmann::json status() {
    CommandResult r = run({"status", iface(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["interfaces"][0];
  }

  // Packets floodgate passed on to whatever comes after it (verdicts pass and monitor).
  uint64_t floodgatePassed() {
    CommandResult r = run({"stats", iface(), "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    uint64_t passed = 0;
    const nlohmann::json stats = nlohmann::json::parse(r.out);  // outlives the loop
    for (const auto& row : stats["counters"]) {
      if (row["verdict"] != "drop") passed += row["packets"].get<uint64_t>();
    }
    return passed;
  }

  // floodgate's passes and `count`, read when no packet arrived between the readings.
  std::pair<uint64_t, uint64_t> quietReadings(int count_map) {
    for (int attempt = 0; attempt < 20; ++attempt) {
      uint64_t before = readCount(count_map);
      uint64_t passed = floodgatePassed();
      if (readCount(count_map) == before) return {passed, before};
      usleep(100000);
    }
    ADD_FAILURE() << "packets kept arriving while the counters were read";
    return {0, 0};
  }

  // The id of the XDP program on the interface, as iproute2 shows it (0: none).
  uint32_t hookProgram() {
    CommandResult r = net_->inTarget({"ip", "-j", "link", "show", "dev", iface()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    auto link = nlohmann::json::parse(r.out)[0];
    if (!link.contains("xdp")) return 0;
    return link["xdp"]["prog"]["id"].get<uint32_t>();
  }

  UdpSendOptions flood(double seconds) {
    UdpSendOptions options;
    options.netns = net_->senderNetns();
    options.source = kFlooder;
    options.destination = VethNetwork::kTargetAddress;
    options.port = kPort;
    options.seconds = seconds;
    options.threads = 2;
    return options;
  }

  uint32_t nextProgramId() {
    nlohmann::json st = status();
    if (st["next_program"].is_null()) return 0;
    return st["next_program"]["id"].get<uint32_t>();
  }

  std::unique_ptr<VethNetwork> net_;
  std::string test_pins_;
};

TEST_F(NeighboursE2eTest, TheNextProgramSeesExactlyWhatFloodgatePassesAndIsSwappedLive) {
  ASSERT_EQ(run({"attach", iface(), "--rate", "2000", "--burst", "100"}).exit_code, 0);
  CommandResult set = run({"chain", "set", iface(), "--object", COUNT_PASS_OBJECT});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_NE(set.out.find("count_pass (id "), std::string::npos) << set.out;
  const uint32_t first_id = nextProgramId();
  ASSERT_NE(first_id, 0u);
  EXPECT_EQ(status()["hook"], "xdp");
  UniqueFd first = mapOfProgram(first_id, "counted");
  ASSERT_TRUE(first.valid());
  const uint64_t passed_before = floodgatePassed();  // before the next program was there

  // a flood over the limit: the next program gets what floodgate passes, nothing else
  auto sent = sendUdp(flood(1.0));
  ASSERT_TRUE(sent.ok()) << sent.error().message;
  auto [passed, counted] = quietReadings(first.get());
  EXPECT_GT(counted, 0u);
  EXPECT_EQ(counted, passed - passed_before);
  ASSERT_LT(passed, sent->sent / 2) << "the flood was over the limit";

  // swapped for a second instance while the flood runs: every pass reaches one of them
  UniqueFd second;
  uint32_t second_id = 0;
  {
    std::thread flooder([&] { (void)sendUdp(flood(1.5)); });
    usleep(500000);
    CommandResult swap = run({"chain", "set", iface(), "--object", COUNT_PASS_OBJECT});
    EXPECT_EQ(swap.exit_code, 0) << swap.err;
    EXPECT_NE(swap.out.find("it replaced count_pass (id " + std::to_string(first_id) + ")"),
              std::string::npos)
        << swap.out;
    second_id = nextProgramId();
    second = mapOfProgram(second_id, "counted");
    flooder.join();
  }
  ASSERT_NE(second_id, first_id);
  ASSERT_TRUE(second.valid());
  auto [passed_after, counted_second] = quietReadings(second.get());
  const uint64_t counted_first = readCount(first.get());
  EXPECT_GT(counted_first, counted) << "the first instance counted during the swap";
  EXPECT_GT(counted_second, 0u) << "the second instance counted after it";
  EXPECT_EQ(counted_first + counted_second, passed_after - passed_before)
      << "no pass lost or seen twice";

  // detach takes floodgate alone out: the next program now owns the hook
  CommandResult detached = run({"detach", iface()});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  EXPECT_NE(detached.out.find("now runs on '" + iface() + "' directly"), std::string::npos)
      << detached.out;
  EXPECT_EQ(hookProgram(), second_id);
  EXPECT_FALSE(std::filesystem::exists(pinDirectory(iface())));
  const uint64_t before = readCount(second.get());
  ASSERT_TRUE(sendUdp(flood(0.2)).ok());
  EXPECT_GT(readCount(second.get()), before) << "it still gets the packets, unlimited";
}

TEST_F(NeighboursE2eTest, RemoveAndDropNextLeaveWhatTheySay) {
  ASSERT_EQ(run({"attach", iface(), "--rate", "1000"}).exit_code, 0);
  ASSERT_EQ(
      run({"chain", "set", iface(), "--object", COUNT_PASS_OBJECT, "--section", "xdp"}).exit_code,
      0);
  const uint32_t id = nextProgramId();
  UniqueFd count = mapOfProgram(id, "counted");
  CommandResult removed = run({"chain", "remove", iface()});
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_NE(removed.out.find("removed count_pass"), std::string::npos) << removed.out;
  EXPECT_EQ(nextProgramId(), 0u);
  EXPECT_TRUE(status()["next_program"].is_null());
  const uint64_t before = readCount(count.get());
  ASSERT_TRUE(sendUdp(flood(0.2)).ok());
  EXPECT_EQ(readCount(count.get()), before) << "nothing reaches a removed program";

  // a file that is not there, a section that is not there: one line, nothing changed
  ASSERT_EQ(run({"chain", "set", iface(), "--object", COUNT_PASS_OBJECT}).exit_code, 0);
  const uint32_t kept = nextProgramId();
  CommandResult missing = run({"chain", "set", iface(), "--object", "/nonexistent.o"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
  CommandResult section =
      run({"chain", "set", iface(), "--object", COUNT_PASS_OBJECT, "--section", "tc"});
  EXPECT_EQ(section.exit_code, 2) << section.err;
  EXPECT_NE(section.err.find("has no program with the section or name 'tc'"), std::string::npos)
      << section.err;
  EXPECT_EQ(nextProgramId(), kept);

  // --drop-next: the interface is left with no XDP program, and detach says so
  CommandResult detached = run({"detach", iface(), "--drop-next"});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  EXPECT_NE(detached.out.find("was not kept: '" + iface() + "' has no XDP program now"),
            std::string::npos)
      << detached.out;
  EXPECT_EQ(hookProgram(), 0u);
}

TEST_F(NeighboursE2eTest, ReplaceKeepsTheNextProgram) {
  ASSERT_EQ(run({"attach", iface(), "--rate", "1000"}).exit_code, 0);
  ASSERT_EQ(run({"chain", "set", iface(), "--object", COUNT_PASS_OBJECT}).exit_code, 0);
  const uint32_t id = nextProgramId();
  const uint32_t old_program = status()["program_id"];
  CommandResult replaced = run({"attach", iface(), "--replace", "--rate", "500"});
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_NE(status()["program_id"], old_program);
  EXPECT_EQ(nextProgramId(), id) << "the pinned slot outlives the program";
  UniqueFd count = mapOfProgram(id, "counted");
  auto [passed_before, counted_before] = quietReadings(count.get());
  ASSERT_TRUE(sendUdp(flood(0.3)).ok());
  auto [passed, counted] = quietReadings(count.get());
  EXPECT_GT(counted, counted_before);
  EXPECT_EQ(counted - counted_before, passed - passed_before)
      << "the new program hands its passes on too";
}

// The test's own root program on the interface's hook, its prog array pinned where floodgate
// is told to find it.
class RootProgramE2eTest : public NeighboursE2eTest {
 protected:
  void SetUp() override {
    NeighboursE2eTest::SetUp();
    if (IsSkipped()) return;
    test_pins_ = "/sys/fs/bpf/floodgate-test-root-" + std::to_string(getpid());
    ASSERT_TRUE(std::filesystem::create_directories(test_pins_));
    root_.reset(bpf_object__open_file(ROOT_DISPATCH_OBJECT, nullptr));
    ASSERT_TRUE(root_);
    ASSERT_EQ(bpf_object__load(root_.get()), 0);
    array_path_ = test_pins_ + "/root_array";
    const std::string program_path = test_pins_ + "/root_prog";
    bpf_map* array = bpf_object__find_map_by_name(root_.get(), "root_array");
    ASSERT_EQ(bpf_map__pin(array, array_path_.c_str()), 0);
    bpf_program* program = bpf_object__find_program_by_name(root_.get(), "root_dispatch");
    ASSERT_EQ(bpf_program__pin(program, program_path.c_str()), 0);
    seen_ = UniqueFd(dup(bpf_map__fd(bpf_object__find_map_by_name(root_.get(), "root_seen"))));
    CommandResult attached =
        net_->inTarget({"ip", "link", "set", "dev", iface(), "xdp", "pinned", program_path});
    ASSERT_EQ(attached.exit_code, 0) << attached.err;
    root_id_ = hookProgram();
    ASSERT_NE(root_id_, 0u);
  }

  uint32_t rootSlot(uint32_t slot) {
    auto array = ProgArray::openPinned(array_path_);
    EXPECT_TRUE(array.ok());
    auto id = array->programIn(slot);
    return id && *id ? **id : 0;
  }

  std::unique_ptr<bpf_object, BpfObjectCloser> root_;
  std::string array_path_;
  UniqueFd seen_;
  uint32_t root_id_ = 0;
};

TEST_F(RootProgramE2eTest, FloodgateRunsInASlotOfTheRootProgramAndLeavesItAlone) {
  CommandResult attached = run({"attach", iface(), "--rate", "2000", "--burst", "100",
                                "--into-prog-array", array_path_, "--slot", "1"});
  ASSERT_EQ(attached.exit_code, 0) << attached.err;
  EXPECT_NE(attached.out.find("in slot 1 of prog array root_array"), std::string::npos)
      << attached.out;
  nlohmann::json st = status();
  EXPECT_EQ(st["hook"], "prog_array");
  EXPECT_EQ(st["prog_array"]["slot"], 1);
  EXPECT_EQ(st["prog_array"]["map_name"], "root_array");
  EXPECT_EQ(hookProgram(), root_id_) << "the hook stays the root program's";
  EXPECT_EQ(rootSlot(1), st["program_id"].get<uint32_t>());

  // floodgate limits what the root program hands it, and chains on from there
  ASSERT_EQ(run({"chain", "set", iface(), "--object", COUNT_PASS_OBJECT}).exit_code, 0);
  const uint32_t next_id = nextProgramId();
  UniqueFd count = mapOfProgram(next_id, "counted");
  const uint64_t passed_before = floodgatePassed();
  auto sent = sendUdp(flood(1.0));
  ASSERT_TRUE(sent.ok());
  auto [passed, counted] = quietReadings(count.get());
  EXPECT_GT(counted, 0u);
  EXPECT_EQ(counted, passed - passed_before);
  EXPECT_LT(passed, sent->sent / 2) << "floodgate limited the flood";
  CommandResult stats = run({"stats", iface(), "--json"});
  const nlohmann::json counters = nlohmann::json::parse(stats.out)["counters"];
  uint64_t judged = 0;
  for (const auto& row : counters) judged += row["packets"].get<uint64_t>();
  EXPECT_EQ(judged, readCount(seen_.get())) << "floodgate judged every packet the root saw";

  // --replace keeps the slot; moving it elsewhere is refused
  CommandResult moved = run({"attach", iface(), "--replace", "--rate", "500", "--into-prog-array",
                             array_path_, "--slot", "2"});
  EXPECT_EQ(moved.exit_code, 2) << moved.err;
  CommandResult replaced = run({"attach", iface(), "--replace", "--rate", "500"});
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  const uint32_t new_id = status()["program_id"];
  EXPECT_EQ(rootSlot(1), new_id);
  EXPECT_EQ(nextProgramId(), next_id);

  // detach splices floodgate out: the slot now holds the program that was behind it
  CommandResult detached = run({"detach", iface()});
  ASSERT_EQ(detached.exit_code, 0) << detached.err;
  EXPECT_NE(detached.out.find("slot 1 of prog array root_array"), std::string::npos)
      << detached.out;
  EXPECT_EQ(rootSlot(1), next_id);
  EXPECT_EQ(hookProgram(), root_id_);
  EXPECT_FALSE(std::filesystem::exists(pinDirectory(iface())));
}

TEST_F(RootProgramE2eTest, ATakenSlotOrSomethingElseThanAProgArrayIsRefused) {
  ASSERT_EQ(
      run({"attach", iface(), "--rate", "100", "--into-prog-array", array_path_, "--slot", "1"})
          .exit_code,
      0);
  CommandResult again =
      run({"attach", iface(), "--rate", "100", "--into-prog-array", array_path_, "--slot", "1"});
  EXPECT_EQ(again.exit_code, 1) << again.err;
  EXPECT_NE(again.err.find("already attached"), std::string::npos) << again.err;
  ASSERT_EQ(run({"detach", iface()}).exit_code, 0);

  CommandResult beyond =
      run({"attach", iface(), "--rate", "100", "--into-prog-array", array_path_, "--slot", "4"});
  EXPECT_EQ(beyond.exit_code, 2) << beyond.err;
  EXPECT_NE(beyond.err.find("has 4 slots, so --slot is at most 3"), std::string::npos)
      << beyond.err;
  CommandResult not_array = run({"attach", iface(), "--rate", "100", "--into-prog-array",
                                 test_pins_ + "/root_prog", "--slot", "0"});
  EXPECT_EQ(not_array.exit_code, 1) << not_array.err;
  EXPECT_NE(not_array.err.find("is not a BPF map"), std::string::npos) << not_array.err;
  EXPECT_FALSE(std::filesystem::exists(pinDirectory(iface()))) << "nothing left behind";

  // slot 0 taken by the operator's own program: refused, the slot untouched
  auto array = ProgArray::openPinned(array_path_);
  ASSERT_TRUE(array.ok());
  UniqueFd theirs(bpf_obj_get((test_pins_ + "/root_prog").c_str()));
  ASSERT_TRUE(array->set(0, theirs.get()).ok());
  CommandResult occupied =
      run({"attach", iface(), "--rate", "100", "--into-prog-array", array_path_, "--slot", "0"});
  EXPECT_EQ(occupied.exit_code, 1) << occupied.err;
  EXPECT_NE(occupied.err.find("holds root_dispatch (id " + std::to_string(root_id_) + ")"),
            std::string::npos)
      << occupied.err;
  EXPECT_EQ(rootSlot(0), root_id_);
}

TEST_F(NeighboursE2eTest, MultiprogOnAKernelWithoutExtProgramsPointsAtChaining) {
  ExtProbe probe = probeExtPrograms();
  if (probe.available()) {
    GTEST_SKIP() << "this kernel loads ext programs (" << probe.describe()
                 << "): the refusal for kernels without them cannot be seen here";
  }
  CommandResult r = run({"attach", iface(), "--rate", "100", "--multiprog"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "floodgate: error: --multiprog needs libxdp's dispatcher, which needs freplace "
            "(ext) programs, and " +
                probe.describe() +
                ": put floodgate beside other XDP programs by chaining instead "
                "('floodgate chain set IFACE', or 'floodgate attach IFACE "
                "--into-prog-array PATH --slot N')\n");
  EXPECT_EQ(hookProgram(), 0u);
}

TEST_F(NeighboursE2eTest, DispatcherModeWhereTheKernelHasExtPrograms) {
  ExtProbe probe = probeExtPrograms();
  if (!probe.available()) {
    GTEST_SKIP() << "libxdp's dispatcher needs ext programs: " << probe.describe();
  }
  // A kernel with ext programs: floodgate does not build the dispatcher itself yet, and
  // says so in one line that still points at chaining, with nothing attached.
  CommandResult r = run({"attach", iface(), "--rate", "100", "--multiprog"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("chaining instead"), std::string::npos) << r.err;
  EXPECT_EQ(hookProgram(), 0u);
}

}  // namespace
}  // namespace floodgate::test
