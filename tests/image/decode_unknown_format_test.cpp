// Files we do not decode are refused with the name of what they are, never a wrong name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "image/decode.h"

namespace qvl {
namespace {

std::string refusal_of(const std::string& bytes) {
  try {
    decode_image(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), DecodeLimits{});
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "decode unexpectedly succeeded";
  return {};
}

struct NamedFile {
  std::string name;   // what the error must say
  std::string bytes;  // the start of such a file
};

std::string iso_media(const std::string& brand) {
  return std::string("\0\0\0\x18", 4) + "ftyp" + brand + std::string("\0\0\0\0", 4) + "mif1";
}

TEST(DecodeUnknownFormat, EachFormatIsNamedForWhatItIs) {
  const std::vector<NamedFile> files = {
      {"SVG", "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"></svg>"},
      {"SVG", "\xef\xbb\xbf<?xml version=\"1.0\"?>\n<!-- drawn by hand -->\n<svg></svg>"},
      {"SVG", "  \n<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\">\n<svg/>"},
      {"PDF", "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj"},
      {"HEIC", iso_media("heic")},
      {"AVIF", iso_media("avif")},
      {"TIFF", std::string("II*\0\x08\0\0\0", 8)},
      {"TIFF", std::string("MM\0*\0\0\0\x08", 8)},
      {"JPEG XL", std::string("\xff\x0a\xfa\x7f", 4)},
      {"JPEG XL", std::string("\0\0\0\x0cJXL \r\n\x87\n\0\0", 14)},
      {"HTML", "<!DOCTYPE html><html><body>not an image</body></html>"},
  };
  for (const NamedFile& f : files) {
    const std::string message = refusal_of(f.bytes);
    EXPECT_NE(message.find(f.name), std::string::npos) << f.name << ": " << message;
    EXPECT_NE(message.find("supported: JPEG, PNG, WebP, GIF, BMP"), std::string::npos) << message;
    if (f.name != "JPEG XL") {
      EXPECT_EQ(message.find("JPEG XL"), std::string::npos) << message;
    }
  }
}

TEST(DecodeUnknownFormat, UnrecognisedBytesAreShownNotGivenAFormatName) {
  // Before the fix a magic with a leading NUL matched everything and all of these were "JPEG XL".
  for (const std::string& bytes :
       {std::string("hello world"), std::string("MMMM", 4), std::string("\0\0\0\0\0\0\0\0", 8)}) {
    const std::string message = refusal_of(bytes);
    EXPECT_NE(message.find("unrecognised data starting with bytes ["), std::string::npos)
        << message;
    EXPECT_EQ(message.find("JPEG XL"), std::string::npos) << message;
    EXPECT_EQ(message.find("TIFF"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace qvl
