#include "model/seeded_weights.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "base/content_hash.h"
#include "base/error.h"
#include "base/half.h"
#include "base/mapped_file.h"

namespace qvl {
namespace {

constexpr const char* kSpecFormat = "qvl seeded weights 1";

[[noreturn]] void bad_spec(const std::string& what) {
  fail(ErrorCode::kCorrupt, "seeded weights spec: " + what);
}

SeededTensorRule parse_rule(const nlohmann::json& t) {
  SeededTensorRule r;
  r.name = t.at("name").get<std::string>();
  if (t.at("dtype").get<std::string>() != "BF16") {
    fail(ErrorCode::kUnsupported, "seeded weights spec: tensor '" + r.name + "' is not BF16");
  }
  r.shape = t.at("shape").get<std::vector<int64_t>>();
  if (r.shape.empty() ||
      std::any_of(r.shape.begin(), r.shape.end(), [](int64_t d) { return d <= 0; })) {
    bad_spec("tensor '" + r.name + "' has an empty or non-positive shape");
  }
  r.base = t.at("base").get<float>();
  r.amplitude = t.at("amplitude").get<int64_t>();
  r.scale_log2 = t.at("scale_log2").get<int>();
  // Small integers times a power of two that float32 holds without rounding or underflow.
  if (r.amplitude < 0 || r.amplitude > (1 << 20) || r.scale_log2 < -100 || r.scale_log2 > 100) {
    bad_spec("tensor '" + r.name + "' has an amplitude or scale outside the format's range");
  }
  if (t.contains("nonzero_rows")) {
    r.some_rows_zero = true;
    int64_t previous_end = 0;
    for (const auto& range : t.at("nonzero_rows")) {
      const auto begin = range.at(0).get<int64_t>(), end = range.at(1).get<int64_t>();
      if (begin < previous_end || end <= begin || end > r.shape[0]) {
        bad_spec("tensor '" + r.name + "' has unsorted or out-of-range nonzero_rows");
      }
      r.nonzero_rows.emplace_back(begin, end);
      previous_end = end;
    }
  }
  return r;
}

std::string hex(const Digest256& d) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

}  // namespace

SeededWeightsSpec parse_seeded_weights_spec(const std::string& json_text) {
  SeededWeightsSpec spec;
  try {
    const nlohmann::json j = nlohmann::json::parse(json_text);
    if (j.at("format").get<std::string>() != kSpecFormat) {
      fail(ErrorCode::kUnsupported,
           "seeded weights spec: format is not '" + std::string(kSpecFormat) + "'");
    }
    spec.seed = j.at("seed").get<uint64_t>();
    spec.bytes = j.at("bytes").get<uint64_t>();
    spec.sha256 = j.at("sha256").get<std::string>();
    const auto& metadata = j.at("metadata");
    if (metadata.size() != 1 || !metadata.contains("format")) {
      fail(ErrorCode::kUnsupported, "seeded weights spec: metadata other than 'format'");
    }
    spec.format_metadata = metadata.at("format").get<std::string>();
    for (const auto& t : j.at("tensors")) spec.tensors.push_back(parse_rule(t));
  } catch (const nlohmann::json::exception& e) {
    bad_spec(e.what());
  }
  return spec;
}

uint64_t fnv1a64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : text) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

uint64_t splitmix64_at(uint64_t state, uint64_t index) {
  uint64_t z = state + (index + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

float seeded_value(const SeededTensorRule& rule, uint64_t stream_state, uint64_t index) {
  const uint64_t span = 2 * static_cast<uint64_t>(rule.amplitude) + 1;
  const int64_t k =
      static_cast<int64_t>(splitmix64_at(stream_state, index) % span) - rule.amplitude;
  // k * 2^e is exact; the one rounding (if any) is the float32 addition, as in numpy.
  return rule.base + static_cast<float>(k) * std::ldexp(1.0f, rule.scale_log2);
}

std::vector<TensorSpec> seeded_tensor_specs(const SeededWeightsSpec& spec) {
  std::vector<TensorSpec> out;
  out.reserve(spec.tensors.size());
  for (const SeededTensorRule& rule : spec.tensors) {
    int64_t row_size = 1;
    for (size_t d = 1; d < rule.shape.size(); ++d) row_size *= rule.shape[d];
    const uint64_t state = fnv1a64(rule.name) ^ spec.seed;
    TensorSpec t{rule.name, DType::kBF16, rule.shape, {}};
    t.fill = [rule, row_size, state](int64_t offset, int64_t count, uint8_t* bytes) {
      auto* dst = reinterpret_cast<uint16_t*>(bytes);
      // Range r is the first whose end lies past the element's row: rows arrive in order.
      size_t r = 0;
      for (int64_t i = 0; i < count; ++i) {
        const int64_t element = offset + i;
        bool keep = !rule.some_rows_zero;
        if (!keep) {
          const int64_t row = element / row_size;
          while (r < rule.nonzero_rows.size() && rule.nonzero_rows[r].second <= row) ++r;
          keep = r < rule.nonzero_rows.size() && rule.nonzero_rows[r].first <= row;
        }
        dst[i] = keep ? f32_to_bf16(seeded_value(rule, state, static_cast<uint64_t>(element))) : 0;
      }
    };
    out.push_back(std::move(t));
  }
  return out;
}

void write_seeded_model(const SeededWeightsSpec& spec, const std::string& path) {
  SafeTensorsWriteOptions options;
  options.metadata["format"] = spec.format_metadata;
  write_safetensors(path, seeded_tensor_specs(spec), options);
  std::string problem;
  {
    const MappedFile file(path);
    if (file.size() != spec.bytes) {
      problem = std::to_string(file.size()) + " bytes, the spec says " + std::to_string(spec.bytes);
    } else if (const std::string digest = hex(sha256(file.data(), file.size()));
               digest != spec.sha256) {
      problem = "sha256 " + digest + ", the spec says " + spec.sha256;
    }
  }
  if (!problem.empty()) {
    std::remove(path.c_str());
    fail(ErrorCode::kCorrupt, "regenerated '" + path + "' differs from its spec: " + problem);
  }
}

}  // namespace qvl
