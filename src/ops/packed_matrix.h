// Weight matrices in kernel-friendly layouts (bf16, int8, int4) and the matmul that uses them,
// with runtime ISA dispatch (scalar; x86-64: AVX2+FMA+F16C, AVX-512 with BF16 and VNNI; aarch64:
// NEON, dotprod, i8mm; see ops/isa.h).
//
// Packed layout (kBF16, kQ8, kQ4). Rows are taken in groups of kGroupRows = 4 (the last group is
// padded with zero rows) and columns in blocks of kBlockCols = 32, so cols must be a multiple of
// 32. Each group is one contiguous run of bytes, groups follow each other in row order:
//   group = [scales: for each block b, 4 x fp16 (one per row)]   (kQ8 and kQ4 only)
//           [data:   for each block b, a tile of 4 rows x 32 columns]
// so a GEMV streams two sequential ranges per group, and with nb = cols / 32 a multiple of 8 every
// tile starts 64-byte aligned. Tiles store row 0, then row 1, 2, 3:
//   kBF16: 32 bf16 per row (64 bytes; tile 256 bytes). Weights are rounded to nearest even.
//   kQ8:   32 int8 q in [-127, 127] per row (tile 128 bytes); value = scale * q, symmetric, with
//          scale = fp16(block absmax / 127). 1.0625 bytes per weight.
//   kQ4:   16 bytes per row (tile 64 bytes): byte j holds column j in its low nibble and column
//          j + 16 in its high nibble, each q + 8 with q in [-7, 7]; value = scale * q with
//          scale = fp16(block absmax / 7). 0.5625 bytes per weight.
//   kQ8Strips: the kQ8 values and scales, stored for the int8 GEMM instead of the GEMV (matrices
//          only ever multiplied with many rows: the vision tower's), so it reads them as stored.
//          Rows in strips of kStripRows = 32 (the last padded with zero rows), strips in row
//          order; per strip, for each block b of 32 columns (kStripBlockBytes = 1088 bytes):
//            [8 quads][32 rows][4 bytes]  q + 128 of columns 4 * quad .. 4 * quad + 3 (unsigned)
//            [32 x fp16]                  the rows' block scales
//          1.0625 bytes per weight, like kQ8.
//   kQ4Strips: the kQ4 values and scales in the same strips (kQ4StripBlockBytes = 576 per block):
//            [4 pairs][32 rows][4 bytes]  byte j of pair p: column 8p + j in the low nibble, column
//                                         8p + 4 + j in the high one, each q + 8 (quads 2p, 2p + 1)
//            [32 x fp16]                  the rows' block scales
//          0.5625 bytes per weight, like kQ4.
// Quantization is round-to-nearest-even against the fp16-rounded scale, deterministic. The error
// of a weight is at most half a scale step: absmax / 254 (q8), absmax / 14 (q4), up to the fp16
// rounding of the scale (relative 2^-11; blocks with absmax below ~1e-2 (q8) / ~5e-4 (q4) get an
// fp16-subnormal scale and a proportionally coarser step).
//
// Activations in matmul. From m >= 16 rows (prompt prefill, vision) on x86-64 at AVX2 and up,
// kQ8/kQ4 use an int8 GEMM by default (x quantized exactly as below, weights repacked per cache
// block, see int8_gemm.h; on aarch64 only the stored strips do, kQ8/kQ4 groups take the fp32
// GEMM); kBF16 (and kQ8/kQ4 with GemmActivations::kF32) a blocked GEMM that dequantizes
// weight blocks to fp32 (exact: bf16 widens, scale * q is exact in fp32) and multiplies them with
// fp32 activations, so its only error is the weights' own plus fp32 accumulation; except kBF16 on
// AVX-512 and at ARM i8mm, where it rounds x to bf16 for vdpbf16ps / BFMMLA (products exact, fp32
// sums, BFMMLA's rounded to odd: relative error <= 2^-8 per activation). Below that (decode
// GEMV, small batches, the scalar fallback): kBF16 uses fp32 activations on the scalar, AVX2 and
// baseline NEON paths and rounds them to bf16 for vdpbf16ps on AVX-512 and BFMMLA at ARM i8mm
// (products then accumulate in fp32; at i8mm with the GEMM's bits). kQ8/kQ4 quantize each
// activation block of 32 to int8 (symmetric, scale absmax / 127, round to nearest even) and take
// integer block dot products (q8 on AVX2: vpmaddubsw on |x| and sign-adjusted weights; q4 and
// AVX-512: vpmaddubsw / vpdpbusd on unsigned weights, the +8 / +128 offset taken off as offset *
// sum(x); NEON: SMULL / SMLAL2 into exact int32 dots), then scale in fp32. So besides the weight
// error, each output carries at most sum over blocks of sum|w| * absmax(x) / 254 of activation
// rounding.
//
// Kernels (packed_gemv.cpp): m == 1 streams up to 4 groups at once, whole rows, sharing each x
// block; 1 < m < 16 takes pairs of groups' whole rows against all rows of x, unpacking a tile
// once for several of them. Both do the same arithmetic per (x row, group), so a row's result
// does not depend on the batch below 16 rows (bit for bit); on AVX2, q8/q4 rows also get the int8
// GEMM's bits (see packed_gemv_avx2_quant.cpp), so their result does not depend on m at all.
// kQ8Strips and kQ4Strips always take the int8 GEMM (any m) at every SIMD level (AVX2 and up,
// NEON SMULL, SDOT or USMMLA tiles), and its scalar oracle below.
// m >= 16 uses a GEMM (int8 for q8/q4: int8_gemm.cpp; fp32/bf16: register tiles of 6 x rows x 16
// weight rows on AVX2 and NEON, 12 x 32 on AVX-512, BFMMLA tiles at ARM i8mm, see packed_gemm.h).
// The first use of each SIMD level is checked against the scalar kernels (see best_isa).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "base/aligned_buffer.h"
#include "ops/isa.h"
#include "ops/weight_ref.h"

namespace qvl::ops {

enum class QuantType { kExact, kBF16, kQ8, kQ4, kQ8Strips, kQ4Strips };

// "exact", "bf16", "q8", "q4", "q8-strips", "q4-strips"
const char* quant_type_name(QuantType type);
// The user's type for the values a type holds (kQ8 for kQ8Strips, kQ4 for kQ4Strips), and its
// name.
QuantType values_type(QuantType type);
const char* quant_values_name(QuantType type);
// Parses a user's weight type (exact, bf16, q8, q4: not the internal strip types); throws
// qvl::Error(kInvalidArgument) otherwise.
QuantType parse_quant_type(const std::string& name);

inline constexpr int64_t kGroupRows = 4;
inline constexpr int64_t kBlockCols = 32;
inline constexpr int64_t kStripRows = 32;
inline constexpr int64_t kStripBlockBytes = kStripRows * (kBlockCols + 2);
inline constexpr int64_t kQ4StripBlockBytes = kStripRows * (kBlockCols / 2 + 2);

constexpr bool in_strips(QuantType type) {
  return type == QuantType::kQ8Strips || type == QuantType::kQ4Strips;
}
// Bytes of one block of 32 columns of a strip (in_strips types only).
constexpr int64_t strip_block_bytes(QuantType type) {
  return type == QuantType::kQ4Strips ? kQ4StripBlockBytes : kStripBlockBytes;
}

// Size in bytes of the packed representation of a [rows, cols] matrix of a packed type
// (kBF16/kQ8/kQ4). Throws qvl::Error(kUnsupported) for shapes the type cannot hold.
size_t packed_size_bytes(QuantType type, int64_t rows, int64_t cols);

// A weight matrix [rows, cols] in a kernel-friendly layout. Owns its bytes (packed at load) or
// views bytes that live elsewhere (a pre-packed mmapped file; see bytes()/view()). Move-only.
class PackedMatrix {
 public:
  PackedMatrix() = default;
  PackedMatrix(PackedMatrix&&) noexcept = default;
  PackedMatrix& operator=(PackedMatrix&&) noexcept = default;

  // kExact keeps a view of the source (no copy; fp32 math on the stored values, the exact-mode
  // ops::matmul). Others convert/quantize, multi-threaded via ThreadPool::global(); they need
  // cols % 32 == 0 and throw qvl::Error(kUnsupported) otherwise.
  static PackedMatrix pack(const WeightRef& source, QuantType type);
  // Re-creates a matrix from bytes() of a packed one (same type/rows/cols), without copying; the
  // bytes must outlive the result. kExact views are taken as f32 [rows, cols]. Throws
  // qvl::Error(kInvalidArgument) if size does not match the shape.
  static PackedMatrix view(QuantType type, int64_t rows, int64_t cols, const void* bytes,
                           size_t size);

  QuantType type() const { return type_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  // The packed representation (for kExact: the source weights).
  const void* bytes() const { return bytes_; }
  size_t size_bytes() const { return size_; }
  // The source of a kExact matrix.
  const WeightRef& exact_source() const { return exact_; }

  // Row r dequantized to fp32 (for embedding lookups and tests). r must be in [0, rows).
  void row_to_f32(int64_t r, float* out) const;
  // Block b of row r of a q8/q4 matrix (any layout): its 32 q in column order and its scale (the
  // kernels' oracles and tests). r in [0, rows), b in [0, cols / 32).
  void block_q(int64_t r, int64_t b, int32_t* q, float* scale) const;

 private:
  QuantType type_ = QuantType::kExact;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  const void* bytes_ = nullptr;
  size_t size_ = 0;
  WeightRef exact_;
  AlignedBuffer<uint8_t> owned_;
};

// How finely the int8 GEMM may round activations. kInt8: to int8 per block of 32 on every kernel,
// as decode does, so a row has the same value at any batch size (text). kFastest: more coarsely
// where that is much faster: on AVX2 without AVX-VNNI, stored q8 strips take x rounded to 7 bits
// (Int8GemmKernel::kAvx2X7: the vision GEMMs 1.27x faster, twice the rounding). For products
// computed once, whose rows never meet a decode step (the vision tower).
enum class ActivationPrecision { kInt8, kFastest };

// y[m, w.rows()] = x[m, w.cols()] * W^T (+ bias if not null). Every weight tile is unpacked once
// per block of x rows and reused for all of them (m == 1 is a streaming GEMV). Threads via
// ThreadPool::global().
void matmul(const float* x, int64_t m, const PackedMatrix& w, const float* bias, float* y,
            ActivationPrecision precision = ActivationPrecision::kInt8);

// Several matrices applied to the same x: y = x * W^T (+ bias) for each output, bit-identical to
// separate matmul calls. Matrices with the same type and cols on the int8 GEMM (strips at any m;
// q8/q4 groups from 16 rows) or on the GEMV and small-batch kernels (groups below 16 rows) run in
// one parallel region (one pool dispatch instead of one per matrix) with x prepared once;
// anything else runs as separate calls.
struct MatmulOutput {
  const PackedMatrix* w;
  const float* bias;  // may be null
  float* y;           // [m, w->rows()]
};
void matmul_multi(const float* x, int64_t m, const MatmulOutput* outputs, size_t count);

// Products of matrices with row ranges of one input (a mixture of experts: each expert's
// tokens): y = x[row_begin, row_end) * W^T, y holding (row_end - row_begin) rows. Bit-identical
// to a matmul call per output; outputs whose matrices share the type and cols run in one parallel
// region where the kernels allow (stored q8/q4 strips: x quantized once, one pool dispatch).
struct GroupedOutput {
  const PackedMatrix* w;
  int64_t row_begin, row_end;
  float* y;
};
void matmul_grouped(const float* x, const GroupedOutput* outputs, size_t count);

// Dispatch control for tests/benchmarks: which ISA level matmul uses (default: best available).
// The best level whose kernels passed a one-time self-check against the scalar ones (see
// packed_matmul.cpp); equals cpu_isa() unless a kernel is broken (then logged as an error).
IsaLevel best_isa();
// nullopt = auto. Throws qvl::Error(kUnsupported) for a level this CPU cannot run.
void set_isa_override(std::optional<IsaLevel> level);
IsaLevel active_isa();
// Whether the int8 GEMM below AVX-512 may use AVX-VNNI (256-bit vpdpbusd) on a CPU that has it
// (default true). False makes an AVX-VNNI or AVX-512 machine at the AVX2 level run exactly what an
// AVX2-only one runs (`qvl --isa avx2`).
void set_avx_vnni_allowed(bool allowed);
// The int8 GEMM kernel matmul uses at the active level, e.g. "avx2", "avx-vnni", "avx512-vnni",
// "neon-dotprod"; "none" at the scalar level. (ActivationPrecision::kFastest products may use
// kAvx2X7 instead of "avx2".)
const char* active_int8_gemm_kernel_name();

// Activations of the GEMM (m >= 16 rows, SIMD levels) on q8/q4 matrices. kInt8 (default): x is
// quantized per row and block of 32 as in the decode GEMV and multiplied in integers with the
// stored weights (int8_gemm.h). kF32: weights are dequantized and multiplied with fp32 x (slower,
// no activation rounding). bf16 matrices always use the fp32 GEMM, kQ8Strips the int8 one. The
// default can be set with the environment variable QVL_GEMM_ACT=int8|f32 (read once; another value
// is logged as an error and ignored); set_gemm_activations overrides it (nullopt = back to that
// default).
enum class GemmActivations { kInt8, kF32 };
const char* gemm_activations_name(GemmActivations act);  // "int8", "f32"
void set_gemm_activations(std::optional<GemmActivations> act);
GemmActivations gemm_activations();

// The arithmetic matmul performs for an m-row product with `type` weights at the active level:
// the ceiling a benchmark should compare its speed with. kF32: fp32 multiply-adds (exact mode,
// the scalar kernels, bf16 GEMV on AVX2 and below ARM i8mm, and the blocked GEMM for m >= 16);
// kBF16Dot: vdpbf16ps or BFMMLA; kInt8Dot: integer dot products on int8-quantized activations.
enum class MatmulArithmetic { kF32, kBF16Dot, kInt8Dot };
MatmulArithmetic matmul_arithmetic(QuantType type, int64_t m);
const char* matmul_arithmetic_name(MatmulArithmetic arithmetic);  // "fp32", "bf16", "int8"

}  // namespace qvl::ops
