#include "util/heap_policy.h"

#include <cstdlib>  // defines __GLIBC__ on glibc systems

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace dsv4 {

bool keep_freed_memory() {
#if defined(__GLIBC__)
  // M_MMAP_MAX = 0: every block comes from the heap (the threshold itself cannot exceed 32 MB);
  // M_TRIM_THRESHOLD: never hand the top of the heap back to the kernel.
  const bool a = mallopt(M_MMAP_MAX, 0) == 1;
  const bool b = mallopt(M_TRIM_THRESHOLD, 0x7FFFFFFF) == 1;
  return a && b;
#else
  return false;
#endif
}

}  // namespace dsv4
