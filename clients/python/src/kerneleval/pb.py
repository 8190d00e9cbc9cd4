"""The generated protobuf / gRPC modules of kerneleval.v1.

    from kerneleval import pb
    problem = pb.Problem(id="my_op", ...)          # a custom problem
    request = pb.EvaluateRequest(problem_id="softmax")

The stubs are generated at install time (setup.py) into kerneleval._proto and
are never checked in.
"""

try:
    from kerneleval._proto.v1 import common_pb2, gpu_peaks_pb2, kerneleval_pb2, kerneleval_pb2_grpc, problem_pb2
except ImportError as error:  # pragma: no cover - only in an uninstalled checkout
    raise ImportError(
        "kerneleval: the generated gRPC stubs (kerneleval._proto) are missing. Install the "
        "package (`pip install ./clients/python`), or in a checkout run "
        "`python setup.py generate_stubs` in clients/python."
    ) from error

# Messages and enums, re-exported under their proto names.
_modules = (common_pb2, gpu_peaks_pb2, problem_pb2, kerneleval_pb2)
for _module in _modules:
    for _name in dir(_module):
        if _name[0].isupper() and _name != "DESCRIPTOR":
            globals()[_name] = getattr(_module, _name)

KernelEvalStub = kerneleval_pb2_grpc.KernelEvalStub
KernelEvalServicer = kerneleval_pb2_grpc.KernelEvalServicer
add_KernelEvalServicer_to_server = kerneleval_pb2_grpc.add_KernelEvalServicer_to_server

SERVICE_NAME = "kerneleval.v1.KernelEval"

del _module, _modules, _name
