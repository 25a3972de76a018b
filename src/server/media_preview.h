// POST /v1/media/preview (a qvl extension, for the web page): what the server makes of one video
// or document content part, computed by the chat path's own functions (the part parsers, the
// engine's frame sampling, the document renderer and its budget sharing), so the counts shown
// are the ones /v1/chat/completions then reports, by construction.
//
//   {"part": {"type": "video_url", "video_url": {"url": "data:video/mp4;base64,...", "fps": 2}}}
//   -> {"type": "video", "frames": [{"index": 0, "pair": 0, "timestamp": 0.25,
//       "timestamp_text": "<0.2 seconds>", "thumbnail": "data:image/jpeg;base64,..."}, ...],
//       "sampled_frames": 4, "pairs": 2, "grid": {"t": 2, "h": 6, "w": 8}, "frame_width": 128,
//       "frame_height": 96, "video_tokens": 24, "duration": 2.0, "source": {...} or null}
//   {"part": {"type": "file", "file": {"file_data": "data:application/pdf;base64,...",
//             "pages": "1-2", "text": true}}}
//   -> {"type": "document", "page_count": 12, "pages": [{"number": 1, "width": 992,
//       "height": 1312, "tokens": 1271, "thumbnail": "...", "text": "..."}], "image_tokens": 2542}
//
// Same key, body limits, SSRF rules and limits as chat; the decoding or rendering holds a
// generation slot as its chat request would (a document then also waits at the render gate).
// Errors are the chat path's, with "part" as the parameter path.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "qvl/engine.h"
#include "server/chat_request.h"

namespace qvl::server {

struct MediaPreviewRequest {
  ChatRequest chat;  // one user message holding the part
  bool video = false;
};

// Throws ApiError (400) for a body that is not {"part": <a video_url, video or file part>}, or
// for the part as the chat parser would.
MediaPreviewRequest parse_media_preview(std::string_view body, const ModelInfo& model,
                                        const RequestLimits& limits);

// The sampled frames of the request's video (remote bytes already fetched). Throws ApiError.
nlohmann::json preview_video(const Engine& engine, const ChatRequest& chat,
                             const RequestLimits& limits);

// The pages of the request's document as the chat path renders them. Throws ApiError.
nlohmann::json preview_document(ChatRequest& chat, const RequestLimits& limits);

}  // namespace qvl::server
