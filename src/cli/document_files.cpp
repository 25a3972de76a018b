#include "cli/document_files.h"

#include <fstream>
#include <iterator>

#include "base/error.h"
#include "media/page_ranges.h"
#include "server/api_error.h"
#include "server/file_part.h"

namespace qvl::cli {
namespace {

std::vector<uint8_t> read_document_file(const std::string& path, uint64_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(ErrorCode::kNotFound, "cannot open " + path);
  const auto size = static_cast<uint64_t>(in.tellg());
  if (size > max_bytes) {
    fail(ErrorCode::kResourceExhausted,
         path + " is larger than " + std::to_string(max_bytes >> 20) + " MiB");
  }
  std::vector<uint8_t> bytes(size);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (!in) fail(ErrorCode::kIo, "cannot read " + path);
  return bytes;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

void add_document_files(GenerationRequest& request, const std::vector<std::string>& paths,
                        const DocumentFileOptions& options) {
  if (paths.empty()) return;
  server::ChatRequest chat;
  chat.generation = std::move(request);
  Message* user = nullptr;
  for (Message& message : chat.generation.messages) {
    if (message.role == "user") user = &message;
  }
  if (!user) fail(ErrorCode::kInvalidArgument, "--file needs a question");
  server::RequestLimits limits;
  // The command line chose the files: no per-request share, only each page's own budget.
  limits.max_total_image_tokens = int64_t{1} << 40;
  limits.documents.max_documents = paths.size();
  std::vector<ContentPart> placeholders;
  for (const std::string& path : paths) {
    server::DocumentPart document;
    document.bytes = read_document_file(path, limits.documents.render.max_bytes);
    const auto type = media::sniff_document_type(std::string_view(
        reinterpret_cast<const char*>(document.bytes.data()), document.bytes.size()));
    if (!type) fail(ErrorCode::kInvalidArgument, path + " is neither a PDF nor a TIFF");
    document.type = *type;
    document.options.pages = media::parse_page_ranges(options.pages);
    document.options.page_max_tokens = options.page_tokens;
    document.options.text = options.text || options.text_only;
    document.options.images = !options.text_only;
    document.options.password = options.password;
    document.filename = base_name(path);
    document.param = path;
    placeholders.push_back(
        {ContentPart::Kind::kText, {}, -2 - static_cast<int>(chat.documents.size())});
    chat.documents.push_back(std::move(document));
  }
  // Before the question, after any images.
  const auto question = user->parts.empty() ? user->parts.end() : user->parts.end() - 1;
  user->parts.insert(question, placeholders.begin(), placeholders.end());
  user->content_is_string = false;
  try {
    server::expand_documents(chat, limits);
  } catch (const server::ApiError& error) {
    fail(ErrorCode::kInvalidArgument, error.param() + ": " + error.message());
  }
  request = std::move(chat.generation);
}

}  // namespace qvl::cli
