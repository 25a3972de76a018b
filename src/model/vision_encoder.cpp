#include "model/vision_encoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "base/aligned_buffer.h"
#include "base/error.h"
#include "base/mapped_file.h"
#include "base/stage_profile.h"
#include "base/thread_pool.h"
#include "model/vision_positions.h"
#include "model/weight_matrices.h"
#include "ops/activation.h"
#include "ops/attention.h"
#include "ops/matmul.h"
#include "ops/norm.h"
#include "ops/packed_matrix.h"
#include "ops/rope.h"

namespace qvl {
namespace {

// The tower's products are computed once per image and never meet a decode step, so they take the
// fastest activation rounding the CPU offers (on AVX2 without VNNI: 7-bit x on q8 weights).
constexpr ops::ActivationPrecision kTowerPrecision = ops::ActivationPrecision::kFastest;

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

// Heads per attention call: the attention packs its keys and values per call (2 x patches x
// heads-in-call x head_dim floats), so fewer heads per call hold less. Each call still gets at
// least 8 tasks (64-row blocks x heads) per thread, so small images keep every thread busy. The
// heads are independent: the result does not depend on the grouping.
int64_t heads_per_attention_call(int64_t n, int64_t heads, int64_t requested) {
  if (requested > 0) return std::min(requested, heads);
  const auto threads = static_cast<int64_t>(ThreadPool::global().size());
  const int64_t row_blocks = (n + 63) / 64;
  int64_t g = 1;
  while (g < heads && (heads % g != 0 || g * row_blocks < 8 * threads)) ++g;
  return g;
}

// Uninitialised on purpose: every buffer is written in full before it is read, and zeroing (or
// re-allocating per block, which faults the pages in again) cost single-threaded time per block.
// q, k and v are stored per group of heads ([group][patch][heads in group * head_dim]), the
// layout one attention call over a group reads.
struct VisionEncoder::Workspace {
  Workspace(int64_t n, int64_t hid, int64_t intermediate, int64_t row_chunk, int64_t group_width)
      : chunks(row_chunks(n, row_chunk)),
        normed(static_cast<size_t>(n * hid)),
        q(static_cast<size_t>(n * hid)),
        k(static_cast<size_t>(n * hid)),
        v(static_cast<size_t>(n * hid)),
        chunk(static_cast<size_t>(chunks.max_rows() * std::max(3 * hid, intermediate + hid))),
        group_out(static_cast<size_t>(n * group_width)) {}
  RowChunks chunks;
  // normed: a layer norm's output, then the attention's; q: after attention, the projection's.
  AlignedBuffer<float> normed, q, k, v;
  // One row chunk: the qkv projection's output, later the MLP's (fc1 output, then fc2 output).
  AlignedBuffer<float> chunk;
  AlignedBuffer<float> group_out;  // one attention call's output, [patch][group_width]
};

VisionEncoder::VisionEncoder(const VisionConfig& config, const VisionWeights& weights,
                             int64_t row_chunk, int64_t attention_heads)
    : config_(config), w_(weights), row_chunk_(row_chunk), attention_heads_(attention_heads) {}

int64_t VisionEncoder::attention_heads_per_call(int64_t n) const {
  return heads_per_attention_call(n, config_.num_heads, attention_heads_);
}

void VisionEncoder::block(const VisionBlockWeights& w, int64_t n, const float* cos,
                          const float* sin, Workspace& ws, std::vector<float>& x,
                          const std::function<void()>& between) const {
  const int64_t hid = config_.hidden_size, heads = config_.num_heads, hd = hid / heads;
  const int64_t group = attention_heads_per_call(n), gw = group * hd;
  ops::layer_norm(x.data(), w.norm1.weight.data(), w.norm1.bias.data(), config_.layer_norm_eps, n,
                  hid, ws.normed.data());
  // qkv rows are laid out (3, heads, head_dim); q, k and v go to their head groups.
  const RowChunks& chunks = ws.chunks;
  for (int64_t c = 0; c < chunks.count; ++c) {
    const int64_t r0 = chunks.begin(c), rows = chunks.begin(c + 1) - r0;
    ops::matmul(ws.normed.data() + r0 * hid, rows, w.qkv.weight, w.qkv.bias.data(), ws.chunk.data(),
                kTowerPrecision);
    for_token_rows(rows, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const int64_t t = r0 + i;
        const float* row = ws.chunk.data() + i * 3 * hid;
        for (int64_t g0 = 0; g0 < heads; g0 += group) {
          const int64_t at = g0 * hd * n + t * gw;  // group g0 / group starts at g0 * hd * n
          float* q = ws.q.data() + at;
          float* k = ws.k.data() + at;
          std::copy(row + g0 * hd, row + g0 * hd + gw, q);
          std::copy(row + hid + g0 * hd, row + hid + g0 * hd + gw, k);
          std::copy(row + 2 * hid + g0 * hd, row + 2 * hid + g0 * hd + gw, ws.v.data() + at);
          ops::rope_rotate_half(q, group, hd, cos + t * hd / 2, sin + t * hd / 2);
          ops::rope_rotate_half(k, group, hd, cos + t * hd / 2, sin + t * hd / 2);
        }
      }
    });
  }
  if (between) between();  // pauses every quarter block: the caller decides where to yield
  ops::AttentionShape shape{group, group, hd, 1.0f / std::sqrt(static_cast<float>(hd))};
  // Fast weight types take bf16-rounded attention products as they take bf16-rounded GEMM inputs
  // (1.5x the speed on AVX-512 BF16; image-embedding cosine in `qvl quality`); exact stays fp32.
  shape.bf16_products = w.qkv.weight.type() != ops::QuantType::kExact;
  float* attn = ws.normed.data();
  for (int64_t g0 = 0; g0 < heads; g0 += group) {
    const int64_t at = g0 * hd * n;
    ops::attention(ws.q.data() + at, n, ws.k.data() + at, ws.v.data() + at, n, shape, -1,
                   ws.group_out.data());
    for_token_rows(n, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        std::copy(ws.group_out.data() + t * gw, ws.group_out.data() + (t + 1) * gw,
                  attn + t * hid + g0 * hd);
      }
    });
  }
  // The projection over row chunks too: the int8 GEMM's quantized copy of x is a chunk's.
  float* projected = ws.q.data();
  for (int64_t c = 0; c < chunks.count; ++c) {
    const int64_t r0 = chunks.begin(c), rows = chunks.begin(c + 1) - r0;
    ops::matmul(attn + r0 * hid, rows, w.proj.weight, w.proj.bias.data(), projected + r0 * hid,
                kTowerPrecision);
  }
  add_rows(x.data(), projected, n, hid);
  if (between) between();

  ops::layer_norm(x.data(), w.norm2.weight.data(), w.norm2.bias.data(), config_.layer_norm_eps, n,
                  hid, ws.normed.data());
  // fc2 may take zero-padded rows (see down_projection in vision_weights.cpp).
  const int64_t inter = config_.intermediate_size, padded = w.fc2.weight.cols();
  float* mid = ws.chunk.data();
  float* out = mid + chunks.max_rows() * padded;
  for (int64_t c = 0; c < chunks.count; ++c) {
    const int64_t r0 = chunks.begin(c), rows = chunks.begin(c + 1) - r0;
    ops::matmul(ws.normed.data() + r0 * hid, rows, w.fc1.weight, w.fc1.bias.data(), mid,
                kTowerPrecision);
    ops::gelu_tanh(mid, rows * inter);
    if (padded > inter) {
      // Last row first: each row moves to a later or equal place, over rows already moved.
      for (int64_t i = rows - 1; i >= 0; --i) {
        std::memmove(mid + i * padded, mid + i * inter, static_cast<size_t>(inter) * sizeof(float));
        std::fill(mid + i * padded + inter, mid + (i + 1) * padded, 0.0f);
      }
    }
    // The pause falls half way through the MLP's rows, as it fell between its two products.
    if (between && r0 < n / 2 && r0 + rows >= n / 2) between();
    ops::matmul(mid, rows, w.fc2.weight, w.fc2.bias.data(), out, kTowerPrecision);
    add_rows(x.data() + r0 * hid, out, rows, hid);
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
    ops::matmul(normed.data(), rows, w.fc1.weight, w.fc1.bias.data(), mid.data(), kTowerPrecision);
    ops::gelu_erf(mid.data(), rows * merged);
    ops::matmul(mid.data(), rows, w.fc2.weight, w.fc2.bias.data(),
                out.data() + r0 * config_.out_hidden_size, kTowerPrecision);
  }
  return out;
}

void VisionEncoder::check_grid(int64_t gh, int64_t gw) const {
  const int64_t m = config_.spatial_merge_size;
  if (gh <= 0 || gw <= 0 || gh % m != 0 || gw % m != 0) {
    fail(ErrorCode::kInvalidArgument, "vision grid " + std::to_string(gh) + "x" +
                                          std::to_string(gw) + " is not a multiple of the merge");
  }
}

std::vector<float> VisionEncoder::embed_patches(const float* pixels, int64_t gh, int64_t gw,
                                                const TensorTap& tap) const {
  const int64_t n = gh * gw, hid = config_.hidden_size;
  const int64_t plane = config_.patch_size * config_.patch_size;
  const int64_t tp = config_.temporal_patch_size, in_cols = config_.in_channels * tp * plane;
  const int64_t still_cols = config_.in_channels * plane;
  std::vector<float> x(n * hid);
  {
    // Over row chunks (as the blocks' projections: the same bits), so frame 0 of the patches and
    // the GEMM's packed copy of it are a chunk's. Columns are (channel, frame, y, x).
    const profile::StageScope stage(profile::Work::kPatchEmbed);
    const RowChunks chunks = row_chunks(n, row_chunk_);
    std::vector<float> frame(chunks.max_rows() * still_cols);
    for (int64_t c = 0; c < chunks.count; ++c) {
      const int64_t r0 = chunks.begin(c), rows = chunks.begin(c + 1) - r0;
      for_token_rows(rows, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          for (int64_t ch = 0; ch < config_.in_channels; ++ch) {
            const float* from = pixels + (r0 + i) * in_cols + ch * tp * plane;
            std::copy(from, from + plane, frame.data() + i * still_cols + ch * plane);
          }
      });
      ops::matmul(frame.data(), rows, w_.patch_embed, w_.patch_embed_bias.data(),
                  x.data() + r0 * hid, kTowerPrecision);
    }
  }
  if (tap) tap("vision.patch_embeds", x.data(), n, hid);
  return x;
}

std::vector<float> VisionEncoder::embed_frame_pair_patches(const float* pixels, int64_t gh,
                                                           int64_t gw, const TensorTap& tap) const {
  const int64_t n = gh * gw, hid = config_.hidden_size;
  const int64_t in_cols = w_.patch_embed_frames.cols();
  std::vector<float> x(n * hid);
  {
    const profile::StageScope stage(profile::Work::kPatchEmbed);
    const RowChunks chunks = row_chunks(n, row_chunk_);
    for (int64_t c = 0; c < chunks.count; ++c) {
      const int64_t r0 = chunks.begin(c), rows = chunks.begin(c + 1) - r0;
      ops::matmul(pixels + r0 * in_cols, rows, w_.patch_embed_frames, w_.patch_embed_bias.data(),
                  x.data() + r0 * hid, kTowerPrecision);
    }
  }
  if (tap) tap("vision.patch_embeds", x.data(), n, hid);
  return x;
}

VisionOutput VisionEncoder::encode_frame_pair(const float* pixels, int64_t gh, int64_t gw,
                                              const TensorTap& tap,
                                              const std::function<void()>& between_blocks) const {
  check_grid(gh, gw);
  map_weights_in();
  return run_blocks(embed_frame_pair_patches(pixels, gh, gw, tap), gh, gw, tap, between_blocks);
}

void VisionEncoder::map_weights_in() const {
  // One madvise (~12 ms for the 2B tower's 0.43 GB of q8) instead of ~0.18 s of page faults
  // spread over the first image.
  std::call_once(weights_mapped_, [this] {
    for_each_matrix(w_,
                    [](const ops::PackedMatrix& m) { populate_pages(m.bytes(), m.size_bytes()); });
  });
}

VisionOutput VisionEncoder::encode(const float* pixels, int64_t gh, int64_t gw,
                                   const TensorTap& tap,
                                   const std::function<void()>& between_blocks) const {
  check_grid(gh, gw);
  map_weights_in();
  return run_blocks(embed_patches(pixels, gh, gw, tap), gh, gw, tap, between_blocks);
}

VisionOutput VisionEncoder::encode(std::vector<float>&& pixels, int64_t gh, int64_t gw,
                                   const TensorTap& tap,
                                   const std::function<void()>& between_blocks) const {
  check_grid(gh, gw);
  map_weights_in();
  std::vector<float> x = embed_patches(pixels.data(), gh, gw, tap);
  std::vector<float>().swap(pixels);  // not needed past the patch embedding
  return run_blocks(std::move(x), gh, gw, tap, between_blocks);
}

VisionOutput VisionEncoder::run_blocks(std::vector<float> x, int64_t gh, int64_t gw,
                                       const TensorTap& tap,
                                       const std::function<void()>& between_blocks) const {
  const int64_t m = config_.spatial_merge_size;
  const int64_t n = gh * gw, hid = config_.hidden_size, hd = hid / config_.num_heads;
  // The input-sized buffers live only as long as they are needed (peak memory is the blocks').
  {
    std::vector<float> pos(n * hid);
    interpolate_position_embeddings(w_.pos_embed, gh, gw, m, pos.data());
    if (tap) tap("vision.pos_embeds", pos.data(), n, hid);
    add_rows(x.data(), pos.data(), n, hid);
  }

  std::vector<float> cos(n * hd / 2), sin(n * hd / 2);
  {
    std::vector<float> angles(n * hd / 2);
    vision_rotary_angles(gh, gw, m, hd, angles.data());
    if (tap) tap("vision.rot_pos_emb", angles.data(), n, hd / 2);
    for_token_rows(n, [&](int64_t b, int64_t e) {
      for (int64_t i = b * hd / 2; i < e * hd / 2; ++i) {
        cos[i] = std::cos(angles[i]);
        sin[i] = std::sin(angles[i]);
      }
    });
  }

  VisionOutput out;
  out.tokens = n / (m * m);
  out.deepstack.resize(config_.deepstack_visual_indexes.size());
  const int64_t group = attention_heads_per_call(n);
  const int64_t mlp_width =
      w_.blocks.empty() ? config_.intermediate_size : w_.blocks[0].fc2.weight.cols();
  Workspace ws(n, hid, mlp_width, row_chunk_, group * hd);
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
