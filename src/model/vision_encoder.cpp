#include "model/vision_encoder.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/aligned_buffer.h"
#include "base/error.h"
#include "base/stage_profile.h"
#include "base/thread_pool.h"
#include "model/vision_positions.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/packed_matrix.h"
#include "ops/rope.h"

namespace qvl {
namespace {

// Runs fn(begin, end) over [0, n) token rows on the global pool (the per-token work of the tower
// is small per row, so rows go in runs of at least 16).
template <typename Fn>
void for_token_rows(int64_t n, Fn&& fn) {
  ThreadPool::global().parallel_for(
      static_cast<size_t>(n),
      [&](size_t b, size_t e) { fn(static_cast<int64_t>(b), static_cast<int64_t>(e)); }, 16);
}

// x[r] += y[r] for token rows of `width` floats, on the pool.
void add_rows(float* x, const float* y, int64_t n, int64_t width) {
  for_token_rows(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b * width; i < e * width; ++i) x[i] += y[i];
  });
}

// Row chunks of the projections whose outputs are wide (qkv: 3 x hidden, MLP: intermediate):
// only a chunk's worth is held at once (a 1024x768 image would otherwise hold ~160 MB of
// activations). Equal chunks of at least 16 rows (or all n), so every row takes the same GEMM
// path and gets the same bits as in one product of all rows.
struct RowChunks {
  int64_t n, count;
  int64_t begin(int64_t i) const { return i * n / count; }  // chunks differ by at most a row
  int64_t max_rows() const { return (n + count - 1) / count; }
};

RowChunks row_chunks(int64_t n, int64_t target) {
  const int64_t count = std::clamp<int64_t>((n + target - 1) / std::max<int64_t>(target, 1), 1,
                                            std::max<int64_t>(n / 16, 1));
  return {n, count};
}

}  // namespace

// Uninitialised on purpose: every buffer is written in full before it is read, and zeroing (or
// re-allocating per block, which faults the pages in again) cost single-threaded time per block.
struct VisionEncoder::Workspace {
  Workspace(int64_t n, int64_t hid, int64_t intermediate, int64_t row_chunk)
      : chunks(row_chunks(n, row_chunk)),
        normed(static_cast<size_t>(n * hid)),
        q(static_cast<size_t>(n * hid)),
        k(static_cast<size_t>(n * hid)),
        v(static_cast<size_t>(n * hid)),
        qkv(static_cast<size_t>(chunks.max_rows() * 3 * hid)),
        mid(static_cast<size_t>(chunks.max_rows() * intermediate)),
        out(static_cast<size_t>(chunks.max_rows() * hid)) {}
  RowChunks chunks;
  // normed: a layer norm's output, then the attention's; q: after attention, the projection's.
  AlignedBuffer<float> normed, q, k, v;
  AlignedBuffer<float> qkv, mid, out;  // one row chunk
};

VisionEncoder::VisionEncoder(const VisionConfig& config, const VisionWeights& weights,
                             int64_t row_chunk)
    : config_(config), w_(weights), row_chunk_(row_chunk) {}

void VisionEncoder::block(const VisionBlockWeights& w, int64_t n, const float* cos,
                          const float* sin, Workspace& ws, std::vector<float>& x,
                          const std::function<void()>& between) const {
  const int64_t hid = config_.hidden_size, heads = config_.num_heads, hd = hid / heads;
  ops::layer_norm(x.data(), w.norm1.weight.data(), w.norm1.bias.data(), config_.layer_norm_eps, n,
                  hid, ws.normed.data());
  // qkv rows are laid out (3, heads, head_dim).
  const RowChunks& chunks = ws.chunks;
  for (int64_t c = 0; c < chunks.count; ++c) {
    const int64_t r0 = chunks.begin(c), rows = chunks.begin(c + 1) - r0;
    ops::matmul(ws.normed.data() + r0 * hid, rows, w.qkv.weight, w.qkv.bias.data(), ws.qkv.data());
    for_token_rows(rows, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t t = r0 + i;
        const float* row = ws.qkv.data() + i * 3 * hid;
        float* q = ws.q.data() + t * hid;
        float* k = ws.k.data() + t * hid;
        std::copy(row, row + hid, q);
        std::copy(row + hid, row + 2 * hid, k);
        std::copy(row + 2 * hid, row + 3 * hid, ws.v.data() + t * hid);
        ops::rope_rotate_half(q, heads, hd, cos + t * hd / 2, sin + t * hd / 2);
        ops::rope_rotate_half(k, heads, hd, cos + t * hd / 2, sin + t * hd / 2);
      }
    });
  }
  if (between) between();  // pauses every quarter block: the caller decides where to yield
  ops::AttentionShape shape{heads, heads, hd, 1.0f / std::sqrt(static_cast<float>(hd))};
  float* attn = ws.normed.data();
  ops::attention(ws.q.data(), n, ws.k.data(), ws.v.data(), n, shape, -1, attn);
  float* projected = ws.q.data();
  ops::matmul(attn, n, w.proj.weight, w.proj.bias.data(), projected);
  add_rows(x.data(), projected, n, hid);
  if (between) between();

  ops::layer_norm(x.data(), w.norm2.weight.data(), w.norm2.bias.data(), config_.layer_norm_eps, n,
                  hid, ws.normed.data());
  for (int64_t c = 0; c < chunks.count; ++c) {
    const int64_t r0 = chunks.begin(c), rows = chunks.begin(c + 1) - r0;
    ops::matmul(ws.normed.data() + r0 * hid, rows, w.fc1.weight, w.fc1.bias.data(), ws.mid.data());
    ops::gelu_tanh(ws.mid.data(), rows * config_.intermediate_size);
    // The pause falls half way through the MLP's rows, as it fell between its two products.
    if (between && r0 < n / 2 && r0 + rows >= n / 2) between();
    ops::matmul(ws.mid.data(), rows, w.fc2.weight, w.fc2.bias.data(), ws.out.data());
    add_rows(x.data() + r0 * hid, ws.out.data(), rows, hid);
  }
}

std::vector<float> VisionEncoder::merge(const MergerWeights& w, const std::vector<float>& x,
                                        int64_t n) const {
  const profile::StageScope stage(profile::Work::kMerger);
  const int64_t hid = config_.hidden_size;
  const int64_t group = config_.spatial_merge_size * config_.spatial_merge_size;
  const int64_t tokens = n / group, merged = hid * group;
  // Patches of one 2x2 window are consecutive, so concatenation is a reinterpretation. Merged
  // tokens go in row chunks (a quarter of the tower's patch chunk, >= 16 rows: the same bits as
  // one product), so a 1024x768 image's mergers hold ~8 MB of norm and fc1 output instead of
  // ~25 MB while the tower's activations are alive.
  const RowChunks chunks = row_chunks(tokens, row_chunk_ / group);
  std::vector<float> normed(static_cast<size_t>(chunks.max_rows() * merged));
  std::vector<float> mid(normed.size()), out(tokens * config_.out_hidden_size);
  for (int64_t c = 0; c < chunks.count; ++c) {
    const int64_t r0 = chunks.begin(c), rows = chunks.begin(c + 1) - r0;
    const float* in = x.data() + r0 * merged;
    if (w.norm_after_concat) {
      ops::layer_norm(in, w.norm.weight.data(), w.norm.bias.data(), config_.layer_norm_eps, rows,
                      merged, normed.data());
    } else {
      ops::layer_norm(in, w.norm.weight.data(), w.norm.bias.data(), config_.layer_norm_eps,
                      rows * group, hid, normed.data());
    }
    ops::matmul(normed.data(), rows, w.fc1.weight, w.fc1.bias.data(), mid.data());
    ops::gelu_erf(mid.data(), rows * merged);
    ops::matmul(mid.data(), rows, w.fc2.weight, w.fc2.bias.data(),
                out.data() + r0 * config_.out_hidden_size);
  }
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

  // The input-sized buffers live only as long as they are needed (peak memory is the blocks').
  std::vector<float> x(n * hid);
  {
    // Frame 0 of each patch: columns are (channel, frame, y, x).
    std::vector<float> frame(n * still_cols);
    for_token_rows(n, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p)
        for (int64_t ch = 0; ch < config_.in_channels; ++ch)
          std::copy(pixels + p * in_cols + ch * tp * plane,
                    pixels + p * in_cols + ch * tp * plane + plane,
                    frame.data() + p * still_cols + ch * plane);
    });
    const profile::StageScope stage(profile::Work::kPatchEmbed);
    ops::matmul(frame.data(), n, w_.patch_embed, w_.patch_embed_bias.data(), x.data());
  }
  if (tap) tap("vision.patch_embeds", x.data(), n, hid);
  {
    std::vector<float> pos(n * hid);
    interpolate_position_embeddings(w_.pos_embed, gh, gw, m, pos.data());
    if (tap) tap("vision.pos_embeds", pos.data(), n, hid);
    add_rows(x.data(), pos.data(), n, hid);
  }

  std::vector<float> angles(n * hd / 2), cos(n * hd / 2), sin(n * hd / 2);
  vision_rotary_angles(gh, gw, m, hd, angles.data());
  if (tap) tap("vision.rot_pos_emb", angles.data(), n, hd / 2);
  for_token_rows(n, [&](int64_t b, int64_t e) {
    for (int64_t i = b * hd / 2; i < e * hd / 2; ++i) {
      cos[i] = std::cos(angles[i]);
      sin[i] = std::sin(angles[i]);
    }
  });

  VisionOutput out;
  out.tokens = n / (m * m);
  out.deepstack.resize(config_.deepstack_visual_indexes.size());
  Workspace ws(n, hid, config_.intermediate_size, row_chunk_);
  for (int64_t b = 0; b < config_.depth; ++b) {
    block(w_.blocks[b], n, cos.data(), sin.data(), ws, x, between_blocks);
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
