#include "server/media_preview.h"

#include <cstdio>

#include "base/error.h"
#include "image/decode.h"
#include "image/video_preprocess.h"
#include "image/video_sampling.h"
#include "media/video_source.h"
#include "server/api_error.h"
#include "server/file_part.h"
#include "server/thumbnail.h"
#include "server/video_part.h"

namespace qvl::server {
namespace {

using json = nlohmann::json;

constexpr const char* kParam = "part";

// An engine or decoder error about the part, as the chat path reports it (400 for bad input).
[[noreturn]] void fail_part(const Error& error) {
  const ApiError api = api_error_from(error);
  throw ApiError(api.status(), api.type(), api.message(), api.status() == 400 ? kParam : "",
                 api.code());
}

// What the container says about a video file (the frames were sampled from it already, so it
// opens within the limits).
json source_info(const VideoInput& video, const RequestLimits& limits) {
  media::VideoLimits probe;
  probe.max_bytes = limits.max_video_bytes;
  const media::VideoSource source = media::VideoSource::open(
      std::string(reinterpret_cast<const char*>(video.bytes.data()), video.bytes.size()), probe);
  const media::VideoInfo& info = source.info();
  return {{"frame_count", info.frame_count},
          {"fps", info.fps},
          {"duration", info.duration_s},
          {"width", info.width},
          {"height", info.height},
          {"container", info.container},
          {"codec", info.codec}};
}

// A page marker "Page 3/12 of name:" (server/file_part.h) -> 3 and 12.
bool read_marker(const std::string& text, int& number, int& count) {
  return std::sscanf(text.c_str(), "Page %d/%d", &number, &count) == 2;
}

// The text after a page's text-layer heading ("...:\n"), without the closing newline.
std::string text_layer(const std::string& part) {
  const size_t start = part.find(":\n");
  std::string text = start == std::string::npos ? part : part.substr(start + 2);
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

}  // namespace

MediaPreviewRequest parse_media_preview(std::string_view body, const ModelInfo& model,
                                        const RequestLimits& limits) {
  const json request = parse_json_object(body, limits.max_json_depth);
  const auto part = request.find(kParam);
  if (part == request.end() || part->is_null()) {
    fail_request(kParam, "missing required field 'part' (a video_url, video or file content part)",
                 "missing_field");
  }
  if (!part->is_object()) fail_request(kParam, "'part' must be an object", "invalid_type");
  const auto type = part->find("type");
  const std::string kind = type != part->end() && type->is_string() ? type->get<std::string>() : "";
  MediaPreviewRequest out;
  ContentPart parsed;
  if (kind == "video_url" || kind == "video") {
    parsed = parse_video_part(*part, kParam, model, limits, out.chat);
    out.video = true;
  } else if (kind == "file") {
    parsed = parse_file_part(*part, kParam, limits, out.chat);
  } else {
    fail_request(std::string(kParam) + ".type",
                 "a preview takes one \"video_url\", \"video\" or \"file\" part",
                 "unsupported_value");
  }
  out.chat.generation.messages.emplace_back("user", false, std::vector<ContentPart>{parsed});
  return out;
}

json preview_video(const Engine& engine, const ChatRequest& chat, const RequestLimits& limits) {
  const VideoInput& video = chat.generation.videos.at(0);
  try {
    const PreprocessedVideo prepared = engine.sample_video(video);
    json frames = json::array();
    for (size_t i = 0; i < prepared.resized.size(); ++i) {
      const size_t pair = i / 2;  // two frames per temporal patch, one timestamp each pair
      const double seconds = prepared.timestamps.at(pair);
      frames.push_back({{"index", prepared.frame_indices[i]},
                        {"pair", pair},
                        {"timestamp", seconds},
                        {"timestamp_text", timestamp_text(seconds)},
                        {"thumbnail", jpeg_thumbnail_data_uri(prepared.resized[i])}});
    }
    const json source = video.bytes.empty() ? json(nullptr) : source_info(video, limits);
    return {{"object", "media.preview"},
            {"type", "video"},
            {"frames", std::move(frames)},
            {"sampled_frames", prepared.resized.size()},
            {"pairs", prepared.grid_t},
            {"grid", {{"t", prepared.grid_t}, {"h", prepared.grid_h}, {"w", prepared.grid_w}}},
            {"frame_width", prepared.resized.front().width},
            {"frame_height", prepared.resized.front().height},
            {"video_tokens", prepared.tokens()},
            {"duration", source.is_null() ? json(nullptr) : source["duration"]},
            {"source", source}};
  } catch (const Error& error) {
    fail_part(error);
  }
}

json preview_document(ChatRequest& chat, const RequestLimits& limits) {
  expand_documents(chat, limits);
  json pages = json::array();
  int page_count = 0;
  int64_t image_tokens = 0;
  for (const ContentPart& part : chat.generation.messages.at(0).parts) {
    int number = 0;
    if (part.kind == ContentPart::Kind::kText && read_marker(part.text, number, page_count)) {
      pages.push_back({{"number", number}});
      // With "images": false the marker holds the text layer itself.
      if (part.text.find("(its text layer)") != std::string::npos) {
        pages.back()["text"] = text_layer(part.text);
      }
    } else if (part.kind == ContentPart::Kind::kImage && !pages.empty()) {
      const ImageInput& page = chat.generation.images.at(static_cast<size_t>(part.image_index));
      RgbImage image;
      try {
        image = decode_image(page.bytes.data(), page.bytes.size());
      } catch (const Error& error) {
        fail_part(error);
      }
      json& entry = pages.back();
      entry["width"] = image.width;
      entry["height"] = image.height;
      entry["tokens"] = page.max_tokens;  // the page's exact budget: the image path keeps it
      entry["thumbnail"] = jpeg_thumbnail_data_uri(image);
      image_tokens += page.max_tokens;
    } else if (part.kind == ContentPart::Kind::kText && !pages.empty()) {
      pages.back()["text"] = text_layer(part.text);
    }
  }
  return {{"object", "media.preview"},
          {"type", "document"},
          {"page_count", page_count},
          {"pages", std::move(pages)},
          {"image_tokens", image_tokens}};
}

}  // namespace qvl::server
