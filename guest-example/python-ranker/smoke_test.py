"""Native smoke test of ranking.py (plain CPython, no wasm).

Needs the generated bindings:  componentize-py -d ../../wit/since_v0.1.0 -w ranker bindings bindings
Run:                           python3 smoke_test.py
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bindings"))

from componentize_py_types import Err  # noqa: E402
from wit_world.exports.ranking import IndexOptions, QueryMode, SearchOptions  # noqa: E402
from wit_world.imports import types  # noqa: E402

import ranking  # noqa: E402

VERBS = "create list get update delete search read write run send".split()
NOUNS = "issue file page message branch user ticket image table event".split()


def catalog(n):
    """Like the host's conformance catalog: n tools over 20 servers."""
    out = []
    for i in range(n):
        v, o, s = VERBS[i % 10], NOUNS[(i // 10) % 10], f"server-{i % 20:02}"
        tool = types.Tool(server=s, name=f"{v}_{o}_{i}", title=None,
                          description=f"{v} a {o} (tool number {i})", input_schema="{}",
                          annotations=None, kind=types.ToolKind.TOOL, resource_uri=None)
        out.append(types.Entry(name=f"{s.replace('-', '_')}__{tool.name}", tool=tool))
    return out


def opts(limit=5, mode=QueryMode.KEYWORD, server=None):
    return SearchOptions(limit=limit, mode=mode, server=server)


def error(f):
    try:
        f()
    except Err as e:
        return type(e.value).__name__
    return None


NONE = IndexOptions(server_keywords=[], profile=None)
cat = catalog(1000)
idx = ranking.Index.build(cat, NONE)
for q in ["create issue", "list files in a directory", "CreateIssue", "search_tickets", "sned mesage"]:
    for limit in (1, 5, 50):
        hits = idx.search(q, opts(limit))
        scores = [h.score for h in hits]
        assert len(hits) <= limit and len({h.index for h in hits}) == len(hits)
        assert scores == sorted(scores, reverse=True), q
assert cat[idx.search("CreateIssue", opts())[0].index].tool.name.startswith("create_issue")
assert idx.search("create", opts(0)) == []
assert idx.search("update user", opts(20)) == idx.search("update user", opts(20))
assert all(cat[h.index].tool.server == "server-04"
           for h in idx.search("delete", opts(50, server="server-04")))
sel = idx.search(f"select:{cat[7].name},{cat[42].name}", opts(2))
assert [h.index for h in sel] == [7, 42]
assert len(idx.search(r"^server_0[01]__create", opts(10, QueryMode.REGEX))) == 10
assert error(lambda: idx.search("([unclosed", opts(10, QueryMode.REGEX))) == "PluginError_InvalidPattern"
assert error(lambda: idx.search("  ", opts())) == "PluginError_InvalidInput"
for q in ["search " * 1430, "a\0b", "\u202eﬁ𝔘 🔧", "select:", "select:,,,"]:
    idx.search(q, opts())
assert ranking.Index.build([], NONE).search("anything", opts()) == []
assert error(lambda: ranking.Index.build(cat, IndexOptions(server_keywords=[], profile="x"))) \
    == "PluginError_InvalidInput"

big = catalog(100_000)
t0 = time.perf_counter()
bidx = ranking.Index.build(big, NONE)
t1 = time.perf_counter()
hits = bidx.search("delete ticket", opts())
t2 = time.perf_counter()
assert all(big[h.index].tool.name.startswith("delete_ticket") for h in hits)
print(f"ok (native 100k: build {t1 - t0:.3f} s, query {t2 - t1:.3f} s)")
