// Documents in (PDFs, multi-page TIFF scans): pages out as images at their token budget, with
// the PDF text layer on request. The bytes are parsed and rendered in the media worker
// (media_worker.h) under the limits below, enforced while it runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "image/rgb_image.h"
#include "media/page_ranges.h"

namespace qvl::media {

enum class DocumentType { kPdf, kTiff };

// By content: "%PDF-" within the first 1024 bytes (as readers accept), or a TIFF byte-order mark.
std::optional<DocumentType> sniff_document_type(std::string_view bytes);
const char* document_type_name(DocumentType type);

// One image token is a 32x32-pixel block. Dense text wants 1024-2048 (Qwen's guidance for OCR);
// 1280 tokens (e.g. 1024 x 1280 for A4/Letter, about 120 dpi) reads 10-point text and keeps a
// page's vision cost near a 1150 x 1150 photo's on a CPU.
inline constexpr int64_t kDocumentPageTokens = 1280;

struct DocumentLimits {
  uint64_t max_bytes = uint64_t{64} << 20;        // the file as sent
  int max_pages = 64;                             // pages selected in one request
  double max_seconds = 60;                        // wall-clock and CPU time of the whole rendering
  uint64_t memory_bytes = uint64_t{1} << 30;      // the renderer's address space
  uint64_t max_page_source_pixels = 100'000'000;  // a stored TIFF page
};

struct DocumentOptions {
  std::vector<PageRange> pages;                   // empty: all
  int64_t page_max_tokens = kDocumentPageTokens;  // each page's budget
  int64_t page_min_tokens = 0;
  // The budget of all selected pages together: a page gets at most an equal share of it.
  int64_t total_max_tokens = INT64_MAX;
  bool images = true;
  bool text = false;  // the PDF's text layer
  int rotate = 0;     // clockwise degrees on top of the page's own rotation: 0/90/180/270
  std::string password;
};

struct DocumentPage {
  int number = 0;  // 1-based
  RgbImage image;  // empty when options.images is false
  std::optional<std::string> text;
};

struct Document {
  DocumentType type = DocumentType::kPdf;
  int page_count = 0;  // in the file, not only those selected
  std::vector<DocumentPage> pages;
};

// Throws qvl::Error: kInvalidArgument for damaged, encrypted (without the right password) or
// unsupported input and bad options, kResourceExhausted when a limit was hit (naming it).
Document read_document(std::string_view bytes, DocumentType type, const DocumentOptions& options,
                       const DocumentLimits& limits);

}  // namespace qvl::media
