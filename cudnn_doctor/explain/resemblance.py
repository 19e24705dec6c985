"""A message no rule recognises, answered by its resemblance to known reports (compat/resemblance.toml).

The index holds real reports of the development sets, each with the code today's rules answer it with (a code of
the family its thread established) and its source thread; unrelated look-alikes are indexed too, so that a message
as close to one of them is declined. The message's words are weighed by how rare they are in the index (TF-IDF)
and set against every report's (cosine); an answer needs its nearest reports to agree on a family and no unrelated
report as close. How the threshold and the agreement were chosen, by leaving each set out in turn:
benchmarks/README.md, "Round sixteen: explain by resemblance (e23)", and benchmarks/explain_resemblance.py.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

# the words read: the end of a long log, where the failure is (a bounded scan, whatever the input's size)
WINDOW = 20_000
_NUMBER = re.compile(r"\d+")
_HEX = re.compile(r"\b0x[0-9a-f]+\b")
_WORD = re.compile(r"[a-z0-9_]+(?:[.\-][a-z0-9_]+){0,8}")
_PART = re.compile(r"[a-z0-9]+")
_LETTER = re.compile(r"[a-z]")
# words of every sentence, in English: no evidence of what failed
STOP = frozenset("""
the and for with this that from not are was were has have had but you your our its into when then than there
their they them what which while will would can could should may might been being also just only some any all
does did done use used using get got out one two how why after before over under about here more most very such
same other each both same onto per via let lets it's i'm don't doesn't can't isn't
""".split())


@dataclass(frozen=True)
class Agreement:
    """When neighbours answer: AGREE of the TOP nearest related reports of one family (of one code, BY_CODE), the
    best of them THRESHOLD cosine or more (each of the AGREE, EACH), and no unrelated report within RATIO of the
    best agreeing one."""

    threshold: float
    top: int
    agree: int
    ratio: float
    each: bool = False
    by_code: bool = False


# chosen on the leave-one-set-out figures (benchmarks/README.md, "Round sixteen: explain by resemblance (e23)"): the
# rule that gained most with no unrelated message claimed. It gained one case of 1,979, so the fallback is not on by
# default: `explain --by-resemblance` asks for it
CHOSEN = Agreement(threshold=0.75, top=3, agree=2, ratio=0.5)


def words(text: str) -> list[str]:
    """TEXT's words as the index holds them: lower case, numbers as 0, a path's folders and file name apart,
    a dotted or dashed name whole and in its parts; stop words and words of one or two letters left out."""
    text = _NUMBER.sub("0", _HEX.sub("0x", text[-WINDOW:].lower()))
    found: list[str] = []
    for word in _WORD.findall(text):
        parts = _PART.findall(word)
        for token in (word, *parts) if len(parts) > 1 else (word,):
            if len(token) > 2 and token not in STOP and _LETTER.search(token):
                found.append(token)
    return found


@dataclass(frozen=True)
class Report:
    """One known report of the index."""

    id: str
    family: str  # CD1..CD5, or "unrelated"
    code: str  # the code today's rules answer it with ("" for an unrelated one)
    cause: str
    source: str
    words: tuple[str, ...]


class Index:
    """Known reports with their word weights (TF-IDF over the index, each report's vector of unit length)."""

    def __init__(self, reports: list[Report]) -> None:
        self.reports = reports
        frequency = Counter(word for report in reports for word in set(report.words))
        total = len(reports)
        self.idf = {word: math.log((total + 1) / (count + 1)) + 1.0 for word, count in frequency.items()}
        self.postings: dict[str, list[tuple[int, float]]] = {}
        for number, report in enumerate(reports):
            weights = {word: self.idf[word] for word in set(report.words)}
            norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
            for word, weight in weights.items():
                self.postings.setdefault(word, []).append((number, weight / norm))

    def nearest(self, text: str, count: int) -> list[tuple[float, Report]]:
        """The COUNT reports nearest TEXT by cosine, nearest first."""
        counts = Counter(word for word in words(text) if word in self.idf)
        weights = {word: (1.0 + math.log(n)) * self.idf[word] for word, n in counts.items()}
        norm = math.sqrt(sum(w * w for w in weights.values()))
        if not norm:
            return []
        scores: dict[int, float] = {}
        for word, weight in weights.items():
            for number, report_weight in self.postings[word]:
                scores[number] = scores.get(number, 0.0) + weight / norm * report_weight
        best = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:count]
        return [(score, self.reports[number]) for number, score in best]


def decide(index: Index, text: str, rule: Agreement = CHOSEN) -> dict[str, Any] | None:
    """The answer by resemblance, or None: {code, family, similarity, neighbours: [{id, code, source, cause,
    similarity}]} where RULE's agreement holds."""
    near = index.nearest(text, max(rule.top * 4, 12))
    related = [(score, report) for score, report in near if report.family != "unrelated"][: rule.top]
    unrelated = max((score for score, report in near if report.family == "unrelated"), default=0.0)
    groups = Counter(report.code if rule.by_code else report.family for _, report in related)
    if not groups:
        return None
    group, votes = groups.most_common(1)[0]
    agreeing = [(score, report) for score, report in related if (report.code if rule.by_code else report.family) == group]
    best = agreeing[0][0]
    if votes < rule.agree or unrelated >= best * rule.ratio:
        return None
    if (agreeing[rule.agree - 1][0] if rule.each else best) < rule.threshold:
        return None
    family = agreeing[0][1].family
    weight: dict[str, float] = {}
    for score, report in agreeing:  # the most common code; of two as common, the nearer
        weight[report.code] = weight.get(report.code, 0.0) + 1.0 + score
    code = max(weight, key=lambda name: weight[name])
    return {"code": code, "family": family, "similarity": round(best, 3),
            "neighbours": [{"id": report.id, "code": report.code, "source": report.source, "cause": report.cause,
                            "similarity": round(score, 3)} for score, report in agreeing]}


@functools.cache
def shipped_index() -> Index:
    """compat/resemblance.toml as an Index (read only where no rule recognised a message)."""
    from cudnn_doctor.knowledge.data import load

    return Index([Report(row["source"], row["code"][:3] or "unrelated", row["code"], row["cause"], row["source"],
                         tuple(row["words"].split())) for row in load("resemblance").get("report", [])])
