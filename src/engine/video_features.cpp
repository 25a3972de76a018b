#include "engine/video_features.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "base/content_hash.h"
#include "base/error.h"
#include "image/resize.h"
#include "media/video_sampled.h"

namespace qvl {
namespace {

// Frames decoded from a list: each sampled index once, resized to the video's size as soon as
// it is decoded, so one full-size frame is held at a time (the size comes from the first one).
PreprocessedVideo frames_from_list(const VideoInput& in, const VideoPreprocessConfig& config,
                                   const VideoSettings& settings) {
  const int64_t n = static_cast<int64_t>(in.frames.size());
  // A list without a rate is taken as already sampled: at the sampling rate every frame is kept.
  const double rate = in.frames_fps > 0 ? in.frames_fps : config.sampling.fps;
  const std::vector<int64_t> indices = sample_frame_indices(n, rate, config.sampling);
  std::map<int64_t, RgbImage> resized_by_index;
  int width = 0, height = 0;
  ImageSize size;
  std::vector<RgbImage> resized;
  for (int64_t i : indices) {
    auto done = resized_by_index.find(i);
    if (done == resized_by_index.end()) {
      const auto& bytes = in.frames[static_cast<size_t>(i)];
      RgbImage frame;
      try {
        frame = decode_image(bytes.data(), bytes.size(), settings.frame_limits);
      } catch (const Error& e) {
        fail(e.code(), "frame " + std::to_string(i + 1) + ": " + e.what());
      }
      if (width == 0) {
        width = frame.width;
        height = frame.height;
        size = video_frame_size(static_cast<int64_t>(indices.size()), width, height, config);
      } else if (frame.width != width || frame.height != height) {
        fail(ErrorCode::kInvalidArgument,
             "frame " + std::to_string(i + 1) + " is " + std::to_string(frame.width) + "x" +
                 std::to_string(frame.height) + " but the first sampled frame is " +
                 std::to_string(width) + "x" + std::to_string(height) +
                 "; the frames of a video must have one size");
      }
      done = resized_by_index.emplace(i, resize_bicubic(frame, size.width, size.height)).first;
    }
    resized.push_back(done->second);
  }
  return video_from_resized_frames(std::move(resized), indices, rate, config);
}

// A video file: decoded by media::sample_video (in the sandboxed media worker, one launch per
// video, docs/video.md), each sampled frame resized there as it comes to the processor's size, so
// only one full-size frame exists at a time and only the resized frames cross back.
PreprocessedVideo frames_from_file(const VideoInput& in, const VideoPreprocessConfig& config,
                                   const VideoSettings& settings) {
  media::VideoLimits limits;
  limits.max_bytes = settings.max_bytes;
  limits.max_frames = config.sampling.max_frames;
  media::SampledVideo video = media::sample_video(
      std::string(reinterpret_cast<const char*>(in.bytes.data()), in.bytes.size()), limits, config);
  return video_from_resized_frames(std::move(video.frames), video.indices, video.info.fps, config);
}

}  // namespace

VideoPreprocessConfig video_request_config(const VideoSettings& settings, const VideoInput& in) {
  VideoPreprocessConfig c = settings.config;
  if (in.fps != 0) {
    if (!(in.fps > 0) || !std::isfinite(in.fps) || in.fps > settings.max_fps) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "video fps must be above 0 and at most %g on this server, got %g",
                    settings.max_fps, in.fps);
      fail(ErrorCode::kInvalidArgument, text);
    }
    c.sampling.fps = in.fps;
  }
  if (in.max_frames != 0) {
    if (in.max_frames < 2 || in.max_frames > settings.config.sampling.max_frames) {
      fail(ErrorCode::kInvalidArgument,
           "video max_frames must be 2.." + std::to_string(settings.config.sampling.max_frames) +
               " on this server, got " + std::to_string(in.max_frames));
    }
    c.sampling.max_frames = in.max_frames;
    c.sampling.min_frames = std::min(c.sampling.min_frames, in.max_frames);
  }
  if (in.max_pixels != 0) {
    if (in.max_pixels < c.min_pixels || in.max_pixels > settings.config.max_pixels) {
      fail(ErrorCode::kInvalidArgument, "video max_pixels must be " + std::to_string(c.min_pixels) +
                                            ".." + std::to_string(settings.config.max_pixels) +
                                            " on this server, got " +
                                            std::to_string(in.max_pixels));
    }
    c.max_pixels = in.max_pixels;
  }
  validate_video_preprocess_config(c);
  return c;
}

ImageKey video_key(const VideoInput& in, const VideoPreprocessConfig& config) {
  // The content's digest, then a digest of it with the settings that change the features.
  std::string material;
  if (!in.bytes.empty()) {
    const Digest256 d = sha256(in.bytes.data(), in.bytes.size());
    material.assign(reinterpret_cast<const char*>(d.data()), d.size());
  } else {
    material = "frames";
    for (const auto& f : in.frames) {
      const Digest256 d = sha256(f.data(), f.size());
      material.append(reinterpret_cast<const char*>(d.data()), d.size());
    }
  }
  char settings[160];
  std::snprintf(settings, sizeof settings, "video fps=%.17g frames=%lld..%lld rate=%.17g",
                config.sampling.fps, static_cast<long long>(config.sampling.min_frames),
                static_cast<long long>(config.sampling.max_frames), in.frames_fps);
  material += settings;
  ImageKey key;
  key.digest = sha256(material.data(), material.size());
  key.min_pixels = config.min_pixels;
  key.max_pixels = config.max_pixels;
  return key;
}

PreprocessedVideo prepare_video(const VideoInput& in, const VideoPreprocessConfig& config,
                                const VideoSettings& settings) {
  if (!in.bytes.empty() && !in.frames.empty()) {
    fail(ErrorCode::kInvalidArgument, "a video is either a file or a list of frames, not both");
  }
  if (in.bytes.empty() && in.frames.empty()) {
    fail(ErrorCode::kInvalidArgument, "the video is empty");
  }
  return in.bytes.empty() ? frames_from_list(in, config, settings)
                          : frames_from_file(in, config, settings);
}

ImageFeatures encode_prepared_video(const VisionEncoder& encoder, const PreprocessedVideo& video,
                                    const VideoPreprocessConfig& config,
                                    const std::function<void()>& between_blocks) {
  ImageFeatures f;
  f.grid = {video.grid_t, video.grid_h, video.grid_w};
  f.pair_timestamps = video.timestamps;
  for (int t = 0; t < video.grid_t; ++t) {
    const std::vector<float> values = video_pair_pixel_values(video, t, config);
    VisionOutput pair =
        encoder.encode_frame_pair(values.data(), video.grid_h, video.grid_w, {}, between_blocks);
    f.vision.tokens += pair.tokens;
    f.vision.embeds.insert(f.vision.embeds.end(), pair.embeds.begin(), pair.embeds.end());
    f.vision.deepstack.resize(pair.deepstack.size());
    for (size_t d = 0; d < pair.deepstack.size(); ++d) {
      f.vision.deepstack[d].insert(f.vision.deepstack[d].end(), pair.deepstack[d].begin(),
                                   pair.deepstack[d].end());
    }
  }
  return f;
}

}  // namespace qvl
