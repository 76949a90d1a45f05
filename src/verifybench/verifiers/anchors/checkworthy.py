"""Check-worthiness: which units of a response state something a source could back or contradict.

A support answer opens with "Hi Maria, thanks for reaching out!" and closes with "Let me know if
there's anything else I can help with." or a question back to the customer; none of it is a claim, and
scored against the nearest source sentence each becomes the answer's weakest unit. `assess` sorts the
units of a response (sentences or claims) before they are scored:

1. Rules, anchored at the unit's start and applied repeatedly: greetings ("Hi there", "Hello Sam"),
   thanks ("Thanks for your patience"), acknowledgements ("Good question", "Sure thing"), offers of help
   ("Happy to help with that", "I'm here to help"), "let me check" lines, apologies and closings
   ("Hope this helps", "Let me know if...", "Don't hesitate to reach out..."). Each is stripped with
   the punctuation after it; what remains is the unit's checkable text ("Hi Maria, the Pro plan costs
   $29" keeps "the Pro plan costs $29").
2. A unit with nothing left (or, after a greeting, only a name) is skipped; so is a question to the
   customer ("Would you like me to walk you through it?"), unless it asserts something the way "Did
   you know that ..." does.
3. The parser the project already loads (spaCy's small English pipeline) reads the short units the
   rules left: a speaker's act with no fact in it ("I'll look into it for you.", "We can walk you
   through the setup.": the root verb is one of helping / checking / guiding, its subject is I or we,
   and the unit names no number and no entity) is skipped too.

Skipped units are not dropped: the verifiers return them in the verdict's units with status
`skipped: <reason>` and no score, and they count in the verdict's details. English only: for other
languages every unit is check-worthy (`assess` returns them unchanged).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_REST = r"(?:\s+[^,.!?;:]*)?"  # the rest of a clause ("thanks for reaching out")
_TO_END = r"[^.!?]*"  # the rest of the sentence ("let me know if there's anything else ...")
_NAME = r"(?:\s+(?:there|all|everyone|team|folks|[A-Z][\w'-]*))?"
# (reason, pattern): each must end at punctuation or at the end of the unit to count (see _CUT).
_RULES: list[tuple[str, str]] = [
    ("greeting", r"(?:hi|hello|hey|hiya|dear|greetings|good\s+(?:morning|afternoon|evening))" + _NAME),
    ("thanks", r"(?:many\s+|big\s+)?(?:thanks|thank\s+you|thx)(?:\s+(?:so|very)\s+much)?(?:\s+again)?"
               r"(?:\s+for\s+[^,.!?;:]*)?"),
    ("acknowledgement", r"(?:(?:good|great|excellent|fair)\s+question|sure(?:\s+thing)?|of\s+course|absolutely|"
                        r"no\s+problem|certainly|got\s+it|understood|okay|ok|alright|all\s+right|great|perfect)"),
    ("offer of help", r"(?:(?:i\s*'?\s*m|i\s+am|i\s*'?\s*d\s+be|i\s+would\s+be|we\s*'?\s*re|we\s+are|we\s*'?\s*d\s+be)\s+"
                      r"(?:happy|glad|here|more\s+than\s+happy)\s+to\s+help|happy\s+to\s+help|glad\s+to\s+help|"
                      r"here\s+to\s+help|how\s+can\s+i\s+help)" + _TO_END),
    ("let me check", r"(?:let\s+me\s+(?:check|look|see|find\s+out|take\s+a\s+look|look\s+into|verify|confirm|help)|"
                     r"i\s*'?\s*ll\s+(?:check|look\s+into|take\s+a\s+look|find\s+out)|one\s+moment(?:\s+please)?|"
                     r"give\s+me\s+a\s+(?:moment|second|sec))" + _REST),
    ("apology", r"(?:(?:i\s*'?\s*m|we\s*'?\s*re|i\s+am|we\s+are)\s+)?(?:so\s+|very\s+|really\s+)?sorry" + _REST
                + r"|(?:i|we)\s+apologi[sz]e" + _REST + r"|apologies" + _REST
                + r"|i\s+understand" + _TO_END + r"(?:frustrating|inconvenien\w*|annoying)" + _TO_END),
    ("closing", r"(?:i\s+)?hope\s+(?:this|that)\s+helps" + _TO_END
                + r"|have\s+a\s+(?:great|nice|good|lovely|wonderful)\s+(?:day|one|weekend|evening|week)" + _TO_END
                + r"|let\s+(?:me|us)\s+know\s+if" + _TO_END + r"|feel\s+free\s+to" + _TO_END
                + r"|(?:please\s+)?(?:do\s+not|don\s*'?\s*t)\s+hesitate" + _TO_END
                + r"|(?:please\s+)?(?:reach\s+out|contact\s+us|get\s+in\s+touch|reply|write\s+back)(?:\s+to\s+us)?"
                  r"(?:\s+again)?\s+if" + _TO_END
                + r"|(?:is\s+there\s+)?anything\s+else\s+(?:i|we)\s+can" + _TO_END
                + r"|(?:i\s*'?\s*m|we\s*'?\s*re)\s+(?:happy|glad)\s+to\s+help\s+if" + _TO_END
                + r"|(?:best|kind|warm)\s+regards|cheers|take\s+care|all\s+the\s+best"),
]
# A rule counts only when the phrase ends the unit or is followed by punctuation (a greeting word
# inside a sentence, "Hi-fi audio ..." or "Great Britain ...", is not a greeting).
_CUT = re.compile("|".join(f"(?P<r{i}>{p})" for i, (_, p) in enumerate(_RULES)), re.I)
_AFTER = re.compile(r"\s*(?:[,.!:;\u2014\u2013]+|\s-\s|$)\s*(?:(?:and|but|so)\s+)?")
_ASSERTING_QUESTION = re.compile(r"^(?:did|do)\s+you\s+know\b|^have\s+you\s+heard\s+that\b", re.I)
_ONLY_NAME = re.compile(r"^(?:[A-Z][\w'-]*)(?:\s+[A-Z][\w'-]*)?[\s.!,]*$")
_HAS_WORD = re.compile(r"\w")
# The parser's rule: a speaker's act with no fact in it.
SPEAKER_ACTS = frozenset({"help", "assist", "check", "look", "walk", "guide", "investigate", "follow", "reply",
                          "respond", "see", "find", "get", "dig", "escalate", "ask", "loop", "reach"})
_SPEAKERS = frozenset({"i", "we"})
PARSER_MAX_WORDS = 12


# A unit that says what the assistant's material does not hold ("I don't have information about metal
# cards", "The docs don't say which version that was") states nothing about the world a source could back
# or contradict; what such an answer adds after it ("... but the fee is $5") is a unit of its own.
_NEG = r"(?:do\s*n[o'’]?t|does\s*n[o'’]?t|can\s*n?[o'’]?t|cannot|am\s+not\s+able\s+to|[’']m\s+not\s+able\s+to|am\s+unable\s+to)"
_ABSTENTION = re.compile(
    r"^(?:but\s+|however,?\s+|unfortunately,?\s+)?(?:"
    r"(?:i|we)\s+" + _NEG + r"\s+(?:have|see|find|confirm|know|tell|say)\b"
    r"|(?:the|our|my|these|this)\s+(?:docs|documents?|documentation|information|materials?|sources?|pages?|"
    r"help\s+(?:center|pages?|articles?)|policy\s+wording|faq)(?:\s+(?:here|i\s+have|available(?:\s+to\s+me)?))?\s+"
    + _NEG + r"\s+(?:say|mention|cover|list|specify|state|include|describe|address|show)\b"
    r"|there\s+(?:is|'s|’s)\s+no(?:thing)?\s+(?:information|mention|details?)\b"
    r"|(?:that|this|it)\s+(?:is\s*n[o'’]?t|is\s+not)\s+(?:covered|mentioned|listed|specified|stated)\s+in\s+"
    r"(?:the|my|our)\s+(?:docs|documents?|documentation|information|materials?|sources?)\b)", re.I)


# The same in Russian ("у меня нет информации об этом", "в документах об этом не сказано").
_ABSTENTION_RU = re.compile(
    r"^\W*(?:(?:к\s+сожалению|увы),?\s+)?(?:"
    r"у\s+(?:меня|нас)\s+нет\s+(?:информации|данных|сведений)"
    r"|(?:я\s+)?не\s+(?:могу|нахожу|вижу)\s+(?:подтвердить|сказать|найти|ответить|информации|данных|сведений)"
    r"|(?:в|во)\s+(?:моих|наших|имеющихся|этих|доступных)?\s*(?:материалах|документах|данных|источниках|справке|"
    r"статьях|правилах)\s+(?:(?:этого|об\s+этом|такой\s+информации|ничего)\s+)?(?:нет|не\s+(?:сказано|указано|"
    r"говорится|упоминается|описано))"
    r"|(?:об\s+этом|этого)\s+(?:в\s+\w+\s+)?(?:нет|не\s+(?:сказано|указано|говорится))"
    r"|(?:информации|данных|сведений)\s+(?:об\s+этом|на\s+этот\s+счёт|на\s+этот\s+счет)\s+(?:у\s+меня\s+)?нет)",
    re.I)


@dataclass(frozen=True)
class Worthiness:
    """One unit sorted: `reason` is None for a check-worthy unit (its checkable text begins `offset`
    characters into the unit), else why it is skipped."""

    reason: str | None
    offset: int = 0


def strip_conversational(text: str) -> tuple[list[str], int]:
    """The reasons of the conversational phrases that open `text`, and where the rest begins."""
    reasons: list[str] = []
    pos = 0
    lead = len(text) - len(text.lstrip())
    pos = lead
    while pos < len(text):
        m = _CUT.match(text, pos)
        if not m:
            break
        after = _AFTER.match(text, m.end())
        if after is None or m.end() == pos:
            break
        reasons.append(_RULES[int(m.lastgroup[1:])][0])  # type: ignore[index]
        pos = after.end()
    return reasons, pos


def _rule_reason(text: str) -> Worthiness:
    reasons, pos = strip_conversational(text)
    rest = text[pos:].strip()
    if _ABSTENTION.match(rest):
        return Worthiness("says the sources do not answer")
    if not _HAS_WORD.search(rest):
        return Worthiness(reasons[0] if reasons else "no words")
    if reasons and reasons[-1] == "greeting" and _ONLY_NAME.match(rest):
        return Worthiness("greeting")
    if reasons and _ONLY_NAME.match(rest) and len(rest.split()) <= 2:  # "Thanks for your patience, Maria."
        return Worthiness(reasons[0])
    if rest.endswith("?") and not _ASSERTING_QUESTION.search(rest):
        return Worthiness("question to the customer")
    return Worthiness(None, pos)


def _parser_reason(span) -> str | None:
    """'offer of help' when the parsed unit is a speaker's act (I/we + helping or checking) naming no fact."""
    root = span.root
    if root.lemma_.lower() not in SPEAKER_ACTS:
        # "Let me walk you through it": the act is the clause under "let".
        if root.lemma_.lower() == "let" and any(c.lower_ in ("me", "us") for c in root.children):
            acts = [c for c in root.children if c.dep_ in ("ccomp", "xcomp") and c.lemma_.lower() in SPEAKER_ACTS]
            if not acts:
                return None
        else:
            return None
    elif not any(c.dep_ in ("nsubj", "nsubjpass") and c.lower_ in _SPEAKERS for c in root.children):
        return None
    if any(t.like_num or t.ent_type_ or t.pos_ == "PROPN" for t in span):
        return None
    return "offer of help"


def assess(texts: list[str], language: str = "en", docs: list | None = None) -> list[Worthiness]:
    """Each unit sorted (see the module docstring). `docs`, when given, are the units already parsed by
    spaCy (spans or docs, one per text); otherwise the short units the rules leave are parsed here."""
    if language == "ru":
        return [Worthiness("says the sources do not answer") if _ABSTENTION_RU.search(t) else Worthiness(None)
                for t in texts]
    if language != "en":
        return [Worthiness(None) for _ in texts]
    out = [_rule_reason(t) for t in texts]
    todo = [i for i, w in enumerate(out) if w.reason is None and len(texts[i][w.offset:].split()) <= PARSER_MAX_WORDS]
    if not todo:
        return out
    if docs is None:
        from verifybench.verifiers.anchors.text import english_pipeline

        parsed = list(english_pipeline().pipe([texts[i][out[i].offset:] for i in todo]))
        spans = [next(iter(d.sents), None) if len(list(d.sents)) == 1 else None for d in parsed]
    else:
        spans = [docs[i] for i in todo]
    for i, span in zip(todo, spans):
        if span is not None and len(span) and (reason := _parser_reason(span)) is not None:
            out[i] = Worthiness(reason)
    return out


def skipped_status(reason: str) -> str:
    return f"skipped: {reason} (not check-worthy)"
