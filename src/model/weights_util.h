// Turning safetensors views into kernel weight references, with shape checks that name the
// tensor when a checkpoint does not match its config.
#pragma once

#include <string>
#include <vector>

#include "model/safetensors.h"
#include "ops/packed_matrix.h"
#include "ops/weight_ref.h"

namespace qvl {

// A 2-D matrix [rows, cols] of a floating type usable by the kernels.
ops::WeightRef matrix_weight(const WeightStore& store, const std::string& name, int64_t rows,
                             int64_t cols);
// The same matrix packed for the kernels in `type` (kExact keeps a view of the stored values).
// A matrix the store holds pre-packed is a view of those bytes; a different type or shape than
// asked for throws kCorrupt naming the tensor.
ops::PackedMatrix packed_weight(const WeightStore& store, const std::string& name, int64_t rows,
                                int64_t cols, ops::QuantType type);
// The type a [*, cols] matrix wanted as `wanted` gets: the packed types need whole blocks of
// ops::kBlockCols columns, so other widths stay kExact (fp32 math on the stored values). Every
// such fallback is counted (see exact_fallbacks) so the loader can say so once.
ops::QuantType fitting_type(ops::QuantType wanted, int64_t cols);
inline bool packable_width(int64_t cols) {
  return cols % ops::kBlockCols == 0;
}

struct ExactFallbacks {
  int64_t matrices = 0;
  int64_t example_cols = 0;  // the width of one of them, for the message
};
// Fallbacks made by fitting_type in this process so far.
ExactFallbacks exact_fallbacks();

// A 1-D vector of length n as float32.
std::vector<float> vector_weight(const WeightStore& store, const std::string& name, int64_t n);

}  // namespace qvl
