#include "eval/golden_prompts.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"

namespace qvl {
namespace {

using json = nlohmann::json;

std::vector<uint8_t> read_bytes(const std::string& path) {
  const MappedFile f(path);
  return std::vector<uint8_t>(f.data(), f.data() + f.size());
}

// Images are listed per case in order of appearance; an {"type": "image"} part takes the next.
QualityPrompt prompt_from_case(const json& c, const std::string& dir) {
  QualityPrompt p;
  p.name = c.at("name").get<std::string>();
  const json& images = c.at("images");
  for (const json& m : c.at("messages")) {
    Message msg;
    msg.role = m.at("role").get<std::string>();
    const json& content = m.at("content");
    if (content.is_string()) {
      msg.parts.push_back({ContentPart::Kind::kText, content.get<std::string>(), -1});
    } else {
      msg.content_is_string = false;
      for (const json& part : content) {
        if (part.at("type") == "image") {
          const size_t k = p.request.images.size();
          if (k >= images.size()) {
            fail(ErrorCode::kCorrupt, "case '" + p.name + "' has more image parts than images");
          }
          p.request.images.push_back(
              {read_bytes(dir + "/" + images[k].at("file").get<std::string>()), 0, 0});
          msg.parts.push_back({ContentPart::Kind::kImage, "", static_cast<int>(k)});
        } else {
          msg.parts.push_back({ContentPart::Kind::kText, part.at("text").get<std::string>(), -1});
        }
      }
    }
    p.request.messages.push_back(std::move(msg));
  }
  p.continuation = c.at("generated_tokens").get<std::vector<int64_t>>();
  return p;
}

}  // namespace

std::vector<QualityPrompt> golden_quality_prompts(const std::string& golden_dir) {
  const std::string path = golden_dir + "/manifest.json";
  if (!file_exists(path)) fail(ErrorCode::kNotFound, "no manifest.json in '" + golden_dir + "'");
  std::vector<QualityPrompt> out;
  try {
    const json manifest = json::parse(read_text_file(path));
    for (const json& c : manifest.at("cases")) out.push_back(prompt_from_case(c, golden_dir));
  } catch (const json::exception& e) {
    fail(ErrorCode::kCorrupt, "'" + path + "' is not a golden manifest: " + e.what());
  }
  if (out.empty()) fail(ErrorCode::kCorrupt, "'" + path + "' lists no cases");
  return out;
}

}  // namespace qvl
