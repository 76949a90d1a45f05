"""Every relative link in the README and docs/ resolves: a moved or renamed page breaks this test, not a
reader's click. Anchors (`page.md#a-heading`) must name a heading of that page."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), ROOT / "benchmarks" / "README.md"]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def _links(page: Path) -> list[str]:
    return LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8")))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    broken = []
    for target in _links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_checker_finds_links_and_anchors():
    assert _slug("Write your own pack") == "write-your-own-pack"
    assert _slug("`fields:`") == "fields"
    assert LINK.findall("see [a](docs/a.md) and ![img](x.png) and [b](b.md#c)") == ["docs/a.md", "b.md#c"]


def test_every_docs_page_is_linked_from_the_readme_or_another_page():
    linked = {(page.parent / t.partition("#")[0]).resolve() for page in PAGES for t in _links(page)}
    orphans = [p.name for p in (ROOT / "docs").glob("*.md") if p.resolve() not in linked]
    assert not orphans, f"docs pages nobody links to: {orphans}"
