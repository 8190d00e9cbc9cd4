// Content-addressed cache of compile results: an in-memory LRU bounded in
// bytes, plus an optional directory shared across restarts (and processes).
// Thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kerneleval/v1/kerneleval.pb.h"

namespace kerneleval::compile {

// Bump when anything that changes compile output changes on kerneleval's side
// (NVRTC arguments, prelude handling, the standard-header shims in include/,
// result post-processing).
inline constexpr std::string_view kCompileSettingsVersion =
    "kerneleval-compile-9";  // 9: C++20 unless the submission names a --std

struct CacheKeyInputs {
  std::string_view source;
  const std::vector<std::string>* options = nullptr;  // canonical and sorted (CheckUserOptions)
  std::string_view arch;
  std::string_view toolkit_version;  // NVRTC's, e.g. "13.0"
  std::string_view prelude;          // the pre-included header's content
  // Canonical (CheckNameExpressions); nullptr: none.
  const std::vector<std::string>* name_expressions = nullptr;
  bool host_build_probe = false;  // the result carries CompileResult.host_build_probe
};
// SHA-256 (hex) of every input, each length-prefixed, and the settings
// version.
std::string CacheKey(const CacheKeyInputs& inputs);

class CompileCache {
 public:
  // memory_bytes: bound on the in-memory entries' serialized sizes (0: no
  // memory cache). directory: empty for none; created if missing.
  // directory_bytes: bound on the directory's entries (0: unbounded); when an
  // insert takes it past the bound, the least recently used entries (by
  // mtime, which a disk hit refreshes) are removed down to 3/4 of it. Other
  // processes sharing the directory are counted at each such sweep.
  CompileCache(uint64_t memory_bytes, std::string directory, uint64_t directory_bytes = 0);

  // The memory LRU first, then the directory (a disk hit is promoted to
  // memory). nullptr on a miss. The result is shared and immutable.
  std::shared_ptr<const v1::CompileResult> Lookup(const std::string& key);
  // Memory, and the directory through a temporary file renamed into place
  // (readers never see a partial file; concurrent writers of one key are
  // harmless, both write the same bytes).
  void Insert(const std::string& key, std::shared_ptr<const v1::CompileResult> result);

  [[nodiscard]] uint64_t memory_bytes_used() const;
  [[nodiscard]] size_t memory_entries() const;
  // What this process believes the directory holds [bytes] (exact after a
  // sweep and at start-up).
  [[nodiscard]] uint64_t directory_bytes_used() const;
  // Entries removed from the directory by the bound so far.
  [[nodiscard]] uint64_t directory_evictions() const;

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const v1::CompileResult> result;
    uint64_t bytes = 0;
  };
  void InsertInMemory(const std::string& key, std::shared_ptr<const v1::CompileResult> result);
  [[nodiscard]] std::string PathFor(const std::string& key) const;
  // Sums the directory's entries (and removes temporaries older than an
  // hour: writers that died); evicts down to `target` bytes when above it.
  // Caller holds directory_mutex_.
  void SweepDirectory(uint64_t target);

  const uint64_t memory_limit_bytes_;
  const std::string directory_;
  const uint64_t directory_limit_bytes_;
  mutable std::mutex directory_mutex_;  // the two counters below, and sweeps
  uint64_t directory_bytes_ = 0;
  uint64_t directory_evictions_ = 0;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // front: most recently used
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  uint64_t memory_bytes_ = 0;
};

}  // namespace kerneleval::compile
