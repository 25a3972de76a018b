#include "model/fused_experts.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/thread_pool.h"

namespace qvl {

namespace {

std::string experts_prefix(int64_t layer) {
  return "model.language_model.layers." + std::to_string(layer) + ".mlp.experts.";
}

}  // namespace

std::optional<SplitExperts> split_fused_layer(const TextConfig& c, const WeightStore& store,
                                              int64_t layer) {
  const int64_t experts = c.num_experts, h = c.hidden_size, ff = c.moe_intermediate_size;
  const std::string p = experts_prefix(layer);
  if (!c.sparse_layer(layer) || !store.has(p + "gate_up_proj")) return std::nullopt;
  const TensorView& gate_up = store.get(p + "gate_up_proj");
  const TensorView& down = store.get(p + "down_proj");
  gate_up.expect_shape({experts, h, 2 * ff});
  down.expect_shape({experts, ff, h});
  if (down.dtype != gate_up.dtype ||
      (gate_up.dtype != DType::kBF16 && gate_up.dtype != DType::kF16 &&
       gate_up.dtype != DType::kF32)) {
    fail(ErrorCode::kCorrupt, "the experts of layer " + std::to_string(layer) + " in '" +
                                  gate_up.file + "' are " + dtype_name(gate_up.dtype) + " and " +
                                  dtype_name(down.dtype) + "; expected bf16, f16 or f32");
  }
  const size_t es = dtype_size(gate_up.dtype), matrix = static_cast<size_t>(ff * h) * es;
  auto bytes = std::make_shared<std::vector<uint8_t>>(3 * matrix * static_cast<size_t>(experts));
  std::vector<TensorView> views;
  ThreadPool::global().parallel_for(static_cast<size_t>(experts), [&](size_t b, size_t end) {
    for (auto e = static_cast<int64_t>(b); e < static_cast<int64_t>(end); ++e) {
      uint8_t* gate = bytes->data() + 3 * matrix * e;
      uint8_t* up = gate + matrix;
      uint8_t* dn = up + matrix;
      const uint8_t* gu = gate_up.data + static_cast<size_t>(e * h * 2 * ff) * es;
      const uint8_t* d = down.data + static_cast<size_t>(e * ff * h) * es;
      for (int64_t r = 0; r < h; ++r) {
        for (int64_t f = 0; f < ff; ++f) {
          std::memcpy(gate + (f * h + r) * es, gu + (r * 2 * ff + f) * es, es);
          std::memcpy(up + (f * h + r) * es, gu + (r * 2 * ff + ff + f) * es, es);
          std::memcpy(dn + (r * ff + f) * es, d + (f * h + r) * es, es);
        }
      }
    }
  });
  for (int64_t e = 0; e < experts; ++e) {
    const uint8_t* base = bytes->data() + 3 * matrix * e;
    const std::string x = p + std::to_string(e) + ".";
    views.push_back({x + "gate_proj.weight", gate_up.file, gate_up.dtype, {ff, h}, base, matrix});
    views.push_back(
        {x + "up_proj.weight", gate_up.file, gate_up.dtype, {ff, h}, base + matrix, matrix});
    views.push_back(
        {x + "down_proj.weight", down.file, down.dtype, {h, ff}, base + 2 * matrix, matrix});
  }
  return SplitExperts{std::move(views), std::move(bytes)};
}

void split_fused_experts(const TextConfig& c, WeightStore& store) {
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    std::optional<SplitExperts> split = split_fused_layer(c, store, layer);
    if (!split) continue;
    const std::string p = experts_prefix(layer);
    store.replace_with_views({p + "gate_up_proj", p + "down_proj"}, std::move(split->views),
                             std::move(split->bytes));
  }
}

}  // namespace qvl
