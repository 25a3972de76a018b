// OpenAI's `file` content part, for documents: PDFs and multi-page TIFF scans.
//
//   {"type": "file", "file": {"file_data": "data:application/pdf;base64,...",
//                             "filename": "invoice.pdf",
//                             // qvl's extensions, all optional:
//                             "pages": "1-3,5",        // page selection (default: all)
//                             "detail": "auto",        // page budget: auto/low/high
//                             "text": false,           // add the PDF's text layer per page
//                             "images": true,          // false with text: the text layer alone
//                             "rotate": 0,             // clockwise, on top of each page's own
//                             "password": "..."}}      // an encrypted PDF's password
//
// `qvl batch` (RequestLimits::allow_file_urls) also reads "file_url": "file:///path/doc.pdf" in
// place of file_data; the server refuses it.
//
// Parsing (inside parse_chat_request, pure) decodes and checks the part and leaves a placeholder
// part in the message; expand_documents (after parsing, like fetching remote images) renders the
// pages in the media worker and puts them in place of the placeholder, in order: for each page a
// marker text "Page 3/12 of invoice.pdf:" and the page image (plus its text layer when asked).
// A placeholder is a text part with an empty text and image_index = -2 - (its document's index).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "qvl/engine.h"
#include "server/chat_request.h"

namespace qvl::server {

// The placeholder part for `part`; its bytes and options go to out.documents. Throws ApiError
// (400) naming the field that is wrong.
ContentPart parse_file_part(const nlohmann::json& part, const std::string& param,
                            const RequestLimits& limits, ChatRequest& out);

// Renders out.documents and replaces their placeholders with the pages. Pages share what the
// request's image token budget (RequestLimits::max_total_image_tokens) leaves after its images.
// Throws ApiError: 400 for a document that cannot be read or passes a limit, naming it.
void expand_documents(ChatRequest& chat, const RequestLimits& limits);

}  // namespace qvl::server
