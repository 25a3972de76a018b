#include "ops/activation.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "base/error.h"
#include "base/log.h"
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

bool close_to(const std::vector<float>& got, const std::vector<float>& want) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (!(std::fabs(got[i] - want[i]) <= 1e-5f * std::max(1.0f, std::fabs(want[i])))) return false;
  }
  return true;
}

// The kernels of one level on a small input (with a vector tail) against the references.
bool agrees_with_reference(IsaLevel isa) {
  namespace ek = elementwise_kernels;
  const ek::ElementwiseKernels* k = ek::elementwise_kernels_for(isa);
  if (k == nullptr) return true;  // the references themselves
  constexpr int64_t n = 45;
  std::vector<float> x(n), w(n), b(n), want(n), got(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 13) * 0.9f - 5.0f;
    w[i] = 1.0f + static_cast<float>(i % 5) * 0.1f;
    b[i] = static_cast<float>(i % 3) * 0.2f;
  }
  bool ok = true;
  ek::silu_mul_reference(x.data(), w.data(), n, want.data());
  k->silu_mul(x.data(), w.data(), n, got.data());
  ok = ok && close_to(got, want);
  want = x;
  got = x;
  ek::gelu_tanh_reference(want.data(), n);
  k->gelu_tanh(got.data(), n);
  ok = ok && close_to(got, want);
  ek::rms_norm_reference(x.data(), w.data(), 1e-6f, 1, n, want.data());
  k->rms_norm_row(x.data(), w.data(), 1e-6f, n, got.data());
  ok = ok && close_to(got, want);
  ek::layer_norm_reference(x.data(), w.data(), b.data(), 1e-6f, 1, n, want.data());
  k->layer_norm_row(x.data(), w.data(), b.data(), 1e-6f, n, got.data());
  ok = ok && close_to(got, want);
  const ExpSum want_sum = ek::exp_sum_reference(x.data(), n);
  const ExpSum got_sum = k->exp_sum(x.data(), n);
  ok = ok && got_sum.max == want_sum.max &&
       std::fabs(got_sum.sum - want_sum.sum) <= 1e-6 * want_sum.sum;
  if (!ok) {
    QVL_LOG(kError) << isa_level_name(isa)
                    << " activation/norm kernels disagree with the references; using a lower level";
  }
  return ok;
}

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

namespace elementwise_kernels {

bool kernels_verified(IsaLevel isa) {
  constexpr int kLevels = 8;
  static std::once_flag once[kLevels];
  static bool ok[kLevels];
  const auto i = static_cast<size_t>(isa);
  QVL_CHECK(i < kLevels);
  std::call_once(once[i], [&] { ok[i] = agrees_with_reference(isa); });
  return ok[i];
}

IsaLevel usable_isa() {
  IsaLevel isa = active_isa();
  while (isa != IsaLevel::kScalar && !kernels_verified(isa)) isa = lower_isa_level(isa);
  return isa;
}

const ElementwiseKernels* usable_kernels() {
  const IsaLevel isa = usable_isa();
  return isa == IsaLevel::kScalar ? nullptr : elementwise_kernels_for(isa);
}

}  // namespace elementwise_kernels

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  namespace ek = elementwise_kernels;
  const ek::ElementwiseKernels* k = ek::usable_kernels();
  const auto kernel = k != nullptr ? k->silu_mul : ek::silu_mul_reference;
  for_chunks(n, [&](int64_t b, int64_t e) { kernel(gate + b, up + b, e - b, out + b); });
}

void gelu_tanh(float* x, int64_t n) {
  namespace ek = elementwise_kernels;
  const ek::ElementwiseKernels* k = ek::usable_kernels();
  const auto kernel = k != nullptr ? k->gelu_tanh : ek::gelu_tanh_reference;
  for_chunks(n, [&](int64_t b, int64_t e) { kernel(x + b, e - b); });
}

void gelu_erf(float* x, int64_t n) {
  // Not on a hot path (Qwen3-VL uses gelu_tanh): std::erf keeps it exact.
  for_chunks(n,
             [&](int64_t b, int64_t e) { elementwise_kernels::gelu_erf_reference(x + b, e - b); });
}

}  // namespace qvl::ops
