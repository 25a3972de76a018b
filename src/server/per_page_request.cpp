#include "server/per_page_request.h"

#include <algorithm>

#include "server/api_error.h"
#include "server/file_part.h"

namespace qvl::server {

bool read_per_page_mode(const nlohmann::json& request, const ChatRequest& parsed) {
  const auto it = request.find("document_mode");
  if (it == request.end() || it->is_null()) return false;
  if (!it->is_string() || (*it != "whole" && *it != "per_page")) {
    fail_request("document_mode", "'document_mode' must be \"whole\" or \"per_page\"");
  }
  if (*it == "whole") return false;
  if (parsed.documents.size() != 1) {
    fail_request("document_mode",
                 "'document_mode': \"per_page\" needs exactly one file part (a PDF or TIFF), got " +
                     std::to_string(parsed.documents.size()));
  }
  if (!parsed.generation.images.empty() || !parsed.generation.videos.empty()) {
    fail_request("document_mode",
                 "'document_mode': \"per_page\" takes a file part without images or videos (each "
                 "page is its own request and would repeat them)");
  }
  return true;
}

std::vector<PageRequest> expand_document_pages(ChatRequest& chat, const RequestLimits& limits) {
  DocumentPart& document = chat.documents.front();
  document.options.page_max_tokens =
      std::min(document.options.page_max_tokens, limits.max_total_image_tokens);
  std::vector<PageRequest> requests;
  for (RenderedPage& page : render_document(document, limits)) {
    PageRequest& request = requests.emplace_back();
    request.number = page.number;
    request.generation = chat.generation;
    std::vector<std::vector<ContentPart>> documents = {std::move(page.parts)};
    replace_document_placeholders(request.generation.messages, documents);
    if (page.image) request.generation.images.push_back(std::move(*page.image));
  }
  chat.documents.clear();  // the bytes are not needed any more
  return requests;
}

}  // namespace qvl::server
