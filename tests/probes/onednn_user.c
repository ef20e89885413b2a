// A program that maps oneDNN as PyTorch does (Debian's libdnnl.so.2), for the library report's
// live test: the preload asks it its version and runtime, and at exit its instruction set.
// Exits 0 when it was there, 3 when libdnnl2 is not installed.
#include <dlfcn.h>
#include <stdio.h>

int main(void) {
  void* onednn = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (onednn == NULL) {
    fprintf(stderr, "onednn_user: %s\n", dlerror());
    return 3;
  }
  return 0;
}
