// Base64 (RFC 4648, standard alphabet): decoding of untrusted input, encoding, and data: URIs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qvl {

// Decodes standard base64 (padding optional, no whitespace inside). Throws
// Error(kInvalidArgument) on any other character or a bad length.
std::vector<uint8_t> base64_decode(std::string_view text);

// Standard base64 with padding (for data: URIs the server writes).
std::string base64_encode(const uint8_t* data, size_t size);

struct DataUri {
  std::string media_type;  // e.g. "image/png" (may be empty)
  std::vector<uint8_t> bytes;
};

// Parses "data:[<media type>][;base64],<data>"; only base64 payloads are accepted.
DataUri parse_data_uri(std::string_view uri);

}  // namespace qvl
