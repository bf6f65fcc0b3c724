// SPDX-License-Identifier: MIT
// The lab's SVG pictures write every coordinate the same way: one decimal.
#pragma once

#include <string>

namespace floodgate::http::lab {

std::string svgNumber(double value);  // "12.5"

}  // namespace floodgate::http::lab
