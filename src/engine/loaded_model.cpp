#include "engine/loaded_model.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "base/timer.h"
#include "model/gguf_file.h"
#include "model/packed_file.h"
#include "model/weight_matrices.h"
#include "model/weights_util.h"
#include "tokenizer/chat_format.h"

namespace qvl {
namespace {

constexpr const char* kDefaultFolderQuant = "q8";

// The dtype holding most of the bytes of a checkpoint's language model (vision = false) or
// vision tower ("BF16" for Qwen's published folders).
std::string predominant_dtype(const WeightStore& store, bool vision) {
  std::map<std::string, size_t> bytes;
  for (const std::string& name : store.names()) {
    if ((name.rfind("model.visual.", 0) == 0) != vision) continue;
    const TensorView& t = store.get(name);
    bytes[dtype_name(t.dtype)] += t.nbytes;
  }
  const auto most = std::max_element(
      bytes.begin(), bytes.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  return most == bytes.end() ? "" : most->first;
}

std::unique_ptr<LoadedModel> load_folder(const std::string& dir, const std::string& quant_in,
                                         const std::string& lm_head,
                                         const std::string& vision_quant) {
  require_model_folder(dir);
  const std::string quant = quant_in.empty() ? kDefaultFolderQuant : quant_in;
  const WeightTypes types = weight_types_for(quant, lm_head, vision_quant);  // fail before loading
  const Timer timer;
  auto m = std::make_unique<LoadedModel>(LoadedModel{dir,
                                                     load_model_config(dir),
                                                     load_generation_config(dir),
                                                     preprocess_config_from_json(dir),
                                                     WeightStore::open_folder(dir),
                                                     {},
                                                     {},
                                                     Tokenizer::from_model_dir(dir)});
  m->text_weights = load_text_weights(m->config, m->store, types);
  m->vision_weights = load_vision_weights(m->config.vision, m->store, types);
  const ChatTemplateCheck chat = check_chat_template(dir);
  m->chat_variant = chat.variant;
  m->file_format = "safetensors";
  m->file_type = predominant_dtype(m->store, false);
  m->vision_file_type = predominant_dtype(m->store, true);
  if (!chat.known) {
    QVL_LOG(kWarn) << "the chat template in '" << dir
                   << "' is not one qvl knows; prompts are rendered as Qwen3-VL's template does";
  }
  QVL_LOG(kInfo) << "loaded " << dir << " (" << m->store.total_bytes() / (1 << 20) << " MiB of "
                 << "weights, " << quant << ", vision " << ops::quant_type_name(types.vision)
                 << ") in " << static_cast<int>(timer.millis()) << " ms";
  return m;
}

Tokenizer packed_tokenizer(const PackedModelFile& file) {
  try {
    if (const auto compact = file.blob(kCompactTokenizerName)) {
      return Tokenizer::from_compact(*compact);
    }
    return Tokenizer::from_json_text(file.required_file("tokenizer.json"));
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kCorrupt && e.code() != ErrorCode::kUnsupported) throw;
    throw Error(e.code(), file.path() + ": " + e.what());
  }
}

std::unique_ptr<LoadedModel> load_packed_file(const std::string& path, const std::string& quant,
                                              const std::string& lm_head,
                                              const std::string& vision_quant) {
  const Timer timer;
  PackedModelFile file = PackedModelFile::open(path);
  const std::string stored = ops::quant_type_name(file.quant());
  if (!quant.empty() && quant != stored) {
    fail(ErrorCode::kInvalidArgument,
         "'" + path + "' is pre-packed as " + stored + " and cannot be loaded as " + quant +
             (quant == "exact" ? " (exact needs the original weights: load the model folder)"
                               : " (omit --quant to use it as stored, or run `qvl quantize "
                                 "--quant " +
                                     quant + "` on the model folder)"));
  }
  const std::string stored_vision = file.vision_quant();
  if (!vision_quant.empty() && vision_quant != stored_vision) {
    fail(ErrorCode::kInvalidArgument,
         "'" + path + "' is pre-packed with a " + stored_vision +
             " vision tower and cannot be loaded with --vision-quant " + vision_quant +
             " (omit --vision-quant, or run `qvl quantize --vision-quant " + vision_quant +
             "` on the model folder)");
  }
  const double header_ms = timer.millis();
  const std::string config_text(file.required_file("config.json"));
  const ModelConfig config = parse_model_config(config_text, file.origin("config.json"));
  std::optional<std::string> generation_text;
  if (const auto g = file.file("generation_config.json")) generation_text = std::string(*g);
  GenerationConfig generation =
      generation_config_from_texts(generation_text, file.origin("generation_config.json"),
                                   config_text, file.origin("config.json"));
  PreprocessConfig preprocess =
      parse_preprocess_config(std::string(file.required_file("preprocessor_config.json")),
                              file.origin("preprocessor_config.json"));
  const double configs_ms = timer.millis();
  Tokenizer tokenizer = packed_tokenizer(file);
  const double tokenizer_ms = timer.millis();
  const bool head_tied = file.lm_head_tied();
  const bool template_known = file.store().metadata().count(kPackedChatTemplateKnownKey) &&
                              file.store().metadata().at(kPackedChatTemplateKnownKey) == "true";
  const ChatTemplateCheck chat = check_chat_template_in([&](const std::string& name) {
    const auto text = file.file(name);
    return text ? std::optional<std::string>(std::string(*text)) : std::nullopt;
  });
  auto m = std::make_unique<LoadedModel>(LoadedModel{path,
                                                     config,
                                                     std::move(generation),
                                                     std::move(preprocess),
                                                     file.take_store(),
                                                     {},
                                                     {},
                                                     std::move(tokenizer)});
  m->chat_variant = chat.variant;
  m->file_format = "qvl";
  m->file_type = stored;
  m->vision_file_type = stored_vision;
  WeightTypes types = weight_types_for(stored, "", stored_vision);
  if (const PackedTensor* head = m->store.packed(kPackedHeadName)) {
    types.lm_head = ops::values_type(head->type);
  }
  if (!lm_head.empty() && ops::parse_quant_type(lm_head) != types.lm_head) {
    fail(ErrorCode::kInvalidArgument,
         "'" + path + "' is pre-packed with a " + ops::quant_type_name(types.lm_head) +
             " lm_head and cannot use a " + lm_head +
             " one (omit --lm-head, or load the model folder with --lm-head " + lm_head + ")");
  }
  m->text_weights = load_packed_text_weights(m->config, m->store, types, head_tied);
  m->vision_weights = load_vision_weights(m->config.vision, m->store, types);
  QVL_LOG(kDebug) << "pre-packed load: header " << header_ms << " ms, configs "
                  << configs_ms - header_ms << " ms, tokenizer " << tokenizer_ms - configs_ms
                  << " ms, weights " << timer.millis() - tokenizer_ms << " ms";
  if (!template_known) {
    QVL_LOG(kWarn) << "the chat template stored in '" << path
                   << "' is not one qvl knows; prompts are rendered as Qwen3-VL's template does";
  }
  QVL_LOG(kInfo) << "loaded pre-packed " << path << " (" << m->store.total_bytes() / (1 << 20)
                 << " MiB, " << stored << ", vision " << stored_vision << ") in "
                 << static_cast<int>(timer.millis()) << " ms";
  return m;
}

}  // namespace

void require_model_folder(const std::string& dir) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) fail(ErrorCode::kNotFound, "'" + dir + "' does not exist");
    fail(ErrorCode::kIo, "cannot open '" + dir + "': " + std::strerror(err));
  }
  if (!S_ISDIR(st.st_mode)) {
    fail(ErrorCode::kInvalidArgument,
         "'" + dir + "' is neither a model folder nor a pre-packed model file");
  }
  if (::access(dir.c_str(), R_OK | X_OK) != 0) {
    const int err = errno;
    fail(ErrorCode::kIo, "cannot read the folder '" + dir + "': " + std::strerror(err));
  }
  const std::string config = dir + "/config.json";
  if (::stat(config.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) {
      fail(ErrorCode::kNotFound, "'" + dir + "' is not a model folder (no config.json)");
    }
    fail(ErrorCode::kIo, "cannot open '" + config + "': " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) fail(ErrorCode::kInvalidArgument, "'" + config + "' is not a file");
  if (::access(config.c_str(), R_OK) != 0) {
    const int err = errno;
    fail(ErrorCode::kIo, "cannot read '" + config + "': " + std::strerror(err));
  }
}

std::unique_ptr<LoadedModel> load_model(const std::string& path_in, const std::string& quant,
                                        const std::string& lm_head, const std::string& vision_quant,
                                        const std::string& mmproj) {
  std::string path = path_in;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const ExactFallbacks before = exact_fallbacks();
  // A GGUF pair: a language model file, or a folder holding one pair and no config.json.
  std::optional<GgufPairPaths> gguf;
  if (is_gguf_file(path)) {
    gguf = gguf_pair_for(path, mmproj);
  } else if (!is_model_file(path) && !file_exists(path + "/config.json")) {
    gguf = find_gguf_pair(path);
  }
  if (!mmproj.empty() && !gguf) {
    fail(ErrorCode::kInvalidArgument, "--mmproj is for GGUF models; '" + path + "' is not one");
  }
  auto model = gguf                  ? load_gguf_model(*gguf, quant, lm_head, vision_quant)
               : is_model_file(path) ? load_packed_file(path, quant, lm_head, vision_quant)
                                     : load_folder(path, quant, lm_head, vision_quant);
  // Every dense decoder matrix is read for every token: its pages are mapped in now (tens of ms)
  // rather than faulted in one by one during the first request (~0.4 s per GB). A mixture's
  // experts are not (a token reads 8 of 128: the page cache keeps those in use, and a 30B-A3B
  // file need not fit in memory), nor is the vision tower, which waits for its first image
  // (VisionEncoder): a text-only server need not hold it.
  const auto populate = [](const ops::PackedMatrix& w) {
    populate_pages(w.bytes(), w.size_bytes());
  };
  for (const TextLayerWeights& l : model->text_weights.layers) {
    for (const ops::PackedMatrix* m :
         {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj}) {
      populate(*m);
    }
    if (l.sparse) populate(l.sparse->router);
  }
  populate(model->text_weights.lm_head);
  const ExactFallbacks after = exact_fallbacks();
  if (after.matrices > before.matrices) {
    QVL_LOG(kInfo) << after.matrices - before.matrices
                   << " weight matrices of this model have a width that is not a multiple of "
                   << ops::kBlockCols << " (e.g. " << after.example_cols
                   << " columns) and stay exact (fp32 math on the stored weights)";
  }
  return model;
}

int64_t loaded_weight_bytes(const LoadedModel& m) {
  auto total = static_cast<int64_t>(m.store.total_bytes());
  // Packed matrices of a pre-packed file are views into it (a GGUF's are copies, as a folder's).
  if (is_model_file(m.dir) && !is_gguf_file(m.dir)) return total;
  // Exact matrices view the checkpoint; every other type is a copy made at load.
  const auto copy = [&](const ops::PackedMatrix& w) {
    if (w.type() != ops::QuantType::kExact) total += static_cast<int64_t>(w.size_bytes());
  };
  for_each_matrix(m.text_weights, copy);
  for_each_matrix(m.vision_weights, copy);
  return total;
}

}  // namespace qvl
