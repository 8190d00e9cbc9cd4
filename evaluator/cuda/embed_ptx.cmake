# cmake -DINPUT=x.ptx -DOUTPUT=x.cc -P embed_ptx.cmake: wraps PTX text in a C++
# raw string literal defining kerneleval::cuda::AuxKernelsPtx().
file(READ ${INPUT} ptx)
file(WRITE ${OUTPUT}
  "// Generated from aux_kernels.cu by nvcc -ptx; do not edit.\n"
  "#include \"evaluator/cuda/aux_kernels.h\"\n"
  "namespace kerneleval::cuda {\n"
  "namespace {\n"
  "constexpr char kPtx[] = R\"ke_ptx(${ptx})ke_ptx\";\n"
  "}  // namespace\n"
  "absl::string_view AuxKernelsPtx() { return {kPtx, sizeof(kPtx) - 1}; }\n"
  "}  // namespace kerneleval::cuda\n")
