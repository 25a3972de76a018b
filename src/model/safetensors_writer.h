// Writes a safetensors file whose tensors are produced on the fly (synthetic models can be
// several GB; nothing is held in memory beyond one chunk).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/safetensors.h"

namespace qvl {

struct TensorSpec {
  std::string name;
  DType dtype = DType::kBF16;
  std::vector<int64_t> shape;
  // Fills `count` elements starting at element `offset` into `out` (raw dtype bytes).
  std::function<void(int64_t offset, int64_t count, uint8_t* out)> fill;
};

// Writes atomically: to path + ".partial", renamed when complete.
void write_safetensors(const std::string& path, const std::vector<TensorSpec>& tensors);

}  // namespace qvl
