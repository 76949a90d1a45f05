"""Secrets in every encoding (issue 42): a key or a `${PASSWORD}` that a server echoes, in any encoding it can
use (JSON escapes, URL-encoding, base64, HTML entities, split across tokens), reaches no file; a value read
from `${VAR}` in an option is registered for scrubbing when the verifier is built, enters the config hash as
written (`${VAR}`, never its value), and a policy whose options hold `${VAR}` is served. A real
OpenAI-compatible server on 127.0.0.1 echoes what it was sent, and every file a run, its report, the replay
cache, a replayed run, the policy, the guard's decision log and MLflow write is searched for the secrets
after decoding every encoding (`leaks`, independent of the scrubber's own code)."""

from __future__ import annotations

import base64
import html
import json
import os
import re
from pathlib import Path
from urllib.parse import quote, unquote

import pytest
import yaml

import verifybench
from helpers.fake_llm import Echo, FakeLLM
from verifybench.errors import SuiteError
from verifybench.verifiers import build
from verifybench.verifiers.llm import Completion, scrub
from verifybench.verifiers.llm.client import scrubbed
from verifybench.verifiers.llm.providers import TokenLogprob
from verifybench.verifiers.llm.scrub import register_secret

ROOT = Path(__file__).resolve().parents[1]


# --- the encodings a server can echo a secret in, and an oracle that undoes them ------------------------

def encodings(secret: str, json_string: bool = False) -> dict[str, str]:
    """`secret` as servers and proxies write it back. `json_string`: only the forms that are valid inside a
    JSON string (for a reply whose JSON a verifier parses)."""
    raw = secret.encode()

    def pct(chars: str, fmt: str) -> str:
        return "".join(c if c.isalnum() else "".join(fmt % b for b in c.encode()) for c in chars)

    def u(c: str, fmt: str = "\\u{:04x}") -> str:  # JSON's \u escape (a surrogate pair beyond the BMP)
        units = c.encode("utf-16-be")
        return "".join(fmt.format(int.from_bytes(units[i:i + 2], "big")) for i in range(0, len(units), 2))

    forms = {
        "plain": secret,
        "json \\/": secret.replace("/", "\\/"),  # PHP's json_encode: the key split by a JSON-escaped slash
        "json \\u": "".join(u(c) for c in secret),
        "json \\U": "".join(u(c, "\\u{:04X}") for c in secret),
        "json mixed": "".join(u(c) if i % 2 else c for i, c in enumerate(secret)).replace("/", "\\/"),
        "json twice": "".join(u(c, "\\\\u{:04x}") for c in secret),  # a JSON string inside a JSON string
        "url of json": quote("".join(u(c) for c in secret), safe=""),
        "url": quote(secret, safe=""),
        "url lower": pct(secret, "%%%02x"),
        "url every byte": "".join(f"%{b:02X}" for b in raw),
        "url twice": quote(quote(secret, safe=""), safe=""),
        "base64": base64.b64encode(raw).decode(),
        "base64 basic": "Basic " + base64.b64encode(b"user:" + raw).decode(),
        "base64 url-safe": base64.urlsafe_b64encode(b"xy" + raw).decode(),
        "base64 json": base64.b64encode(b"user:" + raw).decode().replace("/", "\\/"),
        "html hex": "".join(c if c.isalnum() else f"&#x{ord(c):x};" for c in secret),
        "html decimal": "".join(f"&#{ord(c)};" for c in secret),
    }
    if not json_string:
        forms["python \\x"] = "".join(f"\\x{b:02x}" for b in raw)
    return forms


def _json_unescape(text: str) -> str:
    text = re.sub(r"\\+u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), text)
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")  # pairs joined
    text = re.sub(r"\\+x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), text)
    return re.sub(r"\\+([/\"])", r"\1", text)


def _views(text: str) -> list[str]:
    """`text` and what it reads as once JSON escapes, URL-encoding and HTML entities are undone, in any
    order and nested."""
    views = [text]
    for _ in range(4):
        step = html.unescape(unquote(_json_unescape(views[-1])))
        if step == views[-1]:
            break
        views.append(step)
    return views


_B64 = re.compile(r"[A-Za-z0-9+/_-]{8,}")


def leaks(text: str, secrets: list[str]) -> list[str]:
    """The secrets `text` holds in any encoding: as they are, JSON-escaped, URL-encoded, as HTML entities,
    nested, or inside a base64 run (standard or URL-safe, at any alignment)."""
    found = []
    for view in _views(text):
        decoded = [view.encode("utf-8", "ignore")]
        for run in _B64.findall(view):
            run = run.translate(str.maketrans("-_", "+/"))
            for skip in range(4):
                part = run[skip:]
                part = part[: len(part) - 1] if len(part) % 4 == 1 else part + "=" * (-len(part) % 4)
                try:
                    decoded.append(base64.b64decode(part))
                except ValueError:
                    continue
        found += [s for s in secrets if any(s.encode() in d for d in decoded)]
    return sorted(set(found))


def test_the_oracle_finds_every_encoding():
    secret = "sk-oracle/KEY.??~0123456789"
    for name, form in encodings(secret).items():
        assert leaks(f"say {form} now", [secret]) == [secret], name
    assert leaks("nothing here", [secret]) == []


# --- the scrubber ---------------------------------------------------------------------------------------

# A `/` (JSON-escaped as `\/`), characters a URL encodes, and base64 forms that hold `/` and `+`.
UNIT_KEY = "sk-unit/KEY.??~0123456789abcdef"


@pytest.mark.parametrize("name, form", list(encodings(UNIT_KEY).items()))
def test_every_encoding_of_a_registered_key_is_scrubbed(name, form):
    register_secret(UNIT_KEY)
    out = scrub(f'{{"reason": "the key is {form}, as sent"}}')
    assert leaks(out, [UNIT_KEY]) == [], (name, out)
    assert "[redacted]" in out and out.startswith('{"reason": "the key is ') and out.endswith(', as sent"}')


@pytest.mark.parametrize("name, form", list(encodings("pässwörd-Ü😀/key").items()))
def test_every_encoding_of_a_password_beyond_ascii_is_scrubbed(name, form):
    register_secret("pässwörd-Ü😀/key")
    assert leaks(scrub(f"echo {form}."), ["pässwörd-Ü😀/key"]) == [], name


def test_a_header_value_is_scrubbed_in_any_encoding_unregistered():
    out = scrub("sent: authorization%3A%20Bearer%20tok_UNREGISTERED_123456 and "
                "\u0042earer tok_OTHER_UNREGISTERED_654321")
    assert "UNREGISTERED" not in _views(out)[-1] and out.startswith("sent: authorization%3A%20Bearer%20")


def test_a_key_split_across_tokens_is_scrubbed_from_the_tokens():
    register_secret(UNIT_KEY)
    pieces = ['{"reason": "', UNIT_KEY[:5], UNIT_KEY[5:12], UNIT_KEY[12:], '"}']
    top = {UNIT_KEY: -0.5, "x": -1.0}  # a whole key among the alternatives
    done = scrubbed(Completion(text="".join(pieces), logprobs=[TokenLogprob(p, -0.1, dict(top)) for p in pieces]))
    assert done.logprobs is not None
    assert leaks(json.dumps(done.to_dict()), [UNIT_KEY]) == []
    assert [t.token for t in done.logprobs][:2] == ['{"reason": "', "[redacted]"]  # the rest kept in place
    assert len(done.logprobs) == len(pieces) and done.logprobs[-1].token == '"}'


def test_a_key_that_a_cut_would_halve_is_scrubbed_before_the_cut(fake):
    from helpers.fake_llm import Raw
    from verifybench.verifiers.llm import GaveUp, LLMClient, OpenAICompatible, RetryPolicy

    register_secret(UNIT_KEY)
    server = fake([Raw(200, "<html>" + "x" * 186 + UNIT_KEY + "</html>", "text/html")])
    client = LLMClient(OpenAICompatible("m", server.base_url, api_key_env="VB_NO_SUCH_KEY"), RetryPolicy(0))
    with pytest.raises(GaveUp) as raised:
        client.complete([{"role": "user", "content": "hi"}])
    assert "not JSON" in str(raised.value) and UNIT_KEY[:6] not in str(raised.value)


def test_scrubbing_leaves_other_text_as_it_was():
    register_secret(UNIT_KEY)
    text = ('{"a": "\\u0073k-other \\/ x", "b": "%2Fpath%3F", "c": "c2stdW5pdC9LRVku", "d": "&#x2F;", '
            '"e": "sk-unit/KEY"}')
    assert scrub(text) == text


def test_an_error_text_that_quotes_a_url_loses_its_password():
    out = scrub("InvalidURL: could not parse 'http://user:pa/ss-word@127.0.0.1:8/v1' (Invalid port: 'pa')")
    assert "pa/ss-word" not in out and "http://user:[redacted]@127.0.0.1:8/v1" in out


# --- `${VAR}` in options: registered, refused when it breaks its URL, hashed as written --------------------

def test_a_value_read_from_a_variable_is_registered_when_the_verifier_is_built(monkeypatch):
    password = "pw-REGISTERED-AT-BUILD-4242"
    monkeypatch.setenv("VB_BUILD_PASSWORD", password)
    assert scrub(f"echo {password}") == f"echo {password}"  # not a secret this process knows yet
    judge = build("judge", backend="openai", model="m", base_url="http://user:${VB_BUILD_PASSWORD}@127.0.0.1:9/v1")
    assert judge.options.base_url == f"http://user:{password}@127.0.0.1:9/v1"  # the value is the one used
    assert scrub(f"echo {password} {quote(password.replace('-', '/'))}") == "echo [redacted] " + quote(
        password.replace("-", "/"))
    assert password not in scrub(f"echo {password}")


def test_a_worker_process_registers_what_the_verifier_read(monkeypatch):
    import pickle
    import subprocess
    import sys

    password = "pw-WORKER-PROCESS-4242"
    monkeypatch.setenv("VB_WORKER_PASSWORD", password)
    judge = build("judge", backend="openai", model="m", base_url="http://user:${VB_WORKER_PASSWORD}@127.0.0.1:9/v1")
    code = ("import pickle, sys; pickle.loads(sys.stdin.buffer.read()); "
            "from verifybench.verifiers.llm import scrub; print(scrub(sys.argv[1]))")
    env = {k: v for k, v in os.environ.items() if k != "VB_WORKER_PASSWORD"}
    out = subprocess.run([sys.executable, "-c", code, f"echo {password}"], input=pickle.dumps(judge), env=env,
                         capture_output=True, check=True).stdout.decode()
    assert out.strip() == "echo [redacted]"


def test_a_variable_missing_from_the_environment_is_an_error_naming_it(monkeypatch):
    monkeypatch.delenv("VB_NOT_SET", raising=False)
    with pytest.raises(SuiteError, match=r"verifier 'judge' \(judge\): option 'base_url': environment variable "
                                         r"VB_NOT_SET is not set"):
        build("judge", backend="openai", model="m", base_url="http://user:${VB_NOT_SET}@127.0.0.1:9/v1")


def test_a_password_that_would_break_its_url_is_refused_without_quoting_it(monkeypatch, tmp_path):
    password = "hunter2/pass-word"
    monkeypatch.setenv("VB_SLASH_PASSWORD", password)
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "c0", "response": "a", "sources": ["b"], "label": 0}) + "\n")
    suite = tmp_path / "s.yaml"
    suite.write_text(yaml.safe_dump({"name": "s", "dataset": {"loader": "jsonl", "path": str(data)}, "verifiers": [
        {"judge": {"backend": "openai", "model": "m", "base_url": "http://user:${VB_SLASH_PASSWORD}@127.0.0.1:9/v1"}}]}))
    with pytest.raises(SuiteError) as raised:
        verifybench.run(suite, out=tmp_path / "run", progress=False)
    message = str(raised.value)
    assert "option 'base_url': the value of ${VB_SLASH_PASSWORD} holds a character" in message
    assert "percent-encode" in message and "hunter2" not in message
    assert not any(leaks(f.read_text(errors="ignore"), [password, "hunter2"])
                   for f in tmp_path.rglob("*") if f.is_file() and f not in (data, suite))


def test_the_config_hash_is_over_options_as_written(monkeypatch):
    url = "http://user:${VB_HASH_PASSWORD}@127.0.0.1:9/v1"
    monkeypatch.setenv("VB_HASH_PASSWORD", "first-password-1")
    first = build("judge", backend="openai", model="m", base_url=url)
    monkeypatch.setenv("VB_HASH_PASSWORD", "second-password-2")
    second = build("judge", backend="openai", model="m", base_url=url)
    literal = build("judge", backend="openai", model="m", base_url="http://user:second-password-2@127.0.0.1:9/v1")
    assert first.config_hash == second.config_hash != literal.config_hash
    assert first.config["base_url"] == url and "second-password-2" not in json.dumps(second.config) + repr(second)
    # A whole option from a variable too, and one nested in another option's mapping.
    monkeypatch.setenv("VB_HASH_MODEL", "model-one")
    a = build("compliance", corpus="x.jsonl", extractor="llm", llm={"model": "${VB_HASH_MODEL}"})
    monkeypatch.setenv("VB_HASH_MODEL", "model-two")
    b = build("compliance", corpus="x.jsonl", extractor="llm", llm={"model": "${VB_HASH_MODEL}"})
    assert a.config_hash == b.config_hash and a.options.llm.model == "model-one" and b.config["llm"]["model"] == \
        "${VB_HASH_MODEL}"


def test_a_folder_named_through_a_variable_still_hashes_by_content(monkeypatch, tmp_path):
    for where in ("a", "b"):
        (tmp_path / where / "prompts").mkdir(parents=True)
        (tmp_path / where / "prompts" / "default.j2").write_text("Judge {{ response }}.")
    hashes = []
    for where in ("a", "b"):
        monkeypatch.setenv("VB_PROMPTS", str(tmp_path / where))
        hashes.append(build("judge", templates_dir="${VB_PROMPTS}/prompts").config_hash)
    (tmp_path / "b" / "prompts" / "default.j2").write_text("Judge {{ response }} strictly.")
    hashes.append(build("judge", templates_dir="${VB_PROMPTS}/prompts").config_hash)
    assert hashes[0] == hashes[1] != hashes[2]  # moved: the same; edited: another configuration


def test_a_verifier_object_given_in_python_is_stored_as_written(monkeypatch, tmp_path, fake):
    password = "pw-PYTHON-OBJECT-4242"
    monkeypatch.setenv("VB_OBJECT_PASSWORD", password)
    server = fake([], default=(True, 0.7))
    port = server.root_url.rsplit(":", 1)[1]
    judge = build("judge", backend="openai", model="m", cache_dir=str(tmp_path / "cache"),
                  base_url=f"http://user:${{VB_OBJECT_PASSWORD}}@127.0.0.1:{port}/v1")
    cases = [{"id": f"c{i}", "response": "a", "sources": ["b"], "label": i % 2} for i in range(4)]
    run = verifybench.run(cases=cases, verifiers=[judge], out=tmp_path / "run", progress=False)
    assert run.n_error_verdicts == 0 and server.headers  # the password was used...
    assert "${VB_OBJECT_PASSWORD}" in (tmp_path / "run" / "suite.yaml").read_text()  # ...and stored as its name
    assert _leaked(tmp_path / "run") == {} and not any(
        leaks(f.read_text(errors="ignore"), [password]) for f in _files(tmp_path / "run"))


# Hashes recorded before options were hashed as written: options without `${...}` must keep them (the
# committed baseline metrics/demo.json and every team's stored policy compare by them).
PINNED = [
    ("judge", {"backend": "openai", "model": "m", "base_url": "http://127.0.0.1:8080/v1", "api_key_env": "K"},
     "b9a2c19e5b15f5f2"),
    ("judge", {"backend": "openai", "model": "m", "base_url": "http://user:literal-pw@127.0.0.1:8080/v1"},
     "de998a23fc71cef9"),
    ("compliance", {"corpus": "x.jsonl", "extractor": "llm", "llm": {"model": "m", "base_url": "http://h/v1"}},
     "3883a4623693f773"),
]


@pytest.mark.parametrize("name, options, pinned", PINNED)
def test_config_hashes_of_options_without_variables_are_unchanged(name, options, pinned):
    assert build(name, **options).config_hash == pinned


def test_the_demo_baselines_config_hashes_are_unchanged():
    from verifybench.suite import load_suite

    baseline = json.loads((ROOT / "metrics" / "demo.json").read_text())
    suite = load_suite(ROOT / "evals" / "demo.yaml")
    built = {e.id: build(e.name, e.id, **e.options).config_hash for e in suite.verifiers}
    assert built == {vid: v["config_hash"] for vid, v in baseline["verifiers"].items()}


# --- end to end: a server that echoes every secret it is sent, in every encoding ------------------------

KEY = "sk-e2e/KEY.??~0123456789abcdef"  # sent as `Bearer KEY`
PASSWORD = "hunter2%2FPASS.word~42"  # ${PASSWORD} in base_url, percent-encoded as a URL's password must be
SECRETS = [KEY, PASSWORD, unquote(PASSWORD)]  # the server receives the decoded one, in a Basic header


def _echo_reply(body: dict, headers: dict) -> str:
    """A judge verdict (hallucinated when the response says "wrong") whose reason, and the prose after it,
    hold every secret the request carried, in every encoding."""
    auth = headers.get("authorization", "")
    scheme, _, value = auth.partition(" ")
    secret = value if scheme == "Bearer" else base64.b64decode(value).decode().partition(":")[2]
    bad = "wrong" in body["messages"][-1]["content"]
    inside = " ".join(encodings(secret, json_string=True).values())
    prose = " ".join(encodings(secret).values())
    return (f'{{"hallucinated": {json.dumps(bad)}, "probability": {0.9 if bad else 0.1}, "claim": "", '
            f'"reason": "you sent {inside} as {auth}"}}\nFor the record: {prose}')


@pytest.fixture(scope="module")
def echoed(tmp_path_factory):
    """A run of two judges against the echo server (one sends a key, one a `${PASSWORD}` in its base_url;
    the first two requests get a 400 that quotes the headers), and the policy fitted on it."""
    base = tmp_path_factory.mktemp("secrets")
    server = FakeLLM([Echo(400), Echo(400)], default=_echo_reply)
    rows = [{"id": f"c{i}", "response": f"the answer is {'wrong' if i % 2 else 'right'} {i}",
             "sources": ["the answer is right"], "label": i % 2} for i in range(40)]
    (base / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    port = server.root_url.rsplit(":", 1)[1]
    judge = {"backend": "openai", "model": "m", "logprobs": False, "retries": 0}
    suite = base / "suite.yaml"
    suite.write_text(yaml.safe_dump({
        "name": "secrets", "dataset": {"loader": "jsonl", "path": str(base / "d.jsonl")},
        "verifiers": [{"judge": {**judge, "id": "keyed", "base_url": server.base_url, "api_key_env": "VB_E2E_KEY",
                                 "cache_dir": str(base / "cache" / "keyed")}},
                      {"judge": {**judge, "base_url": f"http://user:${{PASSWORD}}@127.0.0.1:{port}/v1",
                                 "cache_dir": str(base / "cache" / "judge")}}],
        "metrics": {"min_per_class": 5}}))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VB_E2E_KEY", KEY)
        mp.setenv("PASSWORD", PASSWORD)
        run = verifybench.run(suite, out=base / "run", progress=False)
        policy = base / "policy.yaml"
        verifybench.thresholds(run.run_dir, out=policy)
        yield {"base": base, "server": server, "run": run, "policy": policy, "suite": suite, "env": mp}
    server.close()


def _files(*folders: Path) -> list[Path]:
    return [f for folder in folders for f in folder.rglob("*") if f.is_file()]


def _leaked(*folders: Path) -> dict[str, list[str]]:
    found = {}
    for f in _files(*folders):
        if f.name != "d.jsonl" and (hit := leaks(f.read_bytes().decode("utf-8", "ignore"), SECRETS)):
            found[str(f)] = hit
    return found


def test_no_secret_reaches_a_run_its_report_or_the_replay_cache_in_any_encoding(echoed, monkeypatch):
    base, server = echoed["base"], echoed["server"]
    # The secrets were really sent, and really echoed back, in every encoding...
    sent = [h.get("authorization", "") for h in server.headers]
    assert f"Bearer {KEY}" in sent and "Basic " + base64.b64encode(f"user:{unquote(PASSWORD)}".encode()).decode() in sent
    verdicts = [json.loads(line) for line in (base / "run/results.jsonl").read_text().splitlines()]
    assert sum(1 for v in verdicts if v.get("error")) == 2 and all("[redacted]" in v.get("error", "[redacted]")
                                                                  for v in verdicts)
    reasons = [v["detail"]["reason"] for v in verdicts if not v.get("error")]
    assert len(reasons) == 78 and all(r.count("[redacted]") >= 10 for r in reasons)
    # ...and after a replay from the cache and the report, no file holds one, in any encoding.
    monkeypatch.setenv("VERIFYBENCH_REPLAY_ONLY", "1")
    replay = verifybench.run(echoed["suite"], out=base / "replay", progress=False)
    assert replay.n_error_verdicts == 2  # the two 400s were never cached
    assert {"results.jsonl", "errors.jsonl", "report.html", "manifest.json"} <= {f.name for f in _files(base / "run")}
    assert len(_files(base / "cache")) == 78
    assert _leaked(base / "run", base / "replay", base / "cache", echoed["policy"].parent) == {}


def test_a_policy_whose_options_hold_a_variable_is_served(echoed, tmp_path):
    from verifybench.guard import Guard, GuardError

    doc = yaml.safe_load(echoed["policy"].read_text())
    assert doc["verifiers"]["judge"]["options"]["base_url"].startswith("http://user:${PASSWORD}@")
    with Guard(echoed["policy"], log_dir=tmp_path / "log", checks=["keyed", "judge"]) as guard:  # ${PASSWORD} at start
        decisions = [guard.check(response=f"the answer is {word}", sources=["the answer is right"])
                     for word in ("wrong", "right")]
    assert [d.action for d in decisions] == ["flagged", "allowed"]
    assert _leaked(tmp_path / "log") == {} and _files(tmp_path / "log")
    echoed["env"].delenv("PASSWORD")
    try:
        with pytest.raises((GuardError, SuiteError), match=r"option 'base_url': environment variable PASSWORD is not set"):
            Guard(echoed["policy"], log_dir=False, checks=["keyed", "judge"])
    finally:
        echoed["env"].setenv("PASSWORD", PASSWORD)


@pytest.mark.slow
def test_no_secret_reaches_mlflow_in_any_encoding(echoed, tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    monkeypatch.chdir(tmp_path)  # MLflow's artifacts go beside the store
    verifybench.log(echoed["base"] / "run", f"sqlite:///{tmp_path / 'mlflow.db'}", "secrets")
    assert list((tmp_path / "mlruns").rglob("manifest.json"))
    assert _leaked(tmp_path) == {}
