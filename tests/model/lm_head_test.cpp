// Untied checkpoints: a separate lm_head.weight is used unless the config ties the embeddings.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "base/half.h"
#include "base/mapped_file.h"
#include "model/config.h"
#include "model/safetensors_writer.h"
#include "model/text_decoder.h"
#include "model_test_util.h"

namespace qvl {
namespace {

const std::string kTiny = std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";

// Copies every tensor of the tiny model and adds lm_head.weight = 2 * embed_tokens (exact in bf16).
void write_untied_copy(const std::string& dir) {
  testing::write_weights_with_untied_head(kTiny, dir + "/model.safetensors", 0.0f);
}

std::vector<float> last_logits(const ModelConfig& config, const WeightStore& store) {
  const TextWeights w = load_text_weights(config, store);
  TextDecoder decoder(config.text, w);
  KVCache cache = decoder.new_cache();
  std::vector<float> hidden;
  return testing::prefill_last_logits(decoder, config, cache, {151644, 872, 198, 9707, 151645},
                                      hidden);
}

TEST(LmHead, UntiedHeadIsUsedAndTiedConfigIgnoresIt) {
  const std::string dir = ::testing::TempDir() + "/qvl_untied";
  ASSERT_EQ(std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
  write_untied_copy(dir);
  const WeightStore untied_store = WeightStore::open_folder(dir);
  const WeightStore tied_store = WeightStore::open_folder(kTiny);
  ModelConfig config = load_model_config(kTiny);
  const std::vector<float> tied = last_logits(config, tied_store);

  config.tie_word_embeddings = false;
  const std::vector<float> untied = last_logits(config, untied_store);
  for (size_t i = 0; i < tied.size(); i += 97) ASSERT_FLOAT_EQ(untied[i], 2 * tied[i]) << i;

  // A tied config uses the embedding even when a head tensor exists (as transformers does).
  config.tie_word_embeddings = true;
  const std::vector<float> tied_again = last_logits(config, untied_store);
  for (size_t i = 0; i < tied.size(); i += 97) ASSERT_FLOAT_EQ(tied_again[i], tied[i]) << i;
}

}  // namespace
}  // namespace qvl
