// SHA-256 of a byte string (OpenSSL), used to recognise content seen before (cache keys) without
// keeping it: collisions are not a practical concern, unlike with a fast non-cryptographic hash.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace qvl {

using Digest256 = std::array<uint8_t, 32>;

Digest256 sha256(const void* data, size_t size);

// The first 8 bytes of a digest, for hash tables.
inline uint64_t digest_prefix(const Digest256& d) {
  uint64_t v;
  std::memcpy(&v, d.data(), sizeof v);
  return v;
}

}  // namespace qvl
