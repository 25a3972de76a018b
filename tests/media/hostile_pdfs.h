// Hostile PDFs for the media tests and the fuzz target's seeds: deep nesting, huge and degenerate
// page boxes, JavaScript, and a decompression bomb built from chained RunLengthDecode filters.
#pragma once

#include <string>

#include "media/pdf_fixtures.h"

namespace qvl::media::testing {

// A page whose resources hold `depth` nested arrays.
inline std::string deeply_nested_pdf(int depth) {
  FixturePage page;
  page.content = text_line(72, 700, 12, "nested");
  page.resources =
      "<< /Font << /F1 3 0 R >> /Junk " + std::string(depth, '[') + std::string(depth, ']') + " >>";
  return make_pdf({page});
}

inline std::string page_box_pdf(double width, double height) {
  FixturePage page;
  page.width = width;
  page.height = height;
  page.content = text_line(10, 10, 12, "box");
  return make_pdf({page});
}

// Opens with a JavaScript action (qvl never runs it: poppler's renderer has no JS engine).
inline std::string javascript_pdf() {
  PdfBuilder pdf;
  const int catalog = pdf.reserve();
  pdf.add("<< /Type /Pages /Kids [4 0 R] /Count 1 >>");
  pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
  pdf.add(
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Resources << /Font << /F1 3 0 R "
      ">> >> /Contents 5 0 R /AA << /O 6 0 R >> >>");
  pdf.add(pdf_stream("", text_line(20, 100, 12, "scripted")));
  pdf.add("<< /S /JavaScript /JS (while (true) { app.alert('x'); }) >>");
  pdf.set(catalog, "<< /Type /Catalog /Pages 2 0 R /OpenAction 6 0 R >>");
  return pdf.build(catalog);
}

// A content stream of `stages` chained RunLengthDecode filters: each stage turns a run of 0x81
// bytes into 64 times as many (0x81 = "repeat the next byte 128 times"), so 4 KiB of input
// expands to 4 KiB x 64^stages of junk for the content parser.
inline std::string decompression_bomb_pdf(int stages) {
  std::string filters;
  for (int i = 0; i < stages; ++i) filters += "/RunLengthDecode ";
  const std::string data(4096, '\x81');
  FixturePage page;
  PdfBuilder pdf;
  const int catalog = pdf.reserve();
  pdf.add("<< /Type /Pages /Kids [4 0 R] /Count 1 >>");
  pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
  pdf.add("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 5 0 R >>");
  pdf.add(pdf_stream("/Filter [" + filters + "]", data));
  pdf.set(catalog, "<< /Type /Catalog /Pages 2 0 R >>");
  return pdf.build(catalog);
}

// An image XObject that claims 60000 x 60000 pixels (10 GB), its data a RunLengthDecode bomb.
inline std::string huge_image_pdf() {
  PdfBuilder pdf;
  const int catalog = pdf.reserve();
  pdf.add("<< /Type /Pages /Kids [4 0 R] /Count 1 >>");
  pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
  pdf.add(
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im1 6 "
      "0 R >> >> /Contents 5 0 R >>");
  pdf.add(pdf_stream("", "q 612 0 0 792 0 0 cm /Im1 Do Q"));
  pdf.add(
      pdf_stream("/Type /XObject /Subtype /Image /Width 60000 /Height 60000 /ColorSpace "
                 "/DeviceRGB /BitsPerComponent 8 /Filter [/RunLengthDecode /RunLengthDecode "
                 "/RunLengthDecode]",
                 std::string(4096, '\x81')));
  pdf.set(catalog, "<< /Type /Catalog /Pages 2 0 R >>");
  return pdf.build(catalog);
}

}  // namespace qvl::media::testing
