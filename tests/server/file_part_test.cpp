// `file` content parts: parsed and checked inside parse_chat_request, then rendered into pages (a
// marker text and an image per page, in order) by expand_documents through the media worker.
#include "server/file_part.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "image/decode.h"
#include "media/pdf_fixtures.h"
#include "server/api_error.h"

#if QVL_HAS_DOCUMENTS
namespace qvl::server {
namespace {

using nlohmann::json;

ModelInfo test_model() {
  ModelInfo model;
  model.name = "tiny";
  model.context_length = 4096;
  model.vocab_size = 151936;
  model.image_min_tokens = 16;
  model.image_max_tokens = 1024;
  model.default_sampling.max_tokens = 100;
  return model;
}

std::string base64(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t group = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) group |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) group |= static_cast<uint8_t>(bytes[i + 2]);
    const size_t n = std::min<size_t>(3, bytes.size() - i);  // input bytes in this group
    for (size_t k = 0; k < 4; ++k) out += k <= n ? kAlphabet[(group >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

std::string data_uri(const std::string& bytes, const std::string& mime = "application/pdf") {
  return "data:" + mime + ";base64," + base64(bytes);
}

// A user message: "Read this." and a file part with `file` as its object.
std::string body_with(const json& file) {
  json body = {
      {"model", "m"},
      {"messages",
       {{{"role", "user"},
         {"content",
          {{{"type", "text"}, {"text", "Read this."}}, {{"type", "file"}, {"file", file}}}}}}}};
  return body.dump();
}

json pdf_file(const json& extra = json::object()) {
  json file = {{"file_data", data_uri(media::testing::mixed_document())},
               {"filename", "mixed.pdf"}};
  file.update(extra);
  return file;
}

ApiError error_of(const std::string& body, RequestLimits limits = {}) {
  try {
    ChatRequest chat = parse_chat_request(body, test_model(), limits);
    expand_documents(chat, limits);
  } catch (const ApiError& error) {
    EXPECT_EQ(error.status(), 400);
    return error;
  }
  ADD_FAILURE() << "accepted";
  return ApiError(0, "", "");
}

TEST(FilePart, PagesReplaceThePartInOrderWithMarkers) {
  RequestLimits limits;
  limits.max_total_image_tokens = 4096;
  ChatRequest chat = parse_chat_request(body_with(pdf_file()), test_model(), limits);
  ASSERT_EQ(chat.documents.size(), 1u);
  EXPECT_EQ(chat.generation.messages[0].parts[1].image_index, -2);  // the placeholder
  expand_documents(chat, limits);
  EXPECT_TRUE(chat.documents.empty());
  const auto& parts = chat.generation.messages[0].parts;
  ASSERT_EQ(parts.size(), 1u + 4 * 2);
  EXPECT_EQ(parts[0].text, "Read this.");
  ASSERT_EQ(chat.generation.images.size(), 4u);
  int64_t tokens = 0;
  for (int page = 1; page <= 4; ++page) {
    EXPECT_EQ(parts[2 * page - 1].kind, ContentPart::Kind::kText);
    EXPECT_EQ(parts[2 * page - 1].text, "Page " + std::to_string(page) + "/4 of mixed.pdf:\n");
    EXPECT_EQ(parts[2 * page].kind, ContentPart::Kind::kImage);
    const ImageInput& image = chat.generation.images[parts[2 * page].image_index];
    const RgbImage decoded = decode_image(image.bytes.data(), image.bytes.size());
    EXPECT_EQ(int64_t{decoded.width} * decoded.height, image.max_tokens * 1024);
    EXPECT_EQ(image.min_tokens, image.max_tokens);  // kept as rendered
    EXPECT_EQ(decoded.width % 32, 0);
    tokens += image.max_tokens;
  }
  // Four pages share the request's 4096 image tokens.
  EXPECT_LE(tokens, 4096);
  EXPECT_GT(tokens, 3000);
}

TEST(FilePart, PagesTextLayerAndDetail) {
  RequestLimits limits;
  limits.max_total_image_tokens = 100000;
  ChatRequest chat =
      parse_chat_request(body_with(pdf_file({{"pages", "1"}, {"text", true}, {"detail", "low"}})),
                         test_model(), limits);
  expand_documents(chat, limits);
  const auto& parts = chat.generation.messages[0].parts;
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_EQ(parts[1].text, "Page 1/4 of mixed.pdf:\n");
  EXPECT_LE(chat.generation.images[0].max_tokens, limits.low_detail_max_tokens);
  EXPECT_NE(parts[3].text.find("Text layer of page 1:\n"), std::string::npos);
  EXPECT_NE(parts[3].text.find("Invoice 2026-0042"), std::string::npos);

  ChatRequest text_only = parse_chat_request(
      body_with(pdf_file({{"pages", 4}, {"text", true}, {"images", false}})), test_model(), limits);
  expand_documents(text_only, limits);
  ASSERT_EQ(text_only.generation.messages[0].parts.size(), 2u);
  EXPECT_TRUE(text_only.generation.images.empty());
  const std::string& text = text_only.generation.messages[0].parts[1].text;
  EXPECT_EQ(text.rfind("Page 4/4 of mixed.pdf (its text layer):\n", 0), 0u) << text;
  EXPECT_NE(text.find("Parcel label 7"), std::string::npos);
}

TEST(FilePart, BadFieldsAreNamed) {
  const std::string file = "messages[0].content[1].file";
  ApiError e = error_of(body_with({{"file_id", "file-abc"}}));
  EXPECT_EQ(e.param(), file + ".file_id");
  e = error_of(body_with({{"file_url", "file:///etc/hostname"}}));  // qvl batch only
  EXPECT_EQ(e.param(), file + ".file_url");
  EXPECT_EQ(e.code(), "unsupported_parameter");
  e = error_of(body_with(pdf_file({{"page", "1"}})));
  EXPECT_EQ(e.param(), file + ".page");
  EXPECT_EQ(e.code(), "unknown_parameter");
  e = error_of(body_with(pdf_file({{"pages", "3-1"}})));
  EXPECT_EQ(e.param(), file + ".pages");
  EXPECT_EQ(e.message(), "bad page range '3-1': it ends before it starts");
  e = error_of(body_with(pdf_file({{"rotate", 45}})));
  EXPECT_EQ(e.param(), file + ".rotate");
  e = error_of(body_with(pdf_file({{"images", false}})));
  EXPECT_EQ(e.param(), file + ".images");
  e = error_of(body_with({{"file_data", data_uri("hello, not a document")}}));
  EXPECT_EQ(e.param(), file + ".file_data");
  EXPECT_EQ(e.message(), "the file is not the application/pdf its data URI says");
  e = error_of(body_with({{"file_data", data_uri("hello", "text/plain")}}));
  EXPECT_EQ(e.code(), "unsupported_file_type");
  e = error_of(body_with({{"file_data", "data:application/pdf;base64,@@@@"}}));
  EXPECT_EQ(e.code(), "invalid_base64");
  RequestLimits small;
  small.documents.render.max_bytes = 1000;
  e = error_of(body_with(pdf_file()), small);
  EXPECT_EQ(e.code(), "file_too_large");
  EXPECT_EQ(e.param(), file + ".file_data");
}

TEST(FilePart, DocumentsThatCannotBeReadAre400s) {
  const std::string file = "messages[0].content[1].file";
  ApiError e = error_of(body_with(pdf_file({{"pages", "7"}})));
  EXPECT_EQ(e.param(), file);
  EXPECT_EQ(e.message(), "page 7 is past the document's last page (4)");
  e = error_of(body_with({{"file_data", data_uri("%PDF-1.7\nbroken")}}));
  EXPECT_EQ(e.code(), "invalid_file");
  EXPECT_EQ(e.message(), "the file is not a readable PDF (damaged or not a PDF)");
  RequestLimits limits;
  limits.documents.render.max_pages = 2;
  e = error_of(body_with(pdf_file()), limits);
  EXPECT_EQ(e.code(), "document_limit_exceeded");
  limits = {};
  limits.max_total_image_tokens = 8;
  e = error_of(body_with(pdf_file()), limits);
  EXPECT_EQ(e.code(), "document_limit_exceeded");  // 4 pages in 8 tokens: 2 each, below a block
}

}  // namespace
}  // namespace qvl::server
#endif  // QVL_HAS_DOCUMENTS
