// Streaming SHA-256 (FIPS 180-4), used to verify LFS files from the hub, whose ETag is the
// sha256 of the content.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace qvl::hub {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // Finishes the hash; the object must not be updated afterwards.
  std::array<uint8_t, 32> digest();
  // Lowercase hex of digest().
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// Hex sha256 of a whole string.
std::string sha256_hex(std::string_view data);

// Hashes the first `size` bytes of a file (or all when size is -1); throws on read errors.
void sha256_update_from_file(Sha256& hash, const std::string& path, int64_t size = -1);

}  // namespace qvl::hub
