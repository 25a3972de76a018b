// The web page served at `/`: files bundled from web/ at build time (web/build.mjs) and compiled
// into the binary, so `qvl serve` needs no files or network at run time.
#pragma once

#include <span>
#include <string_view>

#include "server/http_types.h"

namespace qvl::server {

struct WebAsset {
  std::string_view path;          // URL path, e.g. "/" or "/assets/app.1a2b3c4d5e6f.js"
  std::string_view content_type;  // with charset for text
  std::string_view body;
  std::string_view etag;   // quoted content hash
  bool immutable = false;  // the name carries the content hash: cache forever
  // The body compressed once at build time (empty when compressing does not pay).
  std::string_view gzip_body;
  std::string_view brotli_body;
};

// Every embedded file (defined in the generated web_assets_data.cpp).
std::span<const WebAsset> web_assets();

// The asset served at `path`, or nullptr.
const WebAsset* find_web_asset(std::string_view path);

// GET /, /index.html, /favicon.svg and /assets/<name>: the embedded file in the stored
// encoding the client accepts (br, gzip or none; never compressed per request), with
// ETag/If-None-Match. Byte ranges are not served (a Range header gets the whole file).
void serve_web_asset(const HttpRequest& req, HttpResponse& res);

// Which stored encoding to send for an Accept-Encoding header: "br", "gzip" or "".
std::string_view pick_encoding(std::string_view accept_encoding, bool have_brotli, bool have_gzip);

// The Content-Security-Policy sent with the page: scripts and styles only from this server,
// images also from data: and blob: URLs (the user's own uploads), no framing, no plugins.
constexpr std::string_view kWebContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'";

}  // namespace qvl::server
