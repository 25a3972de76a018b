// The document jobs of the media worker (media_worker.h): what the parent asks for, the frames
// the child answers with, and the jobs themselves (run in the child only).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "image/smart_resize.h"
#include "media/document.h"
#include "media/media_worker.h"
#include "media/page_ranges.h"

namespace qvl::media {

inline constexpr const char* kPdfJob = "pdf";
inline constexpr const char* kTiffJob = "tiff";

struct DocumentJobRequest {
  std::vector<PageRange> pages;  // empty: all
  int max_pages = 64;
  int64_t min_pixels = 0;  // per page, after rendering (multiples of 32x32 blocks)
  int64_t max_pixels = 0;
  int64_t total_max_pixels = INT64_MAX;  // all selected pages together: each gets an equal share
  bool images = true;                    // render the pages
  bool text = false;                     // the PDF text layer (TIFF has none)
  int rotate = 0;        // clockwise degrees added to the page's own rotation: 0/90/180/270
  std::string password;  // for encrypted PDFs
  uint64_t max_page_source_pixels = 100'000'000;  // TIFF: a stored page larger than this is refused
};

std::string encode_job_request(const DocumentJobRequest& request);
DocumentJobRequest decode_job_request(std::string_view text);

// Frames (tags) of a document job, in this order: one info, then per selected page its image
// and/or its text.
namespace document_tags {
inline constexpr uint8_t kInfo = 1;       // u32 page count
inline constexpr uint8_t kPageImage = 2;  // u32 page number, u32 width, u32 height, RGB pixels
inline constexpr uint8_t kPageText = 3;   // u32 page number, UTF-8 text
}  // namespace document_tags

// The rendered size of a page of width x height (in any unit, after rotation) under the budget:
// the page is scaled so that it fills max_pixels, then smart-resized (factor 32), so the image
// path leaves it as it is. Throws qvl::Error(kInvalidArgument) for a degenerate page box (not
// finite, a side under 1/72 inch, or an aspect ratio above 200).
ImageSize document_page_size(double width, double height, int64_t min_pixels, int64_t max_pixels);

// Each page's pixel budget when `selected` pages share request.total_max_pixels. Throws
// qvl::Error(kResourceExhausted) when the share is below one 32x32 block per side.
// The request with max_pixels (and min_pixels) lowered to that share.
DocumentJobRequest with_page_budget(const DocumentJobRequest& request, size_t selected);

// The parent's reading of a document job's frames (checked: a compromised worker gets no further
// than an error). Throws qvl::Error(kInternal) for frames out of order, range or size.
Document document_from_frames(const std::vector<WorkerFrame>& frames, DocumentType type,
                              int64_t max_pixels);

void run_pdf_job(std::string_view params, std::string_view input, WorkerOutput& out);
void run_tiff_job(std::string_view params, std::string_view input, WorkerOutput& out);

// Shared by both jobs: writes a page image / text frame.
void write_page_image(WorkerOutput& out, int page, int width, int height, std::string_view rgb);
void write_page_text(WorkerOutput& out, int page, std::string_view text);

}  // namespace qvl::media
