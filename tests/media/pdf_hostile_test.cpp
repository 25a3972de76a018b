// Hostile PDFs: each ends as pages or a clear error within the limits, never a crash or a hang of
// the caller (the renderer runs in the media worker).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "base/error.h"
#include "media/document.h"
#include "media/hostile_pdfs.h"

#if QVL_HAS_DOCUMENTS
namespace qvl::media {
namespace {

using namespace testing;

struct Outcome {
  bool ok = false;
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  Document document;
};

Outcome read(const std::string& pdf, double seconds = 5) {
  DocumentLimits limits;
  limits.max_seconds = seconds;
  limits.memory_bytes = uint64_t{512} << 20;
  Outcome outcome;
  try {
    outcome.document = read_document(pdf, DocumentType::kPdf, {}, limits);
    outcome.ok = true;
  } catch (const Error& e) {
    outcome.code = e.code();
    outcome.message = e.what();
  }
  return outcome;
}

TEST(PdfHostile, DeepNestingIsParsedOrRefusedNotOverflowed) {
  const Outcome outcome = read(deeply_nested_pdf(100000));
  ASSERT_TRUE(outcome.ok) << outcome.message;
  EXPECT_EQ(outcome.document.pages.size(), 1u);
}

TEST(PdfHostile, HugePageBoxesRenderAtTheBudget) {
  const Outcome huge = read(page_box_pdf(1e9, 1e9));
  ASSERT_TRUE(huge.ok) << huge.message;
  EXPECT_EQ(huge.document.pages[0].image.width, 1120);  // the largest square in 1280 tokens
  EXPECT_EQ(huge.document.pages[0].image.height, 1120);
  const Outcome strip = read(page_box_pdf(1e7, 10));
  EXPECT_EQ(strip.code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(strip.message, "page 1 of the PDF: a degenerate page box (1e+07 x 10)");
  // An empty box is invalid: poppler falls back to its default page (Letter).
  const Outcome empty = read(page_box_pdf(0, 0));
  ASSERT_TRUE(empty.ok) << empty.message;
  EXPECT_EQ(empty.document.pages[0].image.width, 992);
}

TEST(PdfHostile, JavaScriptIsNeverRun) {
  const Outcome outcome = read(javascript_pdf());
  ASSERT_TRUE(outcome.ok) << outcome.message;
  EXPECT_EQ(outcome.document.pages.size(), 1u);
}

TEST(PdfHostile, DecompressionBombsStopAtALimit) {
  for (const std::string& pdf : {decompression_bomb_pdf(4), huge_image_pdf()}) {
    const auto start = std::chrono::steady_clock::now();
    const Outcome outcome = read(pdf, 2);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 30);  // the limit is 2 s; generous for a loaded machine
    EXPECT_FALSE(outcome.ok);
    EXPECT_EQ(outcome.code, ErrorCode::kResourceExhausted);
    EXPECT_EQ(outcome.message, "rendering the PDF took longer than its time limit of 2 s");
  }
}

}  // namespace
}  // namespace qvl::media
#endif  // QVL_HAS_DOCUMENTS
