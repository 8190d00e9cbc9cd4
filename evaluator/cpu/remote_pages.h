// Pages of another process (a stopped runner), written from outside it:
// work done for a run that no code of the runner runs, so that kernel code,
// which shares the runner's address space, cannot hook into it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "evaluator/cpu/device_runtime.h"

namespace kerneleval::cpu {

// One line of /proc/PID/maps.
struct ProcessMapping {
  uint64_t begin = 0;
  uint64_t end = 0;
  std::string perms;  // "rw-p": read, write, execute, private or shared
  uint64_t offset = 0;
  unsigned major_id = 0;
  unsigned minor_id = 0;
  uint64_t inode = 0;
  std::string path;  // empty for anonymous memory
};
// Every mapping of process `pid`, in address order.
absl::StatusOr<std::vector<ProcessMapping>> ReadProcessMappings(pid_t pid);

// Zeros every page of `ranges` in process `pid` that holds memory, resident
// or swapped out (/proc/PID/pagemap), with process_vm_writev: what a page
// never touched reads. Pages holding none stay so. Returns the pages zeroed.
// Refuses ranges that are not page-aligned, that hold more than `max_bytes`
// in all [bytes], or that are not private anonymous memory of the process
// (/proc/PID/maps): they may come from kernel code, which must not make it
// zero a buffer it shares with the worker. A page it cannot write (made
// read-only or inaccessible since) is an error.
absl::StatusOr<uint64_t> ZeroTouchedPages(pid_t pid, std::span<const AddressRange> ranges,
                                          uint64_t max_bytes);

}  // namespace kerneleval::cpu
