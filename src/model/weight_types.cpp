#include "model/weight_types.h"

#include "base/error.h"

namespace qvl {

namespace {

WeightTypes default_types(ops::QuantType t) {
  using ops::QuantType;
  switch (t) {
    case QuantType::kExact:
      return {t, t, t};
    case QuantType::kBF16:
      return {t, t, t};
    case QuantType::kQ8:
      return {t, QuantType::kQ8, QuantType::kBF16};
    case QuantType::kQ4:
      return {t, QuantType::kQ8, QuantType::kBF16};
  }
  return {};
}

}  // namespace

WeightTypes weight_types_for(const std::string& quant, const std::string& lm_head) {
  WeightTypes types = default_types(ops::parse_quant_type(quant));
  if (lm_head.empty()) return types;
  const ops::QuantType head = ops::parse_quant_type(lm_head);
  if (head == ops::QuantType::kExact || types.text == ops::QuantType::kExact) {
    fail(ErrorCode::kInvalidArgument,
         "the lm_head type can be bf16, q8 or q4 with bf16, q8 or q4 weights (exact keeps the "
         "stored head)");
  }
  types.lm_head = head;
  return types;
}

}  // namespace qvl
