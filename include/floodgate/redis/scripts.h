// SPDX-License-Identifier: MIT
// The Lua scripts that run each algorithm's read-modify-write atomically inside Redis.
#pragma once

#include <string>
#include <string_view>

#include "floodgate/core/algorithm.h"

namespace floodgate::http::redis {

// A script: its SHA1, for EVALSHA (and its body for EVAL when the server answers NOSCRIPT),
// and the name of the same script as a function of functionLibrary(), for FCALL.
struct Script {
  std::string body;
  std::string sha1;      // lower-case hex
  std::string function;  // "fg_<version>_<name>"
  std::string main;      // what runs per call; the rest of body is definitions
  // Writes nothing: registered with the no-writes flag, so Redis runs it when it refuses
  // writes (over maxmemory, a failed save), as it runs the reads the script makes.
  bool reads_only = false;
};

// Every script as one Redis function library (Redis 7): what the scripts share is defined
// once, at its top level, when the library is loaded (FUNCTION LOAD REPLACE), not on every
// call as EVALSHA runs it. Named "floodgate_<version>", the version a hash of its text, as
// are its functions: two versions of floodgate sharing a Redis each load and call their own.
struct FunctionLibrary {
  std::string name;
  std::string code;  // "#!lua name=<name>" and the library
};
const FunctionLibrary& functionLibrary();

// The Lua that defines check_word_size(), which every script and function calls first: it
// raises an error on a Redis whose Lua `struct` packs 8-byte integers short (a 32-bit
// build), where the states would not hold.
std::string_view wordSizeCheck();

// Every script works in microseconds: Lua numbers are doubles, exact below 2^53, and a
// Redis TIME reading in µs (about 1.8e15) fits where one in ns would not. Token buckets
// count nanotokens (10^-9 unit), so at `rate_milli` thousandths per second a bucket earns
// exactly `rate_milli` nanotokens per µs, as the in-memory one earns picotokens per ns.
//
// Decide: KEYS = the key's Redis keys (sliding_window_log has two: the log and a sequence
// for unique members; the others one). ARGV = now_us (empty: read Redis TIME; tests pass
// a virtual time), cost, extra (units to lease besides the cost, if admitted; only for
// fixed_window, token_bucket and gcra), then the algorithm's parameters:
//   window algorithms: limit, window_us; buckets: capacity, rate_milli, interval_us.
// Returns {outcome (0 allowed, 1 rejected, 2 cost exceeds burst), delay_us, remaining,
//          reset_us, retry_after_us, now_us, leased}.
// The key's expiry is set in the same script, to when its state equals an absent key.
const Script& decideScript(AlgorithmKind kind);

// Decide together (every policy of one request, all or nothing): KEYS = every policy's Redis
// keys, one policy after another; ARGV = now_us ('' reads Redis TIME), charge ('1': charge
// every policy if all admit; '0': decide only, the request is refused elsewhere), then for
// each policy 7 values: its algorithm's name (as algorithmName() spells it), its number of
// keys, cost, and its parameters padded to 4 ('' for the missing). No leases.
// Every policy is read and decided before anything is written, so one that refuses leaves
// the others uncharged, atomically (never charged and given back later). A policy whose
// state cannot be read (a key of the wrong type) answers an error of its own; the others are
// then charged if all of them admit, as if it were not there (its own failure mode decides
// it, and the caller gives their units back if that refuses).
// Returns {charged (1 or 0), answer_1, answer_2, ...}: each answer as decide's (an admitted
// one as if charged, whether or not it was) or an error. In a cluster all KEYS must share a
// slot.
const Script& decideTogetherScript();

// Refund: same KEYS; ARGV = admitted_us, cost, now_us (-1 reads Redis TIME; tests pass a
// virtual time), then the same parameters. A bucket gives back only what it has not
// refilled since admitted_us (unrefilledNs()). Returns 0.
const Script& refundScript(AlgorithmKind kind);

// Heartbeat: KEYS = the fleet's sorted set; ARGV = now_us ('' reads Redis TIME), the
// instance id, expire_us. Scores the instance by now, drops members whose last beat is
// expire_us old or older, keeps the set for 2 x expire_us past the last beat, and returns
// the members left (this one included).
const Script& heartbeatScript();

// A stream entry holding more than this, in field and value strings or in their bytes, is
// more than any report or ban record: streamReadScript() sends it as its ID and the fields
// {kOversizedField, its bytes}, so whoever can write the stream cannot stall or swamp the
// hosts that read it with one huge entry.
inline constexpr int kStreamEntryMostFields = 16;
inline constexpr int kStreamEntryMostBytes = 16384;
inline constexpr const char* kOversizedField = "oversized";

// Reading a stream: KEYS = the stream; ARGV = the first ID to read (XRANGE's start), how
// many at most, the most bytes and the most strings an entry's fields may hold. Returns
// {Redis's clock in ms, [[id, [field, value, ...]], ...]} oldest first, each entry over
// either bound with its fields {kOversizedField, bytes}.
const Script& streamReadScript();

// The IDs only of a stream's entries, newest first: KEYS = the stream; ARGV = XREVRANGE's
// end and start, and how many at most. Returns [id, ...].
const Script& streamIdsBackScript();

// Sync (local buckets reconciled with Redis): one call for a batch of keys of one policy
// (in a cluster, keys of one slot). KEYS = the keys' Redis keys (the decide scripts' own,
// so state is shared with the exact store); ARGV = now_us ('' reads Redis TIME), then the
// parameters as three values (windows: limit, window_us, 0; buckets: capacity, rate_milli,
// interval_us), then for each key: spent (units admitted locally since its last sync) and
// the window index they were admitted in (fixed_window; ignored by the buckets).
// Adds every key's spent units to its state whatever the limit says (they were admitted:
// a bucket goes into debt, paid back by its refill before anything more is granted; a
// window counts past its limit; units of a window that has ended are dropped), and returns
// {now_us, remaining_1, reset_us_1, remaining_2, reset_us_2, ...}: the units each key has
// left for the whole fleet. fixed_window, token_bucket and gcra only.
const Script& syncScript(AlgorithmKind kind);

// Hex SHA1 of `text` (what Redis names a script by).
std::string sha1Hex(std::string_view text);

// Lowercase hex of `size` bytes.
std::string hexOf(const unsigned char* bytes, size_t size);

}  // namespace floodgate::http::redis
