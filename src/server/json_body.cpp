#include "server/json_body.h"

#include <random>
#include <string>
#include <vector>

namespace qvl::server {
namespace {

struct Span {
  size_t begin, size;  // the string's content in the body, between its quotes
};

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// String values (not keys) of kLiftedStringBytes or more whose bytes are all printable ASCII
// without '\' (their JSON text is their content), in body order. Stops at the first unterminated
// string: the parse will report it.
std::vector<Span> long_plain_strings(std::string_view body) {
  std::vector<Span> found;
  size_t i = 0;
  while (i < body.size()) {
    if (body[i] != '"') {
      ++i;
      continue;
    }
    const size_t begin = ++i;
    bool plain = true;
    while (i < body.size() && body[i] != '"') {
      const auto c = static_cast<unsigned char>(body[i]);
      if (c == '\\') {
        plain = false;
        i += 2;
        continue;
      }
      plain = plain && c >= 0x20 && c < 0x7f;
      ++i;
    }
    if (i >= body.size()) break;
    const size_t size = i - begin;
    ++i;  // the closing quote
    size_t next = i;
    while (next < body.size() && is_space(body[next])) ++next;
    const bool key = next < body.size() && body[next] == ':';
    if (plain && !key && size >= kLiftedStringBytes) found.push_back({begin, size});
  }
  return found;
}

// A placeholder no request can hold by chance: a NUL, a random tag, the index.
std::string placeholder_text(uint64_t tag, size_t index) {
  return "\\u0000qvl-lifted-" + std::to_string(tag) + "-" + std::to_string(index);
}

template <typename Json>
void put_back(Json& value, const std::string& prefix, std::string_view body,
              const std::vector<Span>& lifted) {
  if (value.is_string()) {
    const std::string& s = value.template get_ref<const std::string&>();
    if (s.size() <= prefix.size() || s.compare(0, prefix.size(), prefix) != 0) return;
    const std::string index = s.substr(prefix.size());
    if (index.empty() || index.size() > 9 ||
        index.find_first_not_of("0123456789") != std::string::npos) {
      return;
    }
    const size_t k = std::stoull(index);
    if (k >= lifted.size()) return;
    value = std::string(body.substr(lifted[k].begin, lifted[k].size));
  } else if (value.is_structured()) {
    for (Json& item : value) put_back(item, prefix, body, lifted);
  }
}

}  // namespace

template <typename Json>
Json parse_json_lifting_long_strings(std::string_view body) {
  const std::vector<Span> lifted = long_plain_strings(body);
  if (lifted.empty()) return Json::parse(body.begin(), body.end());
  static thread_local std::mt19937_64 random(std::random_device{}());
  const uint64_t tag = random();
  std::string reduced;
  size_t at = 0, bytes = body.size();
  for (const Span& s : lifted) bytes -= s.size;
  reduced.reserve(bytes + lifted.size() * 48);
  for (size_t k = 0; k < lifted.size(); ++k) {
    reduced.append(body.substr(at, lifted[k].begin - at));
    reduced += placeholder_text(tag, k);
    at = lifted[k].begin + lifted[k].size;
  }
  reduced.append(body.substr(at));
  Json value;
  try {
    value = Json::parse(reduced);
  } catch (const nlohmann::json::exception&) {
    // Positions in the message must be the body's: the original text says where.
    return Json::parse(body.begin(), body.end());
  }
  put_back(value, std::string(1, '\0') + "qvl-lifted-" + std::to_string(tag) + "-", body, lifted);
  return value;
}

template nlohmann::json parse_json_lifting_long_strings<nlohmann::json>(std::string_view);
template nlohmann::ordered_json parse_json_lifting_long_strings<nlohmann::ordered_json>(
    std::string_view);

}  // namespace qvl::server
