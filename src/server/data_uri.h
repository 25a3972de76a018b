// `data:` URIs as OpenAI clients send images: data:[<mime>][;base64],<payload>.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qvl::server {

// Decodes the base64 payload of a data URI. Throws ApiError (400) naming `param` when the URI is
// malformed, not base64, or would decode to more than `max_bytes` (checked before decoding).
std::vector<uint8_t> decode_data_uri(std::string_view uri, size_t max_bytes,
                                     const std::string& param);

}  // namespace qvl::server
