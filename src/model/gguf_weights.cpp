#include "model/gguf_weights.h"

#include <algorithm>
#include <map>

#include "base/error.h"
#include "base/thread_pool.h"
#include "base/timer.h"
#include "model/gguf_dequant.h"
#include "model/gguf_repack.h"

namespace qvl {
namespace {

const std::map<std::string, std::string>& text_layer_names() {
  static const std::map<std::string, std::string> kNames = {
      {"attn_norm", "input_layernorm"},    {"attn_q", "self_attn.q_proj"},
      {"attn_k", "self_attn.k_proj"},      {"attn_v", "self_attn.v_proj"},
      {"attn_output", "self_attn.o_proj"}, {"attn_q_norm", "self_attn.q_norm"},
      {"attn_k_norm", "self_attn.k_norm"}, {"ffn_norm", "post_attention_layernorm"},
      {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"}};
  return kNames;
}

const std::map<std::string, std::string>& vision_block_names() {
  static const std::map<std::string, std::string> kNames = {{"ln1", "norm1"},
                                                            {"ln2", "norm2"},
                                                            {"attn_qkv", "attn.qkv"},
                                                            {"attn_out", "attn.proj"},
                                                            {"ffn_up", "mlp.linear_fc1"},
                                                            {"ffn_down", "mlp.linear_fc2"}};
  return kNames;
}

// "<prefix>N.<part>.<weight|bias>" -> {N, part, suffix}; false if the name has another form.
bool split_numbered(const std::string& name, const std::string& prefix, int64_t* n,
                    std::string* part, std::string* suffix) {
  if (name.rfind(prefix, 0) != 0) return false;
  size_t i = prefix.size(), digits = 0;
  int64_t v = 0;
  while (i < name.size() && name[i] >= '0' && name[i] <= '9' && digits < 6) {
    v = v * 10 + (name[i] - '0');
    ++i;
    ++digits;
  }
  if (digits == 0 || i >= name.size() || name[i] != '.') return false;
  const size_t last = name.rfind('.');
  if (last <= i) return false;
  *n = v;
  *part = name.substr(i + 1, last - i - 1);
  *suffix = name.substr(last + 1);
  return *suffix == "weight" || *suffix == "bias";
}

std::string map_text(const std::string& g) {
  const std::string p = "model.language_model.";
  if (g == "token_embd.weight") return p + "embed_tokens.weight";
  if (g == "output_norm.weight") return p + "norm.weight";
  if (g == "output.weight") return "lm_head.weight";
  int64_t n = 0;
  std::string part, suffix;
  if (!split_numbered(g, "blk.", &n, &part, &suffix)) return "";
  const auto it = text_layer_names().find(part);
  if (it == text_layer_names().end()) return "";
  return p + "layers." + std::to_string(n) + "." + it->second + "." + suffix;
}

std::string map_vision(const std::string& g, const std::vector<int64_t>& deepstack) {
  const std::string p = "model.visual.";
  if (g == "v.patch_embd.bias") return p + "patch_embed.proj.bias";
  if (g == "v.position_embd.weight") return p + "pos_embed.weight";
  for (const char* s : {"weight", "bias"}) {
    const std::string suffix = std::string(".") + s;
    if (g == "v.post_ln" + suffix) return p + "merger.norm" + suffix;
    if (g == "mm.0" + suffix) return p + "merger.linear_fc1" + suffix;
    if (g == "mm.2" + suffix) return p + "merger.linear_fc2" + suffix;
  }
  int64_t n = 0;
  std::string part, suffix;
  if (split_numbered(g, "v.blk.", &n, &part, &suffix)) {
    const auto it = vision_block_names().find(part);
    if (it == vision_block_names().end()) return "";
    return p + "blocks." + std::to_string(n) + "." + it->second + "." + suffix;
  }
  if (split_numbered(g, "v.deepstack.", &n, &part, &suffix)) {
    const auto it = std::find(deepstack.begin(), deepstack.end(), n);
    if (it == deepstack.end()) return "";
    static const std::map<std::string, std::string> kParts = {
        {"norm", "norm"}, {"fc1", "linear_fc1"}, {"fc2", "linear_fc2"}};
    const auto part_it = kParts.find(part);
    if (part_it == kParts.end()) return "";
    return p + "deepstack_merger_list." + std::to_string(it - deepstack.begin()) + "." +
           part_it->second + "." + suffix;
  }
  return "";
}

// Owns the pair and every converted copy for the life of the store.
struct Holder {
  std::shared_ptr<const GgufPair> pair;
  std::vector<std::vector<float>> copies;
  std::vector<AlignedBuffer<uint8_t>> packed;
};

// The type the model runs a matrix in (see load_text_weights and load_vision_weights): decoder
// projections, vision blocks' and mergers' linears; kExact for everything else.
ops::QuantType packing_of(const std::string& hf, const GgufPacking& packing) {
  const auto ends_with = [&](const std::string& tail) {
    return hf.size() >= tail.size() && hf.compare(hf.size() - tail.size(), tail.size(), tail) == 0;
  };
  if (hf.rfind("model.language_model.layers.", 0) == 0 && ends_with("_proj.weight")) {
    return packing.text;
  }
  if (hf.rfind("model.visual.", 0) == 0 && ends_with(".weight") &&
      (hf.find(".attn.") != std::string::npos || hf.find(".linear_fc") != std::string::npos)) {
    return packing.vision;
  }
  return ops::QuantType::kExact;
}

struct PackedDeclaration {
  std::string name;
  ops::QuantType type;
  int64_t rows, cols;
};

std::string where(const GgufTensor& t, const GgufFile& f) {
  return "tensor '" + t.name + "' in '" + f.path() + "'";
}

TensorView view_of(const GgufTensor& t, const GgufFile& f, const std::string& name, Holder& holder,
                   GgufLoadStats& stats, const GgufPacking& packing,
                   std::vector<PackedDeclaration>& declarations) {
  TensorView v;
  v.name = name;
  v.file = f.path();
  v.shape = t.torch_shape();
  const bool plain =
      t.type == GgmlType::kF32 || t.type == GgmlType::kF16 || t.type == GgmlType::kBF16;
  const ops::QuantType target = packing_of(name, packing);
  // As packed_weight will ask: packed types need whole blocks of 32 columns.
  if ((!plain || packing.pack_plain) && target != ops::QuantType::kExact && t.dims.size() == 2 &&
      t.dims[0] % ops::kBlockCols == 0 && gguf_can_dequantize(t.type)) {
    const Timer timer;
    std::optional<AlignedBuffer<uint8_t>> bytes;
    if (t.type == GgmlType::kQ8_0 && target == ops::QuantType::kQ8Strips) {
      bytes = repack_q8_0_as_strips(t);
      if (bytes) ++stats.repacked;
    }
    if (!bytes) {
      bytes = pack_gguf_matrix(t, target);
      ++stats.packed;
    }
    AlignedBuffer<uint8_t>& b = holder.packed.emplace_back(std::move(*bytes));
    stats.dequantize_ms += timer.millis();
    stats.copied_bytes += static_cast<int64_t>(b.size());
    declarations.push_back({name, target, v.shape[0], v.shape[1]});
    v.dtype = DType::kU8;
    v.shape = {static_cast<int64_t>(b.size())};
    v.data = b.data();
    v.nbytes = b.size();
    return v;
  }
  if (t.type == GgmlType::kF32 || t.type == GgmlType::kF16 || t.type == GgmlType::kBF16) {
    v.dtype = t.type == GgmlType::kF32   ? DType::kF32
              : t.type == GgmlType::kF16 ? DType::kF16
                                         : DType::kBF16;
    v.data = t.data;
    v.nbytes = t.nbytes;
    ++stats.in_place;
    return v;
  }
  if (!gguf_can_dequantize(t.type)) {
    fail(ErrorCode::kUnsupported, where(t, f) + " has the type " + ggml_type_name(t.type) +
                                      ", which qvl cannot read (it reads F32, F16, BF16, Q8_0, "
                                      "Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K and Q6_K)");
  }
  const Timer timer;
  std::vector<float>& out = holder.copies.emplace_back(static_cast<size_t>(t.numel()));
  // Rows are whole blocks: threads take ranges of rows.
  const int64_t row = t.dims[0];
  const uint64_t row_bytes = *ggml_row_bytes(t.type, row);
  ThreadPool::global().parallel_for(
      static_cast<size_t>(t.numel() / row),
      [&](size_t begin, size_t end) {
        gguf_dequantize(t.type, t.data + begin * row_bytes, static_cast<int64_t>(end - begin) * row,
                        out.data() + static_cast<int64_t>(begin) * row);
      },
      static_cast<size_t>(std::max<int64_t>(1, (1 << 16) / row)));
  stats.dequantize_ms += timer.millis();
  ++stats.dequantized;
  stats.copied_bytes += static_cast<int64_t>(out.size() * 4);
  v.dtype = DType::kF32;
  v.data = reinterpret_cast<const uint8_t*>(out.data());
  v.nbytes = out.size() * 4;
  return v;
}

// The Conv3d kernel [hidden, C, T, P, P] from its per-frame slices [hidden, C, P, P]
// ("v.patch_embd.weight", "v.patch_embd.weight.1", ...), as fp32.
TensorView patch_embedding(const GgufFile& f, Holder& holder, GgufLoadStats& stats) {
  std::vector<const GgufTensor*> slices = {&f.tensor("v.patch_embd.weight")};
  if (const GgufTensor* second = f.find_tensor("v.patch_embd.weight.1")) slices.push_back(second);
  const std::vector<int64_t> shape = slices[0]->torch_shape();
  if (shape.size() != 4) f.corrupt("v.patch_embd.weight is not a 4-D kernel slice");
  const int64_t slice = slices[0]->numel(), plane = shape[2] * shape[3];
  const int64_t frames = static_cast<int64_t>(slices.size()), rows = shape[0] * shape[1];
  std::vector<float>& out = holder.copies.emplace_back(static_cast<size_t>(slice * frames));
  std::vector<float> values(static_cast<size_t>(slice));
  for (int64_t t = 0; t < frames; ++t) {
    const GgufTensor& s = *slices[static_cast<size_t>(t)];
    if (s.torch_shape() != shape) f.corrupt("the patch embedding's frame slices differ in shape");
    if (!gguf_can_dequantize(s.type)) {
      fail(ErrorCode::kUnsupported,
           where(s, f) + " has the type " + ggml_type_name(s.type) + ", which qvl cannot read");
    }
    gguf_dequantize(s.type, s.data, slice, values.data());
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(values.data() + r * plane, plane, out.data() + (r * frames + t) * plane);
    }
  }
  ++stats.dequantized;
  stats.copied_bytes += static_cast<int64_t>(out.size() * 4);
  TensorView v;
  v.name = "model.visual.patch_embed.proj.weight";
  v.file = f.path();
  v.dtype = DType::kF32;
  v.shape = {shape[0], shape[1], frames, shape[2], shape[3]};
  v.data = reinterpret_cast<const uint8_t*>(out.data());
  v.nbytes = out.size() * 4;
  return v;
}

}  // namespace

std::string hf_tensor_name(const std::string& gguf_name, bool vision,
                           const std::vector<int64_t>& deepstack) {
  return vision ? map_vision(gguf_name, deepstack) : map_text(gguf_name);
}

WeightStore gguf_weight_store(std::shared_ptr<const GgufPair> pair, const ModelConfig& config,
                              GgufLoadStats* stats_out, const GgufPacking& packing) {
  auto holder = std::make_shared<Holder>();
  holder->pair = pair;
  GgufLoadStats stats;
  std::vector<TensorView> views;
  std::vector<PackedDeclaration> declarations;
  const std::vector<int64_t>& deepstack = config.vision.deepstack_visual_indexes;
  for (const bool vision : {false, true}) {
    const GgufFile& f = vision ? pair->vision : pair->text;
    for (const GgufTensor& t : f.tensors()) {
      if (vision && t.name.rfind("v.patch_embd.weight", 0) == 0) continue;  // below
      const std::string name = hf_tensor_name(t.name, vision, deepstack);
      if (name.empty()) {
        ++stats.ignored;
        continue;
      }
      views.push_back(view_of(t, f, name, *holder, stats, packing, declarations));
    }
  }
  views.push_back(patch_embedding(pair->vision, *holder, stats));
  if (stats_out) *stats_out = stats;
  WeightStore store = WeightStore::from_views(std::move(views), holder,
                                              pair->text.path() + " + " + pair->vision.path());
  for (const PackedDeclaration& d : declarations) {
    store.declare_packed(d.name, d.type, d.rows, d.cols);
  }
  return store;
}

}  // namespace qvl
