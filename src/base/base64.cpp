#include "base/base64.h"

#include <openssl/evp.h>

#include <algorithm>
#include <limits>

#include "base/error.h"

namespace qvl {

std::vector<uint8_t> base64_decode(std::string_view text) {
  // OpenSSL's block decoder wants whole quanta; restore missing padding first.
  std::string padded(text);
  if (padded.size() % 4 == 1) fail(ErrorCode::kInvalidArgument, "base64 data has a bad length");
  while (padded.size() % 4 != 0) padded.push_back('=');
  for (size_t i = 0; i < padded.size(); ++i) {
    const char c = padded[i];
    const bool alnum = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    const bool pad_ok =
        c == '=' && i + 2 >= padded.size() && (i + 1 == padded.size() || padded[i + 1] == '=');
    if (!alnum && c != '+' && c != '/' && !pad_ok) {
      fail(ErrorCode::kInvalidArgument,
           "base64 data contains an invalid character at offset " + std::to_string(i));
    }
  }
  if (padded.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    fail(ErrorCode::kResourceExhausted, "base64 data is too large");
  }
  std::vector<uint8_t> out(padded.size() / 4 * 3);
  if (padded.empty()) return out;
  const int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(padded.data()),
                                static_cast<int>(padded.size()));
  if (n < 0) fail(ErrorCode::kInvalidArgument, "base64 data is malformed");
  size_t len = static_cast<size_t>(n);
  // EVP_DecodeBlock counts padding as zero bytes; drop them.
  if (padded.size() >= 1 && padded[padded.size() - 1] == '=') --len;
  if (padded.size() >= 2 && padded[padded.size() - 2] == '=') --len;
  out.resize(len);
  return out;
}

std::string base64_encode(const uint8_t* data, size_t size) {
  std::string text;
  // EVP_EncodeBlock takes an int length: whole 3-byte groups at a time.
  constexpr size_t kChunk = size_t{3} << 20;
  for (size_t at = 0; at < size; at += kChunk) {
    const size_t n = std::min(kChunk, size - at);
    const size_t start = text.size();
    text.resize(start + 4 * ((n + 2) / 3) + 1);
    const int length = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(text.data() + start),
                                       data + at, static_cast<int>(n));
    text.resize(start + static_cast<size_t>(length));
  }
  return text;
}

DataUri parse_data_uri(std::string_view uri) {
  if (uri.substr(0, 5) != "data:") fail(ErrorCode::kInvalidArgument, "not a data: URI");
  const size_t comma = uri.find(',');
  if (comma == std::string_view::npos) {
    fail(ErrorCode::kInvalidArgument, "data: URI has no ',' before its payload");
  }
  std::string_view meta = uri.substr(5, comma - 5);
  constexpr std::string_view kBase64 = ";base64";
  if (meta.size() < kBase64.size() || meta.substr(meta.size() - kBase64.size()) != kBase64) {
    fail(ErrorCode::kInvalidArgument, "data: URI must be base64-encoded (';base64,')");
  }
  DataUri out;
  out.media_type = std::string(meta.substr(0, meta.size() - kBase64.size()));
  out.bytes = base64_decode(uri.substr(comma + 1));
  return out;
}

}  // namespace qvl
