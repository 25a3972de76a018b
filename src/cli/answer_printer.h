// `qvl run`'s streamed answer on stdout. A Thinking model's reasoning is hidden, or with
// --show-reasoning printed before the answer: dimmed on a terminal, plain text otherwise, with an
// empty line between the two.
#pragma once

#include <cstdio>
#include <string>

#include "server/reasoning_split.h"

namespace qvl::cli {

class AnswerPrinter {
 public:
  // thinking: the model's answers begin with reasoning (ModelInfo::thinking).
  AnswerPrinter(bool thinking, bool show_reasoning, std::FILE* out);
  // false when the output cannot be written (a closed pipe, a full disk): stop generating.
  bool feed(const std::string& text);
  bool finish();

 private:
  bool print(const server::ReasoningDelta& delta);
  bool write(const std::string& text);

  bool thinking_;
  bool show_reasoning_;
  bool dim_;  // ANSI faint for the reasoning: only when `out` is a terminal
  std::FILE* out_;
  server::ReasoningStream split_;
  bool reasoning_printed_ = false;
  bool in_dim_ = false;
};

}  // namespace qvl::cli
