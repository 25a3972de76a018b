#include "image/preprocess.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/mapped_file.h"
#include "image/resize.h"
#include "image/smart_resize.h"

namespace qvl {
namespace {

using Json = nlohmann::json;

[[noreturn]] void bad_field(const std::string& where, const std::string& field,
                            const std::string& problem) {
  fail(ErrorCode::kInvalidArgument, where + ": field '" + field + "' " + problem);
}

// An integer-valued JSON number (12 or 12.0) within [1, limit].
int64_t positive_int(const Json& value, const std::string& where, const std::string& field,
                     int64_t limit) {
  if (!value.is_number()) bad_field(where, field, "must be a number");
  const double d = value.get<double>();
  if (!(d >= 1.0 && d <= static_cast<double>(limit)) || d != std::floor(d)) {
    bad_field(where, field, "must be an integer in 1.." + std::to_string(limit));
  }
  return value.is_number_float() ? static_cast<int64_t>(d) : value.get<int64_t>();
}

std::array<float, 3> three_floats(const Json& root, const std::string& where,
                                  const std::string& field, bool nonzero) {
  if (!root.contains(field)) bad_field(where, field, "is missing");
  const Json& value = root.at(field);
  std::array<float, 3> out{};
  if (value.is_number()) {  // transformers also accepts one value for all channels
    out.fill(value.get<float>());
  } else if (value.is_array() && value.size() == 3) {
    for (size_t c = 0; c < 3; ++c) {
      if (!value[c].is_number()) bad_field(where, field, "must hold numbers");
      out[c] = static_cast<float>(value[c].get<double>());
    }
  } else {
    bad_field(where, field, "must be a number or a list of 3 numbers");
  }
  for (float v : out) {
    if (!std::isfinite(v) || (nonzero && v == 0.0f)) {
      bad_field(where, field, nonzero ? "must be finite and non-zero" : "must be finite");
    }
  }
  return out;
}

constexpr int64_t kMaxPixelsLimit = int64_t{1} << 34;

}  // namespace

void validate_preprocess_config(const PreprocessConfig& config) {
  validate_patch_layout(config.layout());
  if (config.min_pixels < 0 || config.max_pixels <= 0 || config.min_pixels > config.max_pixels ||
      config.max_pixels > kMaxPixelsLimit) {
    fail(ErrorCode::kInvalidArgument,
         "preprocess: pixel bounds must satisfy 0 <= min_pixels <= max_pixels <= 2^34, got " +
             std::to_string(config.min_pixels) + ".." + std::to_string(config.max_pixels));
  }
  for (int c = 0; c < 3; ++c) {
    if (!std::isfinite(config.mean[c]) || !std::isfinite(config.std[c]) || config.std[c] == 0) {
      fail(ErrorCode::kInvalidArgument, "preprocess: image mean/std must be finite, std non-zero");
    }
  }
  if (!(config.rescale_factor > 0) || !std::isfinite(config.rescale_factor)) {
    fail(ErrorCode::kInvalidArgument, "preprocess: rescale_factor must be positive");
  }
}

PreprocessedImage preprocess_image(const RgbImage& image, const PreprocessConfig& config) {
  validate_preprocess_config(config);
  const ImageSize target = smart_resize(image.height, image.width, config.factor(),
                                        config.min_pixels, config.max_pixels);
  PreprocessedImage out;
  // Pillow returns a copy when the size is unchanged; resize_bicubic does the same.
  out.resized = resize_bicubic(image, target.width, target.height);
  out.grid_t = 1;
  out.grid_h = target.height / config.patch_size;
  out.grid_w = target.width / config.patch_size;
  out.n_patches = int64_t{out.grid_t} * out.grid_h * out.grid_w;
  out.patch_dim = static_cast<int64_t>(config.layout().patch_dim());
  out.n_tokens = out.n_patches / (int64_t{config.merge_size} * config.merge_size);
  out.pixel_values.resize(static_cast<size_t>(out.n_patches * out.patch_dim));
  normalize_and_patchify(out.resized, config.layout(), config.normalization(),
                         out.pixel_values.data());
  return out;
}

PreprocessConfig parse_preprocess_config(const std::string& json_text, const std::string& where) {
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::exception& e) {
    fail(ErrorCode::kCorrupt, where + ": invalid JSON: " + e.what());
  }
  if (!root.is_object()) fail(ErrorCode::kCorrupt, where + ": expected a JSON object");
  auto required = [&](const std::string& field) -> const Json& {
    if (!root.contains(field)) bad_field(where, field, "is missing");
    return root.at(field);
  };
  PreprocessConfig config;
  config.patch_size =
      static_cast<int>(positive_int(required("patch_size"), where, "patch_size", 1024));
  config.temporal_patch_size = static_cast<int>(
      positive_int(required("temporal_patch_size"), where, "temporal_patch_size", 64));
  config.merge_size =
      static_cast<int>(positive_int(required("merge_size"), where, "merge_size", 64));
  config.mean = three_floats(root, where, "image_mean", false);
  config.std = three_floats(root, where, "image_std", true);
  if (root.contains("rescale_factor")) {
    const Json& r = root.at("rescale_factor");
    if (!r.is_number() || !(r.get<double>() > 0)) {
      bad_field(where, "rescale_factor", "must be a positive number");
    }
    config.rescale_factor = r.get<double>();
  }

  bool have_min = false, have_max = false;
  if (root.contains("size") && !root.at("size").is_null()) {
    const Json& size = root.at("size");
    if (!size.is_object() || !size.contains("shortest_edge") || !size.contains("longest_edge")) {
      bad_field(where, "size", "must contain 'shortest_edge' and 'longest_edge' (pixel counts)");
    }
    config.min_pixels =
        positive_int(size.at("shortest_edge"), where, "size.shortest_edge", kMaxPixelsLimit);
    config.max_pixels =
        positive_int(size.at("longest_edge"), where, "size.longest_edge", kMaxPixelsLimit);
    have_min = have_max = true;
  }
  if (root.contains("min_pixels") && !root.at("min_pixels").is_null()) {
    config.min_pixels = positive_int(root.at("min_pixels"), where, "min_pixels", kMaxPixelsLimit);
    have_min = true;
  }
  if (root.contains("max_pixels") && !root.at("max_pixels").is_null()) {
    config.max_pixels = positive_int(root.at("max_pixels"), where, "max_pixels", kMaxPixelsLimit);
    have_max = true;
  }
  if (!have_min || !have_max) {
    bad_field(where, have_min ? "max_pixels" : "min_pixels",
              "is missing (give size.shortest_edge/longest_edge or min_pixels/max_pixels)");
  }
  if (config.min_pixels > config.max_pixels) {
    bad_field(where, "min_pixels", "is larger than max_pixels");
  }
  validate_preprocess_config(config);
  return config;
}

std::string preprocess_config_json_text(const PreprocessConfig& c) {
  const nlohmann::ordered_json j = {
      {"patch_size", c.patch_size},
      {"temporal_patch_size", c.temporal_patch_size},
      {"merge_size", c.merge_size},
      {"image_mean", c.mean},
      {"image_std", c.std},
      {"rescale_factor", c.rescale_factor},
      {"size", {{"shortest_edge", c.min_pixels}, {"longest_edge", c.max_pixels}}}};
  return j.dump(2);
}

PreprocessConfig preprocess_config_from_json(const std::string& model_dir) {
  const std::string path = model_dir + "/preprocessor_config.json";
  return parse_preprocess_config(read_text_file(path), path);
}

PreprocessConfig with_token_budget(PreprocessConfig config, int64_t min_tokens,
                                   int64_t max_tokens) {
  constexpr int64_t kMaxTokens = int64_t{1} << 24;
  if (min_tokens <= 0 || max_tokens < min_tokens || max_tokens > kMaxTokens) {
    fail(ErrorCode::kInvalidArgument,
         "image token budget must satisfy 0 < min <= max <= " + std::to_string(kMaxTokens) +
             ", got " + std::to_string(min_tokens) + ".." + std::to_string(max_tokens));
  }
  config.min_pixels = min_tokens * config.pixels_per_token();
  config.max_pixels = max_tokens * config.pixels_per_token();
  validate_preprocess_config(config);
  return config;
}

}  // namespace qvl
