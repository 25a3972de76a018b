// Qwen3-VL's interleaved multimodal RoPE for the text decoder: each frequency is driven by the
// temporal, height or width position of the token.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.h"

namespace qvl {

class MRope {
 public:
  explicit MRope(const TextConfig& config);

  // positions: [3, n] (t row, then h row, then w row; stride n). Writes cos and sin tables
  // [n, head_dim/2] (the full torch table is cat(half, half)).
  void tables(const int64_t* positions, int64_t n, float* cos, float* sin) const;
  int64_t half_dim() const { return static_cast<int64_t>(inv_freq_.size()); }

 private:
  std::vector<float> inv_freq_;
  std::vector<int> stream_;  // 0 = t, 1 = h, 2 = w for each frequency
};

}  // namespace qvl
