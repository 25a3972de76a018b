// GET / and /assets/*: the embedded web page, with strict security and caching headers.
#include <httplib.h>

#include "server/web_assets.h"

namespace qvl::server {

const WebAsset* find_web_asset(std::string_view path) {
  for (const WebAsset& asset : web_assets()) {
    if (asset.path == path) return &asset;
  }
  return nullptr;
}

namespace {

// True when an If-None-Match header value names `etag` (a list, or "*").
bool etag_matches(std::string_view header, std::string_view etag) {
  if (header == "*") return true;
  size_t start = 0;
  while (start < header.size()) {
    size_t end = header.find(',', start);
    if (end == std::string_view::npos) end = header.size();
    std::string_view item = header.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.substr(0, 2) == "W/") item.remove_prefix(2);
    if (item == etag) return true;
    start = end + 1;
  }
  return false;
}

void serve_asset(const WebAsset& asset, const httplib::Request& req, httplib::Response& res) {
  res.set_header("Content-Security-Policy", std::string(kWebContentSecurityPolicy));
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Cross-Origin-Opener-Policy", "same-origin");
  res.set_header("ETag", std::string(asset.etag));
  // Hashed names never change content; the page itself is revalidated on every load so a new
  // build shows up at once.
  res.set_header("Cache-Control",
                 asset.immutable ? "public, max-age=31536000, immutable" : "no-cache");
  if (etag_matches(req.get_header_value("If-None-Match"), asset.etag)) {
    res.status = 304;
    return;
  }
  res.status = 200;
  res.set_content(asset.body.data(), asset.body.size(), std::string(asset.content_type));
}

}  // namespace

void install_web_routes(httplib::Server& http) {
  auto handler = [](const httplib::Request& req, httplib::Response& res) {
    const WebAsset* asset = find_web_asset(req.path == "/index.html" ? "/" : req.path);
    if (!asset) {
      res.status = 404;  // the error handler writes the JSON body
      return;
    }
    serve_asset(*asset, req, res);
  };
  http.Get("/", handler);
  http.Get("/index.html", handler);
  http.Get("/favicon.svg", handler);
  http.Get(R"(/assets/[A-Za-z0-9._-]+)", handler);
}

}  // namespace qvl::server
