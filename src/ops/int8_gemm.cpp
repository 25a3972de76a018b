// The int8 GEMM driver (see int8_gemm.h): x quantization, weight repacking, blocking, threads.
//
// Per thread, a block of kInt8RowBlock weight rows is repacked once for the whole depth
// (int8_gemm_kernels.h, the architecture's int8_repack; ~1.25 or 2.25 bytes per weight) and
// multiplied with every row of x, so repacking costs O(n * k) per call against O(m * n * k)
// multiply-adds. x is taken kInt8XBlock rows x info.depth columns at a time, so that the x chunk
// and the fp32 results of those rows (kInt8XBlock x 64 floats, kept across chunks, written to y
// once with the bias) stay in L2 whatever m is.
#include "ops/int8_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <vector>

#include "base/aligned_buffer.h"
#include "base/error.h"
#include "base/half.h"
#include "base/log.h"
#include "base/thread_pool.h"
#include "ops/int8_gemm_kernels.h"
#include "ops/packed_kernels.h"

namespace qvl::ops {
namespace {

using kernels::kCols;
using kernels::kInt8Depth;
using kernels::kInt8RowBlock;
using kernels::kInt8XBlock;
using kernels::kRows;
using kernels::kScaleBytes;

// Where a q8/q4 matrix keeps its weights: groups of 4 rows, or strips of 32 rows (in_strips
// types).
struct PackedRows {
  const uint8_t* bytes;
  QuantType type;
  int64_t group_bytes, scale_bytes, strip_block_bytes, strip_bytes;

  PackedRows(const PackedMatrix& w, int64_t nb)
      : bytes(static_cast<const uint8_t*>(w.bytes())),
        type(w.type()),
        group_bytes(
            in_strips(type) ? 0 : static_cast<int64_t>(packed_size_bytes(type, kRows, w.cols()))),
        scale_bytes(nb * kScaleBytes),
        strip_block_bytes(in_strips(type) ? ops::strip_block_bytes(type) : 0),
        strip_bytes(nb * strip_block_bytes) {}
  // Block b of the strip that holds row r.
  const uint8_t* strip_block(int64_t r, int64_t b) const {
    return bytes + r / kStripRows * strip_bytes + b * strip_block_bytes;
  }
};

// x quantized for the kernels: int8 q, q + 128 or q as int16 (for kernels that read them), block
// scales and sums,
// in chunks of `depth` columns: chunk c holds every row's columns [c0, c0 + width) (c0 = c * depth)
// at c0 * m + i * width (scales and sums at c0 / 32 * m + i * blocks), so the kernels stream each
// chunk of x as one contiguous range.
struct QuantizedX {
  AlignedBuffer<int8_t> q;
  AlignedBuffer<uint8_t> u;
  AlignedBuffer<int16_t> w;
  AlignedBuffer<float> scale;
  AlignedBuffer<int32_t> sum;
};
thread_local QuantizedX t_x;

struct ThreadBuffers {
  AlignedBuffer<uint8_t> panel;
  AlignedBuffer<float> c;
};
thread_local ThreadBuffers t_buffers;

void quantize_x(const float* x, int64_t m, int64_t k, int64_t depth, kernels::Int8XLayout layout) {
  const bool offset = layout == kernels::Int8XLayout::kOffset8;
  // int16 x is widened once here, not per tile call for every row block (3% of a q8 GEMM).
  const bool wide = layout == kernels::Int8XLayout::kInt16;
  const int32_t qmax = layout == kernels::Int8XLayout::kInt7 ? 63 : 127;
  const int64_t nb = k / kCols;
  t_x.q.resize(static_cast<size_t>(m * k));
  t_x.u.resize(offset ? static_cast<size_t>(m * k) : 0);
  t_x.w.resize(wide ? static_cast<size_t>(m * k) : 0);
  t_x.scale.resize(static_cast<size_t>(m * nb));
  t_x.sum.resize(static_cast<size_t>(m * nb));
  int8_t* q = t_x.q.data();
  uint8_t* u = t_x.u.data();
  int16_t* w = t_x.w.data();
  float* scale = t_x.scale.data();
  int32_t* sum = t_x.sum.data();
  ThreadPool::global().parallel_for(static_cast<size_t>(m), [&](size_t i0, size_t i1) {
    for (auto i = static_cast<int64_t>(i0); i < static_cast<int64_t>(i1); ++i) {
      for (int64_t c0 = 0; c0 < k; c0 += depth) {
        const int64_t width = std::min(depth, k - c0), at = c0 * m + i * width;
        const int64_t blocks = width / kCols, block_at = c0 / kCols * m + i * blocks;
        kernels::quantize_row_to(x + i * k + c0, blocks, qmax, q + at, scale + block_at,
                                 sum + block_at);
        if (offset) {
          for (int64_t j = 0; j < width; ++j) u[at + j] = static_cast<uint8_t>(q[at + j] + 128);
        }
        if (wide) kernels::int8_widen(q + at, width, w + at);
      }
    }
  });
}

}  // namespace

const char* int8_gemm_kernel_name(Int8GemmKernel kernel) {
  switch (kernel) {
    case Int8GemmKernel::kAvx2:
      return "avx2";
    case Int8GemmKernel::kAvx2X7:
      return "avx2-x7";
    case Int8GemmKernel::kAvxVnni:
      return "avx-vnni";
    case Int8GemmKernel::kAvx512Vnni:
      return "avx512-vnni";
    case Int8GemmKernel::kAvxVnniEmulated:
      return "avx-vnni-emulated";
    case Int8GemmKernel::kNeonSmull:
      return "neon-smull";
    case Int8GemmKernel::kNeonDotprod:
      return "neon-dotprod";
    case Int8GemmKernel::kNeonI8mm:
      return "neon-i8mm";
  }
  return "?";
}

int32_t int8_gemm_x_max(Int8GemmKernel kernel, QuantType type) {
  return kernel == Int8GemmKernel::kAvx2X7 && type == QuantType::kQ8Strips ? 63 : 127;
}

void release_int8_gemm_scratch() {
  t_x = QuantizedX{};
  t_buffers = ThreadBuffers{};
}

size_t int8_gemm_scratch_bytes() {
  return t_x.q.size() + t_x.u.size() + t_x.w.size() * 2 + t_x.scale.size() * 4 +
         t_x.sum.size() * 4 + t_buffers.panel.size() + t_buffers.c.size() * 4;
}

namespace {

// How far ahead a streamed stored strip is prefetched (4 q8 blocks, ~8 q4 ones).
constexpr int64_t kStreamPrefetchBytes = 4 * kStripBlockBytes;

// One weight matrix of a (multi-output) product: where it keeps its rows and where its results go.
struct Int8Output {
  const PackedMatrix* w;
  const float* bias;
  float* y;
  PackedRows packed;
  kernels::Int8RepackSource source;
  int64_t row_block0;      // its first row block in the product's numbering
  int64_t x_begin, x_end;  // the rows of x it multiplies; y holds x_end - x_begin rows
};

// y = x[rows] * W^T (+ bias) for every output (same type and cols), rows being all of x's or the
// output's range (x_rows, may be null): x quantized once, and one pool dispatch over all of their
// row blocks. Each output's bits are those of a call on its own rows alone.
void run_int8_gemm(const kernels::Int8KernelInfo& info, const float* x, int64_t m,
                   const MatmulOutput* outputs, const std::pair<int64_t, int64_t>* x_rows,
                   size_t count) {
  const QuantType type = outputs[0].w->type();
  const int64_t k = outputs[0].w->cols(), nb = k / kCols;
  // Chunks of depth keep a strip's chunk in L1 for every x tile that reuses it. When the batch fits
  // one x block (decode steps, a chat turn's question, short prompts) a stored strip is taken
  // whole instead: one prefetched sequential stream from DRAM, re-read from L2 by the next x tiles
  // (same bits). Measured (AVX-512, 2 threads, BM_SmallBatchMatmul): gate/up q4 at m 30
  // 1053-1183 -> 762-777 us, at m 196 5261-5932 -> 4988-5071 us; a 45-token prompt 207-224 ->
  // 163-169 ms.
  const bool streamed = info.reads_stored && m <= kInt8XBlock;
  const int64_t depth = streamed ? k : info.depth;
  quantize_x(x, m, k, depth, info.x_layout);
  std::vector<Int8Output> outs;
  int64_t row_blocks = 0;
  for (size_t j = 0; j < count; ++j) {
    const PackedMatrix& w = *outputs[j].w;
    QVL_CHECK(w.type() == type && w.cols() == k);
    const PackedRows packed(w, nb);
    const kernels::Int8RepackSource source{packed.bytes,
                                           packed.group_bytes,
                                           packed.scale_bytes,
                                           (w.rows() + kRows - 1) / kRows,
                                           values_type(type) == QuantType::kQ8,
                                           packed.strip_bytes,
                                           packed.strip_block_bytes};
    const int64_t x_begin = x_rows ? x_rows[j].first : 0, x_end = x_rows ? x_rows[j].second : m;
    QVL_CHECK(0 <= x_begin && x_begin <= x_end && x_end <= m);
    if (x_begin == x_end) continue;
    outs.push_back({&w, outputs[j].bias, outputs[j].y, packed, source, row_blocks, x_begin, x_end});
    row_blocks += (w.rows() + kInt8RowBlock - 1) / kInt8RowBlock;
  }
  const int64_t block_bytes = kernels::int8_strip_block_bytes(info.strip_rows, info.weights);
  const int64_t depth_blocks = depth / kCols;
  const int64_t prefetch_ahead = streamed ? kStreamPrefetchBytes : 0;
  // The calling thread's quantized x (t_x of a pool thread is another buffer).
  const int8_t* const xq = t_x.q.data();
  const uint8_t* const xu = t_x.u.empty() ? nullptr : t_x.u.data();
  const int16_t* const xw = t_x.w.empty() ? nullptr : t_x.w.data();
  const float* const xscale = t_x.scale.data();
  const int32_t* const xsum = t_x.sum.data();

  ThreadPool::global().parallel_for(static_cast<size_t>(row_blocks), [&](size_t rb0, size_t rb1) {
    ThreadBuffers& buf = t_buffers;
    const int64_t strip_bytes = nb * block_bytes;
    if (!info.reads_stored) {
      buf.panel.resize(static_cast<size_t>(kInt8RowBlock / info.strip_rows * strip_bytes));
    }
    buf.c.resize(static_cast<size_t>(std::min(m, kInt8XBlock) * kInt8RowBlock));
    size_t j = 0;
    for (auto rb = static_cast<int64_t>(rb0); rb < static_cast<int64_t>(rb1); ++rb) {
      while (j + 1 < outs.size() && outs[j + 1].row_block0 <= rb) ++j;
      const Int8Output& out = outs[j];
      const int64_t n = out.w->rows();
      const int64_t r0 = (rb - out.row_block0) * kInt8RowBlock;
      const int64_t rows = std::min(kInt8RowBlock, n - r0);
      const int64_t strips = (rows + info.strip_rows - 1) / info.strip_rows;
      // Strip s's first block: in the repacked panel, or where the stored strip holds its rows.
      const auto strip_at = [&](int64_t s, int64_t b0) -> const uint8_t* {
        if (!info.reads_stored) return buf.panel.data() + s * strip_bytes + b0 * block_bytes;
        return out.packed.strip_block(r0 + s * info.strip_rows, b0);
      };
      if (!info.reads_stored) {
        kernels::int8_repack(out.source, r0 / kRows, strips, info.strip_rows, 0, nb, info.weights,
                             buf.panel.data());
      }
      for (int64_t m0 = out.x_begin; m0 < out.x_end; m0 += kInt8XBlock) {
        const int64_t m1 = std::min(out.x_end, m0 + kInt8XBlock);
        std::fill(buf.c.data(), buf.c.data() + (m1 - m0) * kInt8RowBlock, 0.0f);
        for (int64_t b0 = 0; b0 < nb; b0 += depth_blocks) {
          const int64_t nbc = std::min(depth_blocks, nb - b0), width = nbc * kCols;
          for (int64_t i0 = m0; i0 < m1; i0 += info.x_rows) {
            kernels::Int8Tile t{};
            t.nblocks = nbc;
            t.xq = xq + b0 * kCols * m + i0 * width;
            t.xu = xu == nullptr ? nullptr : xu + b0 * kCols * m + i0 * width;
            t.xw = xw == nullptr ? nullptr : xw + b0 * kCols * m + i0 * width;
            t.xscale = xscale + b0 * m + i0 * nbc;
            t.xsum = xsum + b0 * m + i0 * nbc;
            t.ldx = width;
            t.ldxs = nbc;
            t.rows = std::min(info.x_rows, m1 - i0);
            t.ldc = kInt8RowBlock;
            t.prefetch_ahead = prefetch_ahead;
            for (int64_t s = 0; s < strips; ++s) {
              t.strip = strip_at(s, b0);
              t.half = (s * info.strip_rows) % kStripRows / 16;
              t.c = buf.c.data() + (i0 - m0) * kInt8RowBlock + s * info.strip_rows;
              info.tile(t);
            }
          }
        }
        for (int64_t i = m0; i < m1; ++i) {
          const float* ci = buf.c.data() + (i - m0) * kInt8RowBlock;
          float* yi = out.y + (i - out.x_begin) * n + r0;
          for (int64_t r = 0; r < rows; ++r) yi[r] = ci[r] + (out.bias ? out.bias[r0 + r] : 0.0f);
        }
      }
    }
  });
}

bool int8_gemm_type(QuantType type) {
  return values_type(type) == QuantType::kQ8 || values_type(type) == QuantType::kQ4;
}

}  // namespace

void int8_gemm_multi(Int8GemmKernel kernel, const float* x, int64_t m, const MatmulOutput* outputs,
                     size_t count) {
  int8_gemm_grouped(kernel, x, m, outputs, nullptr, count);  // every output on all of x's rows
}

void int8_gemm_grouped(Int8GemmKernel kernel, const float* x, int64_t m,
                       const MatmulOutput* outputs, const std::pair<int64_t, int64_t>* x_rows,
                       size_t count) {
  if (count == 0) return;
  const QuantType type = outputs[0].w->type();
  QVL_CHECK(int8_gemm_type(type));
  QVL_CHECK(cpu_runs_int8_gemm_kernel(kernel));
  run_int8_gemm(kernels::int8_kernel_info(kernel, type, m), x, m, outputs, x_rows, count);
}

void int8_gemm(Int8GemmKernel kernel, const float* x, int64_t m, const PackedMatrix& w,
               const float* bias, float* y) {
  const MatmulOutput output{&w, bias, y};
  int8_gemm_multi(kernel, x, m, &output, 1);
}

void int8_gemm_with_tile(Int8GemmKernel kernel, Int8TileFunction tile, const float* x, int64_t m,
                         const PackedMatrix& w, const float* bias, float* y) {
  QVL_CHECK(int8_gemm_type(w.type()));
  QVL_CHECK(cpu_runs_int8_gemm_kernel(kernel));
  kernels::Int8KernelInfo info = kernels::int8_kernel_info(kernel, w.type(), m);
  info.tile = tile;
  const MatmulOutput output{&w, bias, y};
  run_int8_gemm(info, x, m, &output, nullptr, 1);
}

bool int8_gemm_kernel_agrees_with_reference(Int8GemmKernel kernel) {
  // n = 42: a partial strip of every kernel; k = 288: a full chunk and a one-block tail;
  // m = 19: a partial x-row tile of every kernel.
  const int64_t n = 42, k = 288, m = kernels::kGemmMinRows + 3;
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(n * k)), x(static_cast<size_t>(m * k));
  for (auto& v : w) v = 0.05f * dist(rng);
  for (auto& v : x) v = dist(rng);
  for (QuantType type :
       {QuantType::kQ8, QuantType::kQ4, QuantType::kQ8Strips, QuantType::kQ4Strips}) {
    if (!kernels::int8_kernel_supports(kernel, type)) continue;
    const auto packed = PackedMatrix::pack(WeightRef{WeightType::kF32, w.data(), n, k}, type);
    std::vector<float> want(static_cast<size_t>(m * n)), got(want.size());
    int8_gemm_reference(x.data(), m, packed, nullptr, want.data(), int8_gemm_x_max(kernel, type));
    int8_gemm(kernel, x.data(), m, packed, nullptr, got.data());
    float largest = 0;
    for (float v : want) largest = std::max(largest, std::fabs(v));
    for (size_t i = 0; i < want.size(); ++i) {
      // Only the fp32 summation order differs; a wrong kernel is off by ~100%.
      if (!(std::fabs(got[i] - want[i]) <= 1e-4f * largest)) {
        QVL_LOG(kError) << int8_gemm_kernel_name(kernel) << " " << quant_type_name(type)
                        << " int8 GEMM disagrees with the reference (" << got[i] << " vs "
                        << want[i] << "); not using it";
        return false;
      }
    }
  }
  return true;
}

void int8_gemm_reference(const float* x, int64_t m, const PackedMatrix& w, const float* bias,
                         float* y, int32_t x_max) {
  QVL_CHECK(int8_gemm_type(w.type()));
  const int64_t n = w.rows(), k = w.cols(), nb = k / kCols;
  std::vector<int8_t> q(static_cast<size_t>(k));
  std::vector<float> scale(static_cast<size_t>(nb));
  std::vector<int32_t> sum(static_cast<size_t>(nb));
  for (int64_t i = 0; i < m; ++i) {
    kernels::quantize_row_to_scalar(x + i * k, nb, x_max, q.data(), scale.data(), sum.data());
    for (int64_t r = 0; r < n; ++r) {
      float acc = 0;
      for (int64_t b = 0; b < nb; ++b) {
        int32_t wq[kCols];
        float w_scale;
        w.block_q(r, b, wq, &w_scale);
        int32_t dot = 0;
        for (int64_t j = 0; j < kCols; ++j) dot += wq[j] * q[static_cast<size_t>(b * kCols + j)];
        acc += static_cast<float>(dot) * (w_scale * scale[static_cast<size_t>(b)]);
      }
      y[i * n + r] = acc + (bias ? bias[r] : 0.0f);
    }
  }
}

}  // namespace qvl::ops
