#include "model/weights_util.h"

#include <atomic>

#include "base/error.h"

namespace qvl {

ops::WeightRef matrix_weight(const WeightStore& store, const std::string& name, int64_t rows,
                             int64_t cols) {
  const TensorView& t = store.get(name);
  t.expect_shape({rows, cols});
  ops::WeightRef w;
  switch (t.dtype) {
    case DType::kF32:
      w.type = ops::WeightType::kF32;
      break;
    case DType::kBF16:
      w.type = ops::WeightType::kBF16;
      break;
    case DType::kF16:
      w.type = ops::WeightType::kF16;
      break;
    default:
      fail(ErrorCode::kUnsupported, "weight '" + name + "' in '" + t.file + "' has dtype " +
                                        dtype_name(t.dtype) + "; expected BF16, F16 or F32");
  }
  w.data = t.data;
  w.rows = rows;
  w.cols = cols;
  return w;
}

namespace {
std::atomic<int64_t> g_fallback_matrices{0};
std::atomic<int64_t> g_fallback_example_cols{0};
}  // namespace

ops::QuantType fitting_type(ops::QuantType wanted, int64_t cols) {
  if (wanted == ops::QuantType::kExact || packable_width(cols)) return wanted;
  g_fallback_matrices.fetch_add(1, std::memory_order_relaxed);
  g_fallback_example_cols.store(cols, std::memory_order_relaxed);
  return ops::QuantType::kExact;
}

ExactFallbacks exact_fallbacks() {
  return {g_fallback_matrices.load(std::memory_order_relaxed),
          g_fallback_example_cols.load(std::memory_order_relaxed)};
}

ops::PackedMatrix packed_weight(const WeightStore& store, const std::string& name, int64_t rows,
                                int64_t cols, ops::QuantType wanted) {
  const ops::QuantType type = fitting_type(wanted, cols);
  if (const PackedTensor* p = store.packed(name)) {
    if (p->type != type || p->rows != rows || p->cols != cols) {
      fail(ErrorCode::kCorrupt, "weight '" + name + "' in '" + p->bytes->file + "' is packed as " +
                                    ops::quant_type_name(p->type) + " " + std::to_string(p->rows) +
                                    "x" + std::to_string(p->cols) + ", but the model needs " +
                                    ops::quant_type_name(type) + " " + std::to_string(rows) + "x" +
                                    std::to_string(cols) +
                                    " (written by another qvl version? run qvl quantize again)");
    }
    return ops::PackedMatrix::view(type, rows, cols, p->bytes->data, p->bytes->nbytes);
  }
  try {
    return ops::PackedMatrix::pack(matrix_weight(store, name, rows, cols), type);
  } catch (const Error& e) {
    fail(e.code(),
         "cannot pack weight '" + name + "' as " + ops::quant_type_name(type) + ": " + e.what());
  }
}

std::vector<float> vector_weight(const WeightStore& store, const std::string& name, int64_t n) {
  const TensorView& t = store.get(name);
  t.expect_shape({n});
  return t.to_f32();
}

}  // namespace qvl
