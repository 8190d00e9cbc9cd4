// Pages of another process (a stopped runner), written from outside it:
// work done for a run that no code of the runner runs, so that kernel code,
// which shares the runner's address space, cannot hook into it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "evaluator/cpu/device_runtime.h"

namespace kerneleval::cpu {

// Zeros every page of `ranges` in process `pid` that holds memory, resident
// or swapped out (/proc/PID/pagemap), with process_vm_writev: what a page
// never touched reads. Pages holding none stay so. Returns the pages zeroed.
// Refuses ranges that are not page-aligned or that hold more than
// `max_bytes` in all [bytes] (they may come from kernel code); a page it
// cannot write (unmapped, made read-only or inaccessible since) is an error.
absl::StatusOr<uint64_t> ZeroTouchedPages(pid_t pid, std::span<const AddressRange> ranges,
                                          uint64_t max_bytes);

}  // namespace kerneleval::cpu
