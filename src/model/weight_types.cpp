#include "model/weight_types.h"

namespace qvl {

WeightTypes weight_types_for(const std::string& quant) {
  using ops::QuantType;
  const QuantType t = ops::parse_quant_type(quant);
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

}  // namespace qvl
