// SPDX-License-Identifier: MIT
// `floodgate lab` as a library function, so it is tested without the CLI.
#include "lab/lab_command.h"

#include <fstream>

namespace floodgate::http::lab {

Status runLabCommand(LabFlags flags, std::ostream& out) {
  auto arrivals = parseArrivals(flags.arrivals);
  if (!arrivals) return arrivals.error();
  flags.options.arrivals_ms = std::move(*arrivals);
  auto report = runLab(flags.options);
  if (!report) return report.error();

  if (!flags.svg_path.empty()) {
    std::ofstream svg(flags.svg_path, std::ios::binary | std::ios::trunc);
    svg << renderSvg(*report);
    svg.close();
    if (!svg) {
      return Error::failure("cannot write the SVG to " + flags.svg_path +
                            " (does the directory exist and is it writable?)");
    }
  }
  out << (flags.json ? formatJson(*report) : formatText(*report));
  return okStatus();
}

}  // namespace floodgate::http::lab
