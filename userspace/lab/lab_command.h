// SPDX-License-Identifier: MIT
// The whole of `floodgate lab` behind its flags: run, then print text or JSON, write the SVG.
#pragma once

#include <ostream>
#include <string>

#include "common/result.h"
#include "lab/lab.h"

namespace floodgate::http::lab {

// The flags of `floodgate lab` as given; `arrivals` is the raw --arrivals text.
struct LabFlags {
  LabOptions options;
  std::string arrivals;
  bool json = false;
  std::string svg_path;  // empty: no picture
};

// Parses the arrivals, replays, writes the report to `out` (text, or JSON with --json) and
// the SVG to svg_path. Usage errors for bad flags; a failure if the SVG cannot be written.
Status runLabCommand(LabFlags flags, std::ostream& out);

}  // namespace floodgate::http::lab
