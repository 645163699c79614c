//! The ranking role's checks: queries against one index of 1,000 synthetic
//! tools, then indexes of catalogs that are empty, hostile or large.

use super::{Suite, answer_or_error_value, entries, err, hostile_catalog, synthetic_catalog};
use crate::catalog::{Entry, Tool, ToolKind};
use crate::plugin::roles::{IndexOptions, QueryMode, RankIndex, Ranker, SearchOptions};
use crate::plugin::{GuestError, GuestModule, PluginError, Role};
use std::sync::Arc;

const ROLE: Role = Role::Ranking;

/// Every ranking check, in order. The query checks share one index, so a
/// guest that cannot build it gets no further checks.
pub(super) fn checks(suite: &mut Suite, module: &Arc<GuestModule>) {
    let ranker = match Ranker::new(module.clone()) {
        Ok(r) => r,
        Err(e) => return suite.run(ROLE, "loads", || Err(err(e))),
    };
    let catalog = entries(&synthetic_catalog(1000));
    let mut built = None;
    suite.run(ROLE, "builds an index of 1,000 tools", || {
        built = Some(
            ranker
                .index(catalog.clone(), IndexOptions::default())
                .map_err(err)?,
        );
        Ok(())
    });
    let Some(index) = built else { return };
    plain_queries(suite, &index);
    narrowed_queries(suite, &index, &catalog);
    odd_queries(suite, &index);
    other_catalogs(suite, &ranker);
    if ranker.sees_skills() {
        skills(suite, &ranker);
    }
}

/// Since contract 0.2.0 the catalog holds skills after the tools: a skill is
/// found by its name and description, like a tool (a 0.1.x guest is given
/// none, and is not asked).
fn skills(suite: &mut Suite, ranker: &Arc<Ranker>) {
    suite.run(
        ROLE,
        "skills beside tools: a skill is found by its description",
        || {
            let uri = "skill://docs/release-notes/SKILL.md";
            let skill = Tool::skill(
                "docs",
                "release-notes",
                "Write release notes from merged pull requests",
                uri,
            );
            let mut catalog: Vec<Entry> = entries(&synthetic_catalog(200)).to_vec();
            catalog.push(Entry {
                name: "docs/release-notes".into(),
                tool: skill.into(),
            });
            let catalog: Arc<[Entry]> = catalog.into();
            let index = ranker
                .index(catalog.clone(), IndexOptions::default())
                .map_err(err)?;
            let hits = index
                .search(
                    "write release notes",
                    &SearchOptions {
                        limit: 5,
                        ..Default::default()
                    },
                )
                .map_err(err)?;
            match hits
                .iter()
                .any(|h| catalog[h.index].tool.kind == ToolKind::Skill)
            {
                true => Ok(()),
                false => {
                    Err("the skill is not among the first 5 hits of its own description".into())
                }
            }
        },
    );
}

/// Keyword queries: the hits must respect the limit and come back the same
/// way twice.
fn plain_queries(suite: &mut Suite, index: &RankIndex) {
    let queries = [
        "create issue",
        "list files in a directory",
        "CreateIssue",
        "search_tickets",
        "sned mesage",
    ];
    for limit in [1u32, 5, 50] {
        suite.run(ROLE, &format!("keyword queries with limit {limit}: hits in range, unique, best first, within the limit"), || {
            for q in queries {
                index.search(q, &SearchOptions { limit, ..Default::default() }).map_err(err)?;
            }
            Ok(())
        });
    }
    suite.run(ROLE, "limit 0 answers nothing", || {
        match index.search(
            "create",
            &SearchOptions {
                limit: 0,
                ..Default::default()
            },
        ) {
            Ok(h) if h.is_empty() => Ok(()),
            Ok(h) => Err(format!("{} hits for limit 0", h.len())),
            Err(e) => answer_or_error_value::<()>(Err(e)),
        }
    });
    suite.run(ROLE, "the same answer twice", || {
        let o = SearchOptions {
            limit: 20,
            ..Default::default()
        };
        let (a, b) = (
            index.search("update user", &o).map_err(err)?,
            index.search("update user", &o).map_err(err)?,
        );
        if a == b {
            Ok(())
        } else {
            Err("two identical queries gave different hits".into())
        }
    });
}

/// Queries that name what they want: a server filter and `select:`; the
/// answer must hold exactly that.
fn narrowed_queries(suite: &mut Suite, index: &RankIndex, catalog: &[Entry]) {
    suite.run(
        ROLE,
        "a server filter only returns that server's tools",
        || {
            let hits = index
                .search(
                    "create",
                    &SearchOptions {
                        limit: 50,
                        server: Some("server-03".into()),
                        ..Default::default()
                    },
                )
                .map_err(err)?;
            match hits
                .iter()
                .find(|h| catalog[h.index].tool.server != "server-03")
            {
                Some(h) => Err(format!(
                    "asked for server-03 only, got {} (server {})",
                    catalog[h.index].name, catalog[h.index].tool.server
                )),
                None => Ok(()),
            }
        },
    );
    suite.run(ROLE, "select:name answers exactly the named tools", || {
        let (a, b) = (&catalog[7].name, &catalog[42].name);
        let hits = index
            .search(
                &format!("select:{a},{b}"),
                &SearchOptions {
                    limit: 2,
                    ..Default::default()
                },
            )
            .map_err(err)?;
        let got: Vec<&str> = hits
            .iter()
            .map(|h| catalog[h.index].name.as_str())
            .collect();
        if got == [a.as_str(), b.as_str()] {
            Ok(())
        } else {
            Err(format!("got {got:?}"))
        }
    });
}

/// Regular expressions and hostile query text: a bad query may be refused
/// with an error value, never with a trap or a broken answer.
fn odd_queries(suite: &mut Suite, index: &RankIndex) {
    let regex = |q: &str| {
        index.search(
            q,
            &SearchOptions {
                limit: 10,
                mode: QueryMode::Regex,
                server: None,
            },
        )
    };
    suite.run(
        ROLE,
        "regex mode: a valid pattern answers, an invalid one is an error value",
        || {
            regex("^server_0[12]__create").map_err(err)?;
            match regex("([unclosed") {
                Err(PluginError::Guest {
                    error: GuestError::InvalidPattern(_) | GuestError::InvalidInput(_),
                    ..
                }) => Ok(()),
                Ok(_) => Err("an invalid pattern was accepted".into()),
                Err(e) => Err(err(e)),
            }
        },
    );
    suite.run(
        ROLE,
        "hostile queries: empty, 10,000 characters, NUL bytes, odd Unicode",
        || {
            let long = "search ".repeat(1_430);
            for q in [
                "",
                "   ",
                long.as_str(),
                "a\0b",
                "\u{202e}ﬁ𝔘 🔧",
                "select:",
                "select:,,,",
            ] {
                answer_or_error_value(index.search(q, &SearchOptions::default()))?;
            }
            Ok(())
        },
    );
}

/// Indexes of their own for an empty, a hostile and a 100,000-tool catalog:
/// building must cope with each, the last within the deadline.
fn other_catalogs(suite: &mut Suite, ranker: &Arc<Ranker>) {
    suite.run(ROLE, "an empty catalog", || {
        let empty = ranker
            .index(Arc::from(Vec::new()), IndexOptions::default())
            .map_err(err)?;
        match empty.search("anything", &SearchOptions::default()) {
            Ok(h) if h.is_empty() => Ok(()),
            Ok(h) => Err(format!("{} hits in an empty catalog", h.len())),
            Err(e) => answer_or_error_value::<()>(Err(e)),
        }
    });
    suite.run(
        ROLE,
        "hostile tools (NUL, 1 MiB description, Unicode, odd escapes)",
        || {
            let hostile = ranker
                .index(entries(&hostile_catalog()), IndexOptions::default())
                .map_err(err)?;
            answer_or_error_value(hostile.search("big description", &SearchOptions::default()))
        },
    );
    suite.run(
        ROLE,
        "100,000 tools: build and query within the deadline",
        || {
            let big = ranker
                .index(
                    entries(&synthetic_catalog(100_000)),
                    IndexOptions::default(),
                )
                .map_err(err)?;
            big.search("delete ticket", &SearchOptions::default())
                .map(|_| ())
                .map_err(err)
        },
    );
}
