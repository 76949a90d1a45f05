"""A small run on real shared data for the feedback tests: rouge and bleu over a seeded sample of 600
HaluEval QA cases (a few seconds)."""

from pathlib import Path

from conftest import need_shared

import verifybench as vb

SUITE = """\
name: halueval-qa-loop
dataset:
  loader: halueval
  path: {path}
  sample: 600
  seed: 0
verifiers:
  - rouge
  - bleu
batch_size: 64
metrics:
  bootstrap: 200
"""


def make_qa_run(tmp_path_factory, data_dir) -> Path:
    (qa,) = need_shared(data_dir, "halueval/qa_data.json")
    work = tmp_path_factory.mktemp("loop")
    suite = work / "qa.yaml"
    suite.write_text(SUITE.format(path=qa), encoding="utf-8")
    return vb.run(suite, out=work / "run", progress=False).run_dir
