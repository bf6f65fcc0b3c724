// SPDX-License-Identifier: MIT
// The Lua text of every decide and refund script; each mirrors its in-memory algorithm.
#include "floodgate/redis/scripts.h"

#include <openssl/sha.h>

#include <algorithm>
#include <vector>

namespace floodgate::http::redis {

namespace {

// Shared by every script. Redis 7 replicates a script's effects, not the script, so reading
// TIME before writing is allowed and replicas store the same state.
constexpr std::string_view kPrelude = R"lua(
local function now_us(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function ceildiv(a, b)
  if a <= 0 then return 0 end
  return math.ceil(a / b)
end
-- Expire the state when it equals an absent key; at least 1 ms.
local function expire_after(key, us)
  redis.call('PEXPIRE', key, math.max(1, math.ceil(us / 1000)))
end
-- A key's state: its integers packed as 8-byte little-endian signed integers (struct.pack),
-- one GET (or the MGET of the decide-together function: `read`, the value already read, if
-- it was a string) and one SET with its expiry, read without matching a pattern and written
-- without formatting a number. A value of another length, or with a field out of its range
-- (a time beyond 2^53 µs, a negative count, a length below 1), is read as absent: the key
-- starts fresh. Text never passes: each 8 bytes of text end in a printable byte, >= 2^61.
-- A key of another type fails the GET (WRONGTYPE).
local BIG = 9007199254740992
local function time_ok(t) return t > -BIG and t < BIG end
local function count_ok(n) return n >= 0 and n < BIG end
local function length_ok(w) return w >= 1 and w < BIG end
-- "W N L": window index, count, window length (µs) (the fixed window).
local function read_fixed(key, read)
  local v = read or redis.call('GET', key)
  if not v or #v ~= 24 then return nil end
  local i, n, w = struct.unpack('<i8i8i8', v)
  if time_ok(i) and count_ok(n) and length_ok(w) then return i, n, w end
  return nil
end
-- "W C P L": window index, current and previous counts, window length (µs).
local function read_counter(key, read)
  local v = read or redis.call('GET', key)
  if not v or #v ~= 32 then return nil end
  local i, c, p, w = struct.unpack('<i8i8i8i8', v)
  if time_ok(i) and count_ok(c) and count_ok(p) and length_ok(w) then return i, c, p, w end
  return nil
end
-- "M T": nanotokens missing from a full bucket, time of the last refill (µs).
local function read_bucket(key, read)
  local v = read or redis.call('GET', key)
  if not v or #v ~= 16 then return nil end
  local m, t = struct.unpack('<i8i8', v)
  if count_ok(m) and time_ok(t) then return m, t end
  return nil
end
-- An expiry of us µs in whole ms: rounded up, at least 1.
local function ms(us) return math.max(1, math.ceil(us / 1000)) end
-- Writes the state v; us: expire when it equals an absent key, nil: keep the key's expiry.
local function write_state(key, us, v)
  if us then
    redis.call('SET', key, v, 'PX', ms(us))
  else
    redis.call('SET', key, v, 'KEEPTTL')
  end
end
-- What a decide function answered to write: `put` (expiring in put_ms) when the request is
-- charged, `keep` (in keep_ms) when it is not; nil: nothing. A function `put` writes itself.
local function store(key, charge, put, put_ms, keep, keep_ms)
  if charge then
    if type(put) == 'function' then
      put()
    elseif put then
      redis.call('SET', key, put, 'PX', put_ms)
    end
  elseif keep then
    redis.call('SET', key, keep, 'PX', keep_ms)
  end
end
)lua";

// Exact a*b <=> c*d when each product's smaller factor is below 2^27 and its larger below
// 2^52 (counts times µs, which as doubles would lose bits): the larger factor is split into
// 26-bit halves. Returns -1, 0 or 1.
constexpr std::string_view kMulCmp = R"lua(
local HALF = 67108864
local HALF_EXACT = 4503599627370496
local function mul(a, b)
  if a > b then a, b = b, a end
  local bh, bl = math.floor(b / HALF), b % HALF
  local lo = a * bl
  local hi = a * bh + math.floor(lo / HALF)
  return hi, lo % HALF
end
-- Products below 2^53 in magnitude are exact as Lua numbers: compared as they are.
local EXACT = 9007199254740992
local function mulcmp(a, b, c, d)
  local x, y = a * b, c * d
  if x < EXACT and x > -EXACT and y < EXACT and y > -EXACT then
    if x < y then return -1 elseif x > y then return 1 else return 0 end
  end
  local h1, l1 = mul(a, b)
  local h2, l2 = mul(c, d)
  if h1 ~= h2 then return h1 < h2 and -1 or 1 end
  if l1 ~= l2 then return l1 < l2 and -1 or 1 end
  return 0
end
-- floor(a * b / p), exact under the same bounds for a x b and for the answer x p.
local function muldiv(a, b, p)
  -- a x b and p below 2^52 (and not negative): a x b / p, correctly rounded, is never
  -- rounded up to the next whole number, so its floor is exact.
  local x = a * b
  if x >= 0 and x < HALF_EXACT and p > 0 and p < HALF_EXACT then return math.floor(x / p) end
  local q = math.floor(a * (b / p))
  while q > 0 and mulcmp(q, p, a, b) > 0 do q = q - 1 end
  while mulcmp(q + 1, p, a, b) <= 0 do q = q + 1 end
  return q
end
-- The largest q with q x p < a x b: floor((a x b - 1) / p), under the same bounds.
local function below(a, b, p)
  local q = muldiv(a, b, p)
  if mulcmp(q, p, a, b) == 0 then q = q - 1 end
  return q
end
)lua";

// Every decide function below reads a key's state and decides, writing nothing yet:
//   fn(key, key2, read, now, cost, extra, p1, p2, p3, p4) -> reply, put, put_ms, keep, keep_ms
// key2: the second key (the sliding log's sequence); read: the key's value if already read.
// reply = {outcome (0 allowed, 1 rejected, 2 cost exceeds burst), delay_us, remaining,
// reset_us, retry_after_us, now_us, leased}, as if charged when admitted; store() then
// writes the state: `put`, with the request's units, when charged (only an admitted one), or
// `keep`, without them (a refused request, or one admitted in a group that refused as a
// whole). Multiple values rather than a closure: nothing to allocate for them.
// Their reads fail (WRONGTYPE) before anything is written; their writes cannot.

// State "W:N:L": W = window index, N = count, L = the window length (µs) they were counted
// in. A window of another length holds, at that length, until it ends; the next one starts
// at the caller's: while a fleet runs a policy's old and new window side by side, each
// counts on in the other's window rather than starting it over (a client alternating
// between them would never be limited). A changed limit applies to the counts as they are.
constexpr std::string_view kFixedWindowDecide = R"lua(
local function fixed_window(key, _, read, now, cost, extra, limit, w)
  limit, w = tonumber(limit), tonumber(w)
  local index, n, l = read_fixed(key, read)
  if not index then
    index = 0; n = 0
  elseif l ~= w then
    if now < (index + 1) * l then w = l else index = 0; n = 0 end
  end
  local current = math.floor(now / w)
  if current > index then index = current; n = 0 end
  local window_end = (index + 1) * w
  local outcome, retry, leased, taken = 0, 0, 0, 0
  if cost > limit then
    outcome = 2
  elseif n + cost <= limit then
    leased = math.min(extra, limit - n - cost)
    taken = cost + leased
  else
    outcome = 1
    retry = window_end - now
  end
  -- uncharged, the state as read is still right: the window's turn is recomputed on read
  local put
  if outcome == 0 then put = struct.pack('<i8i8i8', index, n + taken, w) end
  return {outcome, 0, limit - n - taken, window_end - now, retry, now, leased}, put,
         ms(window_end - now)
end
)lua";

constexpr std::string_view kFixedWindowRefund = R"lua(
local at, cost = tonumber(ARGV[1]), tonumber(ARGV[2])
local index, n, l = read_fixed(KEYS[1])
if not index then return 0 end
-- Only while the request's window is the current one (at the length it is counted at);
-- later it no longer matters.
if math.floor(at / l) ~= index then return 0 end
write_state(KEYS[1], nil, struct.pack('<i8i8i8', index, math.max(0, n - cost), l))
return 0
)lua";

// log: a sorted set of unit ids scored by arrival µs; seq: the id sequence.
constexpr std::string_view kSlidingLogDecide = R"lua(
local function sliding_window_log(log, seq, _, now, cost, extra, limit, w)
  limit, w = tonumber(limit), tonumber(w)
  -- read first, so that a sequence of the wrong type fails before anything is written
  redis.call('GET', seq)
  -- An age of a whole window is outside it; a stale now (t > now) is a negative age: inside.
  -- Dropping what aged out changes no decision: written now, charged or not.
  redis.call('ZREMRANGEBYSCORE', log, '-inf', now - w)
  local count = redis.call('ZCARD', log)
  local outcome, retry = 0, 0
  local last = redis.call('ZRANGE', log, -1, -1, 'WITHSCORES')
  local last_at = last[2] and tonumber(last[2]) or nil
  local at = now
  if last_at and last_at > now then at = last_at end
  if cost > limit then
    outcome = 2
  elseif count + cost <= limit then
    count = count + cost
    last_at = at
  else
    outcome = 1
    -- The retry fits once the (count + cost - limit) oldest units have aged out.
    local must = count + cost - limit
    local oldest = redis.call('ZRANGE', log, must - 1, must - 1, 'WITHSCORES')
    retry = math.max(1, tonumber(oldest[2]) + w - now)
  end
  local reset = 0
  if count > 0 then reset = math.max(0, last_at + w - now) end
  local function write()
    local id = redis.call('INCRBY', seq, cost) - cost
    local args = {}
    for i = 1, cost do
      args[#args + 1] = at
      args[#args + 1] = id + i
      if #args >= 1000 or i == cost then
        redis.call('ZADD', log, unpack(args))
        args = {}
      end
    end
    expire_after(log, at + w - now)
    expire_after(seq, at + w - now)
  end
  return {outcome, 0, limit - count, reset, retry, now, 0}, outcome == 0 and write or nil
end
)lua";

constexpr std::string_view kSlidingLogRefund = R"lua(
local at, cost, now, w = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[5])
if now < 0 then now = now_us('') end
-- The request's units are the earliest logged at or after its arrival, while they cannot
-- have aged out: once the arrival is a window old, those would be later requests' units
-- (or a log started since), and nothing is given back.
if at <= now - w then return 0 end
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], at, '+inf', 'LIMIT', 0, cost)
if #ids > 0 then redis.call('ZREM', KEYS[1], unpack(ids)) end
return 0
)lua";

// State "W:C:P:L": W = window index, C = current count, P = previous count, L = the window
// length (µs); windows of another length hold, at that length, until the counts in them no
// longer weigh (two of those windows), as in the fixed window. The classic rule: cost
// is admitted when the estimate prev x (W - elapsed) / W + curr, plus cost - 1, is below the
// limit, compared multiplied by W, exactly (mulcmp): prev x (W - e) < (limit - curr - cost + 1) x
// W.
constexpr std::string_view kSlidingCounterDecide = R"lua(
local function sliding_window_counter(key, _, read, now, cost, extra, limit, w)
  limit, w = tonumber(limit), tonumber(w)
  local index, curr, prev, l = read_counter(key, read)
  if not index then
    index = 0; curr = 0; prev = 0
  elseif l ~= w then
    if now < (index + 2) * l then w = l else index = 0; curr = 0; prev = 0 end
  end
  local current = math.floor(now / w)
  if current == index + 1 then
    prev = curr; curr = 0
  elseif current > index + 1 then
    prev = 0; curr = 0
  end
  index = math.max(index, current)
  local start = index * w
  local elapsed = math.min(math.max(now - start, 0), w - 1)
  local outcome, retry, taken = 0, 0, 0
  if cost > limit then
    outcome = 2
  elseif limit - curr - cost >= 0 and mulcmp(prev, w - elapsed, limit - curr - cost + 1, w) < 0 then
    taken = cost
  else
    outcome = 1
    local retry_at
    if curr + cost <= limit then
      -- Later in this window prev weighs less: prev x (W - e) < (limit - curr - cost + 1) x W.
      retry_at = start + w - below(limit - curr - cost + 1, w, prev)
    else
      -- In the next window curr becomes prev: curr x (W - e) < (limit - cost + 1) x W.
      local e = 0
      if curr > 0 and limit - cost < curr then
        e = math.max(0, w - below(limit - cost + 1, w, curr))
      end
      retry_at = start + w + e
    end
    retry = math.max(1, retry_at - now)
  end
  -- uncharged, the state as read is still right: its windows' turn is recomputed on read
  local put
  if outcome == 0 then put = struct.pack('<i8i8i8i8', index, curr + taken, prev, w) end
  -- remaining = limit - curr - floor(prev x (W - elapsed) / W): units of cost 1 still admitted
  local weighted = muldiv(prev, w - elapsed, w)
  local remaining = math.max(0, limit - curr - taken - weighted)
  local reset = 0
  if curr + taken > 0 then reset = start + 2 * w - now elseif prev > 0 then reset = start + w - now end
  return {outcome, 0, remaining, reset, retry, now, 0}, put, ms(start + 2 * w - now)
end
)lua";

constexpr std::string_view kSlidingCounterRefund = R"lua(
local at, cost = tonumber(ARGV[1]), tonumber(ARGV[2])
local stored, curr, prev, l = read_counter(KEYS[1])
if not stored then return 0 end
local index = math.floor(at / l)
if index == stored then
  write_state(KEYS[1], nil, struct.pack('<i8i8i8i8', stored, math.max(0, curr - cost), prev, l))
elseif index == stored - 1 then
  write_state(KEYS[1], nil, struct.pack('<i8i8i8i8', stored, curr, math.max(0, prev - cost), l))
end
return 0
)lua";

// State "M:T": M = nanotokens missing from a full bucket, T = time of the last refill (µs).
// After a change of the policy's limits the tokens used stay used (at most the new
// capacity) and refill at the new rate.
constexpr std::string_view kTokenBucketDecide = R"lua(
local function token_bucket(key, _, read, now, cost, extra, capacity, rate)
  capacity, rate = tonumber(capacity), tonumber(rate)
  local UNIT = 1000000000
  -- extra < 0: a sync store's decision, where tokens missing beyond the capacity are the
  -- fleet's debt (its sync admitted more than the bucket held), not a lowered capacity
  local debt = extra < 0
  if debt then extra = 0 end
  local missing, at = read_bucket(key, read)
  if not missing then missing = 0; at = 0 end
  if now > at then
    -- Compare before multiplying so a long idle period stays exact.
    if now - at >= ceildiv(missing, rate) then missing = 0 else missing = missing - (now - at) * rate end
    at = now
  end
  local capped = false
  if missing > capacity * UNIT and not debt then missing = capacity * UNIT; capped = true end
  local available = capacity * UNIT - missing
  local need = cost * UNIT
  local outcome, retry, leased, taken = 0, 0, 0, 0
  if cost > capacity then
    outcome = 2
  elseif need <= available then
    leased = math.min(extra, math.floor((available - need) / UNIT))
    taken = need + leased * UNIT
  else
    outcome = 1
    retry = math.max(1, at + ceildiv(need - available, rate) - now)
  end
  local reset = math.max(0, at + ceildiv(missing + taken, rate) - now)
  local put, keep, keep_ms
  if outcome == 0 then put = struct.pack('<i8i8', missing + taken, at) end
  -- Uncharged, the state as read refills to the same on the next read, and expires when
  -- full as it is: written only when a lowered capacity capped it (the cap must stick).
  if capped then
    keep = struct.pack('<i8i8', missing, at)
    keep_ms = ms(math.max(0, at + ceildiv(missing, rate) - now))
  end
  return {outcome, 0, math.max(0, math.floor((available - taken) / UNIT)), reset, retry, now,
          leased}, put, ms(reset), keep, keep_ms
end
)lua";

// Only the nanotokens not refilled since the admission come back (unrefilledNs() in
// algorithm.h): the bucket refilled meanwhile as if the request were served.
constexpr std::string_view kTokenBucketRefund = R"lua(
local at, cost, now, rate = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]),
                            tonumber(ARGV[5])
local m, t = read_bucket(KEYS[1])
if not m then return 0 end
if now < 0 then now = now_us('') end
local charged = cost * 1000000000
local elapsed = math.max(0, now - at)
-- compared before multiplying, so the product stays below the charge (exact)
if elapsed >= ceildiv(charged, rate) then return 0 end
write_state(KEYS[1], nil, struct.pack('<i8i8', math.max(0, m - (charged - elapsed * rate)), t))
return 0
)lua";

// One value, "TAT:INTERVAL": the theoretical arrival time and the interval per unit it was
// counted in (µs). After the policy's rate or capacity changed, the units used (tat - now
// at the old interval) stay used, at most the new capacity, and drain at the new interval
// (the carried state is written back even when the request is refused, so it goes on
// draining at the new interval); a fraction of a unit is forgiven. GCRA and the leaky
// bucket share the arithmetic; the leaky bucket also answers the delay until its turn.
constexpr std::string_view kGcraState = R"lua(
-- Also true when the key held a state; an absent key, or a value not of the format, reads
-- as a time of 0 at the policy's interval (a fresh key).
local function read_tat(key, interval, read)
  local v = read or redis.call('GET', key)
  if not v or #v ~= 16 then return 0, interval, false end
  local t, i = struct.unpack('<i8i8', v)
  if time_ok(t) and length_ok(i) then return t, i, true end
  return 0, interval, false
end
local function write_tat(key, tat, interval, ms)
  local v = struct.pack('<i8i8', tat, interval)
  if ms then redis.call('SET', key, v, 'PX', ms) else redis.call('SET', key, v, 'KEEPTTL') end
end
)lua";

constexpr std::string_view kGcraDecide = R"lua(
local function gcra(key, _, read, now, cost, extra, capacity, rate, interval, mode)
  capacity, interval = tonumber(capacity), tonumber(interval)
  local tat, was = read_tat(key, interval, read)
  local tolerance = capacity * interval
  local carried = false
  if was ~= interval and tat > now then
    tat = now + math.max(0, math.floor((tat - now) * interval / was) - 1)
    carried = true
  end
  -- extra < 0: a sync store's decision, where a tat beyond the tolerance is the fleet's
  -- debt (its sync admitted more than the burst), not a lowered capacity
  local debt = extra < 0
  if debt then extra = 0 end
  if tat > now + tolerance and not debt then  -- a lowered capacity: at most all of it is used
    tat = now + tolerance
    carried = true
  end
  local start = math.max(tat, now)
  local next_tat = start + cost * interval
  local outcome, delay, retry, leased = 0, 0, 0, 0
  local charged = tat
  if cost > capacity then
    outcome = 2
  elseif next_tat - now <= tolerance then
    if mode == 'queue' then delay = start - now end
    leased = math.min(extra, math.floor((tolerance - (next_tat - now)) / interval))
    charged = next_tat + leased * interval
  else
    outcome = 1
    retry = next_tat - tolerance - now
  end
  local put, keep
  if outcome == 0 then put = struct.pack('<i8i8', charged, interval) end
  -- uncharged, a carried state is still written, so it goes on draining at the new interval
  if carried then keep = struct.pack('<i8i8', tat, interval) end
  local used = math.max(0, charged - now)
  return {outcome, delay, math.max(0, math.floor((tolerance - used) / interval)), used, retry, now,
          leased}, put, ms(charged - now), keep, ms(tat - now)
end
)lua";

// A decide script of one algorithm: KEYS and ARGV as in scripts.h.
constexpr std::string_view kDecideOne = R"lua(
local reply, put, put_ms, keep, keep_ms = decide(KEYS[1], KEYS[2], nil, now_us(ARGV[1]),
                                                 tonumber(ARGV[2]), tonumber(ARGV[3]),
                                                 ARGV[4], ARGV[5], ARGV[6], ARGV[7])
store(KEYS[1], reply[1] == 0, put, put_ms, keep, keep_ms)
return reply
)lua";

// Every policy of one request in one run, all or nothing (see decideTogetherScript()).
// Everything is read and decided first and written after, so that a refusal anywhere
// charges nothing anywhere: nothing taken, and nothing to give back later.
constexpr std::string_view kDecideTable = R"lua(
local decide_by_name = {
  fixed_window = fixed_window, sliding_window_log = sliding_window_log,
  sliding_window_counter = sliding_window_counter, token_bucket = token_bucket,
  gcra = gcra, leaky_bucket = gcra,
}
)lua";

constexpr std::string_view kDecideTogether = R"lua(
local decide = decide_by_name
local now = now_us(ARGV[1])
local replies, writes = {}, {}
local admitted = true
-- Every key's value in one MGET, where a GET each would cost a redis.call each: a string is
-- used as read; a key that is missing, or of another type (MGET answers false for both), is
-- read again by its GET, which fails a key of another type (WRONGTYPE) as before.
local values = {}
if #KEYS > 1 then values = redis.call('MGET', unpack(KEYS)) end
-- writes: five entries a policy (its key, put, put_ms, keep, keep_ms), in one table
local k, a, m = 1, 3, 0
for i = 1, (#ARGV - 2) / 7 do
  local n = tonumber(ARGV[a + 1])
  local ok, reply, put, put_ms, keep, keep_ms =
    pcall(decide[ARGV[a]], KEYS[k], n > 1 and KEYS[k + 1] or nil, values[k], now,
          tonumber(ARGV[a + 2]), 0, ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6])
  if ok then
    replies[i] = reply
    writes[m + 1], writes[m + 2], writes[m + 3], writes[m + 4], writes[m + 5] =
      KEYS[k], put, put_ms, keep, keep_ms
    m = m + 5
    if reply[1] ~= 0 then admitted = false end
  else
    -- this policy alone fails (a key of the wrong type): its own failure mode decides it
    local message = type(reply) == 'table' and reply.err or tostring(reply)
    replies[i] = redis.error_reply(message)
  end
  k = k + n
  a = a + 7
end
local charge = admitted and ARGV[2] == '1'
for j = 1, m, 5 do
  store(writes[j], charge, writes[j + 1], writes[j + 2], writes[j + 3], writes[j + 4])
end
return {charge and 1 or 0, unpack(replies)}
)lua";

// Only the time not drained since the admission comes back (unrefilledNs() in
// algorithm.h), and a tat no earlier than now (a full bucket).
constexpr std::string_view kGcraRefund = R"lua(
local at, cost, now, interval = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]),
                                tonumber(ARGV[6])
local tat, was, found = read_tat(KEYS[1], interval)
-- nothing to give back to a key that reads as absent (as in the other refunds)
if not found then return 0 end
if now < 0 then now = now_us('') end
-- a refund right after a change of the rate: the units are given back at the old interval
local back = cost * was - math.max(0, now - at)
if back <= 0 then return 0 end
write_tat(KEYS[1], math.max(tat - back, math.min(tat, now)), was, nil)
return 0
)lua";

constexpr std::string_view kHeartbeat = R"lua(
local now = now_us(ARGV[1])
local expire = tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], string.format('%.0f', now), ARGV[2])
-- string.format: Lua's own number to text keeps 14 digits, and now has 16
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now - expire))
expire_after(KEYS[1], 2 * expire)
return redis.call('ZCARD', KEYS[1])
)lua";

constexpr std::string_view kStreamRead = R"lua(
local t = redis.call('TIME')
local entries = redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', ARGV[2])
local most_bytes, most_fields = tonumber(ARGV[3]), tonumber(ARGV[4])
for _, entry in ipairs(entries) do
  local fields, size = entry[2], 0
  for _, text in ipairs(fields) do size = size + #text end
  -- the entry is not sent: a writer of the stream must not stall or swamp its readers
  if #fields > most_fields or size > most_bytes then
    entry[2] = {'oversized', tostring(size)}
  end
end
return {tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), entries}
)lua";

constexpr std::string_view kStreamIdsBack = R"lua(
local entries = redis.call('XREVRANGE', KEYS[1], ARGV[1], ARGV[2], 'COUNT', ARGV[3])
local ids = {}
for i, entry in ipairs(entries) do ids[i] = entry[1] end
return ids
)lua";

constexpr std::string_view kSyncHead = R"lua(
local now = now_us(ARGV[1])
local p1, p2, p3 = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local out = {now}
)lua";

constexpr std::string_view kFixedWindowSync = R"lua(
local limit, w = p1, p2
for i, key in ipairs(KEYS) do
  local spent, at = tonumber(ARGV[3 + 2 * i]), tonumber(ARGV[4 + 2 * i])
  local index, n, l = read_fixed(key)
  if not index or l ~= w then index = 0; n = 0 end
  local current = math.floor(now / w)
  if current > index then index = current; n = 0 end
  -- units admitted in a window that has ended count no more
  if spent > 0 and at == index then
    -- held in range (a state past 2^53 reads as absent: a full window again)
    n = math.min(n + spent, BIG - 1)
    write_state(key, (index + 1) * w - now, struct.pack('<i8i8i8', index, n, w))
  end
  out[#out + 1] = math.max(0, limit - n)
  out[#out + 1] = (index + 1) * w - now
end
return out
)lua";

constexpr std::string_view kTokenBucketSync = R"lua(
local capacity, rate = p1, p2
local UNIT = 1000000000
for i, key in ipairs(KEYS) do
  local spent = tonumber(ARGV[3 + 2 * i])
  local missing, at = read_bucket(key)
  if not missing then missing = 0; at = 0 end
  if now > at then
    if now - at >= ceildiv(missing, rate) then missing = 0 else missing = missing - (now - at) * rate end
    at = now
  end
  if spent > 0 then
    -- no cap at the capacity: the debt is what the fleet admitted beyond the bucket; but
    -- held below 2^53, past which the state reads as absent, a full bucket (a sync reported
    -- again after a timeout adds its units again)
    missing = math.min(missing + spent * UNIT, BIG - 1)
    write_state(key, ceildiv(missing, rate), struct.pack('<i8i8', missing, at))
  end
  out[#out + 1] = math.max(0, math.floor((capacity * UNIT - missing) / UNIT))
  out[#out + 1] = ceildiv(missing, rate)
end
return out
)lua";

constexpr std::string_view kGcraSync = R"lua(
local capacity, interval = p1, p3
local tolerance = capacity * interval
for i, key in ipairs(KEYS) do
  local spent = tonumber(ARGV[3 + 2 * i])
  local tat, was = read_tat(key, interval)
  if was ~= interval and tat > now then
    tat = now + math.max(0, math.floor((tat - now) * interval / was) - 1)
  end
  if spent > 0 then
    -- past now + tolerance when the fleet admitted beyond the burst: a debt
    tat = math.min(math.max(tat, now) + spent * interval, BIG - 1)
    write_tat(key, tat, interval, math.max(1, math.ceil((tat - now) / 1000)))
  end
  local used = math.max(0, tat - now)
  out[#out + 1] = math.max(0, math.floor((tolerance - used) / interval))
  out[#out + 1] = used
end
return out
)lua";

// States are 8-byte integers packed by Lua's struct ('<i8'), which converts through a C
// long: on a 32-bit build of Redis it would cut times short, every state would read as
// long past, and no limit would hold. So every script first packs a value above 2^32 and
// refuses to run if it does not read back the same. A library cannot do it when loaded
// (`struct` is not there yet), so its functions do it on their first call.
constexpr std::string_view kWordSizeCheck = R"lua(
local word_size_checked = false
local function check_word_size()
  if word_size_checked then return end
  if struct.unpack('<i8', struct.pack('<i8', 4503599627370499)) ~= 4503599627370499 then
    error('floodgate: this Redis packs 8-byte integers short (a 32-bit build): the Redis store needs a 64-bit Redis')
  end
  word_size_checked = true
end
)lua";

// Definitions (local functions and constants) that scripts share, in the order the
// function library defines them; every part of a script but its last is one of these.
constexpr std::string_view kDefinitions[] = {
    kPrelude,           kMulCmp,           kGcraState,
    kFixedWindowDecide, kSlidingLogDecide, kSlidingCounterDecide,
    kTokenBucketDecide, kGcraDecide,       kDecideTable,
};

// A script named `name`: the definitions it uses, then its main part (what runs per call).
Script make(std::string name, std::initializer_list<std::string_view> definitions,
            std::string main) {
  Script s;
  s.body = kWordSizeCheck;
  for (std::string_view part : definitions) s.body += part;
  s.body += "check_word_size()\n" + main;
  s.sha1 = sha1Hex(s.body);
  s.function = std::move(name);  // made unique by the library's version in catalog()
  s.main = "check_word_size()\n" + main;
  return s;
}

// Every script, and the function library that holds them all (built once).
struct Catalog {
  Script decide[6];  // by AlgorithmKind's order below
  Script together;
  Script refund[6];
  Script sync_fixed, sync_bucket, sync_gcra;
  Script heartbeat;
  Script stream_read;
  Script stream_ids_back;
  FunctionLibrary library;

  std::vector<Script*> all() {
    std::vector<Script*> out;
    for (Script& s : decide) out.push_back(&s);
    out.push_back(&together);
    for (Script& s : refund) out.push_back(&s);
    for (Script* s :
         {&sync_fixed, &sync_bucket, &sync_gcra, &heartbeat, &stream_read, &stream_ids_back})
      out.push_back(s);
    return out;
  }
};

size_t indexOf(AlgorithmKind kind) {
  switch (kind) {
    case AlgorithmKind::kFixedWindow:
      return 0;
    case AlgorithmKind::kSlidingWindowLog:
      return 1;
    case AlgorithmKind::kSlidingWindowCounter:
      return 2;
    case AlgorithmKind::kTokenBucket:
      return 3;
    case AlgorithmKind::kGcra:
      return 4;
    case AlgorithmKind::kLeakyBucket:
      return 5;
  }
  return 4;
}

std::string decideOne(std::string_view algorithm) {
  return "local decide = " + std::string(algorithm) + std::string(kDecideOne);
}

Catalog buildCatalog() {
  Catalog c;
  c.decide[0] =
      make("decide_fixed_window", {kPrelude, kFixedWindowDecide}, decideOne("fixed_window"));
  c.decide[1] = make("decide_sliding_window_log", {kPrelude, kSlidingLogDecide},
                     decideOne("sliding_window_log"));
  c.decide[2] = make("decide_sliding_window_counter", {kPrelude, kMulCmp, kSlidingCounterDecide},
                     decideOne("sliding_window_counter"));
  c.decide[3] =
      make("decide_token_bucket", {kPrelude, kTokenBucketDecide}, decideOne("token_bucket"));
  c.decide[4] = make("decide_gcra", {kPrelude, kGcraState, kGcraDecide}, decideOne("gcra"));
  c.decide[5] = c.decide[4];
  c.together = make("decide_together",
                    {kPrelude, kMulCmp, kGcraState, kFixedWindowDecide, kSlidingLogDecide,
                     kSlidingCounterDecide, kTokenBucketDecide, kGcraDecide, kDecideTable},
                    std::string(kDecideTogether));
  c.refund[0] = make("refund_fixed_window", {kPrelude}, std::string(kFixedWindowRefund));
  c.refund[1] = make("refund_sliding_window_log", {kPrelude}, std::string(kSlidingLogRefund));
  c.refund[2] =
      make("refund_sliding_window_counter", {kPrelude}, std::string(kSlidingCounterRefund));
  c.refund[3] = make("refund_token_bucket", {kPrelude}, std::string(kTokenBucketRefund));
  c.refund[4] = make("refund_gcra", {kPrelude, kGcraState}, std::string(kGcraRefund));
  c.refund[5] = c.refund[4];
  c.sync_fixed =
      make("sync_fixed_window", {kPrelude}, std::string(kSyncHead) + std::string(kFixedWindowSync));
  c.sync_bucket =
      make("sync_token_bucket", {kPrelude}, std::string(kSyncHead) + std::string(kTokenBucketSync));
  c.sync_gcra =
      make("sync_gcra", {kPrelude, kGcraState}, std::string(kSyncHead) + std::string(kGcraSync));
  c.heartbeat = make("heartbeat", {kPrelude}, std::string(kHeartbeat));
  c.stream_read = make("stream_read", {}, std::string(kStreamRead));
  c.stream_ids_back = make("stream_ids_back", {}, std::string(kStreamIdsBack));
  c.stream_read.reads_only = c.stream_ids_back.reads_only = true;

  // The library: every definition once at its top level (run once, when loaded), then each
  // script's main part as a registered function. Its version is a hash of that text: a
  // library and its functions are named by it, so that instances of two versions in one
  // fleet each find their own functions in a shared Redis and never replace the other's.
  std::string text(kWordSizeCheck);
  for (std::string_view part : kDefinitions) text += part;
  std::vector<std::string> seen;
  std::string registrations;
  for (Script* s : c.all()) {
    if (std::find(seen.begin(), seen.end(), s->function) != seen.end()) continue;
    seen.push_back(s->function);
    registrations += "redis.register_function{function_name = '@V@_" + s->function +
                     "', callback = function(KEYS, ARGV)\n" + s->main + "\nend" +
                     (s->reads_only ? ", flags = {'no-writes'}" : "") + "}\n";
  }
  text += registrations;
  std::string version = sha1Hex(text).substr(0, 16);
  c.library.name = "floodgate_" + version;
  std::string prefix = "fg_" + version;
  size_t at;
  while ((at = text.find("@V@")) != std::string::npos) text.replace(at, 3, prefix);
  c.library.code = "#!lua name=" + c.library.name + "\n" + text;
  for (Script* s : c.all()) {
    if (!s->function.starts_with(prefix)) s->function = prefix + "_" + s->function;
  }
  return c;
}

Catalog& catalog() {
  static Catalog c = buildCatalog();
  return c;
}

}  // namespace

std::string hexOf(const unsigned char* bytes, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    out.push_back(kDigits[bytes[i] >> 4]);
    out.push_back(kDigits[bytes[i] & 0xf]);
  }
  return out;
}

std::string sha1Hex(std::string_view text) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return hexOf(digest, SHA_DIGEST_LENGTH);
}

const Script& decideScript(AlgorithmKind kind) { return catalog().decide[indexOf(kind)]; }

const Script& decideTogetherScript() { return catalog().together; }

const Script& refundScript(AlgorithmKind kind) { return catalog().refund[indexOf(kind)]; }

const Script& syncScript(AlgorithmKind kind) {
  switch (kind) {
    case AlgorithmKind::kFixedWindow:
      return catalog().sync_fixed;
    case AlgorithmKind::kTokenBucket:
      return catalog().sync_bucket;
    default:
      return catalog().sync_gcra;
  }
}

const Script& heartbeatScript() { return catalog().heartbeat; }
const Script& streamReadScript() { return catalog().stream_read; }
const Script& streamIdsBackScript() { return catalog().stream_ids_back; }

const FunctionLibrary& functionLibrary() { return catalog().library; }

std::string_view wordSizeCheck() { return kWordSizeCheck; }

}  // namespace floodgate::http::redis
