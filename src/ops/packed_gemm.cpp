// The blocked GEMM driver shared by every ISA's kernel set (see packed_gemm.h).
//
// Cache plan (the usual one for a broadcast-times-vector register tile):
//   - x is packed once per call into panels of tile_x_rows rows (all threads, by panel);
//   - each thread takes blocks of kGemmRowBlock weight rows and, per depth block of kGemmDepth,
//     packs them once into strips (dequantized or copied; never per x row): 128 KiB fp32, in L2;
//   - the x panels are then visited kGemmXBlockPanels at a time (~192 KiB on AVX2, in L2) and
//     multiplied with each strip in turn (16 KiB, stays in L1 while the x panels stream past).
// Tiles are always full: partial panels and strips are zero-padded, and a tile that would run
// past m or n computes into a scratch tile whose valid part is copied, so a row's arithmetic
// never depends on where it sits.
#include "ops/packed_gemm.h"

#include <algorithm>
#include <cstring>

#include "base/aligned_buffer.h"
#include "base/thread_pool.h"

namespace qvl::ops::kernels {
namespace {

// Grow-only scratch: x panels and the padded bias of the calling thread, and each pool thread's
// packed weight block.
thread_local AlignedBuffer<float> t_x_panels, t_bias;
thread_local AlignedBuffer<float> t_strips;

struct Job {
  const GemmKernels& g;
  const GemmProblem& p;
  const uint8_t* x_panels;  // panel q at x_panels + q * k * tile_x_rows * x_bytes
  int64_t m, panels;
  const float* bias;  // padded to whole strips, or null
  float* y;
};

// One register tile of rows [row0, row0 + tile_x_rows) x columns [col0, col0 + strip_rows),
// through a scratch tile when it runs past m or n.
void run_tile(const Job& j, const void* x, const void* w, int64_t depth, int64_t row0, int64_t col0,
              bool accumulate, const float* bias) {
  const int64_t n = j.p.n, xr = j.g.tile_x_rows, sr = j.g.strip_rows;
  const int64_t rows = std::min(xr, j.m - row0), cols = std::min(sr, n - col0);
  float* y = j.y + row0 * n + col0;
  if (rows == xr && cols == sr) {
    j.g.tile(x, w, depth, y, n, accumulate, bias);
    return;
  }
  alignas(64) float scratch[kGemmMaxTileX * kGemmMaxStrip] = {};
  if (accumulate) {
    for (int64_t i = 0; i < rows; ++i) std::memcpy(scratch + i * sr, y + i * n, cols * 4);
  }
  j.g.tile(x, w, depth, scratch, sr, accumulate, bias);
  for (int64_t i = 0; i < rows; ++i) std::memcpy(y + i * n, scratch + i * sr, cols * 4);
}

// Weight row block `block` against all of x, depth block by depth block.
void run_row_block(const Job& j, int64_t block, uint8_t* strips_buf) {
  const GemmKernels& g = j.g;
  const int64_t k = j.p.k, xr = g.tile_x_rows, sr = g.strip_rows;
  const int64_t r0 = block * kGemmRowBlock;
  const int64_t strips = (std::min(kGemmRowBlock, j.p.n - r0) + sr - 1) / sr;
  for (int64_t k0 = 0; k0 < k; k0 += kGemmDepth) {
    const int64_t depth = std::min(kGemmDepth, k - k0);
    const bool accumulate = k0 > 0, last = k0 + depth == k;
    g.pack_strips(j.p, r0, strips, g.strip_rows, k0, depth, strips_buf);
    for (int64_t q0 = 0; q0 < j.panels; q0 += kGemmXBlockPanels) {
      const int64_t q1 = std::min(j.panels, q0 + kGemmXBlockPanels);
      for (int64_t s = 0; s < strips; ++s) {
        const int64_t col0 = r0 + s * sr;
        const uint8_t* w = strips_buf + s * depth * sr * g.w_bytes;
        const float* bias = last && j.bias ? j.bias + col0 : nullptr;
        for (int64_t q = q0; q < q1; ++q) {
          const uint8_t* x = j.x_panels + (q * k + k0) * xr * g.x_bytes;
          run_tile(j, x, w, depth, q * xr, col0, accumulate, bias);
        }
      }
    }
  }
}

}  // namespace

void pack_x_panel_f32(const float* x, int64_t rows, int64_t k, int tile_x_rows, void* panel) {
  auto* dst = static_cast<float*>(panel);
  for (int64_t j = 0; j < tile_x_rows; ++j) {
    const float* src = x + j * k;
    if (j >= rows) {
      for (int64_t c = 0; c < k; ++c) dst[c * tile_x_rows + j] = 0.0f;
    } else {
      for (int64_t c = 0; c < k; ++c) dst[c * tile_x_rows + j] = src[c];
    }
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
      g.pack_x_panel(x + q * xr * k, std::min(xr, m - q * xr), k, g.tile_x_rows,
                     x_panels + q * k * xr * g.x_bytes);
    }
  });
  const float* padded_bias = nullptr;
  if (bias) {
    t_bias.resize(static_cast<size_t>(blocks * kGemmRowBlock));
    std::fill(t_bias.data(), t_bias.data() + blocks * kGemmRowBlock, 0.0f);
    std::copy(bias, bias + n, t_bias.data());
    padded_bias = t_bias.data();
  }
  const QuantType type = w.type();
  const GemmProblem problem{type == QuantType::kBF16 ? GemmType::kBF16
                            : type == QuantType::kQ8 ? GemmType::kQ8
                                                     : GemmType::kQ4,
                            static_cast<const uint8_t*>(w.bytes()),
                            static_cast<int64_t>(packed_size_bytes(type, kRows, k)),
                            type == QuantType::kBF16 ? 0 : nb * kScaleBytes,
                            n,
                            k};
  const Job job{g, problem, x_panels, m, panels, padded_bias, y};
  pool.parallel_for(static_cast<size_t>(blocks), [&](size_t b0, size_t b1) {
    t_strips.resize(static_cast<size_t>(kGemmRowBlock * kGemmDepth));
    for (auto b = static_cast<int64_t>(b0); b < static_cast<int64_t>(b1); ++b) {
      run_row_block(job, b, reinterpret_cast<uint8_t*>(t_strips.data()));
    }
  });
}

}  // namespace qvl::ops::kernels
