#include "engine/image_features.h"

namespace qvl {

ImageFeatures encode_image_bytes(const VisionEncoder& encoder, const uint8_t* data, size_t size,
                                 const DecodeLimits& limits, const PreprocessConfig& preprocess) {
  const RgbImage image = decode_image(data, size, limits);
  const PreprocessedImage pre = preprocess_image(image, preprocess);
  ImageFeatures f;
  f.grid = {pre.grid_t, pre.grid_h, pre.grid_w};
  f.vision = encoder.encode(pre.pixel_values.data(), pre.grid_h, pre.grid_w);
  return f;
}

}  // namespace qvl
