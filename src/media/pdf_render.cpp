// The "pdf" media job (document_jobs.h), in the worker process: poppler's C++ API opens the
// document from memory and its Splash renderer draws each selected page at the size its token
// budget gives (docs/documents.md says why poppler).
#include <poppler/cpp/poppler-document.h>
#include <poppler/cpp/poppler-global.h>
#include <poppler/cpp/poppler-image.h>
#include <poppler/cpp/poppler-page-renderer.h>
#include <poppler/cpp/poppler-page.h>

#include <cstring>
#include <memory>
#include <string>

#include "base/error.h"
#include "media/document_jobs.h"
#include "media/worker_frames.h"

namespace qvl::media {
namespace {

void ignore_poppler_message(const std::string&, void*) {}

// Clockwise degrees poppler applies to the page by itself (its /Rotate).
int page_rotation(const poppler::page& page) {
  switch (page.orientation()) {
    case poppler::page::landscape:
      return 90;
    case poppler::page::upside_down:
      return 180;
    case poppler::page::seascape:
      return 270;
    default:
      return 0;
  }
}

poppler::rotation_enum rotation_of(int degrees) {
  switch (degrees) {
    case 90:
      return poppler::rotate_90;
    case 180:
      return poppler::rotate_180;
    case 270:
      return poppler::rotate_270;
    default:
      return poppler::rotate_0;
  }
}

std::string page_error(int page, const std::string& what) {
  return "page " + std::to_string(page) + " of the PDF: " + what;
}

// Renders to exactly size.width x size.height RGB: the resolutions are chosen so that the rotated
// crop box maps onto that size, and the slice clips Splash's rounding of the page edges.
std::string render(const poppler::page& page, int number, const DocumentJobRequest& request,
                   ImageSize& size) {
  const poppler::rectf box = page.page_rect(poppler::crop_box);
  const int total = (page_rotation(page) + request.rotate) % 360;
  const bool sideways = total == 90 || total == 270;
  const double width = sideways ? box.height() : box.width();
  const double height = sideways ? box.width() : box.height();
  try {
    size = document_page_size(width, height, request.min_pixels, request.max_pixels);
  } catch (const Error& e) {
    fail(e.code(), page_error(number, e.what()));
  }
  // Poppler applies the x resolution along the page's unrotated x axis: on a page turned
  // sideways that axis runs down the image.
  const double across = 72.0 * size.width / width, down = 72.0 * size.height / height;
  const double xres = sideways ? down : across;
  const double yres = sideways ? across : down;
  poppler::page_renderer renderer;
  renderer.set_render_hint(poppler::page_renderer::antialiasing, true);
  renderer.set_render_hint(poppler::page_renderer::text_antialiasing, true);
  renderer.set_image_format(poppler::image::format_rgb24);
  const poppler::image image = renderer.render_page(&page, xres, yres, 0, 0, size.width,
                                                    size.height, rotation_of(request.rotate));
  if (!image.is_valid() || image.width() != size.width || image.height() != size.height ||
      image.format() != poppler::image::format_rgb24) {
    fail(ErrorCode::kInvalidArgument, page_error(number, "the renderer could not draw it"));
  }
  // rgb24 rows are R, G, B bytes, each row padded to bytes_per_row.
  std::string rgb(static_cast<size_t>(size.width) * size.height * 3, '\0');
  const size_t row_bytes = static_cast<size_t>(size.width) * 3;
  for (int y = 0; y < size.height; ++y) {
    std::memcpy(rgb.data() + y * row_bytes,
                image.const_data() + static_cast<size_t>(y) * image.bytes_per_row(), row_bytes);
  }
  return rgb;
}

}  // namespace

void run_pdf_job(std::string_view params, std::string_view input, WorkerOutput& out) {
  const DocumentJobRequest request = decode_job_request(params);
  poppler::set_debug_error_function(&ignore_poppler_message, nullptr);
  if (input.size() > static_cast<size_t>(INT32_MAX)) {
    fail(ErrorCode::kResourceExhausted, "the PDF is larger than 2 GiB");
  }
  std::unique_ptr<poppler::document> document(poppler::document::load_from_raw_data(
      input.data(), static_cast<int>(input.size()), request.password, request.password));
  if (!document) {
    // poppler gives no reason; a locked document without the right password is the common one.
    fail(ErrorCode::kInvalidArgument, "the file is not a readable PDF (damaged or not a PDF)");
  }
  if (document->is_locked()) {
    fail(ErrorCode::kInvalidArgument,
         request.password.empty()
             ? "the PDF is encrypted: it needs a password (send it as file.password)"
             : "the PDF is encrypted and the password given does not open it");
  }
  const int page_count = document->pages();
  if (page_count <= 0) fail(ErrorCode::kInvalidArgument, "the PDF has no pages");
  std::string info;
  frames::put_u32(info, static_cast<uint32_t>(page_count));
  out.write(document_tags::kInfo, info);

  const std::vector<int> selected = select_pages(request.pages, page_count, request.max_pages);
  const DocumentJobRequest sized = with_page_budget(request, selected.size());
  for (const int number : selected) {
    std::unique_ptr<poppler::page> page(document->create_page(number - 1));
    if (!page) fail(ErrorCode::kInvalidArgument, page_error(number, "it cannot be read"));
    if (request.images) {
      ImageSize size;
      const std::string rgb = render(*page, number, sized, size);
      write_page_image(out, number, size.width, size.height, rgb);
    }
    if (request.text) {
      const poppler::byte_array utf8 =
          page->text(poppler::rectf(), poppler::page::physical_layout).to_utf8();
      write_page_text(out, number, std::string_view(utf8.data(), utf8.size()));
    }
  }
}

}  // namespace qvl::media
