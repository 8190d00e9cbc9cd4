// Float64 versions of every built-in problem, written from the problem
// descriptions (not from the CUDA references), for the tests of the problem
// set: a reference kernel's outputs are compared with these, rounded to the
// output dtype, under the problem's tolerance.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "evaluator/plan/expr.h"
#include "kerneleval/v1/problem.pb.h"

namespace kerneleval::problems_set {

// Tensors by name, every element as a double (integers exactly).
using Tensors = std::map<std::string, std::vector<double>>;
using Float64Fn = std::function<Tensors(const Tensors& inputs, const plan::ParamMap& params)>;

// Problem id -> its float64 version (outputs by name, row-major).
const std::map<std::string, Float64Fn>& Float64References();

// The inputs the evaluator generates for `problem` at `shape` (its values and
// input distributions) with `seed` (prng.h), as doubles.
Tensors GenerateInputs(const v1::Problem& problem, const v1::ShapeBinding& shape, uint64_t seed);

}  // namespace kerneleval::problems_set
