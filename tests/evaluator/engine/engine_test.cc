// The engine end to end on the CPU backend: every stage of a verdict is
// exercised for real (compile, runtime, timeout, correctness, passed), and
// after each failure the next evaluation passes.
#include "evaluator/engine/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "evaluator/problems/problems.h"
#include "tests/support/scoped_temp_dir.h"
#include "tests/support/timing_runner_host_code.h"

namespace kerneleval {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Counts what the engine reports (called from engine threads).
class CountingObserver : public EngineObserver {
 public:
  void OnWorkerRestart(std::string_view backend) override {
    if (backend == "cpu") ++restarts;
  }
  void OnVerdict(std::string_view stage) override {
    if (stage == "runtime") ++runtime_verdicts;
  }
  void OnLatency(std::string_view stage, double seconds) override {
    if (stage == "compile" && seconds >= 1) ++slow_compiles;
    if (stage == "compile_wait") ++compiles_begun;
    if (stage == "queue_wait") ++device_takes;
  }
  void OnReferenceCache(bool hit) override { ++(hit ? reference_hits : reference_misses); }
  void OnDeviceSeconds(std::string_view client_id, double seconds) override {
    std::lock_guard lock(mutex);
    device_seconds[std::string(client_id)] += seconds;
  }
  double DeviceSeconds(const std::string& client_id) {
    std::lock_guard lock(mutex);
    return device_seconds[client_id];
  }
  std::mutex mutex;
  std::map<std::string, double> device_seconds;  // [s] by client
  std::atomic<int> restarts{0};
  std::atomic<int> runtime_verdicts{0};
  std::atomic<int> slow_compiles{0};   // compile turns of 1 s or more
  std::atomic<int> compiles_begun{0};  // compile turns taken by a thread
  std::atomic<int> device_takes{0};    // jobs a device took from its queue
  std::atomic<int> reference_hits{0};
  std::atomic<int> reference_misses{0};
};

// Waits until `count` (an observer's) passes `before`, up to `limit`:
// false if it never did. Tests that order two requests wait for what the
// first must have reached (a compile begun, a device taken), not for a
// fixed time that a busy machine can outlast.
bool WaitUntilPasses(const std::atomic<int>& count, int before,
                     std::chrono::seconds limit = std::chrono::seconds(120)) {
  const auto start = std::chrono::steady_clock::now();
  while (count.load() <= before) {
    if (std::chrono::steady_clock::now() - start > limit) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// An engine on the CPU backend, reward in speedup mode without partial credit.
EngineOptions CpuEngineOptions() {
  EngineOptions options;
  options.enable_cuda = false;
  options.compile_workers = 2;
  options.reward_mode = "speedup";
  options.partial_credit = false;
  return options;
}

// A test suite's engine (nullptr, reported, when it cannot start).
Engine* CreateSuiteEngine(const EngineOptions& options) {
  auto engine = Engine::Create(options);
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? engine->release() : nullptr;
}

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    observer_ = std::make_shared<CountingObserver>();
    EngineOptions options = CpuEngineOptions();
    options.observer = observer_;
    // The whole of one backend call (every case of a program); generous:
    // CI machines are busy. The infinite-loop test waits this long.
    options.run_timeout_seconds = 20;
    // This suite's slow kernels (kSlowVectorAdd) sleep in host code behind
    // `#if __has_include(<unistd.h>)`, which the host build's check against
    // NVRTC's preprocessor refuses (tests/exploits covers the check).
    options.cpu_host_build_checks = false;
    engine_ = CreateSuiteEngine(options);
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
  }

  static v1::Verdict Evaluate(const std::string& problem, const std::string& source,
                              bool skip_timing = true) {
    v1::EvaluateRequest request;
    request.set_problem_id(problem);
    request.mutable_submission()->set_source(source);
    request.set_skip_timing(skip_timing);
    // A fresh seed per call: no verdict is shared through de-duplication, so
    // "the next evaluation passes" really runs again on a replaced worker.
    request.set_seed(next_seed_++);
    auto verdict = engine_->Evaluate(request, CallContext{});
    EXPECT_TRUE(verdict.ok()) << verdict.status();
    return verdict.ok() ? *verdict : v1::Verdict{};
  }

  static inline Engine* engine_ = nullptr;
  static inline std::shared_ptr<CountingObserver> observer_;
  static inline uint64_t next_seed_ = 1234;
};

constexpr char kVectorAdd[] = R"(
// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)";

// The built-in vector_add sent inline as a custom problem, kVectorAdd as the
// submission, correctness only, seed `seed`.
v1::EvaluateRequest InlineVectorAddRequest(Engine& engine, uint64_t seed) {
  v1::GetProblemRequest get;
  get.set_problem_id("vector_add");
  auto problem = engine.GetProblem(get);
  EXPECT_TRUE(problem.ok()) << problem.status();
  v1::EvaluateRequest request;
  if (problem.ok()) *request.mutable_problem() = problem->problem();
  request.mutable_submission()->set_source(kVectorAdd);
  request.set_skip_timing(true);
  request.set_seed(seed);
  return request;
}

// The problems' ids, for one test each (ctest's shards then share them out:
// all 55 in one test took 197 s, most of one shard's).
std::vector<std::string> ProblemIds() {
  std::vector<std::string> ids;
  absl::StatusOr<problems::ProblemRegistry> registry =
      problems::ProblemRegistry::LoadFromDirectory(problems::DefaultProblemsDir());
  if (!registry.ok()) return {"unloadable_problems_directory"};  // fails in the test
  for (const v1::Problem* problem : registry->List()) ids.push_back(problem->id());
  return ids;
}

class EngineReferenceTest : public EngineTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(EngineReferenceTest, ThisProblemsReferencePassesAsASubmission) {
  v1::GetProblemRequest get;
  get.set_problem_id(GetParam());
  auto problem = engine_->GetProblem(get);
  ASSERT_TRUE(problem.ok()) << problem.status();
  v1::EvaluateRequest request;
  request.set_problem_id(GetParam());
  request.mutable_submission()->set_source(problem->problem().reference_source());
  *request.mutable_submission()->mutable_launch_plan() = problem->problem().reference_plan();
  request.set_skip_timing(true);
  auto verdict = engine_->Evaluate(request, CallContext{});
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_TRUE(verdict->correct()) << verdict->error();
  EXPECT_EQ(verdict->stage(), "passed");
}

INSTANTIATE_TEST_SUITE_P(EveryProblem, EngineReferenceTest, ::testing::ValuesIn(ProblemIds()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST_F(EngineTest, EveryProblemHasAReferenceTest) {
  auto problems = engine_->ListProblems({});
  ASSERT_TRUE(problems.ok());
  ASSERT_GE(problems->problems_size(), 6);
  std::vector<std::string> listed;
  for (const auto& summary : problems->problems()) listed.push_back(summary.id());
  EXPECT_THAT(ProblemIds(), ::testing::UnorderedElementsAreArray(listed));
}

TEST_F(EngineTest, CorrectKernelPassesWithTimingAndReward) {
  v1::Verdict verdict = Evaluate("vector_add", kVectorAdd, /*skip_timing=*/false);
  EXPECT_TRUE(verdict.correct()) << verdict.error();
  EXPECT_EQ(verdict.stage(), "passed");
  EXPECT_GT(verdict.speedup(), 0);
  EXPECT_TRUE(verdict.timing().emulated());
  EXPECT_GT(verdict.timing().candidate().samples(), 0u);
  // Speedup mode: 0.3 + clamp(log2(s), -0.2, 3.0).
  const double expected = 0.3 + std::clamp(std::log2(verdict.speedup()), -0.2, 3.0);
  EXPECT_NEAR(verdict.reward(), expected, 1e-12);
  EXPECT_TRUE(verdict.has_seed());
  EXPECT_FALSE(verdict.deduplicated());
  EXPECT_GE(verdict.correctness().shapes_checked(), 2u);
}

TEST_F(EngineTest, SharedMemoryAndWarpShuffleSoftmaxPasses) {
  const char* source = R"(
// @launch softmax_block<<<ROWS, 128, 128 * sizeof(float)>>>(x, y, ROWS, COLS)
__device__ float warp_reduce_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffff, v, o));
  return v;
}
__device__ float warp_reduce_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  return v;
}
__global__ void softmax_block(const float* x, float* y, int rows, int cols) {
  extern __shared__ float partial[];
  __shared__ float row_max, row_sum;
  const float* in = x + (size_t)blockIdx.x * cols;
  float* out = y + (size_t)blockIdx.x * cols;
  float m = -INFINITY;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, in[c]);
  m = warp_reduce_max(m);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    float r = partial[0];
    for (int w = 1; w < blockDim.x / 32; ++w) r = fmaxf(r, partial[w]);
    row_max = r;
  }
  __syncthreads();
  float s = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(in[c] - row_max);
  s = warp_reduce_sum(s);
  __syncthreads();
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x == 0) {
    float r = 0.f;
    for (int w = 0; w < blockDim.x / 32; ++w) r += partial[w];
    row_sum = r;
  }
  __syncthreads();
  for (int c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(in[c] - row_max) / row_sum;
}
)";
  v1::Verdict verdict = Evaluate("softmax", source);
  EXPECT_TRUE(verdict.correct()) << verdict.error();
}

TEST_F(EngineTest, WrongKernelFailsAtCorrectnessWithDetails) {
  const char* source = R"(
// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] - b[i];
}
)";
  v1::Verdict verdict = Evaluate("vector_add", source);
  EXPECT_FALSE(verdict.correct());
  EXPECT_EQ(verdict.stage(), "correctness");
  EXPECT_EQ(verdict.reward(), 0.0);
  ASSERT_GT(verdict.correctness().checks_size(), 0);
  const v1::OutputCheck& check = verdict.correctness().checks(0);
  EXPECT_FALSE(check.passed());
  EXPECT_EQ(check.output(), "c");
  EXPECT_GT(check.mismatches(), 0u);
  EXPECT_GT(check.max_abs_error(), 0);
  EXPECT_NE(verdict.error().find("output c"), std::string::npos) << verdict.error();
  // Each check names its trial: the number after '#' in its label.
  uint32_t highest_trial = 0;
  for (const v1::OutputCheck& failed : verdict.correctness().checks()) {
    const std::string& label = failed.shape_label();
    EXPECT_EQ(label.substr(label.rfind('#') + 1), std::to_string(failed.trial())) << label;
    highest_trial = std::max(highest_trial, failed.trial());
  }
  EXPECT_GT(highest_trial, 0u);
  // Every case failed; the report holds the first few of those checks.
  EXPECT_EQ(verdict.correctness().failing_checks(), verdict.correctness().trials_run());
  EXPECT_LT(verdict.correctness().checks_size(), verdict.correctness().failing_checks());
  // The next evaluation is unaffected.
  EXPECT_TRUE(Evaluate("vector_add", kVectorAdd).correct());
}

TEST_F(EngineTest, KernelWritingOnlyPartOfTheOutputFails) {
  const char* source = R"(
// @launch add<<<ceil_div(N, 512), 256>>>(a, b, c, N)
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)";
  v1::Verdict verdict = Evaluate("vector_add", source);
  EXPECT_FALSE(verdict.correct());
  EXPECT_EQ(verdict.stage(), "correctness");
}

TEST_F(EngineTest, KernelReadingLeftoverMemoryInsteadOfComputingFails) {
  // Writes nothing: it hopes the output buffer still holds the reference's
  // result. Outputs are poisoned (NaN) before every run.
  const char* source = R"(
// @launch lazy<<<1, 32>>>(a, b, c, N)
extern "C" __global__ void lazy(const float* a, const float* b, float* c, int n) {}
)";
  v1::Verdict verdict = Evaluate("vector_add", source);
  EXPECT_FALSE(verdict.correct());
  EXPECT_EQ(verdict.stage(), "correctness");
  EXPECT_TRUE(Evaluate("vector_add", kVectorAdd).correct());
}

TEST_F(EngineTest, KernelHardCodedToOneShapeFails) {
  const char* source = R"(
// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  const int fixed_n = 1 << 10;  // the size the author tuned for
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < fixed_n && i < n) c[i] = a[i] + b[i];
}
)";
  v1::Verdict verdict = Evaluate("vector_add", source);
  EXPECT_FALSE(verdict.correct());
}

TEST_F(EngineTest, OutOfBoundsWriteIsARuntimeFailure) {
  const char* source = R"(
// @launch add<<<ceil_div(N, 256) + 64, 256>>>(a, b, c, N)
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  c[i] = 1.0f;  // no bounds check, and 64 extra blocks
}
)";
  const int restarts_before = observer_->restarts.load();
  const int runtime_before = observer_->runtime_verdicts.load();
  v1::Verdict verdict = Evaluate("vector_add", source);
  EXPECT_FALSE(verdict.correct());
  EXPECT_EQ(verdict.stage(), "runtime") << verdict.error();
  // The case is named once (the CPU backend's message names it already).
  const std::string named = "case 'single#0'";
  const size_t at = verdict.error().find(named);
  EXPECT_NE(at, std::string::npos) << verdict.error();
  EXPECT_EQ(verdict.error().find("single#0", at + named.size()), std::string::npos)
      << verdict.error();
  EXPECT_TRUE(Evaluate("vector_add", kVectorAdd).correct());
  // The crashed worker was replaced, and the observer (the server's
  // kerneleval_worker_restarts_total) heard of it.
  EXPECT_GE(observer_->restarts.load(), restarts_before + 1);
  EXPECT_EQ(observer_->runtime_verdicts.load(), runtime_before + 1);
}

TEST_F(EngineTest, InfiniteLoopIsATimeoutWithinTheLimit) {
  const char* source = R"(
// @launch spin<<<1, 32>>>(a, b, c, N)
extern "C" __global__ void spin(const float* a, const float* b, float* c, int n) {
  volatile int x = 0;
  while (true) { x = x + 1; }
}
)";
  const auto start = std::chrono::steady_clock::now();
  v1::Verdict verdict = Evaluate("vector_add", source);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(verdict.correct());
  EXPECT_EQ(verdict.stage(), "timeout") << verdict.error();
  EXPECT_LT(seconds, 60);  // the 20 s limit, plus compiles on a busy machine
  EXPECT_TRUE(Evaluate("vector_add", kVectorAdd).correct());
}

// A group whose kernels all hang: each correctness run is cut at 25 x the
// reference's run on the same cases (at least 5 s), not at the 20 s limit,
// so the group holds the device ~3 x 5 s instead of 3 x 20 s (RL groups of 64
// with a few hanging kernels each held a device for minutes).
// vector_add, untimed, with `count` kernels that spin forever (each its own
// source: none is judged once for all).
v1::EvaluateGroupRequest SpinningGroup(int count, uint64_t seed) {
  v1::EvaluateGroupRequest group;
  group.set_problem_id("vector_add");
  group.set_seed(seed);
  group.set_skip_timing(true);
  for (int k = 0; k < count; ++k) {
    group.add_submissions()->set_source(absl::StrCat(R"(
// @launch spin<<<1, 32>>>(a, b, c, N)
extern "C" __global__ void spin(const float* a, const float* b, float* c, int n) {
  volatile int x = )",
                                                     k, R"(;
  while (true) { x = x + 1; }
}
)"));
  }
  return group;
}

TEST_F(EngineTest, HangingKernelsOfAGroupAreCutAtAMultipleOfTheReferencesRun) {
  const v1::EvaluateGroupRequest group = SpinningGroup(3, next_seed_++);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<v1::EvaluateGroupResponse> response = engine_->EvaluateGroup(group, {});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->verdicts_size(), 3);
  for (const v1::Verdict& verdict : response->verdicts()) {
    EXPECT_EQ(verdict.stage(), "timeout") << verdict.error();
    EXPECT_NE(verdict.error().find("x the reference's run on the same cases"), std::string::npos)
        << verdict.error();
  }
  EXPECT_LT(seconds, 3 * 20.0) << "each hang held the device for the whole limit";
}

// A group answers with what it judged by its caller's deadline, whatever
// the candidates' places: the correct kernel (last, behind eight hanging
// ones) judged and timed, a wrong one judged, hanging ones judged "timeout"
// while time was left, the rest "not_evaluated". Before, DEADLINE_EXCEEDED
// and no verdict at all (a group of one correct and five hanging kernels
// under a 12 s deadline, rt7 #2); then, kernels behind hanging ones were
// left unjudged (rt8 #3): now each first runs within its share of half the
// group's correctness time, and those cut there run again with the rest.
// The correctness runs stop early enough to time what passed (3 s before
// it on the CPU backend). Hanging kernels' runs are cut at >= 1 s here.
// The deadline is 24 s: under 16 s, with two busy cores besides (clean-clone
// CI's load), the wrong kernel's first run was cut at its share and the
// deadline came before its second, in 2 of 3 runs at f891ad5 (2026-12-06).
// The kernels are compiled and host-built before the clock starts: with a
// cold cache and one busy core besides, their builds took ~14 s of the 20 s
// before the answer, every first run was cut at its share (0.3 s for the
// wrong kernel), and only 1 of 9 was judged (CI at 56e2ca2, and again alone
// with an empty KERNELEVAL_CPU_CACHE_DIR). This test is about the deadline.
TEST(EngineDeadlineTest, AGroupPastItsDeadlineAnswersWithWhatItJudged) {
  EngineOptions options = CpuEngineOptions();
  options.run_timeout_seconds = 20;
  options.candidate_run_floor_seconds = 1;
  const test_support::ScopedTempDir compile_cache("engine-deadline");
  ASSERT_TRUE(compile_cache.ok());
  options.compile_cache_dir = compile_cache.path();
  constexpr int kSpinning = 8;
  v1::EvaluateGroupRequest group = SpinningGroup(kSpinning, 77);
  group.set_skip_timing(false);
  const int wrong = 4;  // among the hanging ones
  group.mutable_submissions(wrong)->set_source(
      absl::StrReplaceAll(kVectorAdd, {{"a[i] + b[i]", "a[i] - b[i]"}}));
  group.mutable_submissions()->Add()->set_source(kVectorAdd);
  const int correct = kSpinning;
  {
    // On an engine of its own, whose runs stop at 0.5 s (at 25 x the
    // reference's run, the hangs took ~60 s), sharing the on-disk caches:
    // NVRTC's in compile_cache_dir, the host builds' in the CPU cache.
    EngineOptions warm_up_options = options;
    warm_up_options.run_timeout_seconds = 0.5;
    warm_up_options.candidate_run_floor_seconds = 0;
    auto warm_up_engine = Engine::Create(warm_up_options);
    ASSERT_TRUE(warm_up_engine.ok()) << warm_up_engine.status();
    v1::EvaluateGroupRequest warm_up = group;
    warm_up.set_skip_timing(true);
    absl::StatusOr<v1::EvaluateGroupResponse> warmed =
        (*warm_up_engine)->EvaluateGroup(warm_up, {});
    ASSERT_TRUE(warmed.ok()) << warmed.status();
    for (const v1::Verdict& verdict : warmed->verdicts()) {
      ASSERT_TRUE(verdict.compile().success()) << verdict.compile().log();
    }
  }
  auto created = Engine::Create(options);
  ASSERT_TRUE(created.ok()) << created.status();
  CallContext context;
  constexpr double kDeadlineSeconds = 24;
  context.deadline = absl::Now() + absl::Seconds(kDeadlineSeconds);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<v1::EvaluateGroupResponse> response = (*created)->EvaluateGroup(group, context);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->verdicts_size(), kSpinning + 1);
  EXPECT_LT(seconds, kDeadlineSeconds) << "the answer came after the caller's deadline";
  const v1::Verdict& passed = response->verdicts(correct);
  EXPECT_TRUE(passed.correct()) << passed.stage() << ": " << passed.error();
  EXPECT_GT(passed.timing().candidate().samples(), 0u);
  EXPECT_GT(passed.reward(), 0);
  EXPECT_EQ(response->verdicts(wrong).stage(), "correctness") << response->verdicts(wrong).error();
  int timed_out = 0;
  int not_evaluated = 0;
  for (int i = 0; i < kSpinning; ++i) {
    if (i == wrong) continue;
    const v1::Verdict& verdict = response->verdicts(i);
    std::cout << "[" << i << "] " << verdict.stage() << ": " << verdict.error() << "\n";
    if (verdict.stage() == "timeout") {
      ++timed_out;
      continue;
    }
    ++not_evaluated;
    EXPECT_EQ(verdict.stage(), "not_evaluated") << verdict.error();
    EXPECT_FALSE(verdict.correct());
    EXPECT_EQ(verdict.reward(), 0);
    EXPECT_NE(std::find(verdict.flags().begin(), verdict.flags().end(), "not_evaluated"),
              verdict.flags().end());
    EXPECT_TRUE(verdict.error().starts_with("not evaluated: the group's deadline came"))
        << verdict.error();
    EXPECT_TRUE(verdict.compile().success()) << "its compile report stays";
  }
  std::cout << "answered after " << seconds << " s: " << timed_out << " timed out, "
            << not_evaluated << " not evaluated\n";
  // 7 hangs at >= 1 s each, run twice, do not fit in the 16 s less the 4 s
  // kept for the answer and the timing.
  EXPECT_GT(not_evaluated, 0);
}

// A group whose deadline comes while it waits for a device busy with
// another client's request is answered by then with what its compile stage
// decided, the rest "not_evaluated" (rt8 #5: it got DEADLINE_EXCEEDED, after
// its caller had gone, when the device took it). A single evaluation gets
// DEADLINE_EXCEEDED at its deadline, and its place in the queue is free
// then (it was held until the device took it).
TEST(EngineDeadlineTest, AJobWhoseDeadlineComesWhileItWaitsIsAnsweredThen) {
  EngineOptions options = CpuEngineOptions();
  options.run_timeout_seconds = 8;
  options.candidate_run_floor_seconds = 8;
  auto takes = std::make_shared<CountingObserver>();
  options.observer = takes;
  auto created = Engine::Create(options);
  ASSERT_TRUE(created.ok()) << created.status();
  Engine& engine = **created;
  using Clock = std::chrono::steady_clock;
  auto vector_add = [](uint64_t seed, const std::string& source) {
    v1::EvaluateRequest request;
    request.set_problem_id("vector_add");
    request.set_skip_timing(true);
    request.set_seed(seed);
    request.mutable_submission()->set_source(source);
    return request;
  };
  // Another client's hanging kernel holds the device for its run limit.
  const v1::EvaluateRequest busy = vector_add(91, SpinningGroup(1, 91).submissions(0).source());
  CallContext a;
  a.client_id = "client-a";
  std::promise<absl::StatusOr<v1::Verdict>> busy_done;
  engine.EvaluateAsync(busy, a,
                       [&](absl::StatusOr<v1::Verdict> verdict) { busy_done.set_value(verdict); });
  // Until the device has taken it: a fixed 1.5 s was too short once in CI
  // (its new source's host build, under load, let the group's cached one
  // reach the device first, and the group ran out of time there).
  EXPECT_TRUE(WaitUntilPasses(takes->device_takes, 0)) << "the device never took the busy job";

  v1::EvaluateGroupRequest group;
  group.set_problem_id("vector_add");
  group.set_seed(92);
  group.add_submissions()->set_source("this is not CUDA");
  group.add_submissions()->set_source(kVectorAdd);
  CallContext b;
  b.client_id = "client-b";
  constexpr double kDeadlineSeconds = 3;
  b.deadline = absl::Now() + absl::Seconds(kDeadlineSeconds);
  const auto start = Clock::now();
  absl::StatusOr<v1::EvaluateGroupResponse> response = engine.EvaluateGroup(group, b);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_LT(seconds, kDeadlineSeconds) << "the answer came after the caller's deadline";
  ASSERT_EQ(response->verdicts_size(), 2);
  const v1::Verdict& compile_error = response->verdicts(0);
  EXPECT_EQ(compile_error.stage(), "compile") << compile_error.error();
  EXPECT_FALSE(compile_error.compile().success());
  const v1::Verdict& waited = response->verdicts(1);
  EXPECT_EQ(waited.stage(), "not_evaluated") << waited.error();
  EXPECT_EQ(waited.reward(), 0);
  EXPECT_TRUE(waited.compile().success()) << "its compile report stays";
  EXPECT_NE(waited.error().find("while it waited"), std::string::npos) << waited.error();
  EXPECT_NE(waited.error().find("cpu"), std::string::npos)
      << "names the device: " << waited.error();
  std::cout << "answered after " << seconds << " s: " << waited.error() << "\n";

  const v1::EvaluateRequest single = vector_add(94, kVectorAdd);
  CallContext c;
  c.client_id = "client-c";
  constexpr double kSingleDeadlineSeconds = 1.5;
  c.deadline = absl::Now() + absl::Seconds(kSingleDeadlineSeconds);
  const auto single_start = Clock::now();
  absl::StatusOr<v1::Verdict> expired = engine.Evaluate(single, c);
  const double single_seconds = std::chrono::duration<double>(Clock::now() - single_start).count();
  EXPECT_TRUE(absl::IsDeadlineExceeded(expired.status())) << expired.status();
  EXPECT_LT(single_seconds, kSingleDeadlineSeconds + 1) << "answered when the device took it";
  EXPECT_EQ(engine.ListDevices().devices(0).queue_depth(), 0u) << "its place is free";

  // The device's request goes on as before, and the device serves the next.
  absl::StatusOr<v1::Verdict> hung = busy_done.get_future().get();
  ASSERT_TRUE(hung.ok()) << hung.status();
  EXPECT_EQ(hung->stage(), "timeout") << hung->error();
  absl::StatusOr<v1::Verdict> passed = engine.Evaluate(vector_add(93, kVectorAdd), {});
  ASSERT_TRUE(passed.ok()) << passed.status();
  EXPECT_TRUE(passed->correct()) << passed->error();
}

// ---- The CPU backend's host builds happen in the compile stage.

// kVectorAdd whose build by the CPU backend (g++: the interleaved build for
// its correctness runs, the plain one for timing) takes a while: g++
// evaluates `spins` constant loops of ~250,000 steps (~0.3-0.5 s each);
// NVRTC never sees them.
std::string SlowToBuildOnTheHost(int variant, int spins) {
  std::string source = absl::StrCat(kVectorAdd, "// variant ", variant, R"(
#if __has_include(<unistd.h>)  // host code: the CPU build only
constexpr unsigned HostSpin(unsigned n) {
  unsigned x = 1;
  for (unsigned i = 0; i < n; ++i) x = x * 1664525u + i;
  return x;
}
)");
  for (int k = 0; k < spins; ++k) {
    absl::StrAppend(&source, "constexpr unsigned kSpun", k, " = HostSpin(", 250000 - k, "u);\n");
  }
  absl::StrAppend(&source, "#endif\n");
  return source;
}

// Reports "host_build" turns, and runs a callback when the device takes a
// job (queue_wait is observed on the device loop, before the job runs).
class HostBuildObserver : public EngineObserver {
 public:
  void OnLatency(std::string_view stage, double seconds) override {
    if (stage == "host_build") ++host_builds;
    if (stage != "queue_wait") return;
    std::lock_guard lock(mutex);
    if (on_device) on_device();
  }
  void OnDevice(std::function<void()> callback) {
    std::lock_guard lock(mutex);
    on_device = std::move(callback);
  }
  std::mutex mutex;
  std::function<void()> on_device;
  std::atomic<int> host_builds{0};
};

// One engine on a CPU cache of its own (its host builds are all new).
class EngineHostBuildTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    cache_dir_ = new test_support::ScopedTempDir("engine-host-build");
    ASSERT_TRUE(cache_dir_->ok());
    observer_ = std::make_shared<HostBuildObserver>();
    EngineOptions options = CpuEngineOptions();
    options.observer = observer_;
    options.cpu_cache_dir = cache_dir_->path();
    // SlowToBuildOnTheHost's spins are kept from NVRTC by a gate, which the
    // host build's check against NVRTC's preprocessor refuses.
    options.cpu_host_build_checks = false;
    engine_ = CreateSuiteEngine(options);
  }
  static void TearDownTestSuite() {
    delete engine_;
    engine_ = nullptr;
    observer_.reset();
    delete cache_dir_;
    cache_dir_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(engine_, nullptr); }

  // Host builds in the cache whose translation unit holds `text`.
  static int BuildsHolding(const std::string& text) {
    int count = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(
             std::filesystem::path(cache_dir_->path()) / "lib", ec)) {
      std::ifstream in(entry.path() / "key");
      const std::string key((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (key.find(text) != std::string::npos) ++count;
    }
    return count;
  }

  static inline Engine* engine_ = nullptr;
  static inline std::shared_ptr<HostBuildObserver> observer_;
  static inline test_support::ScopedTempDir* cache_dir_ = nullptr;
};

// A new candidate's host builds (its correctness build and its timed build)
// are in the cache when the device takes its job, and its runs there build
// nothing. Before, the worker built each on the device, in the first Run
// and the first Time.
TEST_F(EngineHostBuildTest, TheDeviceFindsACandidatesHostBuildsDone) {
  v1::EvaluateRequest request;
  request.set_problem_id("vector_add");
  request.mutable_submission()->set_source(SlowToBuildOnTheHost(1, 2));
  request.set_skip_timing(false);
  request.set_seed(11);
  std::atomic<int> built_when_taken{-1};
  observer_->OnDevice([&] { built_when_taken = BuildsHolding("// variant 1\n"); });
  const int host_builds_before = observer_->host_builds.load();
  absl::StatusOr<v1::Verdict> verdict = engine_->Evaluate(request, {});
  observer_->OnDevice(nullptr);
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_EQ(verdict->stage(), "passed") << verdict->error();
  EXPECT_EQ(built_when_taken.load(), 2) << "the host builds were not done before the device run";
  EXPECT_EQ(BuildsHolding("// variant 1\n"), 2);
  EXPECT_GE(observer_->host_builds.load() - host_builds_before, 1) << "no host_build reported";
}

// A group's candidates are built in the compile stage too, in parallel,
// before the device takes the group: before, each was built on the device
// in its first correctness run, so a share cut (a group with a deadline)
// landing in a build threw it away and the second pass built it again (a
// group of 8 kernels with ~3 s builds under a 26 s deadline: 2 of 8 judged
// before, all 8 in ~14 s now, on an idle 2-core VM; the engine's timing on
// a loaded machine decides how many, so this checks where the builds are
// done, not the count).
// Counts the correctness stages the engine reports (one per job that ran
// correctness cases on its device).
class CorrectnessStageCounter : public EngineObserver {
 public:
  void OnLatency(std::string_view stage, double /*seconds*/) override {
    if (stage == "correctness") ++correctness_stages;
  }
  std::atomic<int> correctness_stages{0};
};

// A kernel whose host build passes the CPU backend's limit fails at
// "compile" from that build in the compile stage, without a run: before,
// its first run on the device built it again (the same build under the
// same limit), so it took the limit twice (120 s at the default 60 s, past
// a caller's 100 s deadline: no verdict; rt12 #1).
TEST_F(EngineHostBuildTest, ABuildOverTheHostLimitIsItsVerdictWithoutARun) {
  v1::EvaluateRequest request;
  request.set_problem_id("vector_add");
  request.set_skip_timing(true);
  request.set_seed(13);
  request.mutable_submission()->set_source(kVectorAdd);
  // The reference is built first, under the default limit, in the cache the
  // limited engine shares.
  absl::StatusOr<v1::Verdict> warm = engine_->Evaluate(request, {});
  ASSERT_TRUE(warm.ok()) << warm.status();
  ASSERT_TRUE(warm->correct()) << warm->error();

  EngineOptions options = CpuEngineOptions();
  options.cpu_cache_dir = cache_dir_->path();
  options.cpu_compile_timeout_seconds = 3;
  options.cpu_host_build_checks = false;  // as the suite's engine
  auto counter = std::make_shared<CorrectnessStageCounter>();
  options.observer = counter;
  auto limited = Engine::Create(options);
  ASSERT_TRUE(limited.ok()) << limited.status();
  request.set_seed(14);
  request.mutable_submission()->set_source(SlowToBuildOnTheHost(200, 40));  // ~15 s to build
  absl::StatusOr<v1::Verdict> verdict = (*limited)->Evaluate(request, {});
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_EQ(verdict->stage(), "compile") << verdict->error();
  EXPECT_NE(verdict->error().find("did not finish within 3 s"), std::string::npos)
      << verdict->error();
  EXPECT_TRUE(verdict->compile().success()) << "NVRTC's report stays";
  EXPECT_EQ(counter->correctness_stages.load(), 0) << "the device built it again in a run";
}

TEST_F(EngineHostBuildTest, AGroupsHostBuildsAreDoneBeforeTheDeviceTakesIt) {
  constexpr int kCandidates = 4;
  v1::EvaluateGroupRequest group;
  group.set_problem_id("vector_add");
  group.set_seed(12);
  group.set_skip_timing(true);
  for (int k = 0; k < kCandidates; ++k) {
    group.add_submissions()->set_source(SlowToBuildOnTheHost(100 + k, 2));
  }
  std::atomic<int> built_when_taken{-1};
  observer_->OnDevice([&] {
    int built = 0;
    for (int k = 0; k < kCandidates; ++k) {
      built += BuildsHolding(absl::StrCat("// variant ", 100 + k, "\n")) > 0;
    }
    built_when_taken = built;
  });
  absl::StatusOr<v1::EvaluateGroupResponse> response = engine_->EvaluateGroup(group, {});
  observer_->OnDevice(nullptr);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->verdicts_size(), kCandidates);
  for (const v1::Verdict& verdict : response->verdicts()) {
    EXPECT_EQ(verdict.stage(), "passed") << verdict.error();
  }
  EXPECT_EQ(built_when_taken.load(), kCandidates)
      << "candidates whose host build was not done when the device took the group";
}

// A limit the request sets is each run's limit as given: no cut at a
// multiple of the reference's run (a caller that knows its kernels are slow
// raises the limit and gets it).
TEST_F(EngineTest, ARequestsOwnLimitIsNotCutToAMultipleOfTheReferencesRun) {
  v1::EvaluateGroupRequest group = SpinningGroup(1, next_seed_++);
  group.mutable_limits()->set_timeout_seconds(7);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<v1::EvaluateGroupResponse> response = engine_->EvaluateGroup(group, {});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->verdicts_size(), 1);
  const v1::Verdict& verdict = response->verdicts(0);
  EXPECT_EQ(verdict.stage(), "timeout") << verdict.error();
  EXPECT_NE(verdict.error().find("within 7 s"), std::string::npos) << verdict.error();
  EXPECT_EQ(verdict.error().find("the reference's run"), std::string::npos) << verdict.error();
  EXPECT_GE(seconds, 7.0);
}

// A group too large to give each candidate the request's own limit in full
// (group size x limit over 10 x the server's limit) shares it: every run is
// cut at the server's multiple of the reference's run, at least its share,
// the same for each candidate whatever its siblings do. Here: a server limit
// of 0.5 s lets one request set 5 s; two candidates at 4 s each would take
// 8 s, so each is cut at 2.5 s (a group of 64 at 200 s could hold its
// device 3.6 h).
// The group's size is what runs: a repeated submission (judged once) does
// not shrink the share. With the server's candidate_run_factor at 0 (runs
// cut at its limit alone) the share caps each run the same way.
class EngineLimitsTest : public ::testing::TestWithParam<double> {};

TEST_P(EngineLimitsTest, AGroupSharesItsOwnLimitOnceAllItsCandidatesDoNotFitInTheMost) {
  EngineOptions options = CpuEngineOptions();
  options.run_timeout_seconds = 0.5;
  options.candidate_run_floor_seconds = 0.1;
  options.candidate_run_factor = GetParam();
  auto created = Engine::Create(options);
  ASSERT_TRUE(created.ok()) << created.status();
  v1::EvaluateGroupRequest group = SpinningGroup(2, 1);
  *group.add_submissions() = group.submissions(0);  // GRPO repeats itself
  group.mutable_limits()->set_timeout_seconds(4);
  absl::StatusOr<v1::EvaluateGroupResponse> response = (*created)->EvaluateGroup(group, {});
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->verdicts_size(), 3);
  const std::string limit_text = GetParam() > 0
                                     ? "the limit of this run: 2.5 s, 1 x the reference's run"
                                     : "the limit of this run: 2.5 s, this candidate's share";
  for (const v1::Verdict& verdict : response->verdicts()) {
    EXPECT_EQ(verdict.stage(), "timeout") << verdict.error();
    EXPECT_NE(verdict.error().find(limit_text), std::string::npos) << verdict.error();
    EXPECT_NE(verdict.error().find(GetParam() > 0 ? "shared by its 2 candidates" : "2 candidates"),
              std::string::npos)
        << verdict.error();
  }
}

// 1 x, not the default 25 x: on a busy machine 25 x the reference's run
// (0.16 s of it) was above the 4 s limit, and the share never showed.
INSTANTIATE_TEST_SUITE_P(CandidateRunFactor, EngineLimitsTest, ::testing::Values(1.0, 0.0));

// Another client's request does not wait for a whole group: it is served
// between two of the group's candidates (each of these spins until cut,
// ~5 s). Before, it waited for every candidate and finished after the group.
// Client a's group of 3 spinning kernels (each cut at the 5 s floor), then,
// once a device has taken the group (its first candidate running),
// client b's single evaluation of `single_source`: when each finished, in
// seconds from the group's start. `observer` is the engine's.
struct GroupAndSingle {
  double group_seconds = 0;
  double group_wall_seconds = 0;  // its verdicts' wall_seconds: its time on the device
  double single_submitted_seconds = 0;
  double single_seconds = 0;
  v1::Verdict single;
};
GroupAndSingle GroupThenSingle(Engine* engine, const CountingObserver& observer, uint64_t seed,
                               absl::Time group_deadline, const std::string& single_source) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::promise<double> group_done;
  double group_wall = 0;  // written before group_done is set
  std::promise<std::pair<double, v1::Verdict>> single_done;
  CallContext a;
  a.client_id = "client-a";
  a.deadline = group_deadline;
  const int takes_before = observer.device_takes.load();
  engine->EvaluateGroupAsync(
      SpinningGroup(3, seed), a, [&](absl::StatusOr<v1::EvaluateGroupResponse> response) {
        EXPECT_TRUE(response.ok()) << response.status();
        if (response.ok() && response->verdicts_size() > 0) {
          group_wall = response->verdicts(0).wall_seconds();
        }
        group_done.set_value(std::chrono::duration<double>(Clock::now() - start).count());
      });
  // Else the single, compiled first, could run before the group and pass
  // without testing anything.
  EXPECT_TRUE(WaitUntilPasses(observer.device_takes, takes_before)) << "no device took the group";
  GroupAndSingle result;
  result.single_submitted_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  v1::EvaluateRequest single;
  single.set_problem_id("vector_add");
  single.set_skip_timing(true);
  single.set_seed(seed + 1);
  single.mutable_submission()->set_source(single_source);
  CallContext b;
  b.client_id = "client-b";
  engine->EvaluateAsync(single, b, [&](absl::StatusOr<v1::Verdict> verdict) {
    EXPECT_TRUE(verdict.ok()) << verdict.status();
    single_done.set_value({std::chrono::duration<double>(Clock::now() - start).count(),
                           verdict.ok() ? *verdict : v1::Verdict{}});
  });
  std::tie(result.single_seconds, result.single) = single_done.get_future().get();
  result.group_seconds = group_done.get_future().get();
  result.group_wall_seconds = group_wall;
  return result;
}

TEST_F(EngineTest, AnotherClientIsServedBetweenTheCandidatesOfAGroup) {
  const double a_before = observer_->DeviceSeconds("client-a");
  const double b_before = observer_->DeviceSeconds("client-b");
  const GroupAndSingle run =
      GroupThenSingle(engine_, *observer_, next_seed_, absl::InfiniteFuture(), kVectorAdd);
  next_seed_ += 2;
  EXPECT_TRUE(run.single.correct()) << run.single.error();
  EXPECT_LT(run.single_seconds, run.group_seconds)
      << "the single request waited for the whole group (" << run.single_seconds << " s)";
  // Each client's device time is its own: the single served inside the
  // group's turn is not counted twice (the group's would include it).
  const double a_seconds = observer_->DeviceSeconds("client-a") - a_before;
  const double b_seconds = observer_->DeviceSeconds("client-b") - b_before;
  EXPECT_GT(a_seconds, 3 * 0.5);  // three runs cut at the floor, at least
  EXPECT_GT(b_seconds, 0);
  EXPECT_LE(a_seconds, run.group_wall_seconds - b_seconds + 0.01)
      << a_seconds << " s of the group's " << run.group_wall_seconds << " s, " << b_seconds
      << " s of them the single's";
}

TEST_F(EngineTest, AnotherClientIsServedWithinAGroupWhoseCallerSetADeadline) {
  // 120 s is plenty for 3 cut-off candidates and one served evaluation; a
  // fixed 4 x (2 x 20 s + 10 s) = 200 s of room served no one here.
  const GroupAndSingle run = GroupThenSingle(engine_, *observer_, next_seed_,
                                             absl::Now() + absl::Seconds(120), kVectorAdd);
  next_seed_ += 2;
  EXPECT_TRUE(run.single.correct()) << run.single.error();
  EXPECT_LT(run.single_seconds, run.group_seconds)
      << "the single request waited for the whole group (" << run.single_seconds << " s)";
}

TEST_F(EngineTest, AVerdictDecidedAtCompileTimeDoesNotWaitForTheDevice) {
  // The group's first candidate holds the device for at least its 5 s
  // floor: served between candidates, the compile error would come after it.
  const GroupAndSingle run =
      GroupThenSingle(engine_, *observer_, next_seed_, absl::InfiniteFuture(),
                      "// @launch add<<<1, 1>>>(a, b, c, N)\n"
                      "extern \"C\" __global__ void add() { nope; }\n");
  next_seed_ += 2;
  EXPECT_EQ(run.single.stage(), "compile") << run.single.error();
  // Submitted as the first candidate began its 5 s: served after it, the
  // verdict would take ~5 s; its own compile takes well under 1 s.
  EXPECT_LT(run.single_seconds - run.single_submitted_seconds, 3.5)
      << "the compile error waited for the device";
}

TEST_F(EngineTest, LimitsMemoryBytesBoundsThePlansBuffers) {
  // vector_add's correctness shapes take up to ~3 MiB (a, b, c).
  v1::EvaluateRequest request;
  request.set_problem_id("vector_add");
  request.mutable_submission()->set_source(kVectorAdd);
  request.set_skip_timing(true);
  request.set_seed(next_seed_++);
  request.mutable_limits()->set_memory_bytes(4096);
  absl::StatusOr<v1::Verdict> small = engine_->Evaluate(request, CallContext{});
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->stage(), "runtime");
  EXPECT_NE(
      small->error().find("more than the request's limit of 4096 bytes (limits.memory_bytes)"),
      std::string::npos)
      << small->error();
  request.mutable_limits()->set_memory_bytes(uint64_t{1} << 30);
  absl::StatusOr<v1::Verdict> large = engine_->Evaluate(request, CallContext{});
  ASSERT_TRUE(large.ok()) << large.status();
  EXPECT_TRUE(large->correct()) << large->error();
}

TEST_F(EngineTest, LimitsTimingBudgetSecondsCapsSampling) {
  // The CPU backend's stopping rule asks for at least 10 samples within its
  // 1.5 s cap; a 1 ms budget stops it after one round per input set.
  auto samples = [&](double budget) {
    v1::EvaluateRequest request;
    request.set_problem_id("vector_add");
    request.mutable_submission()->set_source(kVectorAdd);
    request.set_seed(next_seed_++);
    request.mutable_limits()->set_timing_budget_seconds(budget);
    absl::StatusOr<v1::Verdict> verdict = engine_->Evaluate(request, CallContext{});
    EXPECT_TRUE(verdict.ok()) << verdict.status();
    EXPECT_TRUE(verdict.ok() && verdict->correct()) << (verdict.ok() ? verdict->error() : "");
    return verdict.ok() ? verdict->timing().candidate().samples() : 0u;
  };
  EXPECT_GE(samples(0), 10u);
  const uint32_t capped = samples(0.001);
  EXPECT_GE(capped, 1u);
  EXPECT_LT(capped, 10u);
}

TEST_F(EngineTest, LimitsTimingBudgetSecondsNeverRaisesTheServersCap) {
  // About every other run is slow, so the median never settles and sampling runs
  // to the cap: the server's (1.5 s here), not the 1000 s asked, which would
  // outlast the call's 30 s deadline.
  v1::EvaluateRequest request;
  request.set_problem_id("vector_add");
  request.mutable_submission()->set_source(R"(
// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
  // Slow in about half of the runs, drawn by each run's own inputs (a count
  // in a __device__ global restarts in every timed run).
  if (i == 0 && a[0] < a[1]) {
    for (volatile int k = 0; k < 20000000; k = k + 1) {}
  }
}
)");
  request.set_seed(next_seed_++);
  request.mutable_limits()->set_timing_budget_seconds(1000);
  CallContext context;
  context.deadline = absl::Now() + absl::Seconds(30);
  absl::StatusOr<v1::Verdict> verdict = engine_->Evaluate(request, context);
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_TRUE(verdict->correct()) << verdict->error();
  EXPECT_LT(verdict->timing().candidate().total_seconds(), 10.0);
}

TEST_F(EngineTest, KernelModifyingItsInputFails) {
  const char* source = R"(
// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
extern "C" __global__ void add(float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { c[i] = a[i] + b[i]; a[i] = 0.0f; }
}
)";
  v1::Verdict verdict = Evaluate("vector_add", source);
  EXPECT_FALSE(verdict.correct());
  EXPECT_EQ(verdict.stage(), "correctness");
  EXPECT_TRUE(verdict.correctness().inputs_modified());
  EXPECT_EQ(verdict.correctness().modified_input(), "a");
}

TEST_F(EngineTest, CompileErrorIsAVerdictWithTheUsersLine) {
  const char* source =
      "// @launch add<<<1, 1>>>(a, b, c, N)\n"
      "extern \"C\" __global__ void add(const float* a, const float* b, float* c, int n) {\n"
      "  c[0] = undefined_name;\n"
      "}\n";
  v1::Verdict verdict = Evaluate("vector_add", source);
  EXPECT_FALSE(verdict.correct());
  EXPECT_EQ(verdict.stage(), "compile");
  EXPECT_NE(verdict.compile().log().find("undefined_name"), std::string::npos);
  bool line3 = false;
  for (const auto& d : verdict.compile().diagnostics()) line3 |= d.line() == 3;
  EXPECT_TRUE(line3) << verdict.compile().log();
}

// A plan launches instances of template kernels by their template
// arguments: NVRTC instantiates them, the plan is checked against each
// instance's own parameter types, and the backend launches that instance.
TEST_F(EngineTest, TemplateKernelsAreLaunchedByTheirArguments) {
  const std::string kernel = R"(
namespace ops {
template <typename T, int kBlock>
__global__ void __launch_bounds__(kBlock) add(const T* a, const T* b, T* c, int n) {
  int i = blockIdx.x * kBlock + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
}  // namespace ops
)";
  v1::Verdict verdict =
      Evaluate("vector_add",
               "// @launch ops::add<float, 128><<<ceil_div(N, 128), 128>>>(a, b, c, N)\n" + kernel,
               /*skip_timing=*/false);
  EXPECT_TRUE(verdict.correct()) << verdict.error();
  EXPECT_EQ(verdict.stage(), "passed");
  ASSERT_EQ(verdict.compile().kernels_size(), 1);
  EXPECT_EQ(verdict.compile().kernels(0).name_expression(), "ops::add<float, 128>");
  EXPECT_GT(verdict.timing().candidate().samples(), 0u);

  // kBlock is what the kernel strides by: a block of another size skips
  // elements, and the instance's __launch_bounds__ refuses a larger one.
  verdict =
      Evaluate("vector_add",
               "// @launch ops::add<float, 64><<<ceil_div(N, 128), 128>>>(a, b, c, N)\n" + kernel);
  EXPECT_EQ(verdict.stage(), "compile");
  EXPECT_THAT(verdict.error(), HasSubstr("__launch_bounds__(64)"));
  verdict =
      Evaluate("vector_add",
               "// @launch ops::add<float, 256><<<ceil_div(N, 256), 128>>>(a, b, c, N)\n" + kernel);
  EXPECT_EQ(verdict.stage(), "correctness") << verdict.error();
  // The instance's types are checked: double* for an f32 buffer.
  verdict = Evaluate(
      "vector_add",
      "// @launch ops::add<double, 128><<<ceil_div(N, 128), 128>>>(a, b, c, N)\n" + kernel);
  EXPECT_EQ(verdict.stage(), "compile");
  EXPECT_THAT(verdict.error(), HasSubstr("holds f32"));
  // Arguments that name nothing are the compiler's error; none at all, the plan's.
  verdict = Evaluate(
      "vector_add",
      "// @launch ops::add<float, kNope><<<ceil_div(N, 128), 128>>>(a, b, c, N)\n" + kernel);
  EXPECT_EQ(verdict.stage(), "compile");
  EXPECT_THAT(verdict.error(), HasSubstr("in the template arguments of a launched kernel"));
  EXPECT_THAT(verdict.error(), Not(HasSubstr("not plan expressions")));
  // A problem parameter there: NVRTC's error, and why.
  verdict =
      Evaluate("vector_add",
               "// @launch ops::add<float, N><<<ceil_div(N, 128), 128>>>(a, b, c, N)\n" + kernel);
  EXPECT_EQ(verdict.stage(), "compile");
  EXPECT_THAT(verdict.error(), HasSubstr("identifier \"N\" is undefined"));
  EXPECT_THAT(verdict.error(), HasSubstr("not plan expressions: pass N as a kernel argument"));
  verdict = Evaluate("vector_add",
                     "// @launch ops::add<<<ceil_div(N, 128), 128>>>(a, b, c, N)\n" + kernel);
  EXPECT_EQ(verdict.stage(), "compile");
  EXPECT_THAT(verdict.error(), HasSubstr("is a template: name its template arguments"));

  // Compile instantiates what the source's @launch lines name, and what the
  // request adds.
  v1::CompileRequest compile;
  compile.set_source("// @launch ops::add<float, 128><<<1, 128>>>(a, b, c, N)\n" + kernel);
  compile.mutable_options()->add_name_expressions("ops::add<double, 64>");
  absl::StatusOr<v1::CompileResult> compiled = engine_->Compile(compile, CallContext{});
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_TRUE(compiled->success()) << compiled->log();
  std::vector<std::string> instances;
  for (const v1::KernelInfo& k : compiled->kernels()) instances.push_back(k.name_expression());
  std::sort(instances.begin(), instances.end());
  EXPECT_EQ(instances, (std::vector<std::string>{"ops::add<double, 64>", "ops::add<float, 128>"}));
}

// NVRTC suggests options a submission cannot pass; the verdict says what to
// write instead.
TEST_F(EngineTest, CompileErrorsSuggestingRefusedOptionsSayWhatToDo) {
  v1::Verdict verdict = Evaluate("vector_add", R"(
// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
__global__ void add(const float* a, const float* b, float* c, int n) {
  auto f = [] __device__ (float v) { return v; };
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = f(a[i]) + b[i];
}
)");
  EXPECT_EQ(verdict.stage(), "compile");
  EXPECT_THAT(verdict.error(), HasSubstr("--extended-lambda is not an option here"));
  verdict = Evaluate("vector_add", R"(
// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
float twice(float v) { return 2 * v; }
__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = twice(a[i]) * 0.5f + b[i];
}
)");
  EXPECT_EQ(verdict.stage(), "compile");
  EXPECT_THAT(verdict.error(), HasSubstr("mark helper functions __device__"));
  // A kernel written as a PyTorch extension: NVRTC has no host library.
  verdict = Evaluate("vector_add", R"(
#include <torch/extension.h>
// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)");
  EXPECT_EQ(verdict.stage(), "compile");
  EXPECT_THAT(verdict.error(), HasSubstr("cannot open source file \"torch/extension.h\""));
  EXPECT_THAT(verdict.error(), HasSubstr("drop host includes, host wrappers, main() and PyTorch"));
}

TEST_F(EngineTest, BadLaunchPlanIsACompileVerdictNamingTheLine) {
  const char* source =
      "\n// @launch add<<<1, 2048>>>(a, b, c, N)\n"
      "extern \"C\" __global__ void add(const float* a, const float* b, float* c, int n) {}\n";
  v1::Verdict verdict = Evaluate("vector_add", source);
  EXPECT_EQ(verdict.stage(), "compile");
  EXPECT_NE(verdict.error().find("line 2"), std::string::npos) << verdict.error();

  v1::Verdict no_plan = Evaluate("vector_add", "extern \"C\" __global__ void add() {}\n");
  EXPECT_EQ(no_plan.stage(), "compile");
  // The hint is a launch in this problem's own names.
  EXPECT_NE(no_plan.error().find("`// @launch my_kernel<<<"), std::string::npos) << no_plan.error();
  EXPECT_NE(no_plan.error().find("(a, b, c, N)`"), std::string::npos) << no_plan.error();
  EXPECT_NE(no_plan.error().find("problems show vector_add"), std::string::npos) << no_plan.error();
}

// The plan is bound to the signature the source parser sees; the compiled
// kernel's parameters (NVRTC's layout) must be the ones the arguments fill,
// one for one and size for size: on a GPU the driver takes the sizes from
// the image, and read past the argument array (or copied worker memory into
// a larger parameter) when a macro declared the kernel the parser missed.
TEST_F(EngineTest, APlanMustFitTheCompiledKernelsParameters) {
  const char* source = R"(
// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
#if 0
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {}
#else
#define KERNEL(name) extern "C" __global__ void name(const float* a, const float* b, float* c, \
                                                     int n, double secret_keys[8])
KERNEL(add) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
#endif
)";
  v1::Verdict verdict = Evaluate("vector_add", source);
  EXPECT_EQ(verdict.stage(), "compile") << verdict.ShortDebugString();
  EXPECT_NE(verdict.error().find("the compiled kernel takes 5 parameters of 8, 8, 8, 4, 8 bytes, "
                                 "the plan passes 4 of 8, 8, 8, 4"),
            std::string::npos)
      << verdict.error();
  // A plan that fits is judged as before.
  v1::Verdict fits = Evaluate("vector_add", R"(
// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)");
  EXPECT_TRUE(fits.correct()) << fits.error();
}

// What a GPU refuses at launch the CPU backend never launches: a block over
// the register file with the kernel's compiled registers (1024 threads of a
// kernel keeping 96 floats live), and a plan over a GPU's limits on the
// shape a GPU times, which this backend does not run (grid.y = N / 256 is
// 1024 on the CPU timed shape, 65536 on a GPU's). Sweep 6: both passed.
TEST_F(EngineTest, APlanAGpuWouldRefuseFailsOnEveryBackend) {
  v1::Verdict registers = Evaluate("relu", R"(
// @launch relu96<<<ceil_div(N, 1024 * 96), 1024>>>(x, y, N)
__global__ void relu96(const float* __restrict__ x, float* __restrict__ y, long long n) {
  const long long base = ((long long)blockIdx.x * 1024 + threadIdx.x) * 96;
  float v[96];
#pragma unroll
  for (int k = 0; k < 96; ++k) v[k] = base + k < n ? x[base + k] : 0.0f;
  float t = 0.0f;
#pragma unroll
  for (int k = 0; k < 96; ++k) t += v[k] * v[k];
  const float bump = t < 0.0f ? 1.0f : 0.0f;
#pragma unroll
  for (int k = 0; k < 96; ++k) if (base + k < n) y[base + k] = fmaxf(v[k], 0.0f) + bump;
}
)");
  EXPECT_EQ(registers.stage(), "compile") << registers.ShortDebugString();
  EXPECT_THAT(registers.error(), HasSubstr("registers per thread: at most"));
  EXPECT_THAT(registers.error(), HasSubstr("threads fit a block's 65536 registers"));

  v1::Verdict grid = Evaluate("vector_add", R"(
// @launch add<<<dim3(1, ceil_div(N, 256)), 256>>>(a, b, c, N)
__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.y * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)",
                              /*skip_timing=*/false);
  EXPECT_EQ(grid.stage(), "compile") << grid.ShortDebugString();
  EXPECT_THAT(grid.error(), HasSubstr("grid.y = 65536 exceeds the limit 65535"));
  EXPECT_THAT(grid.error(), HasSubstr("the one a GPU times"));
}

// A correct kernel whose first launch in a run sleeps 3 s (one runner
// process runs every case of a correctness run).
constexpr char kSlowVectorAdd[] = R"(
#if __has_include(<unistd.h>)  // host code: the CPU build only
#include <unistd.h>
#endif
// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#if __has_include(<unistd.h>)  // host code: the CPU build only
  static bool slept = false;
  if (i == 0 && !slept) {
    slept = true;
    ::usleep(3000000);
  }
#endif
  if (i < n) c[i] = a[i] + b[i];
}
)";

// The caller's deadline bounds the kernel's run: the worker is not held for a
// caller that has gone (before, the run went on to the 20 s limit, and the
// deadline went unnoticed until the end). A run the deadline cut short is an
// error, not a "timeout" verdict kept for identical requests; an identical
// request waiting on it is evaluated anew rather than given its error.
TEST_F(EngineTest, TheCallersDeadlineEndsTheRunAndIsNotTheNextCallersVerdict) {
  v1::EvaluateRequest request;
  request.set_problem_id("vector_add");
  request.mutable_submission()->set_source(kSlowVectorAdd);
  request.set_skip_timing(true);
  request.set_seed(next_seed_++);
  std::promise<absl::StatusOr<v1::Verdict>> leader, follower;
  CallContext hurried;
  hurried.deadline = absl::Now() + absl::Seconds(1);
  engine_->EvaluateAsync(request, hurried,
                         [&](absl::StatusOr<v1::Verdict> v) { leader.set_value(std::move(v)); });
  engine_->EvaluateAsync(request, CallContext{},
                         [&](absl::StatusOr<v1::Verdict> v) { follower.set_value(std::move(v)); });
  const absl::StatusOr<v1::Verdict> first = leader.get_future().get();
  EXPECT_TRUE(absl::IsDeadlineExceeded(first.status())) << first.status();
  const absl::StatusOr<v1::Verdict> second = follower.get_future().get();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->correct()) << second->stage() << ": " << second->error();
  // The verdict kept for the key is the full run's.
  absl::StatusOr<v1::Verdict> third = engine_->Evaluate(request, CallContext{});
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_TRUE(third->correct()) << third->stage() << ": " << third->error();
  EXPECT_TRUE(third->deduplicated());
}

// Timing cut short by the caller's deadline ends the call with
// DEADLINE_EXCEEDED: the CPU worker used to stop sampling there and return
// what it had, a verdict on fewer samples than the stopping rule asks (and
// kept for identical requests). Each timed run of this kernel takes 1 s of
// wall time (vector_add's CPU timed N is 2^18), so timing outlasts the 3 s.
TEST_F(EngineTest, TheCallersDeadlineDuringTimingIsAnErrorNotAVerdictOnFewerSamples) {
  v1::EvaluateRequest request;
  request.set_problem_id("vector_add");
  request.mutable_submission()->set_source(R"(
#if __has_include(<unistd.h>)  // host code: the CPU build only
#include <unistd.h>
#endif
// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#if __has_include(<unistd.h>)  // host code: the CPU build only
  if (n == 262144 && i == 0) ::usleep(1000000);
#endif
  if (i < n) c[i] = a[i] + b[i];
}
)");
  request.set_seed(next_seed_++);
  CallContext hurried;
  hurried.deadline = absl::Now() + absl::Seconds(3);
  absl::StatusOr<v1::Verdict> verdict = engine_->Evaluate(request, hurried);
  EXPECT_TRUE(absl::IsDeadlineExceeded(verdict.status()))
      << verdict.status() << " " << (verdict.ok() ? verdict->ShortDebugString() : std::string());
}

// A time limit too short for the problem's own reference is not an internal
// error: the request's own limit is its bad input (INVALID_ARGUMENT naming
// the field; the server's limit would be a FAILED_PRECONDITION). The
// reference here (an inline vector_add) takes 3 s; the limit is 0.3 s.
TEST_F(EngineTest, ARequestsLimitTooShortForTheReferenceIsAnInvalidArgument) {
  v1::EvaluateRequest request = InlineVectorAddRequest(*engine_, next_seed_++);
  request.mutable_problem()->clear_reference_plan();
  request.mutable_problem()->set_reference_source(kSlowVectorAdd);
  request.mutable_limits()->set_timeout_seconds(0.3);
  absl::StatusOr<v1::Verdict> verdict = engine_->Evaluate(request, CallContext{});
  EXPECT_TRUE(absl::IsInvalidArgument(verdict.status())) << verdict.status();
  EXPECT_NE(verdict.status().message().find("limits.timeout_seconds: "), std::string::npos)
      << verdict.status();
  EXPECT_NE(verdict.status().message().find("too short"), std::string::npos) << verdict.status();
}

TEST_F(EngineTest, PartialCreditFollowsTheRubric) {
  v1::EvaluateRequest request;
  request.set_problem_id("vector_add");
  request.mutable_submission()->set_source(R"(
// @launch lazy<<<1, 32>>>(a, b, c, N)
extern "C" __global__ void lazy(const float* a, const float* b, float* c, int n) {}
)");
  request.set_skip_timing(true);
  request.mutable_reward()->set_partial_credit(true);
  auto verdict = engine_->Evaluate(request, CallContext{});
  ASSERT_TRUE(verdict.ok());
  EXPECT_EQ(verdict->stage(), "correctness");
  EXPECT_DOUBLE_EQ(verdict->reward(), 0.05);
}

TEST_F(EngineTest, RequestErrorsAreStatusesNotVerdicts) {
  v1::EvaluateRequest unknown;
  unknown.set_problem_id("no_such_problem");
  unknown.mutable_submission()->set_source(kVectorAdd);
  EXPECT_TRUE(absl::IsNotFound(engine_->Evaluate(unknown, CallContext{}).status()));

  v1::EvaluateRequest empty;
  empty.set_problem_id("vector_add");
  EXPECT_TRUE(absl::IsInvalidArgument(engine_->Evaluate(empty, CallContext{}).status()));

  v1::EvaluateRequest cuda;
  cuda.set_problem_id("vector_add");
  cuda.mutable_submission()->set_source(kVectorAdd);
  cuda.set_backend(v1::BACKEND_CUDA);
  EXPECT_TRUE(absl::IsFailedPrecondition(engine_->Evaluate(cuda, CallContext{}).status()));

  CallContext expired;
  expired.deadline = absl::Now() - absl::Seconds(1);
  v1::EvaluateRequest ok;
  ok.set_problem_id("vector_add");
  ok.mutable_submission()->set_source(kVectorAdd);
  EXPECT_TRUE(absl::IsDeadlineExceeded(engine_->Evaluate(ok, expired).status()));
}

TEST_F(EngineTest, GroupSharesTheReferenceAndDeduplicates) {
  v1::EvaluateGroupRequest group;
  group.set_problem_id("vector_add");
  group.set_seed(7);
  group.add_submissions()->set_source(kVectorAdd);
  group.add_submissions()->set_source(kVectorAdd);  // a GRPO repeat
  group.add_submissions()->set_source(R"(
// @launch lazy<<<1, 32>>>(a, b, c, N)
extern "C" __global__ void lazy(const float* a, const float* b, float* c, int n) {}
)");
  auto response = engine_->EvaluateGroup(group, CallContext{});
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->verdicts_size(), 3);
  EXPECT_TRUE(response->verdicts(0).correct()) << response->verdicts(0).error();
  EXPECT_TRUE(response->verdicts(1).correct());
  EXPECT_TRUE(response->verdicts(1).deduplicated());
  EXPECT_FALSE(response->verdicts(2).correct());
  EXPECT_GT(response->reference_timing().samples(), 0u);
}

// A candidate whose timed buffers cannot be held (an unused 1.2 GB scratch
// buffer: the CPU backend maps every program's buffers for every input set,
// bounded in all) made the whole group's timing fail with
// RESOURCE_EXHAUSTED, so no sibling got a verdict (and the Python reward
// function took it for a full queue and retried the group). Each candidate
// is timed again alone; alone, it is that kernel's runtime failure.
TEST_F(EngineTest, ACandidateWhoseTimedBuffersDoNotFitCostsOnlyItself) {
  v1::EvaluateGroupRequest group;
  group.set_problem_id("vector_add");
  group.set_seed(9);
  group.add_submissions()->set_source(kVectorAdd);
  group.add_submissions()->set_source(
      absl::StrCat("// @scratch junk: u8[1200000000]\n", kVectorAdd));
  auto response = engine_->EvaluateGroup(group, CallContext{});
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->verdicts_size(), 2);
  const v1::Verdict& honest = response->verdicts(0);
  EXPECT_TRUE(honest.correct()) << honest.stage() << ": " << honest.error();
  EXPECT_GT(honest.timing().candidate().samples(), 0u);
  const v1::Verdict& hoarder = response->verdicts(1);
  EXPECT_FALSE(hoarder.correct());
  EXPECT_EQ(hoarder.stage(), "runtime") << hoarder.error();
  EXPECT_NE(hoarder.error().find("exceed"), std::string::npos) << hoarder.error();
}

// The run time limit is part of what makes two requests the same: a verdict
// reached under a limit of 1 s is not the answer to a request with the
// default limit (a caller could otherwise set another caller's verdict).
TEST_F(EngineTest, ARequestsTimeLimitIsPartOfItsIdentity) {
  v1::EvaluateRequest request;
  request.set_problem_id("vector_add");
  request.mutable_submission()->set_source(kSlowVectorAdd);
  request.set_skip_timing(true);
  request.set_seed(next_seed_++);
  v1::EvaluateRequest hurried = request;
  hurried.mutable_limits()->set_timeout_seconds(1);
  absl::StatusOr<v1::Verdict> first = engine_->Evaluate(hurried, CallContext{});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->stage(), "timeout") << first->error();
  absl::StatusOr<v1::Verdict> second = engine_->Evaluate(request, CallContext{});
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->deduplicated());
  EXPECT_TRUE(second->correct()) << second->stage() << ": " << second->error();
}

TEST_F(EngineTest, ACandidateCrashingWhileTimingLeavesTheRestOfItsGroupTimed) {
  // Correct in every correctness case, but writes far out of bounds in the
  // build that times: a fault that ends the backend's timing run for every
  // program of the group. It gets its runtime verdict; the others are timed
  // again without it. (The correctness run takes the timed shape too:
  // host code, which this suite's engine lets through, reads the runner's
  // command line: kTimingRunnerHostCode.)
  v1::EvaluateGroupRequest group;
  group.set_problem_id("vector_add");
  group.set_seed(8);
  group.add_submissions()->set_source(absl::StrCat(test_support::kTimingRunnerHostCode, R"(
// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
#if __has_include(<unistd.h>)  // host code: the CPU build only
  if (i == 0 && TimingRunner()) c[i + (1LL << 40)] = 0.f;
#endif
  if (i < n) c[i] = a[i] + b[i];
}
)"));
  group.add_submissions()->set_source(kVectorAdd);
  group.add_submissions()->set_source(R"(
// @launch add_twice<<<ceil_div(N, 256), 256>>>(a, b, c, N)
extern "C" __global__ void add_twice(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = b[i] + a[i];
}
)");
  auto response = engine_->EvaluateGroup(group, CallContext{});
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->verdicts_size(), 3);
  const v1::Verdict& crashed = response->verdicts(0);
  EXPECT_FALSE(crashed.correct());
  EXPECT_EQ(crashed.stage(), "runtime");
  EXPECT_NE(crashed.error().find("while timing"), std::string::npos) << crashed.error();
  EXPECT_TRUE(crashed.correctness().passed()) << "it passed correctness before timing";
  for (int i : {1, 2}) {
    const v1::Verdict& verdict = response->verdicts(i);
    EXPECT_TRUE(verdict.correct()) << i << ": " << verdict.stage() << " " << verdict.error();
    EXPECT_EQ(verdict.stage(), "passed");
    EXPECT_GT(verdict.speedup(), 0) << i;
    EXPECT_GT(verdict.timing().candidate().samples(), 0u) << i;
  }
}

TEST_F(EngineTest, IdenticalSubmissionsInFlightAreJudgedOnce) {
  v1::EvaluateRequest request;
  request.set_problem_id("relu");
  request.set_seed(99);
  request.set_skip_timing(true);
  request.mutable_submission()->set_source(R"(
// @launch relu_k<<<ceil_div(N, 128), 128>>>(x, y, N)
extern "C" __global__ void relu_k(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
)");
  std::vector<absl::StatusOr<v1::Verdict>> results(4, absl::UnknownError(""));
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { results[i] = engine_->Evaluate(request, CallContext{}); });
  }
  for (auto& t : threads) t.join();
  int deduplicated = 0;
  for (auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->correct()) << r->error();
    deduplicated += r->deduplicated();
  }
  EXPECT_GE(deduplicated, 3);
}

// The source limit is on submissions: the problem's own reference (vector_add's
// is over 1000 bytes) still builds under a limit smaller than it.
TEST(EngineSourceLimitTest, AppliesToSubmissionsNotToTheProblemsReference) {
  EngineOptions options = CpuEngineOptions();
  options.max_source_bytes = 1000;
  auto engine = Engine::Create(options);
  ASSERT_TRUE(engine.ok()) << engine.status();
  v1::GetProblemRequest get;
  get.set_problem_id("vector_add");
  auto problem = (*engine)->GetProblem(get);
  ASSERT_TRUE(problem.ok()) << problem.status();
  ASSERT_GT(problem->problem().reference_source().size(), options.max_source_bytes);

  v1::EvaluateRequest request;
  request.set_problem_id("vector_add");
  request.set_skip_timing(true);
  request.mutable_submission()->set_source(kVectorAdd);
  auto verdict = (*engine)->Evaluate(request, CallContext{});
  ASSERT_TRUE(verdict.ok()) << verdict.status();
  EXPECT_TRUE(verdict->correct()) << verdict->error();

  request.mutable_submission()->set_source(std::string(kVectorAdd) + std::string(1000, ' '));
  auto too_long = (*engine)->Evaluate(request, CallContext{});
  EXPECT_EQ(too_long.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(too_long.status().message().find("1000-byte limit"), std::string_view::npos)
      << too_long.status();
}

// A source whose preprocessing alone outlasts any compile limit (2^23
// tokens): it costs the compile stage its whole limit each time.
std::string SlowToCompile(int variant) {
  std::string source = "#define A0 x+x\n";
  for (int i = 1; i <= 23; ++i)
    absl::StrAppend(&source, "#define A", i, " A", i - 1, "+A", i - 1, "\n");
  absl::StrAppend(&source,
                  "// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)\n"
                  "__device__ float x;\n"
                  "extern \"C\" __global__ void add(const float* a, const float* b, float* c, "
                  "int n) { c[0] = A23; }\n// variant ",
                  variant, "\n");
  return source;
}

// An engine where one client compiles one source at a time (the order is
// the engine's; two reserve threads, the default, for clients with none
// running), a compile limit of 3 s (SlowToCompile reaches it) and an
// observer counting the compiles that took 1 s or more.
class EngineFairnessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EngineOptions options = CpuEngineOptions();
    options.compile_workers = 1;
    options.compile_timeout_seconds = 3;
    options.observer = observer_;
    auto created = Engine::Create(options);
    ASSERT_TRUE(created.ok()) << created.status();
    engine_ = *std::move(created);
  }

  // Starts "client-a"'s group of `count` SlowToCompile sources (every
  // verdict a compile failure) and waits until its first compile has begun;
  // `done` runs when the group is answered.
  void StartSlowGroup(int count, int first_variant, std::function<void()> done,
                      const std::string& client_id = "client-a") {
    v1::EvaluateGroupRequest group;
    group.set_problem_id("vector_add");
    group.set_skip_timing(true);
    for (int i = 0; i < count; ++i) {
      group.add_submissions()->set_source(SlowToCompile(first_variant + i));
    }
    CallContext a;
    a.client_id = client_id;
    const int begun_before = observer_->compiles_begun.load();
    engine_->EvaluateGroupAsync(
        group, a, [done = std::move(done)](absl::StatusOr<v1::EvaluateGroupResponse> response) {
          EXPECT_TRUE(response.ok()) << response.status();
          if (response.ok()) {
            for (const v1::Verdict& verdict : response->verdicts()) {
              EXPECT_EQ(verdict.stage(), "compile");
            }
          }
          done();
        });
    EXPECT_TRUE(WaitUntilPasses(observer_->compiles_begun, begun_before))
        << "the group's first compile never began";
  }

  // A vector_add evaluation (correctness only) run once first, so that the
  // reference and the compiled candidate are at hand (compile caches): a
  // race between it and slow compiles is between the compile turns alone,
  // whatever the machine's load does to the compilers' speed. Returned with
  // another seed (not the verdict cache's).
  v1::EvaluateRequest WarmedSingle() {
    v1::EvaluateRequest single;
    single.set_problem_id("vector_add");
    single.set_skip_timing(true);
    single.mutable_submission()->set_source(kVectorAdd);
    single.set_seed(1);
    absl::StatusOr<v1::Verdict> warm = engine_->Evaluate(single, CallContext{});
    EXPECT_TRUE(warm.ok()) << warm.status();
    if (warm.ok()) {
      EXPECT_TRUE(warm->correct()) << warm->error();
    }
    single.set_seed(2);
    return single;
  }

  std::shared_ptr<CountingObserver> observer_ = std::make_shared<CountingObserver>();
  std::unique_ptr<Engine> engine_;
};

// A group whose deadline comes while its kernels still compile is answered
// by then too: every candidate "not_evaluated" (none is read from a compile
// in progress), not DEADLINE_EXCEEDED once the compile limit (3 s) is over.
TEST_F(EngineFairnessTest, AGroupWhoseDeadlineComesWhileItCompilesIsAnsweredByIt) {
  v1::EvaluateGroupRequest group;
  group.set_problem_id("vector_add");
  group.set_skip_timing(true);
  group.add_submissions()->set_source(SlowToCompile(200));
  group.add_submissions()->set_source(SlowToCompile(201));
  CallContext a;
  a.client_id = "client-a";
  constexpr double kDeadlineSeconds = 2;
  a.deadline = absl::Now() + absl::Seconds(kDeadlineSeconds);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<v1::EvaluateGroupResponse> response = engine_->EvaluateGroup(group, a);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_LT(seconds, kDeadlineSeconds) << "the answer came after the caller's deadline";
  ASSERT_EQ(response->verdicts_size(), 2);
  for (const v1::Verdict& verdict : response->verdicts()) {
    EXPECT_EQ(verdict.stage(), "not_evaluated") << verdict.error();
    EXPECT_NE(verdict.error().find("before its kernels were compiled (0 of 2"), std::string::npos)
        << verdict.error();
    EXPECT_EQ(verdict.reward(), 0);
  }
  // The compiles still running end on their own; the engine serves on.
  const v1::EvaluateRequest single = WarmedSingle();
  absl::StatusOr<v1::Verdict> passed = engine_->Evaluate(single, {});
  ASSERT_TRUE(passed.ok()) << passed.status();
  EXPECT_TRUE(passed->correct()) << passed->error();
}

TEST_F(EngineFairnessTest, OneClientsSlowCompilesDoNotHoldAnotherClientsEvaluation) {
  Engine& engine = *engine_;
  CountingObserver* observer = observer_.get();
  const v1::EvaluateRequest single = WarmedSingle();
  if (HasFailure()) return;

  std::atomic<int> finished{0};
  std::promise<int> group_done;
  StartSlowGroup(4, 0, [&] { group_done.set_value(++finished); });

  CallContext b;
  b.client_id = "client-b";
  std::promise<int> single_done;
  std::atomic<int> slow_compiles_before_single{-1};
  engine.EvaluateAsync(single, b, [&](absl::StatusOr<v1::Verdict> verdict) {
    slow_compiles_before_single = observer->slow_compiles.load();
    EXPECT_TRUE(verdict.ok()) << verdict.status();
    if (verdict.ok()) {
      EXPECT_TRUE(verdict->correct()) << verdict->error();
    }
    single_done.set_value(++finished);
  });
  // First in, first out, the single compile came after all four (12 s) and
  // the device waited for the group's compiles before taking it: it finished
  // second. Clients taking turns, it compiles after two of them (the group's
  // second was next in line when it came) and runs while the rest compile.
  EXPECT_EQ(single_done.get_future().get(), 1) << "the single evaluation waited for the group";
  EXPECT_EQ(group_done.get_future().get(), 2);
  // And with a reserve compile thread it did not wait for the group's first
  // compile (3 s) to give up a thread: its own compile (cached) ran beside it.
  EXPECT_EQ(slow_compiles_before_single.load(), 0)
      << "the single evaluation waited for a slow compile to end";
  EXPECT_EQ(observer->slow_compiles.load(), 4);
}

TEST(EngineAdmissionTest, RequestsAreAdmittedWhileTheBytesTheyHoldFitTheBound) {
  EngineOptions options = CpuEngineOptions();
  options.compile_workers = 1;
  options.compile_timeout_seconds = 3;
  options.max_admitted_bytes = 96 << 10;
  auto observer = std::make_shared<CountingObserver>();
  options.observer = observer;
  auto created = Engine::Create(options);
  ASSERT_TRUE(created.ok()) << created.status();
  Engine& engine = **created;
  const std::string padding = "// " + std::string(60 << 10, 'p') + "\n";

  // Client a's 60 KiB source, held while it compiles (3 s, the limit).
  v1::EvaluateRequest slow;
  slow.set_problem_id("vector_add");
  slow.set_skip_timing(true);
  slow.mutable_submission()->set_source(padding + SlowToCompile(0));
  CallContext a;
  a.client_id = "client-a";
  std::promise<void> slow_done;
  engine.EvaluateAsync(slow, a, [&](absl::StatusOr<v1::Verdict> verdict) {
    EXPECT_TRUE(verdict.ok()) << verdict.status();
    slow_done.set_value();
  });
  EXPECT_TRUE(WaitUntilPasses(observer->compiles_begun, 0)) << "its compile never began";

  // Client b's 60 KiB would pass the 96 KiB bound: refused, a code to retry.
  CallContext b;
  b.client_id = "client-b";
  v1::EvaluateRequest padded;
  padded.set_problem_id("vector_add");
  padded.set_skip_timing(true);
  padded.mutable_submission()->set_source(padding + kVectorAdd);
  absl::StatusOr<v1::Verdict> refused = engine.Evaluate(padded, b);
  EXPECT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("would pass the server's bound"), std::string::npos)
      << refused.status();
  v1::CompileRequest compile;
  compile.set_source(padding + kVectorAdd + "// not cached\n");
  EXPECT_TRUE(absl::IsResourceExhausted(engine.Compile(compile, b).status()));
  // A small request still fits beside client a's.
  v1::EvaluateRequest small = padded;
  small.mutable_submission()->set_source(kVectorAdd);
  absl::StatusOr<v1::Verdict> fits = engine.Evaluate(small, b);
  ASSERT_TRUE(fits.ok()) << fits.status();
  EXPECT_TRUE(fits->correct()) << fits->error();

  // Once client a is answered, its bytes are free again.
  slow_done.get_future().get();
  absl::StatusOr<v1::Verdict> admitted = engine.Evaluate(padded, b);
  ASSERT_TRUE(admitted.ok()) << admitted.status();
  EXPECT_TRUE(admitted->correct()) << admitted->error();
  EXPECT_TRUE(engine.Compile(compile, b).ok());
}

// Two clients' slow sources hold the general compile thread and one reserve
// thread; a third client's evaluation compiles on the other reserve thread
// at once (with one reserve thread, the one spare of before, it waited for a
// slow compile to end).
TEST_F(EngineFairnessTest, TwoClientsSlowCompilesDoNotHoldAThirdClientsEvaluation) {
  Engine& engine = *engine_;
  CountingObserver* observer = observer_.get();
  const v1::EvaluateRequest single = WarmedSingle();
  if (HasFailure()) return;

  std::promise<void> a_done, b_done;
  StartSlowGroup(
      2, 40, [&] { a_done.set_value(); }, "client-a");
  StartSlowGroup(
      2, 50, [&] { b_done.set_value(); }, "client-b");
  CallContext c;
  c.client_id = "client-c";
  std::promise<void> single_done;
  std::atomic<int> slow_compiles_before_single{-1};
  engine.EvaluateAsync(single, c, [&](absl::StatusOr<v1::Verdict> verdict) {
    slow_compiles_before_single = observer->slow_compiles.load();
    EXPECT_TRUE(verdict.ok()) << verdict.status();
    if (verdict.ok()) {
      EXPECT_TRUE(verdict->correct()) << verdict->error();
    }
    single_done.set_value();
  });
  single_done.get_future().wait();
  a_done.get_future().wait();
  b_done.get_future().wait();
  EXPECT_EQ(slow_compiles_before_single.load(), 0)
      << "the third client's evaluation waited for a slow compile to end";
  EXPECT_EQ(observer->slow_compiles.load(), 4);
}

TEST_F(EngineFairnessTest, ACompileCallTakesItsTurnBesideAnotherClientsSlowCompiles) {
  Engine& engine = *engine_;
  CountingObserver* observer = observer_.get();
  std::promise<void> group_done;
  StartSlowGroup(2, 10, [&] { group_done.set_value(); });

  v1::CompileRequest compile;
  compile.set_source(kVectorAdd);
  CallContext b;
  b.client_id = "client-b";
  absl::StatusOr<v1::CompileResult> result = engine.Compile(compile, b);
  const int slow_compiles_before = observer->slow_compiles.load();
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->success()) << result->log();
  EXPECT_EQ(slow_compiles_before, 0) << "the Compile call waited for a slow compile to end";

  // Client a's own compiles fill its thread and line, but a source it
  // compiled before is answered from the cache at once, not after them.
  CallContext a;
  a.client_id = "client-a";
  absl::StatusOr<v1::CompileResult> cached = engine.Compile(compile, a);
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_TRUE(cached->cache_hit());
  EXPECT_EQ(observer->slow_compiles.load(), 0) << "a cached Compile waited for a slow compile";

  // A caller gone or out of time by its turn costs no compile.
  CallContext gone = b;
  gone.cancelled = [] { return true; };
  EXPECT_TRUE(absl::IsCancelled(engine.Compile(compile, gone).status()));
  CallContext late = b;
  late.deadline = absl::Now() - absl::Seconds(1);
  EXPECT_TRUE(absl::IsDeadlineExceeded(engine.Compile(compile, late).status()));
  group_done.get_future().wait();
}

// Shutdown with a Compile call and a group's compiles still queued: both are
// answered UNAVAILABLE without compiling (before, the pool was destroyed under
// a Compile call that could still submit to it).
TEST_F(EngineFairnessTest, CompilesQueuedAtShutdownAreAnsweredUnavailable) {
  std::promise<absl::Status> group_status;
  v1::EvaluateGroupRequest group;
  group.set_problem_id("vector_add");
  for (int i = 0; i < 3; ++i) group.add_submissions()->set_source(SlowToCompile(20 + i));
  CallContext a;
  a.client_id = "client-a";
  const int begun_before = observer_->compiles_begun.load();
  engine_->EvaluateGroupAsync(group, a, [&](absl::StatusOr<v1::EvaluateGroupResponse> response) {
    group_status.set_value(response.status());
  });
  EXPECT_TRUE(WaitUntilPasses(observer_->compiles_begun, begun_before))
      << "the group's first compile never began";
  std::promise<absl::Status> compile_status;
  v1::CompileRequest compile;
  compile.set_source(kVectorAdd);
  engine_->CompileAsync(compile, a, [&](absl::StatusOr<v1::CompileResult> result) {
    compile_status.set_value(result.status());
  });
  engine_->Shutdown(absl::Now() + absl::Seconds(5));
  EXPECT_TRUE(absl::IsUnavailable(compile_status.get_future().get()));
  EXPECT_TRUE(absl::IsUnavailable(group_status.get_future().get()));
  EXPECT_LE(observer_->slow_compiles.load(), 1) << "queued compiles ran during the shutdown";
  // Refused after it, not crashed.
  EXPECT_TRUE(absl::IsUnavailable(engine_->Compile(compile, a).status()));
}

TEST_F(EngineTest, ACustomProblemsVerdictsAreFlaggedAndItsOtherFieldsBounded) {
  // The built-in id, sent inline.
  v1::EvaluateRequest request = InlineVectorAddRequest(*engine_, next_seed_++);
  absl::StatusOr<v1::Verdict> custom = engine_->Evaluate(request, CallContext{});
  ASSERT_TRUE(custom.ok()) << custom.status();
  EXPECT_TRUE(custom->correct()) << custom->error();
  EXPECT_EQ(custom->problem_id(), "vector_add");
  EXPECT_NE(std::find(custom->flags().begin(), custom->flags().end(), "custom_problem"),
            custom->flags().end());
  const v1::Verdict built_in = Evaluate("vector_add", kVectorAdd);
  EXPECT_EQ(std::find(built_in.flags().begin(), built_in.flags().end(), "custom_problem"),
            built_in.flags().end());

  // A title (tags, labels, ...) of 100 KiB: refused, not held while queued.
  request.mutable_problem()->set_title(std::string(100 << 10, 't'));
  absl::StatusOr<v1::Verdict> padded = engine_->Evaluate(request, CallContext{});
  EXPECT_TRUE(absl::IsInvalidArgument(padded.status())) << padded.status();
  EXPECT_NE(padded.status().message().find("over the 65536-byte limit"), std::string::npos)
      << padded.status();
}

TEST_F(EngineTest, ACustomProblemTooLargeForTheBackendIsAPermanentError) {
  // Correctness outputs of 2 x 1.2 GB, over the CPU backend's 1 GiB: the
  // caller's problem cannot run here, whenever it is retried (it was
  // RESOURCE_EXHAUSTED, a code clients retry).
  v1::EvaluateRequest request = InlineVectorAddRequest(*engine_, next_seed_++);
  v1::Problem& problem = *request.mutable_problem();
  problem.clear_correctness_shapes();
  v1::ShapeBinding* huge = problem.add_correctness_shapes();
  huge->set_label("huge");
  (*huge->mutable_values())["N"] = 300'000'000;
  problem.set_correctness_trials(2);
  absl::StatusOr<v1::Verdict> verdict = engine_->Evaluate(request, CallContext{});
  ASSERT_FALSE(verdict.ok()) << verdict->ShortDebugString();
  EXPECT_TRUE(absl::IsInvalidArgument(verdict.status())) << verdict.status();
  EXPECT_NE(verdict.status().message().find("do not fit this backend"), std::string::npos)
      << verdict.status();
  // The engine goes on.
  EXPECT_TRUE(Evaluate("vector_add", kVectorAdd).correct());
}

// A custom problem whose reference does not compile, or hangs, is the
// caller's mistake: INVALID_ARGUMENT (CLI exit 2). They were INTERNAL ("a
// bug") and FAILED_PRECONDITION (the server's set-up), both exit 3 (rt7 #4).
TEST_F(EngineTest, ACustomProblemsBrokenReferenceIsTheCallersError) {
  v1::EvaluateRequest request = InlineVectorAddRequest(*engine_, next_seed_++);
  request.mutable_problem()->set_reference_source(
      absl::StrReplaceAll(request.problem().reference_source(), {{"{", "{ undeclared_name;"}}));
  absl::StatusOr<v1::Verdict> verdict = engine_->Evaluate(request, CallContext{});
  ASSERT_FALSE(verdict.ok()) << verdict->ShortDebugString();
  EXPECT_TRUE(absl::IsInvalidArgument(verdict.status())) << verdict.status();
  EXPECT_NE(verdict.status().message().find("does not build"), std::string::npos)
      << verdict.status();
  EXPECT_TRUE(Evaluate("vector_add", kVectorAdd).correct());

  // A hanging one, under a server limit of 1 s.
  EngineOptions options = CpuEngineOptions();
  options.run_timeout_seconds = 1;
  auto short_limit = Engine::Create(options);
  ASSERT_TRUE(short_limit.ok()) << short_limit.status();
  request = InlineVectorAddRequest(**short_limit, next_seed_++);
  request.mutable_problem()->set_reference_source(absl::StrReplaceAll(
      request.problem().reference_source(), {{"{", "{ for (volatile int spin = 1; spin;) {}"}}));
  verdict = (*short_limit)->Evaluate(request, CallContext{});
  ASSERT_FALSE(verdict.ok()) << verdict->ShortDebugString();
  EXPECT_TRUE(absl::IsInvalidArgument(verdict.status())) << verdict.status();
  EXPECT_NE(verdict.status().message().find("did not finish within the time limit"),
            std::string::npos)
      << verdict.status();
}

// A limit below the shortest a run gets is refused, not raised to it (a
// 1e-9 s limit passed a kernel, "within the time limit of 0.05 s"; rt7 #18).
TEST_F(EngineTest, ALimitBelowTheShortestRunLimitIsRefused) {
  v1::EvaluateRequest request;
  request.set_problem_id("vector_add");
  request.mutable_submission()->set_source(kVectorAdd);
  request.mutable_limits()->set_timeout_seconds(1e-9);
  absl::StatusOr<v1::Verdict> verdict = engine_->Evaluate(request, CallContext{});
  ASSERT_FALSE(verdict.ok()) << verdict->ShortDebugString();
  EXPECT_TRUE(absl::IsInvalidArgument(verdict.status())) << verdict.status();
  EXPECT_NE(verdict.status().message().find("is below the shortest run limit, 0.05 s"),
            std::string::npos)
      << verdict.status();
}

TEST_F(EngineTest, ASubmissionsPlanAndOptionsAreBounded) {
  v1::EvaluateRequest request;
  request.set_problem_id("vector_add");
  request.mutable_submission()->set_source(kVectorAdd);
  request.mutable_submission()->mutable_launch_plan()->add_launches()->set_kernel(
      std::string(100 << 10, 'k'));
  absl::StatusOr<v1::Verdict> verdict = engine_->Evaluate(request, CallContext{});
  EXPECT_TRUE(absl::IsInvalidArgument(verdict.status())) << verdict.status();
  EXPECT_NE(verdict.status().message().find("submission: launch_plan and compile_options take 102"),
            std::string::npos)
      << verdict.status();

  v1::EvaluateGroupRequest group;
  group.set_problem_id("vector_add");
  group.add_submissions()->set_source(kVectorAdd);
  group.add_submissions()->set_source(kVectorAdd);
  group.mutable_submissions(1)->mutable_compile_options()->add_options(std::string(100 << 10, 'o'));
  absl::StatusOr<v1::EvaluateGroupResponse> response = engine_->EvaluateGroup(group, CallContext{});
  EXPECT_TRUE(absl::IsInvalidArgument(response.status())) << response.status();
  EXPECT_NE(response.status().message().find("submissions[1]: "), std::string::npos)
      << response.status();
}

// The CPU backend's costs are not a GPU's: threads without barriers run as a
// plain loop, so row_sum serialised to one thread per row (slow on a GPU)
// beat the parallel reference 160-190x there and earned 3.3 (red team,
// 2026-12-04). With reward_emulated_speed off, it is rewarded at speedup 1.
TEST(EngineOptionsTest, EmulatedSpeedupsCanBeLeftOutOfTheReward) {
  const char* serial_rows = R"(
// @launch rs<<<ROWS, 1>>>(x, y, ROWS, COLS)
__global__ void rs(const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
  const float* in = x + (long long)blockIdx.x * cols;
  float s = 0.f;
  for (int c = 0; c < cols; ++c) s += in[c];
  y[blockIdx.x] = s;
}
)";
  for (const bool rewarded : {true, false}) {
    EngineOptions options = CpuEngineOptions();
    options.reward_emulated_speed = rewarded;
    auto created = Engine::Create(options);
    ASSERT_TRUE(created.ok()) << created.status();
    v1::EvaluateRequest request;
    request.set_problem_id("row_sum");
    request.mutable_submission()->set_source(serial_rows);
    absl::StatusOr<v1::Verdict> verdict = (*created)->Evaluate(request, CallContext{});
    ASSERT_TRUE(verdict.ok()) << verdict.status();
    ASSERT_TRUE(verdict->correct()) << verdict->error();
    const auto& flags = verdict->flags();
    EXPECT_NE(std::find(flags.begin(), flags.end(), "emulated_timing"), flags.end());
    const bool flagged =
        std::find(flags.begin(), flags.end(), "emulated_speed_not_rewarded") != flags.end();
    // What was measured stays in the timing report either way.
    const double measured =
        verdict->timing().reference().median_us() / verdict->timing().candidate().median_us();
    EXPECT_GT(measured, 3) << "the emulator no longer favours serial code this much";
    if (rewarded) {
      EXPECT_FALSE(flagged);
      EXPECT_NEAR(verdict->speedup(), measured, 1e-9 * measured);
      EXPECT_GT(verdict->reward(), 1.8);  // 0.3 + log2(speedup), speedup > 3
    } else {
      EXPECT_TRUE(flagged);
      EXPECT_EQ(verdict->speedup(), 1.0);
      EXPECT_DOUBLE_EQ(verdict->reward(), 0.3);
    }
  }
}

TEST(EngineOptionsTest, PreparedReferencesAreKeptLeastRecentlyUsedFirstOut) {
  // Each custom problem brings a reference of its own; past the bound the
  // one used longest ago goes, not every one (they were all dropped at once
  // past 1,024 before, built-in problems' too).
  EngineOptions options = CpuEngineOptions();
  options.reference_cache_entries = 2;
  auto observer = std::make_shared<CountingObserver>();
  options.observer = observer;
  auto created = Engine::Create(options);
  ASSERT_TRUE(created.ok()) << created.status();
  Engine& engine = **created;
  uint64_t seed = 1;
  auto evaluate = [&](const std::string& title) {
    v1::EvaluateRequest request = InlineVectorAddRequest(engine, seed++);
    request.mutable_problem()->set_title(title);  // another problem, another reference
    absl::StatusOr<v1::Verdict> verdict = engine.Evaluate(request, CallContext{});
    ASSERT_TRUE(verdict.ok()) << verdict.status();
    EXPECT_TRUE(verdict->correct()) << verdict->error();
  };
  evaluate("a");
  evaluate("b");
  evaluate("a");  // hit: a is now the most recent
  evaluate("c");  // evicts b
  evaluate("a");  // hit
  EXPECT_EQ(observer->reference_hits.load(), 2);
  EXPECT_EQ(observer->reference_misses.load(), 3);
  evaluate("b");  // prepared again
  EXPECT_EQ(observer->reference_misses.load(), 4);
  EXPECT_EQ(observer->reference_hits.load(), 2);
}

TEST(EngineOptionsTest, CustomProblemsAndFixedSeedsCanBeRefusedAndFollowersAreBounded) {
  EngineOptions options = CpuEngineOptions();
  options.allow_custom_problems = false;
  options.allow_fixed_seeds = false;
  options.queue_capacity = 1;
  auto created = Engine::Create(options);
  ASSERT_TRUE(created.ok()) << created.status();
  Engine& engine = **created;

  v1::GetProblemRequest get;
  get.set_problem_id("vector_add");
  auto problem = engine.GetProblem(get);
  ASSERT_TRUE(problem.ok()) << problem.status();
  v1::EvaluateRequest custom;
  *custom.mutable_problem() = problem->problem();
  custom.mutable_submission()->set_source(kVectorAdd);
  EXPECT_TRUE(absl::IsPermissionDenied(engine.Evaluate(custom, CallContext{}).status()));

  // A fixed seed, single or group: refused before anything runs.
  v1::EvaluateRequest seeded;
  seeded.set_problem_id("vector_add");
  seeded.mutable_submission()->set_source(kVectorAdd);
  seeded.set_seed(42);
  absl::StatusOr<v1::Verdict> refused_seed = engine.Evaluate(seeded, CallContext{});
  EXPECT_TRUE(absl::IsPermissionDenied(refused_seed.status())) << refused_seed.status();
  EXPECT_NE(refused_seed.status().message().find("seed: this server draws"), std::string::npos)
      << refused_seed.status();
  v1::EvaluateGroupRequest seeded_group;
  seeded_group.set_problem_id("vector_add");
  seeded_group.add_submissions()->set_source(kVectorAdd);
  seeded_group.set_seed(42);
  EXPECT_TRUE(absl::IsPermissionDenied(engine.EvaluateGroup(seeded_group, CallContext{}).status()));

  // Identical requests wait for the first one's evaluation, each holding its
  // request: as many as the queue would hold (1), then RESOURCE_EXHAUSTED,
  // answered at once (the first is still compiling).
  v1::EvaluateRequest request;
  request.set_problem_id("vector_add");
  request.mutable_submission()->set_source(kVectorAdd);
  request.set_skip_timing(true);
  std::promise<absl::StatusOr<v1::Verdict>> leader, follower;
  std::optional<absl::Status> refused;
  engine.EvaluateAsync(request, CallContext{},
                       [&](absl::StatusOr<v1::Verdict> v) { leader.set_value(std::move(v)); });
  engine.EvaluateAsync(request, CallContext{},
                       [&](absl::StatusOr<v1::Verdict> v) { follower.set_value(std::move(v)); });
  engine.EvaluateAsync(request, CallContext{},
                       [&](absl::StatusOr<v1::Verdict> v) { refused = v.status(); });
  ASSERT_TRUE(refused.has_value()) << "the third caller was not answered at once";
  EXPECT_TRUE(absl::IsResourceExhausted(*refused)) << *refused;
  absl::StatusOr<v1::Verdict> first = leader.get_future().get();
  absl::StatusOr<v1::Verdict> second = follower.get_future().get();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(first->correct()) << first->error();
  EXPECT_TRUE(second->deduplicated());
}

}  // namespace
}  // namespace kerneleval
