// Rotary position embedding in the "rotate_half" convention: dimension i pairs with i + d/2.
#pragma once

#include <cstdint>

namespace qvl::ops {

// x: [n_heads, head_dim] for one token; cos/sin: [head_dim / 2] angles' cos and sin (the
// second half of torch's cat(freqs, freqs) table is the same values). In place.
void rope_rotate_half(float* x, int64_t n_heads, int64_t head_dim, const float* cos,
                      const float* sin);

}  // namespace qvl::ops
