#include "cli/synthetic_image.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace qvl::cli {
namespace {

struct Colour {
  uint8_t r, g, b;
};

void put_pixel(RgbImage& img, int x, int y, Colour c) {
  uint8_t* p = &img.pixels[(static_cast<size_t>(y) * img.width + x) * 3];
  p[0] = c.r;
  p[1] = c.g;
  p[2] = c.b;
}

void fill_rect(RgbImage& img, int x0, int y0, int x1, int y1, Colour c) {
  for (int y = std::max(0, y0); y < std::min(img.height, y1); ++y)
    for (int x = std::max(0, x0); x < std::min(img.width, x1); ++x) put_pixel(img, x, y, c);
}

void fill_circle(RgbImage& img, int cx, int cy, int radius, Colour c) {
  for (int y = std::max(0, cy - radius); y < std::min(img.height, cy + radius + 1); ++y)
    for (int x = std::max(0, cx - radius); x < std::min(img.width, cx + radius + 1); ++x)
      if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= radius * radius) put_pixel(img, x, y, c);
}

// Apex at the top centre of the box.
void fill_triangle(RgbImage& img, int x0, int y0, int x1, int y1, Colour c) {
  for (int y = std::max(0, y0); y < std::min(img.height, y1); ++y) {
    const double t = static_cast<double>(y - y0) / std::max(1, y1 - y0);
    const int half = static_cast<int>(t * (x1 - x0) / 2);
    const int mid = (x0 + x1) / 2;
    for (int x = std::max(0, mid - half); x <= std::min(img.width - 1, mid + half); ++x)
      put_pixel(img, x, y, c);
  }
}

void put16(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  b[at] = static_cast<uint8_t>(v);
  b[at + 1] = static_cast<uint8_t>(v >> 8);
}

void put32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

RgbImage synthetic_scene(int width, int height, int variant) {
  if (width < 8 || height < 8 || width > 8192 || height > 8192) {
    fail(ErrorCode::kInvalidArgument, "synthetic images are 8..8192 pixels per side");
  }
  RgbImage img{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
  const int v = variant & 3;
  // Background: a diagonal two-colour gradient with a soft ripple, so no region is flat.
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const double u = static_cast<double>(x) / width, w = static_cast<double>(y) / height;
      const double ripple = 12 * std::sin(0.11 * x + 0.07 * y + v);
      const auto clamp = [](double c) { return static_cast<uint8_t>(std::clamp(c, 0.0, 255.0)); };
      put_pixel(img, x, y,
                {clamp(40 + 170 * u + ripple), clamp(60 + 150 * w - ripple),
                 clamp(200 - 120 * (u + w) / 2 + 40 * v)});
    }
  const Colour red{220, 30, 40}, yellow{250, 210, 30}, blue{20, 60, 200}, white{245, 245, 245};
  const int s = std::min(width, height);
  fill_circle(img, width / 4 + v * s / 16, height / 3, s / 7, v % 2 ? yellow : red);
  fill_rect(img, width / 2, height / 2 - v * s / 20, width / 2 + s / 3, height / 2 + s / 4, blue);
  fill_triangle(img, width / 8, height * 5 / 8, width / 8 + s / 3, height * 5 / 8 + s / 4,
                v % 2 ? red : yellow);
  fill_rect(img, width * 3 / 5, height / 8, width * 3 / 5 + s / 5, height / 8 + s / 20, white);
  return img;
}

std::vector<uint8_t> encode_bmp(const RgbImage& image) {
  const size_t row = (static_cast<size_t>(image.width) * 3 + 3) / 4 * 4;
  const size_t data = row * image.height, header = 54;
  std::vector<uint8_t> b(header + data, 0);
  b[0] = 'B';
  b[1] = 'M';
  put32(b, 2, static_cast<uint32_t>(header + data));
  put32(b, 10, static_cast<uint32_t>(header));
  put32(b, 14, 40);  // BITMAPINFOHEADER
  put32(b, 18, static_cast<uint32_t>(image.width));
  put32(b, 22, static_cast<uint32_t>(image.height));  // positive: bottom row first
  put16(b, 26, 1);                                    // planes
  put16(b, 28, 24);                                   // bits per pixel
  put32(b, 34, static_cast<uint32_t>(data));
  for (int y = 0; y < image.height; ++y) {
    const uint8_t* src = &image.pixels[static_cast<size_t>(image.height - 1 - y) * image.width * 3];
    uint8_t* dst = &b[header + y * row];
    for (int x = 0; x < image.width; ++x) {  // BMP stores B, G, R
      dst[3 * x] = src[3 * x + 2];
      dst[3 * x + 1] = src[3 * x + 1];
      dst[3 * x + 2] = src[3 * x];
    }
  }
  return b;
}

}  // namespace qvl::cli
