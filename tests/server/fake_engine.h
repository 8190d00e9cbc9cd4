// A scripted Engine for the server tests: what it answers is written in the
// submission's source, so that concurrent tests mix behaviours freely.
//
// Script words (space-separated, in any order):
//   pass [REWARD]        a correct verdict (stage "passed"), reward REWARD (default 1)
//   fail STAGE           an incorrect verdict with that stage
//   error CODE MESSAGE…  an absl::Status with numeric CODE and the rest as message
//   delay MS             work for MS milliseconds before answering
//   events N             N progress events (TimingProgress samples 1..N) first
//   hang                 work until cancelled, released or shut down
// A source with no outcome word passes with reward 1.
#pragma once

#include <google/protobuf/unknown_field_set.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "evaluator/engine/engine.h"

namespace kerneleval::testing {

struct Script {
  std::optional<absl::Status> error;
  bool correct = true;
  std::string stage = "passed";
  double reward = 1;
  int delay_ms = 0;
  int events = 0;
  bool hang = false;
};

inline Script ParseScript(const std::string& source) {
  Script script;
  std::istringstream words(source);
  std::string word;
  while (words >> word) {
    if (word == "pass") {
      script.correct = true;
      script.stage = "passed";
      std::streampos before = words.tellg();
      double reward;
      if (words >> reward) {
        script.reward = reward;
      } else {
        words.clear();
        words.seekg(before);
      }
    } else if (word == "fail") {
      script.correct = false;
      words >> script.stage;
      script.reward = 0;
    } else if (word == "error") {
      int code = 0;
      words >> code;
      std::string message;
      std::getline(words, message);
      if (!message.empty() && message.front() == ' ') message.erase(0, 1);
      script.error = absl::Status(static_cast<absl::StatusCode>(code), message);
    } else if (word == "delay") {
      words >> script.delay_ms;
    } else if (word == "events") {
      words >> script.events;
    } else if (word == "hang") {
      script.hang = true;
    }
  }
  return script;
}

class FakeEngine final : public Engine {
 public:
  FakeEngine() = default;
  ~FakeEngine() override {
    Shutdown(absl::Now());
    std::vector<std::thread> threads;
    {
      std::lock_guard lock(mutex_);
      threads.swap(threads_);
    }
    for (auto& thread : threads) thread.join();
  }

  // --- knobs
  void set_ready(bool ready) { ready_.store(ready); }
  void set_queue_capacity(int capacity) { capacity_.store(capacity); }
  void set_observer(std::shared_ptr<EngineObserver> observer) { observer_ = std::move(observer); }
  // Ends every `hang` with a pass.
  void ReleaseHangs() {
    {
      std::lock_guard lock(mutex_);
      released_ = true;
    }
    wake_.notify_all();
  }

  // --- what it saw
  std::atomic<int> evaluate_calls{0};  // EvaluateAsync calls (stream included)
  std::atomic<int> group_calls{0};
  std::atomic<int> compile_calls{0};
  std::atomic<int> cancels_observed{0};  // hangs that ended because cancelled() flipped
  std::atomic<int> in_flight{0};
  std::atomic<int> shutdown_calls{0};
  // Unknown fields (top level and the submission's) of the last EvaluateAsync.
  std::atomic<int> last_request_unknown_fields{-1};
  CallContext last_context() const {
    std::lock_guard lock(mutex_);
    return last_context_;
  }

  bool WaitForInFlight(int count, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (in_flight.load() < count) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }
  bool WaitForCancels(int count, std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (cancels_observed.load() < count) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }

  // --- Engine
  void EvaluateAsync(v1::EvaluateRequest request, CallContext context,
                     VerdictCallback done) override {
    ++evaluate_calls;
    Remember(context);
    last_request_unknown_fields =
        request.GetReflection()->GetUnknownFields(request).field_count() +
        request.submission().GetReflection()->GetUnknownFields(request.submission()).field_count();
    if (!Admit(done)) return;
    Script script = ParseScript(request.submission().source());
    const std::string problem_id =
        request.has_problem() ? request.problem().id() : request.problem_id();
    Spawn([this, script, problem_id, context = std::move(context), done = std::move(done)] {
      const auto status = Work(script, context);
      if (!status.ok()) {
        Finish(done, status);
        return;
      }
      Finish(done, MakeVerdict(script, problem_id));
    });
  }

  void EvaluateGroupAsync(v1::EvaluateGroupRequest request, CallContext context,
                          GroupCallback done) override {
    ++group_calls;
    Remember(context);
    if (!Admit(done)) return;
    std::vector<Script> scripts;
    for (const auto& submission : request.submissions()) {
      scripts.push_back(ParseScript(submission.source()));
    }
    const std::string problem_id =
        request.has_problem() ? request.problem().id() : request.problem_id();
    Spawn([this, scripts, problem_id, context = std::move(context), done = std::move(done)] {
      Script slowest;
      for (const auto& script : scripts) {
        slowest.delay_ms = std::max(slowest.delay_ms, script.delay_ms);
        slowest.hang = slowest.hang || script.hang;
      }
      if (scripts.front().error) slowest.error = scripts.front().error;
      const auto status = Work(slowest, context);
      if (!status.ok()) {
        Finish(done, status);
        return;
      }
      v1::EvaluateGroupResponse response;
      for (const auto& script : scripts) *response.add_verdicts() = MakeVerdict(script, problem_id);
      response.mutable_reference_timing()->set_samples(10);
      Finish(done, std::move(response));
    });
  }

  absl::StatusOr<v1::CompileResult> Compile(const v1::CompileRequest& request,
                                            const CallContext& context) override {
    ++compile_calls;
    Remember(context);
    const Script script = ParseScript(request.source());
    if (script.delay_ms > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(script.delay_ms));
    if (script.error) return *script.error;
    v1::CompileResult result;
    result.set_success(script.correct);
    result.set_arch(request.options().arch().empty() ? "sm_90" : request.options().arch());
    if (!script.correct) {
      auto* diagnostic = result.add_diagnostics();
      diagnostic->set_severity("error");
      diagnostic->set_line(1);
      diagnostic->set_message("scripted compile error");
    } else {
      result.add_kernels()->set_name("kernel");
    }
    if (observer_) observer_->OnCompileCache(true);
    result.set_cache_hit(true);
    return result;
  }

  absl::StatusOr<v1::ListProblemsResponse> ListProblems(
      const v1::ListProblemsRequest& request) override {
    v1::ListProblemsResponse response;
    for (const auto& [id, tag] : {std::pair{"softmax", "level1"}, std::pair{"gemm", "level2"}}) {
      if (!request.tag().empty() && request.tag() != tag) continue;
      auto* problem = response.add_problems();
      problem->set_id(id);
      problem->set_title(id);
      problem->add_tags(tag);
    }
    return response;
  }

  absl::StatusOr<v1::GetProblemResponse> GetProblem(const v1::GetProblemRequest& request) override {
    if (request.problem_id() != "softmax") {
      return absl::NotFoundError("problem_id: unknown problem \"" + request.problem_id() + "\"");
    }
    v1::GetProblemResponse response;
    response.mutable_problem()->set_id("softmax");
    response.set_signature("softmax(const float* x, float* y, int N)");
    return response;
  }

  v1::ListDevicesResponse ListDevices() override {
    v1::ListDevicesResponse response;
    auto* device = response.add_devices();
    device->set_id("cpu");
    device->set_backend("cpu");
    device->set_name("fake");
    device->set_ready(ready_.load());
    device->set_queue_depth(static_cast<uint32_t>(in_flight.load()));
    return response;
  }

  bool Ready() const override { return ready_.load(); }

  void Shutdown(absl::Time deadline) override {
    ++shutdown_calls;
    {
      std::lock_guard lock(mutex_);
      shutting_down_ = true;
    }
    wake_.notify_all();
  }

 private:
  template <typename Callback>
  bool Admit(Callback& done) {
    {
      std::lock_guard lock(mutex_);
      if (shutting_down_) {
        done(absl::UnavailableError("engine: shutting down"));
        return false;
      }
    }
    // Like the real engine: a full queue is refused at once, on the
    // caller's thread.
    if (in_flight.fetch_add(1) >= capacity_.load()) {
      --in_flight;
      done(absl::ResourceExhaustedError("queue full: " + std::to_string(capacity_.load()) +
                                        " evaluations queued on cpu"));
      return false;
    }
    return true;
  }

  template <typename Callback, typename Value>
  void Finish(Callback& done, Value&& value) {
    --in_flight;
    done(std::forward<Value>(value));
  }

  absl::Status Work(const Script& script, const CallContext& context) {
    for (int i = 1; i <= script.events; ++i) {
      if (context.on_event) {
        v1::EvaluateEvent event;
        event.mutable_timing()->set_samples(static_cast<uint32_t>(i));
        context.on_event(event);
      }
    }
    std::unique_lock lock(mutex_);
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(script.hang ? 60'000 : script.delay_ms);
    while (std::chrono::steady_clock::now() < until) {
      if (context.cancelled && context.cancelled()) {
        if (script.hang) ++cancels_observed;
        return absl::CancelledError("engine: the caller went away");
      }
      if (shutting_down_) return absl::CancelledError("engine: shut down");
      if (script.hang && released_) break;
      wake_.wait_for(lock, std::chrono::milliseconds(2));
    }
    lock.unlock();
    if (script.error) return *script.error;
    if (observer_) {
      observer_->OnVerdict(script.stage);
      observer_->OnLatency("total", 0.01);
      observer_->OnDeviceSeconds(context.client_id, 0.25);
      observer_->OnQueueDepth("cpu", in_flight.load());
    }
    return absl::OkStatus();
  }

  static v1::Verdict MakeVerdict(const Script& script, const std::string& problem_id) {
    v1::Verdict verdict;
    verdict.set_correct(script.correct);
    verdict.set_stage(script.stage);
    verdict.set_reward(script.reward);
    verdict.set_problem_id(problem_id);
    verdict.set_backend("cpu");
    if (!script.correct) verdict.set_error("scripted " + script.stage + " failure");
    return verdict;
  }

  void Remember(const CallContext& context) {
    std::lock_guard lock(mutex_);
    last_context_ = context;
  }

  template <typename Task>
  void Spawn(Task&& task) {
    std::lock_guard lock(mutex_);
    threads_.emplace_back(std::forward<Task>(task));
  }

  std::atomic<bool> ready_{true};
  std::atomic<int> capacity_{1'000'000};
  std::shared_ptr<EngineObserver> observer_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool shutting_down_ = false;
  bool released_ = false;
  CallContext last_context_;
  std::vector<std::thread> threads_;
};

}  // namespace kerneleval::testing
