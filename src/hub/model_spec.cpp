#include "hub/model_spec.h"

#include <cctype>

namespace qvl::hub {
namespace {

// Hub names use letters, digits, '-', '_' and '.', and cannot start or end with '.' or '-'.
bool is_valid_name_part(const std::string& part) {
  if (part.empty() || part.size() > 96) return false;
  for (char c : part) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  const char first = part.front(), last = part.back();
  return first != '.' && first != '-' && last != '.' && last != '-' &&
         part.find("..") == std::string::npos;
}

bool is_valid_revision(const std::string& revision) {
  if (revision.empty() || revision.size() > 255) return false;
  for (char c : revision) {
    if (static_cast<unsigned char>(c) <= 0x20 || c == '\\' || c == '~' || c == '^' || c == ':' ||
        c == '?' || c == '*' || c == '[' || c == 0x7f) {
      return false;
    }
  }
  return is_safe_repo_path(revision);  // refs/<revision> is a file path in the cache
}

// A quantization tag as GGUF file names carry it: Q4_K_M, F16, UD-Q4_K_XL, ...
bool is_valid_quant_tag(const std::string& tag) {
  if (tag.empty() || tag.size() > 64) return false;
  for (char c : tag) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<HubModelId> parse_hub_model_id(const std::string& spec) {
  HubModelId id;
  const size_t at = spec.find('@');
  id.repo = spec.substr(0, at);
  id.revision = at == std::string::npos ? kDefaultRevision : spec.substr(at + 1);
  // The quantization tag may follow the name or the revision (git refs never hold ':').
  for (std::string* part : {&id.repo, &id.revision}) {
    const size_t colon = part->find(':');
    if (colon == std::string::npos) continue;
    if (!id.quant.empty()) return std::nullopt;
    id.quant = part->substr(colon + 1);
    part->erase(colon);
    if (!is_valid_quant_tag(id.quant)) return std::nullopt;
  }
  const size_t slash = id.repo.find('/');
  if (slash == std::string::npos || id.repo.find('/', slash + 1) != std::string::npos) {
    return std::nullopt;
  }
  if (!is_valid_name_part(id.repo.substr(0, slash)) ||
      !is_valid_name_part(id.repo.substr(slash + 1)) || !is_valid_revision(id.revision)) {
    return std::nullopt;
  }
  return id;
}

bool is_commit_hash(const std::string& revision) {
  if (revision.size() != 40) return false;
  for (char c : revision) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && !(c >= 'a' && c <= 'f')) return false;
  }
  return true;
}

bool is_safe_repo_path(const std::string& path) {
  if (path.empty() || path.size() > 1024 || path.front() == '/') return false;
  size_t start = 0;
  while (true) {
    const size_t end = path.find('/', start);
    const std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  for (char c : path) {
    if (static_cast<unsigned char>(c) < 0x20 || c == '\\' || c == 0x7f) return false;
  }
  return true;
}

std::string url_encode(const std::string& text, bool keep_slash) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '-' || c == '_' || c == '.' || c == '~' ||
        (keep_slash && c == '/')) {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    }
  }
  return out;
}

}  // namespace qvl::hub
