#include "cli/batch_documents.h"

#include <algorithm>

namespace qvl::cli {

using nlohmann::json;

const std::string& per_document_id(const BatchItem& item) {
  return item.page > 0 ? item.file : item.id;
}

DocumentLines::DocumentLines(const std::vector<const BatchItem*>& items) {
  for (const BatchItem* item : items) {
    if (item->page > 0) ++documents_[item->file].pages_left;
  }
}

std::optional<json> DocumentLines::add(const BatchItem& item, json line) {
  if (item.page == 0) return line;
  json page = {{"page", item.page}};
  for (const char* key : {"answer", "finish_reason", "usage", "timings", "error"}) {
    if (line.contains(key)) page[key] = std::move(line[key]);
  }
  std::lock_guard lock(mutex_);
  Pending& document = documents_.at(item.file);
  document.pages.push_back(std::move(page));
  if (--document.pages_left > 0) return std::nullopt;
  std::sort(document.pages.begin(), document.pages.end(),
            [](const json& a, const json& b) { return a["page"] < b["page"]; });
  json out = {{"id", item.file}, {"file", item.file}};
  json usage = {{"prompt_tokens", 0}, {"completion_tokens", 0}, {"total_tokens", 0}};
  int failed = 0;
  for (const json& answered : document.pages) {
    if (answered.contains("error")) ++failed;
    if (!answered.contains("usage")) continue;
    for (auto& [key, total] : usage.items()) {
      total = total.get<int64_t>() + answered["usage"].value(key, int64_t{0});
    }
  }
  const size_t count = document.pages.size();
  out["pages"] = std::move(document.pages);
  out["usage"] = std::move(usage);
  if (failed > 0) {
    out["error"] = {{"message", std::to_string(failed) + " of " + std::to_string(count) +
                                    " pages failed; their entries in pages say why"}};
  }
  documents_.erase(item.file);
  return out;
}

}  // namespace qvl::cli
