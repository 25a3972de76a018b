// From encoded image bytes to the features the text decoder consumes: decode (with limits),
// smart resize to the token budget, normalise, patchify, vision tower.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "image/decode.h"
#include "image/preprocess.h"
#include "model/rope_index.h"
#include "model/vision_encoder.h"

namespace qvl {

struct ImageFeatures {
  ImageGrid grid;       // in patches, before the merge; a video's t counts its frame pairs
  VisionOutput vision;  // a video's pairs one after another
  std::vector<double> pair_timestamps;  // a video's, one per frame pair (seconds)
};
// Features are shared between requests through the image cache and never change once made.
using SharedImageFeatures = std::shared_ptr<const ImageFeatures>;

// Decode and preprocess (no model work).
PreprocessedImage prepare_image_bytes(const uint8_t* data, size_t size, const DecodeLimits& limits,
                                      const PreprocessConfig& preprocess);
// The vision tower on a prepared image; between_blocks as in VisionEncoder::encode. The image's
// pixel values are freed once embedded (the tower's peak memory comes later).
ImageFeatures encode_prepared_image(const VisionEncoder& encoder, PreprocessedImage&& image,
                                    const std::function<void()>& between_blocks = {});

ImageFeatures encode_image_bytes(const VisionEncoder& encoder, const uint8_t* data, size_t size,
                                 const DecodeLimits& limits, const PreprocessConfig& preprocess);

}  // namespace qvl
