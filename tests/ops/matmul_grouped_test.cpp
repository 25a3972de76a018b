// ops::matmul_grouped (a mixture of experts' tokens grouped by expert): every output has the bits
// of a matmul call on its rows alone, at every ISA level of this CPU, for every weight type, with
// row ranges that are empty, single rows, partial x tiles and several x blocks.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "isa_test_util.h"
#include "ops/packed_matrix.h"

namespace qvl::ops {
namespace {

TEST(MatmulGrouped, EveryOutputGetsTheBitsOfItsOwnMatmul) {
  // k = 96: three blocks; matrices of 40 (a partial strip) and 72 rows.
  const int64_t k = 96, m = 150;
  const std::vector<float> x = testing::random_vector(static_cast<size_t>(m * k), 1, 1.0f);
  const std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 1},    {1, 1}, {1, 16}, {16, 19},
                                                           {19, 150}, {3, 4}, {0, 150}};
  for (QuantType type : {QuantType::kExact, QuantType::kBF16, QuantType::kQ8, QuantType::kQ4,
                         QuantType::kQ8Strips, QuantType::kQ4Strips}) {
    std::vector<std::vector<float>> values;
    std::vector<PackedMatrix> matrices;
    for (size_t j = 0; j < ranges.size(); ++j) {
      const int64_t rows = j % 2 == 0 ? 40 : 72;
      values.push_back(testing::random_vector(static_cast<size_t>(rows * k), 10 + j, 0.1f));
      matrices.push_back(
          PackedMatrix::pack(WeightRef{WeightType::kF32, values.back().data(), rows, k}, type));
    }
    for (IsaLevel isa : testing::available_isas()) {
      SCOPED_TRACE(std::string(quant_type_name(type)) + " at " + isa_level_name(isa));
      const testing::IsaScope scope(isa);
      std::vector<std::vector<float>> got(ranges.size()), want(ranges.size());
      std::vector<GroupedOutput> outputs;
      for (size_t j = 0; j < ranges.size(); ++j) {
        const auto [b, e] = ranges[j];
        got[j].assign(static_cast<size_t>((e - b) * matrices[j].rows()), -1.0f);
        want[j].assign(got[j].size(), -2.0f);
        outputs.push_back({&matrices[j], b, e, got[j].data()});
        matmul(x.data() + b * k, e - b, matrices[j], nullptr, want[j].data());
      }
      matmul_grouped(x.data(), outputs.data(), outputs.size());
      for (size_t j = 0; j < ranges.size(); ++j) {
        if (got[j].empty()) continue;  // an empty range writes nothing (memcmp takes no null)
        EXPECT_EQ(std::memcmp(got[j].data(), want[j].data(), sizeof(float) * got[j].size()), 0)
            << "rows " << ranges[j].first << "-" << ranges[j].second;
      }
    }
  }
}

}  // namespace
}  // namespace qvl::ops
