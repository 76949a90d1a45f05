"""Which language a text is written in, for the steps that depend on it (sentences, claims, facts, the
embedding model), and which languages those steps support.

Script first (Unicode blocks), then, within the Latin and Cyrillic scripts, letters only one language
uses and short function-word profiles. It needs no model and answers in microseconds, which is what a
per-case decision needs; it is not a general language identifier: a text of a few words in a Latin
script that names no function word is read as English, as before.
"""

from __future__ import annotations

import re

SUPPORTED = ("en", "ru")  # languages with sentence, claim and fact handling of their own
NAMES = {"en": "English", "ru": "Russian", "uk": "Ukrainian", "be": "Belarusian", "sr": "Serbian",
         "mk": "Macedonian", "bg": "Bulgarian", "de": "German", "fr": "French", "es": "Spanish",
         "it": "Italian", "pt": "Portuguese", "nl": "Dutch", "pl": "Polish", "cs": "Czech", "tr": "Turkish",
         "zh": "Chinese", "ja": "Japanese", "ko": "Korean", "ar": "Arabic", "he": "Hebrew", "el": "Greek",
         "hi": "Hindi", "th": "Thai", "ka": "Georgian", "hy": "Armenian", "und": "undetermined"}

# (first code point, last code point, language) for scripts that name their language well enough here.
_SCRIPTS = [(0x0370, 0x03FF, "el"), (0x0590, 0x05FF, "he"), (0x0600, 0x06FF, "ar"), (0x0900, 0x097F, "hi"),
            (0x0E00, 0x0E7F, "th"), (0x10A0, 0x10FF, "ka"), (0x0530, 0x058F, "hy"), (0x3040, 0x30FF, "ja"),
            (0xAC00, 0xD7AF, "ko"), (0x1100, 0x11FF, "ko"), (0x4E00, 0x9FFF, "zh")]
_CYRILLIC = range(0x0400, 0x0530)
# Letters of one Cyrillic language that Russian does not use.
_CYRILLIC_MARKS = [("іїєґ", "uk"), ("ў", "be"), ("ђћ", "sr"), ("ѓќѕ", "mk"), ("јљњџ", "sr")]
_FUNCTION_WORDS = {
    "en": "the and is are of to in that it for with on this be was not you have from or by at i my me he she "
          "we they his her but so if as an what which who will would can could does did has had been were "
          "there their our your all just like about",
    "de": "der die das und ist nicht ein eine zu den mit sich des auf für im dem auch es wird sie",
    "fr": "le la les et est des une un du pas que qui dans pour en sur au avec sont ce ne",
    "es": "el la los las y es de que en un una por con para no se del al lo como está",
    "it": "il la di che è e un una per non con sono del della nel gli le si da al",
    "pt": "o a os as e é de que em um uma para não com do da no na por se",
    "nl": "de het een en is van niet dat op te in met voor zijn er ook aan",
    "pl": "i w nie na się z jest że do to jak ale o co od po przez dla",
    "cs": "a v je se na že to s z do jsou by o ale jak pro od ve",
    "tr": "ve bir bu da de için ile değil olan çok gibi daha ne ama",
}
# Words that English uses too ("per", "a", "in", "no", "do") say nothing against English.
_SHARED = {"a", "o", "e", "i", "in", "to", "no", "do", "per", "is", "on", "by", "at", "it", "be", "as", "an", "me",
           "die", "den", "pro", "con", "come", "se", "de", "la", "le", "the", "and", "of", "for", "with", "this", "not",
           "you", "have", "from", "or", "was", "are", "that", "ne", "ce", "es", "en", "al", "da", "na", "so", "ale"}
# One-letter words ("s" of "he's", "a", "v") are too easily found by chance to speak for another language.
_PROFILE = {lang: frozenset(w for w in ws.split() if lang == "en" or (len(w) > 1 and w not in _SHARED))
            for lang, ws in _FUNCTION_WORDS.items()}
_LATIN_WORD = re.compile(r"[a-zà-öø-ÿąćęłńśźżčřěůšžğış]+")


def name(code: str) -> str:
    """'ru' -> 'Russian'; an unknown code as it is."""
    return NAMES.get(code, code)


def detect_language(text: str) -> str:
    """An ISO 639-1 code for `text`: 'ru' when most letters are Cyrillic and none is another Cyrillic
    language's own, 'en' for Latin-script text whose function words are English (or that has none),
    another code where the script or the function words say so, 'und' for text without letters."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return "und"
    counts: dict[str, int] = {}
    cyrillic = 0
    for c in letters:
        o = ord(c)
        if o in _CYRILLIC:
            cyrillic += 1
            continue
        for lo, hi, lang in _SCRIPTS:
            if lo <= o <= hi:
                counts[lang] = counts.get(lang, 0) + 1
                break
    if cyrillic / len(letters) > 0.5:
        lowered = text.lower()
        for marks, lang in _CYRILLIC_MARKS:
            if any(m in lowered for m in marks):
                return lang
        return "ru"
    if counts.get("ja"):
        counts["ja"] += counts.pop("zh", 0)  # kana among Han characters is Japanese
    if counts:
        lang, n = max(counts.items(), key=lambda kv: kv[1])
        if n / len(letters) > 0.5:
            return lang
    words = _LATIN_WORD.findall(text.lower())
    hits = {lang: sum(w in profile for w in words) for lang, profile in _PROFILE.items()}
    best = max(hits, key=lambda lang: (hits[lang], lang == "en"))
    # Another language only when its own function words are clearly there: at least three, more than
    # twice the English ones, and one word in ten.
    if best == "en" or hits[best] < 3 or hits[best] <= 2 * hits["en"] or hits[best] < 0.1 * len(words):
        return "en"
    return best


def supported(code: str) -> bool:
    return code in SUPPORTED


def resolve(code: str) -> str:
    """The language a verifier reads a text as: a text without letters ("2006", "15 %") has none of its
    own, and the English pipeline reads its digits as well as any."""
    return "en" if code == "und" else code


def unsupported_message(code: str, verifier: str) -> str:
    return (f"the response is in {name(code)} ({code}), which {verifier} does not support (supported: "
            f"{', '.join(f'{name(c)} ({c})' for c in SUPPORTED)}); set the verifier's `language` option to "
            f"read it as one of those anyway")
