// SPDX-License-Identifier: MIT
// MappedValue<T>: the values of an mmapable BPF array (the first, or the first N), mapped
// into this process so fields can be changed with atomic operations the program's own
// atomics do not race with.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "floodgate/common/result.h"

namespace floodgate {

template <class T>
class MappedValue {
 public:
  MappedValue() = default;
  MappedValue(MappedValue&& other) noexcept
      : memory_(std::exchange(other.memory_, nullptr)), length_(other.length_) {}
  MappedValue& operator=(MappedValue&& other) noexcept {
    if (this != &other) {
      unmap();
      memory_ = std::exchange(other.memory_, nullptr);
      length_ = other.length_;
    }
    return *this;
  }
  MappedValue(const MappedValue&) = delete;
  MappedValue& operator=(const MappedValue&) = delete;
  ~MappedValue() { unmap(); }

  // Maps entries 0 to count - 1 of the BPF_F_MMAPABLE array behind `fd` (get()[i]).
  static Result<MappedValue> map(int fd, const std::string& name, size_t count = 1) {
    MappedValue out;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    out.length_ = (count * sizeof(T) + page - 1) / page * page;
    void* memory = mmap(nullptr, out.length_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (memory == MAP_FAILED) {
      return Error::failure("cannot map BPF map '" + name + "': " + std::strerror(errno));
    }
    out.memory_ = static_cast<T*>(memory);
    return out;
  }

  T* get() const { return memory_; }

 private:
  void unmap() {
    if (memory_) munmap(memory_, length_);
    memory_ = nullptr;
  }
  T* memory_ = nullptr;
  size_t length_ = 0;
};

}  // namespace floodgate
