// PNG through libpng. Every colour type is expanded to RGB or RGBA (palette, low bit depths,
// grey, tRNS transparency); 16-bit samples keep their high byte; alpha is composited over white.
//
// libpng reports fatal errors through a callback that must not return; we longjmp back into
// run_decoder(), which owns no objects with destructors (see decode_jpeg.cpp for the rule).
#include <png.h>

#include <csetjmp>
#include <cstring>
#include <string>
#include <vector>

#include "image/decode_formats.h"

namespace qvl::decode_detail {
namespace {

struct PngState {
  const uint8_t* data;
  size_t size;
  size_t pos;
  std::jmp_buf jump;
  char message[256];
};

PngState* state_of(png_structp png) {
  return static_cast<PngState*>(png_get_error_ptr(png));
}

[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  PngState* state = state_of(png);
  std::snprintf(state->message, sizeof(state->message), "%s", message);
  std::longjmp(state->jump, 1);
}

void on_warning(png_structp, png_const_charp) {}

void read_bytes(png_structp png, png_bytep out, size_t count) {
  auto* state = static_cast<PngState*>(png_get_io_ptr(png));
  if (count > state->size - state->pos) png_error(png, "file is truncated");
  std::memcpy(out, state->data + state->pos, count);
  state->pos += count;
}

uint32_t read_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

// Ancillary chunks that cannot change the pixels we produce; skipping them avoids inflating
// compressed text and ICC profiles from untrusted input. (eXIf is read separately, see exif.cpp.)
const png_byte kIgnoredChunks[] = "iCCP\0iTXt\0tEXt\0zTXt\0sPLT\0eXIf\0hIST\0pCAL\0sCAL\0sBIT\0";

bool run_decoder(png_structp png, png_infop png_info, PngState& state, const ImageInfo& info,
                 std::vector<uint8_t>& pixels, std::vector<png_bytep>& rows, int& channels) {
  if (setjmp(state.jump)) return false;
  png_set_read_fn(png, &state, read_bytes);
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, kIgnoredChunks,
                              sizeof(kIgnoredChunks) / 5);
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, nullptr, 0);  // and all unknown ones
  png_set_user_limits(png, 0x7fffffff, 0x7fffffff);  // our own pixel limit was checked already
  png_read_info(png, png_info);
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0;
  png_get_IHDR(png, png_info, &width, &height, &bit_depth, &color_type, nullptr, nullptr, nullptr);
  check_same_size(info, width, height);

  if (bit_depth == 16) png_set_strip_16(png);  // keep the high byte (Pillow's 16 -> 8 rule)
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (png_get_valid(png, png_info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
  if (color_type == PNG_COLOR_TYPE_GRAY || color_type == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_gray_to_rgb(png);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, png_info);

  channels = png_get_channels(png, png_info);
  const size_t row_bytes = png_get_rowbytes(png, png_info);
  if ((channels != 3 && channels != 4) || row_bytes != size_t{width} * channels) {
    std::snprintf(state.message, sizeof(state.message), "unexpected layout after expansion");
    return false;
  }
  pixels.resize(row_bytes * height);
  rows.resize(height);
  for (size_t y = 0; y < height; ++y) rows[y] = pixels.data() + y * row_bytes;
  png_read_image(png, rows.data());
  // png_read_end is skipped on purpose: nothing after the image data changes the pixels.
  return true;
}

struct ReadStructGuard {
  png_structp png;
  png_infop info;
  ~ReadStructGuard() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

}  // namespace

void probe_png(const uint8_t* data, size_t size, ImageInfo& info) {
  // The IHDR chunk must come first: length 13, "IHDR", width, height (31-bit big-endian).
  if (size < 8 + 8 + 13 || read_be32(data + 8) != 13 || std::memcmp(data + 12, "IHDR", 4) != 0) {
    fail_corrupt(ImageFormat::kPng, "missing IHDR header chunk");
  }
  const uint32_t width = read_be32(data + 16), height = read_be32(data + 20);
  if (width > 0x7fffffffu || height > 0x7fffffffu) {
    fail_corrupt(ImageFormat::kPng, "width or height above 2^31-1");
  }
  info.width = static_cast<int>(width);
  info.height = static_cast<int>(height);
}

RgbImage decode_png(const uint8_t* data, size_t size, const ImageInfo& info) {
  PngState state{};
  state.data = data;
  state.size = size;
  ReadStructGuard guard{nullptr, nullptr};
  guard.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, on_error, on_warning);
  if (guard.png == nullptr) fail_corrupt(ImageFormat::kPng, "libpng could not start");
  guard.info = png_create_info_struct(guard.png);
  if (guard.info == nullptr) fail_corrupt(ImageFormat::kPng, "libpng could not start");

  std::vector<uint8_t> pixels;
  std::vector<png_bytep> rows;
  int channels = 0;
  if (!run_decoder(guard.png, guard.info, state, info, pixels, rows, channels)) {
    fail_corrupt(ImageFormat::kPng, state.message);
  }
  const size_t count = size_t(info.width) * size_t(info.height);
  if (channels == 3) return RgbImage{info.width, info.height, std::move(pixels)};
  RgbImage out = make_rgb_image(info);
  rgba_to_rgb_over_white(pixels.data(), count, out.pixels.data());
  return out;
}

}  // namespace qvl::decode_detail
