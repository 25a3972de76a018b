#include "cli/conversation.h"

#include <nlohmann/json.hpp>

#include "base/base64.h"
#include "base/error.h"
#include "base/mapped_file.h"
#include "tokenizer/json_depth.h"

namespace qvl::cli {
namespace {

using json = nlohmann::json;

std::vector<uint8_t> read_image(const std::string& path, size_t max_bytes) {
  const MappedFile file(path);
  if (file.size() > max_bytes) {
    fail(ErrorCode::kResourceExhausted, "image '" + path + "' is " + std::to_string(file.size()) +
                                            " bytes; the limit is " + std::to_string(max_bytes));
  }
  return std::vector<uint8_t>(file.data(), file.data() + file.size());
}

std::vector<uint8_t> load_image_reference(const std::string& ref, const std::string& base_dir,
                                          size_t max_bytes) {
  if (ref.rfind("data:", 0) == 0) return parse_data_uri(ref).bytes;
  std::string path = ref;
  if (path.rfind("file://", 0) == 0) path = path.substr(7);
  if (path.rfind("http://", 0) == 0 || path.rfind("https://", 0) == 0) {
    fail(ErrorCode::kUnsupported, "remote image '" + ref +
                                      "': qvl run reads local files and "
                                      "data: URIs only; download the image first");
  }
  if (!path.empty() && path[0] != '/' && !base_dir.empty()) path = base_dir + "/" + path;
  return read_image(path, max_bytes);
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

}  // namespace

GenerationRequest request_from_messages_file(const std::string& path, size_t max_image_bytes) {
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
          img.bytes = load_image_reference(image_reference(part), base_dir, max_image_bytes);
          req.images.push_back(std::move(img));
          msg.parts.push_back(
              {ContentPart::Kind::kImage, "", static_cast<int>(req.images.size() - 1)});
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
    req.images.push_back({read_image(path, max_image_bytes), 0, 0});
    user.parts.push_back({ContentPart::Kind::kImage, "", static_cast<int>(req.images.size() - 1)});
  }
  user.parts.push_back({ContentPart::Kind::kText, question, -1});
  req.messages.push_back(std::move(user));
  return req;
}

}  // namespace qvl::cli
