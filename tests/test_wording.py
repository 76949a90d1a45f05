"""`anchors.wording.in_source_wording`: a claim's times, durations and number words in the words its
sources use for them (the `nli` option `source_wording`), and only where they mean the same."""

import pytest

from verifybench.verifiers.anchors.wording import in_source_wording

SOURCES = ("Account lockout. After 10 failed sign-in attempts, the account is locked for 1 hour. "
           "Chat replies arrive within 30 minutes. Support is open from 9:00 am to 6:00 pm CET. "
           "Refunds take 5 business days. Reset links expire after 24 hours.")


@pytest.mark.parametrize("claim, expected", [
    ("It locks for an hour after ten failed sign-ins.", "It locks for 1 hour after 10 failed sign-ins."),
    ("Replies come within half an hour.", "Replies come within 30 minutes."),
    ("We close at 18:00 CET.", "We close at 6:00 pm CET."),
    ("We close at 6 pm.", "We close at 6:00 pm CET."),        # no zone said: the sources' time and zone
    ("Reset links expire after a day.", "Reset links expire after 24 hours."),
    ("Refunds take five business days.", "Refunds take 5 business days."),
])
def test_a_quantity_the_sources_state_takes_their_words(claim, expected):
    assert in_source_wording(claim, SOURCES) == expected


@pytest.mark.parametrize("claim", [
    "We close at 5 pm CET.",                  # another time
    "We close at 6:00 pm ET.",                # the same clock time in another zone
    "Reset links expire after two days.",     # another length
    "Refunds take 5 days.",                   # calendar days are not business days
    "It locks after eleven failed sign-ins.",  # a number no source states
    "One of the owners can unlock it.",       # "one of" is not a quantity
    "Once it's locked, you can't sign in.",   # contractions stay as written (module docstring)
])
def test_a_changed_or_unstated_quantity_stays_as_written(claim):
    assert in_source_wording(claim, SOURCES) == claim


def test_several_quantities_in_one_claim_are_each_rewritten_and_offsets_hold():
    claim = "After ten tries it locks for an hour; replies come within half an hour, by 18:00 CET."
    assert in_source_wording(claim, SOURCES) == ("After 10 tries it locks for 1 hour; replies come within "
                                                 "30 minutes, by 6:00 pm CET.")
