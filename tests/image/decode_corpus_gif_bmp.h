// Test-only writers for GIF (giflib's EGif API) and BMP (by hand), see decode_corpus.h.
#pragma once

#include <gif_lib.h>

#include <stdexcept>
#include <vector>

#include "decode_corpus.h"

namespace qvl::test {

struct GifOptions {
  bool interlaced = false;
  int transparent_index = -1;
  int screen_width = 0, screen_height = 0;  // 0: same as the frame
  int left = 0, top = 0;                    // frame position on the screen
};

// One frame of palette indices (width*height) with a palette of up to 256 colours.
inline Bytes encode_gif(int width, int height, const Bytes& indices,
                        const std::vector<GifColorType>& palette, const GifOptions& options = {}) {
  Bytes out;
  int error = 0;
  GifFileType* gif = EGifOpen(
      &out,
      [](GifFileType* g, const GifByteType* data, int n) {
        auto* o = static_cast<Bytes*>(g->UserData);
        o->insert(o->end(), data, data + n);
        return n;
      },
      &error);
  if (gif == nullptr) throw std::runtime_error("EGifOpen failed");
  int map_size = 2;
  while (map_size < int(palette.size())) map_size *= 2;
  std::vector<GifColorType> colors(palette);
  colors.resize(map_size, GifColorType{0, 0, 0});
  ColorMapObject* map = GifMakeMapObject(map_size, colors.data());
  const int screen_w = options.screen_width ? options.screen_width : width;
  const int screen_h = options.screen_height ? options.screen_height : height;
  bool ok = EGifPutScreenDesc(gif, screen_w, screen_h, 8, 0, map) == GIF_OK;
  if (options.transparent_index >= 0) {
    GraphicsControlBlock control{};
    control.TransparentColor = options.transparent_index;
    GifByteType block[4];
    const size_t n = EGifGCBToExtension(&control, block);
    ok = ok && EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, int(n), block) == GIF_OK;
  }
  ok = ok && EGifPutImageDesc(gif, options.left, options.top, width, height, options.interlaced,
                              nullptr) == GIF_OK;
  // giflib writes lines in the order given: interlaced files need them in pass order.
  std::vector<int> order;
  if (options.interlaced) {
    const int start[] = {0, 4, 2, 1}, step[] = {8, 8, 4, 2};
    for (int pass = 0; pass < 4; ++pass) {
      for (int y = start[pass]; y < height; y += step[pass]) order.push_back(y);
    }
  } else {
    for (int y = 0; y < height; ++y) order.push_back(y);
  }
  for (int y : order) {
    ok = ok &&
         EGifPutLine(gif, const_cast<GifPixelType*>(&indices[size_t(y) * width]), width) == GIF_OK;
  }
  ok = EGifCloseFile(gif, &error) == GIF_OK && ok;
  GifFreeMapObject(map);
  if (!ok) throw std::runtime_error("GIF encoding failed");
  return out;
}

struct BmpOptions {
  int bits = 24;  // 24, 32, or 8 (palette)
  bool top_down = false;
  std::vector<uint8_t> palette_bgr = {};  // 8-bit: 3 bytes per entry
  std::vector<uint8_t> alpha = {};        // 32-bit: per-pixel alpha, written as a V5 header
                                          // with BI_BITFIELDS and an alpha mask
};

// bits 24/32: `pixels` is RGB (32-bit writes 0xFF in the unused byte); bits 8: one index each.
inline Bytes encode_bmp(int width, int height, const Bytes& pixels, const BmpOptions& options) {
  const size_t stride = ((size_t(options.bits) * width + 31) / 32) * 4;
  const uint32_t colors = options.bits == 8 ? uint32_t(options.palette_bgr.size() / 3) : 0;
  const bool v5 = !options.alpha.empty();
  const uint32_t header = v5 ? 124 : 40;
  const uint32_t offset = 14 + header + colors * 4;
  Bytes b = {'B', 'M'};
  put_le32(b, uint32_t(offset + stride * height));
  put_le32(b, 0);
  put_le32(b, offset);
  put_le32(b, header);
  put_le32(b, uint32_t(width));
  put_le32(b, uint32_t(options.top_down ? -height : height));
  put_le16(b, 1);
  put_le16(b, uint32_t(options.bits));
  put_le32(b, v5 ? 3 : 0);  // BI_BITFIELDS or BI_RGB
  put_le32(b, uint32_t(stride * height));
  put_le32(b, 2835);
  put_le32(b, 2835);
  put_le32(b, colors);
  put_le32(b, 0);
  if (v5) {
    for (uint32_t mask : {0x00FF0000u, 0x0000FF00u, 0x000000FFu, 0xFF000000u}) put_le32(b, mask);
    b.resize(14 + header, 0);  // colour space and gamma fields left zero
  }
  for (uint32_t i = 0; i < colors; ++i) {
    b.insert(b.end(), &options.palette_bgr[3 * i], &options.palette_bgr[3 * i] + 3);
    b.push_back(0);
  }
  for (int row = 0; row < height; ++row) {
    const int y = options.top_down ? row : height - 1 - row;
    const size_t start = b.size();
    for (int x = 0; x < width; ++x) {
      if (options.bits == 8) {
        b.push_back(pixels[size_t(y) * width + x]);
        continue;
      }
      const uint8_t* p = &pixels[(size_t(y) * width + x) * 3];
      b.insert(b.end(), {p[2], p[1], p[0]});
      if (options.bits == 32) b.push_back(v5 ? options.alpha[size_t(y) * width + x] : 0xFF);
    }
    b.resize(start + stride, 0);
  }
  return b;
}

}  // namespace qvl::test
