#include "base/base64.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace qvl {
namespace {

std::string str(const std::vector<uint8_t>& v) {
  return std::string(v.begin(), v.end());
}

TEST(Base64, DecodesWithAndWithoutPadding) {
  EXPECT_EQ(str(base64_decode("")), "");
  EXPECT_EQ(str(base64_decode("Zg==")), "f");
  EXPECT_EQ(str(base64_decode("Zg")), "f");
  EXPECT_EQ(str(base64_decode("Zm8=")), "fo");
  EXPECT_EQ(str(base64_decode("Zm9v")), "foo");
  EXPECT_EQ(str(base64_decode("Zm9vYmFy")), "foobar");
  EXPECT_EQ(base64_decode("AP8A/w==").size(), 4u);
}

TEST(Base64, RejectsGarbage) {
  EXPECT_THROW(base64_decode("Zm9v!"), Error);
  EXPECT_THROW(base64_decode("Z"), Error);
  EXPECT_THROW(base64_decode("Zm=v"), Error);
  EXPECT_THROW(base64_decode("Zm9v YmFy"), Error);
}

TEST(DataUri, Parses) {
  const DataUri d = parse_data_uri("data:image/png;base64,Zm9v");
  EXPECT_EQ(d.media_type, "image/png");
  EXPECT_EQ(str(d.bytes), "foo");
  EXPECT_THROW(parse_data_uri("data:image/png,Zm9v"), Error);
  EXPECT_THROW(parse_data_uri("http://x"), Error);
  EXPECT_THROW(parse_data_uri("data:image/png;base64"), Error);
}

}  // namespace
}  // namespace qvl
