// Test-only encoders that build a decoding corpus at run time with the codecs' own writers
// (libjpeg, libpng, libwebp, giflib) plus a hand-written BMP writer.
#pragma once

#include <gif_lib.h>
#include <png.h>
#include <webp/encode.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>

#include "image/rgb_image.h"

namespace qvl::test {

using Bytes = std::vector<uint8_t>;

// A non-square, asymmetric picture with smooth ramps (kind to lossy codecs) plus a few flat
// blocks, so orientation and channel-order mistakes show.
inline RgbImage make_test_image(int width, int height) {
  RgbImage image{width, height, std::vector<uint8_t>(size_t(width) * height * 3)};
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      uint8_t* p = &image.pixels[(size_t(y) * width + x) * 3];
      p[0] = static_cast<uint8_t>(x * 255 / std::max(width - 1, 1));
      p[1] = static_cast<uint8_t>(y * 255 / std::max(height - 1, 1));
      p[2] = static_cast<uint8_t>(((x / 8 + y / 8) % 2) ? 200 : 40);
    }
  }
  return image;
}

// Little/big-endian helpers for hand-built containers.
inline void put_le16(Bytes& b, uint32_t v) {
  b.push_back(v & 0xFF);
  b.push_back((v >> 8) & 0xFF);
}
inline void put_le32(Bytes& b, uint32_t v) {
  put_le16(b, v & 0xFFFF);
  put_le16(b, v >> 16);
}
inline void put_be16(Bytes& b, uint32_t v) {
  b.push_back((v >> 8) & 0xFF);
  b.push_back(v & 0xFF);
}
inline void put_be32(Bytes& b, uint32_t v) {
  put_be16(b, v >> 16);
  put_be16(b, v & 0xFFFF);
}

// A minimal TIFF block whose IFD0 holds only the Orientation tag (SHORT, count 1).
inline Bytes make_exif_tiff(int orientation, bool big_endian = false) {
  Bytes b;
  auto u16 = [&](uint32_t v) { big_endian ? put_be16(b, v) : put_le16(b, v); };
  auto u32 = [&](uint32_t v) { big_endian ? put_be32(b, v) : put_le32(b, v); };
  b.push_back(big_endian ? 'M' : 'I');
  b.push_back(big_endian ? 'M' : 'I');
  u16(42);
  u32(8);       // IFD0 right after the header
  u16(1);       // one entry
  u16(0x0112);  // Orientation
  u16(3);       // SHORT
  u32(1);       // count
  u16(orientation);
  u16(0);  // value field padding
  u32(0);  // no next IFD
  return b;
}

struct JpegOptions {
  int quality = 95;
  bool progressive = false;
  bool grey = false;
  int exif_orientation = 0;  // 0: no APP1 block
};

// Encodes RGB (or its red channel as grey) with libjpeg; 4:4:4 sampling.
inline Bytes encode_jpeg_samples(const uint8_t* samples, int width, int height, int components,
                                 J_COLOR_SPACE in_space, const JpegOptions& options) {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long buffer_size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &buffer_size);
  cinfo.image_width = width;
  cinfo.image_height = height;
  cinfo.input_components = components;
  cinfo.in_color_space = in_space;
  jpeg_set_defaults(&cinfo);
  if (in_space == JCS_CMYK) jpeg_set_colorspace(&cinfo, JCS_CMYK);  // writes an Adobe marker
  for (int c = 0; c < cinfo.num_components; ++c) {
    cinfo.comp_info[c].h_samp_factor = cinfo.comp_info[c].v_samp_factor = 1;
  }
  jpeg_set_quality(&cinfo, options.quality, TRUE);
  if (options.progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  if (options.exif_orientation > 0) {
    Bytes app1 = {'E', 'x', 'i', 'f', 0, 0};
    const Bytes tiff = make_exif_tiff(options.exif_orientation, options.exif_orientation % 2);
    app1.insert(app1.end(), tiff.begin(), tiff.end());
    jpeg_write_marker(&cinfo, JPEG_APP0 + 1, app1.data(), app1.size());
  }
  const size_t stride = size_t(width) * components;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(samples + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  Bytes out(buffer, buffer + buffer_size);
  std::free(buffer);
  return out;
}

inline Bytes encode_jpeg(const RgbImage& image, const JpegOptions& options = {}) {
  if (!options.grey) {
    return encode_jpeg_samples(image.pixels.data(), image.width, image.height, 3, JCS_RGB, options);
  }
  Bytes grey(size_t(image.width) * image.height);
  for (size_t i = 0; i < grey.size(); ++i) grey[i] = image.pixels[3 * i];
  return encode_jpeg_samples(grey.data(), image.width, image.height, 1, JCS_GRAYSCALE, options);
}

struct PngOptions {
  int color_type = PNG_COLOR_TYPE_RGB;
  int bit_depth = 8;
  bool interlaced = false;
  std::vector<png_color> palette = {};
  Bytes trns = {};  // palette alphas, or the grey/RGB key as 16-bit samples (see below)
  png_color_16 trns_key{};
  Bytes exif = {};  // eXIf payload (TIFF), if non-empty
};

// `rows` holds the packed samples exactly as PNG stores them (big-endian 16-bit, packed low bit
// depths), height rows of png row bytes each.
inline Bytes encode_png(int width, int height, const Bytes& rows, const PngOptions& options) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  Bytes out;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error("libpng write failed");
  }
  png_set_write_fn(
      png, &out,
      [](png_structp p, png_bytep data, size_t n) {
        auto* o = static_cast<Bytes*>(png_get_io_ptr(p));
        o->insert(o->end(), data, data + n);
      },
      nullptr);
  png_set_IHDR(png, info, width, height, options.bit_depth, options.color_type,
               options.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (!options.palette.empty()) {
    png_set_PLTE(png, info, options.palette.data(), int(options.palette.size()));
  }
  if (options.color_type == PNG_COLOR_TYPE_PALETTE && !options.trns.empty()) {
    png_set_tRNS(png, info, options.trns.data(), int(options.trns.size()), nullptr);
  } else if (!options.trns.empty()) {
    png_color_16 key = options.trns_key;
    png_set_tRNS(png, info, nullptr, 0, &key);
  }
  if (!options.exif.empty()) {
    png_set_eXIf_1(png, info, png_uint_32(options.exif.size()),
                   const_cast<png_bytep>(options.exif.data()));
  }
  png_write_info(png, info);
  const size_t row_bytes = png_get_rowbytes(png, info);
  std::vector<png_bytep> pointers(height);
  for (int y = 0; y < height; ++y) pointers[y] = const_cast<uint8_t*>(&rows[y * row_bytes]);
  png_write_image(png, pointers.data());
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return out;
}

inline Bytes encode_png_rgb(const RgbImage& image, const PngOptions& options = {}) {
  return encode_png(image.width, image.height, image.pixels, options);
}

// libwebp's one-call encoders; quality < 0 means lossless.
inline Bytes encode_webp(const uint8_t* pixels, int width, int height, bool alpha, float quality) {
  uint8_t* output = nullptr;
  size_t size = 0;
  const int stride = width * (alpha ? 4 : 3);
  if (quality < 0) {
    size = alpha ? WebPEncodeLosslessRGBA(pixels, width, height, stride, &output)
                 : WebPEncodeLosslessRGB(pixels, width, height, stride, &output);
  } else {
    size = alpha ? WebPEncodeRGBA(pixels, width, height, stride, quality, &output)
                 : WebPEncodeRGB(pixels, width, height, stride, quality, &output);
  }
  if (size == 0) throw std::runtime_error("WebP encoding failed");
  Bytes out(output, output + size);
  WebPFree(output);
  return out;
}

// Rewraps a simple (VP8/VP8L) WebP file as an extended one carrying an EXIF chunk.
inline Bytes add_webp_exif(const Bytes& simple, int width, int height, const Bytes& exif) {
  Bytes body = {'W', 'E', 'B', 'P', 'V', 'P', '8', 'X'};
  put_le32(body, 10);
  put_le32(body, 0x08);  // flags: EXIF present (one byte of flags + 3 reserved)
  auto put_le24 = [&](uint32_t v) {
    put_le16(body, v & 0xFFFF);
    body.push_back((v >> 16) & 0xFF);
  };
  put_le24(width - 1);
  put_le24(height - 1);
  body.insert(body.end(), simple.begin() + 12, simple.end());  // the VP8/VP8L chunk
  body.insert(body.end(), {'E', 'X', 'I', 'F'});
  put_le32(body, uint32_t(exif.size()));
  body.insert(body.end(), exif.begin(), exif.end());
  if (exif.size() % 2) body.push_back(0);
  Bytes out = {'R', 'I', 'F', 'F'};
  put_le32(out, uint32_t(body.size()));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

}  // namespace qvl::test
