# cmake -DINPUT=x.ptx -DOUTPUT=x.cc [-DPTX_VERSION=6.3] [-DPTXAS=ptxas
#       -DPTXAS_ARCHS=sm_75,sm_90] -P embed_ptx.cmake:
# wraps PTX text in a C++ raw string literal defining
# kerneleval::cuda::AuxKernelsPtx().
#
# PTX_VERSION: the PTX's `.version` is lowered to it (never raised). nvcc
# writes its own ISA (CUDA 13.0: 9.0), which a driver older than that
# toolkit refuses (CUDA_ERROR_UNSUPPORTED_PTX_VERSION at worker start, also
# after a toolkit upgrade on the build machine, rt11 #3); the lowest ISA that
# has every feature the kernels use loads on every driver that runs the
# device. PTXAS: when given, the lowered PTX must assemble for each of
# PTXAS_ARCHS (comma-separated), else the build fails: ptxas refuses a feature
# the `.version` lacks ("... requires PTX ISA .version X"), so raise
# PTX_VERSION then (evaluator/cuda/CMakeLists.txt, AUX_PTX_VERSION).
file(READ ${INPUT} ptx)
if(PTX_VERSION)
  if(NOT ptx MATCHES "\n\\.version ([0-9]+\\.[0-9]+)\n")
    message(FATAL_ERROR "embed_ptx: no .version line in ${INPUT}")
  endif()
  set(nvcc_version ${CMAKE_MATCH_1})
  if(PTX_VERSION VERSION_LESS nvcc_version)
    string(REGEX REPLACE "\n\\.version [0-9]+\\.[0-9]+\n" "\n.version ${PTX_VERSION}\n" ptx
                         "${ptx}")
  endif()
  if(PTXAS)
    set(lowered ${OUTPUT}.ptx)
    file(WRITE ${lowered} "${ptx}")
    string(REPLACE "," ";" archs "${PTXAS_ARCHS}")
    foreach(arch ${archs})
      execute_process(COMMAND ${PTXAS} -arch=${arch} ${lowered} -o ${OUTPUT}.${arch}.cubin
                      RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
      file(REMOVE ${OUTPUT}.${arch}.cubin)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR
                "embed_ptx: ${INPUT} lowered from PTX ISA ${nvcc_version} to ${PTX_VERSION} does "
                "not assemble for ${arch} (${PTXAS}):\n${err}${out}\nRaise AUX_PTX_VERSION in "
                "evaluator/cuda/CMakeLists.txt to the lowest version ptxas accepts.")
      endif()
    endforeach()
  endif()
endif()
file(WRITE ${OUTPUT}
  "// Generated from aux_kernels.cu by nvcc -ptx; do not edit.\n"
  "#include \"evaluator/cuda/aux_kernels.h\"\n"
  "namespace kerneleval::cuda {\n"
  "namespace {\n"
  "constexpr char kPtx[] = R\"ke_ptx(${ptx})ke_ptx\";\n"
  "}  // namespace\n"
  "absl::string_view AuxKernelsPtx() { return {kPtx, sizeof(kPtx) - 1}; }\n"
  "}  // namespace kerneleval::cuda\n")
