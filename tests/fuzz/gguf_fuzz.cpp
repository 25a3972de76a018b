// libFuzzer target: any bytes as a GGUF file (header, metadata, tensor infos, data). Parsing must
// either succeed with every tensor inside the bytes or throw qvl::Error; dequantizing a small
// tensor must stay within its bytes, and reading it as a Qwen3-VL pair (config, tokenizer) must
// fail only with qvl::Error. Register with qvl_fuzz_target(gguf gguf_fuzz.cpp qvl_model).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "base/error.h"
#include "model/gguf_config.h"
#include "model/gguf_dequant.h"
#include "model/gguf_file.h"
#include "model/gguf_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const qvl::GgufFile f = qvl::GgufFile::parse(data, size, "fuzz.gguf");
    for (const qvl::GgufTensor& t : f.tensors()) {
      if (t.data < data || t.data + t.nbytes > data + size) std::abort();
      if (t.numel() <= 4096 && qvl::gguf_can_dequantize(t.type)) {
        std::vector<float> out(static_cast<size_t>(t.numel()));
        qvl::gguf_dequantize(t.type, t.data, t.numel(), out.data());
      }
    }
    try {
      (void)qvl::gguf_model_config(f, f);
    } catch (const qvl::Error&) {
    }
    (void)qvl::gguf_tokenizer_json(f);
  } catch (const qvl::Error&) {
  }
  return 0;
}
