#include "image/video_sampling.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"

namespace qvl {
namespace {

// Python's round() / numpy's round() on a float: ties go to the even neighbour.
int64_t round_half_even(double x) {
  const double r = std::nearbyint(x);  // the default rounding mode is to nearest, ties to even
  return static_cast<int64_t>(r);
}

// transformers' fallback when a video's fps is unknown.
constexpr double kUnknownFpsAssumed = 24;
constexpr int64_t kMaxFramesLimit = int64_t{1} << 20;
// Frame counts up to 2^40 keep total / fps * fps far inside int64 and exact in double.
constexpr int64_t kMaxTotalFrames = int64_t{1} << 40;

}  // namespace

void validate_video_sampling(const VideoSampling& s) {
  if (!(s.fps > 0 && s.fps <= 240)) {
    fail(ErrorCode::kInvalidArgument,
         "video fps must be above 0 and at most 240, got " + std::to_string(s.fps));
  }
  if (s.min_frames < 1 || s.max_frames < s.min_frames || s.max_frames > kMaxFramesLimit) {
    fail(ErrorCode::kInvalidArgument,
         "video frames must satisfy 1 <= min_frames <= max_frames <= " +
             std::to_string(kMaxFramesLimit) + ", got " + std::to_string(s.min_frames) + ".." +
             std::to_string(s.max_frames));
  }
}

std::vector<int64_t> sample_frame_indices(int64_t total_frames, double video_fps,
                                          const VideoSampling& sampling) {
  validate_video_sampling(sampling);
  if (total_frames < 1 || total_frames > kMaxTotalFrames) {
    fail(ErrorCode::kInvalidArgument, "a video needs 1.." + std::to_string(kMaxTotalFrames) +
                                          " frames, got " + std::to_string(total_frames));
  }
  const double fps = video_fps > 0 && std::isfinite(video_fps) ? video_fps : kUnknownFpsAssumed;
  const double wanted = static_cast<double>(total_frames) / fps * sampling.fps;
  // int() truncates toward zero; anything above max_frames is clamped next anyway.
  int64_t k = wanted >= static_cast<double>(sampling.max_frames) ? sampling.max_frames
                                                                 : static_cast<int64_t>(wanted);
  k = std::min(std::min(std::max(k, sampling.min_frames), sampling.max_frames), total_frames);
  std::vector<int64_t> indices(static_cast<size_t>(k));
  // numpy.linspace: i * step with step = (stop - start) / (k - 1), the last one exactly stop.
  const double stop = static_cast<double>(total_frames - 1);
  const double step = k > 1 ? stop / static_cast<double>(k - 1) : 0.0;
  for (int64_t i = 0; i < k; ++i) {
    const double y = (k > 1 && i == k - 1) ? stop : static_cast<double>(i) * step;
    indices[static_cast<size_t>(i)] = round_half_even(y);
  }
  return indices;
}

std::vector<double> pair_timestamps(const std::vector<int64_t>& indices, double video_fps,
                                    int temporal_patch_size) {
  if (indices.empty()) return {};
  if (temporal_patch_size < 1) {
    fail(ErrorCode::kInvalidArgument, "temporal_patch_size must be positive");
  }
  const double fps = video_fps > 0 && std::isfinite(video_fps) ? video_fps : kUnknownFpsAssumed;
  std::vector<int64_t> padded = indices;
  const size_t group = static_cast<size_t>(temporal_patch_size);
  while (padded.size() % group != 0) padded.push_back(indices.back());
  std::vector<double> out;
  for (size_t i = 0; i < padded.size(); i += group) {
    const double first = static_cast<double>(padded[i]) / fps;
    const double last = static_cast<double>(padded[i + group - 1]) / fps;
    out.push_back((first + last) / 2);
  }
  return out;
}

std::string timestamp_text(double seconds) {
  // printf rounds the exact binary value to nearest, ties to even, as Python's format does.
  char buf[64];
  std::snprintf(buf, sizeof buf, "<%.1f seconds>", seconds);
  return buf;
}

ImageSize video_smart_resize(int64_t num_frames, int64_t height, int64_t width, int temporal_factor,
                             int factor, int64_t min_pixels, int64_t max_pixels) {
  if (temporal_factor < 1 || factor < 1) {
    fail(ErrorCode::kInvalidArgument, "video resize factors must be positive");
  }
  if (num_frames < temporal_factor) {
    fail(ErrorCode::kInvalidArgument, "a video needs at least " + std::to_string(temporal_factor) +
                                          " sampled frames, got " + std::to_string(num_frames));
  }
  if (height < factor || width < factor) {
    fail(ErrorCode::kInvalidArgument,
         "video frames of " + std::to_string(width) + "x" + std::to_string(height) +
             " are too small: both sides must be at least " + std::to_string(factor) + " pixels");
  }
  // Up to 2^32 pixels per frame and 2^20 frames, num_frames * H * W is exact in a double.
  if (height * width > (int64_t{1} << 32) || num_frames > (int64_t{1} << 20)) {
    fail(ErrorCode::kInvalidArgument, "video size out of range");
  }
  const double longer = static_cast<double>(std::max(height, width));
  const double shorter = static_cast<double>(std::min(height, width));
  if (longer / shorter > 200.0) {
    fail(ErrorCode::kInvalidArgument,
         "video frames have an aspect ratio above 200, which Qwen-VL refuses");
  }
  if (min_pixels < 0 || max_pixels < 1 || min_pixels > max_pixels ||
      max_pixels > (int64_t{1} << 40)) {
    fail(ErrorCode::kInvalidArgument, "video pixel bounds must satisfy 0 <= min <= max <= 2^40");
  }
  const double h = static_cast<double>(height), w = static_cast<double>(width);
  const double f = static_cast<double>(factor);
  int64_t h_bar = round_half_even(h / f) * factor;
  int64_t w_bar = round_half_even(w / f) * factor;
  const int64_t t_bar =
      round_half_even(static_cast<double>(num_frames) / temporal_factor) * temporal_factor;
  const double volume = static_cast<double>(num_frames * height * width);
  // t_bar * h_bar * w_bar against the bounds in exact integers (h_bar * w_bar <= 2^33 here).
  const int64_t area = h_bar * w_bar;
  if (area > max_pixels / t_bar) {
    const double beta = std::sqrt(volume / static_cast<double>(max_pixels));
    h_bar = std::max<int64_t>(factor, static_cast<int64_t>(std::floor(h / beta / f)) * factor);
    w_bar = std::max<int64_t>(factor, static_cast<int64_t>(std::floor(w / beta / f)) * factor);
  } else if (area < (min_pixels + t_bar - 1) / t_bar) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / volume);
    h_bar = static_cast<int64_t>(std::ceil(h * beta / f)) * factor;
    w_bar = static_cast<int64_t>(std::ceil(w * beta / f)) * factor;
  }
  if (h_bar > (int64_t{1} << 20) || w_bar > (int64_t{1} << 20)) {
    fail(ErrorCode::kInvalidArgument, "video frames cannot be resized to a valid size");
  }
  return ImageSize{static_cast<int>(h_bar), static_cast<int>(w_bar)};
}

}  // namespace qvl
