#include "ops/activation.h"

#include <algorithm>
#include <cmath>

#include "base/thread_pool.h"
#include "ops/elementwise_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace elementwise_kernels {

void silu_mul_reference(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void gelu_tanh_reference(float* x, int64_t n) {
  const float k = 0.7978845608028654f;  // sqrt(2/pi)
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
  }
}

void gelu_erf_reference(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::erf(v * 0.7071067811865476f));
  }
}

}  // namespace elementwise_kernels

namespace {

// Runs fn(begin, end) over [0, n) on the global pool when n is large enough to pay for it.
template <typename Fn>
void for_chunks(int64_t n, Fn&& fn) {
  constexpr int64_t kChunk = 16384;
  if (n <= 2 * kChunk) {
    fn(0, n);
    return;
  }
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  ThreadPool::global().parallel_for(static_cast<size_t>(chunks), [&](size_t b, size_t e) {
    const int64_t begin = static_cast<int64_t>(b) * kChunk;
    fn(begin, std::min(n, static_cast<int64_t>(e) * kChunk));
  });
}

}  // namespace

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  namespace ek = elementwise_kernels;
  const IsaLevel isa = active_isa();
  const auto kernel = isa == IsaLevel::kAvx512 ? ek::silu_mul_avx512
                      : isa == IsaLevel::kAvx2 ? ek::silu_mul_avx2
                                               : ek::silu_mul_reference;
  for_chunks(n, [&](int64_t b, int64_t e) { kernel(gate + b, up + b, e - b, out + b); });
}

void gelu_tanh(float* x, int64_t n) {
  namespace ek = elementwise_kernels;
  const IsaLevel isa = active_isa();
  const auto kernel = isa == IsaLevel::kAvx512 ? ek::gelu_tanh_avx512
                      : isa == IsaLevel::kAvx2 ? ek::gelu_tanh_avx2
                                               : ek::gelu_tanh_reference;
  for_chunks(n, [&](int64_t b, int64_t e) { kernel(x + b, e - b); });
}

void gelu_erf(float* x, int64_t n) {
  // Not on a hot path (Qwen3-VL uses gelu_tanh): std::erf keeps it exact.
  for_chunks(n,
             [&](int64_t b, int64_t e) { elementwise_kernels::gelu_erf_reference(x + b, e - b); });
}

}  // namespace qvl::ops
