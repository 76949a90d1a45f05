"""Issue 44: the report's first screen says in words what the run found, before any table: the best
check, what it flags at its threshold with how sure that is, fitted on what and estimated on what, each
figure read from metrics.json; where no threshold exists it says so with the fit's reason and never
speaks of false alarms."""

import copy
import html as htmllib
import json
import re
from types import SimpleNamespace

import pytest
from conftest import write

from helpers.answers import swapped_answers
from verifybench import api
from verifybench.reporting.findings import best, findings
from verifybench.suite import parse_suite

N = 100


def cases() -> list[dict]:
    """100 answers (seeded), half hallucinated: rouge and bleu rank them imperfectly; two doc types, and a
    meta field to break the flags down by."""
    return [{**c, "doc_type": ("faq", "order")[i % 4 // 2], "meta": {"error_type": "swap" if c["label"] else "none"}}
            for i, c in enumerate(swapped_answers(N, hallucinated=0.5, faithful=0.2))]


def run(tmp, metrics: dict) -> SimpleNamespace:
    data = write(tmp / "cases.jsonl", "".join(json.dumps(c) + "\n" for c in cases()))
    suite = parse_suite({"name": "findings", "dataset": {"loader": "jsonl", "path": str(data),
                                                        "fields": {"doc_type": "doc_type"}},
                         "verifiers": ["rouge", "bleu"],
                         "metrics": {"bootstrap": 50, "breakdown": ["meta.error_type"], **metrics}}, tmp)
    api.run(suite, out=tmp / "run", progress=False)
    html = (tmp / "run/report.html").read_text()
    return SimpleNamespace(metrics=json.loads((tmp / "run/metrics.json").read_text()), html=html)


def text(fragment: str) -> str:
    """What a reader sees: tags dropped, entities decoded, white space collapsed."""
    return " ".join(htmllib.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def section(html: str) -> str:
    return html[html.index('<section id="findings">'):html.index("</section>")]


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    return run(tmp_path_factory.mktemp("fitted"), {"min_per_class": 15, "estimate": "split"})


@pytest.fixture(scope="module")
def unfitted(tmp_path_factory):
    return run(tmp_path_factory.mktemp("unfitted"), {"estimate": "split"})


@pytest.fixture(scope="module")
def crossfitted(tmp_path_factory):
    return run(tmp_path_factory.mktemp("crossfitted"), {})


def test_the_first_screen_names_the_best_check_and_what_it_flags_from_metrics_json(fitted):
    m = fitted.metrics
    whole = {vid: v["overall"] for vid, v in m["verifiers"].items()}
    top = best(list(whole.items()))
    assert top is not None  # the premise: a usable threshold exists
    o = whole[top]
    c, t, th = o["test"]["confusion"], o["test"], o["threshold"]
    ci = t["ci"]
    said = text(section(fitted.html))
    assert f"Best check: {top}" in said
    assert (f"{top} flags {c['tp']} of {c['tp'] + c['fn']} invented answers (recall {t['recall']:.2f}, 95% interval "
            f"{ci['recall'][0]:.2f}–{ci['recall'][1]:.2f}) and {c['fp']} of {c['fp'] + c['tn']} correct ones "
            f"(precision {t['precision']:.2f}, 95% interval {ci['precision'][0]:.2f}–{ci['precision'][1]:.2f}) "
            f"at threshold {th['value']:.4f}.") in said
    calib = sum(o["labels"]["calibration"].values())
    assert f"The threshold: {th['source']}, {calib} labeled cases" in said
    assert f"estimated on the test split of {t['n']} labeled cases" in said
    # Before any table, and every other check and doc type said in brief.
    assert fitted.html.index('<section id="findings">') < fitted.html.index("<table")
    for vid in set(whole) - {top}:
        assert f'<li class="finding" data-verifier="{vid}">' in fitted.html
    for key in ("faq", "order"):
        assert f'data-slice="{key}"' in section(fitted.html)


def test_without_a_threshold_it_says_why_and_never_speaks_of_false_alarms(unfitted):
    m = unfitted.metrics
    assert all(v["overall"]["threshold"]["value"] is None for v in m["verifiers"].values())  # the premise
    said = text(section(unfitted.html))
    assert "No check has a usable threshold" in said
    for vid, v in m["verifiers"].items():
        o = v["overall"]
        assert (f"{vid}: no threshold ({o['threshold']['warning']}), so nothing is flagged; AUROC {o['auroc']:.2f} "
                f"over its {o['n_scored']} scored cases.") in said
    assert "invented answers" not in said and "recall" not in said.split("no recall")[0]
    assert not re.search(r"false.alarm", text(unfitted.html), re.I)


def test_a_cross_fitted_estimate_is_named_instead_of_the_test_split(crossfitted):
    """A run cross-fitted by default (100 labeled cases): the sentence says how its figures were estimated,
    as metrics.json words it, with their 95% intervals, and never claims the test split."""
    m = crossfitted.metrics
    assert m["estimate"] == "crossfit"
    top = best([(vid, v["overall"]) for vid, v in m["verifiers"].items()])
    op = m["verifiers"][top]["overall"]["test"]
    lead = findings(m)["lead"]
    assert op["estimate"] in lead and "test split" not in lead
    assert f"recall {op['recall']:.2f}, 95% interval {op['ci']['recall'][0]:.2f}" in lead


def test_a_degenerate_threshold_is_never_the_best_check(fitted):
    m = copy.deepcopy(fitted.metrics)
    whole = [(vid, v["overall"]) for vid, v in m["verifiers"].items()]
    top = best(whole)
    m["verifiers"][top]["overall"]["threshold"]["degenerate"] = "flags every calibration case"
    found = findings(m)
    assert found["best"] != top
    assert any(o["verifier"] == top and "Degenerate threshold: it flags every calibration case" in o["text"]
               for o in found["others"])
