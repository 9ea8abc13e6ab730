"""Real browser captures of `uxlab serve`: headless Chromium driven over the DevTools Protocol.

Makes the `cdp` and `har` fixtures in `tests/data/chromium-<version>/` from a real browser:

1. starts `uxlab serve` on 127.0.0.1 with two recordings of `replays/chat` (`chat-one-liner`,
   `chat-clarifying`) and a known profile (TTFT 300 ms, gaps 25 ms, stalls of 450 ms before
   token 6 and 200 ms before token 12), allowing the page's origin (`--cors`);
2. serves a tiny chat page from a second loopback port (stdlib `http.server`) whose script
   POSTs a streaming chat completion (`/v1/chat/completions`, `stream: true`) and then a
   streaming Anthropic message (`/v1/messages`) with `fetch()` and reads each body as it
   arrives (no `EventSource`: `uxlab serve` answers POST only, and an `EventSource` can only
   GET);
3. runs `chromium --headless=new --remote-debugging-port=0`, attaches to a new page over the
   browser's websocket, enables the `Network` domain, calls `Network.streamResourceContent`
   for each API request as soon as `Network.requestWillBeSent` names it (so its body comes
   as `Network.dataReceived` events with `data`), and keeps every `Network.*` event in the
   order the browser sent them: `chat_page_network.jsonl`, the log `--from cdp` reads;
4. assembles a HAR 1.2 file from the same events the way Chrome's DevTools does
   (`chat_page.har`: phase timings from `response.timing`, body from
   `Network.getResponseBody`), and writes what each request was served (`uxlab shape` with
   the seed the server named in `x-uxlab-seed`) into `served/`.

Chromium comes from the OS packages (`apt-get install chromium`); `websockets` comes from a
throwaway environment, never a dependency of uxlab:

    uv run --with websockets python benchmarks/browser_capture.py [--write]

Without `--write` it prints what the browser saw against what was served and writes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime as dt
import functools
import http.server
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx
import websockets
from loopback import free_port, wait_until_serving

from uxlab.live.clients import Prompt
from uxlab.live.record import record_stream
from uxlab.streams import read_replay
from uxlab.streams.importers import import_source
from uxlab.streams.recording import Recording

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ("chat-one-liner", "chat-clarifying")
PROFILE = [
    "--ttft",
    "constant:300",
    "--itl",
    "constant:25",
    "--stalls",
    "at=6:450,12:200",
    "--seed",
    "7",
]
API_PATHS = ("/v1/chat/completions", "/v1/messages")

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>uxlab chat page</title>
<link rel="icon" href="data:,"></head>
<body><pre id="openai"></pre><pre id="anthropic"></pre>
<script>
const API = "__API__";
async function stream(path, body, pick, out) {
  const res = await fetch(API + path, {method: "POST",
    headers: {"Content-Type": "application/json"}, body: JSON.stringify(body)});
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = "", text = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buf += dec.decode(value, {stream: true});
    let cut;
    while ((cut = buf.indexOf("\\n\\n")) >= 0) {
      const ev = buf.slice(0, cut); buf = buf.slice(cut + 2);
      for (const line of ev.split("\\n")) {
        if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
        text += pick(JSON.parse(line.slice(6)));
        out.textContent = text;
      }
    }
  }
  return text;
}
async function run() {
  const openai = await stream("/v1/chat/completions", {model: "any", stream: true,
      messages: [{role: "user", content: "What is the capital of Australia?"}]},
    (d) => (d.choices && d.choices[0] && d.choices[0].delta.content) || "",
    document.getElementById("openai"));
  const anthropic = await stream("/v1/messages", {model: "any", stream: true, max_tokens: 200,
      messages: [{role: "user", content: "Can you help me with something?"}]},
    (d) => (d.type === "content_block_delta" && d.delta.text) || "",
    document.getElementById("anthropic"));
  window.__done = {openai, anthropic};
}
run().catch((e) => { window.__done = {error: String(e)}; });
</script></body></html>
"""

FOLDER_README = """# Chromium {version}: a real browser capture of `uxlab serve`

Made on {date} by `benchmarks/browser_capture.py` (run it again to regenerate; times will
differ, the tests check order and lower bounds only):

```sh
apt-get install chromium   # Debian's package: Chromium {version}
uv run --with websockets python benchmarks/browser_capture.py --write
```

Headless Chromium {version} (the command is in `COMMAND`; `PORT`s were free ports on
127.0.0.1) opened `page.html`, served from one loopback port, which POSTed two streaming
requests with `fetch()` to `uxlab serve` on another (`--cors` for the page's origin, so each
POST has a CORS preflight): `/v1/chat/completions` (`stream: true`), then `/v1/messages`.
The page read each body as it arrived and showed the text. No `EventSource` stream: `uxlab
serve` answers POST only, and an `EventSource` can only GET.

- `chat_page_network.jsonl`: every `Network.*` event of the page's DevTools session, in the
  order Chromium sent them, unedited (`{{"method", "params"}}` per line; the session id left
  out). `Network.streamResourceContent` was called for each API request when
  `Network.requestWillBeSent` named it, so its body came as `Network.dataReceived` with
  `data`. The page load and the two preflights are in it too (no stream).
- `chat_page.har`: a HAR 1.2 file built from the same events the way DevTools' HAR export
  does (phase timings from `response.timing`, the body from `Network.getResponseBody`); only
  the two API requests. `creator` names the script, `browser` the browser.
- `served/`: what the server was told to send each request: `uxlab shape` of the recording
  it named in `x-uxlab-replay-id`, with the seed it named in `x-uxlab-seed` and the profile
  `{profile}`.

The texts are two recordings of `replays/chat` (`chat-one-liner`, `chat-clarifying`),
written for uxlab (Apache-2.0, like the rest of this folder).
"""

CHROMIUM_FLAGS = [
    "--headless=new",
    "--remote-debugging-port=0",
    "--no-sandbox",  # root in a container
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-gpu",
    "--disable-extensions",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-domain-reliability",
    "--disable-sync",
    "--no-pings",
    # nothing but loopback: the browser resolves no other name
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]


class _Page(http.server.BaseHTTPRequestHandler):
    def __init__(self, *args: Any, page: bytes, **kwargs: Any) -> None:
        self.page = page
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:
        if self.path != "/":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.page)))
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args: Any) -> None:
        pass


def serve_page(port: int, api: str) -> http.server.ThreadingHTTPServer:
    page = PAGE.replace("__API__", api).encode()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", port), functools.partial(_Page, page=page)
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def start_chromium(profile_dir: Path, chromium: str) -> tuple[subprocess.Popen, str]:
    """Chromium and its browser websocket URL (from `DevToolsActivePort`)."""
    proc = subprocess.Popen(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile_dir}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    port_file = profile_dir / "DevToolsActivePort"
    deadline = time.monotonic() + 30
    while not port_file.is_file() or len(port_file.read_text().splitlines()) < 2:
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            sys.exit("chromium did not start (is it installed? apt-get install chromium)")
        time.sleep(0.1)
    port, path = port_file.read_text().splitlines()[:2]
    return proc, f"ws://127.0.0.1:{port}{path}"


class Cdp:
    """A flat-session CDP connection: commands with ids, events into one list."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.next_id = 0
        self.pending: dict[int, asyncio.Future] = {}
        self.events: list[dict[str, Any]] = []
        self.on_event: Any = None
        self.sending: set[asyncio.Future] = set()

    async def pump(self) -> None:
        async for raw in self.ws:
            msg = json.loads(raw)
            if "id" in msg:
                fut = self.pending.pop(msg["id"], None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
            elif "method" in msg:
                self.events.append(msg)
                if self.on_event is not None:
                    self.on_event(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None):
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        fut = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = fut
        self.sending.add(sent := asyncio.ensure_future(self.ws.send(json.dumps(msg))))
        sent.add_done_callback(self.sending.discard)
        return fut

    async def call(self, method: str, params: dict | None = None, session: str | None = None):
        reply = await asyncio.wait_for(self.send(method, params, session), 30)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]


async def capture(ws_url: str, page_url: str) -> tuple[list[dict], dict, dict, dict]:
    """Network events, the page's texts, streamResourceContent replies, response bodies."""
    async with websockets.connect(ws_url, max_size=None) as ws:
        cdp = Cdp(ws)
        pump = asyncio.ensure_future(cdp.pump())
        target = (await cdp.call("Target.createTarget", {"url": "about:blank"}))["targetId"]
        attached = await cdp.call("Target.attachToTarget", {"targetId": target, "flatten": True})
        session = attached["sessionId"]
        streamed: dict[str, asyncio.Future] = {}

        def on_event(msg: dict[str, Any]) -> None:
            params = msg.get("params", {})
            if msg["method"] != "Network.requestWillBeSent":
                return
            request = params.get("request", {})
            if request.get("method") == "POST" and request.get("url", "").endswith(API_PATHS):
                streamed[params["requestId"]] = cdp.send(
                    "Network.streamResourceContent", {"requestId": params["requestId"]}, session
                )

        cdp.on_event = on_event
        await cdp.call("Network.enable", {}, session)
        await cdp.call("Page.enable", {}, session)
        await cdp.call("Page.navigate", {"url": page_url}, session)
        deadline = time.monotonic() + 60
        done: Any = None
        while done is None:
            if time.monotonic() > deadline:
                sys.exit("the page did not finish its two streams in 60 s")
            await asyncio.sleep(0.2)
            reply = await cdp.call(
                "Runtime.evaluate", {"expression": "window.__done", "returnByValue": True}, session
            )
            done = reply["result"].get("value")
        await asyncio.sleep(0.5)  # loadingFinished of the last stream
        replies = {rid: await asyncio.wait_for(fut, 10) for rid, fut in streamed.items()}
        bodies = {}
        for rid in streamed:
            try:
                bodies[rid] = await cdp.call("Network.getResponseBody", {"requestId": rid}, session)
            except RuntimeError as exc:
                bodies[rid] = {"error": str(exc)}
        network = [
            {"method": m["method"], "params": m["params"]}
            for m in cdp.events
            if m.get("sessionId") == session and m["method"].startswith("Network.")
        ]
        pump.cancel()
        return network, done, replies, bodies


def _iso(wall_s: float) -> str:
    return dt.datetime.fromtimestamp(wall_s, dt.UTC).isoformat(timespec="milliseconds")


def _timings(issued_s: float, end_s: float, timing: dict[str, float]) -> dict[str, float]:
    """HAR phases from CDP's ResourceTiming, as DevTools' HAR writer computes them."""
    start_s = timing["requestTime"]
    blocked = (start_s - issued_s) * 1000.0 if issued_s < start_s else 0.0
    firsts = [timing[k] for k in ("dnsStart", "connectStart", "sendStart") if timing[k] >= 0]
    blocked += min(firsts) if firsts else 0.0

    def span(a: str, b: str) -> float:
        return round(timing[b] - timing[a], 3) if timing[a] >= 0 else -1

    ssl = span("sslStart", "sslEnd")
    return {
        "blocked": round(blocked, 3),
        "dns": span("dnsStart", "dnsEnd"),
        "connect": span("connectStart", "connectEnd"),
        "ssl": ssl,
        "send": round(timing["sendEnd"] - timing["sendStart"], 3),
        "wait": round(timing["receiveHeadersEnd"] - timing["sendEnd"], 3),
        "receive": round((end_s - (start_s + timing["receiveHeadersEnd"] / 1000.0)) * 1000, 3),
    }


def _headers(headers: dict[str, str]) -> list[dict[str, str]]:
    return [{"name": k, "value": v} for k, v in headers.items()]


def build_har(network: list[dict], bodies: dict[str, dict], version: str) -> dict[str, Any]:
    """A HAR 1.2 log of the API requests of a CDP session (the entries DevTools would write)."""
    by_id: dict[str, dict[str, dict]] = {}
    for msg in network:
        rid = msg["params"].get("requestId")
        by_id.setdefault(rid, {}).setdefault(msg["method"], msg["params"])
    entries = []
    for rid, seen in by_id.items():
        sent = seen.get("Network.requestWillBeSent")
        got = seen.get("Network.responseReceived")
        end = seen.get("Network.loadingFinished")
        if not (sent and got and end) or rid not in bodies:
            continue
        request, response = sent["request"], got["response"]
        timings = _timings(sent["timestamp"], end["timestamp"], response["timing"])
        body = bodies[rid]
        content: dict[str, Any] = {
            "size": int(end.get("encodedDataLength", 0)),
            "mimeType": response.get("mimeType", ""),
        }
        if "body" in body:
            content["text"] = body["body"]
            if body.get("base64Encoded"):
                content["encoding"] = "base64"
        post = request.get("postData")
        if post is None and request.get("postDataEntries"):
            post = b"".join(
                base64.b64decode(e.get("bytes", "")) for e in request["postDataEntries"]
            ).decode()
        entries.append(
            {
                "startedDateTime": _iso(sent["wallTime"]),
                "time": round(sum(v for v in timings.values() if v > 0), 3),
                "request": {
                    "method": request["method"],
                    "url": request["url"],
                    "httpVersion": response.get("protocol", "http/1.1"),
                    "headers": _headers(request.get("headers", {})),
                    "queryString": [],
                    "cookies": [],
                    "headersSize": -1,
                    "bodySize": len(post or ""),
                    "postData": {"mimeType": "application/json", "text": post or ""},
                },
                "response": {
                    "status": response["status"],
                    "statusText": response.get("statusText", ""),
                    "httpVersion": response.get("protocol", "http/1.1"),
                    "headers": _headers(response.get("headers", {})),
                    "cookies": [],
                    "content": content,
                    "redirectURL": "",
                    "headersSize": -1,
                    "bodySize": -1,
                },
                "cache": {},
                "timings": timings,
                "_resourceType": sent.get("type", "").lower(),
            }
        )
    return {
        "log": {
            "version": "1.2",
            "creator": {"name": "uxlab benchmarks/browser_capture.py", "version": "1"},
            "browser": {"name": "Chromium", "version": version},
            "pages": [],
            "entries": entries,
        }
    }


def served_schedules(network: list[dict], corpus: Path, out: Path) -> list[Path]:
    """`uxlab shape` of what each API request was served (replay id and seed from headers)."""
    written = []
    for msg in network:
        if msg["method"] != "Network.responseReceived":
            continue
        headers = {k.lower(): v for k, v in msg["params"]["response"].get("headers", {}).items()}
        if "x-uxlab-replay-id" not in headers:
            continue
        replay, seed = headers["x-uxlab-replay-id"], headers["x-uxlab-seed"]
        path = out / f"{replay}.seed{seed}.jsonl"
        profile = PROFILE[: PROFILE.index("--seed")]
        cmd = [sys.executable, "-m", "uxlab", "shape", str(corpus / f"{replay}.jsonl")]
        subprocess.run([*cmd, "-o", str(path), *profile, "--seed", seed], check=True)
        written.append(path)
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    ap.add_argument("--write", action="store_true", help="write the fixtures into tests/data")
    args = ap.parse_args()
    version = subprocess.run(
        [args.chromium, "--version"], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    today = dt.datetime.now(dt.UTC).date().isoformat()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        corpus = tmp / "corpus"
        corpus.mkdir()
        for name in CORPUS:
            shutil.copy(ROOT / "replays" / "chat" / f"{name}.jsonl", corpus)
        api_port, page_port = free_port(), free_port()
        page_origin = f"http://127.0.0.1:{page_port}"
        cmd = [sys.executable, "-m", "uxlab", "serve", str(corpus), "--port", str(api_port)]
        server = subprocess.Popen(
            [*cmd, *PROFILE, "--cors", page_origin, "--quiet"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        browser = None
        page = None
        try:
            wait_until_serving(f"http://127.0.0.1:{api_port}/v1", server)
            page = serve_page(page_port, f"http://127.0.0.1:{api_port}")
            browser, ws_url = start_chromium(tmp / "profile", args.chromium)
            load_before = os.getloadavg()[0]
            network, done, replies, bodies = asyncio.run(capture(ws_url, page_origin + "/"))
            baseline = asyncio.run(record_baseline(api_port))
            load_after = os.getloadavg()[0]
        finally:
            if browser is not None:
                browser.terminate()
                browser.wait(10)
            if page is not None:
                page.shutdown()
            server.terminate()
            server.wait(10)
        if "error" in done:
            sys.exit(f"the page failed: {done['error']}")
        for rid, reply in replies.items():
            buffered = reply.get("result", {}).get("bufferedData", "")
            if buffered or "error" in reply:
                sys.exit(f"streamResourceContent for {rid} came late: {reply}")
        out = tmp / "out"
        (out / "served").mkdir(parents=True)
        log = out / "chat_page_network.jsonl"
        log.write_text("".join(json.dumps(m, separators=(",", ":")) + "\n" for m in network))
        har = out / "chat_page.har"
        har.write_text(json.dumps(build_har(network, bodies, version), indent=1) + "\n")
        schedules = served_schedules(network, corpus, out / "served")
        print(f"{today}, load average (1 min) {load_before:.1f} before, {load_after:.1f} after")
        report(version, done, log, har, schedules, baseline)
        (out / "page.html").write_text(PAGE.replace("__API__", "http://127.0.0.1:PORT"))
        chromium = [Path(args.chromium).name, *CHROMIUM_FLAGS, "--user-data-dir=TMP", "about:blank"]
        serve = ["uxlab", "serve", "CORPUS", "--port", "PORT", *PROFILE, "--cors", "ORIGIN"]
        (out / "COMMAND").write_text(shlex.join(chromium) + "\n" + shlex.join(serve) + "\n")
        (out / "README.md").write_text(
            FOLDER_README.format(version=version, date=today, profile=" ".join(PROFILE))
        )
        if args.write:
            dest = ROOT / "tests" / "data" / f"chromium-{version}"
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(out, dest)
            print(f"wrote {dest.relative_to(ROOT)}")


async def record_baseline(port: int) -> list[Recording]:
    """The same two prompts recorded by uxlab's own recorder from the same server, after the
    browser: a baseline from the same run (the profile draws nothing: every seed's schedule
    is the same)."""
    out = []
    async with httpx.AsyncClient() as client:
        for api, content in (
            ("openai", "What is the capital of Australia?"),
            ("anthropic", "Can you help me with something?"),
        ):
            prompt = Prompt([{"role": "user", "content": content}], params={"max_tokens": 200})
            base = f"http://127.0.0.1:{port}/v1"
            result = await record_stream(client, api, base, "any", prompt, None, f"b-{api}")
            out.append(result.recording)
    return out


def _late(rec: Recording, served: Recording) -> str:
    """Each event's time minus its scheduled time (range), and each gap's (largest |error|)."""
    late = [c.t_ms - s.t_ms for c, s in zip(rec.chunks, served.chunks, strict=True)]
    gap_error = max(abs(b - a) for a, b in pairwise(late))
    return f"{min(late):.1f} to {max(late):.1f} ms (gaps within {gap_error:.1f} ms)"


def report(
    version: str,
    done: dict,
    log: Path,
    har: Path,
    schedules: list[Path],
    baseline: list[Recording],
) -> None:
    """What the browser saw (CDP import) against what was served (the schedules), and what
    uxlab's recorder saw of the same server."""
    print(f"Chromium {version}; page texts: {json.dumps(done)[:160]}")
    captured = import_source("cdp", log).recordings
    from_har = import_source("har", har).recordings
    for rec, hrec, base, path in zip(captured, from_har, baseline, schedules, strict=True):
        served = read_replay(path)
        same = rec.text == served.text == hrec.text == base.text
        print(
            f"{path.name}: text equal {same}; {len(rec.chunks)} events; per event, minus"
            f" served: browser {_late(rec, served)}, uxlab's recorder {_late(base, served)};"
            f" HAR e2e {hrec.end.t_ms:.1f} vs served {served.end.t_ms:.1f} ms"
        )


if __name__ == "__main__":
    main()
