// A `file` content part of a chat request (a PDF or a TIFF scan), as parsed: its bytes and options,
// waiting to be rendered into pages (server/file_part.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "media/document.h"

namespace qvl::server {

struct DocumentPart {
  std::vector<uint8_t> bytes;
  std::string url;  // file:// (qvl batch only): read by expand_documents, bytes empty until then
  media::DocumentType type = media::DocumentType::kPdf;
  media::DocumentOptions options;
  std::string filename;  // as the client named it ("" when it did not)
  std::string param;     // e.g. "messages[0].content[1].file", for error messages
};

// Limits on documents in requests (`qvl serve --max-document-*`).
struct DocumentRequestLimits {
  media::DocumentLimits render;                      // bytes, pages, seconds, memory
  int64_t page_tokens = media::kDocumentPageTokens;  // detail "auto" (or absent)
  int64_t high_detail_page_tokens = 2048;            // detail "high"
  size_t max_documents = 4;                          // file parts per request
  int concurrent_renders = 2;  // documents rendering at once in the server (server/render_gate.h)
};

}  // namespace qvl::server
