#include "image/video_preprocess.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "image/resize.h"

namespace qvl {
namespace {

using Json = nlohmann::json;

[[noreturn]] void bad_field(const std::string& where, const std::string& field,
                            const std::string& problem) {
  fail(ErrorCode::kInvalidArgument, where + ": field '" + field + "' " + problem);
}

int64_t integer_field(const Json& v, const std::string& where, const std::string& field,
                      int64_t limit) {
  if (!v.is_number() || !(v.get<double>() >= 1 && v.get<double>() <= static_cast<double>(limit)) ||
      v.get<double>() != std::floor(v.get<double>())) {
    bad_field(where, field, "must be an integer in 1.." + std::to_string(limit));
  }
  return static_cast<int64_t>(v.get<double>());
}

std::array<float, 3> channel_values(const Json& v, const std::string& where,
                                    const std::string& field) {
  std::array<float, 3> out{};
  if (v.is_number()) {
    out.fill(v.get<float>());
  } else if (v.is_array() && v.size() == 3 && v[0].is_number() && v[1].is_number() &&
             v[2].is_number()) {
    for (size_t c = 0; c < 3; ++c) out[c] = static_cast<float>(v[c].get<double>());
  } else {
    bad_field(where, field, "must be a number or a list of 3 numbers");
  }
  return out;
}

}  // namespace

void validate_video_preprocess_config(const VideoPreprocessConfig& c) {
  validate_patch_layout(c.layout);
  if (c.layout.temporal_patch_size != 2) {
    fail(ErrorCode::kUnsupported, "video needs temporal_patch_size 2, the model has " +
                                      std::to_string(c.layout.temporal_patch_size));
  }
  if (c.min_pixels < 0 || c.max_pixels < 1 || c.min_pixels > c.max_pixels ||
      c.max_pixels > (int64_t{1} << 40)) {
    fail(ErrorCode::kInvalidArgument,
         "video pixel bounds must satisfy 0 <= min_pixels <= max_pixels <= 2^40, got " +
             std::to_string(c.min_pixels) + ".." + std::to_string(c.max_pixels));
  }
  for (int ch = 0; ch < 3; ++ch) {
    if (!std::isfinite(c.norm.mean[ch]) || !std::isfinite(c.norm.std[ch]) || c.norm.std[ch] == 0) {
      fail(ErrorCode::kInvalidArgument, "video mean/std must be finite, std non-zero");
    }
  }
  validate_video_sampling(c.sampling);
}

VideoPreprocessConfig parse_video_preprocess_config(const std::string& json_text,
                                                    const std::string& where,
                                                    VideoPreprocessConfig c) {
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::exception& e) {
    fail(ErrorCode::kCorrupt, where + ": invalid JSON: " + e.what());
  }
  if (!root.is_object()) fail(ErrorCode::kCorrupt, where + ": expected a JSON object");
  auto has = [&](const char* f) { return root.contains(f) && !root.at(f).is_null(); };
  if (has("size")) {
    const Json& size = root.at("size");
    if (!size.is_object() || !size.contains("shortest_edge") || !size.contains("longest_edge")) {
      bad_field(where, "size", "must contain 'shortest_edge' and 'longest_edge' (pixel counts)");
    }
    c.min_pixels = integer_field(size.at("shortest_edge"), where, "size.shortest_edge", 1LL << 40);
    c.max_pixels = integer_field(size.at("longest_edge"), where, "size.longest_edge", 1LL << 40);
  }
  if (has("patch_size")) {
    c.layout.patch_size =
        static_cast<int>(integer_field(root["patch_size"], where, "patch_size", 1024));
  }
  if (has("temporal_patch_size")) {
    c.layout.temporal_patch_size = static_cast<int>(
        integer_field(root["temporal_patch_size"], where, "temporal_patch_size", 64));
  }
  if (has("merge_size")) {
    c.layout.merge_size =
        static_cast<int>(integer_field(root["merge_size"], where, "merge_size", 64));
  }
  if (has("image_mean")) c.norm.mean = channel_values(root["image_mean"], where, "image_mean");
  if (has("image_std")) c.norm.std = channel_values(root["image_std"], where, "image_std");
  if (has("rescale_factor")) {
    if (!root["rescale_factor"].is_number() || !(root["rescale_factor"].get<double>() > 0)) {
      bad_field(where, "rescale_factor", "must be a positive number");
    }
    c.norm.rescale_factor = root["rescale_factor"].get<double>();
  }
  if (has("fps")) {
    if (!root["fps"].is_number()) bad_field(where, "fps", "must be a number");
    c.sampling.fps = root["fps"].get<double>();
  }
  if (has("min_frames"))
    c.sampling.min_frames = integer_field(root["min_frames"], where, "min_frames", 1 << 20);
  if (has("max_frames"))
    c.sampling.max_frames = integer_field(root["max_frames"], where, "max_frames", 1 << 20);
  validate_video_preprocess_config(c);
  return c;
}

VideoPreprocessConfig video_preprocess_config_for(const std::string& model_dir,
                                                  const PreprocessConfig& image_config) {
  // Where the file says nothing (or a packed/GGUF model has no folder): the values every
  // released Qwen3-VL's video_preprocessor_config.json has (VideoPreprocessConfig's defaults).
  VideoPreprocessConfig c;
  c.layout = image_config.layout();
  c.norm = image_config.normalization();
  const std::string path = model_dir + "/video_preprocessor_config.json";
  std::error_code ec;
  if (model_dir.empty() || !std::filesystem::is_regular_file(path, ec)) {
    validate_video_preprocess_config(c);
    return c;
  }
  return parse_video_preprocess_config(read_text_file(path), path, c);
}

int64_t PreprocessedVideo::tokens_per_pair() const {
  // grid sides are multiples of the merge size; 2x2 merge for every Qwen3-VL.
  return grid_h > 0 ? int64_t{grid_h} * grid_w / 4 : 0;
}

ImageSize video_frame_size(int64_t frames, int width, int height,
                           const VideoPreprocessConfig& config) {
  return video_smart_resize(frames, height, width, config.layout.temporal_patch_size,
                            config.factor(), config.min_pixels, config.max_pixels);
}

void patchify_frame_pair(const RgbImage& first, const RgbImage& second, const PatchLayout& layout,
                         const Normalization& norm, float* out) {
  validate_patch_layout(layout);
  const int p = layout.patch_size, m = layout.merge_size, window = p * m;
  if (layout.temporal_patch_size != 2 || first.width != second.width ||
      first.height != second.height || first.width <= 0 || first.height <= 0 ||
      first.width % window != 0 || first.height % window != 0 ||
      first.pixels.size() != static_cast<size_t>(first.width) * first.height * 3 ||
      second.pixels.size() != first.pixels.size()) {
    fail(ErrorCode::kInvalidArgument,
         "patchify: a frame pair must be two frames of one size, "
         "sides multiples of " +
             std::to_string(window));
  }
  // The fast processor fuses rescale into normalise: (x - mean / r) / (std / r) in float32,
  // with mean / r and std / r rounded to float32 (torch.tensor(mean) * (1 / r)).
  float table[3][256];
  for (int c = 0; c < 3; ++c) {
    const float mean = static_cast<float>(norm.mean[c] * (1.0 / norm.rescale_factor));
    const float std = static_cast<float>(norm.std[c] * (1.0 / norm.rescale_factor));
    for (int v = 0; v < 256; ++v) table[c][v] = (static_cast<float>(v) - mean) / std;
  }
  const int blocks_w = first.width / window, blocks_h = first.height / window;
  const size_t plane = static_cast<size_t>(p) * p, row_dim = layout.patch_dim();
  const size_t stride = static_cast<size_t>(first.width) * 3;
  const RgbImage* frames[2] = {&first, &second};
  size_t row = 0;
  for (int by = 0; by < blocks_h; ++by)
    for (int bx = 0; bx < blocks_w; ++bx)
      for (int wy = 0; wy < m; ++wy)
        for (int wx = 0; wx < m; ++wx, ++row) {
          float* dst = out + row * row_dim;
          const size_t y0 = static_cast<size_t>(by * m + wy) * p;
          const size_t x0 = static_cast<size_t>(bx * m + wx) * p;
          for (int c = 0; c < 3; ++c)
            for (int t = 0; t < 2; ++t) {
              float* slice = dst + (static_cast<size_t>(c) * 2 + t) * plane;
              for (int py = 0; py < p; ++py) {
                const uint8_t* src = frames[t]->pixels.data() + (y0 + py) * stride + x0 * 3 + c;
                for (int px = 0; px < p; ++px) slice[py * p + px] = table[c][src[px * 3]];
              }
            }
        }
}

PreprocessedVideo preprocess_video_frames(const std::vector<RgbImage>& frames,
                                          const std::vector<int64_t>& frame_indices,
                                          double video_fps, const VideoPreprocessConfig& config,
                                          const std::vector<RgbImage>* resized_frames) {
  validate_video_preprocess_config(config);
  if (frames.empty() || frames.size() != frame_indices.size()) {
    fail(ErrorCode::kInvalidArgument, "a video needs frames, one per sampled index");
  }
  const int width = frames[0].width, height = frames[0].height;
  for (const RgbImage& f : frames) {
    if (f.width != width || f.height != height) {
      fail(ErrorCode::kInvalidArgument, "the frames of a video differ in size (" +
                                            std::to_string(width) + "x" + std::to_string(height) +
                                            " and " + std::to_string(f.width) + "x" +
                                            std::to_string(f.height) + ")");
    }
  }
  const ImageSize size =
      video_frame_size(static_cast<int64_t>(frames.size()), width, height, config);
  if (resized_frames != nullptr) {
    if (resized_frames->size() != frames.size()) {
      fail(ErrorCode::kInvalidArgument, "resized frames must match the sampled frames");
    }
    return video_from_resized_frames(*resized_frames, frame_indices, video_fps, config);
  }
  std::vector<RgbImage> resized;
  for (const RgbImage& f : frames) resized.push_back(resize_bicubic(f, size.width, size.height));
  return video_from_resized_frames(std::move(resized), frame_indices, video_fps, config);
}

PreprocessedVideo video_from_resized_frames(std::vector<RgbImage> resized,
                                            const std::vector<int64_t>& frame_indices,
                                            double video_fps, const VideoPreprocessConfig& config) {
  validate_video_preprocess_config(config);
  if (resized.empty() || resized.size() != frame_indices.size()) {
    fail(ErrorCode::kInvalidArgument, "a video needs frames, one per sampled index");
  }
  if (resized.size() < static_cast<size_t>(config.layout.temporal_patch_size)) {
    fail(ErrorCode::kInvalidArgument, "a video needs at least " +
                                          std::to_string(config.layout.temporal_patch_size) +
                                          " sampled frames, got " + std::to_string(resized.size()));
  }
  const int window = config.factor();
  const RgbImage& first = resized.front();
  for (const RgbImage& f : resized) {
    if (f.width != first.width || f.height != first.height || f.width <= 0 ||
        f.width % window != 0 || f.height % window != 0) {
      fail(ErrorCode::kInvalidArgument,
           "resized video frames must share one size whose sides "
           "are multiples of " +
               std::to_string(window));
    }
  }
  PreprocessedVideo out;
  out.frame_indices = frame_indices;
  out.timestamps = pair_timestamps(frame_indices, video_fps, config.layout.temporal_patch_size);
  out.grid_t = static_cast<int>((resized.size() + 1) / 2);
  out.grid_h = first.height / config.layout.patch_size;
  out.grid_w = first.width / config.layout.patch_size;
  out.resized = std::move(resized);
  return out;
}

std::vector<float> video_pair_pixel_values(const PreprocessedVideo& video, int t,
                                           const VideoPreprocessConfig& config) {
  if (t < 0 || t >= video.grid_t || video.resized.empty()) {
    fail(ErrorCode::kInvalidArgument, "video frame pair " + std::to_string(t) + " out of range");
  }
  const size_t rows = static_cast<size_t>(video.grid_h) * video.grid_w;
  std::vector<float> values(rows * config.layout.patch_dim());
  const RgbImage& a = video.resized[static_cast<size_t>(2 * t)];
  const RgbImage& b = video.resized[std::min<size_t>(2 * t + 1, video.resized.size() - 1)];
  patchify_frame_pair(a, b, config.layout, config.norm, values.data());
  return values;
}

}  // namespace qvl
