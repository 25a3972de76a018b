// Test helper: the tiny reference model's weights plus a separate lm_head.weight.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "base/half.h"
#include "model/safetensors.h"
#include "model/safetensors_writer.h"

namespace qvl::testing {

// Writes every tensor of the tiny model folder `tiny` to `path` and adds
// lm_head.weight = 2 * embed_tokens + offset (offset 0: exact in bf16).
inline void write_weights_with_untied_head(const std::string& tiny, const std::string& path,
                                           float offset) {
  const WeightStore src = WeightStore::open_folder(tiny);
  std::vector<TensorSpec> specs;
  for (const auto& name : src.names()) {
    const TensorView* t = &src.get(name);
    specs.push_back({name, t->dtype, t->shape, [t](int64_t off, int64_t n, uint8_t* out) {
                       const size_t es = dtype_size(t->dtype);
                       std::memcpy(out, t->data + off * es, n * es);
                     }});
  }
  const TensorView* embed = &src.get("model.language_model.embed_tokens.weight");
  specs.push_back({"lm_head.weight", DType::kBF16, embed->shape,
                   [embed, offset](int64_t off, int64_t n, uint8_t* out) {
                     const auto* in = reinterpret_cast<const uint16_t*>(embed->data) + off;
                     auto* o = reinterpret_cast<uint16_t*>(out);
                     for (int64_t i = 0; i < n; ++i) {
                       o[i] = f32_to_bf16(2 * bf16_to_f32(in[i]) + offset);
                     }
                   }});
  write_safetensors(path, specs);
}

}  // namespace qvl::testing
