// Weight types per --quant and the lm_head override.
#include "model/weight_types.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace qvl {
namespace {

using ops::QuantType;

TEST(WeightTypes, HeadDefaultsToQ8ForQuantizedDecoders) {
  for (const char* quant : {"q8", "q4"}) {
    const WeightTypes t = weight_types_for(quant);
    EXPECT_EQ(t.lm_head, QuantType::kQ8) << quant;
    EXPECT_EQ(t.vision_patch, QuantType::kBF16) << quant;
  }
  EXPECT_EQ(weight_types_for("bf16").lm_head, QuantType::kBF16);
  EXPECT_EQ(weight_types_for("exact").lm_head, QuantType::kExact);
}

TEST(WeightTypes, LmHeadOverrideChangesOnlyTheHead) {
  const WeightTypes t = weight_types_for("q4", "q4");
  EXPECT_EQ(t.lm_head, QuantType::kQ4);
  EXPECT_EQ(t.text, QuantType::kQ4);
  EXPECT_EQ(t.vision, QuantType::kQ8);
  EXPECT_EQ(weight_types_for("q8", "bf16").lm_head, QuantType::kBF16);
  EXPECT_EQ(weight_types_for("q8", "").lm_head, QuantType::kQ8);
}

// q8 and q4 matrices (vision tower, head, decoder projections) are stored in the int8 GEMM's
// strips (the same values); other types stay as they are.
TEST(WeightTypes, Q8AndQ4AreStoredAsStrips) {
  EXPECT_EQ(stored_type(QuantType::kQ8), QuantType::kQ8Strips);
  EXPECT_EQ(stored_type(QuantType::kQ4), QuantType::kQ4Strips);
  for (QuantType t : {QuantType::kExact, QuantType::kBF16}) EXPECT_EQ(stored_type(t), t);
  EXPECT_EQ(ops::values_type(QuantType::kQ8Strips), QuantType::kQ8);
  EXPECT_EQ(ops::values_type(QuantType::kQ4Strips), QuantType::kQ4);
  EXPECT_STREQ(ops::quant_values_name(QuantType::kQ8Strips), "q8");
  EXPECT_STREQ(ops::quant_values_name(QuantType::kQ4Strips), "q4");
}

// The vision tower follows the decoder: q8 next to q4 (within 1% of q4's own error), bf16 next
// to q8 and bf16; an explicit choice wins either way.
TEST(WeightTypes, VisionDefaultFollowsTheDecoder) {
  EXPECT_EQ(weight_types_for("q4").vision, QuantType::kQ8);
  EXPECT_EQ(weight_types_for("q8").vision, QuantType::kBF16);
  EXPECT_EQ(weight_types_for("bf16").vision, QuantType::kBF16);
  EXPECT_EQ(weight_types_for("q4", "", "bf16").vision, QuantType::kBF16);
  EXPECT_EQ(weight_types_for("q8", "", "q8").vision, QuantType::kQ8);
  EXPECT_EQ(weight_types_for("exact").vision, QuantType::kExact);
}

TEST(WeightTypes, LmHeadOverrideRejectsExact) {
  for (const auto& [quant, head] : {std::pair{"exact", "q4"}, std::pair{"q8", "exact"}}) {
    try {
      weight_types_for(quant, head);
      FAIL() << quant << " with head " << head;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace qvl
