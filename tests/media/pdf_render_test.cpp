// PDF pages through the media worker: sizes from the token budget, pixels equal to poppler's own
// pdftoppm at the same resolution and clip, the text layer, page selection, rotation, passwords
// and damaged files.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "base/error.h"
#include "media/document.h"
#include "media/document_jobs.h"
#include "media/pdf_fixtures.h"

namespace qvl::media {
namespace {

using testing::mixed_document;

#if QVL_HAS_DOCUMENTS

// A file in the test's temporary folder, removed at the end.
class TempFile {
 public:
  explicit TempFile(const std::string& bytes, const char* suffix = ".pdf") {
    path_ = ::testing::TempDir() + "qvl_pdf_" + std::to_string(::getpid()) + "_" +
            std::to_string(counter_++) + suffix;
    std::ofstream(path_, std::ios::binary) << bytes;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::string path_;
};

std::string run_command(const std::string& command) {
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return {};
  std::string out;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) out.append(buffer, n);
  ::pclose(pipe);
  return out;
}

// pdftoppm's P6 output as an RgbImage (empty when it is not one).
RgbImage parse_ppm(const std::string& ppm) {
  RgbImage image;
  int max = 0, consumed = 0;
  if (std::sscanf(ppm.c_str(), "P6 %d %d %d%n", &image.width, &image.height, &max, &consumed) !=
          3 ||
      max != 255) {
    return {};
  }
  const size_t size = static_cast<size_t>(image.width) * image.height * 3;
  if (ppm.size() < consumed + 1 + size) return {};
  image.pixels.assign(ppm.begin() + consumed + 1, ppm.begin() + consumed + 1 + size);
  return image;
}

Document read_pdf(const std::string& bytes, const DocumentOptions& options = {},
                  const DocumentLimits& limits = {}) {
  return read_document(bytes, DocumentType::kPdf, options, limits);
}

std::string error_of(const std::string& bytes, const DocumentOptions& options = {},
                     const DocumentLimits& limits = {}) {
  try {
    read_pdf(bytes, options, limits);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(PdfRender, PagesFillTheirTokenBudgetInMultiplesOf32) {
  const Document document = read_pdf(mixed_document());
  EXPECT_EQ(document.page_count, 4);
  ASSERT_EQ(document.pages.size(), 4u);
  // (width, height) of each page after its /Rotate, in points.
  const double boxes[4][2] = {{612, 792}, {595, 842}, {792, 612}, {300, 200}};
  for (int i = 0; i < 4; ++i) {
    const DocumentPage& page = document.pages[i];
    EXPECT_EQ(page.number, i + 1);
    const ImageSize size =
        document_page_size(boxes[i][0], boxes[i][1], 0, kDocumentPageTokens * 1024);
    EXPECT_EQ(page.image.width, size.width);
    EXPECT_EQ(page.image.height, size.height);
    EXPECT_EQ(page.image.width % 32, 0);
    EXPECT_EQ(page.image.height % 32, 0);
    EXPECT_LE(int64_t{page.image.width} * page.image.height, kDocumentPageTokens * 1024);
    // Filling the budget: no 32-pixel step more would still fit it.
    EXPECT_GT(int64_t{page.image.width + 32} * (page.image.height + 32),
              kDocumentPageTokens * 1024);
    EXPECT_FALSE(page.text.has_value());
  }
  EXPECT_EQ(document.pages[0].image.width, 992);  // Letter at 1280 tokens: 992 x 1312
  EXPECT_GT(document.pages[2].image.width, document.pages[2].image.height);  // turned
}

TEST(PdfRender, PixelsEqualPdftoppmAtTheSameResolution) {
  const std::string pdf = mixed_document();
  const TempFile file(pdf);
  const Document document = read_pdf(pdf);
  const double boxes[4][2] = {{612, 792}, {595, 842}, {792, 612}, {300, 200}};
  // pdftoppm's -rx applies along the page's unrotated x axis, which runs down page 3 (/Rotate 90).
  for (int i = 0; i < 4; ++i) {
    const RgbImage& page = document.pages[i].image;
    char command[512];
    std::snprintf(command, sizeof command,
                  "pdftoppm -f %d -l %d -rx %.17g -ry %.17g -x 0 -y 0 -W %d -H %d '%s'", i + 1,
                  i + 1, 72.0 * (i == 2 ? page.height / boxes[i][1] : page.width / boxes[i][0]),
                  72.0 * (i == 2 ? page.width / boxes[i][0] : page.height / boxes[i][1]),
                  page.width, page.height, file.path().c_str());
    const RgbImage expected = parse_ppm(run_command(command));
    ASSERT_EQ(expected.width, page.width) << "page " << i + 1 << ": " << command;
    ASSERT_EQ(expected.height, page.height);
    size_t differing = 0;
    for (size_t k = 0; k < page.pixels.size(); ++k)
      differing += page.pixels[k] != expected.pixels[k];
    EXPECT_EQ(differing, 0u) << "page " << i + 1;
  }
  // Not a blank page: the text and the scan are drawn.
  size_t dark = 0;
  for (uint8_t v : document.pages[0].image.pixels) dark += v < 128;
  EXPECT_GT(dark, 1000u);
}

TEST(PdfRender, TextLayerAloneOrWithTheImages) {
  DocumentOptions options;
  options.text = true;
  options.images = false;
  const Document text_only = read_pdf(mixed_document(), options);
  ASSERT_EQ(text_only.pages.size(), 4u);
  EXPECT_TRUE(text_only.pages[0].image.pixels.empty());
  ASSERT_TRUE(text_only.pages[0].text.has_value());
  const std::string& first = *text_only.pages[0].text;
  EXPECT_NE(first.find("Invoice 2026-0042"), std::string::npos) << first;
  // Physical layout keeps the table's columns on one line.
  EXPECT_NE(first.find("Paper"), std::string::npos);
  EXPECT_LT(first.find("Paper"), first.find("4.50"));
  EXPECT_EQ(first.substr(first.find("Paper")).find('\n'),
            first.substr(first.find("Paper")).find("4.50") + 4);
  EXPECT_EQ(text_only.pages[1].text->find_first_not_of(" \n\f"), std::string::npos);  // the scan
  options.images = true;
  const Document both = read_pdf(mixed_document(), options);
  EXPECT_FALSE(both.pages[3].image.pixels.empty());
  EXPECT_NE(both.pages[3].text->find("Parcel label 7"), std::string::npos);
}

TEST(PdfRender, PageSelectionAndItsLimits) {
  DocumentOptions options;
  options.pages = parse_page_ranges("4, 2");
  const Document document = read_pdf(mixed_document(), options);
  ASSERT_EQ(document.pages.size(), 2u);
  EXPECT_EQ(document.pages[0].number, 4);
  EXPECT_EQ(document.pages[1].number, 2);
  options.pages = parse_page_ranges("5-");
  EXPECT_EQ(error_of(mixed_document(), options), "page 5 is past the document's last page (4)");
  options.pages = parse_page_ranges("1-");
  DocumentLimits limits;
  limits.max_pages = 3;
  EXPECT_NE(error_of(mixed_document(), options, limits).find("at most 3 pages"), std::string::npos);
}

TEST(PdfRender, PagesShareTheRequestsTotalBudget) {
  DocumentOptions options;
  options.total_max_tokens = 1280;
  const Document document = read_pdf(mixed_document(), options);
  for (const DocumentPage& page : document.pages) {
    EXPECT_LE(int64_t{page.image.width} * page.image.height, 320 * 1024);
    EXPECT_GT(int64_t{page.image.width} * page.image.height, 200 * 1024);
  }
}

TEST(PdfRender, ExtraRotationTurnsThePage) {
  DocumentOptions options;
  options.pages = parse_page_ranges("1");
  options.rotate = 90;
  const Document turned = read_pdf(mixed_document(), options);
  const ImageSize size = document_page_size(792, 612, 0, kDocumentPageTokens * 1024);
  EXPECT_EQ(turned.pages[0].image.width, size.width);
  EXPECT_EQ(turned.pages[0].image.height, size.height);
  options.rotate = 45;
  EXPECT_EQ(error_of(mixed_document(), options), "rotate must be 0, 90, 180 or 270");
}

TEST(PdfRender, EncryptedDocumentsNeedTheirPassword) {
  const TempFile plain(mixed_document());
  const std::string encrypted_path = plain.path() + ".enc.pdf";
  ASSERT_EQ(std::system(("qpdf --encrypt secret owner-pw 256 -- '" + plain.path() + "' '" +
                         encrypted_path + "'")
                            .c_str()),
            0);
  std::ifstream in(encrypted_path, std::ios::binary);
  const std::string encrypted((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
  std::remove(encrypted_path.c_str());
  EXPECT_EQ(error_of(encrypted),
            "the PDF is encrypted: it needs a password (send it as file.password)");
  DocumentOptions options;
  options.password = "wrong";
  EXPECT_EQ(error_of(encrypted, options),
            "the PDF is encrypted and the password given does not open it");
  options.password = "secret";
  options.pages = parse_page_ranges("1");
  const Document opened = read_pdf(encrypted, options);
  EXPECT_EQ(opened.pages[0].image.pixels,
            read_pdf(mixed_document(), options).pages[0].image.pixels);
}

TEST(PdfRender, DamagedFilesAreClearErrors) {
  EXPECT_EQ(error_of("%PDF-1.7\nnothing else"),
            "the file is not a readable PDF (damaged or not a PDF)");
  EXPECT_EQ(error_of(""), "the file is not a readable PDF (damaged or not a PDF)");
  // Cut in half: poppler rebuilds what it can from the objects; whatever it finds, the answer is
  // pages or a clear error, never a crash.
  const std::string pdf = mixed_document();
  try {
    const Document partial = read_pdf(pdf.substr(0, pdf.size() / 2));
    EXPECT_LE(partial.pages.size(), 4u);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
}

TEST(PdfRender, DocumentTypeBySniffing) {
  EXPECT_EQ(sniff_document_type(mixed_document()), DocumentType::kPdf);
  EXPECT_EQ(sniff_document_type(std::string(100, ' ') + "%PDF-1.4"), DocumentType::kPdf);
  EXPECT_EQ(sniff_document_type(std::string("II*\0rest", 8)), DocumentType::kTiff);
  EXPECT_EQ(sniff_document_type(std::string("MM\0*rest", 8)), DocumentType::kTiff);
  EXPECT_EQ(sniff_document_type("\x89PNG\r\n"), std::nullopt);
}

#else
TEST(PdfRender, ABuildWithoutDocumentsSaysSo) {
  try {
    read_document(mixed_document(), DocumentType::kPdf, {}, {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("built without PDF support"), std::string::npos);
  }
}
#endif  // QVL_HAS_DOCUMENTS

}  // namespace
}  // namespace qvl::media
