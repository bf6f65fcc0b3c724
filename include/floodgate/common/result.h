// SPDX-License-Identifier: MIT
// Result<T>: a value or a one-line error, the way failures cross every boundary.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace floodgate {

// Exit code of the CLI for an error: usage errors (bad flags, bad values) are 2.
enum class ErrorKind { kFailure = 1, kUsage = 2 };

// One line that says what failed and how to fix it.
struct Error {
  std::string message;
  ErrorKind kind = ErrorKind::kFailure;

  static Error usage(std::string message) { return {std::move(message), ErrorKind::kUsage}; }
  static Error failure(std::string message) { return {std::move(message), ErrorKind::kFailure}; }
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : state_(std::move(error)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<Error>(state_); }

 private:
  std::variant<T, Error> state_;
};

// Result of an operation that produces nothing but may fail.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

using Status = Result<void>;

inline Status okStatus() { return {}; }

}  // namespace floodgate
