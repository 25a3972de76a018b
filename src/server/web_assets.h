// The web page served at `/`: files bundled from web/ at build time (web/build.mjs) and compiled
// into the binary, so `qvl serve` needs no files or network at run time.
#pragma once

#include <span>
#include <string_view>

namespace httplib {
class Server;
}

namespace qvl::server {

struct WebAsset {
  std::string_view path;          // URL path, e.g. "/" or "/assets/app.1a2b3c4d5e6f.js"
  std::string_view content_type;  // with charset for text
  std::string_view body;
  std::string_view etag;   // quoted content hash
  bool immutable = false;  // the name carries the content hash: cache forever
};

// Every embedded file (defined in the generated web_assets_data.cpp).
std::span<const WebAsset> web_assets();

// The asset served at `path`, or nullptr.
const WebAsset* find_web_asset(std::string_view path);

// Adds GET /, /index.html, /favicon.svg and /assets/<name> for the embedded files.
void install_web_routes(httplib::Server& http);

// The Content-Security-Policy sent with the page: scripts and styles only from this server,
// images also from data: and blob: URLs (the user's own uploads), no framing, no plugins.
constexpr std::string_view kWebContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'";

}  // namespace qvl::server
