#include "cold_matrices.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>

#include "base/half.h"
#include "ops/machine_probe.h"

namespace qvl::bench {

ops::PackedMatrix random_packed(ops::QuantType type, int64_t rows, int64_t cols) {
  std::vector<uint16_t> w(static_cast<size_t>(rows * cols));
  uint64_t s = static_cast<uint64_t>(rows * 31 + cols) | 1;
  for (auto& v : w) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    v = f32_to_bf16(static_cast<float>(s >> 40) * 0x1p-24f * 0.2f - 0.1f);
  }
  return ops::PackedMatrix::pack({ops::WeightType::kBF16, w.data(), rows, cols}, type);
}

size_t cold_bytes() {
  static const size_t bytes = std::max<size_t>(
      size_t{256} << 20,
      4 * static_cast<size_t>(std::max<int64_t>(0, ops::last_level_cache_bytes())));
  return bytes;
}

const ColdMatrices& cold_matrices(ops::QuantType type, int64_t rows, int64_t cols) {
  static std::map<std::tuple<int, int64_t, int64_t>, std::unique_ptr<ColdMatrices>> cache;
  auto& slot = cache[{static_cast<int>(type), rows, cols}];
  if (slot) return *slot;
  slot = std::make_unique<ColdMatrices>();
  slot->original = random_packed(type, rows, cols);
  const size_t size = slot->original.size_bytes();
  const size_t copies = std::max<size_t>(1, (cold_bytes() + size - 1) / size);
  for (size_t c = 0; c + 1 < copies; ++c) {
    slot->bytes.emplace_back();
    slot->bytes.back().resize(size);
    std::memcpy(slot->bytes.back().data(), slot->original.bytes(), size);
    slot->views.push_back(
        ops::PackedMatrix::view(type, rows, cols, slot->bytes.back().data(), size));
  }
  slot->views.push_back(ops::PackedMatrix::view(type, rows, cols, slot->original.bytes(), size));
  return *slot;
}

}  // namespace qvl::bench
