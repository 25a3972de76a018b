#include "server/file_part.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <string_view>

#include "base/base64.h"
#include "base/error.h"
#include "media/bmp_encode.h"
#include "media/page_ranges.h"
#include "server/api_error.h"
#include "server/render_gate.h"

namespace qvl::server {
namespace {

using nlohmann::json;

constexpr int64_t kPixelsPerToken = 32 * 32;
constexpr const char* kFileFields[] = {"file_data", "file_id", "file_url", "filename", "pages",
                                       "detail",    "text",    "images",   "rotate",   "password"};

const json* member(const json& object, const char* name) {
  const auto it = object.find(name);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void fail_type(const std::string& param, const char* expected) {
  fail_request(param, "'" + param + "' must be " + expected, "invalid_type");
}

// data:<mime>;base64,<payload> -> bytes, refusing payloads over max_bytes before decoding.
std::vector<uint8_t> decode_file_data(std::string_view uri, size_t max_bytes,
                                      const std::string& param, std::string& mime) {
  constexpr std::string_view kScheme = "data:", kBase64 = ";base64";
  const size_t comma = uri.find(',');
  if (uri.substr(0, kScheme.size()) != kScheme || comma == std::string_view::npos) {
    fail_request(param, "file_data must be a data URI (data:application/pdf;base64,...)",
                 "invalid_file");
  }
  const std::string_view meta = uri.substr(kScheme.size(), comma - kScheme.size());
  if (meta.size() < kBase64.size() || meta.substr(meta.size() - kBase64.size()) != kBase64) {
    fail_request(param, "file_data must be base64-encoded (data:application/pdf;base64,...)",
                 "invalid_file");
  }
  mime = std::string(meta.substr(0, std::min<size_t>(meta.size() - kBase64.size(), 64)));
  if (!mime.empty() && mime != "application/pdf" && mime != "image/tiff" &&
      mime != "application/octet-stream") {
    fail_request(param,
                 "file media type '" + mime +
                     "' is not a document qvl reads; send application/pdf "
                     "or image/tiff (images go in image_url parts)",
                 "unsupported_file_type");
  }
  const std::string_view payload = uri.substr(comma + 1);
  const std::string too_large = "the file is larger than the " + std::to_string(max_bytes >> 20) +
                                " MiB limit (--max-document-mb)";
  if (payload.size() / 4 * 3 > max_bytes + 3) fail_request(param, too_large, "file_too_large");
  std::vector<uint8_t> bytes;
  try {
    bytes = base64_decode(payload);
  } catch (const Error& error) {
    fail_request(param, std::string("file_data is not valid base64: ") + error.what(),
                 "invalid_base64");
  }
  if (bytes.size() > max_bytes) fail_request(param, too_large, "file_too_large");
  if (bytes.empty()) fail_request(param, "file_data is empty", "invalid_file");
  return bytes;
}

// The document's type by content, checked against the media type its data URI gave.
void set_document_bytes(DocumentPart& document, std::vector<uint8_t> bytes, const std::string& mime,
                        const std::string& param) {
  const auto type = media::sniff_document_type(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  if (!type || (mime == "application/pdf" && *type != media::DocumentType::kPdf) ||
      (mime == "image/tiff" && *type != media::DocumentType::kTiff)) {
    fail_request(param,
                 mime.empty() || mime == "application/octet-stream"
                     ? "the file is neither a PDF nor a TIFF (qvl reads those documents; images go "
                       "in image_url parts)"
                     : "the file is not the " + mime + " its data URI says",
                 "unsupported_file_type");
  }
  document.type = *type;
  document.bytes = std::move(bytes);
}

// A file:// document of qvl batch, read within the byte limit.
std::vector<uint8_t> read_file_url(const std::string& url, uint64_t max_bytes,
                                   const std::string& param) {
  const std::string path = url.substr(std::string_view("file://").size());
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail_request(param, "cannot read " + path.substr(0, 512), "invalid_file");
  const auto size = static_cast<uint64_t>(in.tellg());
  if (size > max_bytes) {
    fail_request(param,
                 path.substr(0, 512) + " is larger than the " + std::to_string(max_bytes >> 20) +
                     " MiB limit",
                 "file_too_large");
  }
  std::vector<uint8_t> bytes(size);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size));
  if (!in) fail_request(param, "cannot read " + path.substr(0, 512), "invalid_file");
  return bytes;
}

bool read_flag(const json& file, const char* name, const std::string& param, bool fallback) {
  const json* value = member(file, name);
  if (!value) return fallback;
  if (!value->is_boolean()) fail_type(param + "." + name, "true or false");
  return value->get<bool>();
}

// The filename goes into the prompt's page markers: printable, short.
std::string clean_filename(const json& value, const std::string& param) {
  if (!value.is_string()) fail_type(param, "a string");
  std::string name = value.get<std::string>().substr(0, 200);
  for (char& c : name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = ' ';
  }
  return name;
}

void read_options(const json& file, const std::string& param, const RequestLimits& limits,
                  DocumentPart& document) {
  media::DocumentOptions& options = document.options;
  if (const json* name = member(file, "filename")) {
    document.filename = clean_filename(*name, param + ".filename");
  }
  if (const json* pages = member(file, "pages")) {
    std::string text;
    if (pages->is_string()) {
      text = pages->get<std::string>();
    } else if (pages->is_number_integer()) {
      text = std::to_string(pages->get<int64_t>());
    } else {
      fail_type(param + ".pages", "a string of page ranges such as \"1-3,5\" or a page number");
    }
    try {
      options.pages = media::parse_page_ranges(text);
    } catch (const Error& error) {
      fail_request(param + ".pages", error.what());
    }
  }
  options.page_max_tokens = limits.documents.page_tokens;
  if (const json* detail = member(file, "detail")) {
    if (!detail->is_string()) fail_type(param + ".detail", "a string");
    const auto& name = detail->get_ref<const std::string&>();
    if (name == "low") {
      options.page_max_tokens = limits.low_detail_max_tokens;
    } else if (name == "high") {
      options.page_max_tokens = limits.documents.high_detail_page_tokens;
    } else if (name != "auto") {
      fail_request(param + ".detail", "'detail' must be \"low\", \"high\" or \"auto\"");
    }
  }
  options.text = read_flag(file, "text", param, false);
  options.images = read_flag(file, "images", param, true);
  if (!options.text && !options.images) {
    fail_request(param + ".images", "'images': false needs 'text': true (the text layer alone)");
  }
  if (const json* rotate = member(file, "rotate")) {
    const int64_t degrees = rotate->is_number_integer() ? rotate->get<int64_t>() : -1;
    if (degrees != 0 && degrees != 90 && degrees != 180 && degrees != 270) {
      fail_request(param + ".rotate", "'rotate' must be 0, 90, 180 or 270 (degrees clockwise)");
    }
    options.rotate = static_cast<int>(degrees);
  }
  if (const json* password = member(file, "password")) {
    if (!password->is_string() || password->get_ref<const std::string&>().size() > 1024) {
      fail_type(param + ".password", "a string of at most 1024 bytes");
    }
    options.password = password->get<std::string>();
  }
}

std::string page_marker(const DocumentPart& document, int number, int count) {
  std::string marker = "Page " + std::to_string(number) + "/" + std::to_string(count);
  if (!document.filename.empty()) marker += " of " + document.filename;
  return marker;
}

// One server-wide gate, sized by the first caller's limits (they are the server's).
RenderGate::Ticket enter_render_gate(const RequestLimits& limits) {
  static RenderGate gate(std::max(limits.documents.concurrent_renders, 1));
  const auto wait =
      std::chrono::milliseconds(static_cast<int64_t>(limits.documents.render.max_seconds * 1000));
  RenderGate::Ticket ticket = gate.enter(wait);
  if (!ticket.held()) {
    throw ApiError(503, "server_error",
                   "the server is busy rendering other documents; retry the request", "",
                   "documents_busy");
  }
  return ticket;
}

}  // namespace

ContentPart parse_file_part(const json& part, const std::string& param, const RequestLimits& limits,
                            ChatRequest& out) {
  const std::string file_param = param + ".file";
  const json* file = member(part, "file");
  if (!file)
    fail_request(file_param, "missing required field '" + file_param + "'", "missing_field");
  if (!file->is_object()) fail_type(file_param, "an object");
  for (const auto& item : file->items()) {
    if (std::find(std::begin(kFileFields), std::end(kFileFields), item.key()) ==
        std::end(kFileFields)) {
      fail_request(file_param + "." + item.key().substr(0, 32),
                   "unknown field '" + item.key().substr(0, 32) +
                       "' in a file part; qvl reads file_data, filename, pages, detail, text, "
                       "images, rotate and password",
                   "unknown_parameter");
    }
  }
  if (member(*file, "file_id")) {
    fail_request(file_param + ".file_id",
                 "file_id needs a Files API, which qvl does not have; send the file inline as "
                 "file_data (data:application/pdf;base64,...)",
                 "unsupported_parameter");
  }
  const json* data = member(*file, "file_data");
  const json* url = member(*file, "file_url");
  if (url) {
    if (!limits.allow_file_urls) {
      fail_request(file_param + ".file_url",
                   "file_url is read by qvl batch only; send the file inline as file_data "
                   "(data:application/pdf;base64,...)",
                   "unsupported_parameter");
    }
    if (data) fail_request(file_param, "give file_data or file_url, not both");
    if (!url->is_string() || url->get_ref<const std::string&>().rfind("file://", 0) != 0) {
      fail_type(file_param + ".file_url", "a file:// URL");
    }
  } else if (!data) {
    fail_request(file_param + ".file_data", "missing required field '" + file_param + ".file_data'",
                 "missing_field");
  } else if (!data->is_string()) {
    fail_type(file_param + ".file_data", "a string");
  }
  if (out.documents.size() >= limits.documents.max_documents) {
    fail_request(file_param,
                 "too many files: at most " + std::to_string(limits.documents.max_documents) +
                     " per request",
                 "too_many_files");
  }
  DocumentPart document;
  if (url) {
    document.url = url->get<std::string>();
  } else {
    std::string mime;
    std::vector<uint8_t> bytes =
        decode_file_data(data->get_ref<const std::string&>(), limits.documents.render.max_bytes,
                         file_param + ".file_data", mime);
    set_document_bytes(document, std::move(bytes), mime, file_param + ".file_data");
  }
  read_options(*file, file_param, limits, document);
  document.param = file_param;
  const int index = static_cast<int>(out.documents.size());
  out.documents.push_back(std::move(document));
  return ContentPart{ContentPart::Kind::kText, {}, -2 - index};
}

std::vector<RenderedPage> render_document(DocumentPart& document, const RequestLimits& limits) {
  if (!document.url.empty()) {
    set_document_bytes(document,
                       read_file_url(document.url, limits.documents.render.max_bytes,
                                     document.param + ".file_url"),
                       "", document.param + ".file_url");
  }
  const RenderGate::Ticket ticket = enter_render_gate(limits);
  media::Document rendered;
  try {
    rendered =
        media::read_document(std::string_view(reinterpret_cast<const char*>(document.bytes.data()),
                                              document.bytes.size()),
                             document.type, document.options, limits.documents.render);
  } catch (const Error& error) {
    if (error.code() == ErrorCode::kIo) throw;  // the server could not start its renderer: 500
    fail_request(
        document.param, error.what(),
        error.code() == ErrorCode::kResourceExhausted ? "document_limit_exceeded" : "invalid_file");
  }
  std::vector<RenderedPage> pages;
  for (const media::DocumentPage& page : rendered.pages) {
    RenderedPage& out = pages.emplace_back();
    out.number = page.number;
    const std::string marker = page_marker(document, page.number, rendered.page_count);
    if (!document.options.images) {
      out.parts.push_back({ContentPart::Kind::kText,
                           marker + " (its text layer):\n" + page.text.value_or("") + "\n", -1});
      continue;
    }
    out.parts.push_back({ContentPart::Kind::kText, marker + ":\n", -1});
    ImageInput& image = out.image.emplace();
    image.bytes = media::encode_bmp(page.image);
    if (image.bytes.size() > limits.max_image_bytes) {
      fail_request(document.param,
                   "page " + std::to_string(page.number) + " renders to " +
                       std::to_string(image.bytes.size() >> 20) +
                       " MiB, above the image limit (--max-image-mb); lower the "
                       "page budget (--document-page-tokens or detail)",
                   "document_limit_exceeded");
    }
    // The page is already at its budget in 32-pixel blocks: the image path keeps it as it is.
    image.max_tokens = int64_t{page.image.width} * page.image.height / kPixelsPerToken;
    image.min_tokens = image.max_tokens;
    out.parts.push_back({ContentPart::Kind::kImage, {}, 0});
    if (page.text) {
      out.parts.push_back(
          {ContentPart::Kind::kText,
           "\nText layer of page " + std::to_string(page.number) + ":\n" + *page.text + "\n", -1});
    }
  }
  return pages;
}

void replace_document_placeholders(std::vector<Message>& messages,
                                   std::vector<std::vector<ContentPart>>& documents) {
  for (Message& message : messages) {
    std::vector<ContentPart> parts;
    for (ContentPart& part : message.parts) {
      const int document = -2 - part.image_index;
      if (part.kind == ContentPart::Kind::kText && document >= 0 &&
          static_cast<size_t>(document) < documents.size()) {
        for (ContentPart& page_part : documents[document]) parts.push_back(std::move(page_part));
      } else {
        parts.push_back(std::move(part));
      }
    }
    message.parts = std::move(parts);
  }
}

void expand_documents(ChatRequest& chat, const RequestLimits& limits) {
  if (chat.documents.empty()) return;
  std::vector<ImageInput>& images = chat.generation.images;
  int64_t left = limits.max_total_image_tokens;
  for (const ImageInput& image : images) left -= image.max_tokens;
  std::vector<std::vector<ContentPart>> pages(chat.documents.size());
  for (size_t i = 0; i < chat.documents.size(); ++i) {
    DocumentPart& document = chat.documents[i];
    const auto documents_left = static_cast<int64_t>(chat.documents.size() - i);
    document.options.total_max_tokens = std::max<int64_t>(left / documents_left, 1);
    if (document.options.images && left / documents_left < 4) {
      fail_request(document.param,
                   "no image token budget left for this file's pages (" +
                       std::to_string(limits.max_total_image_tokens) +
                       " per request, --max-image-tokens-per-request); send fewer images or pages",
                   "too_many_images");
    }
    for (RenderedPage& page : render_document(document, limits)) {
      for (ContentPart& part : page.parts) {
        if (part.kind == ContentPart::Kind::kImage) {
          part.image_index = static_cast<int>(images.size());
          left -= page.image->max_tokens;
          images.push_back(std::move(*page.image));
        }
        pages[i].push_back(std::move(part));
      }
    }
  }
  replace_document_placeholders(chat.generation.messages, pages);
  chat.documents.clear();  // the bytes are not needed any more
}

}  // namespace qvl::server
