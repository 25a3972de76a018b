// Multi-page TIFF scans through the media worker: each directory is a page, equal to the same
// pixels sent through the image path's smart resize and resampler.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/error.h"
#include "image/exif_orientation.h"
#include "image/resize.h"
#include "image/smart_resize.h"
#include "media/document.h"

#if QVL_HAS_DOCUMENTS
#include <tiffio.h>

namespace qvl::media {
namespace {

struct Scan {
  int width, height, channels;  // 1 grey, 3 RGB, 4 RGBA (unassociated alpha)
  std::vector<uint8_t> samples;
};

Scan make_scan(int width, int height, int channels) {
  Scan scan{width, height, channels, {}};
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        scan.samples.push_back(c == 3 ? static_cast<uint8_t>(x < width / 2 ? 255 : 0)
                                      : static_cast<uint8_t>((x * 7 + y * 3 + c * 50) % 256));
      }
    }
  }
  return scan;
}

// The pixels as the image path sees them: grey spread to RGB, alpha over white.
RgbImage expected_rgb(const Scan& scan) {
  RgbImage image{scan.width, scan.height, {}};
  for (size_t i = 0; i < size_t{1} * scan.width * scan.height; ++i) {
    const uint8_t* s = scan.samples.data() + i * scan.channels;
    for (int c = 0; c < 3; ++c) {
      uint8_t v = scan.channels == 1 ? s[0] : s[c];
      if (scan.channels == 4 && s[3] == 0) v = 255;
      image.pixels.push_back(v);
    }
  }
  return image;
}

std::string write_tiff(const std::vector<Scan>& scans) {
  const std::string path = ::testing::TempDir() + "qvl_tiff_" + std::to_string(::getpid()) + ".tif";
  TIFF* tiff = TIFFOpen(path.c_str(), "w");
  for (const Scan& scan : scans) {
    TIFFSetField(tiff, TIFFTAG_IMAGEWIDTH, scan.width);
    TIFFSetField(tiff, TIFFTAG_IMAGELENGTH, scan.height);
    TIFFSetField(tiff, TIFFTAG_SAMPLESPERPIXEL, scan.channels);
    TIFFSetField(tiff, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(tiff, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(tiff, TIFFTAG_PHOTOMETRIC,
                 scan.channels == 1 ? PHOTOMETRIC_MINISBLACK : PHOTOMETRIC_RGB);
    TIFFSetField(tiff, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
    TIFFSetField(tiff, TIFFTAG_ROWSPERSTRIP, 16);
    if (scan.channels == 4) {
      const uint16_t extra = EXTRASAMPLE_UNASSALPHA;
      TIFFSetField(tiff, TIFFTAG_EXTRASAMPLES, 1, &extra);
    }
    for (int y = 0; y < scan.height; ++y) {
      TIFFWriteScanline(
          tiff,
          const_cast<uint8_t*>(scan.samples.data()) + size_t{1} * y * scan.width * scan.channels, y,
          0);
    }
    TIFFWriteDirectory(tiff);
  }
  TIFFClose(tiff);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  return bytes;
}

TEST(TiffRender, EachDirectoryIsAPageSizedLikeAnImage) {
  const std::vector<Scan> scans = {make_scan(1700, 2200, 3), make_scan(300, 200, 1),
                                   make_scan(64, 96, 4)};
  const std::string tiff = write_tiff(scans);
  EXPECT_EQ(sniff_document_type(tiff), DocumentType::kTiff);
  DocumentOptions options;
  options.page_min_tokens = 16;
  const Document document = read_document(tiff, DocumentType::kTiff, options, {});
  EXPECT_EQ(document.page_count, 3);
  ASSERT_EQ(document.pages.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const RgbImage source = expected_rgb(scans[i]);
    const ImageSize size =
        smart_resize(source.height, source.width, 32, 16 * 1024, kDocumentPageTokens * 1024);
    const RgbImage expected = resize_bicubic(source, size.width, size.height);
    const RgbImage& page = document.pages[i].image;
    EXPECT_EQ(document.pages[i].number, i + 1);
    ASSERT_EQ(page.width, expected.width) << "page " << i + 1;
    ASSERT_EQ(page.height, expected.height);
    EXPECT_TRUE(page.pixels == expected.pixels) << "page " << i + 1;
    EXPECT_FALSE(document.pages[i].text.has_value());
  }
  // The scan is shrunk to the budget; the small pages are not blown up past it.
  EXPECT_LE(int64_t{document.pages[0].image.width} * document.pages[0].image.height,
            kDocumentPageTokens * 1024);
  EXPECT_EQ(document.pages[1].image.width, 288);
}

TEST(TiffRender, SelectionAndTheStoredSizeLimit) {
  const std::string tiff = write_tiff({make_scan(400, 300, 3), make_scan(500, 500, 3)});
  DocumentOptions options;
  options.pages = parse_page_ranges("2");
  const Document second = read_document(tiff, DocumentType::kTiff, options, {});
  ASSERT_EQ(second.pages.size(), 1u);
  EXPECT_EQ(second.pages[0].number, 2);
  DocumentLimits limits;
  limits.max_page_source_pixels = 200'000;
  try {
    read_document(tiff, DocumentType::kTiff, options, limits);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
    EXPECT_EQ(std::string(e.what()),
              "page 2 of the TIFF: 500 x 500 pixels is more than the limit of 200000");
  }
}

TEST(TiffRender, ExtraRotationTurnsThePage) {
  const Scan scan = make_scan(300, 200, 3);
  DocumentOptions options;
  options.rotate = 90;
  const Document turned = read_document(write_tiff({scan}), DocumentType::kTiff, options, {});
  const RgbImage upright = apply_exif_orientation(expected_rgb(scan), 6);  // 90 clockwise
  const ImageSize size =
      smart_resize(upright.height, upright.width, 32, 0, kDocumentPageTokens * 1024);
  EXPECT_EQ(turned.pages[0].image.width, size.width);
  EXPECT_EQ(turned.pages[0].image.height, size.height);
  EXPECT_TRUE(turned.pages[0].image.pixels ==
              resize_bicubic(upright, size.width, size.height).pixels);
}

TEST(TiffRender, ATextLayerIsRefused) {
  DocumentOptions options;
  options.text = true;
  try {
    read_document(write_tiff({make_scan(30, 20, 3)}), DocumentType::kTiff, options, {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "a TIFF scan has no text layer (text is for PDFs)");
  }
}

TEST(TiffRender, DamagedTiffIsAClearError) {
  const std::string tiff = write_tiff({make_scan(400, 300, 3)});
  for (const std::string& bytes :
       {std::string("II*\0\x08\0\0\0", 8), tiff.substr(0, tiff.size() / 3)}) {
    try {
      read_document(bytes, DocumentType::kTiff, {}, {});
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    }
  }
}

}  // namespace
}  // namespace qvl::media
#endif  // QVL_HAS_DOCUMENTS
