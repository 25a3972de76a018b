// Which kernel weight type each part of the model uses for a --quant choice.
#pragma once

#include <string>

#include "ops/packed_matrix.h"

namespace qvl {

struct WeightTypes {
  ops::QuantType text = ops::QuantType::kExact;     // decoder projections
  ops::QuantType lm_head = ops::QuantType::kExact;  // output head (tied: a packed embedding copy)
  ops::QuantType vision = ops::QuantType::kExact;   // vision tower and mergers
};

// "exact": fp32 math on the stored weights everywhere (the parity oracle). "bf16": bf16
// everywhere. "q8" / "q4": decoder projections in that type; the lm_head in q8 (its errors
// act on every logit directly) and the vision tower in bf16 (it runs once per image, compute
// bound, where 8-bit weights would buy little speed and cost accuracy).
// lm_head: empty for that default, else "bf16", "q8" or "q4" for the head (not with "exact").
// Throws qvl::Error(kInvalidArgument) for other names.
WeightTypes weight_types_for(const std::string& quant, const std::string& lm_head = "");

}  // namespace qvl
