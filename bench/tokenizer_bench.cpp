// Tokenizer throughput: encode ~1 MB of mixed multilingual text (English, code, Chinese,
// Japanese, Korean, Arabic, Russian, emoji, numbers, whitespace) with the real Qwen3 tokenizer.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "tokenizer/incremental_decoder.h"
#include "tokenizer/tokenizer.h"

namespace {

const qvl::Tokenizer& tokenizer() {
  static const qvl::Tokenizer t =
      qvl::Tokenizer::from_model_dir(std::string(QVL_TESTDATA_DIR) + "/qwen3-tokenizer");
  return t;
}

uint64_t next_random(uint64_t& state) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return state >> 33;
}

// ~1 MB built from paragraphs in several scripts, shuffled deterministically.
const std::string& mixed_text() {
  static const std::string text = [] {
    const std::vector<std::string> paragraphs = {
        "The quick brown fox jumps over the lazy dog. Large language models predict the next "
        "token; they don't read words the way people do, and that's fine.\n",
        "int main(int argc, char** argv) {\n  std::vector<int> v{1, 2, 3};\n  for (int x : v) "
        "printf(\"%d\\n\", x * 42);\n  return 0;\n}\n",
        "大语言模型是一种人工智能模型，能够理解和生成自然语言文本。今天天气很好，我们去公园散步吧。"
        "\n",
        "こんにちは、世界！これは日本語のテキストです。カタカナとひらがなと漢字が混ざっています。"
        "\n",
        "안녕하세요, 세계! 이것은 한국어 문장입니다. 토크나이저의 속도를 측정합니다.\n",
        "مرحبا بالعالم، هذا نص عربي لاختبار سرعة المرمز.\n",
        "Привет, мир! Это русский текст для проверки скорости токенизатора.\n",
        "Emoji: 😀👍🏽👨‍👩‍👧‍👦🏳️‍🌈❤️🇯🇵 and numbers "
        "3.14159265358979, "
        "1,000,000, "
        "2024-06-11.\n",
        "    indented\tline\twith\ttabs   and   runs   of   spaces\r\n\r\n",
        "Caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9 e\xCC\x81l\xC3\xA8ve "
        "\xC3\x85ngstr\xC3\xB6m.\n",
    };
    std::string out;
    uint64_t state = 7;
    while (out.size() < (1 << 20)) out += paragraphs[next_random(state) % paragraphs.size()];
    return out;
  }();
  return text;
}

void BM_TokenizerEncode(benchmark::State& state) {
  const qvl::Tokenizer& t = tokenizer();
  const std::string& text = mixed_text();
  size_t tokens = 0;
  for (auto _ : state) {
    std::vector<int32_t> ids = t.encode(text);
    tokens += ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TokenizerEncode)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// Words that were never seen before, so every pre-token misses the BPE cache.
void BM_TokenizerEncodeUncachedWords(benchmark::State& state) {
  const qvl::Tokenizer& t = tokenizer();
  uint64_t seed = 99;
  size_t bytes = 0, tokens = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::string text;
    while (text.size() < (256 << 10)) {
      text += ' ';
      const size_t length = 3 + next_random(seed) % 10;
      for (size_t i = 0; i < length; ++i) text += static_cast<char>('a' + next_random(seed) % 26);
    }
    state.ResumeTiming();
    std::vector<int32_t> ids = t.encode(text);
    bytes += text.size();
    tokens += ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TokenizerEncodeUncachedWords)->Unit(benchmark::kMillisecond);

void BM_TokenizerStreamDecode(benchmark::State& state) {
  const qvl::Tokenizer& t = tokenizer();
  const std::vector<int32_t> ids = t.encode(mixed_text());
  for (auto _ : state) {
    qvl::IncrementalDecoder decoder(t);
    size_t produced = 0;
    for (int32_t id : ids) produced += decoder.push(id).size();
    produced += decoder.flush().size();
    benchmark::DoNotOptimize(produced);
  }
  state.counters["tokens/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * ids.size()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TokenizerStreamDecode)->Unit(benchmark::kMillisecond);

}  // namespace
