#include "image/preprocess.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "image/patchify.h"
#include "image/smart_resize.h"

namespace qvl {
namespace {

constexpr int64_t kMin = 65536;  // HF defaults for Qwen3-VL
constexpr int64_t kMax = 16777216;

void expect_size(ImageSize got, int h, int w) {
  EXPECT_EQ(got.height, h);
  EXPECT_EQ(got.width, w);
}

// Expected values below follow transformers' smart_resize evaluated in Python.
TEST(SmartResize, GoldenCaseSizes) {
  expect_size(smart_resize(120, 200, 32, kMin, kMax), 224, 352);  // upscaled to min_pixels
  expect_size(smart_resize(480, 640, 32, kMin, kMax), 480, 640);  // already aligned
  expect_size(smart_resize(336, 400, 32, kMin, kMax), 320, 384);
  expect_size(smart_resize(200, 256, 32, kMin, kMax), 256, 320);
  expect_size(smart_resize(61, 97, 32, kMin, kMax), 224, 352);
}

TEST(SmartResize, RoundsHalfToEven) {
  expect_size(smart_resize(336, 400, 32, 1, int64_t{1} << 30), 320, 384);  // 10.5, 12.5 -> even
  expect_size(smart_resize(368, 400, 32, 1, int64_t{1} << 30), 384, 384);  // 11.5 -> 12
  expect_size(smart_resize(48, 48, 32, 1, 1 << 20), 64, 64);               // 1.5 -> 2
  expect_size(smart_resize(80, 80, 32, 1, 1 << 20), 64, 64);               // 2.5 -> 2
  expect_size(smart_resize(16, 16, 32, 1, 1 << 20), 32, 32);  // 0.5 -> 0, then min branch
}

TEST(SmartResize, ScalesDownIntoMaxPixels) {
  expect_size(smart_resize(3000, 4000, 32, kMin, kMax), 3008, 4000);
  expect_size(smart_resize(3000, 4000, 32, kMin, 1 << 20), 864, 1152);
  expect_size(smart_resize(3000, 4000, 32, 256 * 1024, 1280 * 1024), 960, 1312);
  // A side that would floor to zero is kept at one factor.
  expect_size(smart_resize(32, 6400, 32, 1024, 10240), 32, 1408);
  const ImageSize big = smart_resize(12345, 9876, 32, kMin, kMax);
  EXPECT_LE(int64_t{big.height} * big.width, kMax);
  EXPECT_EQ(big.height % 32, 0);
  EXPECT_EQ(big.width % 32, 0);
}

TEST(SmartResize, TinyImagesGrowToMinPixels) {
  expect_size(smart_resize(10, 10, 32, kMin, kMax), 256, 256);
  expect_size(smart_resize(1, 200, 32, kMin, kMax), 32, 3648);  // ratio exactly 200 is allowed
  expect_size(smart_resize(1, 1, 32, kMin, kMax), 256, 256);
}

TEST(SmartResize, RefusesExtremeAspectRatioAndNonsense) {
  EXPECT_THROW(smart_resize(1, 201, 32, kMin, kMax), Error);
  EXPECT_THROW(smart_resize(40200, 200, 32, kMin, kMax), Error);
  try {
    smart_resize(1, 201, 32, kMin, kMax);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("aspect ratio"), std::string::npos);
  }
  EXPECT_THROW(smart_resize(0, 10, 32, kMin, kMax), Error);
  EXPECT_THROW(smart_resize(10, -3, 32, kMin, kMax), Error);
  EXPECT_THROW(smart_resize(10, 10, 0, kMin, kMax), Error);
  EXPECT_THROW(smart_resize(10, 10, 32, kMax, kMin), Error);
  EXPECT_THROW(smart_resize(int64_t{1} << 40, 10, 32, kMin, kMax), Error);
  // min_pixels 0 lets a side round to zero; that must be an error, not an empty image.
  EXPECT_THROW(smart_resize(15, 15, 32, 0, 1 << 20), Error);
}

RgbImage random_image(int width, int height, unsigned seed) {
  RgbImage image{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3)};
  std::mt19937 rng(seed);
  for (auto& v : image.pixels) v = static_cast<uint8_t>(rng() & 0xff);
  return image;
}

// Oracle: the reference's reshape + permute written as generic index arithmetic. Output element
// (i0..i8) in permuted order maps to source dims (1, T, C, gh/m, m, P, gw/m, m, P).
std::vector<float> patchify_by_transpose(const RgbImage& image, const PatchLayout& layout,
                                         const Normalization& norm) {
  const int P = layout.patch_size, m = layout.merge_size, T = layout.temporal_patch_size;
  const int gh = image.height / P, gw = image.width / P;
  const std::array<int, 9> src_shape = {1, T, 3, gh / m, m, P, gw / m, m, P};
  const std::array<int, 9> perm = {0, 3, 6, 4, 7, 2, 1, 5, 8};
  std::array<int, 9> out_shape{};
  for (int d = 0; d < 9; ++d) out_shape[d] = src_shape[perm[d]];
  std::vector<float> out;
  std::array<int, 9> idx{};
  const size_t total = static_cast<size_t>(gh) * gw * 3 * T * P * P;
  for (size_t n = 0; n < total; ++n) {
    std::array<int, 9> s{};
    for (int d = 0; d < 9; ++d) s[perm[d]] = idx[d];
    const int c = s[2];
    const int y = (s[3] * m + s[4]) * P + s[5];
    const int x = (s[6] * m + s[7]) * P + s[8];
    const uint8_t u8 = image.pixels[(static_cast<size_t>(y) * image.width + x) * 3 + c];
    const float scaled = static_cast<float>(u8 * norm.rescale_factor);
    out.push_back((scaled - norm.mean[c]) / norm.std[c]);
    for (int d = 8; d >= 0 && ++idx[d] == out_shape[d]; --d) idx[d] = 0;
  }
  return out;
}

TEST(Patchify, MatchesReshapeTransposeOracle) {
  const Normalization norm{
      1.0 / 255.0, {0.48145466f, 0.4578275f, 0.40821073f}, {0.26862954f, 0.26130258f, 0.27577711f}};
  for (PatchLayout layout :
       {PatchLayout{16, 2, 2}, PatchLayout{4, 3, 2}, PatchLayout{2, 1, 3}, PatchLayout{14, 2, 2}}) {
    const int window = layout.patch_size * layout.merge_size;
    const RgbImage image = random_image(window * 3, window * 2, 42);
    std::vector<float> got(static_cast<size_t>(image.width / layout.patch_size) *
                           (image.height / layout.patch_size) * layout.patch_dim());
    normalize_and_patchify(image, layout, norm, got.data());
    const std::vector<float> want = patchify_by_transpose(image, layout, norm);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << "patch " << layout.patch_size << " index " << i;
    }
  }
}

TEST(Patchify, NormalisesLikeNumpy) {
  // float32(float64(v) / 255-ish) then (x - 0.5f) / 0.5f, e.g. 0 -> -1, 255 -> 1.
  RgbImage image{2, 2, {0, 255, 128, 1, 2, 3, 254, 253, 252, 10, 20, 30}};
  float out[3 * 2 * 2 * 2 * 1];
  normalize_and_patchify(image, PatchLayout{1, 2, 2}, Normalization{}, out);
  // Row 0 = pixel (0,0): channels (0, 255, 128), each repeated for two frames.
  EXPECT_EQ(out[0], -1.0f);
  EXPECT_EQ(out[1], -1.0f);
  EXPECT_EQ(out[2], 1.0f);
  EXPECT_EQ(out[4], (static_cast<float>(128 * (1.0 / 255.0)) - 0.5f) / 0.5f);
}

TEST(Patchify, RejectsMisalignedImages) {
  const RgbImage image = random_image(48, 32, 1);
  std::vector<float> out(10000);
  EXPECT_THROW(normalize_and_patchify(image, PatchLayout{16, 2, 2}, Normalization{}, out.data()),
               Error);
  EXPECT_THROW(normalize_and_patchify(image, PatchLayout{0, 2, 2}, Normalization{}, out.data()),
               Error);
}

TEST(Preprocess, EndToEndShapesAndTokens) {
  const RgbImage image = random_image(200, 120, 9);
  const PreprocessedImage out = preprocess_image(image, PreprocessConfig{});
  EXPECT_EQ(out.grid_t, 1);
  EXPECT_EQ(out.grid_h, 14);
  EXPECT_EQ(out.grid_w, 22);
  EXPECT_EQ(out.n_patches, 14 * 22);
  EXPECT_EQ(out.patch_dim, 1536);
  EXPECT_EQ(out.n_tokens, 77);
  EXPECT_EQ(out.resized.width, 352);
  EXPECT_EQ(out.resized.height, 224);
  ASSERT_EQ(out.pixel_values.size(), static_cast<size_t>(14 * 22 * 1536));
  std::vector<float> again(out.pixel_values.size());
  normalize_and_patchify(out.resized, PreprocessConfig{}.layout(), Normalization{}, again.data());
  EXPECT_EQ(again, out.pixel_values);
}

TEST(Preprocess, TokenBudgetLimitsTheGrid) {
  const PreprocessConfig config = with_token_budget(PreprocessConfig{}, 64, 256);
  EXPECT_EQ(config.min_pixels, 64 * 1024);
  EXPECT_EQ(config.max_pixels, 256 * 1024);
  const PreprocessedImage out = preprocess_image(random_image(1600, 1200, 2), config);
  EXPECT_LE(out.n_tokens, 256);
  EXPECT_GE(out.n_tokens, 64);
  EXPECT_THROW(with_token_budget(PreprocessConfig{}, 0, 10), Error);
  EXPECT_THROW(with_token_budget(PreprocessConfig{}, 20, 10), Error);
  EXPECT_THROW(with_token_budget(PreprocessConfig{}, 1, int64_t{1} << 40), Error);
}

const char* kQwen3Config = R"({
  "size": {"longest_edge": 16777216, "shortest_edge": 65536},
  "patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
  "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
  "processor_class": "Qwen3VLProcessor"})";

TEST(PreprocessConfigJson, ReadsQwen3Layout) {
  const PreprocessConfig c = parse_preprocess_config(kQwen3Config, "test");
  EXPECT_EQ(c.patch_size, 16);
  EXPECT_EQ(c.temporal_patch_size, 2);
  EXPECT_EQ(c.merge_size, 2);
  EXPECT_EQ(c.min_pixels, 65536);
  EXPECT_EQ(c.max_pixels, 16777216);
  EXPECT_EQ(c.mean[1], 0.5f);
  EXPECT_EQ(c.std[2], 0.5f);
  EXPECT_EQ(c.rescale_factor, 1.0 / 255.0);
}

TEST(PreprocessConfigJson, ReadsTheTestModelFolder) {
  const PreprocessConfig c =
      preprocess_config_from_json(std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a");
  EXPECT_EQ(c.factor(), 32);
  EXPECT_EQ(c.min_pixels, 65536);
  EXPECT_EQ(c.max_pixels, 16777216);
  EXPECT_THROW(preprocess_config_from_json("/nonexistent-dir"), Error);
}

TEST(PreprocessConfigJson, TopLevelPixelKeysOverrideSize) {
  const PreprocessConfig c = parse_preprocess_config(
      R"({"min_pixels": 3136, "max_pixels": 1003520, "size": {"shortest_edge": 1,
          "longest_edge": 2}, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
          "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": 0.25,
          "rescale_factor": 0.00392156862745098})",
      "test");
  EXPECT_EQ(c.min_pixels, 3136);
  EXPECT_EQ(c.max_pixels, 1003520);
  EXPECT_EQ(c.mean[0], 0.48145466f);
  EXPECT_EQ(c.std[1], 0.25f);
  EXPECT_EQ(c.factor(), 28);
}

TEST(PreprocessConfigJson, RejectsMissingOrInvalidFields) {
  auto expect_error = [](const std::string& json, const std::string& mention) {
    try {
      parse_preprocess_config(json, "cfg.json");
      ADD_FAILURE() << "accepted: " << json;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what();
    }
  };
  const std::string rest = R"("temporal_patch_size": 2, "merge_size": 2,
      "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5])";
  const std::string size = R"("size": {"shortest_edge": 65536, "longest_edge": 16777216})";
  expect_error("{" + size + ", " + rest + "}", "patch_size");
  expect_error(R"({"patch_size": 16, )" + rest + "}", "min_pixels");
  expect_error(R"({"patch_size": -16, )" + size + ", " + rest + "}", "patch_size");
  expect_error(R"({"patch_size": 16.5, )" + size + ", " + rest + "}", "patch_size");
  expect_error(R"({"patch_size": 16, "size": {"height": 3}, )" + rest + "}", "size");
  expect_error(
      R"({"patch_size": 16, "size": {"shortest_edge": 9, "longest_edge": 4}, )" + rest + "}",
      "min_pixels");
  expect_error(R"({"patch_size": 16, )" + size + R"(, "temporal_patch_size": 2,
      "merge_size": 2, "image_mean": [0.5, 0.5], "image_std": [0.5, 0.5, 0.5]})",
               "image_mean");
  expect_error(R"({"patch_size": 16, )" + size + R"(, "temporal_patch_size": 2,
      "merge_size": 2, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0, 0.5]})",
               "image_std");
  expect_error("{not json", "invalid JSON");
  expect_error("[1, 2]", "object");
}

}  // namespace
}  // namespace qvl
