// SPDX-License-Identifier: MIT
// Random bytes for keys and seeds an attacker must not guess: the kernel's getrandom(), or
// std::random_device (/dev/urandom) where there is none, and an error rather than a
// guessable value when neither answers.
#pragma once

#include <cstddef>

#include "floodgate/common/result.h"

namespace floodgate {

// Fills `size` bytes at `out`; an error naming why when no source of randomness answered.
Status randomBytes(void* out, size_t size);

}  // namespace floodgate
