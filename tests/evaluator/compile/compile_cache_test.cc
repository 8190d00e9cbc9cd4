// The compile cache: keys change with every input, the memory LRU stays
// within its byte bound, the directory keeps entries across instances and
// ignores unreadable ones.
#include "evaluator/compile/compile_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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
  char pattern[] = "/tmp/kerneleval-cache-test-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
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
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kerneleval::compile
