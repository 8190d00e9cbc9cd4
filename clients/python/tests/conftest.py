"""Fixtures: the in-process fake server, the real kerneleval-server (CPU backend),
the seed rubric, and sample kernels.

Real-server tests skip when $KERNELEVAL_BUILD_DIR/server/kerneleval-server (default
<repo>/build) is missing; set KERNELEVAL_REQUIRE_SERVER=1 to make that a failure.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator, Optional

import grpc
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_server import FakeServer, free_port  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[3]
BUILD_DIR = Path(os.environ.get("KERNELEVAL_BUILD_DIR") or REPO_ROOT / "build")
SERVER_BINARY = BUILD_DIR / "server" / "kerneleval-server"
SERVER_START_SECONDS = 60.0

VECTOR_ADD = """// @launch add<<<ceil_div(N, 256), 256>>>(a, b, c, N)
extern "C" __global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
"""

# Runs, but computes a - b: every element wrong.
VECTOR_ADD_WRONG = VECTOR_ADD.replace("a[i] + b[i]", "a[i] - b[i]")

# Does not compile (missing semicolon on line 4).
VECTOR_ADD_SYNTAX = VECTOR_ADD.replace("if (i < n) c[i] = a[i] + b[i];", "if (i < n) c[i] = a[i] + b[i]")

# Writes far out of bounds: a runtime failure on any backend that checks accesses.
VECTOR_ADD_CRASH = VECTOR_ADD.replace("if (i < n) c[i] = a[i] + b[i];", "c[i + (1 << 28)] = a[i] + b[i];")

# Never returns: a timeout.
VECTOR_ADD_HANG = VECTOR_ADD.replace(
    "if (i < n) c[i] = a[i] + b[i];", "while (true) { if (i < n) c[i] = a[i] + b[i]; __threadfence(); }"
)


# ------------------------------------------------------------------- fake


@pytest.fixture
def fake() -> Iterator[FakeServer]:
    server = FakeServer()
    yield server
    server.stop()


@pytest.fixture
def fake_factory() -> Iterator:
    servers: list[FakeServer] = []

    def make(token: Optional[str] = None, name: str = "fake") -> FakeServer:
        server = FakeServer(token=token, name=name)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.stop()


@pytest.fixture(autouse=True)
def _no_ambient_server_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests choose targets and tokens explicitly."""
    for name in ("KERNELEVAL_SERVER", "KERNELEVAL_TOKEN", "KERNELEVAL_REWARD_MODE", "KERNELEVAL_PARTIAL_CREDIT",
                 "KERNEL_ENV_REWARD", "KERNEL_ENV_PARTIAL_CREDIT"):
        monkeypatch.delenv(name, raising=False)


# ------------------------------------------------------------------- real


class RealServer:
    """kerneleval-server --listen 127.0.0.1:PORT --backend cpu [--token T] [FLAGS...]."""

    def __init__(self, log_path: Path, token: Optional[str] = None, flags: tuple[str, ...] = ()):
        self.token = token
        self.log_path = log_path
        env = {k: v for k, v in os.environ.items()
               if k not in ("KERNELEVAL_TOKEN", "KERNEL_ENV_REWARD", "KERNEL_ENV_PARTIAL_CREDIT", "KERNELEVAL_LISTEN")}
        last_error = ""
        for _ in range(3):  # the free port may be taken between probe and bind
            port = free_port()
            self.target = f"127.0.0.1:{port}"
            args = [str(SERVER_BINARY), "--listen", self.target, "--backend", "cpu"]
            if token:
                args += ["--token", token]
            args += list(flags)
            self._log = open(log_path, "ab")
            self.process = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, env=env)
            last_error = self._wait_ready()
            if not last_error:
                return
            self.stop()
        pytest.fail(f"kerneleval-server did not start: {last_error}\n--- log ---\n{self.log()}")

    def _wait_ready(self) -> str:
        """Until the evaluation service reports SERVING (a worker is ready)."""
        from kerneleval import Client, KernelEvalError

        deadline = time.monotonic() + SERVER_START_SECONDS
        status = "no connection"
        with Client(self.target, max_attempts=1, timeout=2) as client:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    return f"exited with status {self.process.returncode}"
                try:
                    status = client.health()
                except KernelEvalError as error:
                    if error.code == grpc.StatusCode.UNIMPLEMENTED:  # no health service: connected is ready
                        return ""
                    status = str(error)
                if status == "SERVING":
                    return ""
                time.sleep(0.2)
        return f"not ready within {SERVER_START_SECONDS} s (health: {status})"

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-20000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def _require_server_binary() -> None:
    if SERVER_BINARY.is_file() and os.access(SERVER_BINARY, os.X_OK):
        return
    reason = (f"kerneleval-server not built: {SERVER_BINARY} is missing "
              "(build the server target, or set KERNELEVAL_BUILD_DIR to the build directory)")
    if os.environ.get("KERNELEVAL_REQUIRE_SERVER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    _require_server_binary()
    server = RealServer(tmp_path_factory.mktemp("server") / "kerneleval-server.log")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def real_server_with_token(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    _require_server_binary()
    # Also a server for training rollouts: fixed seeds refused.
    server = RealServer(tmp_path_factory.mktemp("server-token") / "kerneleval-server.log", token="s3cret-token",
                        flags=("--no-fixed-seeds",))
    yield server
    server.stop()


@pytest.fixture
def real(request: pytest.FixtureRequest, real_server: RealServer) -> Iterator[RealServer]:
    """real_server, printing its log tail when the test fails."""
    yield real_server
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print("--- kerneleval-server log (tail) ---\n" + real_server.log()[-5000:])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):  # noqa: ANN001 - pytest hook
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


# ------------------------------------------------------------------- seed


def seed_rubric_path() -> tuple[Path, bool]:
    explicit = os.environ.get("KERNELEVAL_SEED_RUBRIC")
    if explicit:
        return Path(explicit), True
    return REPO_ROOT.parent / "shared" / "seed" / "reward_rubric.py", False


@pytest.fixture(scope="session")
def seed_rubric():
    """The seed's reward_rubric.py, imported verbatim (not copied)."""
    path, explicit = seed_rubric_path()
    if not path.is_file():
        message = f"seed rubric not found at {path} (set KERNELEVAL_SEED_RUBRIC)"
        if explicit:
            pytest.fail(message)
        pytest.skip(message)
    spec = importlib.util.spec_from_file_location("kerneleval_seed_reward_rubric", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module
