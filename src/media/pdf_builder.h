// PDFs written by hand, without a generator dependency: a builder that numbers objects and
// writes a correct cross-reference table, pages of Helvetica text and ruled tables. `qvl bench`
// makes its document this way; the media tests (tests/media/pdf_fixtures.h) make theirs.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace qvl::media {

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

inline std::string text_line(double x, double y, double size, const std::string& text) {
  char head[64];
  std::snprintf(head, sizeof head, "BT /F1 %g Tf %g %g Td (", size, x, y);
  return head + text + ") Tj ET\n";
}

struct PdfPage {
  double width = 612, height = 792;  // points
  int rotate = 0;                    // the page's /Rotate
  std::string content;               // content stream
  std::string resources = "<< /Font << /F1 3 0 R >> >>";
};

// Object 1 is the catalog, 2 the page tree, 3 Helvetica; pages follow.
inline std::string make_pdf(const std::vector<PdfPage>& pages) {
  PdfBuilder pdf;
  const int catalog = pdf.reserve();
  const int tree = pdf.reserve();
  pdf.add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>");
  std::string kids;
  for (const PdfPage& page : pages) {
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

}  // namespace qvl::media
