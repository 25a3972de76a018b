// fp32 values of GGUF tensor data, block by block, following the block layouts of the ggml format
// description (the same arithmetic, in the same order, as ggml's reference dequantizers, so the
// values equal what llama.cpp computes from the same bytes). These are the oracles every repack
// of a GGUF type is checked against.
#pragma once

#include <cstdint>

#include "model/gguf_types.h"

namespace qvl {

// Whether gguf_dequantize handles the type: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
// Q5_K, Q6_K.
bool gguf_can_dequantize(GgmlType type);

// Writes the n values stored in src (n a whole number of the type's blocks; src holding their
// bytes) to out. Throws Error(kUnsupported) for other types and kInvalidArgument for partial
// blocks.
void gguf_dequantize(GgmlType type, const uint8_t* src, int64_t n, float* out);

}  // namespace qvl
