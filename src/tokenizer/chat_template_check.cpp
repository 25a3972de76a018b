// Recognises the Qwen3-VL chat templates (Instruct, Thinking) that render_chat reproduces.
#include <filesystem>

#include "base/error.h"
#include "base/mapped_file.h"
#include "tokenizer/chat_format.h"

namespace qvl {

namespace {

// FNV-1a 64 of the "chat_template" text of Qwen3-VL Instruct (5292 bytes; the
// chat_template.json holding it has sha256 3636d0f0bd6bef02...).
constexpr uint64_t kQwen3VlInstructTemplateHash = 0xf67afe266c470df1ULL;
// FNV-1a 64 of the "chat_template" text of Qwen3-VL-*-Thinking (5198 bytes, sha256 84ed326c...;
// tests/tokenizer/qwen3vl_thinking_chat_template.jinja, where its source is told).
constexpr uint64_t kQwen3VlThinkingTemplateHash = 0x32334d10195d5f66ULL;

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

ChatTemplateCheck check_chat_template_in(const ChatTemplateFileReader& read_file) {
  std::string text, source;
  if (const auto jinja = read_file("chat_template.jinja")) {
    text = *jinja;
    source = "chat_template.jinja";
  } else {
    for (const char* name : {"chat_template.json", "tokenizer_config.json"}) {
      const auto json_text = read_file(name);
      if (!json_text) continue;
      const nlohmann::json root = nlohmann::json::parse(*json_text, nullptr, false);
      if (!root.is_object() || !root.contains("chat_template")) continue;
      text = template_from_json(root["chat_template"]);
      if (!text.empty()) {
        source = name;
        break;
      }
    }
  }
  ChatTemplateCheck check = check_chat_template_text(text);
  check.source = source;
  return check;
}

ChatTemplateCheck check_chat_template(const std::string& model_dir) {
  const std::filesystem::path dir(model_dir);
  ChatTemplateCheck check = check_chat_template_in([&](const std::string& name) {
    const std::string path = (dir / name).string();
    return file_exists(path) ? std::optional<std::string>(read_text_file(path)) : std::nullopt;
  });
  if (!check.source.empty()) check.source = (dir / check.source).string();
  return check;
}

ChatTemplateCheck check_chat_template_text(std::string_view template_text) {
  ChatTemplateCheck check;
  check.found = !template_text.empty();
  check.hash = chat_template_hash(template_text);
  const bool thinking = check.hash == kQwen3VlThinkingTemplateHash;
  check.known = check.found && (check.hash == kQwen3VlInstructTemplateHash || thinking);
  check.variant = thinking ? ChatTemplateVariant::kThinking : ChatTemplateVariant::kInstruct;
  return check;
}

ChatTemplateVariant chat_template_variant(std::string_view template_text) {
  return check_chat_template_text(template_text).variant;
}

bool is_known_chat_template(const std::string& model_dir) {
  return check_chat_template(model_dir).known;
}

}  // namespace qvl
