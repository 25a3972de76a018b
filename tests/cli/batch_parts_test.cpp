// The pure pieces of `qvl batch`: preset prompts per medium and --per-document's gathering of
// page lines into one line per document.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/batch_documents.h"
#include "cli/batch_inputs.h"

namespace qvl::cli {
namespace {

using nlohmann::json;

TEST(PresetPrompt, OcrNamesTheMediumEverywhereAndAsksDocumentsForMarkdown) {
  const std::string image = preset_prompt("ocr", "image");  // the replacement reads "the image"
  EXPECT_NE(image.find("Read all the text in the image"), std::string::npos);
  EXPECT_EQ(image.find("Markdown"), std::string::npos);
  const std::string video = preset_prompt("ocr", "video");
  EXPECT_EQ(video.find("the image"), std::string::npos);
  EXPECT_NE(video.find("not in the video."), std::string::npos);
  const std::string page = preset_prompt("ocr", "document page");
  EXPECT_NE(page.find("in the document page and"), std::string::npos);
  EXPECT_NE(page.find("Markdown tables"), std::string::npos);
  EXPECT_EQ(preset_prompt("describe", "video"), "Describe this video in detail.");
  EXPECT_THROW(preset_prompt("summarise"), std::exception);
}

BatchItem page_item(const std::string& file, int page) {
  BatchItem item;
  item.file = file;
  item.page = page;
  item.id = file + "#page=" + std::to_string(page);
  return item;
}

json answered(const std::string& answer, int prompt, int completion) {
  return {{"id", "x"},
          {"answer", answer},
          {"finish_reason", "stop"},
          {"usage",
           {{"prompt_tokens", prompt},
            {"completion_tokens", completion},
            {"total_tokens", prompt + completion}}}};
}

TEST(DocumentLines, WritesADocumentOnceItsLastPageFinishesWithPagesInOrderAndSummedUsage) {
  const BatchItem p1 = page_item("a.pdf", 1), p2 = page_item("a.pdf", 2),
                  p3 = page_item("a.pdf", 3);
  BatchItem image;
  image.id = image.file = "cat.png";
  DocumentLines lines({&p1, &p2, &p3, &image});
  EXPECT_EQ(per_document_id(p2), "a.pdf");
  EXPECT_EQ(per_document_id(image), "cat.png");
  EXPECT_FALSE(lines.add(p3, answered("three", 10, 3)));
  const auto own = lines.add(image, answered("a cat", 5, 2));
  ASSERT_TRUE(own);
  EXPECT_EQ((*own)["answer"], "a cat");
  EXPECT_FALSE(lines.add(p1, answered("one", 11, 1)));
  json failed = {{"id", "x"}, {"error", {{"message", "page too large"}}}};
  const auto doc = lines.add(p2, failed);
  ASSERT_TRUE(doc);
  EXPECT_EQ((*doc)["id"], "a.pdf");
  ASSERT_EQ((*doc)["pages"].size(), 3u);
  EXPECT_EQ((*doc)["pages"][0]["page"], 1);
  EXPECT_EQ((*doc)["pages"][0]["answer"], "one");
  EXPECT_EQ((*doc)["pages"][1]["error"]["message"], "page too large");
  EXPECT_EQ((*doc)["pages"][2]["answer"], "three");
  EXPECT_EQ((*doc)["usage"]["prompt_tokens"], 21);
  EXPECT_EQ((*doc)["usage"]["completion_tokens"], 4);
  EXPECT_EQ((*doc)["usage"]["total_tokens"], 25);
  EXPECT_EQ((*doc)["error"]["message"], "1 of 3 pages failed; their entries in pages say why");
}

}  // namespace
}  // namespace qvl::cli
