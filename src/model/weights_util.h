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
// A 1-D vector of length n as float32.
std::vector<float> vector_weight(const WeightStore& store, const std::string& name, int64_t n);

}  // namespace qvl
