// Writes a safetensors file whose tensors are produced on the fly (synthetic models can be
// several GB; nothing is held in memory beyond one chunk or one tensor).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "model/safetensors.h"

namespace qvl {

// Receives a tensor's bytes, in one or more pieces.
using ByteSink = std::function<void(const void* data, size_t size)>;

struct TensorSpec {
  std::string name;
  DType dtype = DType::kBF16;
  std::vector<int64_t> shape;
  // Fills `count` elements starting at element `offset` into `out` (raw dtype bytes).
  std::function<void(int64_t offset, int64_t count, uint8_t* out)> fill;
  // Alternative to fill for tensors made in one piece (a packed matrix): hands all of the
  // tensor's bytes to the sink. Writing fails if they do not add up to the shape's size.
  std::function<void(const ByteSink& sink)> produce =
      {};  // `= {}`: {name, dtype, shape, fill} stays warning-free
};

// A tensor of raw bytes (dtype U8, shape [size]), e.g. an embedded text file.
TensorSpec byte_tensor(const std::string& name, std::string bytes);

struct SafeTensorsWriteOptions {
  // Extra "__metadata__" entries (string to string, as the format requires).
  std::map<std::string, std::string> metadata;
  // 0: tensors follow each other with no gaps (the data section starts 8-byte aligned).
  // Otherwise a power of two: the data section and every tensor start at a multiple of it. The
  // header is padded with spaces; gaps between tensors become U8 tensors named "__pad<N>", since
  // the format requires a data section without holes.
  size_t alignment = 0;
};

// Writes atomically: to path + ".partial", renamed when complete (removed on failure).
void write_safetensors(const std::string& path, const std::vector<TensorSpec>& tensors,
                       const SafeTensorsWriteOptions& options = {});

}  // namespace qvl
