// Golden parity of image preprocessing against transformers' Qwen2VLImageProcessor output:
// grids, PIL-bicubic resized pixels, pixel_values (head exactly, every row via its sum).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "image/decode.h"
#include "image/preprocess.h"
#include "model/safetensors.h"

namespace qvl {
namespace {

std::string golden_dir() {
  const char* env = std::getenv("QVL_GOLDEN_DIR");
  return env != nullptr && *env != '\0' ? std::string(env)
                                        : std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";
}

struct Agreement {
  size_t identical = 0;
  size_t total = 0;
  int max_diff = 0;
  double percent() const { return total == 0 ? 0.0 : 100.0 * identical / total; }
};

Agreement compare_u8(const std::vector<uint8_t>& got, const uint8_t* want, size_t n) {
  Agreement a;
  a.total = n;
  for (size_t i = 0; i < n && i < got.size(); ++i) {
    const int diff = std::abs(int{got[i]} - int{want[i]});
    a.identical += diff == 0;
    a.max_diff = std::max(a.max_diff, diff);
  }
  return a;
}

void expect_row_sums(const std::vector<float>& values, int64_t patch_dim, const TensorView& golden,
                     const std::string& label) {
  const auto* sums = reinterpret_cast<const double*>(golden.data);
  const int64_t rows = golden.numel();
  ASSERT_EQ(static_cast<int64_t>(values.size()), rows * patch_dim) << label;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0.0, magnitude = 0.0;
    for (int64_t i = 0; i < patch_dim; ++i) {
      sum += values[r * patch_dim + i];
      magnitude += std::fabs(values[r * patch_dim + i]);
    }
    ASSERT_NEAR(sum, sums[r], 1e-6 * std::max(1.0, magnitude)) << label << " row " << r;
  }
}

TEST(ImageParity, ResizedPixelsMatch) {
  const std::string dir = golden_dir();
  const nlohmann::json manifest = nlohmann::json::parse(read_text_file(dir + "/manifest.json"));
  PreprocessConfig config = preprocess_config_from_json(dir);
  // The goldens record the pixel bounds they were made with (see the README: transformers
  // 4.57's slow processor needs them passed explicitly).
  if (manifest.contains("image_processor_params")) {
    const auto& params = manifest["image_processor_params"];
    if (params.contains("min_pixels")) config.min_pixels = params["min_pixels"].get<int64_t>();
    if (params.contains("max_pixels")) config.max_pixels = params["max_pixels"].get<int64_t>();
  }
  int image_cases = 0;
  for (const auto& c : manifest.at("cases")) {
    if (!c.contains("images") || c["images"].empty()) continue;
    ++image_cases;
    const std::string name = c.at("name").get<std::string>();
    SafeTensorsFile golden(dir + "/" + c.at("file").get<std::string>());
    const std::vector<int64_t> grids = golden.get("image_grid_thw").to_i64();
    ASSERT_EQ(grids.size(), c["images"].size() * 3) << name;
    const TensorView* head = golden.find("pixel_values_head");
    std::vector<float> all_values;  // pixel_values of every image, concatenated
    std::vector<float> from_golden_resize;
    int64_t patch_dim = 0;
    for (size_t k = 0; k < c["images"].size(); ++k) {
      const auto& entry = c["images"][k];
      // For JPEGs use PIL's own decode (stored losslessly as PNG) so that only resizing is tested.
      const std::string file = entry.value("decoded_png", entry.at("file").get<std::string>());
      const RgbImage source = decode_image_file(dir + "/" + file);
      const std::string label = name + " image " + std::to_string(k);
      const PreprocessedImage out = preprocess_image(source, config);
      EXPECT_EQ(out.grid_t, grids[k * 3 + 0]) << label;
      EXPECT_EQ(out.grid_h, grids[k * 3 + 1]) << label;
      EXPECT_EQ(out.grid_w, grids[k * 3 + 2]) << label;

      const TensorView& resized = golden.get("image." + std::to_string(k) + ".resized_u8");
      ASSERT_EQ(resized.dtype, DType::kU8) << label;
      resized.expect_shape({out.resized.height, out.resized.width, 3});
      const Agreement a = compare_u8(out.resized.pixels, resized.data, resized.nbytes);
      std::printf("[ parity ] %s (%s -> %dx%d): %.4f%% identical (%zu/%zu), max diff %d\n",
                  label.c_str(), file.c_str(), out.resized.width, out.resized.height, a.percent(),
                  a.identical, a.total, a.max_diff);
      RecordProperty(name + "_" + std::to_string(k) + "_identical_percent",
                     std::to_string(a.percent()));
      RecordProperty(name + "_" + std::to_string(k) + "_max_diff", a.max_diff);
      EXPECT_LE(a.max_diff, 1) << label;
      EXPECT_GE(a.percent(), 99.9) << label;

      if (entry.contains("decoded_png")) {
        // Information only: the same image through qvl's own decoder (a decoder difference,
        // not a resize one, would show here; the decoder has its own tests).
        const std::string original = entry.at("file").get<std::string>();
        const PreprocessedImage own =
            preprocess_image(decode_image_file(dir + "/" + original), config);
        const Agreement d = compare_u8(own.resized.pixels, resized.data, resized.nbytes);
        std::printf("[ parity ] %s via qvl's decoder of %s: %.4f%% identical, max diff %d\n",
                    label.c_str(), original.c_str(), d.percent(), d.max_diff);
        RecordProperty(name + "_" + std::to_string(k) + "_own_decoder_identical_percent",
                       std::to_string(d.percent()));
      }

      // Patchify of the golden resized pixels isolates normalisation + layout.
      RgbImage golden_image{
          out.resized.width, out.resized.height, {resized.data, resized.data + resized.nbytes}};
      std::vector<float> values(out.pixel_values.size());
      normalize_and_patchify(golden_image, config.layout(), config.normalization(), values.data());
      from_golden_resize.insert(from_golden_resize.end(), values.begin(), values.end());
      all_values.insert(all_values.end(), out.pixel_values.begin(), out.pixel_values.end());
      patch_dim = out.patch_dim;
    }
    // pixel_values is a pure function of the resized pixels: checked exactly on the golden
    // resized pixels (layout + normalisation), and on our own output whenever the resize was
    // bit-exact (otherwise the resize tolerance above is the requirement).
    expect_row_sums(from_golden_resize, patch_dim, golden.get("pixel_values_row_sum"),
                    name + " (golden resize)");
    const bool resize_exact = all_values == from_golden_resize;
    std::printf("[ parity ] %s: pixel_values %s the golden-resize reconstruction\n", name.c_str(),
                resize_exact ? "identical to" : "differ from");
    if (resize_exact) {
      expect_row_sums(all_values, patch_dim, golden.get("pixel_values_row_sum"), name);
    }
    if (head != nullptr) {
      const std::vector<float> want = head->to_f32();
      ASSERT_EQ(head->dim(1), patch_dim) << name;
      ASSERT_LE(want.size(), all_values.size()) << name;
      size_t mismatched = 0;
      for (size_t i = 0; i < want.size(); ++i) mismatched += from_golden_resize[i] != want[i];
      EXPECT_EQ(mismatched, 0u) << name << ": pixel_values_head differs in " << mismatched << " of "
                                << want.size() << " values";
      if (resize_exact) {
        for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(all_values[i], want[i]) << name << i;
      }
    }
  }
  EXPECT_GT(image_cases, 0) << "no case with images in " << dir;
}

}  // namespace
}  // namespace qvl
