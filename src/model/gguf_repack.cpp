#include "model/gguf_repack.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "base/mapped_file.h"
#include "base/thread_pool.h"
#include "model/gguf_dequant.h"
#include "ops/packed_matrix.h"

namespace qvl {
namespace {

constexpr int64_t kBlockBytes = 34;  // fp16 d + 32 x int8

// Whether qvl's symmetric q8 reproduces the block exactly (see the header).
bool representable(const uint8_t* block) {
  int max_abs = 0;
  for (int j = 0; j < 32; ++j) {
    const int q = static_cast<int8_t>(block[2 + j]);
    max_abs = std::max(max_abs, q < 0 ? -q : q);
  }
  uint16_t d;
  std::memcpy(&d, block, 2);
  // Finite and not negative: qvl's packer would store |d| and negated quants (same values, other
  // bytes); such blocks do not come from ggml's quantizer, so they simply take the fp32 path.
  const bool finite = (d & 0x7c00) != 0x7c00, negative = (d & 0x8000) != 0;
  return finite && !negative && (max_abs == 127 || max_abs == 0);
}

}  // namespace

std::optional<AlignedBuffer<uint8_t>> repack_q8_0_as_strips(const GgufTensor& t) {
  if (t.type != GgmlType::kQ8_0 || t.dims.size() != 2) return std::nullopt;
  const int64_t cols = t.dims[0], rows = t.dims[1], blocks = cols / 32;
  populate_pages(t.data, t.nbytes);  // one call instead of a page fault per 4 KiB read
  std::atomic<bool> ok{true};
  ThreadPool::global().parallel_for(
      static_cast<size_t>(rows * blocks),
      [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end && ok.load(std::memory_order_relaxed); ++i) {
          if (!representable(t.data + i * kBlockBytes)) ok.store(false);
        }
      },
      4096);
  if (!ok.load()) return std::nullopt;
  // Each strip of 32 rows holds, per block of 32 columns, [8 quads][32 rows][4 bytes] of q + 128
  // (columns 4 * quad .. 4 * quad + 3) and then the 32 rows' fp16 scales (ops/packed_matrix.h);
  // rows past the end are zero (q 0 stored as 128, scale 0). A plain byte shuffle: the Q8_0 scale
  // is already the fp16 scale and the quants the int8 quants.
  const ops::QuantType type = ops::QuantType::kQ8Strips;
  AlignedBuffer<uint8_t> out(ops::packed_size_bytes(type, rows, cols));
  populate_pages_for_writing(out.data(), out.size());
  const int64_t strips = (rows + ops::kStripRows - 1) / ops::kStripRows;
  const int64_t block_bytes = ops::kStripBlockBytes, scales_at = ops::kStripRows * 32;
  // Strips are independent: one task per strip (threads share the shuffle of a big matrix).
  ThreadPool::global().parallel_for(static_cast<size_t>(strips), [&](size_t first, size_t last) {
    for (auto s = static_cast<int64_t>(first); s < static_cast<int64_t>(last); ++s) {
      for (int64_t b = 0; b < blocks; ++b) {
        uint8_t* dst = out.data() + (s * blocks + b) * block_bytes;
        std::memset(dst, 128, static_cast<size_t>(scales_at));
        std::memset(dst + scales_at, 0, static_cast<size_t>(block_bytes - scales_at));
        for (int64_t r = 0; r < ops::kStripRows && s * ops::kStripRows + r < rows; ++r) {
          const uint8_t* src = t.data + ((s * ops::kStripRows + r) * blocks + b) * kBlockBytes;
          std::memcpy(dst + scales_at + 2 * r, src, 2);
          for (int j = 0; j < 32; ++j) {
            dst[(j / 4) * ops::kStripRows * 4 + r * 4 + j % 4] =
                static_cast<uint8_t>(static_cast<int8_t>(src[2 + j]) + 128);
          }
        }
      }
    }
  });
  return out;
}

AlignedBuffer<uint8_t> pack_gguf_matrix(const GgufTensor& t, ops::QuantType type) {
  const int64_t cols = t.dims.at(0), rows = t.numel() / cols;
  const uint64_t row_bytes = *ggml_row_bytes(t.type, cols);
  AlignedBuffer<uint8_t> out(ops::packed_size_bytes(type, rows, cols));
  // Groups (4 rows) and strips (32 rows) follow each other in row order, so chunks of whole
  // strips pack on their own into consecutive parts of the bytes.
  const int64_t chunk_rows = std::max<int64_t>(ops::kStripRows, (1 << 20) / cols / 32 * 32);
  std::vector<float> values(static_cast<size_t>(std::min(chunk_rows, rows) * cols));
  size_t offset = 0;
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const int64_t n = std::min(chunk_rows, rows - r0);
    gguf_dequantize(t.type, t.data + r0 * row_bytes, n * cols, values.data());
    const ops::PackedMatrix m =
        ops::PackedMatrix::pack({ops::WeightType::kF32, values.data(), n, cols}, type);
    std::memcpy(out.data() + offset, m.bytes(), m.size_bytes());
    offset += m.size_bytes();
  }
  return out;
}

}  // namespace qvl
