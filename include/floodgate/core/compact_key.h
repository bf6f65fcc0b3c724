// SPDX-License-Identifier: MIT
// CompactKey: a store key in 24 bytes, inline up to 23 bytes (IPv4, most API keys' prefix).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace floodgate::http {

// Owns a copy of a key. Keys up to kInline bytes live inside the object; longer ones on the
// heap. Movable, not copyable. Not thread-safe (the store's shard lock guards it).
class CompactKey {
 public:
  static constexpr size_t kInline = 23;

  CompactKey() = default;
  ~CompactKey() { release(); }
  CompactKey(CompactKey&& other) noexcept;
  CompactKey& operator=(CompactKey&& other) noexcept;
  CompactKey(const CompactKey&) = delete;
  CompactKey& operator=(const CompactKey&) = delete;

  void assign(std::string_view key);
  std::string_view view() const;

 private:
  static constexpr uint8_t kOnHeap = 0xff;
  void release();

  // Inline: bytes_[0..22] hold the key, bytes_[23] its length. On the heap: bytes_[0..7]
  // the pointer, bytes_[8..15] the length, bytes_[23] == kOnHeap.
  unsigned char bytes_[24] = {};
};

}  // namespace floodgate::http
