// Regenerates a golden folder's model.safetensors from its seeded_weights.json and checks it
// against the spec's sha256 (the build runs it for tests/testdata/CMakeLists.txt's folders).
//   qvl_seeded_model SEEDED_WEIGHTS_JSON OUT_FILE
#include <cstdio>
#include <exception>

#include "base/mapped_file.h"
#include "model/seeded_weights.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s SEEDED_WEIGHTS_JSON OUT_FILE\n", argv[0]);
    return 2;
  }
  try {
    qvl::write_seeded_model(qvl::parse_seeded_weights_spec(qvl::read_text_file(argv[1])), argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[1], e.what());
    return 1;
  }
  return 0;
}
