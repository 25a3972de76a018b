// Internal: one decoder per container format. decode.cpp sniffs the format, probes the header,
// checks limits and then calls the matching decoder; each decoder re-checks that its library saw
// the same dimensions, so no allocation can exceed what the probe allowed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "image/decode.h"
#include "image/rgb_image.h"

namespace qvl::decode_detail {

// Header readers: fill width/height (may be 0 or huge; the caller validates) or throw kCorrupt.
void probe_jpeg(const uint8_t* data, size_t size, ImageInfo& info);
void probe_png(const uint8_t* data, size_t size, ImageInfo& info);
void probe_webp(const uint8_t* data, size_t size, ImageInfo& info);
void probe_gif(const uint8_t* data, size_t size, ImageInfo& info);
void probe_bmp(const uint8_t* data, size_t size, ImageInfo& info);

// Decoders; `info` is the validated probe result. Output is width*height RGB in stored
// orientation, alpha already composited over white.
RgbImage decode_jpeg(const uint8_t* data, size_t size, const ImageInfo& info);
RgbImage decode_png(const uint8_t* data, size_t size, const ImageInfo& info);
RgbImage decode_webp(const uint8_t* data, size_t size, const ImageInfo& info);
RgbImage decode_gif(const uint8_t* data, size_t size, const ImageInfo& info);
RgbImage decode_bmp(const uint8_t* data, size_t size, const ImageInfo& info);

// Allocates the output after the limits were checked.
RgbImage make_rgb_image(const ImageInfo& info);

// Throws kCorrupt naming the format when a library reports dimensions other than the probe's.
void check_same_size(const ImageInfo& info, uint64_t width, uint64_t height);

// Converts interleaved RGBA rows to RGB composited over white (src and dst may not alias).
void rgba_to_rgb_over_white(const uint8_t* rgba, size_t pixel_count, uint8_t* rgb);

// Throws kCorrupt with "<format> image is damaged: <detail>".
[[noreturn]] void fail_corrupt(ImageFormat format, const std::string& detail);

}  // namespace qvl::decode_detail
