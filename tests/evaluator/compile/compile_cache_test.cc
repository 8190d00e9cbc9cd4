// The compile cache: keys change with every input, the memory LRU stays
// within its byte bound, the directory keeps entries across instances,
// ignores unreadable ones and stays within its own bound.
#include "evaluator/compile/compile_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "tests/support/scoped_temp_dir.h"

namespace kerneleval::compile {
namespace {

namespace fs = std::filesystem;

std::shared_ptr<const v1::CompileResult> Result(size_t log_bytes, char fill = 'x') {
  auto result = std::make_shared<v1::CompileResult>();
  result->set_success(true);
  result->set_log(std::string(log_bytes, fill));
  return result;
}

TEST(CacheKeyTest, EveryInputCounts) {
  const std::vector<std::string> none, fast = {"--use_fast_math"};
  const CacheKeyInputs base{.source = "src",
                            .options = &none,
                            .arch = "sm_90",
                            .toolkit_version = "13.0",
                            .prelude = "p"};
  const std::string key = CacheKey(base);
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key, CacheKey(base));
  CacheKeyInputs other = base;
  other.source = "src ";
  EXPECT_NE(CacheKey(other), key);
  other = base;
  other.options = &fast;
  EXPECT_NE(CacheKey(other), key);
  other = base;
  other.arch = "sm_80";
  EXPECT_NE(CacheKey(other), key);
  other = base;
  other.toolkit_version = "13.1";
  EXPECT_NE(CacheKey(other), key);
  other = base;
  other.prelude = "q";
  EXPECT_NE(CacheKey(other), key);
}

TEST(CompileCacheTest, MemoryLruStaysWithinItsBound) {
  CompileCache cache(/*memory_bytes=*/3000, /*directory=*/"");
  cache.Insert("a", Result(900));
  cache.Insert("b", Result(900));
  cache.Insert("c", Result(900));
  ASSERT_NE(cache.Lookup("a"), nullptr);  // a is now the most recent
  cache.Insert("d", Result(900));         // evicts b, the least recent
  EXPECT_NE(cache.Lookup("a"), nullptr);
  EXPECT_EQ(cache.Lookup("b"), nullptr);
  EXPECT_NE(cache.Lookup("c"), nullptr);
  EXPECT_NE(cache.Lookup("d"), nullptr);
  EXPECT_LE(cache.memory_bytes_used(), 3000u);
  EXPECT_EQ(cache.memory_entries(), 3u);
  cache.Insert("huge", Result(5000));  // larger than the bound: not kept
  EXPECT_EQ(cache.Lookup("huge"), nullptr);
  EXPECT_EQ(cache.memory_entries(), 3u);
}

TEST(CompileCacheTest, DirectorySurvivesAndIgnoresGarbage) {
  const test_support::ScopedTempDir temp_dir("kerneleval-cache-test");
  ASSERT_TRUE(temp_dir.ok());
  const std::string& dir = temp_dir.path();
  const std::string key(64, 'a');
  {
    CompileCache cache(1 << 20, dir);
    cache.Insert(key, Result(10, 'k'));
  }
  // Only the final file: no temporaries left behind.
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) files += entry.is_regular_file();
  EXPECT_EQ(files, 1u);
  {
    CompileCache memory_off(0, dir);  // no memory cache: straight from disk
    std::shared_ptr<const v1::CompileResult> hit = memory_off.Lookup(key);
    ASSERT_NE(hit, nullptr);
    EXPECT_EQ(hit->log(), std::string(10, 'k'));
  }
  const std::string bad_key(64, 'b');
  fs::create_directories(dir + "/bb");
  std::ofstream(dir + "/bb/" + bad_key + ".pb") << "\xff\xff\xff not a protobuf";
  CompileCache cache(1 << 20, dir);
  EXPECT_EQ(cache.Lookup(bad_key), nullptr);
}

TEST(CompileCacheTest, DirectoryStaysWithinItsBoundEvictingTheLeastRecentlyUsed) {
  const test_support::ScopedTempDir temp_dir("kerneleval-cache-test");
  ASSERT_TRUE(temp_dir.ok());
  const std::string& dir = temp_dir.path();
  auto key = [](int i) { return std::string(62, 'k') + std::to_string(10 + i); };
  auto path = [&](int i) { return dir + "/kk/" + key(i) + ".pb"; };
  // A temporary left by a writer that died an hour ago, and a foreign file.
  fs::create_directories(dir + "/kk");
  const std::string stale = dir + "/kk/" + key(99) + ".pb.tmp.1.2";
  std::ofstream(stale) << "partial";
  fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::hours(2));
  std::ofstream(dir + "/README") << "not an entry";
  {
    // Each entry is ~1 KB on disk; a 4.5 KB bound keeps at most 4.
    CompileCache cache(/*memory_bytes=*/0, dir, /*directory_bytes=*/4500);
    EXPECT_FALSE(fs::exists(stale));
    const auto now = fs::file_time_type::clock::now();
    for (int i = 0; i < 4; ++i) {
      cache.Insert(key(i), Result(1000));
      // Distinct, increasing use times (file systems round mtimes).
      fs::last_write_time(path(i), now - std::chrono::minutes(10 - i));
    }
    EXPECT_EQ(cache.directory_evictions(), 0u);
    ASSERT_NE(cache.Lookup(key(0)), nullptr);  // a disk hit: 0 is now the most recent
    cache.Insert(key(4), Result(1000));        // 5 KB > 4.5 KB: trim to 3/4 of the bound
    EXPECT_LE(cache.directory_bytes_used(), 4500u / 4 * 3);
    EXPECT_EQ(cache.directory_evictions(), 2u);
    EXPECT_TRUE(fs::exists(path(0)));   // recently used
    EXPECT_FALSE(fs::exists(path(1)));  // the two least recently used
    EXPECT_FALSE(fs::exists(path(2)));
    EXPECT_TRUE(fs::exists(path(3)));
    EXPECT_TRUE(fs::exists(path(4)));
    EXPECT_EQ(cache.Lookup(key(1)), nullptr);
    EXPECT_NE(cache.Lookup(key(3)), nullptr);
  }
  EXPECT_TRUE(fs::exists(dir + "/README"));  // never touched
  // A new instance counts what is there.
  CompileCache reopened(0, dir, 4500);
  EXPECT_GT(reopened.directory_bytes_used(), 2000u);
  EXPECT_LE(reopened.directory_bytes_used(), 4500u);
}

}  // namespace
}  // namespace kerneleval::compile
