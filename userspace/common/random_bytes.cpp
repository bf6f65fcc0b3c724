// SPDX-License-Identifier: MIT
// randomBytes: getrandom(), else std::random_device, else an error.
#include "floodgate/common/random_bytes.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <random>
#include <string>

namespace floodgate {

Status randomBytes(void* out, size_t size) {
  auto* bytes = static_cast<unsigned char*>(out);
  size_t got = 0;
  int error = 0;
  while (got < size) {
    const ssize_t n = getrandom(bytes + got, size - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      error = errno;  // no getrandom (a kernel before 3.17, a seccomp filter): below
      break;
    }
  }
  if (got == size) return okStatus();
  try {
    std::random_device device;  // /dev/urandom, or RDRAND
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<unsigned char>(device());
    return okStatus();
  } catch (const std::exception& e) {
    return Error::failure(std::string("no source of random bytes: getrandom() failed (") +
                          std::strerror(error) + ") and so did /dev/urandom (" + e.what() +
                          "); make /dev/urandom readable or allow the getrandom system call");
  }
}

}  // namespace floodgate
