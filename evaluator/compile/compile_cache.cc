#include "evaluator/compile/compile_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "evaluator/compile/sha256.h"
#include "spdlog/spdlog.h"

namespace kerneleval::compile {
namespace {

namespace fs = std::filesystem;

bool WriteAll(int fd, const std::string& bytes) {
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string CacheKey(const CacheKeyInputs& inputs) {
  Sha256 hash;
  hash.UpdateField(kCompileSettingsVersion);
  hash.UpdateField(inputs.toolkit_version);
  hash.UpdateField(inputs.arch);
  hash.UpdateField(inputs.prelude);
  const size_t option_count = inputs.options ? inputs.options->size() : 0;
  hash.UpdateField(absl::StrCat(option_count));
  if (inputs.options) {
    for (const std::string& option : *inputs.options) hash.UpdateField(option);
  }
  hash.UpdateField(inputs.source);
  // After the source: a key without name expressions is the one it always
  // was (the settings version need not change).
  if (inputs.name_expressions != nullptr && !inputs.name_expressions->empty()) {
    hash.UpdateField(absl::StrCat("name expressions ", inputs.name_expressions->size()));
    for (const std::string& expression : *inputs.name_expressions) hash.UpdateField(expression);
  }
  if (inputs.host_build_probe) hash.UpdateField("host build probe");
  return hash.HexDigest();
}

CompileCache::CompileCache(uint64_t memory_bytes, std::string directory, uint64_t directory_bytes)
    : memory_limit_bytes_(memory_bytes),
      directory_(std::move(directory)),
      directory_limit_bytes_(directory_bytes) {
  if (!directory_.empty()) {
    std::error_code ec;
    fs::create_directories(directory_, ec);
    if (ec) spdlog::warn("compile cache directory {}: {}", directory_, ec.message());
    std::lock_guard lock(directory_mutex_);
    SweepDirectory(directory_limit_bytes_ > 0 ? directory_limit_bytes_
                                              : std::numeric_limits<uint64_t>::max());
  }
}

void CompileCache::SweepDirectory(uint64_t target) {
  struct File {
    fs::path path;
    fs::file_time_type used;
    uint64_t bytes;
  };
  std::vector<File> files;
  uint64_t total = 0;
  const auto stale = fs::file_time_type::clock::now() - std::chrono::hours(1);
  std::error_code ec;
  for (fs::recursive_directory_iterator it(directory_, ec), end; !ec && it != end;
       it.increment(ec)) {
    std::error_code entry_ec;
    if (!it->is_regular_file(entry_ec)) continue;
    const fs::path& path = it->path();
    const fs::file_time_type used = it->last_write_time(entry_ec);
    const uint64_t bytes = it->file_size(entry_ec);
    if (entry_ec) continue;  // removed by another process meanwhile
    if (path.filename().string().find(".pb.tmp.") != std::string::npos) {
      if (used < stale) fs::remove(path, entry_ec);
      continue;
    }
    if (path.extension() != ".pb") continue;  // not ours: never touched
    files.push_back({path, used, bytes});
    total += bytes;
  }
  if (total > target) {
    std::sort(files.begin(), files.end(),
              [](const File& a, const File& b) { return a.used < b.used; });
    for (const File& file : files) {
      if (total <= target) break;
      std::error_code remove_ec;
      if (fs::remove(file.path, remove_ec) || !fs::exists(file.path, remove_ec)) {
        total -= file.bytes;
        ++directory_evictions_;
      }
    }
    spdlog::info("compile cache: directory {} trimmed to {} bytes ({} entries removed so far)",
                 directory_, total, directory_evictions_);
  }
  directory_bytes_ = total;
}

std::string CompileCache::PathFor(const std::string& key) const {
  return absl::StrCat(directory_, "/", key.substr(0, 2), "/", key, ".pb");
}

std::shared_ptr<const v1::CompileResult> CompileCache::Lookup(const std::string& key) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->result;
    }
  }
  if (directory_.empty()) return nullptr;
  const std::string path = PathFor(key);
  std::ifstream file(path, std::ios::binary);
  if (!file) return nullptr;
  std::stringstream bytes;
  bytes << file.rdbuf();
  // A hit is a use: the directory's bound evicts by mtime.
  std::error_code ec;
  fs::last_write_time(path, fs::file_time_type::clock::now(), ec);
  auto result = std::make_shared<v1::CompileResult>();
  if (!result->ParseFromString(bytes.str())) {
    spdlog::warn("compile cache: unreadable entry {}, ignored", PathFor(key));
    return nullptr;
  }
  InsertInMemory(key, result);
  return result;
}

void CompileCache::Insert(const std::string& key, std::shared_ptr<const v1::CompileResult> result) {
  if (!directory_.empty()) {
    const std::string path = PathFor(key);
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    std::random_device random;
    const std::string temporary = absl::StrCat(path, ".tmp.", ::getpid(), ".", random());
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && WriteAll(fd, result->SerializeAsString());
    if (fd >= 0) ok = (::close(fd) == 0) && ok;
    if (ok) ok = ::rename(temporary.c_str(), path.c_str()) == 0;
    if (!ok) {
      ::unlink(temporary.c_str());
      spdlog::warn("compile cache: could not write {}", path);
    } else {
      std::lock_guard lock(directory_mutex_);
      directory_bytes_ += result->ByteSizeLong();
      if (directory_limit_bytes_ > 0 && directory_bytes_ > directory_limit_bytes_) {
        SweepDirectory(directory_limit_bytes_ / 4 * 3);
      }
    }
  }
  InsertInMemory(key, std::move(result));
}

void CompileCache::InsertInMemory(const std::string& key,
                                  std::shared_ptr<const v1::CompileResult> result) {
  const uint64_t bytes = result->ByteSizeLong() + key.size();
  if (bytes > memory_limit_bytes_) return;
  std::lock_guard lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) {
    memory_bytes_ -= it->second->bytes;
    lru_.erase(it->second);
    index_.erase(it);
  }
  lru_.push_front({key, std::move(result), bytes});
  index_[key] = lru_.begin();
  memory_bytes_ += bytes;
  while (memory_bytes_ > memory_limit_bytes_ && !lru_.empty()) {
    memory_bytes_ -= lru_.back().bytes;
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

uint64_t CompileCache::memory_bytes_used() const {
  std::lock_guard lock(mutex_);
  return memory_bytes_;
}

size_t CompileCache::memory_entries() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

uint64_t CompileCache::directory_bytes_used() const {
  std::lock_guard lock(directory_mutex_);
  return directory_bytes_;
}

uint64_t CompileCache::directory_evictions() const {
  std::lock_guard lock(directory_mutex_);
  return directory_evictions_;
}

}  // namespace kerneleval::compile
