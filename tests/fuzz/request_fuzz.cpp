// libFuzzer target: any bytes as a /v1/chat/completions body. Parsing must either produce a
// request or throw ApiError with a 4xx; nothing else may escape, crash or leak.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/access.h"
#include "server/api_error.h"
#include "server/chat_request.h"
#include "server/openai_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  qvl::ModelInfo model;
  model.name = "fuzz";
  model.context_length = 4096;
  model.vocab_size = 151936;
  model.image_min_tokens = 16;
  model.image_max_tokens = 1024;
  model.video_fps = 2;  // video parts are parsed (a model without video settings refuses them)
  model.video_max_fps = 8;
  model.video_max_frames = 16;
  model.video_max_pixels = 1 << 20;
  qvl::server::RequestLimits limits;
  limits.max_image_bytes = 1 << 16;
  limits.max_video_bytes = 1 << 16;
  limits.max_video_list_frames = 8;
  limits.allow_remote_images = (size & 1) != 0;
  try {
    const qvl::server::ChatRequest chat = qvl::server::parse_chat_request(body, model, limits);
    // Whatever was accepted must be within the limits it was checked against.
    if (chat.generation.images.size() > limits.max_images) __builtin_trap();
    int64_t image_tokens = 0;
    for (const auto& image : chat.generation.images) {
      if (image.bytes.size() > limits.max_image_bytes) __builtin_trap();
      image_tokens += image.max_tokens;
    }
    if (image_tokens > limits.max_total_image_tokens) __builtin_trap();
    if (chat.generation.videos.size() > limits.max_videos) __builtin_trap();
    for (const auto& video : chat.generation.videos) {
      if (video.bytes.size() > limits.max_video_bytes) __builtin_trap();
      if (video.frames.size() > limits.max_video_list_frames) __builtin_trap();
      for (const auto& frame : video.frames)
        if (frame.size() > limits.max_image_bytes) __builtin_trap();
      if (video.fps < 0 || video.fps > model.video_max_fps) __builtin_trap();
      if (video.max_frames < 0 || video.max_frames > model.video_max_frames) __builtin_trap();
      if (video.max_pixels < 0 || video.max_pixels > model.video_max_pixels) __builtin_trap();
    }
    const auto& sampling = chat.generation.sampling;
    if (sampling.max_tokens < 1 || sampling.max_tokens > model.context_length) __builtin_trap();
    // Echoing client text back must not throw (invalid UTF-8 is replaced).
    for (const auto& message : chat.generation.messages) {
      for (const auto& part : message.parts) {
        (void)qvl::server::sse_event({{"content", part.text}});
      }
    }
  } catch (const qvl::server::ApiError& error) {
    if (error.status() < 400 || error.status() >= 500 || error.message().empty()) __builtin_trap();
    (void)error.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  (void)qvl::server::authorization_allows(body, "sk-fuzz");
  (void)qvl::server::cors_headers("http://a", body, true);
  return 0;
}
