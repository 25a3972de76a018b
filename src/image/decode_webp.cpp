// WebP (lossy, lossless, with or without alpha) through libwebp's simple decoding API, decoding
// straight into a buffer we sized from the checked header. Animated WebP is refused: frame
// composition needs libwebpdemux and qvl does not use animations.
#include <webp/decode.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "image/decode_formats.h"

namespace qvl::decode_detail {
namespace {

const char* status_text(VP8StatusCode status) {
  switch (status) {
    case VP8_STATUS_OUT_OF_MEMORY:
      return "out of memory";
    case VP8_STATUS_INVALID_PARAM:
      return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR:
      return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return "unsupported feature";
    case VP8_STATUS_SUSPENDED:
      return "suspended";
    case VP8_STATUS_USER_ABORT:
      return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return "file is truncated";
    default:
      return "unknown error";
  }
}

WebPBitstreamFeatures read_features(const uint8_t* data, size_t size) {
  WebPBitstreamFeatures features{};
  const VP8StatusCode status = WebPGetFeatures(data, size, &features);
  if (status != VP8_STATUS_OK) fail_corrupt(ImageFormat::kWebp, status_text(status));
  return features;
}

}  // namespace

void probe_webp(const uint8_t* data, size_t size, ImageInfo& info) {
  const WebPBitstreamFeatures features = read_features(data, size);
  if (features.has_animation) {
    fail(ErrorCode::kUnsupported, "animated WebP images are not supported");
  }
  info.width = features.width;
  info.height = features.height;
}

RgbImage decode_webp(const uint8_t* data, size_t size, const ImageInfo& info) {
  const WebPBitstreamFeatures features = read_features(data, size);
  check_same_size(info, features.width, features.height);
  const size_t count = size_t(info.width) * size_t(info.height);
  RgbImage out = make_rgb_image(info);
  if (!features.has_alpha) {
    if (!WebPDecodeRGBInto(data, size, out.pixels.data(), out.pixels.size(), info.width * 3)) {
      fail_corrupt(ImageFormat::kWebp, "bitstream error or truncated file");
    }
    return out;
  }
  std::vector<uint8_t> rgba(count * 4);
  if (!WebPDecodeRGBAInto(data, size, rgba.data(), rgba.size(), info.width * 4)) {
    fail_corrupt(ImageFormat::kWebp, "bitstream error or truncated file");
  }
  rgba_to_rgb_over_white(rgba.data(), count, out.pixels.data());
  return out;
}

}  // namespace qvl::decode_detail
