"""Ranking role of the mcpw plugin contract (WIT `mcpw:plugin/ranking`), in Python.

componentize-py looks up the exported resource `index` of interface `ranking` as the
class `Index` of a top-level module named `ranking`, hence this file's name.

Three query forms:
  * regex mode: Python `re` (case-insensitive) over agent-facing names and descriptions;
  * `select:a,b`: the exact agent-facing names, in the order given;
  * anything else: BM25 over name words (weighted x2), description words and the
    server's `searchKeywords`.
"""

import heapq
import math
import re
from typing import Dict, List, Optional

from componentize_py_types import Err
from wit_world.exports import ranking as wit
from wit_world.imports import types

PROFILES = ("bm25",)  # profile none means bm25
K1 = 1.2
B = 0.75
NAME_WEIGHT = 2  # a name word counts as this many description words
MAX_TEXT = 65_536  # characters of a description that are indexed
SELECT = "select:"

_CAMEL_LOWER_UPPER = re.compile(r"([a-z0-9])([A-Z])")  # fooBar -> foo Bar
_CAMEL_ACRONYM = re.compile(r"([A-Z]+)([A-Z][a-z])")  # HTTPServer -> HTTP Server
_WORD = re.compile(r"[^\W_]+")  # runs of letters/digits; _ - space etc. separate

_stems: Dict[str, str] = {}


def _stem(w: str) -> str:
    """A tiny plural folder: issues -> issue, directories -> directory."""
    s = _stems.get(w)
    if s is None:
        s = w
        if len(w) > 4 and w.endswith("ies"):
            s = w[:-3] + "y"
        elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
            s = w[:-1]
        if len(_stems) < 200_000:
            _stems[w] = s
    return s


def words(text: str) -> List[str]:
    """Lowercase words of `text`, split on non-alphanumerics and camelCase."""
    if len(text) > MAX_TEXT:
        text = text[:MAX_TEXT]
    if not text.islower():
        text = _CAMEL_ACRONYM.sub(r"\1 \2", _CAMEL_LOWER_UPPER.sub(r"\1 \2", text))
    stem = _stem
    return [stem(w) for w in _WORD.findall(text.lower())]


def _error(kind, message: str) -> Err:
    return Err(kind(message))


def _top(scores: Dict[int, float], limit: int) -> List[wit.Hit]:
    """Best `limit` hits, best first; equal scores keep catalog order."""
    best = heapq.nsmallest(limit, scores.items(), key=lambda kv: (-kv[1], kv[0]))
    return [wit.Hit(index=i, score=s) for i, s in best]


class Index(wit.Index):
    def __init__(self, entries: List[types.Entry], keywords: Dict[str, List[str]]):
        n = len(entries)
        self.names: List[str] = [e.name for e in entries]
        self.servers: List[str] = [e.tool.server for e in entries]
        self.descriptions: List[str] = [e.tool.description for e in entries]
        self.by_name: Dict[str, int] = {}
        for i, name in enumerate(self.names):
            self.by_name.setdefault(name, i)

        kw_words = {s: words(" ".join(ks)) for s, ks in keywords.items()}
        postings: Dict[str, List[int]] = {}  # word -> [doc, tf, doc, tf, ...]
        lengths = [0] * n
        for i in range(n):
            counts: Dict[str, int] = {}
            get = counts.get
            for w in words(self.names[i]):
                counts[w] = get(w, 0) + NAME_WEIGHT
            for w in words(self.descriptions[i]):
                counts[w] = get(w, 0) + 1
            for w in kw_words.get(self.servers[i], ()):
                counts[w] = get(w, 0) + 1
            total = 0
            for w, tf in counts.items():
                total += tf
                p = postings.get(w)
                if p is None:
                    postings[w] = [i, tf]
                else:
                    p.append(i)
                    p.append(tf)
            lengths[i] = total
        self.postings = postings
        self.lengths = lengths
        self.avgdl = (sum(lengths) / n) if n else 1.0
        self.n = n

    @classmethod
    def build(cls, entries: List[types.Entry], options: wit.IndexOptions) -> "Index":
        if options.profile is not None and options.profile not in PROFILES:
            raise _error(
                types.PluginError_InvalidInput,
                f"unknown ranking profile {options.profile!r}; this guest offers: "
                + ", ".join(PROFILES),
            )
        keywords: Dict[str, List[str]] = {}
        for sk in options.server_keywords:
            keywords.setdefault(sk.server, []).extend(sk.keywords)
        return cls(entries, keywords)

    def search(self, query: str, options: wit.SearchOptions) -> List[wit.Hit]:
        limit = options.limit
        server: Optional[str] = options.server
        if options.mode == wit.QueryMode.REGEX:
            return self._regex(query, limit, server)
        stripped = query.lstrip()
        if stripped[: len(SELECT)].lower() == SELECT:
            return self._select(stripped[len(SELECT):], limit, server)
        if not query.strip():
            raise _error(types.PluginError_InvalidInput, "the search query is empty")
        if limit == 0:
            return []
        return self._bm25(query, limit, server)

    def _select(self, rest: str, limit: int, server: Optional[str]) -> List[wit.Hit]:
        hits: List[wit.Hit] = []
        seen = set()
        for name in rest.split(","):
            if len(hits) >= limit:
                break
            i = self.by_name.get(name.strip())
            if i is None or i in seen:
                continue
            if server is not None and self.servers[i] != server:
                continue
            seen.add(i)
            hits.append(wit.Hit(index=i, score=1.0))
        return hits

    def _regex(self, query: str, limit: int, server: Optional[str]) -> List[wit.Hit]:
        try:
            pattern = re.compile(query, re.IGNORECASE)
        except (re.error, ValueError, OverflowError, RecursionError) as e:
            raise _error(types.PluginError_InvalidPattern, str(e))
        if limit == 0:
            return []
        # Name matches (score 1.0) before description-only matches (0.5), catalog order.
        name_hits: List[int] = []
        desc_hits: List[int] = []
        search = pattern.search
        servers, descriptions = self.servers, self.descriptions
        for i, name in enumerate(self.names):
            if server is not None and servers[i] != server:
                continue
            if search(name):
                name_hits.append(i)
                if len(name_hits) >= limit:
                    break
            elif len(desc_hits) < limit and search(descriptions[i]):
                desc_hits.append(i)
        hits = [wit.Hit(index=i, score=1.0) for i in name_hits]
        hits += [wit.Hit(index=i, score=0.5) for i in desc_hits[: limit - len(hits)]]
        return hits

    def _bm25(self, query: str, limit: int, server: Optional[str]) -> List[wit.Hit]:
        terms = dict.fromkeys(words(query))  # unique, in order
        n, avgdl, lengths, servers = self.n, self.avgdl, self.lengths, self.servers
        scores: Dict[int, float] = {}
        for t in terms:
            p = self.postings.get(t)
            if not p:
                continue
            df = len(p) // 2
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            get = scores.get
            for k in range(0, len(p), 2):
                i = p[k]
                if server is not None and servers[i] != server:
                    continue
                tf = p[k + 1]
                norm = K1 * (1.0 - B + B * lengths[i] / avgdl)
                scores[i] = get(i, 0.0) + idf * tf * (K1 + 1.0) / (tf + norm)
        return _top(scores, limit)
