// A video file read the way Qwen3-VL's video processor reads it, in one step: open it, choose the
// frames from its frame count and rate (sample_frame_indices) and their size from the sampled
// count (video_frame_size), decode those frames resized to it. In the media worker that is one
// process launch per video instead of two (one for the info, one for the frames), with the
// same limits and errors as VideoSource.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "image/rgb_image.h"
#include "image/video_preprocess.h"
#include "media/video_source.h"

namespace qvl::media {

struct SampledVideo {
  VideoInfo info;
  std::vector<int64_t> indices;  // the sampled frames' indices in the video
  std::vector<RgbImage> frames;  // those frames, each resized to the processor's size
};

// `config` gives the sampling (fps, min/max frames) and the pixel bounds; limits.isolation says
// where the bytes are parsed. Throws qvl::Error as VideoSource does, and the processor's
// refusals (fewer than two sampled frames, sides below the patch size).
SampledVideo sample_video(std::string bytes, const VideoLimits& limits,
                          const VideoPreprocessConfig& config);

}  // namespace qvl::media
