"""The response cache: what its key covers, what each mode does, and that only answers are stored."""

from __future__ import annotations

import pytest

from pytest_guardbench.errors import InternalError
from pytest_guardbench.providers import Classification, ClassifyRequest, Completion, GenerationParams, ProviderError
from pytest_guardbench.providers.cache import CachedProvider, CacheStats, ResponseCache


class EchoModel:
    """Answers with the user text and a call counter, so a cached answer is told apart from a new one."""

    name = "echo"
    model = "echo-1"
    concurrency = 5

    def __init__(self, identity="echo|v1"):
        self.cache_identity = identity
        self.calls = 0
        self.fail_on: set[str] = set()

    def generate(self, conversations, params, seeds):
        out = []
        for conversation in conversations:
            text = conversation[-1]["content"]
            if text in self.fail_on:
                raise ProviderError("echo: HTTP 500")
            self.calls += 1
            out.append(Completion(text=f"{text}#{self.calls}", model=self.model, completion_tokens=self.calls))
        return out

    def classify(self, request):
        self.calls += len(request.conversations)
        return [Classification(text="Yes", p_first=0.25) for _ in request.conversations]


def _conv(text):
    return [{"role": "user", "content": text}]


@pytest.fixture
def cache(tmp_path):
    db = ResponseCache(tmp_path / "c.sqlite")
    yield db
    db.close()


def test_second_call_is_served_from_the_cache_and_passes_attributes_through(cache):
    model, stats = EchoModel(), CacheStats()
    cached = CachedProvider(model, cache, "write", stats, "tutor")
    params = GenerationParams(max_new_tokens=8)
    first = cached.generate([_conv("a"), _conv("b")], params, [None, None])
    again = cached.generate([_conv("b"), _conv("a"), _conv("c")], params, [None, None, None])
    assert [c.text for c in first] == ["a#1", "b#2"]
    assert [c.text for c in again] == ["b#2", "a#1", "c#3"]
    assert model.calls == 3 and stats.as_dict() == {"hits": 2, "misses": 3, "writes": 3}
    assert cached.concurrency == 5 and cached.model == "echo-1"


@pytest.mark.parametrize(
    "change",
    ["messages", "max_new_tokens", "seed", "identity"],
)
def test_key_covers_everything_that_decides_the_answer(cache, change):
    model = EchoModel()
    CachedProvider(model, cache, "write", CacheStats(), "tutor").generate(
        [_conv("a")], GenerationParams(max_new_tokens=8), [11]
    )
    text, params, seed, other = "a", GenerationParams(max_new_tokens=8), 11, model
    if change == "messages":
        text = "a "
    elif change == "max_new_tokens":
        params = GenerationParams(max_new_tokens=9)
    elif change == "seed":  # the seed carries the sample index k
        seed = 12
    else:
        other = EchoModel(identity="echo|v2")
        other.calls = model.calls
    before = other.calls
    CachedProvider(other, cache, "write", CacheStats(), "tutor").generate([_conv(text)], params, [seed])
    assert other.calls == before + 1, f"changing {change} must miss the cache"


def test_classify_calls_are_cached_by_template_kwargs(cache):
    model = EchoModel()
    cached = CachedProvider(model, cache, "write", CacheStats(), "guardrail")
    cached.classify(ClassifyRequest([_conv("a")], {"guardian_config": {"risk_name": "harm"}}, ("Yes", "No")))
    [hit] = cached.classify(ClassifyRequest([_conv("a")], {"guardian_config": {"risk_name": "harm"}}, ("Yes", "No")))
    cached.classify(ClassifyRequest([_conv("a")], {"guardian_config": {"risk_name": "violence"}}, ("Yes", "No")))
    assert hit == Classification(text="Yes", p_first=0.25) and model.calls == 2


# Keys written by the classify of earlier releases (five loose parameters), computed with that code:
# a cache file from then must still answer, so these never change without a CACHE_FORMAT bump.
PINNED_CLASSIFY_KEYS = [
    (
        ClassifyRequest([_conv("a")], {"guardian_config": {"risk_name": "harm"}}, ("Yes", "No")),
        "18405ac31f35b851433b3312f2d63e525abd68dc11ebe8005f89902559d05577",
    ),
    (
        ClassifyRequest(["<s>Human: é"], {}, ("yes", "no"), max_new_tokens=32, verdict_after="Harmful request:"),
        "dca43fbf5b4132d80835e15e0934d2e4fbfcf729aa562b2ba9dafb5806da69c5",
    ),
]


@pytest.mark.parametrize(("request_", "key"), PINNED_CLASSIFY_KEYS, ids=["chat-template-kwargs", "text-verdict-after"])
def test_classify_keys_are_those_of_existing_caches(cache, request_, key):
    cache.put_many([(key, {"text": "No", "p_first": 0.125}, "echo|v1")])
    model = EchoModel()
    [answer] = CachedProvider(model, cache, "replay", CacheStats(), "guardrail").classify(request_)
    assert answer == Classification(text="No", p_first=0.125) and model.calls == 0


def test_read_mode_never_writes_and_errors_are_never_stored(cache):
    model = EchoModel()
    model.fail_on = {"bad"}
    writer = CachedProvider(model, cache, "write", CacheStats(), "tutor")
    with pytest.raises(ProviderError):
        writer.generate([_conv("bad")], GenerationParams(), [None])
    assert cache.count() == 0
    reader = CachedProvider(model, cache, "read", CacheStats(), "tutor")
    reader.generate([_conv("a")], GenerationParams(), [None])
    assert cache.count() == 0


def test_replay_miss_is_an_error_naming_the_role(cache):
    replay = CachedProvider(EchoModel(), cache, "replay", CacheStats(), "judge")
    with pytest.raises(ProviderError, match="judge: no cached response in replay mode for 1 call"):
        replay.generate([_conv("a")], GenerationParams(), [None])


def test_off_mode_is_not_a_cache(cache):
    with pytest.raises(InternalError):
        CachedProvider(EchoModel(), cache, "off", CacheStats(), "tutor")


@pytest.mark.parametrize("content", [b"\x00\xffnot sqlite at all" * 200, b"SQLite format 3\x00" + b"\x01" * 4000])
def test_a_file_that_is_not_a_cache_is_one_clear_error(tmp_path, content):

    path = tmp_path / "cache.sqlite"
    path.write_bytes(content)
    with pytest.raises(
        ProviderError, match=rf"--guardbench-cache-path {path}: not a usable response cache \(.*\); delete it"
    ):
        ResponseCache(path)


def test_a_cache_that_cannot_be_written_is_named(tmp_path):
    from pytest_guardbench.providers.base import ProviderError
    from pytest_guardbench.providers.cache import ResponseCache

    cache = ResponseCache(tmp_path / "cache.sqlite")
    cache._db.execute("PRAGMA query_only=1")  # what a read-only file does to writes, even for root
    with pytest.raises(ProviderError, match="cache.sqlite: cannot write the response cache"):
        cache.put_many([("k", {"text": "a"}, "model")])
    cache.close()
