// From a request's video (an encoded file or a list of encoded frames) to the features the text
// decoder consumes: frame sampling and resize exactly as transformers' Qwen3-VL video processor,
// then each frame pair through the vision tower as its own attention window.
#pragma once

#include <cstdint>
#include <functional>

#include "engine/image_cache.h"
#include "engine/image_features.h"
#include "image/decode.h"
#include "image/video_preprocess.h"
#include "qvl/engine.h"

namespace qvl {

// The engine's video settings (defaults and caps) and the decoder's limits.
struct VideoSettings {
  VideoPreprocessConfig config;  // the model's, with the engine's fps/max frames/max pixels
  double max_fps = 8;            // what a request may ask for
  size_t max_bytes = size_t{256} << 20;
  DecodeLimits frame_limits;  // each frame of a frame list
};

// The settings for one request: its fps (up to max_fps), max_frames and max_pixels (up to the
// engine's) where given. Throws kInvalidArgument naming the field when one is out of range.
VideoPreprocessConfig video_request_config(const VideoSettings& settings, const VideoInput& in);

// Cache key: the video's bytes (or frames) and every setting that changes its features.
ImageKey video_key(const VideoInput& in, const VideoPreprocessConfig& config);

// Decode (the frames it samples only), sample and resize; no model work. Throws qvl::Error with
// a one-line message naming the problem (the decoder's, or the processor's).
PreprocessedVideo prepare_video(const VideoInput& in, const VideoPreprocessConfig& config,
                                const VideoSettings& settings);

// The tower over every frame pair; the video's features hold the pairs one after another.
ImageFeatures encode_prepared_video(const VisionEncoder& encoder, const PreprocessedVideo& video,
                                    const VideoPreprocessConfig& config,
                                    const std::function<void()>& between_blocks = {});

}  // namespace qvl
