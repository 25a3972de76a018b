// libjpeg reports fatal errors through error_exit, which must not return: it longjmps back into
// run_encoder(), which owns no objects with destructors (the C++ rule for setjmp/longjmp), as
// the image decoder does (src/image/decode_jpeg.cpp).
#include "server/thumbnail.h"

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>

// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

#include "base/base64.h"
#include "base/error.h"
#include "image/resize.h"

namespace qvl::server {
namespace {

// Quality 80: thumbnails of a few KB that still show text lines and scene changes.
constexpr int kJpegQuality = 80;

struct JpegErrorState {
  jpeg_error_mgr manager;  // first member: libjpeg hands us a pointer to it
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void on_error(j_common_ptr info) {
  auto* state = reinterpret_cast<JpegErrorState*>(info->err);
  info->err->format_message(info, state->message);
  std::longjmp(state->jump, 1);
}

// Returns false with state.message set when libjpeg failed; `buffer` (libjpeg's malloc) is the
// caller's to free either way.
bool run_encoder(jpeg_compress_struct& info, JpegErrorState& state, const RgbImage& image,
                 unsigned char*& buffer, unsigned long& size) {
  if (setjmp(state.jump)) return false;
  jpeg_create_compress(&info);
  jpeg_mem_dest(&info, &buffer, &size);
  info.image_width = static_cast<JDIMENSION>(image.width);
  info.image_height = static_cast<JDIMENSION>(image.height);
  info.input_components = 3;
  info.in_color_space = JCS_RGB;
  jpeg_set_defaults(&info);
  jpeg_set_quality(&info, kJpegQuality, TRUE);
  jpeg_start_compress(&info, TRUE);
  const auto stride = static_cast<size_t>(image.width) * 3;
  while (info.next_scanline < info.image_height) {
    // libjpeg's row type is not const; it only reads the rows.
    auto* row = const_cast<JSAMPROW>(image.pixels.data() + info.next_scanline * stride);
    jpeg_write_scanlines(&info, &row, 1);
  }
  jpeg_finish_compress(&info);
  return true;
}

std::vector<uint8_t> encode_jpeg(const RgbImage& image) {
  jpeg_compress_struct info{};
  JpegErrorState state{};
  info.err = jpeg_std_error(&state.manager);
  state.manager.error_exit = on_error;
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  const bool ok = run_encoder(info, state, image, buffer, size);
  std::vector<uint8_t> out;
  if (ok) out.assign(buffer, buffer + size);
  jpeg_destroy_compress(&info);
  std::free(buffer);
  if (!ok) fail(ErrorCode::kInternal, std::string("JPEG encoding failed: ") + state.message);
  return out;
}

}  // namespace

std::string jpeg_thumbnail_data_uri(const RgbImage& image, int max_side) {
  if (image.width <= 0 || image.height <= 0 ||
      image.pixels.size() != static_cast<size_t>(image.width) * image.height * 3) {
    fail(ErrorCode::kInvalidArgument, "a thumbnail needs a non-empty image");
  }
  const double scale =
      std::min(1.0, static_cast<double>(max_side) / std::max(image.width, image.height));
  const int width = std::max(1, static_cast<int>(std::lround(image.width * scale)));
  const int height = std::max(1, static_cast<int>(std::lround(image.height * scale)));
  const std::vector<uint8_t> jpeg =
      scale < 1 ? encode_jpeg(resize_bicubic(image, width, height)) : encode_jpeg(image);
  return "data:image/jpeg;base64," + base64_encode(jpeg.data(), jpeg.size());
}

}  // namespace qvl::server
