// `qvl bench`'s video figures (issue 35): a 10 s 640x360 clip at 30 fps, encoded in process as
// H.264 by libavcodec (media/video_encode.h), at the engine's default sampling: frames, video
// tokens, decode time (the media worker's decode, sampling and resize), vision time (the same
// frames sent decoded) and time to first token; and the same sampled frames sent as separate
// images (tokens, vision, first token).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "qvl/engine.h"

namespace qvl::cli {

struct VideoFigures {
  std::string codec;           // of the clip: "h264" (libx264) or "mpeg4"
  int64_t frames = 0;          // sampled
  int64_t tokens = 0;          // video tokens
  double decode_ms = 0;        // Engine::sample_video: what generate() does before the tower
  double vision_ms = 0;        // the tower on the sampled frames (sent decoded: a frame list)
  double ttft_ms = 0;          // the whole request to its first token (decode, vision, prefill)
  int64_t image_tokens = 0;    // the sampled frames as images
  double image_vision_ms = 0;  // their image time (BMP decode and resize included, as for images)
  double image_ttft_ms = 0;
};

// Medians over `repeats`; nullopt (with a warning) when this qvl or model takes no video.
std::optional<VideoFigures> measure_video(Engine& engine, int repeats);

// Adds the figures to a bench report: video_10s_640x360_frames, video_10s_640x360_tokens,
// video_decode_ms, video_vision_ms, ttft_video_10s_ms, video_as_images_tokens,
// video_as_images_vision_ms, ttft_video_as_images_ms, video_clip_codec.
void add_video_json(const VideoFigures& figures, nlohmann::json& report);

}  // namespace qvl::cli
