#include "base/heap_trim.h"

#include <cstdlib>  // defines __GLIBC__ with glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace qvl {

void return_free_heap_to_os() {
#if defined(__GLIBC__)
  malloc_trim(0);  // every arena, including free pages inside the heap (not only its top)
#endif
}

}  // namespace qvl
