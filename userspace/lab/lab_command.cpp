// SPDX-License-Identifier: MIT
// `floodgate lab` as a library function, so it is tested without the CLI.
#include "lab/lab_command.h"

#include <fstream>

namespace floodgate::http::lab {

namespace {

Status writeSvg(const std::string& path, const std::string& svg) {
  if (path.empty()) return okStatus();
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << svg;
  file.close();
  if (!file) {
    return Error::failure("cannot write the SVG to " + path +
                          " (does the directory exist and is it writable?)");
  }
  return okStatus();
}

Status runSharingCommand(LabFlags& flags, std::ostream& out) {
  SharingOptions& options = flags.sharing_options;
  options.limit = flags.options.limit;
  auto node_arrivals = parseNodeArrivals(flags.node_arrivals);
  if (!node_arrivals) return node_arrivals.error();
  options.node_arrivals_ms = std::move(*node_arrivals);
  auto report = runSharing(options);
  if (!report) return report.error();
  if (Status s = writeSvg(flags.svg_path, renderSharingSvg(*report)); !s.ok()) return s;
  out << (flags.json ? formatSharingJson(*report) : formatSharingText(*report));
  return okStatus();
}

}  // namespace

Status runLabCommand(LabFlags flags, std::ostream& out) {
  if (flags.sharing) return runSharingCommand(flags, out);
  if (flags.arrivals.empty()) {
    return Error::usage(
        "give --arrivals (times in ms, e.g. 0,10,20), or --sharing to compare central "
        "counting with prefetch");
  }
  auto arrivals = parseArrivals(flags.arrivals);
  if (!arrivals) return arrivals.error();
  flags.options.arrivals_ms = std::move(*arrivals);
  auto report = runLab(flags.options);
  if (!report) return report.error();
  if (Status s = writeSvg(flags.svg_path, renderSvg(*report)); !s.ok()) return s;
  out << (flags.json ? formatJson(*report) : formatText(*report));
  return okStatus();
}

}  // namespace floodgate::http::lab
