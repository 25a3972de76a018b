// Test PDFs written by hand (no generator dependency): a builder that numbers objects and writes
// a correct cross-reference table, and the documents the media tests read.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace qvl::media::testing {

class PdfBuilder {
 public:
  // Adds an object body ("<< ... >>" or a stream) and returns its number.
  int add(const std::string& body) {
    objects_.push_back(body);
    return static_cast<int>(objects_.size());
  }
  // Reserves a number for an object written later with set().
  int reserve() { return add(""); }
  void set(int id, const std::string& body) { objects_[id - 1] = body; }

  std::string build(int root, const std::string& trailer_extra = "") const {
    std::string out = "%PDF-1.7\n%\xE2\xE3\xCF\xD3\n";
    std::vector<size_t> offsets;
    for (size_t i = 0; i < objects_.size(); ++i) {
      offsets.push_back(out.size());
      out += std::to_string(i + 1) + " 0 obj\n" + objects_[i] + "\nendobj\n";
    }
    const size_t xref = out.size();
    out += "xref\n0 " + std::to_string(objects_.size() + 1) + "\n0000000000 65535 f \n";
    for (size_t offset : offsets) {
      char line[24];
      std::snprintf(line, sizeof line, "%010zu 00000 n \n", offset);
      out += line;
    }
    out += "trailer\n<< /Size " + std::to_string(objects_.size() + 1) + " /Root " +
           std::to_string(root) + " 0 R " + trailer_extra + ">>\nstartxref\n" +
           std::to_string(xref) + "\n%%EOF\n";
    return out;
  }

 private:
  std::vector<std::string> objects_;
};

inline std::string pdf_stream(const std::string& dict_entries, const std::string& data) {
  return "<< " + dict_entries + " /Length " + std::to_string(data.size()) + " >>\nstream\n" + data +
         "\nendstream";
}

struct FixturePage {
  double width = 612, height = 792;  // points
  int rotate = 0;                    // the page's /Rotate
  std::string content;               // content stream
  std::string resources = "<< /Font << /F1 3 0 R >> >>";
};

// Object 1 is the catalog, 2 the page tree, 3 Helvetica; pages follow.
inline std::string make_pdf(const std::vector<FixturePage>& pages,
                            const std::string& extra_objects_note = "") {
  (void)extra_objects_note;
  PdfBuilder pdf;
  const int catalog = pdf.reserve();
  const int tree = pdf.reserve();
  pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>");
  std::string kids;
  for (const FixturePage& page : pages) {
    const int content = pdf.add(pdf_stream("", page.content));
    char box[96];
    std::snprintf(box, sizeof box, "[0 0 %.3f %.3f]", page.width,
                  page.height);  // no exponents in PDF
    const int id = pdf.add("<< /Type /Page /Parent 2 0 R /MediaBox " + std::string(box) +
                           " /Rotate " + std::to_string(page.rotate) + " /Resources " +
                           page.resources + " /Contents " + std::to_string(content) + " 0 R >>");
    kids += std::to_string(id) + " 0 R ";
  }
  pdf.set(catalog, "<< /Type /Catalog /Pages 2 0 R >>");
  pdf.set(tree,
          "<< /Type /Pages /Kids [" + kids + "] /Count " + std::to_string(pages.size()) + " >>");
  return pdf.build(catalog);
}

inline std::string text_line(double x, double y, double size, const std::string& text) {
  char head[64];
  std::snprintf(head, sizeof head, "BT /F1 %g Tf %g %g Td (", size, x, y);
  return head + text + ") Tj ET\n";
}

// A 3x3 table: ruled cells with text, as invoices have.
inline std::string table_content(double x, double y) {
  std::string c = "0.5 w\n";
  const char* cells[3][3] = {
      {"Item", "Qty", "Price"}, {"Paper", "2", "4.50"}, {"Ink", "1", "19.90"}};
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 3; ++k) {
      char rect[64];
      std::snprintf(rect, sizeof rect, "%g %g 120 24 re S\n", x + 120 * k, y - 24 * r);
      c += rect;
      c += text_line(x + 120 * k + 6, y - 24 * r + 8, 11, cells[r][k]);
    }
  }
  return c;
}

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
