"""Build hooks of the kerneleval Python package.

The gRPC stubs are never checked in: `build_py` generates them with
grpcio-tools from the repository's proto/ directory (../../proto from here)
into kerneleval/_proto/. A source distribution carries its own copy of the
.proto files (added to the release tree by `sdist` below, never to the
checkout), so a wheel can also be built from an unpacked sdist.

protoc emits `from kerneleval.v1 import common_pb2`, which would resolve to
this package (also named kerneleval); the imports are rewritten to
`kerneleval._proto.v1`.

The generated code refuses to run on an older grpcio / protobuf than the
generator's, so the install requirements are derived from the grpcio-tools
that did the generating.

Developers working from the checkout without installing can run
`python setup.py generate_stubs` (writes src/kerneleval/_proto/, gitignored).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from setuptools import Command, setup
from setuptools.command.build_py import build_py as _build_py
from setuptools.command.sdist import sdist as _sdist
from setuptools.errors import SetupError

HERE = Path(__file__).resolve().parent
# The repository's proto/ (a checkout), else the copy an sdist carries.
PROTO_ROOTS = (HERE.parent.parent / "proto", HERE / "proto")
PROTO_PACKAGE = Path("kerneleval") / "v1"  # only the public schema
GENERATED_PACKAGE = "kerneleval._proto"


def _proto_root() -> Path:
    # SetupError (a DistutilsError): setuptools prints "error: <message>" and
    # exits, so pip shows this line instead of a traceback.
    for root in PROTO_ROOTS:
        if (root / PROTO_PACKAGE).is_dir():
            return root
    raise SetupError(
        "kerneleval: no .proto files found (looked in "
        + ", ".join(str(r / PROTO_PACKAGE) for r in PROTO_ROOTS)
        + "); install from the repository checkout (clients/python with proto/ two levels up) or from an sdist"
    )


def _proto_files(root: Path) -> list[Path]:
    files = sorted((root / PROTO_PACKAGE).glob("*.proto"))
    if not files:
        raise SetupError(f"kerneleval: no .proto files in {root / PROTO_PACKAGE}")
    return files


_IMPORT_RE = re.compile(r"^(from|import) kerneleval\.v1(\b)", re.MULTILINE)


def generate_stubs(output_dir: Path) -> str:
    """Generates kerneleval/_proto/v1/*_pb2{,_grpc}.py(i) under output_dir.

    Returns the protobuf version the code was generated for ("7.35.1").
    """
    from grpc_tools import protoc  # build requirement

    root = _proto_root()
    files = _proto_files(root)
    target = output_dir / "kerneleval" / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        well_known = Path(protoc.__file__).resolve().parent / "_proto"
        args = [
            "grpc_tools.protoc",
            f"-I{root}",
            f"-I{well_known}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            f"--grpc_python_out={tmp}",
            *[str(f.relative_to(root)) for f in files],
        ]
        # protoc resolves the file arguments against -I; run from the root so
        # relative names work on every platform.
        cwd = os.getcwd()
        os.chdir(root)
        try:
            status = protoc.main(args)
        finally:
            os.chdir(cwd)
        if status != 0:
            raise SetupError(f"kerneleval: grpc_tools.protoc failed with status {status}")
        if target.exists():
            shutil.rmtree(target)
        (target / "v1").mkdir(parents=True)
        protobuf_version = ""
        for generated in sorted((Path(tmp) / PROTO_PACKAGE).iterdir()):
            text = generated.read_text(encoding="utf-8")
            text = _IMPORT_RE.sub(r"\1 kerneleval._proto.v1\2", text)
            match = re.search(r"^# Protobuf Python Version: (\S+)$", text, re.MULTILINE)
            if match:
                protobuf_version = match.group(1)
            (target / "v1" / generated.name).write_text(text, encoding="utf-8")
    (target / "__init__.py").write_text(
        '"""Generated gRPC stubs of kerneleval.v1 (by setup.py; do not edit)."""\n', encoding="utf-8"
    )
    (target / "v1" / "__init__.py").write_text("", encoding="utf-8")
    return protobuf_version


def _runtime_requirements() -> list[str]:
    """grpcio / protobuf no older than what the generated code checks for."""
    try:
        tools_version = importlib.metadata.version("grpcio-tools")
    except importlib.metadata.PackageNotFoundError:  # metadata-only build without the tools
        return ["grpcio>=1.66", "protobuf>=5.27"]
    protobuf_version = ""
    try:
        # The protoc bundled in grpcio-tools matches the protobuf it depends on.
        protobuf_version = importlib.metadata.version("protobuf")
        requirement = [
            r
            for r in importlib.metadata.requires("grpcio-tools") or []
            if r.replace(" ", "").lower().startswith("protobuf")
        ]
        # e.g. "protobuf<8.0dev,>=7.35.1": take the lower bound when present.
        if requirement:
            lower = re.search(r">=\s*([0-9][0-9.]*)", requirement[0])
            if lower:
                protobuf_version = lower.group(1)
    except importlib.metadata.PackageNotFoundError:
        pass
    requirements = [f"grpcio>={tools_version}"]
    if protobuf_version:
        major = int(protobuf_version.split(".")[0])
        requirements.append(f"protobuf>={protobuf_version},<{major + 1}")
    else:
        requirements.append("protobuf")
    return requirements


class build_py(_build_py):
    """Also generates the gRPC stubs into the build (or, editable, into src/)."""

    def run(self) -> None:
        _proto_root()  # no protos: fail before building anything
        super().run()
        if getattr(self, "editable_mode", False):
            generate_stubs(HERE / "src")
        else:
            generate_stubs(Path(self.build_lib))


class sdist(_sdist):
    """Puts a copy of the .proto files into the release tree (not the checkout)."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        root = _proto_root()
        for proto in _proto_files(root):
            destination = Path(base_dir) / "proto" / proto.relative_to(root)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(proto, destination)


class generate_stubs_command(Command):
    """`python setup.py generate_stubs`: stubs into src/ for in-tree development."""

    description = "generate the gRPC stubs into src/kerneleval/_proto (gitignored)"
    user_options: list = []

    def initialize_options(self) -> None:
        pass

    def finalize_options(self) -> None:
        pass

    def run(self) -> None:
        version = generate_stubs(HERE / "src")
        print(f"generated {GENERATED_PACKAGE} for protobuf {version}", file=sys.stderr)


setup(
    install_requires=_runtime_requirements(),
    cmdclass={"build_py": build_py, "sdist": sdist, "generate_stubs": generate_stubs_command},
)
