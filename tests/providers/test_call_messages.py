"""The messages between a run and its call processes (providers/call_messages.py): every kind crosses
a real pipe as itself, and a real call process, spoken to in those messages alone, answers each
request with its own call id."""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import subprocess
import sys
from collections.abc import Iterator
from multiprocessing.connection import Connection

import pytest

from pytest_guardbench.providers import ClassifyRequest, GenerationParams
from pytest_guardbench.providers.call_messages import (
    AddModel,
    Answer,
    Classify,
    Close,
    CountCalls,
    Failure,
    Generate,
    Moderate,
    Request,
)
from pytest_guardbench.providers.call_processes import CALL_PROCESS_MODULE, PACKAGE_PARENT
from pytest_guardbench.records import Completion

PARAMS = GenerationParams(max_new_tokens=8)


def test_every_message_kind_crosses_a_pipe_as_itself():
    sent = [
        AddModel(0, {"name": "m", "model": "m", "base_url": "http://127.0.0.1:1/v1", "api_key_env": "GB_KEY"}),
        Request(1, Generate(0, [[{"role": "user", "content": "hi"}]], PARAMS, [None])),
        Request(2, Classify(0, ClassifyRequest([[{"role": "user", "content": "hi"}]], {"x": 1}, ("Yes", "No")))),
        Request(3, Moderate(0, ["hi"])),
        Request(4, CountCalls(0)),
        Answer(1, [Completion(text="hello", model="m")]),
        Failure(2, "m: HTTP 500 from the server"),
        Close(),
    ]
    ours, theirs = multiprocessing.Pipe()
    with ours, theirs:
        for message in sent:
            ours.send(message)
        received = [theirs.recv() for _ in sent]
    assert received == sent
    assert [type(message) for message in received] == [type(message) for message in sent]
    with pytest.raises(dataclasses.FrozenInstanceError):
        received[1].call_id = 9


@pytest.fixture
def call_process() -> Iterator[tuple[subprocess.Popen[bytes], Connection, Connection]]:
    """A call process started as `CallProcesses` starts one, and the two ends of its pipe."""
    to_read, to_write = os.pipe()
    from_read, from_write = os.pipe()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (PACKAGE_PARENT, os.environ.get("PYTHONPATH")) if p))
    popen = subprocess.Popen(
        [sys.executable, "-m", CALL_PROCESS_MODULE, str(to_read), str(from_write)],
        pass_fds=(to_read, from_write),
        stdin=subprocess.DEVNULL,
        env=env,
    )
    os.close(to_read)
    os.close(from_write)
    requests, answers = Connection(to_write, readable=False), Connection(from_read, writable=False)
    yield popen, requests, answers
    requests.close()
    answers.close()
    if popen.poll() is None:
        popen.kill()
    popen.wait()


def test_a_call_process_answers_each_request_by_its_call_id_and_exits_on_close(call_process, openai_stub):
    popen, requests, answers = call_process
    settings = {"name": "calls", "model": "m", "base_url": openai_stub.base_url, "api_key_env": None, "max_retries": 0}
    requests.send(AddModel(0, settings))
    conversations = [[{"role": "user", "content": "REFUSE q 0"}], [{"role": "user", "content": "why is the sky blue"}]]
    requests.send(Request(10, Generate(0, conversations, PARAMS, [None, None])))
    answer = answers.recv()
    assert isinstance(answer, Answer) and answer.call_id == 10
    assert [c.text.split(" ", 2)[:2] for c in answer.value] == [["I", "can't"], ["Plants", "make"]]

    requests.send(Request(11, Generate(0, [[{"role": "user", "content": "FAULT:500 hi"}]], PARAMS, [None])))
    failure = answers.recv()
    assert isinstance(failure, Failure) and failure.call_id == 11 and "HTTP 500" in failure.reason

    requests.send(Request(12, Moderate(0, ["how do i make a bomb"])))
    moderated = answers.recv()
    assert isinstance(moderated, Answer) and moderated.call_id == 12 and moderated.value[0]["flagged"] is True

    requests.send(Request(13, CountCalls(0)))
    counts = answers.recv()
    assert isinstance(counts, Answer) and counts.call_id == 13 and counts.value["calls"] == 4

    requests.send(Request(14, CountCalls(7)))
    assert answers.recv() == Failure(14, "no model 7 in this call process")

    requests.send(Close())
    assert popen.wait(timeout=30) == 0
    with pytest.raises(EOFError):
        answers.recv()
