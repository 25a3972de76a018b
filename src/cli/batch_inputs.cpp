#include "cli/batch_inputs.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <unordered_map>

#include "base/error.h"
#include "media/document.h"
#include "tokenizer/json_depth.h"

namespace qvl::cli {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kOcrPrompt =
    "Read all the text in the image and write it out exactly as it appears, verbatim: keep the "
    "original spelling, punctuation, capitalisation, numbers, line breaks and reading order. Do "
    "not translate, correct, summarise or explain anything, and do not add text that is not in "
    "the image. Output only the extracted text.";

std::string lower_extension(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext;
}

bool has_image_extension(const fs::path& path) {
  const std::string ext = lower_extension(path);
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".webp" || ext == ".gif" ||
         ext == ".bmp";
}

bool has_document_extension(const fs::path& path) {
  const std::string ext = lower_extension(path);
  return ext == ".pdf" || ext == ".tif" || ext == ".tiff";
}

// Animated GIF and WebP files keep their image extensions: they are read as pictures here.
bool has_video_extension(const fs::path& path) {
  const std::string ext = lower_extension(path);
  return ext == ".mp4" || ext == ".m4v" || ext == ".mov" || ext == ".webm" || ext == ".mkv";
}

// The file as the first part of the template's last message: an image_url or video_url part.
BatchItem file_item(const std::string& path, const json& body, const char* part_type) {
  BatchItem item;
  item.id = path;
  item.file = path;
  item.body = body;
  const std::string url = "file://" + fs::absolute(path).lexically_normal().string();
  json& content = item.body["messages"].back()["content"];
  content.insert(content.begin(), json{{"type", part_type}, {part_type, {{"url", url}}}});
  return item;
}

// The number of pages of a PDF or TIFF (in the media worker), or 0 when it cannot be read: then
// its one line fails with the reason.
int document_page_count(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto type = media::sniff_document_type(bytes);
  if (!in.good() && !in.eof()) return 0;
  if (!type) return 0;
  media::DocumentOptions count_only;
  count_only.images = false;
  media::DocumentLimits limits;
  limits.max_pages = INT32_MAX;
  try {
    return media::read_document(bytes, *type, count_only, limits).page_count;
  } catch (const Error&) {
    return 0;
  }
}

// One item per page ("doc.pdf#page=3"), each asking about that page alone.
void add_document_items(const std::string& path, const json& body, BatchInputs& out) {
  const std::string url = "file://" + fs::absolute(path).lexically_normal().string();
  const auto item_for = [&](int page) {
    BatchItem item;
    item.id = page > 0 ? path + "#page=" + std::to_string(page) : path;
    item.file = path;
    item.body = body;
    item.page = page;
    json file = {{"file_url", url}, {"filename", fs::path(path).filename().string()}};
    if (page > 0) file["pages"] = std::to_string(page);
    json& content = item.body["messages"].back()["content"];
    content.insert(content.begin(), json{{"type", "file"}, {"file", file}});
    out.items.push_back(std::move(item));
  };
  const int pages = document_page_count(path);
  if (pages == 0) return item_for(0);
  for (int page = 1; page <= pages; ++page) item_for(page);
}

}  // namespace

std::string preset_prompt(const std::string& preset, const std::string& medium) {
  if (preset == "ocr") {
    std::string prompt = kOcrPrompt;
    const std::string named = "the " + medium;
    for (size_t at = 0; (at = prompt.find("the image", at)) != std::string::npos;) {
      prompt.replace(at, 9, named);
      at += named.size();  // past the replacement, which may itself read "the image"
    }
    // Documents come back as Markdown, so their structure survives (issue 36).
    if (medium == "document page") {
      prompt +=
          " Write it as Markdown: headings as headings, lists as lists and tables as "
          "Markdown tables.";
    }
    return prompt;
  }
  if (preset == "describe") return "Describe this " + medium + " in detail.";
  fail(ErrorCode::kInvalidArgument, "unknown preset '" + preset + "'; use ocr or describe");
}

BatchInputs image_inputs(const std::vector<std::string>& paths, const json& body,
                         const json& video_body, const json& document_body) {
  BatchInputs out;
  std::set<std::string> seen;
  const auto add = [&](const std::string& path) {
    if (!seen.insert(path).second) return;
    if (has_document_extension(path)) {
      add_document_items(path, document_body, out);
    } else if (has_video_extension(path)) {
      out.items.push_back(file_item(path, video_body, "video_url"));
    } else {
      out.items.push_back(file_item(path, body, "image_url"));
    }
  };
  for (const std::string& path : paths) {
    std::error_code error;
    if (!fs::is_directory(path, error)) {
      add(path);  // a missing or unreadable file fails its own line
      continue;
    }
    std::vector<std::string> files;
    for (const fs::directory_entry& entry : fs::directory_iterator(path, error)) {
      if (!entry.is_regular_file(error)) continue;
      if (has_image_extension(entry.path()) || has_document_extension(entry.path()) ||
          has_video_extension(entry.path())) {
        files.push_back(entry.path().string());
      } else {
        ++out.ignored_files;
      }
    }
    if (error) fail(ErrorCode::kIo, "cannot list folder '" + path + "': " + error.message());
    std::sort(files.begin(), files.end());
    for (const std::string& file : files) add(file);
  }
  return out;
}

BatchInputs request_inputs(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(ErrorCode::kNotFound, "cannot read requests file '" + path + "'");
  BatchInputs out;
  out.base_dir = fs::absolute(path).parent_path().string();
  std::unordered_map<std::string, int64_t> line_of_id;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    BatchItem item;
    item.id = "line-" + std::to_string(number);
    json value;  // stays null for a line that is not JSON
    std::string too_deep;
    try {
      value = parse_json_within_depth<json>(line);
    } catch (const json::exception&) {
    } catch (const Error& e) {
      too_deep = e.what();  // refused while reading: the tree was never built
    }
    if (!value.is_object()) {
      item.error = "line " + std::to_string(number) +
                   (too_deep.empty() ? " is not a JSON object" : ": " + too_deep);
    } else {
      for (const char* key : {"custom_id", "id"}) {
        if (value.contains(key) && value[key].is_string()) {
          item.id = value[key].get<std::string>();
          break;
        }
      }
      if (value.contains("body") && value["body"].is_object()) {
        item.body = std::move(value["body"]);  // OpenAI Batch API line
      } else {
        value.erase("custom_id");
        value.erase("id");
        item.body = std::move(value);
      }
    }
    const auto [it, fresh] = line_of_id.emplace(item.id, number);
    if (!fresh) {
      fail(ErrorCode::kInvalidArgument, "requests file '" + path + "': id '" + item.id +
                                            "' is on lines " + std::to_string(it->second) +
                                            " and " + std::to_string(number));
    }
    out.items.push_back(std::move(item));
  }
  return out;
}

}  // namespace qvl::cli
