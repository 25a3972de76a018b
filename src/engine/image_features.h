// From encoded image bytes to the features the text decoder consumes: decode (with limits),
// smart resize to the token budget, normalise, patchify, vision tower.
#pragma once

#include <cstdint>

#include "image/decode.h"
#include "image/preprocess.h"
#include "model/rope_index.h"
#include "model/vision_encoder.h"

namespace qvl {

struct ImageFeatures {
  ImageGrid grid;  // in patches, before the merge
  VisionOutput vision;
};

ImageFeatures encode_image_bytes(const VisionEncoder& encoder, const uint8_t* data, size_t size,
                                 const DecodeLimits& limits, const PreprocessConfig& preprocess);

}  // namespace qvl
