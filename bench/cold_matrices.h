// Shared by the decode benchmarks: packed matrices of random weights, and enough copies of one
// (views of copied bytes, >= cold_bytes() in all) that none stays cached, as decode reads weights.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/aligned_buffer.h"
#include "ops/packed_matrix.h"

namespace qvl::bench {

// Bytes that no cache of this machine holds: 4x its last-level cache, at least 256 MiB (some
// servers report an L3 of 500 MB and more, which a fixed size would fit in).
size_t cold_bytes();

// Uniform in [-0.1, 0.1) from a cheap generator (the lm_head alone has 311 M weights, and their
// values do not change the work), packed as `type`.
ops::PackedMatrix random_packed(ops::QuantType type, int64_t rows, int64_t cols);

struct ColdMatrices {
  ops::PackedMatrix original;
  std::vector<AlignedBuffer<uint8_t>> bytes;
  std::vector<ops::PackedMatrix> views;  // cycle through them
};

// Built once per (type, rows, cols) and kept for the process.
const ColdMatrices& cold_matrices(ops::QuantType type, int64_t rows, int64_t cols);

}  // namespace qvl::bench
