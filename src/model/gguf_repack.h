// Q8_0 matrices repacked at load into qvl's q8 layout (ops::QuantType::kQ8Strips), losslessly:
// both store a block of 32 weights as an fp16 scale times int8 quants. ggml's quantizer makes
// each block's largest |q| 127 (d = absmax / 127), so qvl's packer, given the values d * q,
// finds absmax = 127 * d, the same scale d and the same q: the repacked bytes (a byte shuffle of
// the blocks) are those qvl's packer makes from the dequantized weights, without their fp32
// copy (4 bytes a weight) and ~15x faster than that packing.
#pragma once

#include <cstdint>
#include <optional>

#include "base/aligned_buffer.h"
#include "model/gguf_file.h"
#include "ops/packed_matrix.h"

namespace qvl {

// The kQ8Strips bytes of a 2-D Q8_0 tensor [rows, cols], or nullopt when some block is not
// exactly representable (a nonzero block whose largest |q| is not 127, e.g. from another
// quantizer, or q = -128): such a tensor is dequantized instead.
std::optional<AlignedBuffer<uint8_t>> repack_q8_0_as_strips(const GgufTensor& t);

// A 2-D tensor of any type gguf_dequantize reads, packed into a packed type (`type` as
// ops::PackedMatrix::pack makes it from the dequantized values, so q8/q4 round again) through
// fp32 chunks of a few MB: no fp32 copy of the matrix. cols must be a multiple of 32.
AlignedBuffer<uint8_t> pack_gguf_matrix(const GgufTensor& t, ops::QuantType type);

}  // namespace qvl
