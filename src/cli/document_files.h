// `qvl run --file doc.pdf`: documents (PDF, multi-page TIFF) from disk, rendered in the media
// worker and put before the question as the server does for `file` parts (server/file_part.h):
// per page a "Page N/M of name:" marker and the page image, plus its text layer when asked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "media/document.h"
#include "qvl/engine.h"

namespace qvl::cli {

struct DocumentFileOptions {
  std::string pages;  // e.g. "1-3,5" (every file); empty: all
  int64_t page_tokens = media::kDocumentPageTokens;
  bool text = false;       // the PDF text layer beside each page image
  bool text_only = false;  // the text layer instead of the images
  std::string password;    // for encrypted PDFs
};

// Renders each file and inserts its pages before the question (the last part of the last user
// message). Throws qvl::Error naming the file when it cannot be read or rendered.
void add_document_files(GenerationRequest& request, const std::vector<std::string>& paths,
                        const DocumentFileOptions& options);

}  // namespace qvl::cli
