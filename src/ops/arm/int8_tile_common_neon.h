// Internal: what the aarch64 int8 tiles (int8_gemm_neon_{dotprod,i8mm,smull}.cpp) share: the
// stored weight type, the scale widening, the exact int-to-float trick and the dispatch on the
// tile's x-row count. Everything has internal linkage (an unnamed namespace): each tile file is
// compiled for its own -march, and an inline function with external linkage would leave the
// linker free to keep one file's copy (say, with SDOT in it) for all of them.
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <type_traits>
#include <utility>

#include "ops/arm/int8_gemm_neon.h"
#include "ops/int8_gemm_kernels.h"
#include "ops/packed_matrix.h"

namespace qvl::ops::kernels {
namespace {  // NOLINT(google-build-namespaces): see above

enum class Stored { kQ8, kQ4 };

// float(d) for |d| < 2^22 is the float with the bits kMagicBits + d, less kMagic, exactly: the
// SDOT/USMMLA accumulators start at kMagicBits, which spares SCVTF (2 uops on one pipe of
// Neoverse N1/N2) for an FSUB. Block dots are below 32 * 255 * 127 < 2^20 in magnitude.
constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23
constexpr int32_t kMagicBits = 0x4b400000;

// Accumulator starts: 8 copies of the bits of kMagic, or of zeros, one per x row (see starts_at).
struct alignas(16) StartRows {
  int32_t lanes[8][4];
};
constexpr StartRows fill_starts(int32_t v) {
  StartRows s{};
  for (auto& row : s.lanes) row[0] = row[1] = row[2] = row[3] = v;
  return s;
}
constexpr StartRows kMagicStarts = fill_starts(kMagicBits);
constexpr StartRows kZeroStarts = fill_starts(0);

// starts, through a pointer the compiler cannot follow (it changes with `step`, as far as it
// knows): each accumulator that starts at a constant then starts with a load of its own row,
// which takes a load pipe, not with a register copy (MOV) on the vector pipes the dot products
// are short of.
inline const int32_t* starts_at(const StartRows& starts, int64_t step) {
  const int32_t* p = &starts.lanes[0][0];
  asm("" : "+r"(p) : "r"(step));
  return p;
}

// Nothing moves across this in GCC's schedule (a volatile asm is a barrier to it): keeps the
// compiler from hoisting the loads of a later step over the work before it, where all of their
// vectors at once would spill (the out-of-order core overlaps the steps anyway).
inline void schedule_barrier() {
  asm volatile("");
}

// A tile's half (16 rows) of one stored strip (packed_matrix.h): per block of 32 columns, kLoads
// loads of kQuadBytes (a quad of the 32 rows, or a pair of quads in nibbles) of which the tile
// reads its 64 bytes, then the 32 fp16 scales of which it reads its 16.
template <Stored W>
struct StripHalf {
  static constexpr int64_t kStride = W == Stored::kQ4 ? kQ4StripBlockBytes : kStripBlockBytes;
  static constexpr int64_t kQuadBytes = kStripRows * 4;
  static constexpr int64_t kLoads = W == Stored::kQ4 ? 4 : 8;
  static constexpr int64_t kScalesAt = kLoads * kQuadBytes;

  explicit StripHalf(const Int8Tile& t)
      : strip(t.strip),
        half_at(t.half * kInt8NeonStripRows * 4),
        prefetch_ahead(t.prefetch_ahead) {}
  // Prefetches what the tile reads of the block prefetch_ahead bytes past block b (if asked).
  void prefetch(int64_t b) const {
    if (prefetch_ahead == 0) return;
    const uint8_t* ahead = strip + b * kStride + prefetch_ahead;
    for (int64_t l = 0; l < kLoads; ++l) __builtin_prefetch(ahead + half_at + l * kQuadBytes);
    __builtin_prefetch(ahead + kScalesAt);
  }
  const uint8_t* weights(int64_t b) const { return strip + b * kStride + half_at; }
  const uint8_t* scales(int64_t b) const { return strip + b * kStride + kScalesAt + half_at / 2; }

  const uint8_t* strip;
  int64_t half_at;
  int64_t prefetch_ahead;
};

// The 4 fp16 weight scales of a group of 4 rows, as fp32.
inline float32x4_t widen_scales(const uint8_t* fp16) {
  return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(fp16))));
}

template <int kMaxRows, class Tile, int... kRows>
void with_rows(int64_t rows, Tile& tile, std::integer_sequence<int, kRows...>) {
  // The first R (in order 1, 2, ...) that equals rows, or kMaxRows for anything above it.
  [[maybe_unused]] const bool ran = ((rows == kRows + 1 || kRows + 1 == kMaxRows
                                          ? (tile(std::integral_constant<int, kRows + 1>{}), true)
                                          : false) ||
                                     ...);
}

// tile(std::integral_constant<int, R>{}) with R = rows (1 <= rows <= kMaxRows): each x-row count
// is its own instantiation, so the x rows and their accumulators live in registers.
template <int kMaxRows, class Tile>
void with_tile_rows(int64_t rows, Tile&& tile) {
  with_rows<kMaxRows>(rows, tile, std::make_integer_sequence<int, kMaxRows>{});
}

}  // namespace
}  // namespace qvl::ops::kernels
