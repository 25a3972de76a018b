// Video content parts of a chat request, as OpenAI-compatible servers accept them:
//   {"type": "video_url", "video_url": {"url": "data:video/mp4;base64,...", "fps": 2,
//    "max_frames": 64, "max_pixels": 4194304}}   (or "video_url": "data:...")
//   {"type": "video", "video": ["data:image/jpeg;base64,...", ...], "fps": 2, ...}
// A file is sampled at "fps" frames per second (default: the server's); a frame list is taken
// as frames at "fps" per second (default: already at the sampling rate, all kept up to
// max_frames). max_frames and max_pixels (all frames together) may lower the server's limits.
// Data URIs always; http(s) URLs only with remote images enabled, under the same checks
// (listed in ChatRequest::remote_videos for the endpoint to fetch), file:// URLs with
// RequestLimits::allow_file_urls (listed there too, for `qvl batch` to read). Errors are 400s.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "server/chat_request.h"
#include "server/remote_image.h"

namespace qvl::server {

ContentPart parse_video_part(const nlohmann::json& part, const std::string& param,
                             const ModelInfo& model, const RequestLimits& limits, ChatRequest& out);

// Fetches ChatRequest::remote_videos (files up to limits.max_video_bytes, frames up to
// max_image_bytes) with the image fetcher's address checks and deadline.
void fetch_remote_videos(ChatRequest& chat, const RemoteFetchOptions& options,
                         const RequestLimits& limits);

}  // namespace qvl::server
