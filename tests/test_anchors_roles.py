"""Anchors on swapped roles, plans and tiers (`anchors.roles`) and on denials the evidence does not make.
Real parts: spaCy's small English pipeline and MiniLM."""

import pytest

from verifybench.cases import Case, Source
from verifybench.verifiers import build
from verifybench.verifiers.anchors.facts import content_words, polarity_mismatch
from verifybench.verifiers.anchors.roles import role_swaps, word_stems

KB = ("Account lockout. After 10 failed sign-in attempts, the account is locked for 30 minutes. Owners can "
      "unlock accounts from the Members page. Members can see who is locked on the Members page. Annual plans "
      "can be refunded within 14 days of purchase. Monthly plans are not refundable. Two-factor authentication "
      "is required for Admins and Owners. Our support staff will never ask for your password.")


def swaps(claim, evidence, sources=KB):
    return role_swaps(claim, evidence, word_stems(sources), content_words(claim), content_words(evidence))


def test_a_subject_the_sources_name_elsewhere_is_a_swap():
    found = swaps("Members can unlock it sooner from the Members page.",
                  "Owners can unlock accounts from the Members page.")
    assert len(found) == 1 and "'member'" in found[0] and "'owner'" in found[0] and "subject" in found[0]
    assert swaps("Owners can unlock it sooner from the Members page.",
                 "Owners can unlock accounts from the Members page.") == []


def test_a_modifier_of_the_same_noun_is_a_swap():
    [found] = swaps("Monthly plans can be refunded within two weeks of purchase.",
                    "Annual plans can be refunded within 14 days of purchase.")
    assert "'monthly'" in found and "'annual'" in found and "modifier" in found
    # the unit of a duration is the duration check's, not a swap
    assert swaps("Annual plans can be refunded within two weeks of purchase.",
                 "Annual plans can be refunded within 14 days of purchase.") == []


def test_the_object_of_the_same_preposition_of_the_same_word_is_a_swap():
    assert swaps("Two-factor authentication is required for Members.",
                 "Two-factor authentication is required for Admins and Owners.")
    # coordinated words share their slot: naming one of them swaps nothing
    assert swaps("Two-factor authentication is required for Owners.",
                 "Two-factor authentication is required for Admins and Owners.") == []


def test_a_word_the_sources_never_use_is_a_paraphrase_not_a_swap():
    assert swaps("Our team will never ask for your password.",
                 "Our support staff will never ask for your password.") == []


def test_a_word_moved_within_the_statement_is_not_a_swap():
    sources = "Billing questions are handled by chat. Billing support is open on weekdays."
    assert swaps("Billing is handled by chat.", "Billing questions are handled by chat.", sources) == []


def test_a_sentence_that_only_touches_the_evidence_is_not_checked_for_swaps():
    # the same slot filled otherwise ("Admins" / "Owners" unlock), but the two share two content words,
    # not half of the claim's: not the same statement
    claim = "Admins can unlock accounts remotely through mobile devices, desktop browsers, tablets and smart watches."
    assert swaps(claim, "Owners can unlock accounts from the Members page.") == []
    assert swaps("Admins can unlock accounts remotely.", "Owners can unlock accounts from the Members page.")


def test_a_denial_needs_a_denial_in_the_nearest_chunk():
    # the claim denies; its nearest chunk negates nothing and shares a word: flagged
    assert polarity_mismatch("We do not know what happens after death.",
                             ["What happens to our minds when we die?", "Sleep is a state of rest."])
    # the nearest chunk negates something (another clause): the two-word rule alone decides, no flag
    assert not polarity_mismatch("Members don't have to use it.",
                                 ["Members can turn it on from Security settings, but it is not mandatory for them."])
    # an affirmative claim against an unrelated negated clause is still no flag
    assert not polarity_mismatch("Sir Alec Guinness starred in the film.",
                                 ["Guinness World Records no longer certifies such claims."])


@pytest.fixture(scope="module")
def anchors(tmp_path_factory):
    return build("anchors", cache_dir=str(tmp_path_factory.mktemp("cache")))


def test_anchors_flags_a_swapped_role_and_passes_the_faithful_answer(anchors):
    swapped, faithful = anchors.verify([
        Case(id="s", dataset="t", response="Members can unlock it sooner from the Members page.", label=True,
             sources=[Source(id="kb", text=KB)]),
        Case(id="f", dataset="t", response="An Owner can unlock it sooner from the Members page.", label=False,
             sources=[Source(id="kb", text=KB)]),
    ])
    [unit] = swapped.units
    assert "swapped: 'member'" in unit.status and swapped.score >= 0.5
    assert faithful.score < 0.5 and "swapped" not in faithful.units[0].status
    # without the fact checks, no swap is looked for
    plain = build("anchors", facts=False, cache_dir=anchors.options.cache_dir).verify([
        Case(id="s", dataset="t", response="Members can unlock it sooner from the Members page.", label=True,
             sources=[Source(id="kb", text=KB)])])[0]
    assert plain.score < 0.5


def test_a_long_sentence_is_not_read_for_swaps():
    # the shape of the false alarms on AttributionBench's dev split: a long free-form sentence whose slot
    # holds an elaboration of the evidence's word, not another named thing
    sources = ("Architectural design fees vary depending on the complexity of the project. Professional "
               "experience and access to materials matter to the overall cost of construction.")
    evidence = "Architectural design fees vary depending on the complexity of the project."
    long_claim = ("Architectural design fees for residential projects in large cities vary depending on the "
                  "experience of the project")
    assert len(content_words(long_claim)) > 10
    assert swaps(long_claim, evidence, sources) == []
    # the same swap said shortly is read
    short_claim = "Architectural design fees vary depending on the experience of the project."
    assert len(content_words(short_claim)) <= 10
    assert swaps(short_claim, evidence, sources)
