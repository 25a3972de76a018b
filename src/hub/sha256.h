// Streaming SHA-256 (OpenSSL's implementation), used to verify LFS files from the hub, whose
// ETag is the sha256 of the content.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
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
  struct ContextDeleter {
    void operator()(void* ctx) const;
  };
  std::unique_ptr<void, ContextDeleter> ctx_;  // an EVP_MD_CTX
};

// Hex sha256 of a whole string.
std::string sha256_hex(std::string_view data);

// Hashes the first `size` bytes of a file (or all when size is -1); throws on read errors.
void sha256_update_from_file(Sha256& hash, const std::string& path, int64_t size = -1);

}  // namespace qvl::hub
