"""The build hooks: stubs generated at build time, never checked in; an sdist
carries the .proto files and builds without the repository around it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from conftest import REPO_ROOT

PACKAGE_DIR = REPO_ROOT / "clients" / "python"
PROTO_FILES = sorted(p.name for p in (REPO_ROOT / "proto" / "kerneleval" / "v1").glob("*.proto"))


def test_no_generated_code_is_checked_in():
    tracked = subprocess.run(
        ["git", "ls-files", "clients/python"], cwd=REPO_ROOT, capture_output=True, text=True
    )
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    files = tracked.stdout.split()
    assert not [f for f in files if f.endswith(("_pb2.py", "_pb2_grpc.py", "_pb2.pyi")) or "/_proto/" in f]
    assert not [f for f in files if f.endswith(".proto")]


def test_sdist_vendors_the_protos_and_builds_alone(tmp_path):
    pytest.importorskip("grpc_tools")
    # A copy of the checkout's package and proto/ (the build must not touch the tree).
    checkout = tmp_path / "checkout"
    shutil.copytree(PACKAGE_DIR, checkout / "clients" / "python",
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "_proto", "__pycache__", ".pytest_cache"))
    shutil.copytree(REPO_ROOT / "proto", checkout / "proto")
    dist = tmp_path / "dist"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run([sys.executable, "setup.py", "-q", "sdist", "-d", str(dist)],
                   cwd=checkout / "clients" / "python", check=True, capture_output=True, env=env)
    (archive,) = dist.glob("kerneleval-*.tar.gz")
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        if hasattr(tarfile, "data_filter"):
            tar.extractall(tmp_path / "unpacked", filter="data")
        else:  # pragma: no cover - Python < 3.11.4
            tar.extractall(tmp_path / "unpacked")
    root = names[0].split("/")[0]
    assert sorted(Path(n).name for n in names if n.endswith(".proto")) == PROTO_FILES
    assert f"{root}/proto/kerneleval/v1/kerneleval.proto" in names
    assert not [n for n in names if "_pb2" in n]
    # The checkout's source tree was not written to.
    assert not (checkout / "clients" / "python" / "proto").exists()
    assert not (checkout / "clients" / "python" / "src" / "kerneleval" / "_proto").exists()

    # Build from the unpacked sdist, where ../../proto does not exist.
    unpacked = tmp_path / "unpacked" / root
    assert not (unpacked.parent.parent / "proto").exists()
    build_lib = tmp_path / "lib"
    subprocess.run([sys.executable, "setup.py", "-q", "build_py", "-d", str(build_lib)],
                   cwd=unpacked, check=True, capture_output=True, env=env)
    generated = sorted(p.name for p in (build_lib / "kerneleval" / "_proto" / "v1").glob("*_pb2.py"))
    assert generated == sorted(n.replace(".proto", "_pb2.py") for n in PROTO_FILES)
    code = "import kerneleval, kerneleval.pb as pb; print(kerneleval.__file__); print(pb.Verdict.DESCRIPTOR.full_name)"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True,
                         env={**env, "PYTHONPATH": str(build_lib)})
    file_line, name_line = out.stdout.split()
    assert file_line.startswith(str(build_lib)) and name_line == "kerneleval.v1.Verdict"


def test_a_copy_without_the_protos_fails_with_a_short_message(tmp_path):
    # pip install of a copied clients/python (no ../../proto): one clear line, not a traceback.
    pytest.importorskip("grpc_tools")
    copy = tmp_path / "python"
    shutil.copytree(PACKAGE_DIR, copy,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "_proto", "__pycache__", ".pytest_cache"))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PIP_NO_INDEX": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", str(tmp_path / "wheels"),
         str(copy)],
        cwd=tmp_path, capture_output=True, text=True, env=env,
    )
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "error: kerneleval: no .proto files found" in output, output
    assert "Traceback" not in output, output


def test_installed_requirements_match_the_generated_code():
    from importlib import metadata

    requirements = metadata.requires("kerneleval") or []
    base = [r for r in requirements if "extra ==" not in r]
    assert any(r.startswith("grpcio>=") for r in base), base
    assert any(r.startswith("protobuf") for r in base), base
    assert not any(r.startswith("openenv") for r in base)  # the core client needs no openenv


def test_examples_and_readme_snippets_are_valid_python():
    example = REPO_ROOT / "examples" / "grpo_train.py"
    compile(example.read_text(), str(example), "exec")
    import re

    readme = (PACKAGE_DIR / "README.md").read_text()
    # Runs up to argument parsing without trl (imported only in main()).
    help_text = subprocess.run([sys.executable, str(example), "--help"], capture_output=True, text=True, check=True)
    assert "--reward-mode" in help_text.stdout

    snippets = re.findall(r"```python\n(.*?)```", readme, re.DOTALL)
    assert len(snippets) >= 4
    for snippet in snippets:
        compile(snippet, "README.md", "exec")


def test_readme_steps_for_working_from_the_checkout(tmp_path):
    """The README's "without installing" steps install what generate_stubs
    imports (grpc_tools, from grpcio-tools) before running it, and then work."""
    import re
    from importlib import metadata

    pytest.importorskip("grpc_tools")
    readme = (PACKAGE_DIR / "README.md").read_text()
    section = readme.split("Working from the checkout without installing", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block, "no shell steps for working from the checkout"
    steps = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    steps = [s for s in steps if s]
    generate = next(i for i, s in enumerate(steps) if s == "python setup.py generate_stubs")
    installed = {name.lower() for s in steps[:generate] if s.startswith("pip install ")
                 for name in s.split()[2:]}
    providers = {d.lower() for d in metadata.packages_distributions().get("grpc_tools", [])}
    assert providers and providers & installed, (steps, providers)
    assert steps[0] == "cd clients/python" and steps[generate + 1].startswith("PYTHONPATH=src python")

    # The steps themselves, in a copy of the checkout (the tree is not written to).
    checkout = tmp_path / "checkout"
    shutil.copytree(PACKAGE_DIR, checkout / "clients" / "python",
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "_proto", "__pycache__", ".pytest_cache"))
    shutil.copytree(REPO_ROOT / "proto", checkout / "proto")
    here = checkout / "clients" / "python"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run([sys.executable, "setup.py", "generate_stubs"], cwd=here, check=True, capture_output=True, env=env)
    code = "import kerneleval, kerneleval.pb as pb; print(kerneleval.__file__, pb.Verdict.DESCRIPTOR.full_name)"
    out = subprocess.run([sys.executable, "-c", code], cwd=here, capture_output=True, text=True, check=True,
                         env={**env, "PYTHONPATH": "src"})
    file_name, full_name = out.stdout.split()
    assert file_name == str(here / "src" / "kerneleval" / "__init__.py") and full_name == "kerneleval.v1.Verdict"
