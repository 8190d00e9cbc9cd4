"""The benches' server: the built kerneleval-server on the CPU backend, on a free port."""
import argparse
import contextlib
import os
import re
import socket
import subprocess
from typing import Iterator

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_SERVER = os.path.join(REPO, "build", "server", "kerneleval-server")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--server BINARY, and the server's own flags after `--`."""
    parser.add_argument("--server", default=DEFAULT_SERVER)
    parser.add_argument("server_flags", nargs="*", help="more kerneleval-server flags (after --)")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running(args: argparse.Namespace) -> Iterator[tuple[subprocess.Popen, str]]:
    """`args.server --backend cpu` on 127.0.0.1 with the repository's problems and
    `args.server_flags`: yields the process and its target "host:port"; SIGTERM (SIGKILL
    after 30 s) on leaving, and the server's log when it did not exit cleanly. Exits 2
    when the binary is not built."""
    if not os.access(args.server, os.X_OK):
        print(f"{args.server}: not built (cmake --build build --target kerneleval-server)")
        raise SystemExit(2)
    target = f"127.0.0.1:{free_port()}"
    process = subprocess.Popen(
        [args.server, "--backend", "cpu", "--listen", target, "--problems-dir", os.path.join(REPO, "problems"),
         "--log-level", "warn", *args.server_flags],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        yield process, target
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.returncode not in (0, -15):
            print(re.sub(r"\n+", "\n", process.stderr.read() if process.stderr else ""))
