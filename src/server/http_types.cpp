#include "server/http_types.h"

#include <cctype>

namespace qvl::server {

bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

namespace {
const std::string* find_header(const HttpHeaders& headers, std::string_view name) {
  for (const auto& [key, value] : headers) {
    if (ascii_iequals(key, name)) return &value;
  }
  return nullptr;
}
}  // namespace

std::string HttpRequest::get_header_value(std::string_view name) const {
  const std::string* value = find_header(headers, name);
  return value ? *value : std::string();
}

bool HttpRequest::has_header(std::string_view name) const {
  return find_header(headers, name) != nullptr;
}

void HttpResponse::set_header(std::string name, std::string value) {
  for (auto& [key, old] : headers) {
    if (ascii_iequals(key, name)) {
      old = std::move(value);
      return;
    }
  }
  headers.emplace_back(std::move(name), std::move(value));
}

void HttpResponse::set_content(std::string content, std::string content_type) {
  body = std::move(content);
  has_static_body = false;
  set_header("Content-Type", std::move(content_type));
}

void HttpResponse::set_static_content(std::string_view content, std::string content_type) {
  static_body = content;
  has_static_body = true;
  set_header("Content-Type", std::move(content_type));
}

std::string HttpResponse::get_header_value(std::string_view name) const {
  const std::string* value = find_header(headers, name);
  return value ? *value : std::string();
}

}  // namespace qvl::server
