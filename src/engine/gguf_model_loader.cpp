// Loading a Qwen3-VL GGUF pair (llama.cpp's format): configuration from the metadata, weights
// from model/gguf_weights.h, tokenizer from the vocabulary and merges stored in the language
// model, chat template check on tokenizer.chat_template.
#include <algorithm>
#include <filesystem>

#include "base/error.h"
#include "base/log.h"
#include "base/timer.h"
#include "engine/loaded_model.h"
#include "model/gguf_config.h"
#include "model/gguf_tokenizer.h"
#include "model/gguf_weights.h"
#include "model/weight_matrices.h"
#include "model/weights_util.h"
#include "tokenizer/chat_format.h"

namespace qvl {
namespace {

bool is_projector(const GgufFile& f) {
  return f.find("general.architecture") && f.get_string("general.architecture") == "clip";
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::vector<std::string> gguf_files_in(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec) && is_gguf_file(e.path().string())) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::optional<GgufPairPaths> find_gguf_pair(const std::string& dir) {
  const std::vector<std::string> files = gguf_files_in(dir);
  if (files.empty()) return std::nullopt;
  std::vector<std::string> text, projectors;
  for (const auto& path : files) {
    (is_projector(GgufFile::open(path)) ? projectors : text).push_back(path);
  }
  if (text.size() != 1 || projectors.size() != 1) {
    fail(ErrorCode::kInvalidArgument,
         "'" + dir +
             "' must hold one GGUF language model and one vision projector (mmproj); it has " +
             std::to_string(text.size()) + " language model(s) [" + join(text) + "] and " +
             std::to_string(projectors.size()) + " projector(s) [" + join(projectors) +
             "]: pass -m MODEL.gguf --mmproj MMPROJ.gguf");
  }
  return GgufPairPaths{text[0], projectors[0]};
}

GgufPairPaths gguf_pair_for(const std::string& text, const std::string& mmproj) {
  if (!mmproj.empty()) return {text, mmproj};
  const std::string dir = std::filesystem::path(text).parent_path().string();
  std::vector<std::string> projectors;
  for (const auto& path : gguf_files_in(dir.empty() ? "." : dir)) {
    if (path != text && is_projector(GgufFile::open(path))) projectors.push_back(path);
  }
  if (projectors.size() != 1) {
    fail(ErrorCode::kInvalidArgument,
         "'" + text +
             "' is a GGUF language model; its vision projector is needed too: pass "
             "--mmproj MMPROJ.gguf (" +
             std::to_string(projectors.size()) + " projector(s) beside it" +
             (projectors.empty() ? "" : ": " + join(projectors)) + ")");
  }
  return {text, projectors[0]};
}

std::shared_ptr<GgufPair> open_gguf_pair(const GgufPairPaths& paths) {
  auto pair = std::make_shared<GgufPair>(
      GgufPair{GgufFile::open(paths.text), GgufFile::open(paths.mmproj)});
  if (is_projector(pair->text) || !is_projector(pair->vision)) {
    fail(ErrorCode::kInvalidArgument, "'" + paths.text + "' must be the GGUF language model and '" +
                                          paths.mmproj + "' its vision projector (mmproj)");
  }
  return pair;
}

GgufModelFiles gguf_model_files(const GgufPair& pair) {
  GgufModelFiles f;
  f.config = gguf_model_config(pair.text, pair.vision);
  f.generation = gguf_generation_config(pair.text);
  f.preprocess.patch_size = static_cast<int>(f.config.vision.patch_size);
  f.preprocess.temporal_patch_size = static_cast<int>(f.config.vision.temporal_patch_size);
  f.preprocess.merge_size = static_cast<int>(f.config.vision.spatial_merge_size);
  const GgufImageNormalization norm = gguf_image_normalization(pair.vision);
  f.preprocess.mean = norm.mean;
  f.preprocess.std = norm.std;
  try {
    f.tokenizer_json = gguf_tokenizer_json(pair.text);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kCorrupt && e.code() != ErrorCode::kUnsupported) throw;
    throw Error(e.code(), pair.text.path() + ": " + e.what());
  }
  f.chat_template = pair.text.string_or_none("tokenizer.chat_template").value_or("");
  return f;
}

std::unique_ptr<LoadedModel> load_gguf_model(const GgufPairPaths& paths,
                                             const std::string& quant_in,
                                             const std::string& lm_head,
                                             const std::string& vision_quant) {
  const std::string quant = quant_in.empty() ? "q8" : quant_in;
  const WeightTypes types = weight_types_for(quant, lm_head, vision_quant);  // fail before loading
  const Timer timer;
  const std::shared_ptr<GgufPair> pair = open_gguf_pair(paths);
  const double parse_ms = timer.millis();
  GgufModelFiles files = gguf_model_files(*pair);
  Tokenizer tokenizer = [&] {
    try {
      return Tokenizer::from_json_text(files.tokenizer_json);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kCorrupt && e.code() != ErrorCode::kUnsupported) throw;
      throw Error(e.code(), paths.text + ": " + e.what());
    }
  }();
  const double tokenizer_ms = timer.millis();
  GgufLoadStats stats;
  const GgufPacking packing{stored_type(types.text), stored_type(types.vision)};
  WeightStore store = gguf_weight_store(pair, files.config, &stats, packing);
  auto m = std::make_unique<LoadedModel>(LoadedModel{paths.text,
                                                     files.config,
                                                     files.generation,
                                                     files.preprocess,
                                                     std::move(store),
                                                     {},
                                                     {},
                                                     std::move(tokenizer)});
  const double store_ms = timer.millis();
  m->text_weights = load_text_weights(m->config, m->store, types);
  m->vision_weights = load_vision_weights(m->config.vision, m->store, types);
  const ChatTemplateCheck chat = check_chat_template_text(files.chat_template);
  m->chat_variant = chat.variant;
  m->file_format = "gguf";
  m->file_type = gguf_file_type(pair->text);
  m->vision_file_type = gguf_file_type(pair->vision);
  if (!chat.known) {
    QVL_LOG(kWarn) << "the chat template in '" << paths.text
                   << "' is not one qvl knows; prompts are rendered as Qwen3-VL's template does";
  }
  QVL_LOG(kDebug) << "GGUF load: parse " << parse_ms << " ms, tokenizer " << tokenizer_ms - parse_ms
                  << " ms, tensors " << store_ms - tokenizer_ms << " ms (" << stats.in_place
                  << " in place, " << stats.repacked << " Q8_0 repacked as q8, " << stats.packed
                  << " dequantized into " << ops::quant_type_name(packing.text) << "/"
                  << ops::quant_type_name(packing.vision) << ", " << stats.dequantized
                  << " dequantized to fp32, in " << stats.dequantize_ms << " ms), packing "
                  << timer.millis() - store_ms << " ms";
  QVL_LOG(kInfo) << "loaded GGUF " << paths.text << " + " << paths.mmproj << " ("
                 << m->store.total_bytes() / (1 << 20) << " MiB of weights, " << quant
                 << ", vision " << ops::quant_type_name(types.vision) << ") in "
                 << static_cast<int>(timer.millis()) << " ms";
  return m;
}

}  // namespace qvl
