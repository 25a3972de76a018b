// The video processor against transformers' values (tests/testdata/qwen3vl-tiny-a-video, made
// by scripts/hfref/make_video_goldens.sh) and against hand-worked cases.
#include "image/video_preprocess.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "image/resize.h"
#include "image/video_sampling.h"
#include "model/safetensors.h"

namespace qvl {
namespace {

std::string video_golden_dir() {
  return std::string(QVL_SOURCE_DIR) + "/tests/testdata/qwen3vl-tiny-a-video";
}

std::vector<RgbImage> frames_of(const TensorView& t) {
  // [k, H, W, 3] uint8
  std::vector<RgbImage> out;
  const int64_t k = t.shape[0], h = t.shape[1], w = t.shape[2];
  const size_t bytes = static_cast<size_t>(h * w * 3);
  for (int64_t i = 0; i < k; ++i) {
    RgbImage im;
    im.width = static_cast<int>(w);
    im.height = static_cast<int>(h);
    im.pixels.assign(t.data + i * bytes, t.data + (i + 1) * bytes);
    out.push_back(std::move(im));
  }
  return out;
}

// The Qwen3-VL settings of the golden folder, with a case's per-request changes.
VideoPreprocessConfig case_config(const nlohmann::json& request) {
  VideoPreprocessConfig c;  // defaults = Qwen3-VL's video_preprocessor_config.json
  if (request.contains("fps")) c.sampling.fps = request["fps"].get<double>();
  if (request.contains("max_frames")) c.sampling.max_frames = request["max_frames"].get<int64_t>();
  if (request.contains("size")) {
    c.min_pixels = request["size"]["shortest_edge"].get<int64_t>();
    c.max_pixels = request["size"]["longest_edge"].get<int64_t>();
  }
  return c;
}

TEST(VideoPreprocess, GoldenCasesSamplingTimestampsSizeAndPixels) {
  const auto manifest =
      nlohmann::json::parse(read_text_file(video_golden_dir() + "/manifest.json"));
  ASSERT_GE(manifest["cases"].size(), 5u);
  int videos = 0;
  for (const auto& c : manifest["cases"]) {
    SCOPED_TRACE(c["name"].get<std::string>());
    const SafeTensorsFile file(video_golden_dir() + "/" + c["file"].get<std::string>());
    const auto grids = file.get("video_grid_thw").to_i64();
    const TensorView& sums = file.get("pixel_values_videos_row_sum");
    ASSERT_EQ(sums.dtype, DType::kF64);
    std::vector<double> row_sums(sums.nbytes / sizeof(double));
    std::memcpy(row_sums.data(), sums.data, sums.nbytes);
    size_t row = 0;
    for (size_t v = 0; v < c["videos"].size(); ++v, ++videos) {
      const auto& meta = c["videos"][v];
      const VideoPreprocessConfig config = case_config(meta["request"]);
      const std::string prefix = "video." + std::to_string(v) + ".";
      // Sampling: linspace + round half to even over the frame count and rate.
      const auto indices = sample_frame_indices(meta["frames"].get<int64_t>(),
                                                meta["fps"].get<double>(), config.sampling);
      EXPECT_EQ(indices, file.get(prefix + "frame_indices").to_i64());
      // Timestamps text, one per pair.
      const auto stamps = pair_timestamps(indices, meta["fps"].get<double>(), 2);
      ASSERT_EQ(stamps.size(), meta["timestamps"].size());
      for (size_t i = 0; i < stamps.size(); ++i) {
        EXPECT_EQ(timestamp_text(stamps[i]),
                  "<" + meta["timestamps"][i].get<std::string>() + " seconds>");
      }
      // Size and grid.
      const std::vector<RgbImage> sampled = frames_of(file.get(prefix + "sampled_u8"));
      const std::vector<RgbImage> golden_resized = frames_of(file.get(prefix + "resized_u8"));
      const ImageSize size = video_frame_size(static_cast<int64_t>(indices.size()),
                                              sampled[0].width, sampled[0].height, config);
      EXPECT_EQ(size.height, golden_resized[0].height);
      EXPECT_EQ(size.width, golden_resized[0].width);
      // Everything after the resize, from transformers' own resized frames: grid and pixels.
      const PreprocessedVideo exact = preprocess_video_frames(
          sampled, indices, meta["fps"].get<double>(), config, &golden_resized);
      EXPECT_EQ(exact.grid_t, grids[v * 3]);
      EXPECT_EQ(exact.grid_h, grids[v * 3 + 1]);
      EXPECT_EQ(exact.grid_w, grids[v * 3 + 2]);
      for (int t = 0; t < exact.grid_t; ++t) {
        const std::vector<float> values = video_pair_pixel_values(exact, t, config);
        const size_t dim = config.layout.patch_dim();
        for (size_t r = 0; r < values.size() / dim; ++r, ++row) {
          double sum = 0;
          for (size_t k = 0; k < dim; ++k) sum += values[r * dim + k];
          ASSERT_NEAR(sum, row_sums[row], 1e-9) << "pair " << t << " row " << r;
        }
      }
      // qvl's own resize (Pillow's bicubic) against torchvision's float path: a level or two at
      // edges (docs/video.md), the same picture.
      const PreprocessedVideo own =
          preprocess_video_frames(sampled, indices, meta["fps"].get<double>(), config);
      int worst = 0;
      double total = 0, count = 0;
      for (size_t f = 0; f < own.resized.size(); ++f) {
        const auto& a = own.resized[f].pixels;
        const auto& b = golden_resized[f].pixels;
        ASSERT_EQ(a.size(), b.size());
        for (size_t i = 0; i < a.size(); ++i) {
          const int d = std::abs(int{a[i]} - int{b[i]});
          worst = std::max(worst, d);
          total += d;
        }
        count += static_cast<double>(a.size());
      }
      EXPECT_LE(worst, 3);
      EXPECT_LT(total / count, 0.5);
      std::printf("[video] %s: resize vs torchvision max %d levels, mean %.3f\n",
                  c["name"].get<std::string>().c_str(), worst, total / count);
    }
    EXPECT_EQ(row, row_sums.size());
  }
  EXPECT_GE(videos, 5);
}

TEST(VideoSampling, LinspaceRoundsHalfToEvenAndClamps) {
  VideoSampling s;  // fps 2, 4..768 frames
  // 15 frames at 6 fps: int(15 / 6 * 2) = 5 -> 0, 3.5, 7, 10.5, 14 -> 0, 4, 7, 10, 14.
  EXPECT_EQ(sample_frame_indices(15, 6, s), (std::vector<int64_t>{0, 4, 7, 10, 14}));
  // Short clips get min_frames, but never more than they have.
  EXPECT_EQ(sample_frame_indices(10, 30, s), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(sample_frame_indices(3, 30, s), (std::vector<int64_t>{0, 1, 2}));
  // Unknown rate: transformers assumes 24 (48 frames -> 4 at 2 fps).
  EXPECT_EQ(sample_frame_indices(48, 0, s).size(), 4u);
  // An hour at 30 fps stops at max_frames.
  EXPECT_EQ(sample_frame_indices(108000, 30, s).size(), 768u);
  s.max_frames = 8;
  EXPECT_EQ(sample_frame_indices(600, 30, s).size(), 8u);
  EXPECT_THROW(sample_frame_indices(0, 30, s), Error);
  s.fps = 0;
  EXPECT_THROW(sample_frame_indices(10, 30, s), Error);
}

TEST(VideoSampling, TimestampsArePairMeansFormattedLikePython) {
  // Odd count: the last index repeats. (0 + 4) / 2 / 6 ... as seconds.
  const auto t = pair_timestamps({0, 4, 7, 10, 14}, 6, 2);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(timestamp_text(t[0]), "<0.3 seconds>");
  EXPECT_EQ(timestamp_text(t[2]), "<2.3 seconds>");
  // Exact binary ties round to even, as Python's format does.
  EXPECT_EQ(timestamp_text(0.25), "<0.2 seconds>");
  EXPECT_EQ(timestamp_text(0.75), "<0.8 seconds>");
}

TEST(VideoSampling, SmartResizeBudgetAndRefusals) {
  // 6 frames of 160x120 under 40960 pixels: beta = sqrt(2.8125) -> 64x64.
  const ImageSize s = video_smart_resize(6, 120, 160, 2, 32, 4096, 40960);
  EXPECT_EQ(s.height, 64);
  EXPECT_EQ(s.width, 64);
  // Inside the bounds: sides rounded half to even (80 -> 64, 112 -> 128).
  const ImageSize r = video_smart_resize(5, 112, 80, 2, 32, 4096, 25165824);
  EXPECT_EQ(r.height, 128);
  EXPECT_EQ(r.width, 64);
  EXPECT_THROW(video_smart_resize(1, 64, 64, 2, 32, 4096, 25165824), Error);  // one frame
  EXPECT_THROW(video_smart_resize(4, 20, 64, 2, 32, 4096, 25165824), Error);  // side < 32
  EXPECT_THROW(video_smart_resize(4, 32, 32 * 201, 2, 32, 4096, 1LL << 40), Error);
}

}  // namespace
}  // namespace qvl
