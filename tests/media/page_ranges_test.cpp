// Page selections ("1-3,5,8-") and the BMP bytes rendered pages reach the engine as.
#include "media/page_ranges.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "image/decode.h"
#include "media/bmp_encode.h"

namespace qvl::media {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_page_ranges(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  return "no error";
}

TEST(PageRanges, ParsesItemsAndReadsBackItsText) {
  EXPECT_TRUE(parse_page_ranges("").empty());
  EXPECT_TRUE(parse_page_ranges(" all ").empty());
  const auto ranges = parse_page_ranges("1-3, 5 ,8-, 2");
  ASSERT_EQ(ranges.size(), 4u);
  EXPECT_EQ(ranges[0].first, 1);
  EXPECT_EQ(ranges[0].last, 3);
  EXPECT_EQ(ranges[1].first, 5);
  EXPECT_EQ(ranges[1].last, 5);
  EXPECT_EQ(ranges[2].first, 8);
  EXPECT_EQ(ranges[2].last, 0);
  EXPECT_EQ(page_ranges_text(ranges), "1-3,5,8-,2");
  EXPECT_EQ(page_ranges_text(parse_page_ranges(page_ranges_text(ranges))), "1-3,5,8-,2");
}

TEST(PageRanges, BadItemsAreNamed) {
  EXPECT_EQ(error_of("0"), "bad page range '0': use page numbers from 1, e.g. \"1-3,5,8-\"");
  EXPECT_EQ(error_of("1,,2"), "bad page range '': use page numbers from 1, e.g. \"1-3,5,8-\"");
  EXPECT_EQ(error_of("a-b"), "bad page range 'a-b': use page numbers from 1, e.g. \"1-3,5,8-\"");
  EXPECT_EQ(error_of("-3"), "bad page range '-3': use page numbers from 1, e.g. \"1-3,5,8-\"");
  EXPECT_EQ(error_of("99999999999"),
            "bad page range '99999999999': use page numbers from 1, e.g. \"1-3,5,8-\"");
  EXPECT_EQ(error_of("5-2"), "bad page range '5-2': it ends before it starts");
  EXPECT_EQ(error_of(std::string(2000, '1')), "page range is longer than 1024 bytes");
}

TEST(PageRanges, SelectionAgainstThePageCount) {
  EXPECT_EQ(select_pages({}, 3, 10), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(select_pages(parse_page_ranges("3,1-2,2-"), 3, 10), (std::vector<int>{3, 1, 2, 2, 3}));
  EXPECT_EQ(select_pages(parse_page_ranges("2-9"), 3, 10), (std::vector<int>{2, 3}));  // clipped
  try {
    select_pages(parse_page_ranges("1-1000000000"), 2000000000, 64);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
    EXPECT_EQ(std::string(e.what()),
              "1000000000 pages selected; this server reads at most 64 pages of a document per "
              "request (choose pages)");
  }
}

TEST(BmpEncode, TheImageDecoderReadsItBackExactly) {
  for (const int width : {1, 2, 3, 5, 64}) {
    RgbImage image{width, 7, {}};
    for (int i = 0; i < width * 7 * 3; ++i) image.pixels.push_back(static_cast<uint8_t>(i * 37));
    const std::vector<uint8_t> bmp = encode_bmp(image);
    const RgbImage decoded = decode_image(bmp.data(), bmp.size());
    EXPECT_EQ(decoded.width, width);
    EXPECT_EQ(decoded.height, 7);
    EXPECT_TRUE(decoded.pixels == image.pixels) << "width " << width;
  }
  EXPECT_THROW(encode_bmp(RgbImage{}), Error);
}

}  // namespace
}  // namespace qvl::media
