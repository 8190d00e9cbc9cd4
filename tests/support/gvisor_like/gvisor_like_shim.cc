// kerneleval_gvisor_like_shim CMD [ARGS...]: runs CMD under the filter of
// gvisor_like_seccomp.h, so that a binary, a test or scripts/gpu-check.sh can
// be tried here as gVisor would answer it (no Landlock, no seccomp action
// probes, no execution of O_PATH descriptors). A rehearsal tool, not a
// sandbox.
#include <stdio.h>
#include <unistd.h>

#include "tests/support/gvisor_like/gvisor_like_seccomp.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CMD [ARGS...]\n", argv[0]);
    return 2;
  }
  if (!kerneleval::testing::LoadGvisorLikeFilter()) {
    perror("seccomp");
    return 1;
  }
  execvp(argv[1], argv + 1);
  perror("execvp");
  return 127;
}
