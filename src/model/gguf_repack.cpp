#include "model/gguf_repack.h"

#include <algorithm>
#include <cstring>
#include <vector>

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
  const bool finite = (d & 0x7c00) != 0x7c00;
  return finite && (max_abs == 127 || max_abs == 0);
}

}  // namespace

std::optional<AlignedBuffer<uint8_t>> repack_q8_0_as_strips(const GgufTensor& t) {
  if (t.type != GgmlType::kQ8_0 || t.dims.size() != 2) return std::nullopt;
  const int64_t cols = t.dims[0], rows = t.dims[1], blocks = cols / 32;
  for (int64_t i = 0; i < rows * blocks; ++i) {
    if (!representable(t.data + i * kBlockBytes)) return std::nullopt;
  }
  const ops::QuantType type = ops::QuantType::kQ8Strips;
  AlignedBuffer<uint8_t> out(ops::packed_size_bytes(type, rows, cols));
  // Strips of 32 rows follow each other in row order, so a chunk of whole strips packs on its
  // own into its share of the bytes; the chunk bounds the fp32 staging to a few MB.
  const int64_t chunk_rows = std::max<int64_t>(ops::kStripRows, (1 << 20) / cols / 32 * 32);
  std::vector<float> values(static_cast<size_t>(std::min(chunk_rows, rows) * cols));
  size_t offset = 0;
  for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const int64_t n = std::min(chunk_rows, rows - r0);
    gguf_dequantize(t.type, t.data + r0 * blocks * kBlockBytes, n * cols, values.data());
    const ops::PackedMatrix m =
        ops::PackedMatrix::pack({ops::WeightType::kF32, values.data(), n, cols}, type);
    std::memcpy(out.data() + offset, m.bytes(), m.size_bytes());
    offset += m.size_bytes();
  }
  return out;
}

}  // namespace qvl
