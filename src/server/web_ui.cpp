// GET / and /assets/*: the embedded web page, with strict security and caching headers.
#include <cctype>
#include <string>

#include "server/http_types.h"
#include "server/web_assets.h"

namespace qvl::server {

const WebAsset* find_web_asset(std::string_view path) {
  for (const WebAsset& asset : web_assets()) {
    if (asset.path == path) return &asset;
  }
  return nullptr;
}

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Calls `item` for each element of a comma-separated header value.
template <typename Fn>
void for_each_item(std::string_view header, Fn item) {
  size_t start = 0;
  while (start <= header.size()) {
    size_t end = header.find(',', start);
    if (end == std::string_view::npos) end = header.size();
    item(trim(header.substr(start, end - start)));
    start = end + 1;
  }
}

// True when an If-None-Match header value names `etag` (a list, or "*").
bool etag_matches(std::string_view header, std::string_view etag) {
  if (trim(header) == "*") return true;
  bool found = false;
  for_each_item(header, [&](std::string_view item) {
    if (item.substr(0, 2) == "W/") item.remove_prefix(2);
    found = found || item == etag;
  });
  return found;
}

}  // namespace

std::string_view pick_encoding(std::string_view accept_encoding, bool have_brotli, bool have_gzip) {
  double brotli_q = 0, gzip_q = 0;
  for_each_item(accept_encoding, [&](std::string_view item) {
    const size_t semicolon = item.find(';');
    const std::string_view coding = trim(item.substr(0, semicolon));
    double q = 1;
    if (semicolon != std::string_view::npos) {
      const std::string_view parameter = trim(item.substr(semicolon + 1));
      if (parameter.substr(0, 2) == "q=") q = std::atof(std::string(parameter.substr(2)).c_str());
    }
    if (ascii_iequals(coding, "br")) brotli_q = q;
    if (ascii_iequals(coding, "gzip") || ascii_iequals(coding, "x-gzip")) gzip_q = q;
  });
  if (have_brotli && brotli_q > 0 && brotli_q >= gzip_q) return "br";
  if (have_gzip && gzip_q > 0) return "gzip";
  if (have_brotli && brotli_q > 0) return "br";
  return "";
}

void serve_web_asset(const HttpRequest& req, HttpResponse& res) {
  const WebAsset* asset = find_web_asset(req.path == "/index.html" ? "/" : req.path);
  if (!asset) {
    res.status = 404;
    return;
  }
  const std::string_view encoding =
      pick_encoding(req.get_header_value("Accept-Encoding"), !asset->brotli_body.empty(),
                    !asset->gzip_body.empty());
  // Each stored encoding is its own representation with its own validator.
  std::string etag(asset->etag);
  if (!encoding.empty() && etag.size() >= 2) {
    etag.pop_back();  // the closing quote
    etag.append("-").append(encoding).append("\"");
  }
  res.set_header("Content-Security-Policy", std::string(kWebContentSecurityPolicy));
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Cross-Origin-Opener-Policy", "same-origin");
  res.set_header("Vary", "Accept-Encoding");
  res.set_header("ETag", etag);
  // Hashed names never change content; the page itself is revalidated on every load so a new
  // build shows up at once.
  res.set_header("Cache-Control",
                 asset->immutable ? "public, max-age=31536000, immutable" : "no-cache");
  if (etag_matches(req.get_header_value("If-None-Match"), etag)) {
    res.status = 304;
    return;
  }
  res.status = 200;
  if (encoding == "br") {
    res.set_static_content(asset->brotli_body, std::string(asset->content_type));
    res.set_header("Content-Encoding", "br");
  } else if (encoding == "gzip") {
    res.set_static_content(asset->gzip_body, std::string(asset->content_type));
    res.set_header("Content-Encoding", "gzip");
  } else {
    res.set_static_content(asset->body, std::string(asset->content_type));
  }
}

}  // namespace qvl::server
