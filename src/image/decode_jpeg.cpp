// JPEG through libjpeg-turbo with its default decompression settings (ISLOW IDCT, fancy
// upsampling), which is what Pillow uses, so RGB output matches PIL bit for bit.
//
// libjpeg reports fatal errors through error_exit, which must not return. We longjmp back into
// run_decoder(); that function owns no objects with destructors, so the jump skips none (the
// C++ rule for setjmp/longjmp), and the caller cleans up with jpeg_destroy_decompress.
#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <string>
#include <vector>

// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

#include "image/decode_formats.h"
#include "image/jpeg_segments.h"

namespace qvl::decode_detail {
namespace {

// Real progressive files have about ten scans; thousands of tiny scans each re-walking the whole
// coefficient buffer are a known way to burn CPU, so we stop early.
constexpr int kMaxScans = 1000;

struct JpegErrorState {
  jpeg_error_mgr manager;  // first member: libjpeg hands us a pointer to it
  jpeg_progress_mgr progress;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

JpegErrorState* error_state(j_common_ptr cinfo) {
  return reinterpret_cast<JpegErrorState*>(cinfo->err);
}

[[noreturn]] void on_error(j_common_ptr cinfo) {
  JpegErrorState* state = error_state(cinfo);
  cinfo->err->format_message(cinfo, state->message);
  std::longjmp(state->jump, 1);
}

// Warnings (corrupt entropy data, premature end) are not fatal: libjpeg fills in what is missing,
// as Pillow accepts too. Silence them instead of printing to stderr.
void on_message(j_common_ptr) {}

void on_progress(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  const auto* dinfo = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (dinfo->input_scan_number > kMaxScans) {
    JpegErrorState* state = error_state(cinfo);
    std::snprintf(state->message, sizeof(state->message), "more than %d progressive scans",
                  kMaxScans);
    std::longjmp(state->jump, 1);
  }
}

// Pillow's integer a*b/255 with rounding (exact for 8-bit operands).
inline unsigned muldiv255(unsigned a, unsigned b) {
  const unsigned t = a * b + 128;
  return ((t >> 8) + t) >> 8;
}

// Pillow treats every 4-component JPEG as Adobe-inverted CMYK (stored = 255 - ink), whether or
// not an Adobe marker is present, and converts without colour management:
// R = (255-K) - round(C*(255-K)/255), likewise G from M and B from Y.
void inverted_cmyk_to_rgb(const uint8_t* cmyk, size_t width, uint8_t* rgb) {
  for (size_t x = 0; x < width; ++x) {
    const unsigned not_k = cmyk[4 * x + 3];  // 255 - K, since stored K is inverted
    for (int c = 0; c < 3; ++c) {
      const unsigned ink = 255u - cmyk[4 * x + c];
      rgb[3 * x + c] = static_cast<uint8_t>(not_k - muldiv255(ink, not_k));
    }
  }
}

// Returns false with state.message set when libjpeg failed.
bool run_decoder(jpeg_decompress_struct& cinfo, JpegErrorState& state, const uint8_t* data,
                 size_t size, const ImageInfo& info, RgbImage& out, std::vector<uint8_t>& row) {
  if (setjmp(state.jump)) return false;
  jpeg_create_decompress(&cinfo);
  state.progress.progress_monitor = on_progress;
  cinfo.progress = &state.progress;
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  check_same_size(info, cinfo.image_width, cinfo.image_height);
  switch (cinfo.jpeg_color_space) {
    case JCS_CMYK:
    case JCS_YCCK:
      cinfo.out_color_space = JCS_CMYK;  // libjpeg turns YCCK into CMYK itself
      break;
    case JCS_GRAYSCALE:
      cinfo.out_color_space = JCS_GRAYSCALE;
      break;
    default:
      cinfo.out_color_space = JCS_RGB;
      break;
  }
  jpeg_start_decompress(&cinfo);
  check_same_size(info, cinfo.output_width, cinfo.output_height);
  const size_t width = cinfo.output_width;
  const int components = cinfo.output_components;
  if (components != 1 && components != 3 && components != 4) {
    std::snprintf(state.message, sizeof(state.message), "unexpected %d output components",
                  components);
    return false;
  }
  row.resize(width * components);
  while (cinfo.output_scanline < cinfo.output_height) {
    uint8_t* dst = out.pixels.data() + size_t{cinfo.output_scanline} * width * 3;
    JSAMPROW row_pointer = row.data();
    if (jpeg_read_scanlines(&cinfo, &row_pointer, 1) != 1) break;  // only on suspension
    if (components == 3) {
      std::copy(row.begin(), row.end(), dst);
    } else if (components == 1) {
      for (size_t x = 0; x < width; ++x) dst[3 * x] = dst[3 * x + 1] = dst[3 * x + 2] = row[x];
    } else {
      inverted_cmyk_to_rgb(row.data(), width, dst);
    }
  }
  return true;
}

struct DecompressGuard {
  jpeg_decompress_struct* cinfo;
  ~DecompressGuard() { jpeg_destroy_decompress(cinfo); }  // safe on a never-created struct
};

}  // namespace

void probe_jpeg(const uint8_t* data, size_t size, ImageInfo& info) {
  bool found = false;
  for_each_jpeg_segment(data, size, [&](const JpegSegment& s) {
    // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC).
    const bool is_frame = s.marker >= 0xC0 && s.marker <= 0xCF && s.marker != 0xC4 &&
                          s.marker != 0xC8 && s.marker != 0xCC;
    if (!is_frame) return true;
    if (s.size >= 6) {
      info.height = (s.payload[1] << 8) | s.payload[2];
      info.width = (s.payload[3] << 8) | s.payload[4];
      found = true;
    }
    return false;
  });
  if (!found) fail_corrupt(ImageFormat::kJpeg, "no frame header (SOF) before the image data");
}

RgbImage decode_jpeg(const uint8_t* data, size_t size, const ImageInfo& info) {
  JpegErrorState state{};
  jpeg_decompress_struct cinfo{};
  cinfo.err = jpeg_std_error(&state.manager);
  state.manager.error_exit = on_error;
  state.manager.output_message = on_message;
  DecompressGuard guard{&cinfo};
  RgbImage out = make_rgb_image(info);
  std::vector<uint8_t> row;
  if (!run_decoder(cinfo, state, data, size, info, out, row)) {
    fail_corrupt(ImageFormat::kJpeg, state.message);
  }
  return out;
}

}  // namespace qvl::decode_detail
