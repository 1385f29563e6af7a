//! ARCHITECTURE.md's "must never depend on" rules, checked over the source: every `crate::`
//! path a module's files name (outside its tests), and every `super::` path resolved to the
//! `crate::` path it stands for, against the modules it may not reach. A rule changed in
//! ARCHITECTURE.md must change here too; a dependency added against a rule fails with the file
//! and line.

use std::path::{Path, PathBuf};

/// (the module's files, what they must never name, what is allowed despite that and why)
struct Rule {
    files: &'static [&'static str],
    never: &'static [&'static str],
    except: &'static [&'static str],
}

/// The designs: each is one module, and none may name another or a host.
const DESIGNS: &[&str] = &["goodness", "o1", "cfs", "cfs_fair_clock", "eevdf", "bfs"];

fn rules() -> Vec<Rule> {
    vec![
        // class.rs: "Must never depend on policy (the RT class included), sched_core, the
        // registry, sim, runtime, workload or metrics."
        Rule {
            files: &["class.rs"],
            never: &[
                "policy",
                "sched_core",
                "registry",
                "sim",
                "runtime",
                "workload",
                "metrics",
            ],
            except: &[],
        },
        // ds/: "Must never depend on class, policy, sched_core, the registry, a host, workload
        // or metrics."
        Rule {
            files: &["ds"],
            never: &[
                "class",
                "policy",
                "sched_core",
                "registry",
                "sim",
                "runtime",
                "workload",
                "metrics",
            ],
            except: &[],
        },
        // sched_core/: "Must never depend on a concrete policy's class, workload or metrics."
        // The stacked RT class is the core's (the kernel's rt.c beside core.c).
        Rule {
            files: &["sched_core"],
            never: &[
                "workload",
                "metrics",
                "policy::goodness",
                "policy::o1",
                "policy::cfs",
                "policy::cfs_fair_clock",
                "policy::eevdf",
                "policy::bfs",
            ],
            except: &[],
        },
        // policy/rt.rs, the stacked RT class: a policy like the designs ("must never depend
        // on sim, runtime, sched_core, workload, metrics, the registry or another policy"),
        // which it serves through the interface, never by name.
        Rule {
            files: &["policy/rt.rs"],
            never: &[
                "sim",
                "runtime",
                "sched_core",
                "workload",
                "metrics",
                "registry",
                "policy::goodness",
                "policy::o1",
                "policy::cfs",
                "policy::cfs_fair_clock",
                "policy::eevdf",
                "policy::bfs",
            ],
            except: &[],
        },
        // policy/deadline.rs, the stacked deadline class: as policy/rt.rs.
        Rule {
            files: &["policy/deadline.rs"],
            never: &[
                "sim",
                "runtime",
                "sched_core",
                "workload",
                "metrics",
                "registry",
                "policy::goodness",
                "policy::o1",
                "policy::cfs",
                "policy::cfs_fair_clock",
                "policy::eevdf",
                "policy::bfs",
                "policy::rt",
            ],
            except: &[],
        },
        // trace/: "Must never depend on sim, runtime, sched_core or a policy."
        Rule {
            files: &["trace"],
            never: &["sim", "runtime", "sched_core", "policy"],
            except: &[],
        },
        // report/: "must not depend on sim, runtime or a policy."
        Rule {
            files: &["report"],
            never: &["sim", "runtime", "policy"],
            except: &[],
        },
        // conformance/: "Must never depend on a policy (the RT class included) or metrics".
        Rule {
            files: &["conformance"],
            never: &["policy", "metrics"],
            except: &[],
        },
        // runtime/: "Must not depend on sim, workload programs or metrics."
        Rule {
            files: &["runtime"],
            never: &["sim", "workload", "metrics"],
            except: &[],
        },
    ]
}

fn src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn files_of(p: &Path, out: &mut Vec<PathBuf>) {
    if p.is_dir() {
        // A module's tests in their own directory (`runtime/tests/`) are test code, as a
        // `tests.rs` is.
        if p.file_name().is_some_and(|n| n == "tests") {
            return;
        }
        let mut es: Vec<_> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        es.sort();
        for e in es {
            files_of(&e, out);
        }
    } else if p.extension().is_some_and(|e| e == "rs")
        && p.file_name()
            .is_some_and(|n| n != "tests.rs" && n != "testkit.rs")
    {
        out.push(p.to_path_buf());
    }
}

/// The module path of a file under `src/` (`policy/o1/mod.rs`: `["policy", "o1"]`).
fn module_of(rel: &Path) -> Vec<String> {
    let mut m: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if m.last().is_some_and(|l| l == "mod" || l == "lib") {
        m.pop();
    }
    m
}

/// `line` with each top-level `super::` path (of a file whose module path is `module`)
/// rewritten as the `crate::` path it stands for.
fn resolve_super(line: &str, module: &[String]) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find("super::") {
        let before = &rest[..at];
        let glued = before
            .chars()
            .last()
            .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
        out.push_str(before);
        if glued {
            out.push_str("super::");
            rest = &rest[at + "super::".len()..];
            continue;
        }
        let mut tail = &rest[at..];
        let mut up = 0;
        while let Some(t) = tail.strip_prefix("super::") {
            up += 1;
            tail = t;
        }
        let base = &module[..module.len().saturating_sub(up)];
        out.push_str("crate::");
        for m in base {
            out.push_str(m);
            out.push_str("::");
        }
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// The `crate::a::b` paths named on each line outside the file's test code (`super::` paths
/// resolved against the file's `module`), with their line numbers; `use crate::{a, b::c}`
/// groups are expanded one level. Test code is the item after a `#[cfg(test)]`: one line
/// (`mod tests;`, a `use`), or a braced block (`mod tests { ... }`) to its closing brace.
fn crate_paths(text: &str, module: &[String]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    // Inside a test item: the brace depth reached so far, once its block has opened.
    let mut in_test: Option<i64> = None;
    let mut test_next = false;
    for (i, line) in text.lines().enumerate() {
        let l = line.trim_start();
        if l.starts_with("#[cfg(test)]") {
            test_next = true;
            continue;
        }
        if test_next && !l.is_empty() && !l.starts_with("#[") && !l.starts_with("//") {
            test_next = false;
            let depth = l.matches('{').count() as i64 - l.matches('}').count() as i64;
            if depth > 0 {
                in_test = Some(depth);
            }
            continue;
        }
        if let Some(d) = in_test.as_mut() {
            *d += l.matches('{').count() as i64 - l.matches('}').count() as i64;
            if *d <= 0 {
                in_test = None;
            }
            continue;
        }
        if l.starts_with("//") {
            continue;
        }
        let line = resolve_super(line, module);
        let mut rest = line.as_str();
        while let Some(at) = rest.find("crate::") {
            let tail = &rest[at + "crate::".len()..];
            if let Some(group) = tail.strip_prefix('{') {
                let inner = group.split('}').next().unwrap_or("");
                for part in inner.split(',') {
                    let p = part.trim();
                    if !p.is_empty() {
                        out.push((i + 1, p.to_string()));
                    }
                }
            } else {
                let path: String = tail
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                out.push((i + 1, path.trim_end_matches(':').to_string()));
            }
            rest = tail;
        }
    }
    out
}

fn names(path: &str, module: &str) -> bool {
    path == module || path.starts_with(&format!("{module}::"))
}

#[test]
fn no_module_names_what_architecture_md_forbids_it() {
    let mut broken = Vec::new();
    let mut rules = rules();
    // policy/: "must never depend on sim, runtime, sched_core, workload, metrics or another
    // policy" (nor the registry, which lists them all, nor the stacked RT class: a design
    // reaches RT tasks only through the interface, `class::PassiveRt`).
    for d in DESIGNS {
        let others: Vec<&'static str> = DESIGNS
            .iter()
            .filter(|o| *o != d)
            .map(|o| &*Box::leak(format!("policy::{o}").into_boxed_str()))
            .collect();
        let mut never = vec![
            "sim",
            "runtime",
            "sched_core",
            "workload",
            "metrics",
            "registry",
            "policy::rt",
        ];
        never.extend(others);
        let file_a: &'static str = Box::leak(format!("policy/{d}.rs").into_boxed_str());
        let dir: &'static str = Box::leak(format!("policy/{d}").into_boxed_str());
        rules.push(Rule {
            files: Box::leak(vec![file_a, dir].into_boxed_slice()),
            never: Box::leak(never.into_boxed_slice()),
            except: &[],
        });
    }
    let mut checked = 0;
    for r in &rules {
        let mut files = Vec::new();
        for f in r.files {
            let p = src().join(f);
            if p.exists() {
                files_of(&p, &mut files);
            }
        }
        assert!(!files.is_empty(), "{:?}: no such files", r.files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            let module = module_of(f.strip_prefix(src()).unwrap());
            for (line, path) in crate_paths(&text, &module) {
                checked += 1;
                if r.except.iter().any(|e| names(&path, e)) {
                    continue;
                }
                // A design naming itself by its full path is no dependency.
                let own = f
                    .strip_prefix(src().join("policy"))
                    .ok()
                    .and_then(|rel| rel.iter().next())
                    .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string());
                if let Some(own) = &own {
                    if names(&path, &format!("policy::{own}")) {
                        continue;
                    }
                }
                if let Some(n) = r.never.iter().find(|n| names(&path, n)) {
                    broken.push(format!(
                        "{}:{line}: names crate::{path}, which it must never depend on ({n})",
                        f.strip_prefix(src()).unwrap().display()
                    ));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} paths seen: the scan is broken"
    );
    assert!(
        broken.is_empty(),
        "ARCHITECTURE.md's rules broken:\n{}",
        broken.join("\n")
    );
}
