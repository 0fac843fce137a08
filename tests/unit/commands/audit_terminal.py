"""`guardbench audit` driven through a real pseudo-terminal, as a person at a keyboard drives it."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time


class Terminal:
    """`guardbench audit` on the slave side of a real pty; keys are written to the master side."""

    def __init__(self, *args: str, command: str = "audit") -> None:
        self.master, slave = pty.openpty()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "pytest_guardbench.commands.main", command, *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            close_fds=True,
        )
        os.close(slave)
        self.seen = ""

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.seen:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"waited for {text!r}; the screen shows:\n{self.seen[-2000:]}"
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    self.seen += os.read(self.master, 65536).decode(errors="replace")
                except OSError:  # the program ended and closed its side
                    break
        assert text in self.seen, f"waited for {text!r}; the screen shows:\n{self.seen[-2000:]}"
        return self.seen

    def press(self, keys: str, before: str) -> None:
        for key in keys:
            self.wait_for(before)
            self.seen = ""
            os.write(self.master, key.encode())

    def close(self) -> int:
        code = self.process.wait(timeout=30)
        os.close(self.master)
        return code
