"""Ranking role of the mcpw plugin contract (WIT `mcpw:plugin/ranking`), in Python.

componentize-py takes the exported resource `index` of interface `ranking` from the
class `Index` of a top-level module named `ranking`, hence this file's name.

Three query forms:
  * regex mode: Python `re`, case-insensitive, over agent-facing names and descriptions;
  * `select:a,b`: the exact agent-facing names, in the order given;
  * anything else: BM25 of the query words over the entry name (weighted x2), the
    description and the server's `searchKeywords`.

Speed: CPython runs interpreted inside wasm, and the host's 2 s deadline for `build`
also covers lifting the entry list into Python objects. With 100,000 tools, a first
version that looped over every word in Python, and a second that ran a few `re.sub`
passes over the joined catalog, both hit it in test runs. So `build` only lowercases each
text, encodes it to UTF-8 and maps ASCII punctuation bytes to spaces (`str.lower`,
`str.encode`, `bytes.translate`, applied with `map`, i.e. with no Python loop per
entry; `bytes.translate` is far faster than `str.translate` on non-ASCII text). A
query word is then found by counting it as a substring of every text, again with
C-level `map(bytes.count, ...)`:
  * in a name, anywhere (so `issue` matches `create_issue` and `createIssue`);
  * in a description or keywords, at a word start (so `issue` matches `issues`,
    but `list` does not match `playlist`).
Term frequency, document frequency and length (in UTF-8 bytes) feed plain BM25.
"""

import gc
import heapq
import math
import re
from itertools import compress, islice, repeat
from operator import add, mul
from typing import Dict, Iterable, List, Optional

from componentize_py_types import Err
from wit_world.exports import ranking as wit
from wit_world.imports import types

# Nothing this guest keeps forms a reference cycle (flat lists of strings and ints),
# and the cyclic collector would rescan the ~10^6 objects of a lifted 100k-entry list.
gc.disable()

PROFILES = ("bm25",)  # profile none means bm25
K1 = 1.2
B = 0.75
NAME_WEIGHT = 2
MAX_TERMS = 8  # distinct query words that are looked up (each is a scan of the catalog)
MAX_POSTINGS = 150_000  # postings scored per query: rarest words first, the most
# common words of a long query are skipped once the budget is spent
SELECT = "select:"

# A bytes.translate table: ASCII punctuation, `_`, whitespace and control bytes
# become spaces (word separators); letters, digits and non-ASCII bytes are kept,
# so UTF-8 sequences stay intact.
_SEPARATORS = bytes(b if b >= 128 or chr(b).isalnum() else 32 for b in range(256))


def _texts(strings: Iterable[str]) -> Iterable[bytes]:
    """Lowercase UTF-8 of each string, separators as spaces (lazy, C-level)."""
    utf8 = map(str.encode, map(str.lower, strings), repeat("utf-8"), repeat("surrogatepass"))
    return map(bytes.translate, utf8, repeat(_SEPARATORS))


# Query words: runs of letters/digits, camelCase split (CreateIssue -> create issue).
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[^\W_]+")
_STOP_WORDS = frozenset(
    "a an and any are as at be by can do for from how i in is it me my of on or "
    "please the this that to what which with you your".split()
)


def _stem(w: str) -> str:
    """Plural folding for prefix matching: files -> file, directories -> director."""
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def query_words(query: str) -> List[str]:
    """The distinct lowercase words of a query, in order, stop words dropped unless
    nothing else is left."""
    words = list(dict.fromkeys(map(_stem, _WORD.findall(_CAMEL.sub(" ", query).lower()))))
    content = [w for w in words if w not in _STOP_WORDS and len(w) > 1]
    return content or words


def _err(kind, message: str) -> Err:
    return Err(kind(message))


class Index(wit.Index):
    def __init__(self, entries: List[types.Entry], keywords: Dict[str, str]):
        n = self.n = len(entries)
        tools = [e.tool for e in entries]
        self.names: List[str] = [e.name for e in entries]
        self.servers: List[str] = [t.server for t in tools]
        self.descriptions: List[str] = [t.description for t in tools]
        del tools
        # First occurrence wins: insert in reverse so earlier indices overwrite later.
        self.by_name: Dict[str, int] = dict(zip(reversed(self.names), range(n - 1, -1, -1)))

        texts: Iterable[str] = self.descriptions
        if keywords:
            kw = keywords.get
            texts = [f"{d} {kw(s, '')}" for d, s in zip(texts, self.servers)]
        self.name_text: List[bytes] = list(_texts(self.names))
        # A leading space, so that b" w" marks a word start everywhere.
        self.desc_text: List[bytes] = list(map(add, repeat(b" "), _texts(texts)))
        del texts
        self.lengths: List[int] = list(
            map(add, map(mul, map(len, self.name_text), repeat(NAME_WEIGHT)), map(len, self.desc_text))
        )
        self.avgdl = max(sum(self.lengths) / n, 1.0) if n else 1.0

    @classmethod
    def build(cls, entries: List[types.Entry], options: wit.IndexOptions) -> "Index":
        if options.profile is not None and options.profile not in PROFILES:
            raise _err(
                types.PluginError_InvalidInput,
                f"unknown ranking profile {options.profile!r}; this guest offers: "
                + ", ".join(PROFILES),
            )
        keywords: Dict[str, str] = {}
        for sk in options.server_keywords:
            keywords[sk.server] = (keywords.get(sk.server, "") + " " + " ".join(sk.keywords)).strip()
        return cls(entries, keywords)

    def search(self, query: str, options: wit.SearchOptions) -> List[wit.Hit]:
        limit = options.limit
        if options.mode == wit.QueryMode.REGEX:
            return self._regex(query, limit, options.server)
        stripped = query.lstrip()
        if stripped[: len(SELECT)].lower() == SELECT:
            return self._select(stripped[len(SELECT):], limit, options.server)
        if not query.strip():
            raise _err(types.PluginError_InvalidInput, "the search query is empty")
        if limit == 0:
            return []
        return self._bm25(query, limit, options.server)

    def _scope(self, server: Optional[str]) -> Iterable[int]:
        """Indices of the entries in scope, in catalog order."""
        if server is None:
            return range(self.n)
        return compress(range(self.n), map(server.__eq__, self.servers))

    def _select(self, rest: str, limit: int, server: Optional[str]) -> List[wit.Hit]:
        hits: List[wit.Hit] = []
        seen = set()
        for name in rest.split(","):
            if len(hits) >= limit:
                break
            i = self.by_name.get(name.strip())
            if i is None or i in seen or (server is not None and self.servers[i] != server):
                continue
            seen.add(i)
            hits.append(wit.Hit(index=i, score=1.0))
        return hits

    def _regex(self, query: str, limit: int, server: Optional[str]) -> List[wit.Hit]:
        try:
            pattern = re.compile(query, re.IGNORECASE)
        except (re.error, ValueError, OverflowError, RecursionError) as e:
            raise _err(types.PluginError_InvalidPattern, str(e))
        if limit == 0:
            return []
        # Name matches (score 1.0) first, then description-only matches (0.5),
        # each in catalog order. map/compress keep the scan out of Python bytecode.
        scope = list(self._scope(server))
        names = map(self.names.__getitem__, scope)
        by_name = list(islice(compress(scope, map(pattern.search, names)), limit))
        hits = [wit.Hit(index=i, score=1.0) for i in by_name]
        if len(hits) < limit:
            taken = set(by_name)
            rest = [i for i in scope if i not in taken] if taken else scope
            descs = map(self.descriptions.__getitem__, rest)
            for i in islice(compress(rest, map(pattern.search, descs)), limit - len(hits)):
                hits.append(wit.Hit(index=i, score=0.5))
        return hits

    def _bm25(self, query: str, limit: int, server: Optional[str]) -> List[wit.Hit]:
        n = self.n
        if n == 0:
            return []
        # Postings of each query word: (df, word, docs, term frequencies).
        found = []
        for word in query_words(query)[:MAX_TERMS]:
            w = word.encode("utf-8", "surrogatepass")
            in_name = map(bytes.count, self.name_text, repeat(w))
            in_desc = map(bytes.count, self.desc_text, repeat(b" " + w))
            tfs = list(map(add, map(mul, in_name, repeat(NAME_WEIGHT)), in_desc))
            docs = list(compress(range(n), tfs))
            if docs:
                found.append((len(docs), w, docs, tfs))
        found.sort(key=lambda f: (f[0], f[1]))  # rarest first
        scores: Dict[int, float] = {}
        budget = MAX_POSTINGS
        lengths, avgdl = self.lengths, self.avgdl
        for df, _, docs, tfs in found:
            if budget <= 0:
                break
            budget -= df
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            get = scores.get
            for i in docs:
                tf = tfs[i]
                norm = K1 * (1.0 - B + B * lengths[i] / avgdl)
                scores[i] = get(i, 0.0) + idf * tf * (K1 + 1.0) / (tf + norm)
        if server is not None:
            servers = self.servers
            scores = {i: s for i, s in scores.items() if servers[i] == server}
        # Best first; equal scores keep catalog order.
        best = heapq.nsmallest(limit, scores.items(), key=lambda kv: (-kv[1], kv[0]))
        return [wit.Hit(index=i, score=s) for i, s in best]
