// Pre-packed model files (`qvl quantize`): one safetensors file that is a whole model. It holds
//   - every matrix the kernels use packed (packed_matrix.h), as a U8 tensor under the weight's
//     own name, described in "__metadata__" by "qvl.packed.<name>": "<type> <rows> <cols>"
//     (type bf16, q8, q4 or q8-strips);
//     the output head is always one of them, "lm_head.weight" (for a tied model: the packed
//     embedding), so a loader never packs;
//   - every other tensor as the model folder stores it (norms, biases, embedding, patch conv);
//   - the folder's JSON files as U8 tensors "qvl.file.<name>" (config.json, tokenizer.json, ...)
//     and the tokenizer's compact form (tokenizer.h) as "qvl.tokenizer";
//   - "__metadata__": "qvl.format" = "qvl-packed-model", "qvl.version", "qvl.quant" (the --quant
//     it was made with), "qvl.vision_quant" (bf16 or q8; absent in older files: bf16), "qvl.layout"
//     (packed_layout_fingerprint()), "qvl.lm_head_tied", "qvl.chat_template_known".
// Tensor data is 64-byte aligned, so packed matrices are used straight from the mmap.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "model/config.h"
#include "model/safetensors.h"
#include "model/text_decoder.h"
#include "model/weight_types.h"
#include "ops/packed_matrix.h"

namespace qvl {

inline constexpr const char* kPackedFormatKey = "qvl.format";
inline constexpr const char* kPackedFormatName = "qvl-packed-model";
inline constexpr const char* kPackedVersionKey = "qvl.version";
// 2: q8 matrices (decoder, head, vision tower) are stored as q8-strips (the int8 GEMM's layout).
// 3: q4 matrices too, as q4-strips.
inline constexpr int kPackedVersion = 3;
inline constexpr const char* kPackedQuantKey = "qvl.quant";
inline constexpr const char* kPackedVisionQuantKey = "qvl.vision_quant";
inline constexpr const char* kPackedLayoutKey = "qvl.layout";
inline constexpr const char* kPackedHeadTiedKey = "qvl.lm_head_tied";
// "true" when the folder's chat template is the one qvl renders (checked when quantizing).
inline constexpr const char* kPackedChatTemplateKnownKey = "qvl.chat_template_known";
inline constexpr const char* kPackedTensorPrefix = "qvl.packed.";
inline constexpr const char* kEmbeddedFilePrefix = "qvl.file.";
inline constexpr const char* kCompactTokenizerName = "qvl.tokenizer";
inline constexpr const char* kPackedHeadName = "lm_head.weight";
inline constexpr size_t kPackedAlignment = 64;

// A short hash of what ops::PackedMatrix::pack makes of a fixed matrix in every packed type. It
// changes when the kernel layouts (or their rounding) change, so a file packed by another qvl
// version is refused instead of computing garbage.
std::string packed_layout_fingerprint();

// The metadata value describing one packed tensor, and its parser (nullopt if malformed).
std::string packed_tensor_entry(ops::QuantType type, int64_t rows, int64_t cols);
struct PackedTensorEntry {
  ops::QuantType type;
  int64_t rows, cols;
};
std::optional<PackedTensorEntry> parse_packed_tensor_entry(const std::string& value);

// True if `path` is a regular file (a pre-packed model) rather than a model folder.
bool is_model_file(const std::string& path);

class PackedModelFile {
 public:
  // Maps the file and checks the header: marker, version, layout, quant and every packed
  // tensor's size. Reads nothing else (tensor data is paged in as it is used). Throws
  // qvl::Error naming the file (and tensor).
  static PackedModelFile open(const std::string& path);

  const std::string& path() const { return path_; }
  ops::QuantType quant() const { return quant_; }
  // The vision tower's --vision-quant ("bf16" or "q8"; "bf16" for files written before it).
  std::string vision_quant() const;
  bool lm_head_tied() const;
  const WeightStore& store() const { return store_; }
  // Takes the weights (the mapping); texts and bytes seen so far stay valid with the store.
  WeightStore take_store() { return std::move(store_); }

  // The bytes of an embedded file ("config.json") or blob ("qvl.tokenizer"), viewing the map.
  std::optional<std::string_view> file(const std::string& name) const;
  std::optional<std::string_view> blob(const std::string& tensor_name) const;
  // file(name), or Error(kCorrupt) naming this file when it is not embedded.
  std::string_view required_file(const std::string& name) const;
  // How errors name an embedded file: "<path> (embedded config.json)".
  std::string origin(const std::string& name) const;

 private:
  PackedModelFile(std::string path, WeightStore store)
      : path_(std::move(path)), store_(std::move(store)) {}
  std::string path_;
  ops::QuantType quant_ = ops::QuantType::kBF16;
  WeightStore store_;
};

// Text-decoder weights from a pre-packed store: as load_text_weights, with the head taken
// from the packed "lm_head.weight".
TextWeights load_packed_text_weights(const ModelConfig& config, const WeightStore& store,
                                     const WeightTypes& types, bool lm_head_tied);

}  // namespace qvl
