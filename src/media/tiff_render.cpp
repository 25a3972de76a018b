// The "tiff" media job (document_jobs.h), in the worker process: each directory of a multi-page
// TIFF scan is a page, decoded by libtiff from memory to RGB (alpha over white) and resized to the
// page's token budget with the image path's own resampler, so a page equals the same scan sent as
// an image.
#include <tiffio.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "image/exif_orientation.h"
#include "image/resize.h"
#include "media/document_jobs.h"
#include "media/worker_frames.h"

namespace qvl::media {
namespace {

struct MemoryFile {
  std::string_view bytes;
  uint64_t position = 0;
};

tmsize_t read_proc(thandle_t handle, void* buffer, tmsize_t size) {
  auto* file = static_cast<MemoryFile*>(handle);
  if (size < 0 || file->position >= file->bytes.size()) return 0;
  const uint64_t n =
      std::min<uint64_t>(static_cast<uint64_t>(size), file->bytes.size() - file->position);
  std::memcpy(buffer, file->bytes.data() + file->position, n);
  file->position += n;
  return static_cast<tmsize_t>(n);
}

tmsize_t write_proc(thandle_t, void*, tmsize_t) {
  return -1;
}

toff_t seek_proc(thandle_t handle, toff_t offset, int whence) {
  auto* file = static_cast<MemoryFile*>(handle);
  uint64_t base = 0;
  if (whence == SEEK_CUR) base = file->position;
  if (whence == SEEK_END) base = file->bytes.size();
  file->position = base + offset;
  return file->position;
}

int close_proc(thandle_t) {
  return 0;
}
toff_t size_proc(thandle_t handle) {
  return static_cast<MemoryFile*>(handle)->bytes.size();
}

struct TiffCloser {
  void operator()(TIFF* tiff) const { TIFFClose(tiff); }
};

std::string page_error(int page, const std::string& what) {
  return "page " + std::to_string(page) + " of the TIFF: " + what;
}

RgbImage decode_page(TIFF* tiff, int number, const DocumentJobRequest& request) {
  uint32_t width = 0, height = 0;
  TIFFGetField(tiff, TIFFTAG_IMAGEWIDTH, &width);
  TIFFGetField(tiff, TIFFTAG_IMAGELENGTH, &height);
  if (width == 0 || height == 0) fail(ErrorCode::kInvalidArgument, page_error(number, "no size"));
  if (uint64_t{width} * height > request.max_page_source_pixels) {
    fail(ErrorCode::kResourceExhausted,
         page_error(number, std::to_string(width) + " x " + std::to_string(height) +
                                " pixels is more than the limit of " +
                                std::to_string(request.max_page_source_pixels)));
  }
  std::vector<uint32_t> raster(size_t{width} * height);
  if (!TIFFReadRGBAImageOriented(tiff, width, height, raster.data(), ORIENTATION_TOPLEFT, 0)) {
    fail(ErrorCode::kInvalidArgument, page_error(number, "it cannot be decoded"));
  }
  RgbImage image;
  image.width = static_cast<int>(width);
  image.height = static_cast<int>(height);
  image.pixels.resize(raster.size() * 3);
  for (size_t i = 0; i < raster.size(); ++i) {
    // Premultiplied ABGR words: over white, a channel becomes c + (255 - a).
    const uint32_t p = raster[i];
    const uint32_t white = 255 - TIFFGetA(p);
    image.pixels[3 * i] = static_cast<uint8_t>(std::min<uint32_t>(TIFFGetR(p) + white, 255));
    image.pixels[3 * i + 1] = static_cast<uint8_t>(std::min<uint32_t>(TIFFGetG(p) + white, 255));
    image.pixels[3 * i + 2] = static_cast<uint8_t>(std::min<uint32_t>(TIFFGetB(p) + white, 255));
  }
  return image;
}

}  // namespace

void run_tiff_job(std::string_view params, std::string_view input, WorkerOutput& out) {
  const DocumentJobRequest request = decode_job_request(params);
  TIFFSetErrorHandler(nullptr);
  TIFFSetWarningHandler(nullptr);
  MemoryFile file{input};
  std::unique_ptr<TIFF, TiffCloser> tiff(TIFFClientOpen("page", "rm", &file, read_proc, write_proc,
                                                        seek_proc, close_proc, size_proc, nullptr,
                                                        nullptr));
  if (!tiff) fail(ErrorCode::kInvalidArgument, "the file is not a readable TIFF");
  const tdir_t count = TIFFNumberOfDirectories(tiff.get());
  if (count == 0) fail(ErrorCode::kInvalidArgument, "the TIFF has no pages");
  const int page_count = static_cast<int>(std::min<tdir_t>(count, INT32_MAX));
  std::string info;
  frames::put_u32(info, static_cast<uint32_t>(page_count));
  out.write(document_tags::kInfo, info);

  const std::vector<int> selected = select_pages(request.pages, page_count, request.max_pages);
  const DocumentJobRequest sized = with_page_budget(request, selected.size());
  for (const int number : selected) {
    if (!request.images) continue;  // a scan has no text layer
    if (!TIFFSetDirectory(tiff.get(), static_cast<tdir_t>(number - 1))) {
      fail(ErrorCode::kInvalidArgument, page_error(number, "it cannot be read"));
    }
    // The requested extra rotation, as EXIF orientations: 6 = 90, 3 = 180, 8 = 270 clockwise.
    const int orientation = sized.rotate == 90    ? 6
                            : sized.rotate == 180 ? 3
                            : sized.rotate == 270 ? 8
                                                  : 1;
    const RgbImage page =
        apply_exif_orientation(decode_page(tiff.get(), number, sized), orientation);
    const ImageSize size =
        smart_resize(page.height, page.width, 32, sized.min_pixels, sized.max_pixels);
    const RgbImage sized = resize_bicubic(page, size.width, size.height);
    write_page_image(
        out, number, sized.width, sized.height,
        std::string_view(reinterpret_cast<const char*>(sized.pixels.data()), sized.pixels.size()));
  }
}

}  // namespace qvl::media
