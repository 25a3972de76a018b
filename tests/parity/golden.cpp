#include "golden.h"

#include <cmath>
#include <cstdlib>

#include "base/mapped_file.h"

namespace qvl::testing {

std::string golden_dir() {
  const char* env = std::getenv("QVL_GOLDEN_DIR");
  if (env != nullptr && *env != '\0') return env;
  return std::string(QVL_TESTDATA_DIR) + "/qwen3vl-tiny-a";
}

nlohmann::json load_manifest() {
  return nlohmann::json::parse(read_text_file(golden_dir() + "/manifest.json"));
}

std::vector<GoldenCase> load_golden_cases() {
  std::vector<GoldenCase> out;
  const auto manifest = load_manifest();
  for (const auto& c : manifest["cases"]) {
    GoldenCase g;
    g.name = c["name"].get<std::string>();
    g.manifest = c;
    g.tensors =
        std::make_shared<SafeTensorsFile>(golden_dir() + "/" + c["file"].get<std::string>());
    out.push_back(std::move(g));
  }
  return out;
}

std::vector<std::string> golden_case_names() {
  std::vector<std::string> names;
  try {
    const auto manifest = load_manifest();
    for (const auto& c : manifest["cases"]) names.push_back(c["name"].get<std::string>());
  } catch (...) {
    names.push_back("missing_manifest");  // the test itself then fails with the real error
  }
  return names;
}

double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (std::isnan(d)) return INFINITY;
    m = std::max(m, d);
  }
  return m;
}

}  // namespace qvl::testing
