// `kerneleval problems list [--json] [--tag TAG]` and
// `kerneleval problems show ID [--json | --prompt]`: the built-in problems.
//
// Reads the problem files directly: --problems-dir DIR, else
// $KERNELEVAL_PROBLEMS_DIR, else the installed or source tree's problems/
// (evaluator/problems/problems.h, DefaultProblemsDir); with --server
// HOST:PORT asks that server (ListProblems, GetProblem) instead. `list` prints id,
// title and tags; `show` the description, signature, example @launch line,
// tolerances and shapes (with their flops and bytes); --prompt prints the
// prompt a model is given. An unknown id, or problem files that do not load:
// a message on stderr and exit code 2; an unreachable or refusing server: 3.
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/client/client.h"
#include "cli/client/server_flags.h"
#include "cli/command.h"
#include "evaluator/data/compare.h"
#include "evaluator/data/dtype.h"
#include "evaluator/problems/describe.h"
#include "evaluator/problems/problems.h"

namespace kerneleval::cli {
namespace {

using Json = nlohmann::ordered_json;

struct ProblemsOptions {
  std::string problems_dir;  // empty: DefaultProblemsDir()
  std::string id;
  std::string tag;
  bool json = false;
  bool prompt = false;
  client::ServerFlags server;
};

// The problems to show: the registry's (read here), or one server's.
class ProblemSource {
 public:
  ProblemSource() = default;
  ProblemSource(const ProblemSource&) = delete;
  ProblemSource& operator=(const ProblemSource&) = delete;
  ProblemSource(ProblemSource&&) = delete;
  ProblemSource& operator=(ProblemSource&&) = delete;
  virtual ~ProblemSource() = default;
  // Summaries with the tag (empty: all), in the source's order.
  virtual absl::StatusOr<std::vector<v1::ProblemSummary>> List(const std::string& tag) = 0;
  virtual absl::StatusOr<v1::Problem> Get(const std::string& id) = 0;
};

bool HasTag(const v1::Problem& problem, const std::string& tag);

class RegistrySource final : public ProblemSource {
 public:
  explicit RegistrySource(problems::ProblemRegistry registry) : registry_(std::move(registry)) {}
  absl::StatusOr<std::vector<v1::ProblemSummary>> List(const std::string& tag) override {
    std::vector<v1::ProblemSummary> summaries;
    for (const v1::Problem* problem : registry_.List()) {
      if (!HasTag(*problem, tag)) continue;
      v1::ProblemSummary& summary = summaries.emplace_back();
      summary.set_id(problem->id());
      summary.set_title(problem->title());
      *summary.mutable_tags() = problem->tags();
    }
    return summaries;
  }
  absl::StatusOr<v1::Problem> Get(const std::string& id) override {
    if (const v1::Problem* problem = registry_.Find(id)) return *problem;
    std::vector<std::string> ids;
    for (const v1::Problem* p : registry_.List()) ids.push_back(p->id());
    return absl::NotFoundError(
        absl::StrFormat("unknown problem \"%s\" (known: %s)", id, absl::StrJoin(ids, ", ")));
  }

 private:
  problems::ProblemRegistry registry_;
};

class ServerSource final : public ProblemSource {
 public:
  explicit ServerSource(std::unique_ptr<client::KernelEvalClient> client)
      : client_(std::move(client)) {}
  absl::StatusOr<std::vector<v1::ProblemSummary>> List(const std::string& tag) override {
    v1::ListProblemsRequest request;
    request.set_tag(tag);
    absl::StatusOr<v1::ListProblemsResponse> response = client_->ListProblems(request);
    if (!response.ok()) return response.status();
    return std::vector<v1::ProblemSummary>(response->problems().begin(),
                                           response->problems().end());
  }
  absl::StatusOr<v1::Problem> Get(const std::string& id) override {
    v1::GetProblemRequest request;
    request.set_problem_id(id);
    absl::StatusOr<v1::GetProblemResponse> response = client_->GetProblem(request);
    if (!response.ok()) return response.status();
    return std::move(*response->mutable_problem());
  }

 private:
  std::unique_ptr<client::KernelEvalClient> client_;
};

absl::StatusOr<std::unique_ptr<ProblemSource>> Open(const ProblemsOptions& options) {
  if (options.server.remote()) {
    absl::StatusOr<std::unique_ptr<client::KernelEvalClient>> client =
        client::KernelEvalClient::Create(client::ToClientOptions(options.server));
    if (!client.ok()) return client.status();
    return std::make_unique<ServerSource>(*std::move(client));
  }
  const std::filesystem::path dir = options.problems_dir.empty()
                                        ? problems::DefaultProblemsDir()
                                        : std::filesystem::path(options.problems_dir);
  absl::StatusOr<problems::ProblemRegistry> registry =
      problems::ProblemRegistry::LoadFromDirectory(dir);
  // Problem files that do not load are bad input (exit 2), whatever the code.
  if (!registry.ok()) return absl::InvalidArgumentError(registry.status().message());
  return std::make_unique<RegistrySource>(*std::move(registry));
}

int Fail(const char* command, const ProblemsOptions& options, const absl::Status& status) {
  return FailCommand(absl::StrCat("problems ", command), options.json,
                     client::ExitCodeForStatus(status), absl::StatusCodeToString(status.code()),
                     status.message());
}

std::string Tags(const v1::Problem& problem) { return absl::StrJoin(problem.tags(), ", "); }

bool HasTag(const v1::Problem& problem, const std::string& tag) {
  if (tag.empty()) return true;
  for (const auto& t : problem.tags()) {
    if (t == tag) return true;
  }
  return false;
}

int List(const ProblemsOptions& options) {
  absl::StatusOr<std::unique_ptr<ProblemSource>> source = Open(options);
  if (!source.ok()) return Fail("list", options, source.status());
  absl::StatusOr<std::vector<v1::ProblemSummary>> selected = (*source)->List(options.tag);
  if (!selected.ok()) return Fail("list", options, selected.status());
  if (options.json) {
    Json rows = Json::array();
    for (const v1::ProblemSummary& problem : *selected) {
      rows.push_back(
          {{"id", problem.id()},
           {"title", problem.title()},
           {"tags", std::vector<std::string>(problem.tags().begin(), problem.tags().end())}});
    }
    std::cout << rows.dump(2) << '\n';
    return kExitOk;
  }
  size_t id_width = 2, title_width = 5;
  for (const v1::ProblemSummary& problem : *selected) {
    id_width = std::max(id_width, problem.id().size());
    title_width = std::max(title_width, problem.title().size());
  }
  std::cout << absl::StrFormat("%-*s  %-*s  %s\n", id_width, "ID", title_width, "TITLE", "TAGS");
  for (const v1::ProblemSummary& problem : *selected) {
    std::cout << absl::StrFormat("%-*s  %-*s  %s\n", id_width, problem.id(), title_width,
                                 problem.title(), absl::StrJoin(problem.tags(), ", "));
  }
  return kExitOk;
}

struct ShapeRow {
  std::string kind;  // "timed" | "cpu_timed" | "correctness"
  const v1::ShapeBinding* shape;
};

std::vector<ShapeRow> ShapeRows(const v1::Problem& problem) {
  std::vector<ShapeRow> rows = {{"timed", &problem.timed_shape()}};
  if (!problem.cpu_timed_shape().values().empty()) {
    rows.push_back({"cpu_timed", &problem.cpu_timed_shape()});
  }
  for (const auto& shape : problem.correctness_shapes()) rows.push_back({"correctness", &shape});
  return rows;
}

std::string ToleranceText(const v1::TensorSpec& output) {
  const data::ToleranceValues t = data::ResolveTolerance(output.dtype(), output.tolerance());
  return absl::StrFormat("atol %g, rtol %g%s", t.atol, t.rtol,
                         output.has_tolerance() ? "" : " (dtype default)");
}

Json TensorsJson(const google::protobuf::RepeatedPtrField<v1::TensorSpec>& tensors, bool outputs) {
  Json list = Json::array();
  for (const auto& tensor : tensors) {
    Json row = {{"name", tensor.name()},
                {"dtype", std::string(data::DTypeName(tensor.dtype()))},
                {"shape", std::vector<std::string>(tensor.shape().begin(), tensor.shape().end())}};
    if (outputs) {
      const data::ToleranceValues t = data::ResolveTolerance(tensor.dtype(), tensor.tolerance());
      row["atol"] = t.atol;
      row["rtol"] = t.rtol;
    }
    list.push_back(std::move(row));
  }
  return list;
}

int Show(const ProblemsOptions& options) {
  absl::StatusOr<std::unique_ptr<ProblemSource>> source = Open(options);
  if (!source.ok()) return Fail("show", options, source.status());
  absl::StatusOr<v1::Problem> found = (*source)->Get(options.id);
  if (!found.ok()) return Fail("show", options, found.status());
  const v1::Problem* problem = &*found;
  const problems::ProblemDescription description = problems::Describe(*problem);
  if (options.prompt) {
    std::cout << description.prompt;
    return kExitOk;
  }

  if (options.json) {
    Json parameters = Json::array();
    for (const auto& parameter : problem->parameters()) {
      parameters.push_back({{"name", parameter.name()}, {"description", parameter.description()}});
    }
    Json shapes = Json::array();
    for (const ShapeRow& row : ShapeRows(*problem)) {
      const plan::ParamMap params = problems::ShapeParams(*row.shape);
      Json values = Json::object();
      for (const auto& parameter : problem->parameters()) {
        values[parameter.name()] = params.at(parameter.name());
      }
      Json shape = {{"label", row.shape->label()},
                    {"kind", row.kind},
                    {"values", values},
                    {"flops", problems::EvalFlops(*problem, params).value_or(0.0)},
                    {"bytes", problems::EvalBytes(*problem, params).value_or(0.0)}};
      if (!row.shape->input_distributions().empty()) {
        Json distributions = Json::object();
        for (const auto& [name, distribution] : row.shape->input_distributions()) {
          distributions[name] = distribution.ShortDebugString();
        }
        shape["input_distributions"] = distributions;
      }
      shapes.push_back(std::move(shape));
    }
    const Json out = {
        {"id", problem->id()},
        {"title", problem->title()},
        {"tags", std::vector<std::string>(problem->tags().begin(), problem->tags().end())},
        {"description", problem->description()},
        {"signature", description.signature},
        {"parameters", parameters},
        {"inputs", TensorsJson(problem->inputs(), false)},
        {"outputs", TensorsJson(problem->outputs(), true)},
        {"flops", problem->flops()},
        {"compute_type", v1::ComputeType_Name(problem->compute_type())},
        {"example_launch", description.example_launch},
        {"example_kernel", description.example_kernel},
        {"shapes", shapes},
        {"prompt", description.prompt},
    };
    std::cout << out.dump(2) << '\n';
    return kExitOk;
  }

  std::cout << problem->id() << ": " << problem->title() << '\n';
  if (problem->tags_size() > 0) std::cout << "tags: " << Tags(*problem) << '\n';
  std::cout << '\n' << problem->description() << "\n\n";
  std::cout << "signature: " << description.signature << '\n';
  if (problem->parameters_size() > 0) {
    std::cout << "parameters:\n";
    for (const auto& parameter : problem->parameters()) {
      std::cout << "  " << parameter.name() << ": " << parameter.description() << '\n';
    }
  }
  std::cout << "tolerance:\n";
  for (const auto& output : problem->outputs()) {
    std::cout << "  " << output.name() << ": " << ToleranceText(output) << '\n';
  }
  std::cout << "flops: " << problem->flops() << " ("
            << v1::ComputeType_Name(problem->compute_type()) << ")\n";
  std::cout << "example launch:\n";
  for (const std::string_view text : {std::string_view(description.example_launch),
                                      std::string_view(description.example_kernel)}) {
    if (text.empty()) continue;
    for (const auto line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
      std::cout << "  " << line << '\n';
    }
  }
  std::cout << "shapes:\n";
  for (const ShapeRow& row : ShapeRows(*problem)) {
    const plan::ParamMap params = problems::ShapeParams(*row.shape);
    std::cout << absl::StrFormat("  %-12s %-12s %-32s flops %.3g, bytes %.3g\n", row.kind,
                                 row.shape->label(), problems::FormatShape(*problem, *row.shape),
                                 problems::EvalFlops(*problem, params).value_or(0.0),
                                 problems::EvalBytes(*problem, params).value_or(0.0));
    // Sorted: a protobuf map's order is unspecified.
    const std::map<std::string, v1::Distribution> distributions(
        row.shape->input_distributions().begin(), row.shape->input_distributions().end());
    for (const auto& [name, distribution] : distributions) {
      std::cout << absl::StrFormat("  %-12s   input %s drawn from %s\n", "", name,
                                   distribution.ShortDebugString());
    }
  }
  return kExitOk;
}

void AddProblemsCommand(CLI::App& root) {
  auto options = std::make_shared<ProblemsOptions>();
  CLI::App* command = root.add_subcommand("problems", "List and show the built-in problems.");
  command->require_subcommand(1);
  const std::string dir_help =
      "Directory of problem folders (default: $KERNELEVAL_PROBLEMS_DIR, else the installed "
      "problems/)";

  CLI::App* list = command->add_subcommand("list", "Problems: id, title, tags.");
  list->add_option("--problems-dir", options->problems_dir, dir_help);
  list->add_option("--tag", options->tag, "Only problems with this tag");
  list->add_flag("--json", options->json, "JSON array of {id, title, tags}");
  client::AddServerOptions(list, &options->server);
  list->callback([options] { SetExitCode(List(*options)); });

  CLI::App* show = command->add_subcommand(
      "show", "One problem: description, signature, example @launch line, shapes.");
  show->add_option("ID", options->id, "Problem id (kerneleval problems list)")->required();
  show->add_option("--problems-dir", options->problems_dir, dir_help);
  CLI::Option* json = show->add_flag("--json", options->json, "Everything as one JSON object");
  CLI::Option* prompt =
      show->add_flag("--prompt", options->prompt, "Only the prompt a model is given");
  json->excludes(prompt);
  client::AddServerOptions(show, &options->server);
  show->callback([options] { SetExitCode(Show(*options)); });
}

}  // namespace

KERNELEVAL_CLI_COMMAND("problems", AddProblemsCommand);

}  // namespace kerneleval::cli
