//! Import cycles between the modules below one module of a crate.
//!
//! The nodes are the direct children of the base module (a file or a directory below it, e.g.
//! `store`, `task`, `flow` below `server/`); the base module itself is not a node (it re-exports
//! its children). Module `a` depends on `b` when code anywhere in `a`'s subtree names something
//! defined in `b`'s subtree: in a `use` (private ones and those inside functions included), or in a
//! path written in code that starts with `crate`, `self` or `super`. A path is resolved through
//! re-exports (`super::Store`, re-exported by the base from `store`, is a dependency on `store`);
//! a path through the base to an item defined in the base itself is no dependency.
//! `#[cfg(test)]` code is not read (a test module may reach across), nor paths inside macro
//! invocations (`matches!(x, super::Y)`), which syn keeps as tokens.

use std::collections::{BTreeMap, BTreeSet};

use syn::visit::Visit;

use super::model::Crate;
use super::resolve::{Resolver, Target, bindings};

/// One reason `from` depends on `to`.
#[derive(Clone, Debug)]
pub(crate) struct Edge {
    /// The module that names.
    pub(crate) from: String,
    /// The module named.
    pub(crate) to: String,
    /// Where, and the path as written: `server/store/mod.rs: super::task::TaskRecord`.
    pub(crate) evidence: String,
}

struct Paths {
    found: Vec<(Vec<String>, bool)>,
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut out = Vec::new();
        bindings(&item.tree, &mut Vec::new(), &mut out);
        for (segs, _) in out {
            self.found.push((segs, item.leading_colon.is_some()));
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segs.len() > 1 && ["crate", "self", "super"].contains(&segs[0].as_str()) {
            self.found.push((segs, path.leading_colon.is_some()));
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {
        // An inline module is a module of its own, read on its own.
    }
}

/// The dependencies between the children of module `base` (a path below the root; empty for the
/// root itself).
pub(crate) fn edges(krate: &Crate, base: &[&str]) -> Vec<Edge> {
    let resolver = Resolver::new(krate);
    let Some(base) = krate.module(base) else { return Vec::new() };
    let depth = krate.modules[base].path.len();
    let node = |m: usize| -> Option<String> {
        let path = &krate.modules[m].path;
        (path.len() > depth && krate.modules[m].path[..depth] == krate.modules[base].path[..])
            .then(|| path[depth].clone())
    };
    let mut out = Vec::new();
    for (m, module) in krate.modules.iter().enumerate() {
        let Some(from) = node(m) else { continue };
        let mut paths = Paths { found: Vec::new() };
        for item in &module.items {
            paths.visit_item(item);
        }
        for (segs, leading_colon) in paths.found {
            // The longest prefix that names something: `super::Flow::new` names `Flow`.
            let targets = (1..=segs.len())
                .rev()
                .map(|n| resolver.resolve(m, &segs[..n], leading_colon))
                .find(|targets| targets.iter().any(|t| !matches!(t, Target::External(_))))
                .unwrap_or_default();
            for target in targets {
                let defined_in = match target {
                    Target::Module(d) => Some(d),
                    Target::Item(d, _) | Target::Variant(d, _, _) => Some(d),
                    Target::External(_) => None,
                };
                let Some(to) = defined_in.and_then(node) else { continue };
                if to != from {
                    let evidence = format!("{}: {}", module.file, segs.join("::"));
                    out.push(Edge { from: from.clone(), to, evidence });
                }
            }
        }
    }
    out
}

/// The cycles among `edges`: each strongly connected set of more than one module, as one readable
/// paragraph naming a loop through it and the code behind each step.
pub(crate) fn cycles(edges: &[Edge]) -> Vec<String> {
    let mut graph: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for edge in edges {
        graph.entry(&edge.from).or_default().insert(&edge.to);
        graph.entry(&edge.to).or_default();
    }
    let mut reports = Vec::new();
    let mut done: BTreeSet<&str> = BTreeSet::new();
    for &start in graph.keys() {
        if done.contains(start) {
            continue;
        }
        let reach_from_start = reachable(&graph, start);
        let component: BTreeSet<&str> =
            reach_from_start.iter().copied().filter(|n| reachable(&graph, n).contains(start)).collect();
        done.extend(component.iter().copied());
        if component.len() < 2 {
            continue;
        }
        // A shortest loop from `start` back to it, inside the component.
        let ring = shortest_loop(&graph, start, &component);
        let mut text = format!(
            "cycle between {}: {}",
            component.iter().copied().collect::<Vec<_>>().join(", "),
            ring.join(" -> ")
        );
        for step in ring.windows(2) {
            text.push_str(&format!("\n    {} -> {}: {}", step[0], step[1], evidence(edges, step[0], step[1])));
        }
        // In a larger tangle one loop is not the whole story: every dependency inside it.
        if component.len() > 2 {
            text.push_str("\n  every dependency inside it:");
            for from in &component {
                for to in graph[from].iter().filter(|to| component.contains(*to)) {
                    text.push_str(&format!("\n    {from} -> {to}: {}", evidence(edges, from, to)));
                }
            }
        }
        reports.push(text);
    }
    reports
}

/// The code behind `from -> to`: up to three places, and how many more.
fn evidence(edges: &[Edge], from: &str, to: &str) -> String {
    let all: BTreeSet<&str> =
        edges.iter().filter(|e| e.from == from && e.to == to).map(|e| e.evidence.as_str()).collect();
    let mut shown: Vec<&str> = all.iter().copied().take(3).collect();
    let more = format!("and {} more", all.len().saturating_sub(3));
    if all.len() > 3 {
        shown.push(&more);
    }
    shown.join("; ")
}

fn reachable<'g>(graph: &BTreeMap<&'g str, BTreeSet<&'g str>>, start: &'g str) -> BTreeSet<&'g str> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![start];
    while let Some(node) = stack.pop() {
        for &next in graph.get(node).into_iter().flatten() {
            if seen.insert(next) {
                stack.push(next);
            }
        }
    }
    seen
}

fn shortest_loop<'g>(
    graph: &BTreeMap<&'g str, BTreeSet<&'g str>>,
    start: &'g str,
    within: &BTreeSet<&'g str>,
) -> Vec<&'g str> {
    let mut previous: BTreeMap<&str, &str> = BTreeMap::new();
    let mut frontier = vec![start];
    while !frontier.is_empty() {
        let mut next_frontier = Vec::new();
        for node in frontier {
            for &next in graph.get(node).into_iter().flatten().filter(|n| within.contains(*n)) {
                if next == start {
                    let mut ring = vec![start, node];
                    let mut at = node;
                    while at != start {
                        at = previous[at];
                        ring.push(at);
                    }
                    ring.reverse();
                    ring.dedup();
                    return ring;
                }
                if !previous.contains_key(next) {
                    previous.insert(next, node);
                    next_frontier.push(next);
                }
            }
        }
        frontier = next_frontier;
    }
    vec![start]
}
