#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenizer.h"

#include <pcre2.h>

#include "base/error.h"

namespace qvl {

struct SplitPretokenizer::Compiled {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

// Per-thread PCRE2 state, so split() never allocates: one match-data block, and a JIT stack
// (PCRE2's 32 KiB default is too small for long lookahead runs; 1 MiB bounds memory).
struct ThreadMatchState {
  pcre2_match_data* match_data = pcre2_match_data_create(1, nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(32 * 1024, 1024 * 1024, nullptr);
  pcre2_match_context* jit_context = pcre2_match_context_create(nullptr);
  ThreadMatchState() { pcre2_jit_stack_assign(jit_context, nullptr, jit_stack); }
  ~ThreadMatchState() {
    pcre2_match_context_free(jit_context);
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_data_free(match_data);
  }
  ThreadMatchState(const ThreadMatchState&) = delete;
  ThreadMatchState& operator=(const ThreadMatchState&) = delete;
};

ThreadMatchState& thread_match_state() {
  thread_local ThreadMatchState state;
  return state;
}

size_t utf8_char_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) return 2;
  if ((lead & 0xF0) == 0xE0) return 3;
  return 4;
}

}  // namespace

std::string translate_split_pattern(const std::string& pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[++i];
      if (next == 's') {
        out += "\\p{White_Space}";
      } else if (next == 'S') {
        out += "\\P{White_Space}";
      } else {
        out += '\\';
        out += next;
      }
    } else {
      out += pattern[i];
    }
  }
  return out;
}

SplitPretokenizer::SplitPretokenizer(const std::string& pattern)
    : compiled_(std::make_unique<Compiled>()) {
  const std::string translated = translate_split_pattern(pattern);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  compiled_->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (compiled_->code == nullptr) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error_code, message, sizeof(message));
    fail(ErrorCode::kCorrupt, "tokenizer pre-tokenizer regex does not compile (" +
                                  std::string(reinterpret_cast<char*>(message)) + " at offset " +
                                  std::to_string(error_offset) + "): " + pattern);
  }
  compiled_->jit = pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE) == 0;
}

SplitPretokenizer::~SplitPretokenizer() = default;
SplitPretokenizer::SplitPretokenizer(SplitPretokenizer&&) noexcept = default;
SplitPretokenizer& SplitPretokenizer::operator=(SplitPretokenizer&&) noexcept = default;

void SplitPretokenizer::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  ThreadMatchState& thread_state = thread_match_state();
  pcre2_match_data* md = thread_state.match_data;
  pcre2_match_context* context = compiled_->jit ? thread_state.jit_context : nullptr;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t gap_start = 0;  // end of the previous match
  size_t offset = 0;
  while (offset <= text.size()) {
    const int rc = compiled_->jit ? pcre2_jit_match(compiled_->code, subject, text.size(), offset,
                                                    0, md, context)
                                  : pcre2_match(compiled_->code, subject, text.size(), offset,
                                                PCRE2_NO_UTF_CHECK, md, context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      fail(ErrorCode::kResourceExhausted,
           "pre-tokenizer regex failed on the input (PCRE2 error " + std::to_string(rc) + ")");
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(md);
    const size_t begin = ovector[0], end = ovector[1];
    if (begin == end) {  // empty matches produce no piece; step one character forward
      if (begin >= text.size()) break;
      offset = begin + utf8_char_length(static_cast<unsigned char>(text[begin]));
      continue;
    }
    if (begin > gap_start) pieces.push_back(text.substr(gap_start, begin - gap_start));
    pieces.push_back(text.substr(begin, end - begin));
    gap_start = offset = end;
  }
  if (gap_start < text.size()) pieces.push_back(text.substr(gap_start));
}

}  // namespace qvl
