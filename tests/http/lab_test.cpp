// SPDX-License-Identifier: MIT
// floodgate lab: replay, the busiest window, the exact JSON shape, text, SVG and the CLI flags.
#include "lab/lab.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lab/lab_command.h"
#include "lab_cli.h"

namespace floodgate::http::lab {
namespace {

LabOptions fixedAndLeaky() {
  LabOptions o;
  o.algorithms = {"fixed_window", "leaky_bucket"};
  o.limit = 3;
  o.window_ms = 1000;
  o.capacity = 2;
  o.rate_per_s = 10;
  o.arrivals_ms = {0, 0, 0, 150, 999, 1000, 1001, 1002, 1003};
  return o;
}

TEST(Lab, ReplaysBothAlgorithmsOnTheSameArrivals) {
  auto report = runLab(fixedAndLeaky());
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(report->results.size(), 2u);

  const LabResult& fixed = report->results[0];
  std::vector<bool> fixed_allowed;
  for (const LabRequest& r : fixed.requests) fixed_allowed.push_back(r.upstream_ms.has_value());
  EXPECT_EQ(fixed_allowed,
            (std::vector<bool>{true, true, true, false, false, true, true, true, false}));
  // Upstream at 0,0,0 and 1000,1001,1002: no 1000 ms window holds more than 3 ...
  // ... except the boundary: [0, 1000) has 3, [1000, 2000) has 3; 150..999 none. So 3.
  EXPECT_EQ(fixed.max_in_window, 3);

  const LabResult& leaky = report->results[1];
  ASSERT_EQ(leaky.requests.size(), 9u);
  EXPECT_EQ(leaky.requests[0].upstream_ms, 0);
  EXPECT_EQ(leaky.requests[1].delay_ms, 100);
  EXPECT_EQ(leaky.requests[1].upstream_ms, 100);
  EXPECT_FALSE(leaky.requests[2].upstream_ms.has_value());  // queue of 2 is full
  EXPECT_EQ(leaky.requests[3].delay_ms, 50);                // leaves at 200
  EXPECT_EQ(leaky.requests[3].upstream_ms, 200);
  EXPECT_EQ(leaky.requests[4].upstream_ms, 999);
  EXPECT_EQ(leaky.requests[5].upstream_ms, 1099);
  EXPECT_FALSE(leaky.requests[6].upstream_ms.has_value());
}

TEST(Lab, BusiestWindowCountsDelayedRequestsWhenTheyGoUpstream) {
  LabOptions o;
  o.algorithms = {"fixed_window"};
  o.limit = 3;
  o.window_ms = 1000;
  o.arrivals_ms = {900, 900, 900, 1000, 1000, 1000};
  auto report = runLab(o);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->results[0].max_in_window, 6);  // the boundary burst: twice the limit
  EXPECT_EQ(report->results[0].max_window_start_ms, 900);

  o.limit.reset();
  o.algorithms = {"leaky_bucket"};
  o.capacity = 6;
  o.rate_per_s = 2;  // six queued leave at 900, 1400, ..., 3400
  report = runLab(o);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->results[0].max_in_window, 2);
}

TEST(Lab, JsonHasExactlyTheDocumentedShape) {
  LabOptions o;
  o.algorithms = {"token_bucket"};
  o.capacity = 1;
  o.rate_per_s = 1;
  o.arrivals_ms = {820, 900};
  auto report = runLab(o);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(formatJson(*report),
            R"({"results":[{"algorithm":"token_bucket","requests":[)"
            R"({"arrival_ms":820,"allowed":true,"delay_ms":0,"upstream_ms":820},)"
            R"({"arrival_ms":900,"allowed":false,"delay_ms":0,"upstream_ms":null}],)"
            R"("max_in_window":1}]})"
            "\n");
}

TEST(Lab, TextShowsEachRequestSideBySideAndTheBusiestWindow) {
  auto report = runLab(fixedAndLeaky());
  ASSERT_TRUE(report.ok());
  std::string text = formatText(*report);
  EXPECT_NE(text.find("fixed_window (limit 3 per 1000 ms)"), std::string::npos) << text;
  EXPECT_NE(text.find("leaky_bucket (capacity 2, 10/s)"), std::string::npos) << text;
  EXPECT_NE(text.find("       150  rejected           -            -"
                      "         allowed           50          200\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("most requests upstream in any 1000 ms window:\n"
                      "  fixed_window             3"),
            std::string::npos)
      << text;
}

TEST(Lab, SvgDrawsBothTimelines) {
  auto report = runLab(fixedAndLeaky());
  ASSERT_TRUE(report.ok());
  std::string svg = renderSvg(*report);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find(">fixed_window</text>"), std::string::npos);
  EXPECT_NE(svg.find(">leaky_bucket</text>"), std::string::npos);
  EXPECT_NE(svg.find("rejected at 150 ms"), std::string::npos);
  EXPECT_NE(svg.find("arrived 150 ms, upstream 200 ms"), std::string::npos);
  EXPECT_NE(svg.find("busiest 1000 ms"), std::string::npos);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

TEST(Lab, UsageErrorsNameTheFlag) {
  LabOptions o = fixedAndLeaky();
  o.limit.reset();
  auto missing = runLab(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(missing.error().message, "fixed_window needs --limit (and --window, in ms)");
  o = fixedAndLeaky();
  o.rate_per_s.reset();
  EXPECT_EQ(runLab(o).error().message, "leaky_bucket needs --capacity and --rate (per second)");
  o = fixedAndLeaky();
  o.algorithms = {"gcra"};
  EXPECT_EQ(runLab(o).error().message,
            "--limit is for window algorithms; gcra takes --capacity and --rate");
  o.algorithms = {"bogus"};
  EXPECT_EQ(runLab(o).error().kind, ErrorKind::kUsage);
  // A wrong name is reported before flags that would not fit it: `leaky` with --limit
  // is a misspelt algorithm, not a misplaced --limit.
  const std::string unknown_leaky =
      "unknown --algorithm 'leaky' (expected fixed_window, sliding_window_log, "
      "sliding_window_counter, token_bucket, gcra or leaky_bucket)";
  o = fixedAndLeaky();
  o.algorithms = {"leaky"};
  o.capacity.reset();
  o.rate_per_s.reset();
  EXPECT_EQ(runLab(o).error().message, unknown_leaky);
  o = fixedAndLeaky();
  o.algorithms = {"leaky"};
  o.limit.reset();
  EXPECT_EQ(runLab(o).error().message, unknown_leaky);
  o = fixedAndLeaky();
  o.algorithms = {"gcra", "leaky"};
  EXPECT_EQ(runLab(o).error().message, unknown_leaky);
  o.algorithms = {"gcra", "gcra", "gcra"};
  EXPECT_FALSE(runLab(o).ok());
  EXPECT_EQ(parseArrivals("0,x,2").error().message,
            "--arrivals: 'x' is not a time in ms (expected e.g. --arrivals 0,10,20)");
  EXPECT_EQ(parseArrivals("5,3").error().message,
            "--arrivals must be in time order: 3 comes after 5");
  EXPECT_EQ(*parseArrivals(" 0, 10 ,20"), (std::vector<int64_t>{0, 10, 20}));
}

using lab::testing::runCli;

TEST(LabCli, JsonAndSvgFromFlags) {
  std::string svg_path = ::testing::TempDir() + "floodgate-lab-test.svg";
  std::string out;
  Status status = runCli(
      {"lab",      "--algorithm", "fixed_window", "--algorithm", "gcra",   "--limit", "2",
       "--window", "500",         "--capacity",   "2",           "--rate", "4",       "--cost",
       "1",        "--arrivals",  "0,10,20,600",  "--json",      "--svg",  svg_path},
      out);
  ASSERT_TRUE(status.ok()) << status.error().message;
  auto json = nlohmann::json::parse(out);
  ASSERT_EQ(json["results"].size(), 2u);
  EXPECT_EQ(json["results"][0]["algorithm"], "fixed_window");
  EXPECT_EQ(json["results"][1]["algorithm"], "gcra");
  EXPECT_EQ(json["results"][0]["requests"][2]["allowed"], false);
  EXPECT_EQ(json["results"][0]["max_in_window"], 2);
  std::ifstream svg(svg_path);
  std::stringstream text;
  text << svg.rdbuf();
  EXPECT_NE(text.str().find("<svg"), std::string::npos);
  std::remove(svg_path.c_str());
}

TEST(LabCli, MissingFlagsAreUsageErrors) {
  std::string out;
  Status status = runCli({"lab", "--arrivals", "0"}, out);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(status.error().message.rfind("give one or two --algorithm", 0), 0u);
  status = runCli({"lab", "--algorithm", "gcra"}, out);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().kind, ErrorKind::kUsage);
  EXPECT_EQ(status.error().message,
            "give --arrivals (times in ms, e.g. 0,10,20), or --sharing to compare central "
            "counting with prefetch");
}

TEST(LabCli, UnwritableSvgIsAFailure) {
  std::string out;
  Status status = runCli({"lab", "--algorithm", "gcra", "--capacity", "1", "--rate", "1",
                          "--arrivals", "0", "--svg", "/nonexistent-dir/x.svg"},
                         out);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().kind, ErrorKind::kFailure);
}

}  // namespace
}  // namespace floodgate::http::lab
