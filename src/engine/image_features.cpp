#include "engine/image_features.h"

#include <utility>

namespace qvl {

PreprocessedImage prepare_image_bytes(const uint8_t* data, size_t size, const DecodeLimits& limits,
                                      const PreprocessConfig& preprocess) {
  return preprocess_image(decode_image(data, size, limits), preprocess);
}

ImageFeatures encode_prepared_image(const VisionEncoder& encoder, PreprocessedImage&& pre,
                                    const std::function<void()>& between_blocks) {
  ImageFeatures f;
  f.grid = {pre.grid_t, pre.grid_h, pre.grid_w};
  f.vision =
      encoder.encode(std::move(pre.pixel_values), pre.grid_h, pre.grid_w, {}, between_blocks);
  return f;
}

ImageFeatures encode_image_bytes(const VisionEncoder& encoder, const uint8_t* data, size_t size,
                                 const DecodeLimits& limits, const PreprocessConfig& preprocess) {
  return encode_prepared_image(encoder, prepare_image_bytes(data, size, limits, preprocess));
}

}  // namespace qvl
