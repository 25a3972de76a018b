// The document entry points on arbitrary bytes. The first byte chooses:
//  0: the parent's side: the bytes as a worker's output (frame reader, then the document frames),
//     what a compromised renderer could send;
//  1: the "pdf" job itself, in process (its params fixed: a small page budget, two pages, text);
//  2: the "tiff" job likewise.
// In production the jobs run in the media worker under its limits; here they run in process so
// that the sanitizers see them. Seeds: tests/fuzz/corpus/pdf.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/error.h"
#include "media/document_jobs.h"
#include "media/worker_frames.h"

namespace {

void parent_side(std::string_view bytes) {
  qvl::media::frames::FrameReader reader(1 << 20);
  reader.append(bytes.data(), bytes.size());
  std::vector<qvl::media::WorkerFrame> frames;
  try {
    while (auto frame = reader.next()) frames.push_back(std::move(*frame));
    qvl::media::document_from_frames(frames, qvl::media::DocumentType::kPdf, 64 * 1024);
  } catch (const qvl::Error&) {
  }
}

void job(bool pdf, std::string_view bytes) {
  static const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  qvl::media::DocumentJobRequest request;
  request.pages = qvl::media::parse_page_ranges("1-2");
  request.max_pages = 2;
  request.max_pixels = 16 * 1024;
  request.text = true;
  request.max_page_source_pixels = 4'000'000;
  qvl::media::WorkerOutput out(null_fd);
  try {
    if (pdf) {
      qvl::media::run_pdf_job(qvl::media::encode_job_request(request), bytes, out);
    } else {
      qvl::media::run_tiff_job(qvl::media::encode_job_request(request), bytes, out);
    }
  } catch (const qvl::Error&) {
  }
}

}  // namespace

// fontconfig (poppler's font lookup) keeps its configuration for the life of the process: not a
// leak of ours, and LeakSanitizer would report it at exit.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libfontconfig.so\n";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      parent_side(bytes);
      break;
    case 1:
      job(true, bytes);
      break;
    default:
      job(false, bytes);
      break;
  }
  return 0;
}
