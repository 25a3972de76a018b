// Internal: the run-shape dispatch shared by the per-ISA GEMV / small-batch kernel files
// (x86/packed_gemv_avx2.cpp, x86/packed_gemv_avx512.cpp, arm/packed_gemv_neon.cpp,
// arm/packed_gemv_bfmmla_neon_bf16.cpp): a GroupRun of `count` groups x nx rows of x
// (see packed_kernels.h) becomes calls of the ISA's micro-kernel template rows<G, X>.
// Only templates here, instantiated with each translation unit's own lambda types (no linkage),
// so no ISA's instantiation can be shared with another (see packed_kernels.h).
#pragma once

#include "ops/packed_kernels.h"

namespace qvl::ops::kernels {

// One call of rows<G, X> with G = part.count <= kMaxBatchG and X = n <= kMaxX (n >= 1).
template <int kMaxX, int kMaxBatchG, typename Rows>
void run_batch_shape(const GroupRun& part, int n, int i0, float* o, Rows& rows) {
  const auto with_x = [&]<int G>() {
    switch (n) {
      case 1:
        return rows.template operator()<G, 1>(part, i0, o);
      case 2:
        return rows.template operator()<G, 2>(part, i0, o);
      case 3:
        if constexpr (kMaxX >= 3) return rows.template operator()<G, 3>(part, i0, o);
        break;
      default:
        if constexpr (kMaxX >= 4) return rows.template operator()<G, 4>(part, i0, o);
        break;
    }
  };
  if constexpr (kMaxBatchG >= 2) {
    if (part.count == 2) return with_x.template operator()<2>();
  }
  with_x.template operator()<1>();
}

// Calls rows.template operator()<G, X>(part, first_x_row, out_part) over the run: small batches
// (nx > 1) in calls of at most kMaxBatchG groups x kMaxX rows of x; the GEMV in calls of at most
// kMaxG groups (what fits the registers).
template <int kMaxG, int kMaxX, int kMaxBatchG, typename Rows>
void for_run_shapes(const GroupRun& w, int nx, float* out, Rows&& rows) {
  static_assert(kMaxRunBatchGroups == 2);
  static_assert(kMaxG >= 1 && kMaxG <= kMaxRunGroups);
  static_assert(kMaxX >= 2 && kMaxX <= kMaxRunXRows);
  static_assert(kMaxBatchG >= 1 && kMaxBatchG <= kMaxRunBatchGroups);
  if (nx > 1) {
    for (int g0 = 0; g0 < w.count; g0 += kMaxBatchG) {
      GroupRun part = w;
      part.first = w.first + g0 * w.group_bytes;
      part.count = w.count - g0 < kMaxBatchG ? w.count - g0 : kMaxBatchG;
      for (int i0 = 0; i0 < nx; i0 += kMaxX) {
        // Output (x row i, group g) at (i * w.count + g) * kRows; a call writes its own block of
        // rows x groups, copied into place below.
        float o[kMaxBatchG * kMaxX * kRows];
        const int n = nx - i0 < kMaxX ? nx - i0 : kMaxX;
        run_batch_shape<kMaxX, kMaxBatchG>(part, n, i0, o, rows);
        for (int i = 0; i < n; ++i) {
          for (int g = 0; g < part.count; ++g) {
            for (int r = 0; r < kRows; ++r) {
              out[((i0 + i) * w.count + g0 + g) * kRows + r] = o[(i * part.count + g) * kRows + r];
            }
          }
        }
      }
    }
    return;
  }
  for (int g0 = 0; g0 < w.count; g0 += kMaxG) {
    GroupRun part = w;
    part.first = w.first + g0 * w.group_bytes;
    part.count = w.count - g0 < kMaxG ? w.count - g0 : kMaxG;
    float* o = out + g0 * kRows;
    if constexpr (kMaxG >= 4) {
      if (part.count == 4) {
        rows.template operator()<4, 1>(part, 0, o);
        continue;
      }
    }
    if constexpr (kMaxG >= 3) {
      if (part.count == 3) {
        rows.template operator()<3, 1>(part, 0, o);
        continue;
      }
    }
    if constexpr (kMaxG >= 2) {
      if (part.count == 2) {
        rows.template operator()<2, 1>(part, 0, o);
        continue;
      }
    }
    rows.template operator()<1, 1>(part, 0, o);
  }
}

// x rows [i, ...) of a QuantX. Internal linkage, so each ISA's file keeps its own copy.
static inline QuantX quant_rows_from(const QuantX& x, int i) {
  const int64_t b = i * x.stride_blocks;
  return {x.q + b * kCols, x.scale + b, x.sum + b, x.stride_blocks, x.scaled_sum + b};
}

}  // namespace qvl::ops::kernels
