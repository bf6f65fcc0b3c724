// SPDX-License-Identifier: MIT
// writeFileAtomically: replaceFile, its directories made, its errors naming the path.
#include "floodgate/fleet/atomic_file.h"

#include "floodgate/common/write_file.h"

namespace floodgate::http {

Status writeFileAtomically(const std::string& path, const std::string& text) {
  if (Status s = replaceFile(path, text, ReplaceFileOptions{.make_directories = true}); !s) {
    return Error::failure("cannot write " + path + ": " + s.error().message);
  }
  return okStatus();
}

}  // namespace floodgate::http
