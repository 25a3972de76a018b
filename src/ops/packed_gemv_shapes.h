// Internal: the run-shape dispatch shared by the per-ISA GEMV / small-batch kernel files
// (packed_gemv_avx2.cpp, packed_gemv_avx512.cpp): a GroupRun of `count` groups x nx rows of x
// (see packed_kernels.h) becomes calls of the ISA's micro-kernel template rows<G, X>.
// Only templates here, instantiated with each translation unit's own lambda types (no linkage),
// so no ISA's instantiation can be shared with another (see packed_kernels.h).
#pragma once

#include "ops/packed_kernels.h"

namespace qvl::ops::kernels {

// Calls rows.template operator()<G, X>(part, out_part) over the run: small batches (nx > 1) as
// one call with G = 1; the GEMV in calls of at most kMaxG groups (what fits the registers).
template <int kMaxG, typename Rows>
void for_run_shapes(const GroupRun& w, int nx, float* out, Rows&& rows) {
  static_assert(kMaxRunXRows == 3 && kMaxG >= 1 && kMaxG <= kMaxRunGroups);
  if (nx == 3) return rows.template operator()<1, 3>(w, out);
  if (nx == 2) return rows.template operator()<1, 2>(w, out);
  for (int g0 = 0; g0 < w.count; g0 += kMaxG) {
    GroupRun part = w;
    part.first = w.first + g0 * w.group_bytes;
    part.count = w.count - g0 < kMaxG ? w.count - g0 : kMaxG;
    float* o = out + g0 * kRows;
    if constexpr (kMaxG >= 4) {
      if (part.count == 4) {
        rows.template operator()<4, 1>(part, o);
        continue;
      }
    }
    if constexpr (kMaxG >= 3) {
      if (part.count == 3) {
        rows.template operator()<3, 1>(part, o);
        continue;
      }
    }
    if constexpr (kMaxG >= 2) {
      if (part.count == 2) {
        rows.template operator()<2, 1>(part, o);
        continue;
      }
    }
    rows.template operator()<1, 1>(part, o);
  }
}

}  // namespace qvl::ops::kernels
