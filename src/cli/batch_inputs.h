// The inputs of `qvl batch`: image, document and video files and folders, each file (or page)
// becoming one OpenAI chat request body (the file as a file:// URL, then the prompt), or a JSONL
// file of request bodies. Every input
// has an id that names its output line (the image path, or the line's id / custom_id).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace qvl::cli {

struct BatchItem {
  std::string id;
  std::string file;     // file mode: the path as given
  nlohmann::json body;  // an OpenAI chat completion request body
  // Set when the input itself is unusable (a requests line that is not JSON): fails its line.
  std::string error;
  int page = 0;  // a document's page (1-based; `file` is the document), 0 for other inputs
};

struct BatchInputs {
  std::vector<BatchItem> items;
  int64_t ignored_files = 0;  // files in folders without an image, document or video extension
  std::string base_dir;       // relative file:// URLs are resolved against it
};

// The prompt of a preset: "ocr" (read all text verbatim) or "describe", as on the web page, about
// the medium named ("image", "video" or "document page"; OCR of a document page asks for
// Markdown, its tables as Markdown tables).
std::string preset_prompt(const std::string& preset, const std::string& medium = "image");

// One item per image: files as given (whatever their extension), and the files of folders with
// an image extension (.jpg .jpeg .png .webp .gif .bmp), sorted by name, non-recursive. `body` is
// the template every image's request starts from: its last message's content gets the image
// prepended. A path given twice counts once. Documents (.pdf .tif .tiff) give one item per page,
// "doc.pdf#page=3", with a file part of that page, from `document_body` (one item named by the
// path when the document cannot be read, which fails with the reason). Videos (.mp4 .m4v .mov .webm
// .mkv) give one item each, with a video_url part, from `video_body` (the template with the prompt
// about a video).
BatchInputs image_inputs(const std::vector<std::string>& paths, const nlohmann::json& body,
                         const nlohmann::json& video_body, const nlohmann::json& document_body);

// One item per non-empty line of a JSONL file: an OpenAI Batch API line ({"custom_id", "body":
// {...}}) or a bare request body with "id" or "custom_id" (removed from the body). Lines without
// an id are named "line-N". Throws qvl::Error for an unreadable file or a repeated id.
BatchInputs request_inputs(const std::string& path);

}  // namespace qvl::cli
