#include "media/document_jobs.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "media/worker_frames.h"

namespace qvl::media {

std::string encode_job_request(const DocumentJobRequest& request) {
  nlohmann::json json = {{"pages", page_ranges_text(request.pages)},
                         {"max_pages", request.max_pages},
                         {"min_pixels", request.min_pixels},
                         {"max_pixels", request.max_pixels},
                         {"total_max_pixels", request.total_max_pixels},
                         {"images", request.images},
                         {"text", request.text},
                         {"rotate", request.rotate},
                         {"password", request.password},
                         {"max_page_source_pixels", request.max_page_source_pixels}};
  return json.dump();
}

DocumentJobRequest decode_job_request(std::string_view text) {
  const nlohmann::json json = nlohmann::json::parse(text);
  DocumentJobRequest request;
  request.pages = parse_page_ranges(json.at("pages").get<std::string>());
  request.max_pages = json.at("max_pages").get<int>();
  request.min_pixels = json.at("min_pixels").get<int64_t>();
  request.max_pixels = json.at("max_pixels").get<int64_t>();
  request.total_max_pixels = json.at("total_max_pixels").get<int64_t>();
  request.images = json.at("images").get<bool>();
  request.text = json.at("text").get<bool>();
  request.rotate = json.at("rotate").get<int>();
  request.password = json.at("password").get<std::string>();
  request.max_page_source_pixels = json.at("max_page_source_pixels").get<uint64_t>();
  return request;
}

ImageSize document_page_size(double width, double height, int64_t min_pixels, int64_t max_pixels) {
  constexpr double kSmallestSide = 1;  // one point, 1/72 inch
  if (!std::isfinite(width) || !std::isfinite(height) || width < kSmallestSide ||
      height < kSmallestSide || width / height > 200 || height / width > 200) {
    char text[96];
    std::snprintf(text, sizeof text, "a degenerate page box (%.4g x %.4g)", width, height);
    fail(ErrorCode::kInvalidArgument, text);
  }
  // Fill the budget whatever the page's physical size: OCR wants every pixel it pays for.
  const double scale = std::sqrt(static_cast<double>(max_pixels) / (width * height));
  const auto h = static_cast<int64_t>(std::floor(height * scale));
  const auto w = static_cast<int64_t>(std::floor(width * scale));
  return smart_resize(std::max<int64_t>(h, 1), std::max<int64_t>(w, 1), 32, min_pixels, max_pixels);
}

DocumentJobRequest with_page_budget(const DocumentJobRequest& request, size_t selected) {
  const int64_t share =
      request.total_max_pixels / static_cast<int64_t>(std::max<size_t>(selected, 1));
  const int64_t budget = std::min(request.max_pixels, share);
  if (budget < 4 * 32 * 32) {
    fail(ErrorCode::kResourceExhausted,
         std::to_string(selected) +
             " pages do not fit the request's image token budget; choose fewer pages");
  }
  DocumentJobRequest sized = request;
  sized.max_pixels = budget;
  sized.min_pixels = std::min(request.min_pixels, budget);
  return sized;
}

void write_page_image(WorkerOutput& out, int page, int width, int height, std::string_view rgb) {
  std::string head;
  frames::put_u32(head, static_cast<uint32_t>(page));
  frames::put_u32(head, static_cast<uint32_t>(width));
  frames::put_u32(head, static_cast<uint32_t>(height));
  out.write(document_tags::kPageImage, head, rgb);
}

void write_page_text(WorkerOutput& out, int page, std::string_view text) {
  std::string head;
  frames::put_u32(head, static_cast<uint32_t>(page));
  out.write(document_tags::kPageText, head, text);
}

}  // namespace qvl::media
