// SPDX-License-Identifier: MIT
// CompactKey's inline and heap storage.
#include "floodgate/core/compact_key.h"

#include <cstring>

namespace floodgate::http {

CompactKey::CompactKey(CompactKey&& other) noexcept {
  std::memcpy(bytes_, other.bytes_, sizeof bytes_);
  std::memset(other.bytes_, 0, sizeof other.bytes_);
}

CompactKey& CompactKey::operator=(CompactKey&& other) noexcept {
  if (this != &other) {
    release();
    std::memcpy(bytes_, other.bytes_, sizeof bytes_);
    std::memset(other.bytes_, 0, sizeof other.bytes_);
  }
  return *this;
}

void CompactKey::release() {
  if (bytes_[23] == kOnHeap) {
    char* data;
    std::memcpy(&data, bytes_, sizeof data);
    delete[] data;
  }
  std::memset(bytes_, 0, sizeof bytes_);
}

void CompactKey::assign(std::string_view key) {
  release();
  if (key.size() <= kInline) {
    std::memcpy(bytes_, key.data(), key.size());
    bytes_[23] = static_cast<unsigned char>(key.size());
    return;
  }
  char* data = new char[key.size()];
  std::memcpy(data, key.data(), key.size());
  size_t size = key.size();
  std::memcpy(bytes_, &data, sizeof data);
  std::memcpy(bytes_ + 8, &size, sizeof size);
  bytes_[23] = kOnHeap;
}

std::string_view CompactKey::view() const {
  if (bytes_[23] != kOnHeap) {
    return {reinterpret_cast<const char*>(bytes_), bytes_[23]};
  }
  const char* data;
  size_t size;
  std::memcpy(&data, bytes_, sizeof data);
  std::memcpy(&size, bytes_ + 8, sizeof size);
  return {data, size};
}

}  // namespace floodgate::http
