// SPDX-License-Identifier: MIT
// The sharing lab's SVG picture: a quota bar per node, central and prefetch side by side.
#include <algorithm>

#include "lab/sharing.h"
#include "lab/svg_number.h"

namespace floodgate::http::lab {

namespace {

constexpr double kWidth = 1000;
constexpr double kLabel = 70;  // room for "node 999"
constexpr double kGap = 30;    // between the two panels
constexpr double kRight = 20;
constexpr double kTop = 80;
constexpr double kRowHeight = 20;
constexpr double kBarHeight = 14;
constexpr double kCountsWidth = 90;  // the figures written after each bar

constexpr const char* kAdmittedColour = "#16a34a";
constexpr const char* kStrandedColour = "#d97706";
constexpr const char* kRejectedColour = "#dc2626";

std::string text(double x, double y, const std::string& body, const char* extra = "") {
  return "<text x=\"" + svgNumber(x) + "\" y=\"" + svgNumber(y) + "\"" + extra + ">" + body +
         "</text>\n";
}

std::string rect(double x, double y, double width, const char* colour, const std::string& title) {
  return "<rect x=\"" + svgNumber(x) + "\" y=\"" + svgNumber(y) + "\" width=\"" + svgNumber(width) +
         "\" height=\"" + svgNumber(kBarHeight) + "\" fill=\"" + colour + "\"><title>" + title +
         "</title></rect>\n";
}

std::string summary(const ModeFigures& f) {
  return std::string(sharingModeName(f.mode)) + ": " + std::to_string(f.admitted) + " admitted, " +
         std::to_string(f.stranded) + " stranded, " + std::to_string(f.rejected) + " rejected";
}

std::string details(const ModeFigures& f) {
  std::string s = std::to_string(f.round_trips) + " round trips, " +
                  std::to_string(f.left_at_centre) + " left at the centre";
  if (f.rejected_while_held > 0) {
    s += ", " + std::to_string(f.rejected_while_held) + " rejected while others held quota";
  }
  return s;
}

}  // namespace

std::string renderSharingSvg(const SharingReport& report) {
  int64_t most = 1;  // units on the widest bar, over both modes
  for (const ModeFigures* f : {&report.central, &report.prefetch}) {
    for (const NodeFigures& n : f->nodes)
      most = std::max(most, n.admitted + n.stranded + n.rejected);
  }
  const double panel = (kWidth - kLabel - kGap - kRight) / 2;
  const double bar_room = panel - kCountsWidth;
  const double height = kTop + kRowHeight * static_cast<double>(report.nodes) + 50;

  std::string svg;
  svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + svgNumber(kWidth) + "\" height=\"" +
         svgNumber(height) + "\" viewBox=\"0 0 " + svgNumber(kWidth) + " " + svgNumber(height) +
         "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += text(10, 24,
              "floodgate lab --sharing: " + std::to_string(report.nodes) + " nodes, limit " +
                  std::to_string(report.limit) + ", batch " + std::to_string(report.batch) +
                  ": each node's quota",
              " font-size=\"15\" font-weight=\"bold\"");

  for (int column = 0; column < 2; ++column) {
    const ModeFigures& f = column == 0 ? report.central : report.prefetch;
    const std::string mode(sharingModeName(f.mode));
    const double left = kLabel + column * (panel + kGap);
    svg += text(left, 52, summary(f), " font-weight=\"bold\"");
    svg += text(left, 68, details(f), " fill=\"#555\"");
    for (size_t n = 0; n < f.nodes.size(); ++n) {
      const NodeFigures& node = f.nodes[n];
      const double y = kTop + kRowHeight * static_cast<double>(n);
      const std::string who = "node " + std::to_string(n) + ", " + mode + ": ";
      double x = left;
      auto segment = [&](int64_t units, const char* colour, const char* what) {
        if (units == 0) return;
        double width = bar_room * static_cast<double>(units) / static_cast<double>(most);
        svg += rect(x, y, width, colour, who + std::to_string(units) + " " + what);
        x += width;
      };
      segment(node.admitted, kAdmittedColour, "admitted");
      segment(node.stranded, kStrandedColour, "stranded");
      segment(node.rejected, kRejectedColour, "rejected");
      svg += text(x + 4, y + 11,
                  std::to_string(node.admitted) + " / " + std::to_string(node.stranded) + " / " +
                      std::to_string(node.rejected),
                  " fill=\"#555\" font-size=\"10\"");
    }
  }
  for (size_t n = 0; n < report.central.nodes.size(); ++n) {
    svg += text(10, kTop + kRowHeight * static_cast<double>(n) + 11, "node " + std::to_string(n));
  }

  const double legend_y = height - 20;
  double x = kLabel;
  for (auto [colour, what] : {std::pair{kAdmittedColour, "admitted"},
                              std::pair{kStrandedColour, "stranded (borrowed, unspent)"},
                              std::pair{kRejectedColour, "rejected"}}) {
    svg += "<rect x=\"" + svgNumber(x) + "\" y=\"" + svgNumber(legend_y - 10) +
           "\" width=\"12\" height=\"12\" fill=\"" + colour + "\"/>\n";
    svg += text(x + 16, legend_y, what);
    x += 40 + 7 * std::string(what).size();
  }
  svg += text(kWidth - kRight, legend_y, "figures: admitted / stranded / rejected",
              " text-anchor=\"end\" fill=\"#555\"");
  svg += "</svg>\n";
  return svg;
}

}  // namespace floodgate::http::lab
