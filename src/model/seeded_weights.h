// Seeded golden weights: a golden folder's model.safetensors is generated data, so the repository
// keeps only the small spec it comes from (seeded_weights.json, written next to the golden outputs
// by scripts/hfref/seeded_weights.py) and this code regenerates the file bit for bit. Every value
// comes from an integer PRNG (no floating-point library call), so any machine gets the same bits.
//
// Element j (row-major) of tensor NAME is
//   z = output j of splitmix64 started at fnv1a64(NAME) ^ seed
//   k = z mod (2 * amplitude + 1) - amplitude
//   value = bf16_rne(float32(base) + float32(k) * 2^scale_log2)
// and rows outside the tensor's non-zero row ranges (vocabulary tables) are zero.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/safetensors_writer.h"

namespace qvl {

struct SeededTensorRule {
  std::string name;
  std::vector<int64_t> shape;
  float base = 0.0f;
  int64_t amplitude = 0;
  int scale_log2 = 0;
  // [begin, end) ranges of rows (first dimension) that keep their values; the others are zero.
  // Without ranges every row keeps its values.
  bool some_rows_zero = false;
  std::vector<std::pair<int64_t, int64_t>> nonzero_rows;
};

struct SeededWeightsSpec {
  uint64_t seed = 0;
  std::string format_metadata;            // the value of the file's __metadata__ "format" entry
  std::vector<SeededTensorRule> tensors;  // in file order
  uint64_t bytes = 0;                     // size of the file they make
  std::string sha256;                     // its SHA-256, lowercase hex
};

// Parses seeded_weights.json; throws Error(kCorrupt / kUnsupported) naming what is wrong.
SeededWeightsSpec parse_seeded_weights_spec(const std::string& json_text);

uint64_t fnv1a64(std::string_view text);
// Output `index` (0-based) of splitmix64 started at `state`.
uint64_t splitmix64_at(uint64_t state, uint64_t index);
// Element `index` of the tensor before any row is zeroed, as a float (exact in bf16 for the
// rules the generator uses; written rounded to nearest even).
float seeded_value(const SeededTensorRule& rule, uint64_t stream_state, uint64_t index);

// The tensors of the spec, for write_safetensors.
std::vector<TensorSpec> seeded_tensor_specs(const SeededWeightsSpec& spec);

// Writes the spec's model.safetensors to `path` and checks its size and SHA-256 against the spec;
// on a mismatch the file is removed and Error(kCorrupt) says so.
void write_seeded_model(const SeededWeightsSpec& spec, const std::string& path);

}  // namespace qvl
