// Shared helpers for the tokenizer tests: the real Qwen3 tokenizer, loaded once per process.
#pragma once

#include <string>

#include "tokenizer/tokenizer.h"

namespace qvl::test {

inline std::string qwen3_tokenizer_dir() {
  return std::string(QVL_TESTDATA_DIR) + "/qwen3-tokenizer";
}

inline const Tokenizer& qwen3_tokenizer() {
  static const Tokenizer tokenizer = Tokenizer::from_model_dir(qwen3_tokenizer_dir());
  return tokenizer;
}

}  // namespace qvl::test
