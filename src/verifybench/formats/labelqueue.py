"""A label queue (`verifybench label-queue`, `label-merge`): three files a reviewer's spreadsheet and the
loop read back.

- the CSV (`to_label.csv`): one row per case to label, its cells neutralised for spreadsheets
  (`loaders.labelqueue`), with a `queue` column naming its queue record;
- the queue record (`to_label.queue.jsonl`): which case ids were queued, and how. Its first line is the
  header below (this model), then one line per queued case: from format 3 an object `{"id", "round",
  "stratum", "inclusion_prob"}` (its round and its design in that round: what an estimate across rounds
  reads, not the spreadsheet's cells; in a merged record, `again` names a second round that queued the
  case, which an estimate refuses), before it a JSON string, the id alone. A CSV row whose id is in no queue
  record (added by hand) is not a case anyone queued: every reader lists it and leaves it out;
- the suite beside them (`to_label.yaml`, `loader: label-queue`) that `verifybench run` reads once the
  label column is filled.

A CSV from before queue records (verifybench 0.1: no record beside it and no `queue` column) is read as
the legacy format: every row as queued, with a note that its rows cannot be checked against a record.
A CSV with a `queue` column whose record is missing is refused: its record says which rows were queued."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from verifybench.formats.base import Stored, omitted

# The CSV column naming the queue record (its file name): a CSV that has it is of the current format.
QUEUE_COLUMN = "queue"


def csv_format(header: Sequence[str]) -> int:
    """A queue CSV's format from its header: 2 with the `queue` column, else 1 (before queue records)."""
    return 2 if QUEUE_COLUMN in header else 1


class Round(BaseModel):
    """One label round a merged record holds: what `label-estimate` needs to combine it with the others."""

    model_config = ConfigDict(extra="forbid")

    round: str = Field(description="the round's id (its queue record's `round`)")
    source: str | None = Field(None, description="the decision log or run it was queued from")
    created: str | None = Field(None, description="when its queue was written (UTC, ISO 8601)")
    window_holds: list[str] = Field(default_factory=list, description=(
        "ids labeled in earlier rounds that this round's window holds (left out of its pool by --labeled): "
        "in an estimate across rounds they stand for themselves"))


class QueueRecord(Stored):
    """The first line of a queue record (`NAME.queue.jsonl`): what the ids after it were queued from; one
    case a line follows, `{"id", "round", "stratum", "inclusion_prob"}` (format 2: the id alone, a JSON
    string). The queue's CSV names its record in a `queue` column; a CSV
    from before records (0.1: neither) is read with a note that its rows cannot be checked against one."""

    KIND = "verifybench.label-queue"
    # Format 1 (after 0.1, which wrote no record) had no writer; 1 -> 2: the CSV names its record in a
    # `queue` column, so a CSV without its record is told apart from a 0.1 queue.
    # 2 -> 3: a line per case carries its round, stratum and inclusion probability; the header its round
    # (a format 2 record's lines are ids alone: its design is read from the CSV's columns).
    VERSION = 3
    MIGRATIONS = {1: lambda doc: doc, 2: lambda doc: doc}
    TITLE = "the case ids a label queue holds: the rows its CSV may label"

    csv: str = Field(description="the CSV's file name (beside the record)")
    source: str | None = omitted(description="the decision log or run the cases were picked from")
    strategy: str | None = omitted(description="uncertain, stratified or disagree")
    seed: int | None = omitted(description="the seed of the random share and of ties")
    budget: int | None = omitted(description="cases queued")
    merged_from: list[str] | None = omitted(description="the labeled CSVs `label-merge` merged (newest first)")
    created: str | None = omitted(description="when it was written (UTC, ISO 8601)")
    round: str | None = omitted(description=(
        "the label round this queue is (its CSV's stem and creation time); absent (format 2): the CSV's name"))
    window_holds: list[str] | None = omitted(description=(
        "ids labeled in earlier rounds (--labeled) that this queue's window holds: they stand for themselves "
        "in an estimate across rounds"))
    rounds: list[Round] | None = omitted(description="a merged record: the rounds its lines come from")
