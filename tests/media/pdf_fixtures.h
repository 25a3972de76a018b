// Test PDFs written by hand (no generator dependency, media/pdf_builder.h): the documents the
// media tests read.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "media/pdf_builder.h"

namespace qvl::media::testing {

using FixturePage = PdfPage;

// The mixed document of the rendering tests: text with a table (Letter), a scanned page (an RGB
// image filling A4), a page turned by /Rotate 90, and a small landscape label.
inline std::string mixed_document() {
  FixturePage text;
  text.content = text_line(72, 700, 24, "Invoice 2026-0042") +
                 text_line(72, 660, 12, "Bill to: Example Ltd, 1 Main Street") +
                 table_content(72, 600);
  FixturePage scan;
  scan.width = 595;
  scan.height = 842;
  std::string pixels;
  for (int y = 0; y < 80; ++y) {
    for (int x = 0; x < 64; ++x) {
      pixels.push_back(static_cast<char>(x * 4));
      pixels.push_back(static_cast<char>(y * 3));
      pixels.push_back(static_cast<char>(((x / 8 + y / 8) % 2) * 200));
    }
  }
  // The image is inline (BI ... ID ... EI) so that the page needs no XObject resource.
  scan.content = "q 595 0 0 842 0 0 cm BI /W 64 /H 80 /CS /RGB /BPC 8 ID\n" + pixels + "\nEI Q\n";
  FixturePage rotated;
  rotated.rotate = 90;
  rotated.content = text_line(72, 700, 18, "This page is turned by /Rotate 90");
  FixturePage label;
  label.width = 300;
  label.height = 200;
  label.content = text_line(20, 100, 14, "Parcel label 7");
  return make_pdf({text, scan, rotated, label});
}

}  // namespace qvl::media::testing
