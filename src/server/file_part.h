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
// part in the message; expand_documents (in the server once the request holds its generation
// slot, so queued documents wait unrendered) renders the pages in the media worker and puts them in
// place of the placeholder, in order: for each page a marker text "Page 3/12 of invoice.pdf:" and
// the page image (plus its text layer when asked). A placeholder is a text part with an empty text
// and image_index = -2 - (its document's index).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "qvl/engine.h"
#include "server/chat_request.h"

namespace qvl::server {

// The placeholder part for `part`; its bytes and options go to out.documents. Throws ApiError
// (400) naming the field that is wrong.
ContentPart parse_file_part(const nlohmann::json& part, const std::string& param,
                            const RequestLimits& limits, ChatRequest& out);

// One rendered page as content parts: its marker, its image (image_index 0, the image in
// `image`) and its text layer when asked; with "images": false the marker and text layer alone.
struct RenderedPage {
  int number = 0;  // 1-based
  std::vector<ContentPart> parts;
  std::optional<ImageInput> image;
};

// Renders one document in the media worker (reading its file:// URL first), within the
// server-wide render gate (at most --document-renders at once; 503 documents_busy when no place
// frees within --max-document-seconds). Throws ApiError like expand_documents.
std::vector<RenderedPage> render_document(DocumentPart& document, const RequestLimits& limits);

// Puts documents[d] in place of document d's placeholder part (moving the parts out).
void replace_document_placeholders(std::vector<Message>& messages,
                                   std::vector<std::vector<ContentPart>>& documents);

// Renders out.documents and replaces their placeholders with the pages. Pages share what the
// request's image token budget (RequestLimits::max_total_image_tokens) leaves after its images.
// Throws ApiError: 400 for a document that cannot be read or passes a limit, naming it.
void expand_documents(ChatRequest& chat, const RequestLimits& limits);

}  // namespace qvl::server
