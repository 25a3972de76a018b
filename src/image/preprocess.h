// Qwen-VL image preprocessing entry point: smart resize -> Pillow bicubic -> normalise ->
// patchify, matching transformers' Qwen2VLImageProcessor (used by Qwen3-VL) bit for bit.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "image/patchify.h"
#include "image/rgb_image.h"

namespace qvl {

struct PreprocessConfig {
  int patch_size = 16;
  int temporal_patch_size = 2;
  int merge_size = 2;
  int64_t min_pixels = 65536;     // HF's Qwen3-VL default: 64 image tokens
  int64_t max_pixels = 16777216;  // 16384 image tokens
  std::array<float, 3> mean = {0.5f, 0.5f, 0.5f};
  std::array<float, 3> std = {0.5f, 0.5f, 0.5f};
  double rescale_factor = 1.0 / 255.0;

  int factor() const { return patch_size * merge_size; }
  // Pixels covered by one image token (one merged patch window), e.g. 32 * 32 = 1024.
  int64_t pixels_per_token() const { return int64_t{factor()} * factor(); }
  PatchLayout layout() const { return {patch_size, temporal_patch_size, merge_size}; }
  Normalization normalization() const { return {rescale_factor, mean, std}; }
};

struct PreprocessedImage {
  int grid_t = 0;  // always 1 for a still image
  int grid_h = 0;  // patches per column (resized height / patch_size)
  int grid_w = 0;  // patches per row
  RgbImage resized;
  std::vector<float> pixel_values;  // [n_patches, patch_dim], merge-window row order
  int64_t n_patches = 0;            // grid_t * grid_h * grid_w
  int64_t patch_dim = 0;            // 3 * temporal_patch_size * patch_size^2
  // Image tokens the language model sees: n_patches / merge_size^2.
  int64_t n_tokens = 0;
};

// Throws qvl::Error(kInvalidArgument) naming the bad field.
void validate_preprocess_config(const PreprocessConfig& config);

PreprocessedImage preprocess_image(const RgbImage& image, const PreprocessConfig& config);

// Reads <model_dir>/preprocessor_config.json. Pixel bounds come from size.shortest_edge /
// size.longest_edge, overridden by top-level min_pixels / max_pixels when present (as
// transformers does). patch_size, temporal_patch_size, merge_size, image_mean and image_std are
// required; rescale_factor is optional. Throws qvl::Error naming the file and the field.
PreprocessConfig preprocess_config_from_json(const std::string& model_dir);
// The same from JSON text; `where` names the source in error messages.
PreprocessConfig parse_preprocess_config(const std::string& json_text, const std::string& where);
// preprocessor_config.json text that parses back to `config` (for models known only as parsed
// settings, e.g. a GGUF pair that `qvl quantize` pre-packs).
std::string preprocess_config_json_text(const PreprocessConfig& config);

// Replaces the pixel bounds by an image-token budget: min_tokens * pixels_per_token() ..
// max_tokens * pixels_per_token(). Throws unless 0 < min_tokens <= max_tokens <= 2^24.
PreprocessConfig with_token_budget(PreprocessConfig config, int64_t min_tokens, int64_t max_tokens);

}  // namespace qvl
