// Optional observer of intermediate tensors (parity tests compare them with the goldens).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace qvl {

// key follows the golden data's names, e.g. "text.layer_out.3"; data is [rows, cols] row-major.
using TensorTap =
    std::function<void(const std::string& key, const float* data, int64_t rows, int64_t cols)>;

}  // namespace qvl
