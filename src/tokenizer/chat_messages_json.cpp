// OpenAI-style message parsing and the Python-compatible `tojson` used by the chat template.
#include <cstdio>

#include "base/error.h"
#include "tokenizer/chat_format.h"
#include "tokenizer/json_depth.h"

namespace qvl {

namespace {

using nlohmann::ordered_json;

[[noreturn]] void bad_message(size_t index, const std::string& what) {
  fail(ErrorCode::kInvalidArgument, "messages[" + std::to_string(index) + "]: " + what);
}

void append_python_json_string(const std::string& s, std::string& out) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
          out += buffer;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

// Recursive, so bounded: a value built in memory (not read through parse_json_within_depth) may
// nest deeper than the stack allows.
void append_python_json(const ordered_json& v, std::string& out, int depth) {
  if ((v.is_object() || v.is_array()) && depth >= kMaxJsonDepth) {
    fail(ErrorCode::kInvalidArgument,
         "JSON is nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  if (v.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [key, value] : v.items()) {
      if (!first) out += ", ";
      first = false;
      append_python_json_string(key, out);
      out += ": ";
      append_python_json(value, out, depth + 1);
    }
    out += '}';
  } else if (v.is_array()) {
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
      if (i > 0) out += ", ";
      append_python_json(v[i], out, depth + 1);
    }
    out += ']';
  } else if (v.is_string()) {
    append_python_json_string(v.get_ref<const std::string&>(), out);
  } else if (v.is_null()) {
    out += "null";
  } else {
    out += v.dump();  // numbers and booleans print the same way in Python
  }
}

std::string string_field(const ordered_json& object, const char* key, size_t index) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) {
    bad_message(index, std::string("\"") + key + "\" must be a string");
  }
  return it->get<std::string>();
}

ChatPart parse_image_part(const ordered_json& part, size_t index) {
  ChatPart out;
  out.kind = ChatPart::Kind::kImage;
  for (const char* key : {"image_url", "image"}) {
    auto it = part.find(key);
    if (it == part.end() || it->is_null()) continue;
    if (it->is_string()) {
      out.image_ref = it->get<std::string>();
    } else if (it->is_object() && it->contains("url") && (*it)["url"].is_string()) {
      out.image_ref = (*it)["url"].get<std::string>();
    } else {
      bad_message(index, std::string("\"") + key + "\" must be a string or {\"url\": string}");
    }
    break;
  }
  return out;
}

ChatPart parse_part(const ordered_json& part, size_t index) {
  if (!part.is_object()) bad_message(index, "each content part must be an object");
  std::string type;
  if (part.contains("type")) {
    if (!part["type"].is_string()) bad_message(index, "content part \"type\" must be a string");
    type = part["type"].get<std::string>();
  } else if (part.contains("image") || part.contains("image_url")) {
    type = "image";
  } else if (part.contains("text")) {
    type = "text";
  }
  if (type == "text") {
    ChatPart out;
    out.text = string_field(part, "text", index);
    return out;
  }
  if (type == "image" || type == "image_url") return parse_image_part(part, index);
  bad_message(index,
              "unsupported content part type \"" + type + "\" (supported: text, image_url, image)");
}

ChatToolCall parse_tool_call(const ordered_json& call, size_t index) {
  if (!call.is_object()) bad_message(index, "each tool call must be an object");
  const ordered_json& function = call.contains("function") ? call["function"] : call;
  if (!function.is_object()) bad_message(index, "tool call \"function\" must be an object");
  ChatToolCall out;
  out.name = string_field(function, "name", index);
  auto args = function.find("arguments");
  if (args == function.end()) bad_message(index, "tool call has no \"arguments\"");
  out.arguments = args->is_string() ? args->get<std::string>() : render_tool_json(*args);
  return out;
}

ChatMessage parse_message(const ordered_json& m, size_t index) {
  if (!m.is_object()) bad_message(index, "must be an object");
  ChatMessage out;
  out.role = string_field(m, "role", index);
  if (out.role != "system" && out.role != "user" && out.role != "assistant" && out.role != "tool") {
    bad_message(index,
                "unsupported role \"" + out.role + "\" (supported: system, user, assistant, tool)");
  }
  auto content = m.find("content");
  if (content == m.end() || content->is_null()) {
    if (out.role != "assistant") bad_message(index, "\"content\" is required");
    out.content_is_string = false;
  } else if (content->is_string()) {
    out.parts.push_back({ChatPart::Kind::kText, content->get<std::string>(), {}});
  } else if (content->is_array()) {
    out.content_is_string = false;
    for (const ordered_json& part : *content) out.parts.push_back(parse_part(part, index));
  } else {
    bad_message(index, "\"content\" must be a string, an array of parts or null");
  }
  if (out.role != "user" && out.role != "tool") {
    for (const ChatPart& part : out.parts) {
      if (part.kind == ChatPart::Kind::kImage) {
        bad_message(index, "images are only supported in user and tool messages");
      }
    }
  }
  auto calls = m.find("tool_calls");
  if (calls != m.end() && !calls->is_null()) {
    if (out.role != "assistant" || !calls->is_array()) {
      bad_message(index, "\"tool_calls\" must be an array on an assistant message");
    }
    for (const ordered_json& call : *calls) out.tool_calls.push_back(parse_tool_call(call, index));
  }
  auto reasoning = m.find("reasoning_content");
  if (reasoning != m.end() && !reasoning->is_null()) {
    if (out.role != "assistant" || !reasoning->is_string()) {
      bad_message(index, "\"reasoning_content\" must be a string on an assistant message");
    }
    out.reasoning_content = reasoning->get<std::string>();
  }
  return out;
}

}  // namespace

std::string render_tool_json(const ordered_json& value) {
  std::string out;
  append_python_json(value, out, 0);
  return out;
}

std::vector<ChatMessage> parse_chat_messages(const ordered_json& messages) {
  if (!messages.is_array()) fail(ErrorCode::kInvalidArgument, "\"messages\" must be an array");
  if (messages.empty()) fail(ErrorCode::kInvalidArgument, "\"messages\" must not be empty");
  std::vector<ChatMessage> out;
  out.reserve(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) out.push_back(parse_message(messages[i], i));
  return out;
}

std::vector<ChatMessage> parse_chat_messages_json(std::string_view messages_json) {
  ordered_json parsed;
  try {
    parsed = parse_json_within_depth<ordered_json>(messages_json);
  } catch (const ordered_json::exception& e) {
    fail(ErrorCode::kInvalidArgument, std::string("messages are not valid JSON: ") + e.what());
  }
  return parse_chat_messages(parsed);
}

}  // namespace qvl
