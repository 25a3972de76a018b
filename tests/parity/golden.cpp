#include "golden.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
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

void for_each_golden_case(const std::function<void(const std::string&)>& check) {
  std::vector<std::string> names;
  const nlohmann::json manifest = load_manifest();
  for (const auto& c : manifest["cases"]) names.push_back(c["name"].get<std::string>());
  if (names.empty()) {
    ADD_FAILURE() << "the golden folder " << golden_dir() << " has no cases in its manifest";
    return;
  }
  for (const std::string& name : names) {
    SCOPED_TRACE("golden case " + name + " of " + golden_dir());
    check(name);
    std::printf("[parity] case %s checked\n", name.c_str());
  }
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
