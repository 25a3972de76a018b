// The blocked GEMM driver shared by every ISA's kernel set (see packed_gemm.h).
//
// Cache plan (the usual one for a broadcast-times-vector register tile):
//   - x is packed once per call into panels of tile_x_rows rows (all threads, by panel), depth
//     block by depth block, so the panels an x block streams are contiguous;
//   - each thread takes blocks of kGemmRowBlock weight rows and, per depth block of kGemmDepth,
//     packs them once into strips (dequantized or copied; never per x row): 128 KiB fp32, in L2;
//   - the x panels are then visited kGemmXBlockPanels at a time (~192 KiB on AVX2, in L2) and
//     multiplied with each strip in turn (16 KiB, stays in L1 while the x panels stream past).
#include "ops/packed_gemm.h"

#include <algorithm>
#include <cstring>

#include "base/aligned_buffer.h"
#include "base/thread_pool.h"

namespace qvl::ops::kernels {
namespace {

// Grow-only scratch: x panels of the calling thread; each pool thread's packed weight block and
// the partial sums of its row block.
thread_local AlignedBuffer<float> t_x_panels;
thread_local AlignedBuffer<float> t_strips, t_sums;

struct Job {
  const GemmKernels& g;
  const GemmProblem& p;
  // Depth block [k0, k0 + depth) of panel q at x_panels + (k0 * panels + q * depth) *
  // tile_x_rows * x_bytes: the panels of one depth block are contiguous.
  const uint8_t* x_panels;
  int64_t m, panels;
  const float* bias;  // or null
  float* y;
};

// The finished tile at rows [row0, row0 + tile_x_rows) x columns [col0, col0 + strip_rows) into
// y (+ bias), the parts inside m x n. Done right after the tile's last depth block, so the store
// misses drain while the next tiles compute (a separate pass over y stalls on them, ~9%).
void store_tile(const Job& j, const float* sum, int64_t row0, int64_t col0) {
  const int64_t n = j.p.n, sr = j.g.strip_rows;
  const int64_t rows = std::min<int64_t>(j.g.tile_x_rows, j.m - row0);
  const int64_t cols = std::min(sr, n - col0);
  for (int64_t i = 0; i < rows; ++i) {
    float* y = j.y + (row0 + i) * n + col0;
    const float* t = sum + i * sr;
    if (j.bias) {
      for (int64_t c = 0; c < cols; ++c) y[c] = t[c] + j.bias[col0 + c];
    } else {
      for (int64_t c = 0; c < cols; ++c) y[c] = t[c];
    }
  }
}

// Weight row block `block` against all of x, depth block by depth block. The tiles accumulate in
// `sums`, one contiguous tile_x_rows x strip_rows tile per (panel, strip): written in y itself
// the partial sums of a tile would sit rows of n floats apart, on as many pages, and cost ~10%
// in reloads; here they stream. Each is copied to y (+ bias) when done, so tiles are always full
// (zero-padded panels and strips) and a row's arithmetic never depends on where it sits.
void run_row_block(const Job& j, int64_t block, uint8_t* strips_buf, float* sums) {
  const GemmKernels& g = j.g;
  const int64_t n = j.p.n, k = j.p.k, xr = g.tile_x_rows, sr = g.strip_rows;
  const int64_t r0 = block * kGemmRowBlock, cols = std::min(kGemmRowBlock, n - r0);
  const int64_t strips = (cols + sr - 1) / sr, tile_size = xr * sr;
  for (int64_t k0 = 0; k0 < k; k0 += kGemmDepth) {
    const int64_t depth = std::min(kGemmDepth, k - k0);
    g.pack_strips(j.p, r0, strips, g.strip_rows, k0, depth, strips_buf);
    for (int64_t q0 = 0; q0 < j.panels; q0 += kGemmXBlockPanels) {
      const int64_t q1 = std::min(j.panels, q0 + kGemmXBlockPanels);
      for (int64_t s = 0; s < strips; ++s) {
        const uint8_t* w = strips_buf + s * depth * sr * g.w_bytes;
        for (int64_t q = q0; q < q1; ++q) {
          const uint8_t* x = j.x_panels + (k0 * j.panels + q * depth) * xr * g.x_bytes;
          float* sum = sums + (q * strips + s) * tile_size;
          g.tile(x, w, depth, sum, sr, k0 > 0);
          if (k0 + depth == k) store_tile(j, sum, q * xr, r0 + s * sr);
        }
      }
    }
  }
}

}  // namespace

void pack_x_panel_f32(const float* x, int64_t rows, int64_t ldx, int64_t depth, int tile_x_rows,
                      void* panel) {
  auto* dst = static_cast<float*>(panel);
  const float zeros[kGemmDepth] = {};
  const float* src[kGemmMaxTileX];
  for (int64_t j = 0; j < tile_x_rows; ++j) src[j] = j < rows ? x + j * ldx : zeros;
  for (int64_t c = 0; c < depth; ++c) {  // sequential stores, tile_x_rows read streams
    for (int64_t j = 0; j < tile_x_rows; ++j) dst[c * tile_x_rows + j] = src[j][c];
  }
}

void gemm(const GemmKernels& g, const float* x, int64_t m, const PackedMatrix& w, const float* bias,
          float* y) {
  const int64_t n = w.rows(), k = w.cols(), nb = k / kCols, xr = g.tile_x_rows;
  const int64_t panels = (m + xr - 1) / xr;
  const int64_t blocks = (n + kGemmRowBlock - 1) / kGemmRowBlock;
  // fp32 sizing covers every panel format (bf16 panels take half).
  t_x_panels.resize(static_cast<size_t>(panels * xr * k));
  auto* const x_panels = reinterpret_cast<uint8_t*>(t_x_panels.data());
  ThreadPool& pool = ThreadPool::global();
  pool.parallel_for(static_cast<size_t>(panels), [&](size_t q0, size_t q1) {
    for (auto q = static_cast<int64_t>(q0); q < static_cast<int64_t>(q1); ++q) {
      for (int64_t k0 = 0; k0 < k; k0 += kGemmDepth) {
        const int64_t depth = std::min(kGemmDepth, k - k0);
        g.pack_x_panel(x + q * xr * k + k0, std::min(xr, m - q * xr), k, depth, g.tile_x_rows,
                       x_panels + (k0 * panels + q * depth) * xr * g.x_bytes);
      }
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
                            k};
  const Job job{g, problem, x_panels, m, panels, bias, y};
  pool.parallel_for(static_cast<size_t>(blocks), [&](size_t b0, size_t b1) {
    t_strips.resize(static_cast<size_t>(kGemmRowBlock * kGemmDepth));
    t_sums.resize(static_cast<size_t>(panels * xr * kGemmRowBlock));
    for (auto b = static_cast<int64_t>(b0); b < static_cast<int64_t>(b1); ++b) {
      run_row_block(job, b, reinterpret_cast<uint8_t*>(t_strips.data()), t_sums.data());
    }
  });
}

}  // namespace qvl::ops::kernels
