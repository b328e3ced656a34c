"""Start a command as several JAX processes on this machine.

    python -m jaxsim.launch -n 2 --cpu-devices 2 -- jaxsim simulate robot.xml --batch 64
    python -m jaxsim.launch -n 4 --gpus-per-process 1 -- python train.py

Each process gets the variables ``jaxsim.parallel.initialize`` reads
(``JAX_COORDINATOR_ADDRESS`` on a free local port, ``JAX_NUM_PROCESSES``,
``JAX_PROCESS_ID``), and its own devices: ``--cpu-devices`` host CPU devices
(``JAX_NUM_CPU_DEVICES``), or ``--gpus-per-process`` GPUs (``CUDA_VISIBLE_DEVICES``).
It is what a cluster's launcher (``srun``, ``mpirun``) does across hosts, for testing
multi-process code on one machine and for one host with several GPUs.

Every line a process prints comes out prefixed with its id (``[1] ...``). When one
process fails, the others get ``--grace`` seconds to stop on their own (JAX's
runtime stops them once it misses the failed one), then are killed, and the launcher
exits with the failed process's code; ``--timeout`` bounds the whole run (exit 124).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from jaxsim.parallel import COORDINATOR_ENV, NUM_PROCESSES_ENV, PROCESS_ID_ENV

TIMEOUT_EXIT = 124


def free_port() -> int:
    """A TCP port nothing listens on now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def process_env(rank: int, count: int, port: int, cpu_devices: int | None = None,
                gpus_per_process: int | None = None, base: dict | None = None) -> dict:
    """The environment of process ``rank`` of ``count`` coordinated on local ``port``."""
    env = dict(os.environ if base is None else base)
    env.update({COORDINATOR_ENV: f"127.0.0.1:{port}", NUM_PROCESSES_ENV: str(count),
                PROCESS_ID_ENV: str(rank), "PYTHONUNBUFFERED": "1"})
    if cpu_devices:
        env["JAX_NUM_CPU_DEVICES"] = str(cpu_devices)
    if gpus_per_process:
        first = rank * gpus_per_process
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(first + k) for k in range(gpus_per_process))
    return env


def _forward(stream, rank: int, out) -> None:
    """Copy ``stream``'s lines to ``out``, each prefixed with the process id."""
    for line in iter(stream.readline, ""):
        out.write(f"[{rank}] {line}")
        out.flush()
    stream.close()


def _stop(procs: list[subprocess.Popen], grace_s: float, out) -> None:
    """Wait up to ``grace_s`` for the processes still running, then kill them."""
    deadline = time.monotonic() + grace_s
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for rank, p in enumerate(procs):
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            out.write(f"jaxsim.launch: killed process {rank}\n")


def launch(command: list[str], processes: int, *, cpu_devices: int | None = None,
           gpus_per_process: int | None = None, port: int | None = None, timeout_s: float | None = None,
           grace_s: float = 10.0, out=None) -> int:
    """Run ``command`` as ``processes`` coordinated processes; returns the exit code
    (0 when all succeed, else the first failure's, ``TIMEOUT_EXIT`` on ``timeout_s``).

    Raises:
      ValueError: an empty command, fewer than one process, or a negative device count.
    """
    if not command:
        raise ValueError("launch: no command given (put it after --)")
    if processes < 1:
        raise ValueError(f"launch: the number of processes must be at least 1, got {processes}")
    for name, value in (("cpu_devices", cpu_devices), ("gpus_per_process", gpus_per_process)):
        if value is not None and value < 1:
            raise ValueError(f"launch: {name} must be at least 1, got {value}")
    out = out or sys.stdout
    port = port or free_port()
    procs, threads = [], []
    for rank in range(processes):
        p = subprocess.Popen(command, env=process_env(rank, processes, port, cpu_devices, gpus_per_process),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             start_new_session=True)  # its own group: killing it kills its children
        procs.append(p)
        threads.append(threading.Thread(target=_forward, args=(p.stdout, rank, out), daemon=True))
        threads[-1].start()
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    code = None
    try:
        while code is None:
            codes = [p.poll() for p in procs]
            failed = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                rank, code = failed[0]
                out.write(f"jaxsim.launch: process {rank} exited with code {code}; stopping the others\n")
                _stop(procs, grace_s, out)
            elif all(c == 0 for c in codes):
                code = 0
            elif deadline is not None and time.monotonic() > deadline:
                out.write(f"jaxsim.launch: stopped after the {timeout_s:g} s timeout\n")
                code = TIMEOUT_EXIT
                _stop(procs, 0.0, out)
            else:
                time.sleep(0.05)
    except KeyboardInterrupt:
        code = 130
        _stop(procs, 0.0, out)
    for t in threads:
        t.join(timeout=5)
    out.flush()
    return code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" in argv:
        split = argv.index("--")
        argv, command = argv[:split], argv[split + 1:]
    else:
        command = []
    p = argparse.ArgumentParser(prog="python -m jaxsim.launch", description=__doc__.split("\n")[0],
                                usage="%(prog)s -n P [options] -- COMMAND [ARGS...]")
    p.add_argument("-n", "--processes", type=int, required=True, help="number of processes")
    p.add_argument("--cpu-devices", type=int, default=None, help="host CPU devices per process")
    p.add_argument("--gpus-per-process", type=int, default=None, help="GPUs per process (CUDA_VISIBLE_DEVICES)")
    p.add_argument("--port", type=int, default=None, help="coordinator port (default: a free one)")
    p.add_argument("--timeout", type=float, default=None, help="stop every process after this many seconds")
    p.add_argument("--grace", type=float, default=10.0,
                   help="seconds the others get to stop after one fails, before they are killed")
    args = p.parse_args(argv)
    try:
        return launch(command, args.processes, cpu_devices=args.cpu_devices,
                      gpus_per_process=args.gpus_per_process, port=args.port, timeout_s=args.timeout,
                      grace_s=args.grace)
    except ValueError as e:
        p.error(str(e))


if __name__ == "__main__":
    sys.exit(main())
