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
// vision_quant picks the vision tower's big matrices: "" (default) or "bf16", or "q8" (the patch
// embedding stays bf16). The default is bf16: the tower runs once per image, compute bound, and
// q8 costs it accuracy (see README, weight types) for memory (about 0.4 GB less on the 2B model).
// Throws qvl::Error(kInvalidArgument) for unknown names, and for a vision_quant with "exact".
WeightTypes weight_types_for(const std::string& quant, const std::string& lm_head = "",
                             const std::string& vision_quant = "");

// Checks a --vision-quant value ("", "bf16" or "q8"); throws qvl::Error(kInvalidArgument).
void check_vision_quant(const std::string& vision_quant);

}  // namespace qvl
