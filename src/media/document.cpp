#include "media/document.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/error.h"
#include "media/document_jobs.h"
#include "media/media_worker.h"
#include "media/worker_frames.h"

namespace qvl::media {
namespace {

constexpr int64_t kPixelsPerToken = 32 * 32;

uint32_t read_u32(const std::string& bytes, size_t offset) {
  if (bytes.size() < offset + 4) fail(ErrorCode::kInternal, "document renderer: short frame");
  return frames::get_u32(bytes.data() + offset);
}

}  // namespace

std::optional<DocumentType> sniff_document_type(std::string_view bytes) {
  if (bytes.substr(0, 1024).find("%PDF-") != std::string_view::npos) return DocumentType::kPdf;
  if (bytes.substr(0, 4) == std::string_view("II*\0", 4) ||
      bytes.substr(0, 4) == std::string_view("MM\0*", 4)) {
    return DocumentType::kTiff;
  }
  return std::nullopt;
}

const char* document_type_name(DocumentType type) {
  return type == DocumentType::kPdf ? "PDF" : "TIFF";
}

Document document_from_frames(const std::vector<WorkerFrame>& frames, DocumentType type,
                              int64_t max_pixels) {
  Document document;
  document.type = type;
  if (frames.empty() || frames[0].tag != document_tags::kInfo) {
    fail(ErrorCode::kInternal, "document renderer: no page count");
  }
  document.page_count = static_cast<int>(read_u32(frames[0].bytes, 0));
  for (size_t i = 1; i < frames.size(); ++i) {
    const WorkerFrame& frame = frames[i];
    const int number = static_cast<int>(read_u32(frame.bytes, 0));
    if (number < 1 || number > document.page_count) {
      fail(ErrorCode::kInternal, "document renderer: a page number out of range");
    }
    if (document.pages.empty() || document.pages.back().number != number ||
        (frame.tag == document_tags::kPageImage && !document.pages.back().image.pixels.empty())) {
      document.pages.push_back(DocumentPage{number, {}, std::nullopt});
    }
    DocumentPage& page = document.pages.back();
    if (frame.tag == document_tags::kPageImage) {
      const uint32_t width = read_u32(frame.bytes, 4), height = read_u32(frame.bytes, 8);
      const uint64_t pixels = uint64_t{width} * height;
      if (width == 0 || height == 0 || pixels > static_cast<uint64_t>(max_pixels) ||
          frame.bytes.size() != 12 + pixels * 3) {
        fail(ErrorCode::kInternal, "document renderer: a page image of the wrong size");
      }
      page.image.width = static_cast<int>(width);
      page.image.height = static_cast<int>(height);
      page.image.pixels.assign(frame.bytes.begin() + 12, frame.bytes.end());
    } else if (frame.tag == document_tags::kPageText) {
      page.text = frame.bytes.substr(4);
    } else {
      fail(ErrorCode::kInternal, "document renderer: an unknown frame");
    }
  }
  return document;
}

Document read_document(std::string_view bytes, DocumentType type, const DocumentOptions& options,
                       const DocumentLimits& limits) {
  if (bytes.size() > limits.max_bytes) {
    fail(ErrorCode::kResourceExhausted, std::string("the ") + document_type_name(type) + " is " +
                                            std::to_string(bytes.size() >> 20) +
                                            " MiB, above the limit of " +
                                            std::to_string(limits.max_bytes >> 20) + " MiB");
  }
  if (options.rotate % 90 != 0 || options.rotate < 0 || options.rotate >= 360) {
    fail(ErrorCode::kInvalidArgument, "rotate must be 0, 90, 180 or 270");
  }
  if (type == DocumentType::kTiff && options.text) {
    fail(ErrorCode::kInvalidArgument, "a TIFF scan has no text layer (text is for PDFs)");
  }
  if (options.page_max_tokens < 1 || options.page_min_tokens < 0 ||
      options.page_min_tokens > options.page_max_tokens || options.total_max_tokens < 1) {
    fail(ErrorCode::kInvalidArgument, "bad page token budget");
  }
  DocumentJobRequest request;
  request.pages = options.pages;
  request.max_pages = limits.max_pages;
  request.min_pixels = options.page_min_tokens * kPixelsPerToken;
  request.max_pixels = options.page_max_tokens * kPixelsPerToken;
  request.total_max_pixels = options.total_max_tokens > INT64_MAX / kPixelsPerToken
                                 ? INT64_MAX
                                 : options.total_max_tokens * kPixelsPerToken;
  request.images = options.images;
  request.text = options.text;
  request.rotate = options.rotate;
  request.password = options.password;
  request.max_page_source_pixels = limits.max_page_source_pixels;

  WorkerLimits worker;
  worker.memory_bytes = limits.memory_bytes;
  // The renderers are single-threaded, so CPU time trails wall time: the CPU limit is only a
  // backstop, a second later, so that the limit that fires (and is named) is the one asked for.
  worker.cpu_seconds = limits.max_seconds + 1;
  worker.wall_seconds = limits.max_seconds;
  // Every page at its full budget plus its text: anything beyond is not what was asked for.
  const uint64_t page_bytes = static_cast<uint64_t>(request.max_pixels) * 3 + (uint64_t{4} << 20);
  worker.output_bytes = page_bytes * static_cast<uint64_t>(limits.max_pages) + 4096;

  const std::vector<WorkerFrame> frames =
      run_worker_job(type == DocumentType::kPdf ? kPdfJob : kTiffJob, encode_job_request(request),
                     bytes, worker, std::string("rendering the ") + document_type_name(type));
  return document_from_frames(frames, type, request.max_pixels);
}

}  // namespace qvl::media
