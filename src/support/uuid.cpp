// Uuid: version-4 identifiers from a per-thread generator.
//
// Every array gets a UUID, so generation sits on the allocation path and must
// cost nanoseconds, not a system call: libuuid's uuid_generate_random reads
// getrandom() per call. Each thread runs its own xoshiro256** seeded once from
// std::random_device and the thread's address, so no lock is taken and two
// threads never share a stream. These are identities, not secrets.
#include <array>
#include <cstdio>
#include <random>

#include <fmt/format.h>

#include "ndgc/error.hpp"
#include "ndgc/uuid.hpp"

namespace ndgc {
namespace {

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

std::uint64_t splitmix64(std::uint64_t& x) {
  std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Xoshiro256 {
  std::array<std::uint64_t, 4> s;
  Xoshiro256() {
    std::random_device rd;
    std::uint64_t seed = (std::uint64_t(rd()) << 32) ^ rd() ^ reinterpret_cast<std::uintptr_t>(this);
    for (auto& w : s) w = splitmix64(seed);
  }
  std::uint64_t next() noexcept {
    const std::uint64_t result = rotl(s[1] * 5, 7) * 9;
    const std::uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
};

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Uuid Uuid::random() noexcept {
  thread_local Xoshiro256 gen;
  Uuid u{gen.next(), gen.next()};
  u.hi = (u.hi & ~0xF000ull) | 0x4000ull;                     // version 4
  u.lo = (u.lo & ~(0xC000ull << 48)) | (0x8000ull << 48);     // variant 10xx
  return u;
}

std::string Uuid::to_string() const {
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", std::uint32_t(hi >> 32),
                     std::uint32_t((hi >> 16) & 0xFFFF), std::uint32_t(hi & 0xFFFF),
                     std::uint32_t(lo >> 48), lo & 0xFFFFFFFFFFFFull);
}

Uuid Uuid::parse(const std::string& text) {
  Uuid u;
  int nibbles = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    bool dash_position = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash_position) {
      if (c != '-') break;
      continue;
    }
    int v = hex_value(c);
    if (v < 0) break;
    std::uint64_t& word = nibbles < 16 ? u.hi : u.lo;
    word = (word << 4) | std::uint64_t(v);
    ++nibbles;
  }
  if (text.size() != 36 || nibbles != 32)
    throw InvalidArgument(fmt::format("Uuid::parse: '{}' is not a UUID (want 8-4-4-4-12 hex digits)", text));
  return u;
}

}  // namespace ndgc
