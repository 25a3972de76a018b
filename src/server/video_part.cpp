#include "server/video_part.h"

#include <chrono>
#include <cmath>

#include "base/base64.h"
#include "base/error.h"
#include "server/api_error.h"
#include "server/data_uri.h"

namespace qvl::server {
namespace {

using json = nlohmann::json;

const json* member(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string type_name(const json& v) {
  return v.is_string()    ? "a string"
         : v.is_number()  ? "a number"
         : v.is_array()   ? "an array"
         : v.is_object()  ? "an object"
         : v.is_boolean() ? "a boolean"
                          : "null";
}

[[noreturn]] void wrong_type(const std::string& param, const char* expected, const json& v) {
  fail_request(param, "'" + param + "' must be " + expected + ", got " + type_name(v),
               "invalid_type");
}

// The per-request sampling fields of `object` (a video_url object or a video part).
void read_sampling(const json& object, const std::string& param, const ModelInfo& model,
                   bool frame_list, VideoInput& video) {
  if (const json* fps = member(object, "fps")) {
    if (!fps->is_number()) wrong_type(param + ".fps", "a number", *fps);
    const double v = fps->get<double>();
    const double cap = frame_list ? 240.0 : model.video_max_fps;
    if (!(v > 0) || v > cap) {
      fail_request(param + ".fps", "'" + param + ".fps' must be above 0 and at most " +
                                       std::to_string(cap).substr(0, 5));
    }
    (frame_list ? video.frames_fps : video.fps) = v;
  }
  if (const json* frames = member(object, "max_frames")) {
    if (!frames->is_number_integer()) wrong_type(param + ".max_frames", "an integer", *frames);
    const int64_t v = frames->get<int64_t>();
    if (v < 2 || v > model.video_max_frames) {
      fail_request(param + ".max_frames", "'" + param + ".max_frames' must be 2.." +
                                              std::to_string(model.video_max_frames) +
                                              " on this server");
    }
    video.max_frames = v;
  }
  if (const json* pixels = member(object, "max_pixels")) {
    if (!pixels->is_number_integer()) wrong_type(param + ".max_pixels", "an integer", *pixels);
    const int64_t v = pixels->get<int64_t>();
    if (v < 4096 || v > model.video_max_pixels) {
      fail_request(param + ".max_pixels", "'" + param + ".max_pixels' must be 4096.." +
                                              std::to_string(model.video_max_pixels) +
                                              " on this server");
    }
    video.max_pixels = v;
  }
}

// A video file's data URI: data:video/<any>;base64,... (image/gif and image/webp, animated,
// and application/octet-stream too), the size checked before decoding.
std::vector<uint8_t> video_data_uri(const std::string& uri, size_t max_bytes,
                                    const std::string& param) {
  const size_t comma = uri.find(',');
  const std::string meta = uri.substr(5, comma == std::string::npos ? 0 : comma - 5);
  const std::string kBase64 = ";base64";
  if (comma == std::string::npos || meta.size() < kBase64.size() ||
      meta.compare(meta.size() - kBase64.size(), kBase64.size(), kBase64) != 0) {
    fail_request(param, "a video data URI is data:video/mp4;base64,<data>", "invalid_video_url");
  }
  const std::string mime = meta.substr(0, meta.size() - kBase64.size());
  if (!mime.empty() && mime.rfind("video/", 0) != 0 && mime != "image/gif" &&
      mime != "image/webp" && mime != "application/octet-stream") {
    fail_request(param,
                 "data URI media type '" + mime.substr(0, 64) +
                     "' is not a video; use video/mp4, video/webm, video/x-matroska, "
                     "video/quicktime, image/gif or image/webp",
                 "invalid_video_format");
  }
  const size_t payload = uri.size() - comma - 1;
  if (payload / 4 * 3 > max_bytes + 3) {
    fail_request(param, "video is larger than the " + std::to_string(max_bytes) + "-byte limit",
                 "video_too_large");
  }
  std::vector<uint8_t> bytes;
  try {
    bytes = base64_decode(std::string_view(uri).substr(comma + 1));
  } catch (const Error& error) {
    fail_request(param, std::string("video data is not valid base64: ") + error.what(),
                 "invalid_base64");
  }
  if (bytes.size() > max_bytes) {
    fail_request(param, "video is larger than the " + std::to_string(max_bytes) + "-byte limit",
                 "video_too_large");
  }
  if (bytes.empty()) fail_request(param, "video data is empty", "invalid_video");
  return bytes;
}

// A data URI's bytes now, or an http(s) URL noted for the endpoint to fetch.
std::vector<uint8_t> read_url(const json& url, const std::string& param, size_t max_bytes,
                              const RequestLimits& limits, ChatRequest& out, int video, int frame) {
  if (!url.is_string()) wrong_type(param, "a string", url);
  const auto& text = url.get_ref<const std::string&>();
  if (text.rfind("data:", 0) == 0) {
    return frame >= 0 ? decode_data_uri(text, max_bytes, param)
                      : video_data_uri(text, max_bytes, param);
  }
  if (text.rfind("http://", 0) == 0 || text.rfind("https://", 0) == 0) {
    if (!limits.allow_remote_images) {
      fail_request(param,
                   "remote URLs are disabled on this server; send the video inline as a data URI "
                   "(data:video/mp4;base64,...)",
                   "remote_images_disabled");
    }
    if (text.size() > 4096) fail_request(param, "URL is longer than 4096 bytes");
    out.remote_videos.push_back(RemoteVideo{video, frame, text, param});
    return {};
  }
  if (limits.allow_file_urls && text.rfind("file://", 0) == 0) {  // `qvl batch` reads these
    out.remote_videos.push_back(RemoteVideo{video, frame, text, param});
    return {};
  }
  fail_request(param, "a video URL must be a data URI (data:video/mp4;base64,...) or http(s) URL",
               "invalid_video_url");
}

}  // namespace

ContentPart parse_video_part(const json& part, const std::string& param, const ModelInfo& model,
                             const RequestLimits& limits, ChatRequest& out) {
  const std::string& type = part.at("type").get_ref<const std::string&>();
  if (type != "video" && type != "video_url") {
    fail_request(param + ".type",
                 "unsupported content part type '" + type.substr(0, 32) +
                     "'; use \"text\", \"image_url\", \"video_url\", \"video\" or \"file\"",
                 "unsupported_value");
  }
  const bool frame_list = type == "video";
  const std::string key = frame_list ? "video" : "video_url";
  const std::string value_param = param + "." + key;
  const json* value = member(part, key.c_str());
  if (value == nullptr) {
    fail_request(value_param, "missing required field '" + value_param + "'", "missing_field");
  }
  if (model.video_max_frames <= 0) {
    fail_request(param + ".type", "this server does not take videos", "unsupported_value");
  }
  if (out.generation.videos.size() >= limits.max_videos) {
    fail_request(value_param,
                 "too many videos: at most " + std::to_string(limits.max_videos) + " per request",
                 "too_many_videos");
  }
  const int index = static_cast<int>(out.generation.videos.size());
  VideoInput video;
  if (frame_list) {
    if (!value->is_array()) wrong_type(value_param, "an array of image URLs", *value);
    if (value->size() < 2 || value->size() > limits.max_video_list_frames) {
      fail_request(value_param, "a frame list needs 2.." +
                                    std::to_string(limits.max_video_list_frames) + " frames");
    }
    read_sampling(part, param, model, true, video);
    for (size_t i = 0; i < value->size(); ++i) {
      video.frames.push_back(read_url((*value)[i], value_param + "[" + std::to_string(i) + "]",
                                      limits.max_image_bytes, limits, out, index,
                                      static_cast<int>(i)));
    }
  } else {
    const json* url = value;
    std::string url_param = value_param;
    if (value->is_object()) {
      url = member(*value, "url");
      url_param += ".url";
      if (url == nullptr) {
        fail_request(url_param, "missing required field '" + url_param + "'", "missing_field");
      }
      read_sampling(*value, value_param, model, false, video);
    }
    video.bytes = read_url(*url, url_param, limits.max_video_bytes, limits, out, index, -1);
  }
  out.generation.videos.push_back(std::move(video));
  ContentPart p;
  p.kind = ContentPart::Kind::kVideo;
  p.video_index = index;
  return p;
}

void fetch_remote_videos(ChatRequest& chat, const RemoteFetchOptions& options,
                         const RequestLimits& limits) {
  // One deadline for all of a request's video downloads (a frame list may name hundreds).
  const auto deadline = std::chrono::steady_clock::now() + options.timeout;
  for (const RemoteVideo& remote : chat.remote_videos) {
    RemoteFetchOptions o = options;
    o.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (o.timeout.count() <= 0) {
      fail_request(remote.param,
                   "downloading the video took longer than " +
                       std::to_string(options.timeout.count()) + " ms",
                   "fetch_timeout");
    }
    o.max_bytes = remote.frame_index < 0 ? limits.max_video_bytes : limits.max_image_bytes;
    std::vector<uint8_t> bytes = fetch_remote_image(remote.url, o, remote.param);
    VideoInput& video = chat.generation.videos[static_cast<size_t>(remote.video_index)];
    if (remote.frame_index < 0) {
      video.bytes = std::move(bytes);
    } else {
      video.frames[static_cast<size_t>(remote.frame_index)] = std::move(bytes);
    }
  }
}

}  // namespace qvl::server
