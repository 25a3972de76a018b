// Qwen3-VL video frame sampling, frame-pair timestamps and the video smart resize, exactly as
// transformers 4.57's Qwen3VLVideoProcessor and Qwen3VLProcessor compute them (Python float
// semantics, numpy's linspace and round-half-to-even).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "image/smart_resize.h"

namespace qvl {

struct VideoSampling {
  double fps = 2;            // frames sampled per second of video
  int64_t min_frames = 4;    // at least this many (unless the video has fewer)
  int64_t max_frames = 768;  // at most this many
};

// Throws qvl::Error(kInvalidArgument) naming the bad field (fps must be in (0, 240], frames
// 1 <= min_frames <= max_frames <= 2^20).
void validate_video_sampling(const VideoSampling& sampling);

// sample_frames: k = int(total_frames / video_fps * fps), clamped to [min_frames, max_frames]
// and to total_frames; indices = linspace(0, total_frames - 1, k) rounded half to even.
// video_fps <= 0 means unknown: transformers then assumes 24. Throws for total_frames < 1.
std::vector<int64_t> sample_frame_indices(int64_t total_frames, double video_fps,
                                          const VideoSampling& sampling);

// One timestamp per frame pair (temporal patch): the indices padded to an even count with the
// last one, divided by video_fps, and the two of each pair averaged.
std::vector<double> pair_timestamps(const std::vector<int64_t>& indices, double video_fps,
                                    int temporal_patch_size);

// "<1.5 seconds>": Python's f"<{t:.1f} seconds>".
std::string timestamp_text(double seconds);

// The video smart_resize: sides rounded half to even to multiples of factor; when
// t_bar * h * w (t_bar = the frame count rounded half to even to a multiple of
// temporal_factor) leaves [min_pixels, max_pixels], both sides are scaled by
// beta = sqrt(num_frames * H * W / bound) as for images. Unlike images it refuses fewer than
// temporal_factor frames and sides below factor (clear kInvalidArgument errors).
ImageSize video_smart_resize(int64_t num_frames, int64_t height, int64_t width, int temporal_factor,
                             int factor, int64_t min_pixels, int64_t max_pixels);

}  // namespace qvl
