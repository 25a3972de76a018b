// Test helpers for model tests: a tiny model copy with an untied head, and running a prompt.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "base/half.h"
#include "model/config.h"
#include "model/safetensors.h"
#include "model/safetensors_writer.h"
#include "model/text_decoder.h"

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

// Prefills ids (text positions 0..n-1) into cache and returns the logits of the last position;
// leaves the final hidden states of every position in hidden [n, hidden_size].
inline std::vector<float> prefill_last_logits(TextDecoder& decoder, const ModelConfig& config,
                                              KVCache& cache, const std::vector<int64_t>& ids,
                                              std::vector<float>& hidden) {
  const int64_t n = static_cast<int64_t>(ids.size()), h = config.text.hidden_size;
  std::vector<int64_t> pos(static_cast<size_t>(3 * n));
  for (int64_t d = 0; d < 3; ++d) {
    for (int64_t i = 0; i < n; ++i) pos[static_cast<size_t>(d * n + i)] = i;
  }
  std::vector<float> x(static_cast<size_t>(n * h)), logits(config.text.vocab_size);
  hidden.resize(static_cast<size_t>(n * h));
  decoder.embed(ids.data(), n, x.data());
  decoder.forward(x.data(), n, pos.data(), cache, nullptr, hidden.data());
  decoder.logits(hidden.data() + (n - 1) * h, 1, logits.data());
  return logits;
}

}  // namespace qvl::testing
