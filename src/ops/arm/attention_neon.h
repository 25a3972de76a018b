// Internal: the aarch64 NEON attention kernels (ops/attention_kernels.h, ops/attention_decode.h).
// ARMv8.0 baseline (ASIMD is always there), so every NEON level uses the same entries.
#pragma once

#include <cstdint>

#include "ops/attention_decode.h"
#include "ops/attention_kernels.h"

namespace qvl::ops::attention_kernels {

// The flash-attention task (see attention_kernels.h): computes out for queries [q_begin, q_end)
// of every query head of kv heads [kvh_begin, kvh_end). head_dim must be a multiple of 16.
// scratch: task_scratch_floats(rows, head_dim, kvh_end - kvh_begin) floats, rows = queries *
// group.
void task_neon(const Problem& p, int64_t kvh_begin, int64_t kvh_end, int64_t q_begin, int64_t q_end,
               float* scratch);

// The decode span kernel (see attention_decode.h) for fp32, half and 8-bit K/V.
void decode_span_neon(const Problem& p, const DecodeTask& task);

}  // namespace qvl::ops::attention_kernels
