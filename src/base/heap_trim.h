// Gives the allocator's free memory back to the operating system. Large per-image and per-prompt
// buffers are freed into the heap, which keeps their pages (and, fragmented, keeps growing over
// many requests): the engine calls this when a piece of work that freed much memory ends.
#pragma once

namespace qvl {

void return_free_heap_to_os();

}  // namespace qvl
