#include "model/vision_weights.h"

#include <algorithm>
#include <string>
#include <vector>

#include "model/weights_util.h"

namespace qvl {
namespace {

LinearWeights linear(const WeightStore& s, const std::string& name, int64_t out, int64_t in,
                     ops::QuantType type) {
  return {packed_weight(s, name + ".weight", out, in, type), vector_weight(s, name + ".bias", out)};
}

// The MLP's down-projection in a packed type even when its input width is not whole blocks of
// ops::kBlockCols: zero columns pad it to the next block, and the encoder pads the fc1 output
// rows it multiplies with zeros to match, so the products are those of the stored matrix. 8B and
// 32B need it (FFN 4304): with their 27 down-projections in exact fp32 math the blocks' products
// took 32 s of a 448x448 image, 4 s padded (8B q4, AVX-512, 2 cores).
LinearWeights down_projection(const WeightStore& s, const std::string& name, int64_t out,
                              int64_t in, ops::QuantType type) {
  if (type == ops::QuantType::kExact || packable_width(in)) return linear(s, name, out, in, type);
  const TensorView& t = s.get(name + ".weight");
  t.expect_shape({out, in});
  const std::vector<float> stored = t.to_f32();
  const int64_t padded = (in + ops::kBlockCols - 1) / ops::kBlockCols * ops::kBlockCols;
  std::vector<float> w(static_cast<size_t>(out * padded), 0.0f);
  for (int64_t r = 0; r < out; ++r) {
    std::copy(stored.begin() + r * in, stored.begin() + (r + 1) * in, w.begin() + r * padded);
  }
  return {ops::PackedMatrix::pack({ops::WeightType::kF32, w.data(), out, padded}, type),
          vector_weight(s, name + ".bias", out)};
}

LayerNormWeights layer_norm(const WeightStore& s, const std::string& name, int64_t n) {
  return {vector_weight(s, name + ".weight", n), vector_weight(s, name + ".bias", n)};
}

MergerWeights merger(const VisionConfig& c, const WeightStore& s, const std::string& name,
                     bool norm_after_concat, ops::QuantType type) {
  const int64_t merged = c.hidden_size * c.spatial_merge_size * c.spatial_merge_size;
  MergerWeights m;
  m.norm_after_concat = norm_after_concat;
  m.norm = layer_norm(s, name + ".norm", norm_after_concat ? merged : c.hidden_size);
  m.fc1 = linear(s, name + ".linear_fc1", merged, merged, type);
  m.fc2 = linear(s, name + ".linear_fc2", c.out_hidden_size, merged, type);
  return m;
}

}  // namespace

VisionWeights load_vision_weights(const VisionConfig& c, const WeightStore& s,
                                  ops::QuantType type) {
  return load_vision_weights(c, s, WeightTypes{type, type, type, type});
}

VisionWeights load_vision_weights(const VisionConfig& c, const WeightStore& s,
                                  const WeightTypes& types) {
  const ops::QuantType type = stored_type(types.vision);
  const std::string p = "model.visual.";
  VisionWeights w;
  const int64_t hid = c.hidden_size, ps = c.patch_size, tp = c.temporal_patch_size;
  const TensorView& conv = s.get(p + "patch_embed.proj.weight");
  conv.expect_shape({hid, c.in_channels, tp, ps, ps});
  const std::vector<float> kernel = conv.to_f32();
  const int64_t plane = ps * ps, still_cols = c.in_channels * plane;
  w.patch_embed_still.assign(static_cast<size_t>(hid * still_cols), 0.0f);
  for (int64_t o = 0; o < hid; ++o)
    for (int64_t ch = 0; ch < c.in_channels; ++ch)
      for (int64_t t = 0; t < tp; ++t)
        for (int64_t i = 0; i < plane; ++i)
          w.patch_embed_still[o * still_cols + ch * plane + i] +=
              kernel[((o * c.in_channels + ch) * tp + t) * plane + i];
  w.patch_embed =
      ops::PackedMatrix::pack({ops::WeightType::kF32, w.patch_embed_still.data(), hid, still_cols},
                              fitting_type(types.vision_patch, still_cols));
  // [hid, C, T, P, P] row-major is already [hid, C * T * P * P] in pixel_values column order.
  w.patch_embed_frames_f32 = kernel;
  const int64_t frame_cols = c.in_channels * tp * plane;
  w.patch_embed_frames = ops::PackedMatrix::pack(
      {ops::WeightType::kF32, w.patch_embed_frames_f32.data(), hid, frame_cols},
      fitting_type(types.vision_patch, frame_cols));
  w.patch_embed_bias = vector_weight(s, p + "patch_embed.proj.bias", hid);
  w.pos_embed = matrix_weight(s, p + "pos_embed.weight", c.num_position_embeddings, hid);
  for (int64_t b = 0; b < c.depth; ++b) {
    const std::string l = p + "blocks." + std::to_string(b) + ".";
    VisionBlockWeights bw;
    bw.norm1 = layer_norm(s, l + "norm1", hid);
    bw.norm2 = layer_norm(s, l + "norm2", hid);
    bw.qkv = linear(s, l + "attn.qkv", 3 * hid, hid, type);
    bw.proj = linear(s, l + "attn.proj", hid, hid, type);
    bw.fc1 = linear(s, l + "mlp.linear_fc1", c.intermediate_size, hid, type);
    bw.fc2 = down_projection(s, l + "mlp.linear_fc2", hid, c.intermediate_size, type);
    w.blocks.push_back(std::move(bw));
  }
  w.merger = merger(c, s, p + "merger", false, type);
  for (size_t k = 0; k < c.deepstack_visual_indexes.size(); ++k) {
    w.deepstack_mergers.push_back(
        merger(c, s, p + "deepstack_merger_list." + std::to_string(k), true, type));
  }
  return w;
}

}  // namespace qvl
