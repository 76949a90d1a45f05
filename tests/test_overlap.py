import json
import pickle

import pytest

from verifybench.cases import Case, Source
from verifybench.errors import SuiteError
from verifybench.verifiers import build

SOURCE = "The Team plan costs $29 per user per month and includes up to 10 user seats."


def case(response, sources=(SOURCE,), cid="c"):
    return Case(id=cid, dataset="t", response=response, label=False,
                sources=[Source(id=str(i), text=t) for i, t in enumerate(sources)])


@pytest.mark.parametrize("name", ["bleu", "rouge"])
def test_copied_text_scores_low_and_invented_text_high(name):
    v = build(name)
    copied, invented = v.verify([case("The Team plan costs $29 per user per month."),
                                 case("Bananas grow quickly in tropical climates.")])
    assert copied.score < 0.1
    assert invented.score > 0.9
    assert 0.0 <= copied.score <= 1.0 and 0.0 <= invented.score <= 1.0


@pytest.mark.parametrize("name", ["bleu", "rouge"])
def test_best_source_wins(name):
    v = build(name)
    one = v.verify([case("The Team plan costs $29 per user per month.")])[0].score
    two = v.verify([case("The Team plan costs $29 per user per month.", sources=("Unrelated words here.", SOURCE))])[0].score
    assert two == pytest.approx(one)


def test_short_answer_is_not_penalised_for_brevity():
    # With sacrebleu's brevity penalty this would be ~1.0 (the source is much longer than the answer).
    v = build("bleu")
    assert v.verify([case("up to 10 user seats")])[0].score < 0.05


def test_rouge_reads_non_ascii_text():
    ru = "Тариф Команда стоит 29 долларов в месяц и включает до 10 мест."
    v = build("rouge")
    supported, unsupported = v.verify([case("Тариф Команда стоит 29 долларов в месяц.", sources=(ru,)),
                                       case("Бананы быстро растут в тропиках.", sources=(ru,))])
    assert supported.score < 0.1 and unsupported.score > 0.7  # only the word "в" is shared


@pytest.mark.parametrize("name", ["bleu", "rouge"])
def test_no_sources_is_an_error_verdict(name):
    verdict = build(name).verify([case("anything", sources=())])[0]
    assert verdict.score is None and "no source text" in verdict.error


def test_options_are_validated_and_hashed():
    with pytest.raises(SuiteError, match="option 'typ'"):
        build("rouge", typ="rouge2")
    assert build("rouge").config_hash == build("rouge").config_hash
    assert build("rouge").config_hash != build("rouge", type="rougeL").config_hash


@pytest.mark.parametrize("name", ["bleu", "rouge"])
def test_verifiers_pickle_after_use(name):
    v = build(name)
    before = v.verify([case("The Team plan costs $29.")])[0].score
    clone = pickle.loads(pickle.dumps(v))
    assert clone.verify([case("The Team plan costs $29.")])[0].score == before


# --- stemming --------------------------------------------------------------------------------------------

def _halueval_qa(data_dir, n=200):
    out = []
    with open(data_dir / "halueval/qa_data.json", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            for answer in (r["right_answer"], r["hallucinated_answer"]):
                text = r["knowledge"] + " " + answer
                # Where rouge-score's own tokenizer and ours agree: ASCII, no underscores.
                if text.isascii() and "_" not in text:
                    out.append((r["knowledge"], answer))
            if len(out) >= n:
                return out
    return out


@pytest.mark.parametrize("rouge_type", ["rouge1", "rouge2", "rougeL"])
def test_stemmer_matches_rouge_scores_own_stemming(data_dir, rouge_type):
    """rouge-score skips `use_stemmer` once a tokenizer is given: our tokenizer must stem exactly as
    rouge-score's own tokenizer does, here on HaluEval QA knowledge and answers."""
    from rouge_score.rouge_scorer import RougeScorer
    from rouge_score.tokenizers import DefaultTokenizer

    from verifybench.verifiers.overlap import UnicodeTokenizer

    pairs = _halueval_qa(data_dir)
    assert len(pairs) >= 150
    ours, theirs = UnicodeTokenizer(stem=True), DefaultTokenizer(use_stemmer=True)
    for knowledge, _answer in pairs[:50]:
        assert ours.tokenize(knowledge) == theirs.tokenize(knowledge)
    reference = RougeScorer([rouge_type], use_stemmer=True)
    v = build("rouge", type=rouge_type, stemmer=True)
    plain = build("rouge", type=rouge_type)
    verdicts = v.verify([case(a, sources=(k,), cid=str(i)) for i, (k, a) in enumerate(pairs)])
    unstemmed = plain.verify([case(a, sources=(k,), cid=str(i)) for i, (k, a) in enumerate(pairs)])
    for (knowledge, answer), verdict in zip(pairs, verdicts):
        expected = 1.0 - reference.score(knowledge, answer)[rouge_type].precision
        assert verdict.score == pytest.approx(expected, abs=1e-12)
    # ...and it does something: stemming changes some scores (it did nothing before).
    assert sum(a.score != b.score for a, b in zip(verdicts, unstemmed)) > 0


def test_stemmer_option_changes_the_config_hash_and_stems_inflections():
    assert build("rouge", stemmer=True).config_hash != build("rouge").config_hash
    inflected = case("The plans included exports.", sources=("The plan includes export.",))
    assert build("rouge", stemmer=True).verify([inflected])[0].score < build("rouge").verify([inflected])[0].score
