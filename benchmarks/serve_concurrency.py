"""Timing check at scale: per-chunk lateness of `uxlab serve` against concurrent streams.

Serves one synthetic recording (CHUNKS content chunks) with `--ttft constant:T --itl
constant:G`, so chunk j of every stream is due T + j*G ms after its request, and plays N
streams at once for each N of a ladder (their starts spread evenly over RAMP s), with
`--workers 1` and `--workers 2`; with `--guidellm PATH` (a `guidellm` executable, e.g. in
a throwaway venv) also guidellm's mock server (`guidellm mock-server --ttft-ms T --itl-ms G
--output-tokens CHUNKS`), measured by the same client. The client is a lean raw-socket
SSE reader split over P processes; per chunk: arrival (from the client's send) minus due.

Prints per server and N: chunks measured, p50 / p99 lateness, the server's CPU per chunk
(its process tree's user + system time over the level), and the 1-minute load average at
the level's end; then the knee per server: the smallest N whose median passes 10 ms.
`--waits timer,spin` runs uxlab once per clock wait (`UXLAB_CLOCK_WAIT`; serve's default is
`timer`, no spinning), in the same run.
The client shares the machine with the server: at high N its own lateness is in the
figures (the same for every server).

    python benchmarks/serve_concurrency.py [--streams 25,50,100,200,400] [--guidellm PATH]
    python benchmarks/serve_concurrency.py --workers 1 --waits timer,spin --streams 100,200,400,800
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson

from uxlab.shaping import Profile, shape
from uxlab.streams.recording import Chunk, End, Header, Recording
from uxlab.streams.replay_file import write_replay

KNEE_MS = 10.0
BODY = orjson.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]})


def synthetic_corpus(folder: Path, n_chunks: int) -> Path:
    """One recording of `n_chunks` one-word content chunks (times replaced by the profile)."""
    chunks = [Chunk(t_ms=100.0 + 10.0 * j, text=f"w{j} ") for j in range(n_chunks)]
    rec = Recording(Header(id="bench"), list(chunks), End(t_ms=100.0 + 10.0 * n_chunks))
    return write_replay(rec, folder / "bench.jsonl")


def due_ms(args: argparse.Namespace) -> np.ndarray:
    """When chunk j is due (ms after the request), as uxlab shapes it; guidellm's intent."""
    return np.array([args.ttft + j * args.itl for j in range(args.chunks)])


def check_uxlab_schedule(corpus: Path, args: argparse.Namespace) -> None:
    from uxlab.streams import load_corpus

    rec = load_corpus(corpus).recordings[0]
    profile = Profile.from_table({"ttft": f"constant:{args.ttft}", "itl": f"constant:{args.itl}"})
    got = np.array([c.t_ms for c in shape(rec, profile, seed=0).chunks])
    if got.shape != due_ms(args).shape or np.abs(got - due_ms(args)).max() > 1e-6:
        sys.exit("the shaped schedule is not T + j*G; the benchmark's due times would be wrong")


# -- the client ---------------------------------------------------------------------------
async def _one_stream(port: int, delay_s: float, due: np.ndarray, out: list[float]) -> None:
    await asyncio.sleep(delay_s)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(BODY)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    t0_ns = time.perf_counter_ns()
    writer.write(head + BODY)
    buf, j = b"", 0
    while True:
        data = await reader.read(65536)
        if not data:
            break
        now_ms = (time.perf_counter_ns() - t0_ns) / 1e6
        buf += data
        *events, buf = buf.split(b"\n\n")
        for event in events:
            at = event.find(b"data: {")
            if at < 0:
                continue
            try:
                delta = orjson.loads(event[at + 6 :])["choices"][0]["delta"]
            except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
                continue
            if delta.get("content") and j < len(due):
                out.append(now_ms - float(due[j]))
                j += 1
    writer.close()


def run_client(job: tuple[int, int, float, list[float]]) -> list[float]:
    """One client process: `n` streams, starts spread over `ramp_s`; lateness per chunk."""
    port, n, ramp_s, due = job
    out: list[float] = []
    due_arr = np.array(due)

    async def all_streams() -> None:
        await asyncio.gather(
            *(_one_stream(port, ramp_s * i / max(n, 1), due_arr, out) for i in range(n))
        )

    asyncio.run(all_streams())
    return out


# -- servers ------------------------------------------------------------------------------
def _tree(pid: int) -> list[int]:
    """pid and its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of pid's process tree."""
    total = 0
    for p in _tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            sys.exit(f"the server exited ({proc.returncode}) before listening")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.5)
    sys.exit(f"nothing listening on {port} after {timeout_s:.0f} s")


def start_server(kind: str, workers: int, corpus: Path, args: argparse.Namespace, wait: str = ""):
    port = _free_port()
    env = dict(os.environ, UXLAB_CLOCK_WAIT=wait) if wait else None
    if kind == "uxlab":
        cmd = [sys.executable, "-m", "uxlab", "serve", str(corpus), "--port", str(port)]
        cmd += ["--ttft", f"constant:{args.ttft}", "--itl", f"constant:{args.itl}", "--quiet"]
        cmd += ["--workers", str(workers), "--max-connections", "2048"]
    else:
        cmd = [args.guidellm, "mock-server", "--port", str(port), "--workers", str(workers)]
        cmd += ["--ttft-ms", str(args.ttft), "--itl-ms", str(args.itl)]
        cmd += ["--output-tokens", str(args.chunks)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env
    )
    _wait_port(port, proc)
    return proc, port


def stop_server(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def measure(pool, port: int, n: int, args: argparse.Namespace, proc) -> dict:
    due = due_ms(args).tolist()
    per = [n // args.clients + (1 if i < n % args.clients else 0) for i in range(args.clients)]
    cpu0 = cpu_s(proc.pid)
    parts = pool.map(run_client, [(port, k, args.ramp_s, due) for k in per if k])
    cpu1 = cpu_s(proc.pid)
    late = np.concatenate([np.array(p) for p in parts]) if parts else np.array([])
    return {
        "n": n,
        "chunks": late.size,
        "expected": n * args.chunks,
        "p50": float(np.median(late)) if late.size else float("nan"),
        "p99": float(np.percentile(late, 99)) if late.size else float("nan"),
        "cpu_us_per_chunk": (cpu1 - cpu0) / max(late.size, 1) * 1e6,
        "load1": os.getloadavg()[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", default="25,50,100,200,400", help="the ladder of N")
    parser.add_argument("--workers", default="1,2", help="uxlab worker counts")
    parser.add_argument(
        "--waits",
        default="",
        help="uxlab clock waits to compare, e.g. timer,spin (default: serve's)",
    )
    parser.add_argument("--guidellm", help="a guidellm executable: also its mock server")
    parser.add_argument("--guidellm-workers", default="1", help="its worker counts")
    parser.add_argument("--ttft", type=float, default=200.0, help="ms (default 200)")
    parser.add_argument("--itl", type=float, default=20.0, help="ms (default 20)")
    parser.add_argument("--chunks", type=int, default=100, help="chunks per stream")
    parser.add_argument("--ramp-s", type=float, default=1.0, help="starts spread over S s")
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    args = parser.parse_args()
    ladder = [int(x) for x in args.streams.split(",")]
    waits = [w for w in args.waits.split(",") if w] or [""]
    servers = [("uxlab", int(w), wait) for w in args.workers.split(",") for wait in waits]
    if args.guidellm:
        servers += [("guidellm", int(w), "") for w in args.guidellm_workers.split(",")]
    print(
        f"{os.cpu_count()} CPUs; TTFT {args.ttft:g} ms, ITL {args.itl:g} ms, {args.chunks} "
        f"chunks per stream, starts over {args.ramp_s:g} s, {args.clients} client processes; "
        f"load average at start {os.getloadavg()[0]:.1f}"
    )
    knees = {}
    with tempfile.TemporaryDirectory() as tmp, multiprocessing.Pool(args.clients) as pool:
        corpus = synthetic_corpus(Path(tmp), args.chunks)
        check_uxlab_schedule(corpus, args)
        print("server                N   chunks    p50 ms    p99 ms  CPU us/chunk  load1")
        for kind, workers, wait in servers:
            proc, port = start_server(kind, workers, corpus, args, wait)
            name = f"{kind} x{workers}" + (f" {wait}" if wait else "")
            try:
                measure(pool, port, 2, args, proc)  # warm both sides
                knees[name] = None
                for n in ladder:
                    r = measure(pool, port, n, args, proc)
                    missing = "" if r["chunks"] == r["expected"] else f" ({r['expected']} due)"
                    print(
                        f"{name:18} {n:4d} {r['chunks']:8d} {r['p50']:9.2f} {r['p99']:9.2f} "
                        f"{r['cpu_us_per_chunk']:13.0f} {r['load1']:6.1f}{missing}",
                        flush=True,
                    )
                    if knees[name] is None and r["p50"] > KNEE_MS:
                        knees[name] = n
            finally:
                stop_server(proc)
    print(f"knee (smallest N whose median lateness passes {KNEE_MS:g} ms):")
    for name, knee in knees.items():
        print(f"  {name}: {knee if knee is not None else f'> {ladder[-1]}'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
