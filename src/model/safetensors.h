// safetensors: memory-mapped tensors, single file or sharded (model.safetensors.index.json).
// Headers are validated fully before use, so a damaged file fails with one clear error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "ops/packed_matrix.h"

namespace qvl {

enum class DType { kF64, kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool };

const char* dtype_name(DType dtype);
size_t dtype_size(DType dtype);

// A view of one tensor inside a mapped file; valid while its SafeTensorsFile lives.
struct TensorView {
  std::string name;
  std::string file;  // path of the file holding it, for error messages
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;

  int64_t numel() const;
  int64_t dim(size_t i) const { return shape.at(i); }
  // Throws naming the tensor if the shape differs.
  void expect_shape(const std::vector<int64_t>& expected) const;
  // Copies into float32 (bf16/f16/f32/f64 only); throws naming the tensor otherwise.
  std::vector<float> to_f32() const;
  // Copies into int64 (i64/i32/i16/i8/u8/bool only).
  std::vector<int64_t> to_i64() const;
};

std::string shape_string(const std::vector<int64_t>& shape);

class SafeTensorsFile {
 public:
  explicit SafeTensorsFile(const std::string& path);
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const TensorView* find(const std::string& name) const;
  const TensorView& get(const std::string& name) const;  // throws kNotFound naming file + tensor
  const std::string& path() const { return file_.path(); }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  MappedFile file_;
  std::map<std::string, TensorView> tensors_;
  std::map<std::string, std::string> metadata_;
};

// A matrix stored already in a kernel layout (see packed_matrix.h): raw bytes of a U8 tensor.
struct PackedTensor {
  ops::QuantType type = ops::QuantType::kBF16;
  int64_t rows = 0;
  int64_t cols = 0;
  const TensorView* bytes = nullptr;
};

// All weights of a model folder: model.safetensors, or the shards listed by
// model.safetensors.index.json (every shard validated; the index must match the shards). Or of
// one file; a pre-packed model file (packed_file.h) also has packed tensors.
class WeightStore {
 public:
  static WeightStore open_folder(const std::string& dir);
  static WeightStore open_files(const std::vector<std::string>& paths);
  // Tensors whose bytes live elsewhere (a GGUF pair's under Hugging Face names,
  // model/gguf_weights.h): `keep` holds those bytes (mapped files, converted copies) as long as the
  // store. `where` names the source in messages. Throws kCorrupt for a name given twice.
  // (weight_store_views.cpp)
  static WeightStore from_views(std::vector<TensorView> views, std::shared_ptr<const void> keep,
                                const std::string& where);

  // Tensors as stored (packed ones are not among them).
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  const TensorView& get(const std::string& name) const;  // throws kNotFound naming the tensor
  std::vector<std::string> names() const;
  size_t total_bytes() const;  // of every tensor, packed ones included
  // The "__metadata__" entries of all files.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  const PackedTensor* packed(const std::string& name) const;
  std::vector<std::string> packed_names() const;
  // Declares the stored tensor `name` a packed [rows, cols] matrix of `type`: it leaves the
  // stored tensors and becomes packed(name). Throws kCorrupt naming the file and tensor unless
  // it is a 1-D U8 tensor of exactly ops::packed_size_bytes(type, rows, cols) bytes.
  void declare_packed(const std::string& name, ops::QuantType type, int64_t rows, int64_t cols);
  // Tensors derived from stored ones (fused experts split per expert), whose bytes `keep` owns,
  // replace the stored tensors `replaced`. Throws kCorrupt for a name that exists already.
  // (weight_store_views.cpp)
  void replace_with_views(const std::vector<std::string>& replaced, std::vector<TensorView> views,
                          std::shared_ptr<const void> keep);

 private:
  std::vector<std::unique_ptr<SafeTensorsFile>> files_;
  std::vector<std::unique_ptr<TensorView>> views_;  // from_views: the views index_ points to
  std::vector<std::shared_ptr<const void>> keep_;   // what owns the views' bytes
  std::map<std::string, const TensorView*> index_;
  std::map<std::string, PackedTensor> packed_;
  std::map<std::string, std::string> metadata_;
  std::string where_;  // folder or file list, for messages
};

}  // namespace qvl
