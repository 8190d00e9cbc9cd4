#include "evaluator/compile/compile_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

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
  return hash.HexDigest();
}

CompileCache::CompileCache(uint64_t memory_bytes, std::string directory)
    : memory_limit_bytes_(memory_bytes), directory_(std::move(directory)) {
  if (!directory_.empty()) {
    std::error_code ec;
    fs::create_directories(directory_, ec);
    if (ec) spdlog::warn("compile cache directory {}: {}", directory_, ec.message());
  }
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
  std::ifstream file(PathFor(key), std::ios::binary);
  if (!file) return nullptr;
  std::stringstream bytes;
  bytes << file.rdbuf();
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

}  // namespace kerneleval::compile
