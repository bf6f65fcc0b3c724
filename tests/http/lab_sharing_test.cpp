// SPDX-License-Identifier: MIT
// floodgate lab --sharing: the design's worked examples, the output shapes and the bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lab/lab_command.h"
#include "lab/sharing.h"
#include "lab_cli.h"

namespace floodgate::http::lab {
namespace {

SharingOptions roundRobin(int64_t nodes, int64_t requests, int64_t limit, int64_t batch) {
  SharingOptions o;
  o.nodes = nodes;
  o.requests_per_node = requests;
  o.limit = limit;
  o.batch = batch;
  o.rtt_ms = 1;
  return o;
}

SharingReport play(const SharingOptions& options) {
  auto report = runSharing(options);
  EXPECT_TRUE(report.ok()) << report.error().message;
  return report.ok() ? *report : SharingReport{};
}

// 4 nodes, 2 requests each, limit 20, batch 8, round-robin: the first three nodes borrow all
// 20 units (8, 8 and 4) and each spends 2; the fourth borrows nothing and both its requests
// are rejected while the others still hold 14.
TEST(LabSharing, TheDesignsWorkedExample) {
  SharingReport r = play(roundRobin(4, 2, 20, 8));
  const ModeFigures& p = r.prefetch;
  ASSERT_EQ(p.nodes.size(), 4u);
  const int64_t borrowed[] = {8, 8, 4, 0};
  for (size_t n = 0; n < 3; ++n) {
    EXPECT_EQ(p.nodes[n].admitted, 2) << n;
    EXPECT_EQ(p.nodes[n].rejected, 0) << n;
    EXPECT_EQ(p.nodes[n].admitted + p.nodes[n].stranded, borrowed[n]) << n;
    EXPECT_EQ(p.nodes[n].round_trips, 1) << n;
  }
  EXPECT_EQ(p.nodes[3].admitted, 0);
  EXPECT_EQ(p.nodes[3].rejected, 2);
  EXPECT_EQ(p.nodes[3].stranded, 0);
  EXPECT_EQ(p.nodes[3].round_trips, 2);  // a failed borrow is a round trip too
  EXPECT_EQ(p.admitted, 6);
  EXPECT_EQ(p.rejected, 2);
  EXPECT_EQ(p.stranded, 14);
  EXPECT_EQ(p.left_at_centre, 0);
  EXPECT_EQ(p.fewer_than_central, 2);
  EXPECT_EQ(p.rejected_while_held, 2);
  EXPECT_EQ(p.round_trips, 5);
  EXPECT_DOUBLE_EQ(p.wait_ms, 5);

  const ModeFigures& c = r.central;
  EXPECT_EQ(c.admitted, 8);
  EXPECT_EQ(c.rejected, 0);
  EXPECT_EQ(c.stranded, 0);
  EXPECT_EQ(c.left_at_centre, 12);
  EXPECT_EQ(c.fewer_than_central, 0);
  EXPECT_EQ(c.rejected_while_held, 0);
  EXPECT_EQ(c.round_trips, 8);
  EXPECT_DOUBLE_EQ(c.wait_ms, 8);
  for (const NodeFigures& node : c.nodes) {
    EXPECT_EQ(node.admitted, 2);
    EXPECT_EQ(node.round_trips, 2);
  }
}

TEST(LabSharing, BatchOfOneIsCentralCounting) {
  SharingReport r = play(roundRobin(4, 2, 20, 1));
  EXPECT_EQ(r.prefetch.stranded, 0);
  EXPECT_EQ(r.prefetch.rejected_while_held, 0);
  EXPECT_EQ(r.prefetch.fewer_than_central, 0);
  EXPECT_EQ(r.prefetch.round_trips, r.central.round_trips);
  EXPECT_EQ(r.prefetch.round_trips, 8);
  EXPECT_EQ(r.prefetch.admitted, 8);
  EXPECT_EQ(r.prefetch.left_at_centre, r.central.left_at_centre);
}

// Limit 1000 and a batch of 100: ten nodes take it all, every node after them is rejected
// for each of its 20 requests while the ten hold 800 units between them.
TEST(LabSharing, FalseRejectionsGrowWithTheNodes) {
  int64_t before = -1;
  for (int64_t nodes : {5, 10, 11, 20, 40, 50}) {
    SharingReport r = play(roundRobin(nodes, 20, 1000, 100));
    EXPECT_EQ(r.prefetch.rejected_while_held, 20 * std::max<int64_t>(0, nodes - 10)) << nodes;
    EXPECT_EQ(r.prefetch.admitted, 20 * std::min<int64_t>(nodes, 10)) << nodes;
    EXPECT_EQ(r.central.admitted, std::min<int64_t>(20 * nodes, 1000)) << nodes;
    EXPECT_EQ(r.central.rejected_while_held, 0);
    EXPECT_GE(r.prefetch.rejected_while_held, before) << nodes;
    if (nodes > 10) {
      EXPECT_GT(r.prefetch.rejected_while_held, before) << nodes;
    }
    before = r.prefetch.rejected_while_held;
  }
  // The worked example's limit and batch: 2 more false rejections for every node past 3.
  for (int64_t nodes = 3; nodes <= 10; ++nodes) {
    EXPECT_EQ(play(roundRobin(nodes, 2, 20, 8)).prefetch.rejected_while_held, 2 * (nodes - 3));
  }
}

TEST(LabSharing, ArrivalTimesPerNodeOrderTheRequests) {
  SharingOptions o;
  o.limit = 3;
  o.batch = 3;
  o.rtt_ms = 2.5;
  o.node_arrivals_ms = {{0, 1, 2}, {0}};  // at 0 ms node 0 goes first
  SharingReport r = play(o);
  EXPECT_EQ(r.nodes, 2);
  EXPECT_FALSE(r.requests_per_node.has_value());
  EXPECT_EQ(r.prefetch.nodes[0].admitted, 3);
  EXPECT_EQ(r.prefetch.nodes[1].rejected, 1);
  EXPECT_EQ(r.prefetch.rejected_while_held, 1);  // node 0 held 2 when node 1 asked
  EXPECT_EQ(r.prefetch.round_trips, 2);
  EXPECT_DOUBLE_EQ(r.prefetch.wait_ms, 5);
  // Central: node 0 at 0, node 1 at 0, node 0 at 1 take the 3 units; node 0 at 2 is refused.
  EXPECT_EQ(r.central.nodes[0].admitted, 2);
  EXPECT_EQ(r.central.nodes[0].rejected, 1);
  EXPECT_EQ(r.central.nodes[1].admitted, 1);
  EXPECT_EQ(r.central.rejected_while_held, 0);
  EXPECT_DOUBLE_EQ(r.central.wait_ms, 10);

  o.node_arrivals_ms = {{5}, {0, 1, 2}};  // now node 1 borrows first
  r = play(o);
  EXPECT_EQ(r.prefetch.nodes[1].admitted, 3);
  EXPECT_EQ(r.prefetch.nodes[0].rejected, 1);
}

TEST(LabSharing, JsonHasExactlyTheDocumentedShape) {
  SharingReport r = play(roundRobin(2, 1, 2, 2));
  EXPECT_EQ(formatSharingJson(r),
            R"({"nodes":2,"requests_per_node":1,"limit":2,"batch":2,"rtt_ms":1.0,"modes":[)"
            R"({"mode":"central","admitted":2,"rejected":0,"round_trips":2,"wait_ms":2.0,)"
            R"("left_at_centre":0,"stranded":0,"fewer_than_central":0,"rejected_while_held":0,)"
            R"("nodes":[{"node":0,"admitted":1,"stranded":0,"rejected":0,"round_trips":1},)"
            R"({"node":1,"admitted":1,"stranded":0,"rejected":0,"round_trips":1}]},)"
            R"({"mode":"prefetch","admitted":1,"rejected":1,"round_trips":2,"wait_ms":2.0,)"
            R"("left_at_centre":0,"stranded":1,"fewer_than_central":1,"rejected_while_held":1,)"
            R"("nodes":[{"node":0,"admitted":1,"stranded":1,"rejected":0,"round_trips":1},)"
            R"({"node":1,"admitted":0,"stranded":0,"rejected":1,"round_trips":1}]}]})"
            "\n");
}

TEST(LabSharing, TextShowsTheModesSideBySideAndEachNode) {
  std::string text = formatSharingText(play(roundRobin(4, 2, 20, 8)));
  EXPECT_NE(text.find("4 nodes, 2 requests each, round-robin; limit 20, batch 8, round trip 1 ms"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("admitted                                        8            6\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("stranded on nodes                               0           14\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rejected while others held quota                0            2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("     3         2        0        0           2         0        0        2"
                      "           2\n"),
            std::string::npos)
      << text;
}

TEST(LabSharing, SvgDrawsAQuotaBarPerNodeAndMode) {
  std::string svg = renderSharingSvg(play(roundRobin(4, 2, 20, 8)));
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("<title>node 0, prefetch: 6 stranded</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>node 3, prefetch: 2 rejected</title>"), std::string::npos);
  EXPECT_NE(svg.find("<title>node 3, central: 2 admitted</title>"), std::string::npos);
  EXPECT_NE(svg.find(">prefetch: 6 admitted, 14 stranded, 2 rejected<"), std::string::npos);
  EXPECT_NE(svg.find(">5 round trips, 0 left at the centre, 2 rejected while others held quota<"),
            std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

TEST(LabSharing, UsageErrorsNameTheFlagAndBoundTheSizes) {
  auto error = [](const SharingOptions& o) {
    auto r = runSharing(o);
    EXPECT_FALSE(r.ok());
    if (r.ok()) return std::string();
    EXPECT_EQ(r.error().kind, ErrorKind::kUsage);
    return r.error().message;
  };
  SharingOptions o = roundRobin(4, 2, 20, 8);
  o.nodes.reset();
  EXPECT_EQ(error(o), "--sharing needs --nodes");
  o = roundRobin(4, 2, 20, 8);
  o.batch.reset();
  EXPECT_EQ(error(o), "--sharing needs --batch");
  EXPECT_EQ(error(roundRobin(0, 2, 20, 8)), "--nodes must be between 1 and 1000 (got 0)");
  EXPECT_EQ(error(roundRobin(1001, 2, 20, 8)), "--nodes must be between 1 and 1000 (got 1001)");
  // Hostile sizes are refused before anything is allocated for them.
  EXPECT_EQ(error(roundRobin(4, 1'000'000'000'000, 20, 8)),
            "--requests must be between 1 and 100000 (got 1000000000000)");
  EXPECT_EQ(error(roundRobin(1000, 101, 20, 8)),
            "--nodes x --requests: at most 100000 requests in all");
  EXPECT_EQ(error(roundRobin(4, 2, 0, 8)),
            "--limit must be between 1 and 1000000000000000 (got 0)");
  EXPECT_EQ(error(roundRobin(4, 2, 20, -1)),
            "--batch must be between 1 and 1000000000000000 (got -1)");
  o = roundRobin(4, 2, 20, 8);
  o.rtt_ms = -1;
  EXPECT_EQ(error(o), "--rtt must be between 0 and 60000 ms");
  o.rtt_ms = std::nan("");
  EXPECT_EQ(error(o), "--rtt must be between 0 and 60000 ms");
  o = roundRobin(4, 2, 20, 8);
  o.node_arrivals_ms = {{0}};
  EXPECT_EQ(error(o),
            "--node-arrivals gives the nodes and their requests: leave out --nodes and --requests");
  o.nodes.reset();
  o.requests_per_node.reset();
  o.node_arrivals_ms = {{0}, {}};
  EXPECT_EQ(error(o), "--node-arrivals: every node needs a time");
  o.node_arrivals_ms.assign(1001, {0});
  EXPECT_EQ(error(o), "--node-arrivals: at most 1000 nodes");

  EXPECT_EQ(parseNodeArrivals(std::vector<std::string>(1001, "0")).error().message,
            "--node-arrivals: at most 1000 nodes");
  std::string many = "0";
  for (int i = 0; i < 60'000; ++i) many += ",1";
  EXPECT_EQ(parseNodeArrivals({many, many}).error().message,
            "--node-arrivals: at most 100000 times over all nodes");
  EXPECT_EQ(parseNodeArrivals({"0,1", "2,x"}).error().message,
            "--node-arrivals: 'x' is not a time in ms (expected e.g. --node-arrivals 0,10,20)");
  EXPECT_EQ(parseNodeArrivals({"0,1", "9,3"}).error().message,
            "--node-arrivals must be in time order: 3 comes after 9");
}

using lab::testing::runCli;

TEST(LabSharingCli, TheWorkedExampleFromFlags) {
  std::string svg_path = ::testing::TempDir() + "floodgate-lab-sharing-test.svg";
  std::string out;
  Status status = runCli({"lab", "--sharing", "--nodes", "4", "--requests", "2", "--limit", "20",
                          "--batch", "8", "--rtt", "0.5", "--json", "--svg", svg_path},
                         out);
  ASSERT_TRUE(status.ok()) << status.error().message;
  auto json = nlohmann::json::parse(out);
  EXPECT_EQ(json["modes"][0]["mode"], "central");
  EXPECT_EQ(json["modes"][0]["admitted"], 8);
  EXPECT_EQ(json["modes"][1]["admitted"], 6);
  EXPECT_EQ(json["modes"][1]["stranded"], 14);
  EXPECT_EQ(json["modes"][1]["wait_ms"], 2.5);
  EXPECT_EQ(json["modes"][1]["nodes"][3]["rejected"], 2);
  std::ifstream svg(svg_path);
  std::stringstream text;
  text << svg.rdbuf();
  EXPECT_NE(text.str().find("each node's quota"), std::string::npos);
  std::remove(svg_path.c_str());

  status = runCli({"lab", "--sharing", "--limit", "3", "--batch", "3", "--node-arrivals", "0,1,2",
                   "--node-arrivals", "0"},
                  out);
  ASSERT_TRUE(status.ok()) << status.error().message;
  EXPECT_NE(out.find("2 nodes, requests by arrival time; limit 3, batch 3"), std::string::npos)
      << out;
}

TEST(LabSharingCli, FlagsOfTheOtherLabAreCli11UsageErrors) {
  std::string out;
  EXPECT_THROW(runCli({"lab", "--sharing", "--algorithm", "gcra", "--nodes", "2"}, out),
               CLI::ExcludesError);
  EXPECT_THROW(runCli({"lab", "--sharing", "--arrivals", "0,1"}, out), CLI::ExcludesError);
  EXPECT_THROW(runCli({"lab", "--algorithm", "gcra", "--nodes", "2"}, out), CLI::RequiresError);
  Status status =
      runCli({"lab", "--sharing", "--nodes", "2", "--requests", "1", "--limit", "1"}, out);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(status.error().message, "--sharing needs --batch");
}

}  // namespace
}  // namespace floodgate::http::lab
