// SPDX-License-Identifier: MIT
// Replacing a file as root, safely: readers see the old content or the new, never a part of
// either, and no symbolic link in the path is followed.
#pragma once

#include <string>

#include "floodgate/common/result.h"

namespace floodgate {

struct ReplaceFileOptions {
  bool make_directories = false;  // a missing directory of the path is made (mode 0755)
};

// Writes `text` to a new file beside `path`, fsyncs it, renames it over `path` (mode 0644,
// whatever the umask: services read it as another user) and fsyncs the directory, so a reader
// that opens `path` at any moment, even across a crash, reads a whole file, and a failure
// leaves the file as it was. Written by root, so no link is followed: the directories of the
// path are opened one by one without following one (where the path starts, / or the working
// directory, is taken as it is), and `path` itself must be a regular file or none. One
// planted where others may write (/tmp/x pointing to /etc) would otherwise have root write
// wherever it points. An error says why alone ("'/tmp/x' is a symbolic link (to '/etc'); give
// a path with no link in it"), for the caller to put in context.
Status replaceFile(const std::string& path, const std::string& text,
                   const ReplaceFileOptions& options = {});

}  // namespace floodgate
