// Internal: the x86 micro-kernels of the int8 GEMM (layouts in ops/int8_gemm_kernels.h).
// Plain declarations only (see packed_kernels.h).
#pragma once

#include <cstdint>

#include "ops/int8_gemm_kernels.h"

namespace qvl::ops::kernels {

// AVX2: q8 by vpmaddwd on int16 weights and x (kPairs16, kInt16), q4 by vpmaddubsw(nibble, x)
// summed in 16 bit over a block (see int8_gemm_avx2.cpp).
void int8_tile_q8_avx2(const Int8Tile& t);
void int8_tile_q4_avx2(const Int8Tile& t);
// AVX2 on stored q8 strips in place with 7-bit x (Int8XLayout::kInt7): vpmaddubsw(q + 128, x),
// whose int16 pairs cannot saturate (255 * 63 * 2 < 32768), then vpmaddwd by ones and vpaddd: 3
// instructions per 32 multiply-adds instead of 4 (int8_gemm_avx2.cpp), less 128 * sum(x).
void int8_tile_q8s_avx2_x7(const Int8Tile& t);
// AVX2 on stored q4 strips in place (decode and batches below kGemmMinRows): vpmaddubsw(nibble,
// x) summed in int16 over a block, as the repacked q4 tile. Against the 256-bit VNNI tile with
// vpdpbusd as vpmaddubsw + vpmaddwd by ones that it replaced (same bits; Zen 5 at --isa avx2, one
// thread, 512 x 2048 q4 strips in cache): m 1 131 -> 151, m 2 143 -> 200, m 4 140 -> 233,
// m 8 135 -> 228 GOP/s.
void int8_tile_q4s_avx2(const Int8Tile& t);
// AVX2 on stored q8 strips in place (decode and batches below kGemmMinRows), exact: the stored
// bytes split in nibbles, each summed in int16 as q4 (2 vpmaddubsw + 2 vpaddw per 32
// multiply-adds), 3 x rows. Against the exact vpdpbusd emulation it replaced (same bits; Zen 5
// at --isa avx2, one thread, 512 x 2048 q8 strips in cache): m 1 57 -> 85, m 4 63 -> 107,
// m 8 83 -> 121 GOP/s.
void int8_tile_q8s_avx2(const Int8Tile& t);
// AVX-VNNI (256-bit vpdpbusd) and AVX-512 VNNI (512-bit).
void int8_tile_q8_avxvnni(const Int8Tile& t);
void int8_tile_q4_avxvnni(const Int8Tile& t);
// The AVX-VNNI kernels with vpdpbusd emulated in AVX2 (tests only: runs their code anywhere).
void int8_tile_q8_avxvnni_emulated(const Int8Tile& t);
void int8_tile_q4_avxvnni_emulated(const Int8Tile& t);
void int8_tile_q8_avx512(const Int8Tile& t);
void int8_tile_q4_avx512(const Int8Tile& t);
// The stored-strip variants (kQ8Strips / kQ4Strips in place; x as int8 q).
void int8_tile_q8s_avxvnni(const Int8Tile& t);
void int8_tile_q8s_avxvnni_emulated(const Int8Tile& t);
void int8_tile_q8s_avx512(const Int8Tile& t);
void int8_tile_q4s_avxvnni(const Int8Tile& t);
void int8_tile_q4s_avxvnni_emulated(const Int8Tile& t);
void int8_tile_q4s_avx512(const Int8Tile& t);

// Repacks `strips` strips of nr rows starting at group g0 (row 4 * g0), blocks [b0, b0 + nbc),
// into panel (strip s at s * nbc * int8_strip_block_bytes(nr, weights)). Sums are written for q8
// only; kPairs16 is for q8 only.
// The AVX2 implementations of int8_repack and int8_widen.
void int8_repack_avx2(const Int8RepackSource& src, int64_t g0, int64_t strips, int64_t nr,
                      int64_t b0, int64_t nbc, Int8PanelWeights weights, uint8_t* panel);

// dst[j] = src[j] for j < n (n a multiple of 32): x widened for Int8XLayout::kInt16.
void int8_widen_avx2(const int8_t* src, int64_t n, int16_t* dst);

// Whether the CPU has AVX-VNNI (256-bit vpdpbusd).
bool cpu_has_avx_vnni();

inline constexpr int64_t kInt8Avx2Q4XRows = 6;
inline constexpr int64_t kInt8Avx2Q8XRows = 6;
inline constexpr int64_t kInt8Avx2Q8sXRows = 3;
inline constexpr int64_t kInt8AvxVnniXRows = 6;
inline constexpr int64_t kInt8Avx2X7XRows = 5;
inline constexpr int64_t kInt8Avx512XRows = 6;
// The AVX-512 stored-strip tiles: a decode step of 8 streams in one pass.
inline constexpr int64_t kInt8Avx512StoredXRows = 8;

}  // namespace qvl::ops::kernels
