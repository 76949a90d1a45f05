"""A label queue (`verifybench label-queue`, `label-merge`): three files a reviewer's spreadsheet and the
loop read back.

- the CSV (`to_label.csv`): one row per case to label, its cells neutralised for spreadsheets
  (`loaders.labelqueue`), with a `queue` column naming its queue record;
- the queue record (`to_label.queue.jsonl`): which case ids were queued. Its first line is the header
  below (this model), then one JSON string per line, one id each. A CSV row whose id is in no queue
  record (added by hand) is not a case anyone queued: every reader lists it and leaves it out;
- the suite beside them (`to_label.yaml`, `loader: label-queue`) that `verifybench run` reads once the
  label column is filled.

A CSV from before queue records (verifybench 0.1: no record beside it and no `queue` column) is read as
the legacy format: every row as queued, with a note that its rows cannot be checked against a record.
A CSV with a `queue` column whose record is missing is refused: its record says which rows were queued."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import Field

from verifybench.formats.base import Stored, omitted

# The CSV column naming the queue record (its file name): a CSV that has it is of the current format.
QUEUE_COLUMN = "queue"


def csv_format(header: Sequence[str]) -> int:
    """A queue CSV's format from its header: 2 with the `queue` column, else 1 (before queue records)."""
    return 2 if QUEUE_COLUMN in header else 1


class QueueRecord(Stored):
    """The first line of a queue record (`NAME.queue.jsonl`): what the ids after it were queued from; one
    case id (a JSON string) a line follows. The queue's CSV names its record in a `queue` column; a CSV
    from before records (0.1: neither) is read with a note that its rows cannot be checked against one."""

    KIND = "verifybench.label-queue"
    # Format 1 (after 0.1, which wrote no record) had no writer; 1 -> 2: the CSV names its record in a
    # `queue` column, so a CSV without its record is told apart from a 0.1 queue.
    VERSION = 2
    MIGRATIONS = {1: lambda doc: doc}
    TITLE = "the case ids a label queue holds: the rows its CSV may label"

    csv: str = Field(description="the CSV's file name (beside the record)")
    source: str | None = omitted(description="the decision log or run the cases were picked from")
    strategy: str | None = omitted(description="uncertain, stratified or disagree")
    seed: int | None = omitted(description="the seed of the random share and of ties")
    budget: int | None = omitted(description="cases queued")
    merged_from: list[str] | None = omitted(description="the labeled CSVs `label-merge` merged (newest first)")
    created: str | None = omitted(description="when it was written (UTC, ISO 8601)")
