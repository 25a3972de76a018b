#include "hub/sha256.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "base/error.h"

namespace qvl::hub {

void Sha256::ContextDeleter::operator()(void* ctx) const {
  EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx));
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ ||
      EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_.get()), EVP_sha256(), nullptr) != 1) {
    fail(ErrorCode::kInternal, "OpenSSL cannot initialise SHA-256");
  }
}

void Sha256::update(const void* data, size_t size) {
  if (size > 0 && EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_.get()), data, size) != 1) {
    fail(ErrorCode::kInternal, "OpenSSL SHA-256 update failed");
  }
}

std::array<uint8_t, 32> Sha256::digest() {
  std::array<uint8_t, 32> out{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_.get()), out.data(), &len) != 1 ||
      len != out.size()) {
    fail(ErrorCode::kInternal, "OpenSSL SHA-256 final failed");
  }
  return out;
}

std::string Sha256::hex_digest() {
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (uint8_t byte : digest()) {
    hex += kHex[byte >> 4];
    hex += kHex[byte & 15];
  }
  return hex;
}

std::string sha256_hex(std::string_view data) {
  Sha256 hash;
  hash.update(data);
  return hash.hex_digest();
}

void sha256_update_from_file(Sha256& hash, const std::string& path, int64_t size) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::kIo, "cannot open " + path + ": " + std::strerror(errno));
  std::vector<char> chunk(1 << 20);
  int64_t remaining = size;
  while (size < 0 || remaining > 0) {
    const int64_t want =
        size < 0 ? static_cast<int64_t>(chunk.size()) : std::min<int64_t>(remaining, chunk.size());
    in.read(chunk.data(), want);
    const std::streamsize got = in.gcount();
    hash.update(chunk.data(), static_cast<size_t>(got));
    remaining -= got;
    if (got < want) {
      if (size >= 0) fail(ErrorCode::kIo, "unexpected end of " + path);
      break;
    }
  }
}

}  // namespace qvl::hub
