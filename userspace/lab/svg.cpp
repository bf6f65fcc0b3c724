// SPDX-License-Identifier: MIT
// The lab's SVG picture: one timeline per algorithm, arrivals above and upstream below.
#include <algorithm>
#include <cstdio>

#include "lab/lab.h"
#include "lab/svg_number.h"

namespace floodgate::http::lab {

namespace {

constexpr double kWidth = 1000;
constexpr double kLeft = 170;  // room for the lane labels
constexpr double kRight = 30;
constexpr double kTop = 50;
constexpr double kLaneHeight = 130;
constexpr double kAxisHeight = 50;

std::string num(double v) { return svgNumber(v); }

// A tick step of 1, 2 or 5 times a power of ten giving about eight ticks over `span_ms`.
int64_t tickStep(int64_t span_ms) {
  int64_t step = 1;
  while (true) {
    for (int64_t m : {1, 2, 5}) {
      if (span_ms / (step * m) <= 8) return step * m;
    }
    step *= 10;
  }
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string svgNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string renderSvg(const LabReport& report) {
  int64_t end_ms = 1;
  for (const LabResult& r : report.results) {
    for (const LabRequest& q : r.requests) {
      end_ms = std::max({end_ms, q.arrival_ms, q.upstream_ms.value_or(0)});
    }
    if (r.max_in_window > 0) end_ms = std::max(end_ms, r.max_window_start_ms + report.window_ms);
  }
  end_ms += std::max<int64_t>(1, end_ms / 20);  // a little room after the last mark
  const double plot = kWidth - kLeft - kRight;
  auto x = [&](int64_t t_ms) { return kLeft + plot * static_cast<double>(t_ms) / end_ms; };
  const double height = kTop + kLaneHeight * report.results.size() + kAxisHeight + 30;

  std::string svg;
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth) + "\" height=\"" +
         num(height) + "\" viewBox=\"0 0 " + num(kWidth) + " " + num(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + num(kLeft) +
         "\" y=\"24\" font-size=\"15\" font-weight=\"bold\">"
         "floodgate lab: arrivals (top row of each lane) and upstream receipts (bottom row)"
         "</text>\n";

  for (size_t lane = 0; lane < report.results.size(); ++lane) {
    const LabResult& r = report.results[lane];
    const double top = kTop + kLaneHeight * lane;
    const double arrive_y = top + 35;
    const double upstream_y = top + 90;
    std::string name(algorithmName(r.algorithm));

    if (r.max_in_window > 0) {
      double x0 = x(r.max_window_start_ms);
      double x1 = x(r.max_window_start_ms + report.window_ms);
      svg += "<rect x=\"" + num(x0) + "\" y=\"" + num(upstream_y - 18) + "\" width=\"" +
             num(x1 - x0) + "\" height=\"36\" fill=\"#fde68a\" opacity=\"0.6\"/>\n";
      svg += "<text x=\"" + num(x0 + 4) + "\" y=\"" + num(upstream_y + 30) +
             "\" fill=\"#92400e\">busiest " + std::to_string(report.window_ms) +
             " ms: " + std::to_string(r.max_in_window) + " upstream</text>\n";
    }
    svg += "<text x=\"10\" y=\"" + num(arrive_y + 4) + "\" font-weight=\"bold\">" + escape(name) +
           "</text>\n";
    svg += "<text x=\"10\" y=\"" + num(arrive_y + 20) + "\" fill=\"#555\">arrivals</text>\n";
    svg += "<text x=\"10\" y=\"" + num(upstream_y + 4) + "\" fill=\"#555\">upstream</text>\n";
    for (double y : {arrive_y, upstream_y}) {
      svg += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(y) + "\" x2=\"" + num(kWidth - kRight) +
             "\" y2=\"" + num(y) + "\" stroke=\"#ccc\"/>\n";
    }
    for (const LabRequest& q : r.requests) {
      double ax = x(q.arrival_ms);
      if (q.upstream_ms) {
        double ux = x(*q.upstream_ms);
        const char* colour = q.delay_ms > 0 ? "#d97706" : "#16a34a";
        svg += "<line x1=\"" + num(ax) + "\" y1=\"" + num(arrive_y) + "\" x2=\"" + num(ux) +
               "\" y2=\"" + num(upstream_y) + "\" stroke=\"" + colour +
               "\" stroke-width=\"1\" opacity=\"0.7\"/>\n";
        svg += "<circle cx=\"" + num(ax) + "\" cy=\"" + num(arrive_y) +
               "\" r=\"3\" fill=\"#2563eb\"/>\n";
        svg += "<circle cx=\"" + num(ux) + "\" cy=\"" + num(upstream_y) + "\" r=\"3.5\" fill=\"" +
               colour + "\"><title>arrived " + std::to_string(q.arrival_ms) + " ms, upstream " +
               std::to_string(*q.upstream_ms) + " ms</title></circle>\n";
      } else {
        svg += "<path d=\"M" + num(ax - 4) + " " + num(arrive_y - 4) + " l8 8 m0 -8 l-8 8\" " +
               "stroke=\"#dc2626\" stroke-width=\"2\"><title>rejected at " +
               std::to_string(q.arrival_ms) + " ms</title></path>\n";
      }
    }
  }

  const double axis_y = kTop + kLaneHeight * report.results.size() + 10;
  svg += "<line x1=\"" + num(kLeft) + "\" y1=\"" + num(axis_y) + "\" x2=\"" + num(kWidth - kRight) +
         "\" y2=\"" + num(axis_y) + "\" stroke=\"#333\"/>\n";
  int64_t step = tickStep(end_ms);
  for (int64_t t = 0; t <= end_ms; t += step) {
    svg += "<line x1=\"" + num(x(t)) + "\" y1=\"" + num(axis_y) + "\" x2=\"" + num(x(t)) +
           "\" y2=\"" + num(axis_y + 5) + "\" stroke=\"#333\"/>\n";
    svg += "<text x=\"" + num(x(t)) + "\" y=\"" + num(axis_y + 18) + "\" text-anchor=\"middle\">" +
           std::to_string(t) + "</text>\n";
  }
  svg += "<text x=\"" + num(kWidth - kRight) + "\" y=\"" + num(axis_y + 34) +
         "\" text-anchor=\"end\">time (ms)</text>\n";
  const double legend_y = axis_y + 34;
  svg += "<circle cx=\"15\" cy=\"" + num(legend_y - 4) +
         "\" r=\"3.5\" fill=\"#16a34a\"/>"
         "<text x=\"23\" y=\"" +
         num(legend_y) + "\">at once</text>\n";
  svg += "<circle cx=\"85\" cy=\"" + num(legend_y - 4) +
         "\" r=\"3.5\" fill=\"#d97706\"/>"
         "<text x=\"93\" y=\"" +
         num(legend_y) + "\">delayed</text>\n";
  svg += "<path d=\"M156 " + num(legend_y - 8) +
         " l8 8 m0 -8 l-8 8\" stroke=\"#dc2626\" "
         "stroke-width=\"2\"/><text x=\"170\" y=\"" +
         num(legend_y) + "\">rejected</text>\n";
  svg += "</svg>\n";
  return svg;
}

}  // namespace floodgate::http::lab
