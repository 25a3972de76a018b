#include "cli/answer_printer.h"

#include <unistd.h>

namespace qvl::cli {

namespace {
constexpr const char* kFaint = "\x1b[2m";
constexpr const char* kReset = "\x1b[0m";
}  // namespace

AnswerPrinter::AnswerPrinter(bool thinking, bool show_reasoning, std::FILE* out)
    : thinking_(thinking),
      show_reasoning_(show_reasoning),
      dim_(::isatty(::fileno(out)) == 1),
      out_(out) {}

bool AnswerPrinter::write(const std::string& text) {
  if (text.empty()) return true;
  std::fwrite(text.data(), 1, text.size(), out_);
  return std::fflush(out_) == 0 && !std::ferror(out_);
}

bool AnswerPrinter::print(const server::ReasoningDelta& delta) {
  std::string text;
  if (show_reasoning_ && !delta.reasoning.empty()) {
    if (dim_ && !in_dim_) text += kFaint;
    in_dim_ = dim_;
    text += delta.reasoning;
    reasoning_printed_ = true;
  }
  if (!delta.content.empty()) {
    if (in_dim_) text += kReset;
    in_dim_ = false;
    if (reasoning_printed_) text += "\n\n";
    reasoning_printed_ = false;
    text += delta.content;
  }
  return write(text);
}

bool AnswerPrinter::feed(const std::string& text) {
  if (!thinking_) return write(text);
  return print(split_.feed(text));
}

bool AnswerPrinter::finish() {
  if (!thinking_) return true;
  const bool ok = print(split_.finish());
  return ok && (!in_dim_ || write(kReset));
}

}  // namespace qvl::cli
