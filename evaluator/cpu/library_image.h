#ifndef KERNELEVAL_EVALUATOR_CPU_LIBRARY_IMAGE_H_
#define KERNELEVAL_EVALUATOR_CPU_LIBRARY_IMAGE_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kerneleval::cpu {

// The writable data of a submission's shared object as loaded in a runner
// (its `__device__` variables, .data and .bss, and what the prelude keeps
// beside them), copied out of the runner by its worker so that every timed
// run can start from the state the program had when it was loaded. A plan
// whose first run builds a `__device__` table and whose later runs only read
// it (sweep 6, x17) had the table's cost in no timed sample; the GPU
// worker restores device globals the same way (CudaWorker::RestoreGlobals).
//
// The copy lives in the worker, not in the runner: kernel code shares the
// runner's address space and could rewrite a copy kept there. Capture and
// Restore use process_vm_readv/writev while the runner is stopped, so the
// restore costs the runner no CPU time (its samples are its CPU time).
class LibraryImage {
 public:
  // A larger image is refused [bytes]: the worker holds it in its own memory.
  static constexpr uint64_t kMaxBytes = uint64_t{256} << 20;

  struct Range {  // [begin, end) relative to the load base
    uint64_t begin = 0;
    uint64_t end = 0;
  };
  struct Layout {
    std::vector<Range> ranges;
    uint64_t device = 0;  // the file's st_dev
    uint64_t inode = 0;   // the file's st_ino
  };

  // What Capture needs from the shared object's file, read before any
  // runner loads it (kernel code could change what its process maps, not
  // the file): the ranges to restore (WritableRanges) and the file's
  // identity. NotFound: the file cannot be read; FailedPrecondition: it is
  // not an ELF64 shared object.
  static absl::StatusOr<Layout> ReadLayout(const std::string& library_path);

  // `layout`'s ranges placed at the base where `pid` mapped the file (the
  // one mapping of its inode at file offset 0 in /proc/PID/maps), then read.
  // `pid` must be stopped or waiting; its static initialisers have run.
  // FailedPrecondition: the library is mapped other than once at offset 0;
  // PermissionDenied / Unimplemented: the host refuses cross-process reads
  // (EPERM, ENOSYS); ResourceExhausted: larger than kMaxBytes; DataLoss: a
  // range could not be read whole.
  static absl::StatusOr<LibraryImage> Capture(pid_t pid, const Layout& layout);

  // Writes every range back into `pid` (stopped). DataLoss: a range could
  // not be written whole (unmapped, or made read-only by the kernel code).
  absl::Status Restore(pid_t pid) const;

  // The address ranges [begin, end) relative to the load base that hold
  // writable data after relocation: PT_LOAD segments with PF_W, less the
  // whole pages [align_down(relro), align_down(relro + size)) that
  // PT_GNU_RELRO protects. `elf`: the file's bytes. Exposed for tests.
  static absl::StatusOr<std::vector<Range>> WritableRanges(const std::string& elf,
                                                           uint64_t page_bytes);

 private:
  struct Copy {
    uint64_t address = 0;  // in the runner
    std::string bytes;
  };
  std::vector<Copy> copies_;
};

}  // namespace kerneleval::cpu

#endif  // KERNELEVAL_EVALUATOR_CPU_LIBRARY_IMAGE_H_
