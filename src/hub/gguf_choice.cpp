#include "hub/gguf_choice.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "base/error.h"

namespace qvl::hub {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string stem(const std::string& name) {
  const std::string base = base_name(name);
  return base.substr(0, base.size() - 5);  // ".gguf"
}

// "...-Q4_K_M" and "...-UD-Q4_K_XL" both end with a wanted tag given in any case.
bool has_tag(const std::string& name, const std::string& tag) {
  const std::string s = lower(stem(name)), t = lower(tag);
  if (s.size() <= t.size() || s.compare(s.size() - t.size(), t.size(), t) != 0) return false;
  const char before = s[s.size() - t.size() - 1];
  return before == '-' || before == '.' || before == '_';
}

bool is_shard(const std::string& name) {
  static const std::regex shard("-[0-9]{5}-of-[0-9]{5}$");
  return std::regex_search(stem(name), shard);
}

std::string listing(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ", ") + base_name(n);
  return text.empty() ? "none" : text;
}

std::string pick(const std::vector<std::string>& candidates, const std::string& wanted,
                 const std::vector<const char*>& preferred, const std::string& what,
                 const std::string& where, const std::string& how_to_choose) {
  if (candidates.empty()) {
    fail(ErrorCode::kNotFound, where + " has no " + what);
  }
  std::vector<std::string> matches;
  if (!wanted.empty()) {
    for (const std::string& c : candidates) {
      if (has_tag(c, wanted)) matches.push_back(c);
    }
    if (matches.empty()) {
      fail(ErrorCode::kNotFound,
           where + " has no " + what + " in " + wanted + " (it has " + listing(candidates) + ")");
    }
  } else if (candidates.size() == 1) {
    matches = candidates;
  } else {
    for (const char* tag : preferred) {
      for (const std::string& c : candidates) {
        if (has_tag(c, tag)) matches.push_back(c);
      }
      if (!matches.empty()) break;
    }
    if (matches.empty()) {
      fail(ErrorCode::kInvalidArgument,
           where + " has several " + what + "s (" + listing(candidates) + "): " + how_to_choose);
    }
  }
  if (matches.size() > 1) {
    fail(ErrorCode::kInvalidArgument, where + " has several " + what + "s matching (" +
                                          listing(matches) + "): " + how_to_choose);
  }
  if (is_shard(matches[0])) {
    fail(ErrorCode::kUnsupported, base_name(matches[0]) +
                                      " is one shard of a split GGUF, which qvl cannot load; "
                                      "merge it first (llama-gguf-split --merge)");
  }
  return matches[0];
}

}  // namespace

bool is_gguf_name(const std::string& name) {
  const std::string base = lower(base_name(name));
  return base.size() > 5 && base.compare(base.size() - 5, 5, ".gguf") == 0;
}

bool is_mmproj_name(const std::string& name) {
  return is_gguf_name(name) && lower(base_name(name)).rfind("mmproj", 0) == 0;
}

std::string gguf_quant_tag(const std::string& name) {
  const std::string s = stem(name);
  const size_t cut = s.find_last_of("-.");
  return cut == std::string::npos ? "" : s.substr(cut + 1);
}

GgufChoice choose_gguf_pair(const std::vector<std::string>& files, const std::string& quant,
                            const std::string& mmproj_quant, const std::string& where) {
  std::vector<std::string> text, mmproj;
  for (const std::string& f : files) {
    if (is_mmproj_name(f)) {
      mmproj.push_back(f);
    } else if (is_gguf_name(f)) {
      text.push_back(f);
    }
  }
  GgufChoice choice;
  choice.text = pick(text, quant, {"Q8_0", "Q4_K_M", "F16", "BF16"}, "GGUF language model", where,
                     "choose one with Org/Name:QUANT (or --quant QUANT)");
  choice.mmproj =
      pick(mmproj, mmproj_quant, {"F16", "BF16", "Q8_0", "F32"},
           "GGUF vision projector (mmproj-*.gguf)", where, "choose one with --mmproj-quant QUANT");
  return choice;
}

}  // namespace qvl::hub
