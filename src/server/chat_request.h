// POST /v1/chat/completions body -> qvl::GenerationRequest, as a pure function so it can be unit
// tested and fuzzed. Every problem throws ApiError (400) naming the field and what to change.
// OpenAI fields qvl does not implement (tools, response_format, logit_bias, ...) are refused with
// a 400 naming the field; fields OpenAI does not define are ignored (clients send vendor
// extensions). The table of known fields is in chat_request.cpp. JSON null means absent.
// logprobs / top_logprobs (0..20) set GenerationRequest::top_logprobs (-1 when not asked for).
//
// image_url.detail maps to per-image token budgets (one image token = 32x32 pixels):
//   "low"  -> at most RequestLimits::low_detail_max_tokens (default 256, ~512x512 px)
//   "high" -> at most RequestLimits::high_detail_max_tokens (default 1280, ~1150x1150 px)
//   "auto" or absent -> the engine's default budget (`qvl serve --image-max-tokens`)
// When the images of one request together could exceed max_total_image_tokens, each image's
// budget is lowered to an equal share, so a request never costs more than that.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "qvl/engine.h"
#include "server/document_part.h"
#include "server/reasoning_split.h"

namespace qvl::server {

struct RequestLimits {
  size_t max_messages = 2048;
  size_t max_images = 8;                  // images per request
  size_t max_image_bytes = 16u << 20;     // encoded bytes per image
  int64_t max_total_image_tokens = 4096;  // sum of per-image budgets
  int64_t low_detail_max_tokens = 256;
  int64_t high_detail_max_tokens = 1280;
  size_t max_stop_sequences = 8;
  size_t max_stop_bytes = 256;
  int max_json_depth = 64;
  bool allow_remote_images = false;
  // file:// image URLs, listed in ChatRequest::remote_images for the caller to read (`qvl batch`
  // reads local files; the server never sets this).
  bool allow_file_urls = false;
  // Videos (server/video_part.h): per request, encoded bytes per file, frames per frame list.
  size_t max_videos = 2;
  size_t max_video_bytes = 64u << 20;
  size_t max_video_list_frames = 256;
  DocumentRequestLimits documents;  // `file` parts: PDFs and TIFF scans (server/file_part.h)
};

struct RemoteImage {
  int image_index = 0;  // into GenerationRequest::images; bytes are filled in by the fetcher
  std::string url;      // http(s)://, or file:// with RequestLimits::allow_file_urls
  std::string param;    // e.g. "messages[0].content[1].image_url.url", for error messages
};

// A video file (frame -1) or one frame of a frame list behind an http(s) URL.
struct RemoteVideo {
  int video_index = 0;  // into GenerationRequest::videos
  int frame_index = -1;
  std::string url;
  std::string param;
};

struct ChatRequest {
  GenerationRequest generation;
  std::string model;
  bool stream = false;
  bool include_usage = false;
  std::vector<RemoteImage> remote_images;
  std::vector<RemoteVideo> remote_videos;
  std::vector<DocumentPart> documents;  // file parts, rendered into pages by expand_documents
  // "document_mode": "per_page": each page of the one document answered on its own
  // (server/per_page_request.h); the documents are then rendered by expand_document_pages.
  bool per_page = false;
  bool parse_tool_calls = false;  // tools offered (tool_choice not "none"): answers may call them
  // A Thinking model's reasoning: apart, left out or unparsed (reasoning_split.h). kRaw for
  // Instruct models, which have none.
  ReasoningOutput reasoning = ReasoningOutput::kRaw;
};

ChatRequest parse_chat_request(std::string_view body, const ModelInfo& model,
                               const RequestLimits& limits);

// The JSON body of a request, or ApiError 400 when it is not JSON, is nested deeper than
// `max_depth`, or is not an object.
nlohmann::json parse_json_object(std::string_view body, int max_depth);

}  // namespace qvl::server
