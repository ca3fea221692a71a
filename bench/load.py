"""The load driver of the review benchmark: gunicorn, plain HTTP with cookies, and wrk.

`gunicorn` serves the app on a loopback port for the length of a block;
`fetch` and `login` make single requests (a reviewer's session and CSRF
cookies come from the real login form); `wrk` drives the load from Lua
scripts, one connection and one logged-in reviewer per client, and reports
latency percentiles and counts of good and bad answers as one JSON line.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from harness import ROOT

# --- the server and HTTP -----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Server:
    port: int
    proc: subprocess.Popen
    log: Path


@contextmanager
def gunicorn(
    env: dict[str, str], *, log: Path, worker_class: str = "sync", threads: int = 4,
    workers: int = 2, config: Path | None = None,
) -> Iterator[Server]:  # fmt: skip
    """`config.wsgi` served by gunicorn `workers` on a free loopback port, until the block
    ends; `config` is a gunicorn settings file (`-c`)."""
    binary = Path(sys.executable).parent / "gunicorn"
    if not binary.exists():
        sys.exit(f"{binary} is missing: .venv/bin/pip install gunicorn")
    port = free_port()
    command = [
        str(binary), "config.wsgi:application", "--chdir", str(ROOT),
        "--bind", f"127.0.0.1:{port}", "--workers", str(workers), "--worker-class", worker_class,
        "--log-level", "warning", "--error-logfile", str(log),
    ]  # fmt: skip
    if config is not None:
        command += ["-c", str(config)]
    if worker_class == "gthread":
        command += ["--threads", str(threads), "--keep-alive", "5"]
    with log.open("ab") as sink:
        proc = subprocess.Popen(command, env=env, stdout=sink, stderr=sink, cwd=ROOT)
    server = Server(port, proc, log)
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"gunicorn exited with {proc.returncode}:\n{log.read_text()}")
            try:
                if fetch(server, "GET", "/login/")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not answer within 30 s:\n{log.read_text()}")
            time.sleep(0.2)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def fetch(
    server: Server, method: str, path: str, *, cookies: dict[str, str] | None = None,
    headers: dict[str, str] | None = None, body: bytes | None = None,
) -> tuple[int, http.client.HTTPMessage, bytes]:  # fmt: skip
    """One request on its own connection; Set-Cookie values are written back into `cookies`."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        sent = dict(headers or {})
        if cookies:
            sent["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    if cookies is not None:
        for raw in response.headers.get_all("Set-Cookie") or []:
            for name, morsel in SimpleCookie(raw).items():
                cookies[name] = morsel.value
    return response.status, response.headers, data


def login(server: Server, username: str, password: str) -> dict[str, str]:
    """Session and CSRF cookies of `username`, through the real login form."""
    cookies: dict[str, str] = {}
    status, _, page = fetch(server, "GET", "/login/", cookies=cookies)
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    if status != 200 or token is None:
        raise RuntimeError(f"GET /login/ answered {status} without a CSRF token")
    form = {"username": username, "password": password, "csrfmiddlewaretoken": token[1].decode()}
    status, _, _ = fetch(
        server, "POST", "/login/", cookies=cookies, body=urlencode(form).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    if status != 302 or "sessionid" not in cookies:
        raise RuntimeError(f"logging in {username} answered {status}")
    return cookies


# --- wrk ---------------------------------------------------------------------------------

LUA_DONE = r"""
function done(summary, latency, requests)
  local sums = {}
  for _, name in ipairs({"good", "bad"}) do
    sums[name] = 0
    for _, t in ipairs(threads) do sums[name] = sums[name] + (t:get(name) or 0) end
  end
  local codes = ""
  for _, t in ipairs(threads) do codes = codes .. (t:get("codes") or "") end
  local e = summary.errors
  io.write(string.format(
    'BENCH {"requests": %d, "duration_us": %d, "bytes": %d, "good": %d, "bad": %d, ' ..
    '"socket_errors": %d, "p50_us": %d, "p95_us": %d, "p99_us": %d, "max_us": %d, ' ..
    '"codes": "%s"}\n',
    summary.requests, summary.duration, summary.bytes, sums.good, sums.bad,
    e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(95),
    latency:percentile(99), latency.max, codes))
end
"""

# Each wrk thread has one connection and its own Lua state, so "one thread" is
# "one client": its user, and the seqs it has seen, live in thread globals.
LUA_GET = (
    r"""
local cookies = __COOKIES__
threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("cookie", cookies[(#threads - 1) % #cookies + 1])
end
function init(args)
  req = wrk.format("GET", nil, {["Cookie"] = cookie})
  good, bad, codes = 0, 0, ""
end
function request() return req end
function response(status, headers, body)
  -- A redirect to the login page would be fast and wrong: only a 200 counts.
  if status == 200 then good = good + 1 else
    bad = bad + 1
    if #codes < 60 then codes = codes .. status .. " " end
  end
end
"""
    + LUA_DONE
)

LUA_SAVE = (
    r"""
local users = __USERS__
local claims = __CLAIMS__
local claim_seq = __CLAIM_SEQ__
local prefix, suffix, card = __PREFIX__, __SUFFIX__, __CARD__
local supports = {"supported", "partial", "unsupported", "not_assessable"}
threads = {}
function setup(thread)
  table.insert(threads, thread)
  thread:set("id", #threads)
end
function init(args)
  local user = users[(id - 1) % #users + 1]
  headers = {
    ["Cookie"] = user.cookie, ["X-CSRFToken"] = user.csrf, ["HX-Request"] = "true",
    ["Content-Type"] = "application/x-www-form-urlencoded",
  }
  -- Clients start on different claims, then each goes through all of them.
  pos = ((id - 1) * math.floor(#claims / #users)) % #claims
  own, n = {}, 0
  good, bad, codes = 0, 0, ""
end
function request()
  pos = pos % #claims + 1
  current = claims[pos]
  n = n + 1
  local body = "support=" .. supports[n % #supports + 1] ..
    "&reason=Passage+" .. current .. "+states+it+in+its+second+sentence%2C+save+" .. n ..
    "&seen_claim_seq=" .. claim_seq[current] .. "&seen_own_seq=" .. (own[current] or "") ..
    "&seen_head_seq=" .. card
  return wrk.format("POST", prefix .. current .. suffix, headers, body)
end
function response(status, headers, body)
  -- The view sends its event after the swap settles (HX-Trigger-After-Settle); it carries
  -- my newest seq on this claim (so does a whole card's form): the next save sends it.
  local trigger = (headers["HX-Trigger"] or headers["hx-trigger"] or "") ..
    (headers["HX-Trigger-After-Settle"] or headers["hx-trigger-after-settle"] or "")
  local seq = string.match(trigger, '"seq":%s*(%d+)') or
    string.match(body, 'name="seen_own_seq" value="(%d+)"')
  if seq then own[current] = seq end
  if status == 200 and string.find(trigger, "verdict-saved", 1, true) then
    good = good + 1
  else
    bad = bad + 1
    if #codes < 60 then codes = codes .. status .. " " end
  end
end
"""
    + LUA_DONE
)


def lua(value: Any) -> str:
    """A Lua literal for strings, numbers, lists and string-keyed dicts (ASCII only)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"[{lua(k)}] = {lua(v)}" for k, v in value.items()) + "}"
    return "{" + ", ".join(lua(item) for item in value) + "}"


def cookie_header(cookies: dict[str, str]) -> str:
    return "; ".join(f"{k}={v}" for k, v in cookies.items())


@dataclass
class Load:
    clients: int
    requests: int
    seconds: float
    good: int
    bad: int
    socket_errors: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    bytes_per_request: float
    codes: str

    @property
    def per_second(self) -> float:
        return self.good / self.seconds


def wrk(server: Server, script: Path, path: str, clients: int, seconds: int) -> Load:
    command = [
        "wrk", f"-t{clients}", f"-c{clients}", f"-d{seconds}s", "--timeout", "10s",
        "-s", str(script), f"http://127.0.0.1:{server.port}{path}",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60)
    line = next((x for x in done.stdout.splitlines() if x.startswith("BENCH ")), None)
    if done.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    raw = json.loads(line.removeprefix("BENCH "))
    return Load(
        clients=clients, requests=raw["requests"], seconds=raw["duration_us"] / 1e6,
        good=raw["good"], bad=raw["bad"], socket_errors=raw["socket_errors"],
        p50_ms=raw["p50_us"] / 1000, p95_ms=raw["p95_us"] / 1000,
        p99_ms=raw["p99_us"] / 1000, max_ms=raw["max_us"] / 1000,
        bytes_per_request=raw["bytes"] / max(raw["requests"], 1), codes=raw["codes"].strip(),
    )  # fmt: skip


def get_script(workdir: Path, sessions: list[dict[str, str]], name: str = "get.lua") -> Path:
    script = workdir / name
    script.write_text(LUA_GET.replace("__COOKIES__", lua([cookie_header(s) for s in sessions])))
    return script


def save_script(
    workdir: Path,
    sessions: list[dict[str, str]],
    *,
    claims: list[str],
    claim_seq: dict[str, int],
    prefix: str,
    suffix: str,
    card: str = "compact",
) -> Path:
    """POSTs to prefix + claim key + suffix, each client as its own reviewer; `card` compact
    asks for the card back compact, as the page's script does (`review_site.save_form`)."""
    users = [{"cookie": cookie_header(s), "csrf": s["csrftoken"]} for s in sessions]
    script = workdir / "save.lua"
    script.write_text(
        LUA_SAVE.replace("__USERS__", lua(users))
        .replace("__CLAIMS__", lua(claims))
        .replace("__CLAIM_SEQ__", lua(claim_seq))
        .replace("__PREFIX__", lua(prefix))
        .replace("__SUFFIX__", lua(suffix))
        .replace("__CARD__", lua("&card=compact" if card == "compact" else ""))
    )
    return script


def progress(label: str, load: Load, extra: str = "") -> None:
    print(
        f"  {label}: p50 {load.p50_ms:6.2f} ms  p95 {load.p95_ms:6.2f} ms  "
        f"{load.per_second:7.1f}/s  ok {load.good}  not ok {load.bad}"
        f"{'  ' + load.codes if load.codes else ''}  socket errors {load.socket_errors}"
        f"{'  ' + extra if extra else ''}",
        flush=True,
    )
