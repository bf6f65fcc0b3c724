// SPDX-License-Identifier: MIT
// Typed wrappers over a BPF map fd: BpfMap<Key, Value> and PerCpuArray<Value>.
// Not thread-safe per object; the kernel makes each single-element operation atomic.
#pragma once

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "floodgate/common/result.h"
#include "kernel/unique_fd.h"

namespace floodgate {

// "what failed: strerror(errno)", the one line for a failed syscall on a map.
inline Error mapError(const std::string& map, const char* what, int err) {
  return Error::failure("BPF map '" + map + "': " + what + " failed: " + std::strerror(err));
}

// The sizes of a map's key and value in bytes, as the kernel has them (for a per-CPU map,
// one CPU's value).
struct MapLayout {
  uint32_t key_size = 0;
  uint32_t value_size = 0;
  bool operator==(const MapLayout&) const = default;
};

// What the kernel says of the map behind `fd` (its sizes, its number of entries).
inline Result<bpf_map_info> mapInfo(int fd, const std::string& name) {
  bpf_map_info info{};
  uint32_t length = sizeof(info);
  if (bpf_obj_get_info_by_fd(fd, &info, &length) != 0) return mapError(name, "info", errno);
  return info;
}

// Opens the map pinned at `path` and refuses it unless the kernel's key and value sizes are
// `expected` (a map of another layout, pinned by another build, would be misread), in one
// line that names the map, the sizes expected and found, and ends with `remedy`.
inline Result<UniqueFd> openPinnedMap(const std::string& path, const std::string& name,
                                      MapLayout expected, const std::string& remedy) {
  UniqueFd fd(bpf_obj_get(path.c_str()));
  if (!fd.valid()) {
    const int err = errno;
    return Error::failure("cannot open pinned map " + path + ": " + std::strerror(err) +
                          (err == ENOENT ? " (pinned by an older floodgate: detach the "
                                           "interface and attach it again)"
                                         : ""));
  }
  auto info = mapInfo(fd.get(), name);
  if (!info) return info.error();
  const MapLayout found{info->key_size, info->value_size};
  if (found == expected) return fd;
  std::string has, wants;
  auto describe = [&](const char* what, uint32_t found_size, uint32_t expected_size) {
    if (found_size == expected_size) return;
    has += (has.empty() ? "" : " and ") + std::to_string(found_size) + "-byte " + what;
    wants += (wants.empty() ? "" : " and ") + std::to_string(expected_size);
  };
  describe("keys", found.key_size, expected.key_size);
  describe("values", found.value_size, expected.value_size);
  return Error::failure("the pinned map '" + name + "' (" + path + ") has " + has +
                        ", this floodgate expects " + wants +
                        " (pinned by another version): " + remedy);
}

inline constexpr const char* kReattachRemedy = "detach the interface and attach it again";

template <class Key, class Value>
class BpfMap {
 public:
  static constexpr MapLayout kLayout{sizeof(Key), sizeof(Value)};

  BpfMap() = default;
  // Not open yet: `name` is the map's name in the BPF object, and the name of its pin.
  explicit BpfMap(std::string name) : name_(std::move(name)) {}
  BpfMap(UniqueFd fd, std::string name) : fd_(std::move(fd)), name_(std::move(name)) {}

  // Opens a map pinned at `path`, refusing one whose key or value has another size than
  // this build's (see openPinnedMap; `remedy` says what to do then).
  static Result<BpfMap> openPinned(const std::string& path, const std::string& name,
                                   const std::string& remedy = kReattachRemedy) {
    auto fd = openPinnedMap(path, name, kLayout, remedy);
    if (!fd) return fd.error();
    return BpfMap(std::move(*fd), name);
  }

  int fd() const { return fd_.get(); }
  const std::string& name() const { return name_; }

  std::optional<Value> find(const Key& key) const {
    Value value{};
    if (bpf_map_lookup_elem(fd(), &key, &value) != 0) return std::nullopt;
    return value;
  }

  Result<Value> lookup(const Key& key) const {
    Value value{};
    if (bpf_map_lookup_elem(fd(), &key, &value) != 0) return mapError(name_, "lookup", errno);
    return value;
  }

  Status update(const Key& key, const Value& value) {
    if (bpf_map_update_elem(fd(), &key, &value, BPF_ANY) != 0) {
      return mapError(name_, "update", errno);
    }
    return okStatus();
  }

  // Inserts only if absent; false if the key was already there.
  Result<bool> insertNew(const Key& key, const Value& value) {
    if (bpf_map_update_elem(fd(), &key, &value, BPF_NOEXIST) == 0) return true;
    if (errno == EEXIST) return false;
    return mapError(name_, "insert", errno);
  }

  // Replaces the value of a key that is there; false if it is not (it was deleted).
  Result<bool> replaceExisting(const Key& key, const Value& value) {
    if (bpf_map_update_elem(fd(), &key, &value, BPF_EXIST) == 0) return true;
    if (errno == ENOENT) return false;
    return mapError(name_, "update", errno);
  }

  // Removes `key`; false if it was not there.
  Result<bool> erase(const Key& key) {
    if (bpf_map_delete_elem(fd(), &key) == 0) return true;
    if (errno == ENOENT) return false;
    return mapError(name_, "delete", errno);
  }

  // Every key, in the map's own order.
  Result<std::vector<Key>> keys() const {
    std::vector<Key> out;
    Key key{}, next{};
    const Key* previous = nullptr;
    while (bpf_map_get_next_key(fd(), previous, &next) == 0) {
      out.push_back(next);
      key = next;
      previous = &key;
    }
    if (errno != ENOENT) return mapError(name_, "iterate", errno);
    return out;
  }

 private:
  UniqueFd fd_;
  std::string name_;
};

// A BPF_MAP_TYPE_PERCPU_ARRAY: each index holds one Value per possible CPU.
template <class Value>
class PerCpuArray {
 public:
  static constexpr MapLayout kLayout{sizeof(uint32_t), sizeof(Value)};

  PerCpuArray() = default;
  explicit PerCpuArray(std::string name) : name_(std::move(name)) {}
  PerCpuArray(UniqueFd fd, std::string name) : fd_(std::move(fd)), name_(std::move(name)) {}

  // Opens a per-CPU array pinned at `path`, refusing one of another layout (as BpfMap).
  static Result<PerCpuArray> openPinned(const std::string& path, const std::string& name,
                                        const std::string& remedy = kReattachRemedy) {
    auto fd = openPinnedMap(path, name, kLayout, remedy);
    if (!fd) return fd.error();
    return PerCpuArray(std::move(*fd), name);
  }

  int fd() const { return fd_.get(); }
  const std::string& name() const { return name_; }

  // The values of every CPU at `index`.
  Result<std::vector<Value>> lookup(uint32_t index) const {
    static_assert(sizeof(Value) % 8 == 0, "per-CPU values are laid out 8-byte aligned");
    int cpus = libbpf_num_possible_cpus();
    if (cpus <= 0) return Error::failure("cannot count the possible CPUs");
    std::vector<Value> values(static_cast<size_t>(cpus));
    if (bpf_map_lookup_elem(fd(), &index, values.data()) != 0) {
      return mapError(name_, "lookup", errno);
    }
    return values;
  }

  // Zeroes `index` on every CPU.
  Status clear(uint32_t index) {
    int cpus = libbpf_num_possible_cpus();
    std::vector<Value> zeros(static_cast<size_t>(cpus > 0 ? cpus : 1));
    if (bpf_map_update_elem(fd(), &index, zeros.data(), BPF_ANY) != 0) {
      return mapError(name_, "clear", errno);
    }
    return okStatus();
  }

 private:
  UniqueFd fd_;
  std::string name_;
};

}  // namespace floodgate
