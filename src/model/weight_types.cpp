#include "model/weight_types.h"

#include "base/error.h"

namespace qvl {

void check_vision_quant(const std::string& vision_quant) {
  if (vision_quant.empty() || vision_quant == "bf16" || vision_quant == "q8") return;
  fail(ErrorCode::kInvalidArgument,
       "unknown vision weight type '" + vision_quant + "' (expected bf16 or q8)");
}

ops::QuantType stored_type(ops::QuantType type) {
  if (type == ops::QuantType::kQ8) return ops::QuantType::kQ8Strips;
  return type == ops::QuantType::kQ4 ? ops::QuantType::kQ4Strips : type;
}

WeightTypes weight_types_for(const std::string& quant, const std::string& lm_head,
                             const std::string& vision_quant) {
  using ops::QuantType;
  const QuantType t = ops::parse_quant_type(quant);
  check_vision_quant(vision_quant);
  if (t == QuantType::kExact) {
    if (!vision_quant.empty()) {
      fail(ErrorCode::kInvalidArgument,
           "--vision-quant does not apply to exact (fp32 math on the stored weights everywhere)");
    }
    if (!lm_head.empty()) {
      fail(ErrorCode::kInvalidArgument,
           "the lm_head type can be bf16, q8 or q4 with bf16, q8 or q4 weights (exact keeps the "
           "stored head)");
    }
    return {t, t, t, t};
  }
  WeightTypes types{t, t == QuantType::kBF16 ? t : QuantType::kQ8, QuantType::kBF16,
                    QuantType::kBF16};
  // q4 decoders take a q8 vision tower by default: its error is within 1% of q4's own (tiny
  // goldens: next-token KL 7.71e-6 -> 7.74e-6) and it saves ~0.38 GB on the 2B model. Next to
  // q8 or bf16 decoders it would add 10% or more to their KL, so they keep bf16.
  const bool q8_vision = vision_quant == "q8" || (vision_quant.empty() && t == QuantType::kQ4);
  if (q8_vision) types.vision = QuantType::kQ8;
  if (!lm_head.empty()) {
    const QuantType head = ops::parse_quant_type(lm_head);
    if (head == QuantType::kExact) {
      fail(ErrorCode::kInvalidArgument,
           "the lm_head type can be bf16, q8 or q4 with bf16, q8 or q4 weights (exact keeps the "
           "stored head)");
    }
    types.lm_head = head;
  }
  return types;
}

}  // namespace qvl
