// SPDX-License-Identifier: MIT
// The whole of `floodgate lab` behind its flags: run (algorithms, or --sharing), then print
// text or JSON and write the SVG.
#pragma once

#include <ostream>
#include <string>

#include "floodgate/common/result.h"
#include "lab/lab.h"
#include "lab/sharing.h"

namespace floodgate::http::lab {

// The flags of `floodgate lab` as given; `arrivals` is the raw --arrivals text.
// With `sharing`, the lab compares central counting with prefetch instead of algorithms:
// sharing_options with its limit from options.limit (--limit), and node_arrivals the raw
// --node-arrivals texts, one per node.
struct LabFlags {
  LabOptions options;
  std::string arrivals;
  bool sharing = false;
  SharingOptions sharing_options;
  std::vector<std::string> node_arrivals;
  bool json = false;
  std::string svg_path;  // empty: no picture
};

// Parses the arrivals, replays (or plays the sharing modes), writes the report to `out` (text, or
// JSON with --json) and the SVG to svg_path. Usage errors for bad flags; a failure if the SVG
// cannot be written.
Status runLabCommand(LabFlags flags, std::ostream& out);

}  // namespace floodgate::http::lab
