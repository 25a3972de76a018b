// The document jobs of a qvl built with -DQVL_DOCUMENTS=OFF (no poppler or libtiff): a clear
// error instead of the renderers in pdf_render.cpp and tiff_render.cpp.
#include "base/error.h"
#include "media/document_jobs.h"

#if !QVL_HAS_DOCUMENTS
namespace qvl::media {

void run_pdf_job(std::string_view, std::string_view, WorkerOutput&) {
  fail(ErrorCode::kUnsupported, "this qvl was built without PDF support (-DQVL_DOCUMENTS=OFF)");
}

void run_tiff_job(std::string_view, std::string_view, WorkerOutput&) {
  fail(ErrorCode::kUnsupported, "this qvl was built without TIFF support (-DQVL_DOCUMENTS=OFF)");
}

}  // namespace qvl::media
#endif
