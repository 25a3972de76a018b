#include "server/data_uri.h"

#include <string>

#include "base/base64.h"
#include "server/api_error.h"

namespace qvl::server {
std::vector<uint8_t> decode_data_uri(std::string_view uri, size_t max_bytes,
                                     const std::string& param) {
  constexpr std::string_view kScheme = "data:";
  if (uri.substr(0, kScheme.size()) != kScheme) {
    fail_request(param, "expected a data URI (data:image/png;base64,...)", "invalid_image_url");
  }
  const size_t comma = uri.find(',');
  if (comma == std::string_view::npos) {
    fail_request(param, "data URI has no ',' before its payload", "invalid_image_url");
  }
  const std::string_view meta = uri.substr(kScheme.size(), comma - kScheme.size());
  constexpr std::string_view kBase64 = ";base64";
  if (meta.size() < kBase64.size() || meta.substr(meta.size() - kBase64.size()) != kBase64) {
    fail_request(param, "data URI must be base64-encoded (data:<mime>;base64,<data>)",
                 "invalid_image_url");
  }
  const std::string_view mime = meta.substr(0, meta.size() - kBase64.size());
  if (!mime.empty() && mime.substr(0, 6) != "image/" && mime != "application/octet-stream") {
    fail_request(param,
                 "data URI media type '" + std::string(mime.substr(0, 64)) +
                     "' is not an image; use image/png, image/jpeg, image/webp, image/gif "
                     "or image/bmp",
                 "invalid_image_format");
  }
  const std::string_view payload = uri.substr(comma + 1);
  if (payload.size() / 4 * 3 > max_bytes + 3) {
    fail_request(param,
                 "image is larger than the " + std::to_string(max_bytes) +
                     "-byte limit; send a smaller or more compressed image",
                 "image_too_large");
  }
  std::vector<uint8_t> bytes;
  try {
    bytes = base64_decode(payload);
  } catch (const Error& error) {
    fail_request(param, std::string("image data is not valid base64: ") + error.what(),
                 "invalid_base64");
  }
  if (bytes.size() > max_bytes) {
    fail_request(param,
                 "image is larger than the " + std::to_string(max_bytes) +
                     "-byte limit; send a smaller or more compressed image",
                 "image_too_large");
  }
  if (bytes.empty()) fail_request(param, "image data is empty", "invalid_image");
  return bytes;
}

}  // namespace qvl::server
