// Per-page answering of a long document: "document_mode": "per_page" (qvl's request field;
// OpenAI SDKs send it through extra_body). The request's one file part is rendered and each
// selected page becomes its own generation: the same messages and settings with that page (its
// marker, image and text layer) in place of the document. So a 50-page PDF needs the context of
// one page, not of fifty; the answers come back as choices[] in page order (chat_pages.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "qvl/engine.h"
#include "server/chat_request.h"

namespace qvl::server {

struct PageRequest {
  int number = 0;  // 1-based page number in the document
  GenerationRequest generation;
};

// The request's document_mode: "whole" (the default: every page in one prompt) or "per_page",
// which needs exactly one file part and no images or videos (they would be repeated on every
// page). Throws ApiError (400) naming the problem.
bool read_per_page_mode(const nlohmann::json& request, const ChatRequest& parsed);

// Renders the request's document (render_document) and makes one request per selected page.
// Each page gets its own budget (up to the request's image budget: pages do not share it, since
// each is its own prompt). Throws ApiError like expand_documents.
std::vector<PageRequest> expand_document_pages(ChatRequest& chat, const RequestLimits& limits);

}  // namespace qvl::server
