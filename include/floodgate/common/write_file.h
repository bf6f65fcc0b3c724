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
// leaves the file as it was. Written by root, so a link another user could have planted
// (/tmp/x pointing to /etc) is not followed, or root would write wherever it points: the
// directories of the path are opened one by one, following only a link root owns in a
// directory only root may write (as /var/run, pointing to /run), where the path starts (/ or
// the working directory) taken as it is; and `path` itself must be a regular file or none.
// An error says why alone ("'/tmp/x' is a symbolic link (to '/etc'); give a path with no link
// in it ..."), for the caller to put in context.
Status replaceFile(const std::string& path, const std::string& text,
                   const ReplaceFileOptions& options = {});

}  // namespace floodgate
