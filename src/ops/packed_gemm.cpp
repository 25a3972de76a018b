// The blocked GEMM driver shared by every ISA's kernel set (see packed_gemm.h).
//
// Weights are packed kGemmRowBlock rows x kGemmDepth columns at a time into a block that stays in
// L1/L2 and is reused by every x panel (never re-packed per x row); x arrives in panels of 16
// rows, so a register tile broadcasts one weight (or bf16 pair) and multiplies it with 16 rows
// held in one or two vectors, with no horizontal sums. Results are accumulated transposed
// ([n][m_pad]), which keeps every store a full vector.
#include "ops/packed_gemm.h"

#include <algorithm>

#include "base/aligned_buffer.h"
#include "base/thread_pool.h"

namespace qvl::ops::kernels {
namespace {

// Grow-only scratch: x panels and the transposed result of the calling thread, and each pool
// thread's weight block.
thread_local AlignedBuffer<float> t_xt, t_yt;
thread_local AlignedBuffer<float> t_weights;

}  // namespace

void pack_x_panel_f32(const float* x, int64_t rows, int64_t k, void* panel) {
  auto* dst = static_cast<float*>(panel);
  for (int64_t j = 0; j < kGemmPanel; ++j) {
    if (j >= rows) {
      for (int64_t c = 0; c < k; ++c) dst[c * kGemmPanel + j] = 0.0f;
      continue;
    }
    const float* src = x + j * k;
    for (int64_t c = 0; c < k; ++c) dst[c * kGemmPanel + j] = src[c];
  }
}

void gemm_row_blocks(const GemmProblem& p, const GemmKernels& g, int64_t block_begin,
                     int64_t block_end, void* wbuf) {
  const int64_t panels = p.m_pad / kGemmPanel;
  const int64_t x_panel_stride = p.k * kGemmPanel;  // values
  const auto* xt = static_cast<const uint8_t*>(p.xt);
  auto* w = static_cast<uint8_t*>(wbuf);
  for (int64_t k0 = 0; k0 < p.k; k0 += kGemmDepth) {
    const int64_t depth = std::min(kGemmDepth, p.k - k0);
    const bool accumulate = k0 > 0;
    for (int64_t blk = block_begin; blk < block_end; ++blk) {
      const int64_t r0 = blk * kGemmRowBlock;
      const int64_t rows = std::min(kGemmRowBlock, p.n - r0);
      g.pack_weights(p, r0, rows, k0, depth, w);
      for (int64_t panel = 0; panel < panels; panel += g.tile_panels) {
        const int np = static_cast<int>(std::min<int64_t>(g.tile_panels, panels - panel));
        const uint8_t* x = xt + (panel * x_panel_stride + k0 * kGemmPanel) * g.x_bytes;
        for (int64_t t = 0; t < rows; t += g.tile_rows) {
          const int tr = static_cast<int>(std::min<int64_t>(g.tile_rows, rows - t));
          g.tile(w + t * depth * g.w_bytes, depth, x, x_panel_stride, np, tr,
                 p.yt + (r0 + t) * p.m_pad + panel * kGemmPanel, p.m_pad, accumulate);
        }
      }
    }
  }
}

void gemm(const GemmKernels& g, const float* x, int64_t m, const PackedMatrix& w, const float* bias,
          float* y) {
  const int64_t n = w.rows(), k = w.cols(), nb = k / kCols;
  const int64_t m_pad = (m + kGemmPanel - 1) / kGemmPanel * kGemmPanel;
  const int64_t panels = m_pad / kGemmPanel;
  const int64_t blocks = (n + kGemmRowBlock - 1) / kGemmRowBlock;
  // fp32 sizing covers every panel format (bf16 panels take half).
  t_xt.resize(static_cast<size_t>(m_pad * k));
  t_yt.resize(static_cast<size_t>(n * m_pad));
  float* const xt = t_xt.data();
  float* const yt = t_yt.data();
  ThreadPool& pool = ThreadPool::global();
  pool.parallel_for(static_cast<size_t>(panels), [&](size_t p0, size_t p1) {
    for (auto p = static_cast<int64_t>(p0); p < static_cast<int64_t>(p1); ++p) {
      g.pack_x_panel(x + p * kGemmPanel * k, std::min(kGemmPanel, m - p * kGemmPanel), k,
                     reinterpret_cast<uint8_t*>(xt) + p * k * kGemmPanel * g.x_bytes);
    }
  });
  const QuantType type = w.type();
  const GemmProblem problem{type == QuantType::kBF16 ? GemmType::kBF16
                            : type == QuantType::kQ8 ? GemmType::kQ8
                                                     : GemmType::kQ4,
                            static_cast<const uint8_t*>(w.bytes()),
                            static_cast<int64_t>(packed_size_bytes(type, kRows, k)),
                            type == QuantType::kBF16 ? 0 : nb * kScaleBytes,
                            n,
                            k,
                            m_pad,
                            xt,
                            yt};
  pool.parallel_for(static_cast<size_t>(blocks), [&](size_t b0, size_t b1) {
    t_weights.resize(static_cast<size_t>(kGemmRowBlock * kGemmDepth));
    gemm_row_blocks(problem, g, static_cast<int64_t>(b0), static_cast<int64_t>(b1),
                    t_weights.data());
  });
  // Back to [m, n] with the bias, 64 output columns at a time so the yt lines stay in L1.
  constexpr int64_t kCols64 = 64;
  pool.parallel_for(static_cast<size_t>((n + kCols64 - 1) / kCols64), [&](size_t c0, size_t c1) {
    for (auto c = static_cast<int64_t>(c0); c < static_cast<int64_t>(c1); ++c) {
      const int64_t r0 = c * kCols64, r1 = std::min(n, r0 + kCols64);
      for (int64_t i = 0; i < m; ++i) {
        float* yi = y + i * n;
        for (int64_t r = r0; r < r1; ++r) {
          yi[r] = yt[r * m_pad + i] + (bias ? bias[r] : 0.0f);
        }
      }
    }
  });
}

}  // namespace qvl::ops::kernels
