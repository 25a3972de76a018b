// Qwen3-VL video preprocessing after frame sampling: one size for all frames (the video smart
// resize over the sampled count), Pillow-bicubic resize of each frame, an even frame count (the
// last frame repeated), and per frame pair the vision tower's pixel_values rows, normalised as
// transformers' fast video processor does ((u8 - 127.5) / 127.5 in float32 for mean = std = 0.5).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "image/preprocess.h"
#include "image/rgb_image.h"
#include "image/video_sampling.h"

namespace qvl {

struct VideoPreprocessConfig {
  PatchLayout layout;  // patch 16, temporal patch 2, merge 2
  Normalization norm;
  // Bounds on t * h * w over all sampled frames (t rounded to an even count): Qwen3-VL's
  // video_preprocessor_config.json has 4096 .. 25165824 (12288 video tokens).
  int64_t min_pixels = 4096;
  int64_t max_pixels = 25165824;
  VideoSampling sampling;

  int factor() const { return layout.patch_size * layout.merge_size; }
  // Pixels (over frames) per video token: a token covers factor^2 pixels of temporal_patch_size
  // frames, e.g. 2048.
  int64_t pixels_per_token() const {
    return int64_t{factor()} * factor() * layout.temporal_patch_size;
  }
};

// Throws qvl::Error(kInvalidArgument) naming the bad field.
void validate_video_preprocess_config(const VideoPreprocessConfig& config);

// From <model_dir>/video_preprocessor_config.json when the folder has one (size.shortest_edge /
// longest_edge, fps, min_frames, max_frames, patch sizes, mean, std: each optional), else the
// released Qwen3-VL values (the defaults above) on top of the image processor's layout.
VideoPreprocessConfig video_preprocess_config_for(const std::string& model_dir,
                                                  const PreprocessConfig& image_config);
// The same from JSON text (`where` names it in errors) over `defaults`.
VideoPreprocessConfig parse_video_preprocess_config(const std::string& json_text,
                                                    const std::string& where,
                                                    VideoPreprocessConfig defaults);

struct PreprocessedVideo {
  int grid_t = 0;  // frame pairs
  int grid_h = 0;  // patches per column of one frame
  int grid_w = 0;
  std::vector<int64_t> frame_indices;  // the sampled frames (before padding)
  std::vector<double> timestamps;      // one per pair, seconds
  std::vector<RgbImage> resized;       // the sampled frames after the resize (before padding)
  int64_t tokens_per_pair() const;     // grid_h * grid_w / merge^2
  int64_t tokens() const { return tokens_per_pair() * grid_t; }
};

// The target frame size for `frames` sampled frames of width x height.
ImageSize video_frame_size(int64_t frames, int width, int height,
                           const VideoPreprocessConfig& config);

// frames: the sampled frames (all the same size), frame_indices their indices in the video and
// video_fps its rate (for the timestamps). resized_frames, when given, replace the resize (the
// golden tests hand transformers' own resized frames in to compare everything after it).
PreprocessedVideo preprocess_video_frames(const std::vector<RgbImage>& frames,
                                          const std::vector<int64_t>& frame_indices,
                                          double video_fps, const VideoPreprocessConfig& config,
                                          const std::vector<RgbImage>* resized_frames = nullptr);

// The same from frames already resized to one size whose sides are multiples of
// patch_size * merge_size (a decoder that resizes each frame as it comes).
PreprocessedVideo video_from_resized_frames(std::vector<RgbImage> resized,
                                            const std::vector<int64_t>& frame_indices,
                                            double video_fps, const VideoPreprocessConfig& config);

// Pair t's pixel_values, made when the tower needs them (all pairs of a long video at once would
// be ~16x the resized frames): [grid_h * grid_w, patch_dim] rows in merge-window order, columns
// (channel, frame, y, x) with the pair's two frames (the last frame twice for an odd count).
std::vector<float> video_pair_pixel_values(const PreprocessedVideo& video, int t,
                                           const VideoPreprocessConfig& config);

// Normalise + patchify one frame pair (same size, sides multiples of patch * merge) into rows
// of layout.patch_dim() floats; temporal_patch_size must be 2.
void patchify_frame_pair(const RgbImage& first, const RgbImage& second, const PatchLayout& layout,
                         const Normalization& norm, float* out);

}  // namespace qvl
