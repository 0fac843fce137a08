"""Headless Chromium driven over the DevTools protocol, for the tests that read a rendered report
(a real browser running the page's own script). Skipped where the machine has no Chromium."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (.ci/run installs it)")


def evaluate_in_chromium(
    page: Path,
    profile: Path,
    *expressions: str,
    window: tuple[int, int] | None = None,
    reload_until: Callable[[object], bool] | None = None,
) -> tuple[list[object], list[str]]:
    """Open `page` in headless Chromium, run each expression in it over the DevTools protocol (a real
    browser running the page's own script), reloading the page between them; return their values and
    any uncaught exceptions. With `reload_until`, an expression after a reload is run on fresh reloads
    until its value satisfies it (for at most 60 s): what a page stored reaches the browser process
    over IPC, and how soon depends on how busy the machine is, not on a fixed wait."""
    import asyncio
    import json as json_module
    import urllib.request

    import aiohttp

    size = [f"--window-size={window[0]},{window[1]}"] if window else []
    process = subprocess.Popen(
        [
            CHROMIUM,
            *size,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            page.as_uri(),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        for _ in range(300):
            if port_file.is_file() and port_file.read_text().strip():
                break
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        for _ in range(100):
            targets = json_module.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5))
            pages = [t for t in targets if t.get("type") == "page" and t.get("url", "").startswith("file:")]
            if pages:
                break
            time.sleep(0.1)

        async def run() -> tuple[list[object], list[str]]:
            errors: list[str] = []
            async with (
                aiohttp.ClientSession() as session,
                session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0) as ws,
            ):
                counter = 0

                async def call(method: str, **params: object) -> dict:
                    nonlocal counter
                    counter += 1
                    await ws.send_json({"id": counter, "method": method, "params": params})
                    while True:
                        message = json_module.loads((await ws.receive(timeout=30)).data)
                        if message.get("method") == "Runtime.exceptionThrown":
                            errors.append(json_module.dumps(message["params"])[:300])
                        if message.get("id") == counter:
                            return message

                await call("Runtime.enable")
                values: list[object] = []

                async def evaluate(expression: str) -> object:
                    # The whole page, its script run to the end, must be there; a busy machine can take seconds.
                    ready = (
                        "window.__gbOldDocument !== true && document.readyState === 'complete' "
                        "&& document.body.dataset.ready === 'yes'"
                    )
                    for _ in range(600):
                        state = await call("Runtime.evaluate", expression=ready, returnByValue=True)
                        if state.get("result", {}).get("result", {}).get("value") is True:
                            break
                        await asyncio.sleep(0.1)
                    else:
                        errors.append("the page never finished loading")
                    result = await call("Runtime.evaluate", expression=expression, returnByValue=True)
                    if "exceptionDetails" in result["result"]:
                        errors.append(str(result["result"]["exceptionDetails"])[:300])
                    return result["result"]["result"].get("value")

                async def reload() -> None:
                    # Marked, so `evaluate` waits for the new document rather than reading the old one.
                    await call("Runtime.evaluate", expression="window.__gbOldDocument = true")
                    await call("Page.reload", ignoreCache=True)

                for index, expression in enumerate(expressions):
                    if index:
                        await reload()
                    value = await evaluate(expression)
                    deadline = time.monotonic() + 60
                    while (
                        index and reload_until is not None and not reload_until(value) and time.monotonic() < deadline
                    ):
                        await asyncio.sleep(0.2)
                        await reload()
                        value = await evaluate(expression)
                    values.append(value)
                return values, errors

        return asyncio.run(run())
    finally:
        process.kill()
        process.wait(timeout=10)
