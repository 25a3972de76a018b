// GIF through giflib's record-level API (never DGifSlurp, which decodes every frame): frame 0
// only. Like Pillow, the canvas is the logical screen, enlarged when frame 0 extends past it.
// Transparent pixels and canvas not covered by frame 0 become white (transparency over white).
#include <gif_lib.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "image/decode_formats.h"

namespace qvl::decode_detail {
namespace {

struct GifReader {
  const uint8_t* data;
  size_t size;
  size_t pos;
};

int read_bytes(GifFileType* gif, GifByteType* out, int count) {
  auto* reader = static_cast<GifReader*>(gif->UserData);
  const size_t n = std::min(size_t(std::max(count, 0)), reader->size - reader->pos);
  std::memcpy(out, reader->data + reader->pos, n);
  reader->pos += n;
  return static_cast<int>(n);
}

uint32_t read_le16(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8);
}

[[noreturn]] void fail_gif(int error) {
  const char* text = GifErrorString(error);
  fail_corrupt(ImageFormat::kGif, text ? text : "giflib error " + std::to_string(error));
}

struct GifCloser {
  GifFileType* gif;
  ~GifCloser() {
    int ignored = 0;
    if (gif) DGifCloseFile(gif, &ignored);
  }
};

struct FrameGeometry {
  uint32_t left, top, width, height;
};

// Copies one decoded frame row onto the canvas through the colour map.
void paint_row(const std::vector<GifPixelType>& line, uint32_t canvas_width,
               const FrameGeometry& frame, uint32_t row, const ColorMapObject* colors,
               int transparent, uint8_t* canvas) {
  uint8_t* dst = canvas + (size_t{frame.top + row} * canvas_width + frame.left) * 3;
  for (uint32_t x = 0; x < frame.width; ++x, dst += 3) {
    const int index = line[x];
    if (index == transparent) continue;  // keep the white background
    if (colors == nullptr) {             // no palette at all: Pillow falls back to greys
      dst[0] = dst[1] = dst[2] = static_cast<uint8_t>(index);
    } else if (index < colors->ColorCount) {
      dst[0] = colors->Colors[index].Red;
      dst[1] = colors->Colors[index].Green;
      dst[2] = colors->Colors[index].Blue;
    } else {
      dst[0] = dst[1] = dst[2] = 0;  // index past the palette: black, as a zero-padded palette
    }
  }
}

}  // namespace

void probe_gif(const uint8_t* data, size_t size, ImageInfo& info) {
  // Header (6) + logical screen descriptor (7), optional global colour table, then blocks up to
  // the first image descriptor.
  if (size < 13) fail_corrupt(ImageFormat::kGif, "file is truncated in the header");
  uint32_t width = read_le16(data + 6), height = read_le16(data + 8);
  size_t pos = 13;
  if (data[10] & 0x80) pos += 3u << ((data[10] & 7) + 1);
  while (true) {
    if (pos >= size) fail_corrupt(ImageFormat::kGif, "file ends before the first image");
    if (data[pos] == 0x2C) {  // image descriptor: left, top, width, height (little-endian)
      if (size - pos < 10) fail_corrupt(ImageFormat::kGif, "truncated image descriptor");
      const uint8_t* d = data + pos + 1;
      width = std::max(width, read_le16(d) + read_le16(d + 4));
      height = std::max(height, read_le16(d + 2) + read_le16(d + 6));
      break;
    }
    if (data[pos] != 0x21) fail_corrupt(ImageFormat::kGif, "no image before the trailer");
    pos += 2;  // introducer and label, then sub-blocks until a zero length
    while (pos < size && data[pos] != 0) pos += 1 + size_t{data[pos]};
    pos += 1;
  }
  info.width = static_cast<int>(width);
  info.height = static_cast<int>(height);
}

RgbImage decode_gif(const uint8_t* data, size_t size, const ImageInfo& info) {
  GifReader reader{data, size, 0};
  int error = 0;
  GifCloser closer{DGifOpen(&reader, read_bytes, &error)};
  GifFileType* gif = closer.gif;
  if (gif == nullptr) fail_gif(error);

  int transparent = -1;
  GifRecordType record = UNDEFINED_RECORD_TYPE;
  do {
    if (DGifGetRecordType(gif, &record) == GIF_ERROR) fail_gif(gif->Error);
    if (record == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* block = nullptr;
      if (DGifGetExtension(gif, &code, &block) == GIF_ERROR) fail_gif(gif->Error);
      if (code == GRAPHICS_EXT_FUNC_CODE && block != nullptr) {
        GraphicsControlBlock control{};
        if (DGifExtensionToGCB(block[0], block + 1, &control) == GIF_OK) {
          transparent = control.TransparentColor;  // NO_TRANSPARENT_COLOR is -1
        }
      }
      while (block != nullptr) {
        if (DGifGetExtensionNext(gif, &block) == GIF_ERROR) fail_gif(gif->Error);
      }
    } else if (record == TERMINATE_RECORD_TYPE) {
      fail_corrupt(ImageFormat::kGif, "no image before the trailer");
    }
  } while (record != IMAGE_DESC_RECORD_TYPE);

  if (DGifGetImageDesc(gif) == GIF_ERROR) fail_gif(gif->Error);
  const GifImageDesc& desc = gif->Image;
  if (desc.Left < 0 || desc.Top < 0 || desc.Width < 0 || desc.Height < 0) {
    fail_corrupt(ImageFormat::kGif, "negative frame geometry");
  }
  const FrameGeometry frame{uint32_t(desc.Left), uint32_t(desc.Top), uint32_t(desc.Width),
                            uint32_t(desc.Height)};
  check_same_size(info, std::max<uint64_t>(gif->SWidth, frame.left + frame.width),
                  std::max<uint64_t>(gif->SHeight, frame.top + frame.height));
  const ColorMapObject* colors = desc.ColorMap ? desc.ColorMap : gif->SColorMap;

  RgbImage out = make_rgb_image(info);
  std::fill(out.pixels.begin(), out.pixels.end(), uint8_t{255});
  std::vector<GifPixelType> line(std::max<uint32_t>(frame.width, 1));
  // Interlaced frames store rows in four passes: every 8th from 0, every 8th from 4, every 4th
  // from 2, every 2nd from 1.
  static constexpr uint32_t kStart[] = {0, 4, 2, 1}, kStep[] = {8, 8, 4, 2};
  const int passes = desc.Interlace ? 4 : 1;
  for (int pass = 0; pass < passes; ++pass) {
    const uint32_t start = desc.Interlace ? kStart[pass] : 0;
    const uint32_t step = desc.Interlace ? kStep[pass] : 1;
    for (uint32_t row = start; row < frame.height && frame.width > 0; row += step) {
      if (DGifGetLine(gif, line.data(), desc.Width) == GIF_ERROR) fail_gif(gif->Error);
      paint_row(line, uint32_t(info.width), frame, row, colors, transparent, out.pixels.data());
    }
  }
  return out;
}

}  // namespace qvl::decode_detail
