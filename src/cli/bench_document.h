// `qvl bench`'s document figures (issue 36): a 10-page text PDF made in process (40 lines of
// 10-point text and a ruled table a page, Letter), every page rendered in the media worker at the
// document default of 1280 image tokens, then one or two of its pages answered as the server's
// per-page mode sends them (its marker, image and an OCR prompt; 32 generated tokens): the split
// of a page's time between rendering, the vision tower, prefill and decode, and the pages per
// minute one page after another makes of it (running pages concurrently batches their decoding;
// vision and prefill stay per page).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "qvl/engine.h"

namespace qvl::cli {

struct DocumentFigures {
  int pages = 0;                  // in the PDF, all rendered
  int pages_answered = 0;         // of them, answered by the model
  int64_t page_image_tokens = 0;  // a page's image tokens
  int64_t page_prompt_tokens = 0;
  int64_t decode_tokens = 0;  // generated per page
  double render_ms_per_page = 0;
  double vision_ms_per_page = 0;
  double prefill_ms_per_page = 0;
  double decode_ms_per_page = 0;
  double pages_per_min = 0;  // 60 s over the four above
};

// `answered`: pages given to the model (1 or 2 keeps the bench short with a big model).
// nullopt (with a warning) when this qvl reads no documents or the model takes no images.
std::optional<DocumentFigures> measure_document(Engine& engine, int answered);

// Adds document_pages_per_min, document_render_ms_per_page, document_vision_ms_per_page,
// document_prefill_ms_per_page, document_decode_ms_per_page, document_page_image_tokens,
// document_page_prompt_tokens, document_decode_tokens, document_pages_answered.
void add_document_json(const DocumentFigures& figures, nlohmann::json& report);

}  // namespace qvl::cli
