// The Qwen3-VL vision tower in exact mode: patch embedding, learned + rotary positions,
// transformer blocks with attention inside one image, the 2x2 merger and DeepStack mergers.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <vector>

#include "model/config.h"
#include "model/tensor_tap.h"
#include "model/vision_weights.h"

namespace qvl {

struct VisionOutput {
  int64_t tokens = 0;                         // merged tokens = patches / merge^2
  std::vector<float> embeds;                  // [tokens, out_hidden]
  std::vector<std::vector<float>> deepstack;  // per DeepStack layer, [tokens, out_hidden]
};

class VisionEncoder {
 public:
  // The projections with wide outputs (qkv, the MLP) run over at most row_chunk patches at a time
  // (chunks of >= 16 rows: the result does not depend on it; the memory held does). 256 rows fit
  // one x block of the int8 GEMM, which then streams each weight strip whole: 448x448 vision
  // 955-984 -> 904-926 ms against 512 (AVX-512, q8 tower; mergers 118 -> 88 ms).
  static constexpr int64_t kDefaultRowChunk = 256;
  // attention_heads: heads per attention call (0: as few as keep every thread busy; the result
  // does not depend on it, the memory the attention packs its keys and values into does).
  VisionEncoder(const VisionConfig& config, const VisionWeights& weights,
                int64_t row_chunk = kDefaultRowChunk, int64_t attention_heads = 0);

  // One still image: pixel_values [grid_h * grid_w, C * T * P * P] in merge-window order, as
  // the processor lays them out (frame 0 is used; the kernel's temporal slices are pre-summed).
  // between_blocks (optional) is called four times in every transformer block (after q/k/v,
  // attention, fc1, fc2): the engine may let a batched decode step run there, so a large image
  // never freezes running streams.
  VisionOutput encode(const float* pixel_values, int64_t grid_h, int64_t grid_w,
                      const TensorTap& tap = {},
                      const std::function<void()>& between_blocks = {}) const;
  // The same, freeing pixel_values once the patches are embedded (they are not needed after).
  VisionOutput encode(std::vector<float>&& pixel_values, int64_t grid_h, int64_t grid_w,
                      const TensorTap& tap = {},
                      const std::function<void()>& between_blocks = {}) const;
  // One frame pair of a video: as encode, but the two temporal slices of each pixel_values row
  // differ, so the patch embedding uses the whole Conv3d kernel. The pair is one attention
  // window with its own positions, as transformers' cu_seqlens split a video per grid_t.
  VisionOutput encode_frame_pair(const float* pixel_values, int64_t grid_h, int64_t grid_w,
                                 const TensorTap& tap = {},
                                 const std::function<void()>& between_blocks = {}) const;
  // Heads per attention call for an image of n patches (attention_heads, or the default's choice).
  int64_t attention_heads_per_call(int64_t n) const;

 private:
  struct Workspace;  // one image's activation buffers, allocated once per encode
  void block(const VisionBlockWeights& w, int64_t n, const float* cos, const float* sin,
             Workspace& ws, std::vector<float>& x, const std::function<void()>& between) const;
  std::vector<float> merge(const MergerWeights& w, const std::vector<float>& x, int64_t n) const;
  void check_grid(int64_t grid_h, int64_t grid_w) const;
  void map_weights_in() const;
  std::vector<float> embed_patches(const float* pixel_values, int64_t grid_h, int64_t grid_w,
                                   const TensorTap& tap) const;
  std::vector<float> embed_frame_pair_patches(const float* pixel_values, int64_t grid_h,
                                              int64_t grid_w, const TensorTap& tap) const;
  VisionOutput run_blocks(std::vector<float> x, int64_t grid_h, int64_t grid_w,
                          const TensorTap& tap, const std::function<void()>& between_blocks) const;

  VisionConfig config_;
  const VisionWeights& w_;
  int64_t row_chunk_;
  int64_t attention_heads_;
  mutable std::once_flag weights_mapped_;  // the tower's pages entered at its first image
};

}  // namespace qvl
