// `qvl batch --per-document`: the page answers of each document gathered into one output line,
//   {"id": "doc.pdf", "file": "doc.pdf", "pages": [{"page": 1, "answer": ..., "finish_reason": ...,
//    "usage": {...}}, {"page": 2, "error": {...}}, ...], "usage": {...the pages' sum}}
// written once the document's last page finished (with "error" naming how many pages failed, if
// any). Pages still run as separate requests, concurrently. Resume is per document: a document
// whose line is in the output is skipped whole; one interrupted halfway runs all its pages again.
// Other inputs (images, videos) keep their own lines.
#pragma once

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/batch_inputs.h"

namespace qvl::cli {

// The id an input's line has in the output with --per-document: a page's document, else its own.
const std::string& per_document_id(const BatchItem& item);

class DocumentLines {
 public:
  // `items`: the inputs this run does; a document's line waits for all of its pages among them.
  explicit DocumentLines(const std::vector<const BatchItem*>& items);

  // The line to write for an input's finished line: its own for an input that is not a page;
  // nothing for a page until its document's last page, then the document's line. Thread-safe.
  std::optional<nlohmann::json> add(const BatchItem& item, nlohmann::json line);

 private:
  struct Pending {
    size_t pages_left = 0;
    std::vector<nlohmann::json> pages;
  };
  std::mutex mutex_;
  std::map<std::string, Pending> documents_;
};

}  // namespace qvl::cli
