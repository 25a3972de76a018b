#include "engine/loaded_model.h"

#include "base/error.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "base/timer.h"
#include "tokenizer/chat_format.h"

namespace qvl {

std::unique_ptr<LoadedModel> load_model_folder(const std::string& dir_in,
                                               const std::string& quant) {
  std::string dir = dir_in;
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (!file_exists(dir + "/config.json")) {
    fail(ErrorCode::kNotFound, "'" + dir + "' is not a model folder (no config.json)");
  }
  const Timer timer;
  auto m = std::make_unique<LoadedModel>(LoadedModel{dir,
                                                     load_model_config(dir),
                                                     load_generation_config(dir),
                                                     preprocess_config_from_json(dir),
                                                     WeightStore::open_folder(dir),
                                                     {},
                                                     {},
                                                     Tokenizer::from_model_dir(dir)});
  const WeightTypes types = weight_types_for(quant);
  m->text_weights = load_text_weights(m->config, m->store, types);
  m->vision_weights = load_vision_weights(m->config.vision, m->store, types.vision);
  if (!is_known_chat_template(dir)) {
    QVL_LOG(kWarn) << "the chat template in '" << dir
                   << "' is not one qvl knows; prompts are rendered as Qwen3-VL's template does";
  }
  QVL_LOG(kInfo) << "loaded " << dir << " (" << m->store.total_bytes() / (1 << 20) << " MiB of "
                 << "weights, " << quant << ") in " << static_cast<int>(timer.millis()) << " ms";
  return m;
}

}  // namespace qvl
