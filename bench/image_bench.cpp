// Image preprocessing cost for a photo-sized input: Pillow-exact bicubic resize + normalise +
// patchify of a synthetic 4000x3000 RGB image to several token budgets.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "image/patchify.h"
#include "image/preprocess.h"
#include "image/resize.h"

namespace {

// Smooth gradients plus texture, so that the work is not trivially compressible.
qvl::RgbImage synthetic_photo(int width, int height) {
  qvl::RgbImage image{width, height, std::vector<uint8_t>(size_t(width) * height * 3)};
  uint32_t noise = 12345;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      noise = noise * 1664525u + 1013904223u;
      uint8_t* p = &image.pixels[(size_t(y) * width + x) * 3];
      p[0] = uint8_t((x * 255) / width);
      p[1] = uint8_t((y * 255) / height);
      p[2] = uint8_t(noise >> 24);
    }
  }
  return image;
}

const qvl::RgbImage& photo() {
  static const qvl::RgbImage image = synthetic_photo(4000, 3000);
  return image;
}

// Full preprocess_image to a budget of range(0) image tokens (one token = 32x32 px);
// 768 tokens is exactly 1024x768 for a 4:3 photo, 16384 is the HF default (3008x4000).
void BM_PreprocessPhoto(benchmark::State& state) {
  const qvl::PreprocessConfig config =
      qvl::with_token_budget(qvl::PreprocessConfig{}, 64, state.range(0));
  int64_t tokens = 0;
  for (auto _ : state) {
    const qvl::PreprocessedImage out = qvl::preprocess_image(photo(), config);
    tokens = out.n_tokens;
    benchmark::DoNotOptimize(out.pixel_values.data());
  }
  state.counters["tokens"] = double(tokens);
  state.SetItemsProcessed(state.iterations() * int64_t(photo().width) * photo().height);
}
BENCHMARK(BM_PreprocessPhoto)
    ->Arg(256)
    ->Arg(768)
    ->Arg(16384)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_ResizePhotoTo1024x768(benchmark::State& state) {
  for (auto _ : state) {
    qvl::RgbImage out = qvl::resize_bicubic(photo(), 1024, 768);
    benchmark::DoNotOptimize(out.pixels.data());
  }
}
BENCHMARK(BM_ResizePhotoTo1024x768)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Patchify1024x768(benchmark::State& state) {
  const qvl::RgbImage image = synthetic_photo(1024, 768);
  const qvl::PatchLayout layout;
  std::vector<float> out((1024 / 16) * (768 / 16) * layout.patch_dim());
  for (auto _ : state) {
    qvl::normalize_and_patchify(image, layout, qvl::Normalization{}, out.data());
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_Patchify1024x768)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
