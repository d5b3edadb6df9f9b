// Loads a shared library built from a model's object file and reports
// whether the process holds the AMX tile-data permission before and after:
// the object's constructor requests it (code with tile instructions raises
// SIGILL without it).
#include <dlfcn.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static int tilePermission(void) {
  unsigned long features = 0;
  // ARCH_GET_XCOMP_PERM; XFEATURE_XTILEDATA is bit 18.
  if (syscall(SYS_arch_prctl, 0x1022, &features) != 0)
    return -1;
  return (features >> 18) & 1;
}

int main(int argc, char **argv) {
  if (argc != 2)
    return 2;
  printf("before: %d\n", tilePermission());
  if (!dlopen(argv[1], RTLD_NOW)) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  printf("after: %d\n", tilePermission());
  return 0;
}
