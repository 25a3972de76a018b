#include "model/fused_experts.h"

#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/mapped_file.h"
#include "base/thread_pool.h"

namespace qvl {

namespace {

std::string experts_prefix(int64_t layer) {
  return "model.language_model.layers." + std::to_string(layer) + ".mlp.experts.";
}

// A sparse layer's fused expert tensors, checked against the config.
struct Fused {
  const TensorView* gate_up;
  const TensorView* down;
  int64_t hidden, ff;
  size_t element;
  size_t matrix_bytes() const { return static_cast<size_t>(ff * hidden) * element; }
};

std::optional<Fused> fused_experts(const TextConfig& c, const WeightStore& store, int64_t layer) {
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
  return Fused{&gate_up, &down, h, ff, dtype_size(gate_up.dtype)};
}

enum class Part { kGate, kUp, kDown };

// Expert e's `part` as an [out, in] matrix: gate and up [ff, hidden] are columns of gate_up[e]
// (x * W layout), down [hidden, ff] is down[e] transposed.
void copy_expert_matrix(const Fused& f, int64_t e, Part part, uint8_t* out) {
  const size_t es = f.element;
  const int64_t h = f.hidden, ff = f.ff;
  if (part == Part::kDown) {
    const uint8_t* d = f.down->data + static_cast<size_t>(e * ff * h) * es;
    for (int64_t r = 0; r < h; ++r) {
      for (int64_t c = 0; c < ff; ++c)
        std::memcpy(out + (r * ff + c) * es, d + (c * h + r) * es, es);
    }
    return;
  }
  const int64_t first = part == Part::kGate ? 0 : ff;
  const uint8_t* gu = f.gate_up->data + static_cast<size_t>(e * h * 2 * ff) * es;
  for (int64_t r = 0; r < ff; ++r) {
    for (int64_t c = 0; c < h; ++c) {
      std::memcpy(out + (r * h + c) * es, gu + (c * 2 * ff + first + r) * es, es);
    }
  }
}

const char* part_name(Part part) {
  return part == Part::kGate ? "gate_proj.weight"
         : part == Part::kUp ? "up_proj.weight"
                             : "down_proj.weight";
}

// The per-expert views of a layer over `base`, matrix after matrix at `stride` bytes.
std::vector<TensorView> expert_views(const Fused& f, const std::string& prefix, int64_t experts,
                                     const uint8_t* base, size_t stride) {
  std::vector<TensorView> views;
  for (int64_t e = 0; e < experts; ++e) {
    for (Part part : {Part::kGate, Part::kUp, Part::kDown}) {
      const std::vector<int64_t> shape = part == Part::kDown ? std::vector<int64_t>{f.hidden, f.ff}
                                                             : std::vector<int64_t>{f.ff, f.hidden};
      views.push_back({prefix + std::to_string(e) + "." + part_name(part), f.gate_up->file,
                       f.gate_up->dtype, shape, base, f.matrix_bytes()});
      base += stride;
    }
  }
  return views;
}

}  // namespace

std::optional<SplitExperts> split_fused_layer(const TextConfig& c, const WeightStore& store,
                                              int64_t layer) {
  const std::optional<Fused> f = fused_experts(c, store, layer);
  if (!f) return std::nullopt;
  const int64_t experts = c.num_experts;
  const size_t matrix = f->matrix_bytes();
  auto bytes = std::make_shared<std::vector<uint8_t>>(3 * matrix * static_cast<size_t>(experts));
  ThreadPool::global().parallel_for(static_cast<size_t>(3 * experts), [&](size_t b, size_t end) {
    for (size_t i = b; i < end; ++i) {
      copy_expert_matrix(*f, static_cast<int64_t>(i / 3), static_cast<Part>(i % 3),
                         bytes->data() + i * matrix);
    }
  });
  std::vector<TensorView> views =
      expert_views(*f, experts_prefix(layer), experts, bytes->data(), matrix);
  return SplitExperts{std::move(views), std::move(bytes)};
}

std::map<std::string, std::function<void()>> split_fused_experts_lazily(const TextConfig& c,
                                                                        WeightStore& store) {
  std::map<std::string, std::function<void()>> fills;
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  for (int64_t layer = 0; layer < c.num_layers; ++layer) {
    const std::optional<Fused> f = fused_experts(c, store, layer);
    if (!f) continue;
    // Each matrix on pages of its own, so that releasing one after packing frees it whole.
    const size_t stride = (f->matrix_bytes() + page - 1) / page * page;
    const std::shared_ptr<uint8_t> memory =
        reserve_unbacked_memory(3 * stride * static_cast<size_t>(c.num_experts));
    const std::string p = experts_prefix(layer);
    std::vector<TensorView> views = expert_views(*f, p, c.num_experts, memory.get(), stride);
    for (size_t i = 0; i < views.size(); ++i) {
      const auto e = static_cast<int64_t>(i / 3);
      const auto part = static_cast<Part>(i % 3);
      uint8_t* out = memory.get() + i * stride;
      fills[views[i].name] = [fused = *f, e, part, out] {
        copy_expert_matrix(fused, e, part, out);
      };
    }
    store.replace_with_views({p + "gate_up_proj", p + "down_proj"}, std::move(views), memory);
  }
  return fills;
}

}  // namespace qvl
