#include "engine/model_quantizer.h"

#include <filesystem>

#include "base/error.h"
#include "base/mapped_file.h"
#include "engine/loaded_model.h"
#include "image/preprocess.h"
#include "model/config.h"
#include "model/config_json.h"
#include "model/gguf_weights.h"
#include "model/packed_file.h"
#include "model/packed_file_writer.h"
#include "model/weight_types.h"
#include "ops/packed_matrix.h"
#include "tokenizer/chat_format.h"
#include "tokenizer/tokenizer.h"

namespace qvl {
namespace {

// The folder's files a pre-packed file carries (those present; config.json is required).
constexpr const char* kEmbeddedFiles[] = {
    "config.json",           "generation_config.json", "preprocessor_config.json",
    "tokenizer_config.json", "chat_template.json",     "chat_template.jinja"};

// What was written (the compact tokenizer is not one of the embedded files).
QuantizeSummary summary_of(const PackedFileSummary& written, const PackedFileExtras& extras,
                           const std::string& out_path) {
  QuantizeSummary summary;
  summary.packed_matrices = written.packed_matrices;
  summary.stored_tensors = written.stored_tensors;
  summary.embedded_files = extras.blobs.size() - 1;
  summary.file_bytes = static_cast<size_t>(std::filesystem::file_size(out_path));
  return summary;
}

// The exact path computes on the stored weights: there is nothing to pre-pack.
void require_packable(const std::string& quant) {
  if (ops::parse_quant_type(quant) == ops::QuantType::kExact) {
    fail(ErrorCode::kInvalidArgument,
         "exact cannot be pre-packed (it computes on the model's stored weights); use bf16, q8 "
         "or q4");
  }
}

// The folder's files as a pre-packed file embeds them, each checked as a loader parses it.
PackedFileExtras folder_extras(const std::string& model_dir) {
  PackedFileExtras extras;
  for (const char* name : kEmbeddedFiles) {
    const std::string path = model_dir + "/" + name;
    if (file_exists(path))
      extras.blobs.push_back(
          byte_tensor(kEmbeddedFilePrefix + std::string(name), read_text_file(path)));
  }
  // Everything a loader parses is checked now, so a bad folder fails here, not at load.
  const std::string config_path = model_dir + "/config.json";
  parse_model_config(read_text_file(config_path), config_path);
  load_generation_config(model_dir);
  preprocess_config_from_json(model_dir);
  const std::string tokenizer_path = Tokenizer::json_path_in_model_dir(model_dir);
  std::string tokenizer_json = read_text_file(tokenizer_path);
  const Tokenizer tokenizer = Tokenizer::from_file(tokenizer_path);
  extras.blobs.push_back(
      byte_tensor(kEmbeddedFilePrefix + std::string("tokenizer.json"), std::move(tokenizer_json)));
  extras.blobs.push_back(byte_tensor(kCompactTokenizerName, tokenizer.to_compact()));
  extras.metadata[kPackedChatTemplateKnownKey] =
      is_known_chat_template(model_dir) ? "true" : "false";
  return extras;
}

}  // namespace

QuantizeSummary quantize_model_folder(const std::string& model_dir, const std::string& quant,
                                      const std::string& out_path,
                                      const std::string& vision_quant) {
  require_model_folder(model_dir);
  require_packable(quant);                    // fail before any slow work
  weight_types_for(quant, "", vision_quant);  // fail before any slow work
  const PackedFileExtras extras = folder_extras(model_dir);
  const PackedFileSummary written =
      write_packed_model_file(model_dir, quant, out_path, extras, vision_quant);
  return summary_of(written, extras, out_path);
}

QuantizeSummary quantize_generated_model(const std::string& files_dir,
                                         const std::vector<TensorSpec>& tensors,
                                         const std::string& quant, const std::string& out_path) {
  require_packable(quant);
  const PackedFileExtras extras = folder_extras(files_dir);
  const ModelConfig config = load_model_config(files_dir);
  // The experts (97% of 30B-A3B) are made one matrix at a time as they are packed.
  const auto lazy = [](const std::string& name) {
    return name.find(".mlp.experts.") != std::string::npos;
  };
  const PackedFileSummary written =
      write_packed_generated_file(config, tensors, lazy, quant, out_path, extras);
  return summary_of(written, extras, out_path);
}

QuantizeSummary quantize_gguf_pair(const std::string& text_path, const std::string& mmproj_path,
                                   const std::string& quant, const std::string& out_path,
                                   const std::string& vision_quant) {
  require_packable(quant);  // fail before any slow work
  const WeightTypes types = weight_types_for(quant, "", vision_quant);
  const GgufPairPaths paths = gguf_pair_for(text_path, mmproj_path);
  const std::shared_ptr<GgufPair> pair = open_gguf_pair(paths);
  const GgufModelFiles files = gguf_model_files(*pair);
  const Tokenizer tokenizer = Tokenizer::from_json_text(files.tokenizer_json);
  PackedFileExtras extras;
  const auto embed = [&](const std::string& name, std::string text) {
    extras.blobs.push_back(byte_tensor(kEmbeddedFilePrefix + name, std::move(text)));
  };
  embed("config.json", model_config_json(files.config).dump(2));
  embed("generation_config.json", generation_config_json(files.generation).dump(2));
  embed("preprocessor_config.json", preprocess_config_json_text(files.preprocess));
  if (!files.chat_template.empty()) embed("chat_template.jinja", files.chat_template);
  embed("tokenizer.json", files.tokenizer_json);
  extras.blobs.push_back(byte_tensor(kCompactTokenizerName, tokenizer.to_compact()));
  extras.metadata[kPackedChatTemplateKnownKey] =
      check_chat_template_text(files.chat_template).known ? "true" : "false";

  GgufPacking packing{stored_type(types.text), stored_type(types.vision)};
  packing.pack_plain = true;
  const WeightStore store = gguf_weight_store(pair, files.config, nullptr, packing);
  const PackedFileSummary written =
      write_packed_store_file(files.config, store, quant, out_path, extras, vision_quant);
  return summary_of(written, extras, out_path);
}

}  // namespace qvl
