#include "server/tool_calls.h"

#include <random>

namespace qvl::server {
namespace {

using nlohmann::json;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

std::string call_id() {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kDigits[generator() & 15];
  return id;
}

std::string trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return {};
  const size_t end = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(begin, end - begin + 1));
}

// The call in one block's body, or false when it is not {"name": string, "arguments": ...}.
bool parse_call(std::string_view body, ToolCall& call) {
  const json value = json::parse(body.begin(), body.end(), nullptr, false);
  if (!value.is_object() || !value.contains("name") || !value["name"].is_string()) return false;
  call.id = call_id();
  call.name = value["name"].get<std::string>();
  const auto args = value.find("arguments");
  if (args == value.end() || args->is_null()) {
    call.arguments = "{}";
  } else if (args->is_string()) {
    call.arguments = args->get<std::string>();
  } else {
    call.arguments = args->dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return true;
}

json call_delta(const ToolCall& call, int index) {
  return {{"tool_calls",
           json::array({{{"index", index},
                         {"id", call.id},
                         {"type", "function"},
                         {"function", {{"name", call.name}, {"arguments", call.arguments}}}}})}};
}

// Length of the longest suffix of `text` that is a proper prefix of `tag`.
size_t partial_tag(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

ParsedAnswer parse_tool_calls(const std::string& text) {
  ParsedAnswer out;
  std::string content;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t open = text.find(kOpen, pos);
    if (open == std::string::npos) break;
    const size_t close = text.find(kClose, open + kOpen.size());
    if (close == std::string::npos) break;
    ToolCall call;
    const std::string_view body(text.data() + open + kOpen.size(), close - open - kOpen.size());
    if (parse_call(body, call)) {
      content.append(text, pos, open - pos);
      out.calls.push_back(std::move(call));
    } else {
      content.append(text, pos, close + kClose.size() - pos);
    }
    pos = close + kClose.size();
  }
  content.append(text, std::min(pos, text.size()));
  out.content = out.calls.empty() ? text : trim(content);
  return out;
}

json tool_calls_json(const std::vector<ToolCall>& calls) {
  json list = json::array();
  for (const ToolCall& c : calls) {
    list.push_back({{"id", c.id},
                    {"type", "function"},
                    {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  }
  return list;
}

void ToolCallStream::content(std::string text, std::vector<json>& out) {
  // Newlines between and after calls are layout, not an answer, unless text follows them.
  if (calls_ > 0) {
    text = pending_space_ + text;
    pending_space_.clear();
    if (trim(text).empty()) {
      pending_space_ = std::move(text);
      return;
    }
  }
  if (!text.empty()) out.push_back({{"content", std::move(text)}});
}

std::vector<json> ToolCallStream::feed(std::string_view text) {
  std::vector<json> out;
  buffer_ += text;
  for (;;) {
    if (!in_call_) {
      const size_t open = buffer_.find(kOpen);
      if (open == std::string::npos) {
        const size_t hold = partial_tag(buffer_, kOpen);
        content(buffer_.substr(0, buffer_.size() - hold), out);
        buffer_.erase(0, buffer_.size() - hold);
        return out;
      }
      content(buffer_.substr(0, open), out);
      buffer_.erase(0, open + kOpen.size());
      in_call_ = true;
    }
    const size_t close = buffer_.find(kClose);
    if (close == std::string::npos) return out;
    ToolCall call;
    if (parse_call(std::string_view(buffer_).substr(0, close), call)) {
      pending_space_.clear();
      out.push_back(call_delta(call, calls_++));
    } else {
      content(std::string(kOpen) + buffer_.substr(0, close + kClose.size()), out);
    }
    buffer_.erase(0, close + kClose.size());
    in_call_ = false;
  }
}

std::vector<json> ToolCallStream::finish() {
  std::vector<json> out;
  content((in_call_ ? std::string(kOpen) : std::string()) + buffer_, out);
  buffer_.clear();
  in_call_ = false;
  return out;
}

}  // namespace qvl::server
