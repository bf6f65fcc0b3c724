// SPDX-License-Identifier: MIT
// CIDR lists (`allow:`, `deny:`, a rule's `match.src`): inline CIDRs and {file: PATH} entries.
#include <sys/stat.h>

#include <array>
#include <filesystem>
#include <set>

#include "config/cidr_file.h"
#include "config/sections.h"

namespace floodgate::config {
namespace {

constexpr const char* kListShape = "CIDRs and {file: PATH} entries";

// The path a `file:` entry names: relative ones are taken from the config file's directory.
std::string resolvePath(const std::string& base_dir, const std::string& path) {
  std::filesystem::path file(path);
  if (file.is_absolute() || base_dir.empty()) return file.lexically_normal().string();
  return (std::filesystem::path(base_dir) / file).lexically_normal().string();
}

// What tells one file from another: its device and inode where it can be looked at, so another
// spelling of its path (a link, `./`, absolute against relative) is the same file; else the
// path, whose read then reports what is wrong with it.
std::string fileIdentity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "path " + path;
  return "inode " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
}

// Reads the file a `file:` entry names into `out`, once per list: `read` holds the files read
// for this list so far, and a file read already adds nothing (its prefixes are in), so an
// entry repeated by a YAML alias, or under other spellings of its path, cannot make the parse
// read one large file without end.
void readFileEntry(YamlReader& reader, const YamlEntry& item, const std::string& what,
                   const std::string& base_dir, size_t most, DistinctCidrs& out,
                   std::set<std::string>& read) {
  std::optional<YamlFields> fields =
      reader.mapping(item, what + " entry", {"file", "may_be_empty"});
  if (!fields) return;
  const YamlEntry* file = fields->find("file");
  if (!file) {
    reader.error(item, what + " entry needs a file (e.g. {file: deny.txt})");
    return;
  }
  std::optional<std::string> name = reader.text(*file, "file");
  if (!name) return;
  bool may_be_empty = false;
  if (const YamlEntry* e = fields->find("may_be_empty")) {
    may_be_empty = reader.boolean(*e, "may_be_empty").value_or(false);
  }
  std::string path = resolvePath(base_dir, *name);
  if (!read.insert(fileIdentity(path)).second) return;
  std::string error;
  const size_t first = reader.errorCount();
  const std::optional<size_t> read_cidrs =
      readCidrFile(path, out, reader.diagnostics(), &error, most);
  if (!read_cidrs) {
    reader.error(*file, "cannot read CIDR file '" + path + "': " + error);
  } else if (*read_cidrs == 0 && reader.errorCount() == first && !may_be_empty) {
    // a feed that failed to download leaves an empty file: applied, it would empty the
    // running list (every blocked source let in, or every allowed one limited)
    reader.error(*file, "CIDR file '" + path +
                            "' holds no CIDR, which would empty the running list: fix the file, "
                            "or add may_be_empty: true to this entry if it may be empty");
  }
  reader.anchorSince(first, file->value);
}

}  // namespace

std::vector<Cidr> parseCidrList(YamlReader& reader, const YamlEntry& entry, const std::string& what,
                                const std::string& base_dir, const CidrListBound& bound) {
  DistinctCidrs out;
  if (!reader.list(entry, what, kListShape)) return {};
  std::set<std::string> files;  // read for this list
  for (const YAML::Node& value : entry.value) {
    YamlEntry item{entry.value, value};
    if (value.IsMap()) {
      // past the bound in one family, the file is read no further
      readFileEntry(reader, item, what, base_dir, bound.per_family, out, files);
    } else if (!value.IsScalar()) {
      reader.error(
          item, what + " entries must be CIDRs or {file: PATH} (got " + describeNode(value) + ")");
    } else if (Result<Cidr> cidr = parseCidr(value.Scalar()); !cidr) {
      reader.error(item, cidr.error().message);
    } else {
      out.add(*cidr);
    }
    for (auto [family, name] : {std::pair{Family::kV4, "IPv4"}, std::pair{Family::kV6, "IPv6"}}) {
      if (out.count(family) <= bound.per_family) continue;
      reader.error(entry.key, what + " holds more " + name + " prefixes than " + bound.limit +
                                  " (" + std::to_string(bound.per_family) + "): " + bound.fix);
      return {};
    }
  }
  return out.take();
}

}  // namespace floodgate::config
