// Which kernel weight type each part of the model uses for a --quant (and --vision-quant) choice.
#pragma once

#include <string>

#include "ops/packed_matrix.h"

namespace qvl {

struct WeightTypes {
  ops::QuantType text = ops::QuantType::kExact;     // decoder projections
  ops::QuantType lm_head = ops::QuantType::kExact;  // output head (tied: a packed embedding copy)
  // Vision tower: the big matrices (blocks' qkv, proj, fc1, fc2; mergers' fc1, fc2) ...
  ops::QuantType vision = ops::QuantType::kExact;
  // ... and the patch embedding (small, and it sees raw pixels: kept at least bf16).
  ops::QuantType vision_patch = ops::QuantType::kExact;
};

// "exact": fp32 math on the stored weights everywhere (the parity oracle). "bf16": bf16
// everywhere. "q8" / "q4": decoder projections in that type; the lm_head in q8 (its errors
// act on every logit directly). lm_head overrides the head's type: "bf16", "q8" or "q4" with the
// non-exact types ("" = that default).
// vision_quant picks the vision tower's big matrices: "bf16" or "q8" (the patch embedding stays
// bf16); "" is q8 with q4 decoders (where it adds < 1% to their error and saves ~0.4 GB on the
// 2B model) and bf16 otherwise (next to q8/bf16 decoders q8 would be a visible share of the
// error; see README, weight types).
// Throws qvl::Error(kInvalidArgument) for unknown names, and for a vision_quant with "exact".
WeightTypes weight_types_for(const std::string& quant, const std::string& lm_head = "",
                             const std::string& vision_quant = "");

// How model matrices store a WeightTypes type: q8 as kQ8Strips and q4 as kQ4Strips (the int8
// GEMM's layout, read in place by its tiles at any number of rows: no repack per call, and below
// 16 rows faster than the GEMV and small-batch kernels on the groups, see
// bench/small_batch_bench.cpp), others as they are.
ops::QuantType stored_type(ops::QuantType type);

// Checks a --vision-quant value ("", "bf16" or "q8"); throws qvl::Error(kInvalidArgument).
void check_vision_quant(const std::string& vision_quant);

}  // namespace qvl
