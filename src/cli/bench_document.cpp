#include "cli/bench_document.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/timer.h"
#include "media/pdf_builder.h"
#include "server/api_error.h"
#include "server/per_page_request.h"

namespace qvl::cli {
namespace {

constexpr int kPages = 10;
constexpr int kLines = 40;
constexpr int64_t kDecodeTokens = 32;
constexpr const char* kPrompt =
    "Read all the text on this page. Answer in Markdown; write tables as Markdown tables.";

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Letter pages of 10-point text with a table, numbered so no two pages are the same image.
std::string ten_page_pdf() {
  std::vector<media::PdfPage> pages(kPages);
  for (int p = 0; p < kPages; ++p) {
    std::string& c = pages[p].content;
    c = media::text_line(72, 740, 14, "Quarterly report, page " + std::to_string(p + 1));
    for (int line = 0; line < kLines; ++line) {
      c += media::text_line(72, 712 - 14 * line, 10,
                            "Line " + std::to_string(line + 1) +
                                ": shipments, invoices and payments recorded for account " +
                                std::to_string(1000 + 37 * p + line) + " this quarter.");
    }
    c += media::table_content(72, 120);
  }
  return media::make_pdf(pages);
}

}  // namespace

std::optional<DocumentFigures> measure_document(Engine& engine, int answered) {
  // The request the server's per-page mode would get: the document, then the question.
  server::ChatRequest chat;
  server::DocumentPart& document = chat.documents.emplace_back();
  const std::string pdf = ten_page_pdf();
  document.bytes.assign(pdf.begin(), pdf.end());
  document.filename = "report.pdf";
  document.param = "bench document";
  chat.generation.messages.push_back(
      {"user",
       false,
       {{ContentPart::Kind::kText, {}, -2}, {ContentPart::Kind::kText, kPrompt, -1}}});
  chat.generation.sampling.temperature = 0;
  chat.generation.sampling.max_tokens = kDecodeTokens;
  chat.generation.sampling.ignore_eos = true;  // every page generates the same count

  std::vector<server::PageRequest> pages;
  const Timer render_timer;
  try {
    pages = server::expand_document_pages(chat, server::RequestLimits{});
  } catch (const server::ApiError& error) {
    QVL_LOG(kWarn) << "bench: documents cannot be rendered here (" << error.message()
                   << "); document figures skipped";
    return std::nullopt;
  }
  DocumentFigures f;
  f.pages = static_cast<int>(pages.size());
  f.render_ms_per_page = render_timer.millis() / f.pages;
  f.pages_answered = std::clamp(answered, 1, f.pages);
  f.decode_tokens = kDecodeTokens;
  std::vector<double> vision, prefill, decode;
  for (int p = 0; p < f.pages_answered; ++p) {
    const GenerationResult r = engine.generate(pages[p].generation);
    f.page_image_tokens = r.stats.image_tokens;
    f.page_prompt_tokens = r.stats.prompt_tokens;
    vision.push_back(r.stats.image_ms);
    prefill.push_back(r.stats.prompt_ms);
    decode.push_back(r.stats.decode_ms);
  }
  f.vision_ms_per_page = median(vision);
  f.prefill_ms_per_page = median(prefill);
  f.decode_ms_per_page = median(decode);
  const double page_ms =
      f.render_ms_per_page + f.vision_ms_per_page + f.prefill_ms_per_page + f.decode_ms_per_page;
  f.pages_per_min = page_ms > 0 ? 60000.0 / page_ms : 0;
  return f;
}

void add_document_json(const DocumentFigures& f, nlohmann::json& report) {
  report["document_pages_per_min"] = f.pages_per_min;
  report["document_render_ms_per_page"] = f.render_ms_per_page;
  report["document_vision_ms_per_page"] = f.vision_ms_per_page;
  report["document_prefill_ms_per_page"] = f.prefill_ms_per_page;
  report["document_decode_ms_per_page"] = f.decode_ms_per_page;
  report["document_page_image_tokens"] = f.page_image_tokens;
  report["document_page_prompt_tokens"] = f.page_prompt_tokens;
  report["document_decode_tokens"] = f.decode_tokens;
  report["document_pages_answered"] = f.pages_answered;
}

}  // namespace qvl::cli
