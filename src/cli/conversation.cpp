#include "cli/conversation.h"

#include <nlohmann/json.hpp>

#include "base/base64.h"
#include "base/error.h"
#include "base/mapped_file.h"
#include "tokenizer/json_depth.h"

namespace qvl::cli {
namespace {

using json = nlohmann::json;

// `what` ("image", "video") names the file in errors.
std::vector<uint8_t> read_file(const std::string& path, size_t max_bytes,
                               const std::string& what = "image") {
  const MappedFile file(path);  // the size is known before any byte is read
  if (file.size() > max_bytes) {
    fail(ErrorCode::kResourceExhausted, what + " '" + path + "' is " + std::to_string(file.size()) +
                                            " bytes; the limit is " + std::to_string(max_bytes));
  }
  return std::vector<uint8_t>(file.data(), file.data() + file.size());
}

// A data: URI, a file:// URL or a plain path (relative to base_dir).
std::vector<uint8_t> load_reference(const std::string& ref, const std::string& base_dir,
                                    size_t max_bytes, const std::string& what = "image") {
  if (ref.rfind("data:", 0) == 0) {
    std::vector<uint8_t> bytes = parse_data_uri(ref).bytes;
    if (bytes.size() > max_bytes) {
      fail(ErrorCode::kResourceExhausted, "a data: URI " + what + " holds " +
                                              std::to_string(bytes.size()) +
                                              " bytes; the limit is " + std::to_string(max_bytes));
    }
    return bytes;
  }
  std::string path = ref;
  if (path.rfind("file://", 0) == 0) path = path.substr(7);
  if (path.rfind("http://", 0) == 0 || path.rfind("https://", 0) == 0) {
    fail(ErrorCode::kUnsupported, "remote " + what + " '" + ref +
                                      "': qvl run reads local files and data: URIs only; "
                                      "download the " +
                                      what + " first");
  }
  if (!path.empty() && path[0] != '/' && !base_dir.empty()) path = base_dir + "/" + path;
  std::vector<uint8_t> bytes = read_file(path, max_bytes, what);
  if (bytes.empty()) fail(ErrorCode::kInvalidArgument, what + " '" + path + "' is empty");
  return bytes;
}

std::string image_reference(const json& part) {
  // OpenAI: {"type":"image_url","image_url":{"url":...}} or {"image_url": "..."};
  // Qwen tooling: {"type":"image","image": "..."}.
  for (const char* key : {"image_url", "image"}) {
    if (!part.contains(key)) continue;
    const json& v = part[key];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_object() && v.contains("url") && v["url"].is_string()) {
      return v["url"].get<std::string>();
    }
  }
  fail(ErrorCode::kInvalidArgument, "image part without a url: " + part.dump());
}

// The sampling fields of a video part (or its video_url object); the engine checks their range.
void read_video_sampling(const json& object, bool frame_list, VideoInput& video) {
  const auto number = [&](const char* key, bool integer) -> const json* {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return nullptr;
    if (integer ? !it->is_number_integer() : !it->is_number()) {
      fail(ErrorCode::kInvalidArgument,
           std::string("video '") + key + "' must be " + (integer ? "an integer" : "a number"));
    }
    return &*it;
  };
  if (const json* fps = number("fps", false)) {
    (frame_list ? video.frames_fps : video.fps) = fps->get<double>();
  }
  if (const json* frames = number("max_frames", true)) video.max_frames = frames->get<int64_t>();
  if (const json* pixels = number("max_pixels", true)) video.max_pixels = pixels->get<int64_t>();
}

// OpenAI-style {"type": "video_url", "video_url": {"url": ..., "fps": ...}} (or a string), or
// {"type": "video", "video": [frame URLs...], "fps": ...} (a frame list, or a string: a file, as
// Qwen's tooling writes it).
VideoInput read_video_part(const json& part, const std::string& type, const std::string& base_dir,
                           size_t max_image_bytes, size_t max_video_bytes) {
  VideoInput video;
  const auto it = part.find(type);
  if (it == part.end()) fail(ErrorCode::kInvalidArgument, type + " part without '" + type + "'");
  const json& value = *it;
  if (type == "video" && value.is_array()) {
    read_video_sampling(part, true, video);
    for (const json& frame : value) {
      if (!frame.is_string()) fail(ErrorCode::kInvalidArgument, "video frames must be strings");
      video.frames.push_back(load_reference(frame.get<std::string>(), base_dir, max_image_bytes));
    }
    return video;
  }
  const json* url = &value;
  if (value.is_object()) {
    read_video_sampling(value, false, video);
    url = value.contains("url") ? &value["url"] : nullptr;
  } else {
    read_video_sampling(part, false, video);
  }
  if (url == nullptr || !url->is_string()) {
    fail(ErrorCode::kInvalidArgument, type + " part without a url: " + part.dump().substr(0, 200));
  }
  video.bytes = load_reference(url->get<std::string>(), base_dir, max_video_bytes, "video");
  return video;
}

}  // namespace

GenerationRequest request_from_messages_file(const std::string& path, size_t max_image_bytes,
                                             size_t max_video_bytes) {
  json doc;
  try {
    doc = parse_json_within_depth<json>(read_text_file(path));
  } catch (const json::exception& e) {
    fail(ErrorCode::kInvalidArgument, "'" + path + "' is not valid JSON: " + e.what());
  } catch (const Error& e) {
    fail(ErrorCode::kInvalidArgument, "'" + path + "': " + e.what());
  }
  const json messages = doc.is_object() && doc.contains("messages") ? doc["messages"] : doc;
  if (!messages.is_array() || messages.empty()) {
    fail(ErrorCode::kInvalidArgument, "'" + path + "' must hold a non-empty messages array");
  }
  const size_t slash = path.find_last_of('/');
  const std::string base_dir = slash == std::string::npos ? "" : path.substr(0, slash);
  GenerationRequest req;
  for (const json& m : messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
      fail(ErrorCode::kInvalidArgument, "each message needs a string 'role': " + m.dump());
    }
    Message msg;
    msg.role = m["role"].get<std::string>();
    const json content = m.contains("content") ? m["content"] : json("");
    if (content.is_string() || content.is_null()) {
      msg.parts.push_back(
          {ContentPart::Kind::kText, content.is_string() ? content.get<std::string>() : "", -1});
    } else if (content.is_array()) {
      msg.content_is_string = false;
      for (const json& part : content) {
        const std::string type = part.value("type", part.contains("text") ? "text" : "image");
        if (type == "text") {
          if (!part.contains("text") || !part["text"].is_string()) {
            fail(ErrorCode::kInvalidArgument, "text part without a string 'text'");
          }
          msg.parts.push_back({ContentPart::Kind::kText, part["text"].get<std::string>(), -1});
        } else if (type == "image_url" || type == "image") {
          ImageInput img;
          img.bytes = load_reference(image_reference(part), base_dir, max_image_bytes);
          req.images.push_back(std::move(img));
          msg.parts.push_back(
              {ContentPart::Kind::kImage, "", static_cast<int>(req.images.size() - 1)});
        } else if (type == "video_url" || type == "video") {
          req.videos.push_back(
              read_video_part(part, type, base_dir, max_image_bytes, max_video_bytes));
          ContentPart video;
          video.kind = ContentPart::Kind::kVideo;
          video.video_index = static_cast<int>(req.videos.size() - 1);
          msg.parts.push_back(video);
        } else {
          fail(ErrorCode::kInvalidArgument, "unknown content part type '" + type + "'");
        }
      }
    } else {
      fail(ErrorCode::kInvalidArgument, "message content must be a string or a list of parts");
    }
    req.messages.push_back(std::move(msg));
  }
  return req;
}

GenerationRequest request_from_question(const std::string& question,
                                        const std::vector<std::string>& image_paths,
                                        const std::string& system, size_t max_image_bytes) {
  GenerationRequest req;
  if (!system.empty()) {
    req.messages.push_back({"system", true, {{ContentPart::Kind::kText, system, -1}}});
  }
  Message user{"user", image_paths.empty(), {}};
  for (const auto& path : image_paths) {
    req.images.push_back({read_file(path, max_image_bytes), 0, 0});
    user.parts.push_back({ContentPart::Kind::kImage, "", static_cast<int>(req.images.size() - 1)});
  }
  user.parts.push_back({ContentPart::Kind::kText, question, -1});
  req.messages.push_back(std::move(user));
  return req;
}

}  // namespace qvl::cli
