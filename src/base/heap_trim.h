// Gives the allocator's free memory back to the operating system. Large per-image and per-prompt
// buffers are freed into the heap, which keeps their pages (and, fragmented, keeps growing over
// many requests): the engine calls this when a piece of work that freed much memory ends.
#pragma once

namespace qvl {

void return_free_heap_to_os();

// Makes the allocator hand buffers of 1 MiB and more out as their own mappings (returned to the
// system when freed) and trim a heap's free top above 4 MiB at once. glibc's default raises both
// thresholds after the first large free (up to 32 and 64 MiB): a worker thread's heap then kept
// tens of MB of freed image and prompt buffers resident that malloc_trim does not return (it
// trims only the main heap's top). Process-wide; the engine calls it once when it starts.
// False if the allocator is not glibc's (a sanitizer's): nothing changes then.
bool return_large_buffers_when_freed();

}  // namespace qvl
