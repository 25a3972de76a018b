// Test-only: two ways of loading one model (a folder, a GGUF pair, a pre-packed file) must give
// the same answers through the public API: prompt ids, greedy tokens with and without an image,
// seeded sampling (which depends on every logit, not just the top), and tokenization.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "qvl/engine.h"

namespace qvl::testing {

inline std::unique_ptr<Engine> load_engine(const std::string& model, const std::string& quant,
                                           const std::string& vision_quant = "",
                                           const std::string& mmproj = "") {
  EngineOptions o;
  o.model_dir = model;
  o.quant = quant;
  o.vision_quant = vision_quant;
  o.mmproj = mmproj;
  return Engine::load(o);
}

// A text question, the same with `image_file` before it, and the text question sampled.
inline std::vector<GenerationRequest> answer_requests(const std::string& image_file) {
  GenerationRequest text;
  text.messages.push_back(
      {"user", true, {{ContentPart::Kind::kText, "Describe a sunny day in three words.", -1}}});
  text.sampling.temperature = 0;
  text.sampling.max_tokens = 12;
  text.sampling.ignore_eos = true;
  GenerationRequest image = text;
  image.messages[0].content_is_string = false;
  image.messages[0].parts.insert(image.messages[0].parts.begin(),
                                 {ContentPart::Kind::kImage, "", 0});
  const MappedFile png(image_file);
  image.images.push_back({std::vector<uint8_t>(png.data(), png.data() + png.size()), 0, 0});
  GenerationRequest sampled = text;
  sampled.sampling.temperature = 0.8f;
  sampled.sampling.seed = 11;
  return {text, image, sampled};
}

inline void expect_same_answers(Engine& a, Engine& b, const std::string& image_file) {
  for (const GenerationRequest& r : answer_requests(image_file)) {
    const GenerationResult x = a.generate(r);
    const GenerationResult y = b.generate(r);
    EXPECT_EQ(y.prompt_ids, x.prompt_ids);
    EXPECT_EQ(y.completion_ids, x.completion_ids);
    EXPECT_EQ(y.text, x.text);
    EXPECT_EQ(y.stats.image_tokens, x.stats.image_tokens);
  }
  const std::string text = "<|im_start|>héllo wörld 123<|im_end|>";
  EXPECT_EQ(b.tokenize(text), a.tokenize(text));
}

}  // namespace qvl::testing
