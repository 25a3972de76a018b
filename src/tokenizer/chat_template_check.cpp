// Recognises the Qwen3-VL Instruct chat template that render_chat reproduces.
#include <filesystem>

#include "base/error.h"
#include "base/mapped_file.h"
#include "tokenizer/chat_format.h"

namespace qvl {

namespace {

// FNV-1a 64 of the "chat_template" text of Qwen3-VL Instruct (5292 bytes; the
// chat_template.json holding it has sha256 3636d0f0bd6bef02...).
constexpr uint64_t kQwen3VlInstructTemplateHash = 0xf67afe266c470df1ULL;

// tokenizer_config.json may hold a list of named templates; "default" is the chat one.
std::string template_from_json(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {
    for (const auto& item : value) {
      if (item.is_object() && item.value("name", "") == "default" && item.contains("template") &&
          item["template"].is_string()) {
        return item["template"].get<std::string>();
      }
    }
  }
  return {};
}

}  // namespace

uint64_t chat_template_hash(std::string_view template_text) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : template_text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

ChatTemplateCheck check_chat_template(const std::string& model_dir) {
  namespace fs = std::filesystem;
  ChatTemplateCheck check;
  const fs::path dir(model_dir);
  std::string text;
  if (file_exists((dir / "chat_template.jinja").string())) {
    check.source = (dir / "chat_template.jinja").string();
    text = read_text_file(check.source);
  } else {
    for (const char* name : {"chat_template.json", "tokenizer_config.json"}) {
      const std::string path = (dir / name).string();
      if (!file_exists(path)) continue;
      const nlohmann::json root = nlohmann::json::parse(read_text_file(path), nullptr, false);
      if (!root.is_object() || !root.contains("chat_template")) continue;
      text = template_from_json(root["chat_template"]);
      if (!text.empty()) {
        check.source = path;
        break;
      }
    }
  }
  check.found = !text.empty();
  check.hash = chat_template_hash(text);
  check.known = check.found && check.hash == kQwen3VlInstructTemplateHash;
  return check;
}

bool is_known_chat_template(const std::string& model_dir) {
  return check_chat_template(model_dir).known;
}

}  // namespace qvl
