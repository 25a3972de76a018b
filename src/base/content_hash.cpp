#include "base/content_hash.h"

#include <openssl/evp.h>

#include "base/error.h"

namespace qvl {

Digest256 sha256(const void* data, size_t size) {
  Digest256 out{};
  unsigned int length = 0;
  if (EVP_Digest(data, size, out.data(), &length, EVP_sha256(), nullptr) != 1 ||
      length != out.size()) {
    fail(ErrorCode::kInternal, "OpenSSL SHA-256 failed");
  }
  return out;
}

}  // namespace qvl
