#include "model/vision_encoder.h"

#include <cmath>
#include <string>

#include "base/error.h"
#include "base/stage_profile.h"
#include "model/vision_positions.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/packed_matrix.h"
#include "ops/rope.h"

namespace qvl {
VisionEncoder::VisionEncoder(const VisionConfig& config, const VisionWeights& weights)
    : config_(config), w_(weights) {}

void VisionEncoder::block(const VisionBlockWeights& w, int64_t n, const float* cos,
                          const float* sin, std::vector<float>& x,
                          const std::function<void()>& between) const {
  const int64_t hid = config_.hidden_size, heads = config_.num_heads, hd = hid / heads;
  std::vector<float> normed(n * hid), qkv(n * 3 * hid), q(n * hid), k(n * hid), v(n * hid);
  ops::layer_norm(x.data(), w.norm1.weight.data(), w.norm1.bias.data(), config_.layer_norm_eps, n,
                  hid, normed.data());
  ops::matmul(normed.data(), n, w.qkv.weight, w.qkv.bias.data(), qkv.data());
  // qkv rows are laid out (3, heads, head_dim).
  for (int64_t t = 0; t < n; ++t) {
    const float* row = qkv.data() + t * 3 * hid;
    std::copy(row, row + hid, q.data() + t * hid);
    std::copy(row + hid, row + 2 * hid, k.data() + t * hid);
    std::copy(row + 2 * hid, row + 3 * hid, v.data() + t * hid);
    ops::rope_rotate_half(q.data() + t * hid, heads, hd, cos + t * hd / 2, sin + t * hd / 2);
    ops::rope_rotate_half(k.data() + t * hid, heads, hd, cos + t * hd / 2, sin + t * hd / 2);
  }
  if (between) between();  // pauses every quarter block: the caller decides where to yield
  std::vector<float> attn(n * hid), out(n * hid);
  ops::AttentionShape shape{heads, heads, hd, 1.0f / std::sqrt(static_cast<float>(hd))};
  ops::attention(q.data(), n, k.data(), v.data(), n, shape, -1, attn.data());
  ops::matmul(attn.data(), n, w.proj.weight, w.proj.bias.data(), out.data());
  for (size_t i = 0; i < x.size(); ++i) x[i] += out[i];
  if (between) between();

  ops::layer_norm(x.data(), w.norm2.weight.data(), w.norm2.bias.data(), config_.layer_norm_eps, n,
                  hid, normed.data());
  std::vector<float> mid(n * config_.intermediate_size);
  ops::matmul(normed.data(), n, w.fc1.weight, w.fc1.bias.data(), mid.data());
  ops::gelu_tanh(mid.data(), static_cast<int64_t>(mid.size()));
  if (between) between();
  ops::matmul(mid.data(), n, w.fc2.weight, w.fc2.bias.data(), out.data());
  for (size_t i = 0; i < x.size(); ++i) x[i] += out[i];
}

std::vector<float> VisionEncoder::merge(const MergerWeights& w, const std::vector<float>& x,
                                        int64_t n) const {
  const profile::StageScope stage(profile::Work::kMerger);
  const int64_t hid = config_.hidden_size;
  const int64_t group = config_.spatial_merge_size * config_.spatial_merge_size;
  const int64_t tokens = n / group, merged = hid * group;
  // Patches of one 2x2 window are consecutive, so concatenation is a reinterpretation.
  std::vector<float> normed(x.size());
  if (w.norm_after_concat) {
    ops::layer_norm(x.data(), w.norm.weight.data(), w.norm.bias.data(), config_.layer_norm_eps,
                    tokens, merged, normed.data());
  } else {
    ops::layer_norm(x.data(), w.norm.weight.data(), w.norm.bias.data(), config_.layer_norm_eps, n,
                    hid, normed.data());
  }
  std::vector<float> mid(tokens * merged), out(tokens * config_.out_hidden_size);
  ops::matmul(normed.data(), tokens, w.fc1.weight, w.fc1.bias.data(), mid.data());
  ops::gelu_erf(mid.data(), static_cast<int64_t>(mid.size()));
  ops::matmul(mid.data(), tokens, w.fc2.weight, w.fc2.bias.data(), out.data());
  return out;
}

VisionOutput VisionEncoder::encode(const float* pixels, int64_t gh, int64_t gw,
                                   const TensorTap& tap,
                                   const std::function<void()>& between_blocks) const {
  const int64_t m = config_.spatial_merge_size;
  if (gh <= 0 || gw <= 0 || gh % m != 0 || gw % m != 0) {
    fail(ErrorCode::kInvalidArgument, "vision grid " + std::to_string(gh) + "x" +
                                          std::to_string(gw) + " is not a multiple of the merge");
  }
  const int64_t n = gh * gw, hid = config_.hidden_size, hd = hid / config_.num_heads;
  const int64_t plane = config_.patch_size * config_.patch_size;
  const int64_t tp = config_.temporal_patch_size, in_cols = config_.in_channels * tp * plane;
  const int64_t still_cols = config_.in_channels * plane;

  // Frame 0 of each patch: columns are (channel, frame, y, x).
  std::vector<float> frame(n * still_cols);
  for (int64_t p = 0; p < n; ++p)
    for (int64_t ch = 0; ch < config_.in_channels; ++ch)
      std::copy(pixels + p * in_cols + ch * tp * plane,
                pixels + p * in_cols + ch * tp * plane + plane,
                frame.data() + p * still_cols + ch * plane);
  std::vector<float> x(n * hid);
  {
    const profile::StageScope stage(profile::Work::kPatchEmbed);
    ops::matmul(frame.data(), n, w_.patch_embed, w_.patch_embed_bias.data(), x.data());
  }
  if (tap) tap("vision.patch_embeds", x.data(), n, hid);

  std::vector<float> pos(n * hid);
  interpolate_position_embeddings(w_.pos_embed, gh, gw, m, pos.data());
  if (tap) tap("vision.pos_embeds", pos.data(), n, hid);
  for (size_t i = 0; i < x.size(); ++i) x[i] += pos[i];

  std::vector<float> angles(n * hd / 2), cos(n * hd / 2), sin(n * hd / 2);
  vision_rotary_angles(gh, gw, m, hd, angles.data());
  if (tap) tap("vision.rot_pos_emb", angles.data(), n, hd / 2);
  for (size_t i = 0; i < angles.size(); ++i) {
    cos[i] = std::cos(angles[i]);
    sin[i] = std::sin(angles[i]);
  }

  VisionOutput out;
  out.tokens = n / (m * m);
  out.deepstack.resize(config_.deepstack_visual_indexes.size());
  for (int64_t b = 0; b < config_.depth; ++b) {
    block(w_.blocks[b], n, cos.data(), sin.data(), x, between_blocks);
    if (tap) tap("vision.block_out." + std::to_string(b), x.data(), n, hid);
    for (size_t k = 0; k < config_.deepstack_visual_indexes.size(); ++k) {
      if (config_.deepstack_visual_indexes[k] == b) {
        out.deepstack[k] = merge(w_.deepstack_mergers[k], x, n);
      }
    }
    if (between_blocks) between_blocks();
  }
  out.embeds = merge(w_.merger, x, n);
  return out;
}

}  // namespace qvl
