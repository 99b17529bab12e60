//! The public API of a crate, one line per item, from its source.
//!
//! What is listed, and how:
//! - every item reachable from the crate's root by a public path (`pub mod`, `pub` items,
//!   `pub use`), once, at its *canonical* path: where it is defined when that path is public, else
//!   the shortest public path (then the first in sorted order); every other public path to it is
//!   a line `use <path> = <canonical path>`, so moving an item between private modules changes
//!   nothing and a new re-export shows;
//! - a re-export of something outside the crate: `use <path> = <path written> (external)`;
//! - public fields of public structs, every variant of public enums (with its fields), the items of
//!   public traits (` { .. }` / ` = ..` when provided), public methods and associated constants of
//!   inherent impls of public types, and trait impls (`derive`d ones included) of public types,
//!   or of public traits of the crate for any type: `impl <trait as written, last segment> for <type>`
//!   (impls of private traits are left out: a sealed trait is not API);
//! - `#[doc(hidden)]` items are not API: each is one line `hidden <path>` and nothing below it is
//!   listed, so adding one still shows in the diff;
//! - `#[cfg]` is read with every feature on (and `test`, `doctest`, `docsrs` off); an item's
//!   feature gates, its modules' included, follow it as ` [features: a, b]` (other predicates as
//!   ` [cfg: ..]`);
//! - what the source cannot show is not listed: items made by macros, auto traits.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};

use syn::{Fields, FnArg, ImplItem, Item, Pat, Signature, TraitItem, Type, Visibility};

use super::model::{Crate, attrs, cfg_gates, has_attr, is_hidden};
use super::resolve::{Binding, Resolver, Target, is_public, item_name};
use super::tokens::text;

/// One line of the listing.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Entry {
    /// The path the line is sorted by (the item's, or for an impl its type's).
    pub(crate) path: String,
    /// The line.
    pub(crate) line: String,
    /// `mod`, `struct`, `fn`, `field`, `variant`, `use`, `impl`, `hidden`...
    pub(crate) kind: &'static str,
    /// The public name this line introduces (`None` for an impl).
    pub(crate) name: Option<String>,
}

/// A public path to something, as the walk from the root found it.
struct Found {
    target: Target,
    path: Vec<String>,
    gates: BTreeSet<String>,
    hidden: bool,
}

const MAX_PATH: usize = 16;

/// The listing of `krate`, sorted by path.
pub(crate) fn list(krate: &Crate) -> Vec<Entry> {
    let resolver = Resolver::new(krate);
    let found = walk(&resolver);
    let mut out = Vec::new();

    // Every public path of each target; the canonical one first.
    let mut paths: BTreeMap<Target, Vec<&Found>> = BTreeMap::new();
    for f in &found {
        paths.entry(f.target.clone()).or_default().push(f);
    }
    let mut canonical: BTreeMap<Target, (Vec<String>, BTreeSet<String>)> = BTreeMap::new();
    for (target, fs) in &paths {
        let shown: Vec<&&Found> = fs.iter().filter(|f| !f.hidden).collect();
        if shown.is_empty() || matches!(target, Target::External(_)) {
            continue;
        }
        let defining = resolver.defining_path(target);
        let best = shown
            .iter()
            .find(|f| f.path == defining)
            .or_else(|| shown.iter().min_by_key(|f| (f.path.len(), f.path.join("::"))))
            .map(|f| (f.path.clone(), f.gates.clone()));
        canonical.extend(best.map(|best| (target.clone(), best)));
    }
    // Paths below a module reached by a non-canonical path repeat what its canonical path lists.
    let aliased_modules: HashSet<Vec<String>> = found
        .iter()
        .filter(|f| matches!(f.target, Target::Module(_)))
        .filter(|f| canonical.get(&f.target).is_none_or(|(path, _)| *path != f.path))
        .map(|f| f.path.clone())
        .collect();
    let under_alias = |path: &[String]| (1..path.len()).any(|n| aliased_modules.contains(&path[..n]));

    for f in &found {
        if under_alias(&f.path) {
            continue;
        }
        let path = f.path.join("::");
        let name = f.path.last().cloned();
        if f.hidden {
            out.push(Entry { line: format!("hidden {path}"), path, kind: "hidden", name });
            continue;
        }
        if let Target::External(written) = &f.target {
            let line = format!("use {path} = {written} (external){}", gates(&f.gates));
            out.push(Entry { path, line, kind: "use", name });
            continue;
        }
        if let Some((canon, _)) = canonical.get(&f.target)
            && *canon != f.path
        {
            let line = format!("use {path} = {}{}", canon.join("::"), gates(&f.gates));
            out.push(Entry { path, line, kind: "use", name });
        }
    }

    for (target, (path, gate)) in &canonical {
        items(&resolver, target, &path.join("::"), gate, &mut out);
    }
    impls(&resolver, &canonical, &mut out);

    out.sort_by(|a, b| (&a.path, &a.line).cmp(&(&b.path, &b.line)));
    out.dedup_by(|a, b| a.line == b.line);
    out
}

/// Walks from the root through public modules and `pub use`, recording every public path.
fn walk(resolver: &Resolver<'_>) -> Vec<Found> {
    let krate = resolver.krate;
    let mut found = Vec::new();
    let mut queue = VecDeque::from([(0usize, vec![krate.name.clone()], BTreeSet::new())]);
    let mut seen = HashSet::new();
    while let Some((m, path, gates)) = queue.pop_front() {
        if !seen.insert((m, path.clone())) || path.len() > MAX_PATH {
            continue;
        }
        let module = &krate.modules[m];
        for (i, item) in module.items.iter().enumerate() {
            if !is_public(item) {
                continue;
            }
            let own: BTreeSet<String> =
                gates.iter().cloned().chain(cfg_gates(attrs(item)).unwrap_or_default()).collect();
            match item {
                Item::Mod(child) => {
                    let name = child.ident.to_string();
                    let Some(&c) = module.children.get(&name) else { continue };
                    let hidden = krate.modules[c].hidden;
                    let at = with(&path, &name);
                    if !hidden {
                        queue.push_back((c, at.clone(), own.clone()));
                    }
                    found.push(Found { target: Target::Module(c), path: at, gates: own, hidden });
                }
                Item::Use(_) => {}
                Item::Macro(_) if m != 0 => {}
                _ => {
                    let Some(name) = item_name(item) else { continue };
                    let hidden = is_hidden(attrs(item));
                    found.push(Found { target: Target::Item(m, i), path: with(&path, &name), gates: own, hidden });
                }
            }
        }
        if m == 0 {
            exported_macros_elsewhere(resolver, &path, &mut found);
        }
        for binding in resolver.uses[m].iter().filter(|b| b.public) {
            reexport(resolver, m, &path, &gates, binding, &mut found, &mut queue);
        }
    }
    found
}

fn exported_macros_elsewhere(resolver: &Resolver<'_>, root: &[String], found: &mut Vec<Found>) {
    for (mi, module) in resolver.krate.modules.iter().enumerate().skip(1) {
        for (ii, item) in module.items.iter().enumerate() {
            if let Item::Macro(mac) = item
                && has_attr(&mac.attrs, "macro_export")
                && let Some(name) = &mac.ident
            {
                let target = Target::Item(mi, ii);
                let gates = resolver.defining_gates(&target).into_iter().collect();
                found.push(Found { target, path: with(root, &name.to_string()), gates, hidden: is_hidden(&mac.attrs) });
            }
        }
    }
}

type Queue = VecDeque<(usize, Vec<String>, BTreeSet<String>)>;

fn reexport(
    resolver: &Resolver<'_>,
    m: usize,
    path: &[String],
    gates: &BTreeSet<String>,
    binding: &Binding,
    found: &mut Vec<Found>,
    queue: &mut Queue,
) {
    let targets = resolver.resolve(m, &binding.segs, binding.leading_colon);
    let Some(name) = &binding.bind else {
        // A glob: each public name of what it names, as if re-exported by name.
        for target in targets {
            let names = match &target {
                Target::Module(d) => resolver.public_names(*d, 0),
                Target::Item(mi, ii) => match &resolver.krate.modules[*mi].items[*ii] {
                    Item::Enum(e) => e.variants.iter().map(|v| v.ident.to_string()).collect(),
                    _ => Vec::new(),
                },
                Target::External(written) => {
                    let at = with(path, "*");
                    let own = gates.iter().chain(&binding.gates).cloned().collect();
                    found.push(Found {
                        target: Target::External(format!("{written}::*")),
                        path: at,
                        gates: own,
                        hidden: binding.hidden,
                    });
                    Vec::new()
                }
                Target::Variant(..) => Vec::new(),
            };
            for name in names {
                let one = Binding { segs: with(&binding.segs, &name), bind: Some(name), ..binding.clone() };
                reexport(resolver, m, path, gates, &one, found, queue);
            }
        }
        return;
    };
    let at = with(path, name);
    if targets.is_empty() {
        let written = format!("{} (unresolved)", binding.segs.join("::"));
        found.push(Found { target: Target::External(written), path: at, gates: gates.clone(), hidden: binding.hidden });
        return;
    }
    for target in targets {
        let own: BTreeSet<String> =
            gates.iter().chain(&binding.gates).cloned().chain(resolver.defining_gates(&target)).collect();
        let hidden = binding.hidden || defined_hidden(resolver, &target);
        if let Target::Module(c) = target
            && !hidden
        {
            queue.push_back((c, at.clone(), own.clone()));
        }
        found.push(Found { target, path: at.clone(), gates: own, hidden });
    }
}

fn defined_hidden(resolver: &Resolver<'_>, target: &Target) -> bool {
    match target {
        Target::Module(m) => resolver.krate.modules[*m].hidden,
        Target::Item(mi, ii) => is_hidden(attrs(&resolver.krate.modules[*mi].items[*ii])),
        Target::Variant(..) | Target::External(_) => false,
    }
}

fn with(path: &[String], name: &str) -> Vec<String> {
    let mut out = path.to_vec();
    out.push(name.to_owned());
    out
}

/// ` [features: a, b] [cfg: other]`, or nothing.
fn gates<'a>(predicates: impl IntoIterator<Item = &'a String>) -> String {
    let mut features = BTreeSet::new();
    let mut others = BTreeSet::new();
    for predicate in predicates {
        match predicate.strip_prefix("feature = \"").and_then(|rest| rest.strip_suffix('"')) {
            Some(feature) if !feature.contains('"') => features.insert(feature.to_owned()),
            _ => others.insert(predicate.clone()),
        };
    }
    let mut out = String::new();
    if !features.is_empty() {
        out.push_str(&format!(" [features: {}]", features.into_iter().collect::<Vec<_>>().join(", ")));
    }
    if !others.is_empty() {
        out.push_str(&format!(" [cfg: {}]", others.into_iter().collect::<Vec<_>>().join(", ")));
    }
    out
}

fn plus(base: &BTreeSet<String>, more: &[syn::Attribute]) -> BTreeSet<String> {
    base.iter().cloned().chain(cfg_gates(more).unwrap_or_default()).collect()
}

/// The lines of one item at its canonical `path`: the item and its fields, variants or trait items.
fn items(resolver: &Resolver<'_>, target: &Target, path: &str, gate: &BTreeSet<String>, out: &mut Vec<Entry>) {
    let name = path.rsplit("::").next().map(str::to_owned);
    let mut push = |kind: &'static str, path: String, line: String, name: Option<String>| {
        out.push(Entry { path, line, kind, name });
    };
    let item = match target {
        Target::Module(_) => return push("mod", path.to_owned(), format!("mod {path}{}", gates(gate)), name),
        Target::Variant(..) | Target::External(_) => return,
        Target::Item(mi, ii) => &resolver.krate.modules[*mi].items[*ii],
    };
    let non_exhaustive = if has_attr(attrs(item), "non_exhaustive") { "#[non_exhaustive] " } else { "" };
    match item {
        Item::Struct(s) => {
            let private = s.fields.iter().any(|f| !matches!(f.vis, Visibility::Public(_)));
            let shape = match (&s.fields, private) {
                (Fields::Named(_), true) => " { /* private fields */ }",
                (Fields::Unnamed(_), true) => "(/* private fields */)",
                (Fields::Named(_), false) => " { .. }",
                (Fields::Unnamed(_), false) => "(..)",
                (Fields::Unit, _) => ";",
            };
            let line = format!("{non_exhaustive}struct {path}{}{shape}{}", generics(&s.generics), gates(gate));
            push("struct", path.to_owned(), line, name);
            fields(&s.fields, path, gate, &mut push);
        }
        Item::Union(u) => {
            push("union", path.to_owned(), format!("union {path}{}{}", generics(&u.generics), gates(gate)), name);
            fields(&Fields::Named(u.fields.clone()), path, gate, &mut push);
        }
        Item::Enum(e) => {
            let line = format!("{non_exhaustive}enum {path}{}{}", generics(&e.generics), gates(gate));
            push("enum", path.to_owned(), line, name);
            for variant in &e.variants {
                let Some(own) = cfg_gates(&variant.attrs) else { continue };
                let at = format!("{path}::{}", variant.ident);
                let name = Some(variant.ident.to_string());
                if is_hidden(&variant.attrs) {
                    push("hidden", at.clone(), format!("hidden {at}"), name);
                    continue;
                }
                let mut bare = variant.clone();
                bare.attrs.clear();
                strip_field_attrs(&mut bare.fields);
                let marker = if has_attr(&variant.attrs, "non_exhaustive") { "#[non_exhaustive] " } else { "" };
                let all: BTreeSet<String> = gate.iter().cloned().chain(own).collect();
                let line = format!("{marker}variant {path}::{}{}", text(&bare), gates(&all));
                push("variant", at, line, name);
            }
        }
        Item::Trait(t) => {
            let supertraits =
                if t.supertraits.is_empty() { String::new() } else { format!(": {}", text(&t.supertraits)) };
            let unsafety = if t.unsafety.is_some() { "unsafe " } else { "" };
            let line = format!("{unsafety}trait {path}{}{supertraits}{}", generics(&t.generics), gates(gate));
            push("trait", path.to_owned(), line, name);
            for member in &t.items {
                let (member_attrs, ident, line) = match member {
                    TraitItem::Fn(f) => {
                        let provided = if f.default.is_some() { " { .. }" } else { "" };
                        (
                            &f.attrs,
                            &f.sig.ident,
                            format!("{}{provided}", signature(&f.sig, &format!("{path}::{}", f.sig.ident))),
                        )
                    }
                    TraitItem::Const(c) => {
                        let provided = if c.default.is_some() { " = .." } else { "" };
                        (&c.attrs, &c.ident, format!("const {path}::{}: {}{provided}", c.ident, text(&c.ty)))
                    }
                    TraitItem::Type(ty) => {
                        let bounds =
                            if ty.bounds.is_empty() { String::new() } else { format!(": {}", text(&ty.bounds)) };
                        let provided = if ty.default.is_some() { " = .." } else { "" };
                        let line = format!("type {path}::{}{}{bounds}{provided}", ty.ident, generics(&ty.generics));
                        (&ty.attrs, &ty.ident, line)
                    }
                    _ => continue,
                };
                member_line(path, gate, member_attrs, ident, line, &mut push);
            }
        }
        Item::Fn(f) => {
            push("fn", path.to_owned(), format!("{}{}", signature(&f.sig, path), gates(gate)), name);
        }
        Item::Const(c) => push("const", path.to_owned(), format!("const {path}: {}{}", text(&c.ty), gates(gate)), name),
        Item::Static(s) => {
            let mutable = if matches!(s.mutability, syn::StaticMutability::Mut(_)) { "mut " } else { "" };
            push("static", path.to_owned(), format!("static {mutable}{path}: {}{}", text(&s.ty), gates(gate)), name);
        }
        Item::Type(t) => {
            let line = format!("type {path}{} = {}{}", generics(&t.generics), text(&t.ty), gates(gate));
            push("type", path.to_owned(), line, name);
        }
        Item::TraitAlias(_) => push("trait", path.to_owned(), format!("trait {path} = ..{}", gates(gate)), name),
        Item::Macro(_) => push("macro", path.to_owned(), format!("macro {path}!{}", gates(gate)), name),
        _ => {}
    }
}

type Push<'a> = dyn FnMut(&'static str, String, String, Option<String>) + 'a;

/// A member's line (`hidden <path>` when it is hidden), with its own gates added.
fn member_line(
    path: &str,
    gate: &BTreeSet<String>,
    member_attrs: &[syn::Attribute],
    ident: &syn::Ident,
    line: String,
    push: &mut Push<'_>,
) {
    let Some(own) = cfg_gates(member_attrs) else { return };
    let at = format!("{path}::{ident}");
    let name = Some(ident.to_string());
    if is_hidden(member_attrs) {
        return push("hidden", at.clone(), format!("hidden {at}"), name);
    }
    let all: BTreeSet<String> = gate.iter().cloned().chain(own).collect();
    let kind = line.split_whitespace().find(|w| ["fn", "const", "type"].contains(w)).unwrap_or("fn");
    let kind = match kind {
        "const" => "const",
        "type" => "type",
        _ => "fn",
    };
    push(kind, at, format!("{line}{}", gates(&all)), name);
}

fn fields(fields: &Fields, path: &str, gate: &BTreeSet<String>, push: &mut Push<'_>) {
    for (i, field) in fields.iter().enumerate() {
        if !matches!(field.vis, Visibility::Public(_)) {
            continue;
        }
        let Some(own) = cfg_gates(&field.attrs) else { continue };
        let name = field.ident.as_ref().map_or_else(|| i.to_string(), ToString::to_string);
        let at = format!("{path}::{name}");
        if is_hidden(&field.attrs) {
            push("hidden", at.clone(), format!("hidden {at}"), Some(name));
            continue;
        }
        let all: BTreeSet<String> = gate.iter().cloned().chain(own).collect();
        push("field", at.clone(), format!("field {at}: {}{}", text(&field.ty), gates(&all)), Some(name));
    }
}

fn strip_field_attrs(fields: &mut Fields) {
    for field in fields.iter_mut() {
        field.attrs.clear();
    }
}

/// `<T: Bound> where ..` of a declaration, or nothing.
fn generics(generics: &syn::Generics) -> String {
    let mut out = String::new();
    if !generics.params.is_empty() {
        out = format!("<{}>", text(&generics.params));
    }
    if let Some(clause) = &generics.where_clause {
        out.push(' ');
        out.push_str(&where_clause(clause));
    }
    out
}

/// `async fn path<T>(&self, name: Type) -> Output where ..`: parameter patterns other than a
/// plain name print as `_` (they are not API), and attributes are left out.
fn signature(sig: &Signature, path: &str) -> String {
    let mut qualifiers = String::new();
    for (present, word) in [
        (sig.constness.is_some(), "const "),
        (sig.asyncness.is_some(), "async "),
        (matches!(sig.safety, syn::Safety::Unsafe(_)), "unsafe "),
    ] {
        if present {
            qualifiers.push_str(word);
        }
    }
    if let Some(abi) = &sig.abi {
        qualifiers.push_str(&text(abi));
        qualifiers.push(' ');
    }
    let inputs: Vec<String> = sig
        .inputs
        .iter()
        .map(|input| match input {
            FnArg::Receiver(receiver) => {
                let mut receiver = receiver.clone();
                receiver.attrs.clear();
                text(&receiver)
            }
            FnArg::Typed(typed) => {
                let name = match &*typed.pat {
                    Pat::Ident(ident) => ident.ident.to_string(),
                    _ => "_".to_owned(),
                };
                format!("{name}: {}", text(&typed.ty))
            }
        })
        .collect();
    let params =
        if sig.generics.params.is_empty() { String::new() } else { format!("<{}>", text(&sig.generics.params)) };
    let output = match &sig.output {
        syn::ReturnType::Default => String::new(),
        output => format!(" {}", text(output)),
    };
    let clause = sig.generics.where_clause.as_ref().map(|c| format!(" {}", where_clause(c))).unwrap_or_default();
    format!("{qualifiers}fn {path}{params}({}){output}{clause}", inputs.join(", "))
}

/// `where A: B, C: D`, without the trailing comma rustfmt leaves on a clause of several lines.
fn where_clause(clause: &syn::WhereClause) -> String {
    text(clause).trim_end_matches(',').to_owned()
}

/// The last segment of a trait's path, with its generic arguments.
fn trait_name(path: &syn::Path) -> String {
    path.segments.last().map(text).unwrap_or_default()
}

fn type_segments(ty: &Type) -> Option<(Vec<String>, bool)> {
    match ty {
        Type::Path(tp) if tp.qself.is_none() => {
            Some((tp.path.segments.iter().map(|s| s.ident.to_string()).collect(), tp.path.leading_colon.is_some()))
        }
        Type::Group(group) => type_segments(&group.elem),
        Type::Paren(paren) => type_segments(&paren.elem),
        _ => None,
    }
}

/// Inherent methods and trait impls of public types, derived ones included; impls of the crate's
/// public traits for any type.
fn impls(resolver: &Resolver<'_>, canonical: &BTreeMap<Target, (Vec<String>, BTreeSet<String>)>, out: &mut Vec<Entry>) {
    let public_path = |target: &Target| canonical.get(target).map(|(path, gate)| (path.join("::"), gate.clone()));
    let mut push = |kind: &'static str, path: String, line: String, name: Option<String>| {
        out.push(Entry { path, line, kind, name });
    };
    // Derives.
    for (target, (path, gate)) in canonical {
        let Target::Item(mi, ii) = target else { continue };
        let item = &resolver.krate.modules[*mi].items[*ii];
        if !matches!(item, Item::Struct(_) | Item::Enum(_) | Item::Union(_)) {
            continue;
        }
        let path = path.join("::");
        for attr in attrs(item).iter().filter(|a| a.path().is_ident("derive")) {
            let Ok(derived) =
                attr.parse_args_with(syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated)
            else {
                continue;
            };
            for trait_path in derived {
                let line = format!("impl {} for {path}{}", trait_name(&trait_path), gates(gate));
                push("impl", path.clone(), line, None);
            }
        }
    }
    for (m, module) in resolver.krate.modules.iter().enumerate() {
        for item in &module.items {
            let Item::Impl(imp) = item else { continue };
            let impl_gates = cfg_gates(&imp.attrs).unwrap_or_default();
            let generic_names: HashSet<String> = imp
                .generics
                .params
                .iter()
                .filter_map(|p| match p {
                    syn::GenericParam::Type(t) => Some(t.ident.to_string()),
                    _ => None,
                })
                .collect();
            let self_target = type_segments(&imp.self_ty)
                .filter(|(segs, _)| segs.len() > 1 || !generic_names.contains(&segs[0]))
                .and_then(|(segs, lc)| {
                    resolver.resolve(m, &segs, lc).into_iter().find(|t| !matches!(t, Target::External(_)))
                });
            let self_public = self_target.as_ref().and_then(&public_path);
            let Some((trait_path, _)) = &imp.trait_ else {
                let Some((path, gate)) = self_public else { continue };
                let gate = plus(&gate, &imp.attrs);
                for member in &imp.items {
                    let (member_attrs, vis, ident, line) = match member {
                        ImplItem::Fn(f) => {
                            (&f.attrs, &f.vis, &f.sig.ident, signature(&f.sig, &format!("{path}::{}", f.sig.ident)))
                        }
                        ImplItem::Const(c) => {
                            (&c.attrs, &c.vis, &c.ident, format!("const {path}::{}: {}", c.ident, text(&c.ty)))
                        }
                        _ => continue,
                    };
                    if matches!(vis, Visibility::Public(_)) {
                        member_line(&path, &gate, member_attrs, ident, line, &mut push);
                    }
                }
                continue;
            };
            let trait_segs: Vec<String> = trait_path.segments.iter().map(|s| s.ident.to_string()).collect();
            let trait_target = resolver
                .resolve(m, &trait_segs, trait_path.leading_colon.is_some())
                .into_iter()
                .find(|t| !matches!(t, Target::External(_)));
            let (trait_shown, trait_public) = match &trait_target {
                Some(t) => match public_path(t) {
                    Some((path, _)) => (path, true),
                    None => continue,
                },
                None => (trait_name(trait_path), false),
            };
            let unsafety = if imp.unsafety.is_some() { "unsafe " } else { "" };
            match (self_public, self_target.is_some()) {
                (Some((path, gate)), _) => {
                    let all: BTreeSet<String> = gate.into_iter().chain(impl_gates).collect();
                    let line = format!("{unsafety}impl {trait_shown} for {path}{}", gates(&all));
                    push("impl", path, line, None);
                }
                // A private type of the crate: not API.
                (None, true) => {}
                (None, false) if trait_public => {
                    let gate = public_path(trait_target.as_ref().unwrap_or(&Target::Module(0))).map(|(_, g)| g);
                    let all: BTreeSet<String> = gate.unwrap_or_default().into_iter().chain(impl_gates).collect();
                    let generics = if imp.generics.params.is_empty() {
                        String::new()
                    } else {
                        format!("<{}>", text(&imp.generics.params))
                    };
                    let line =
                        format!("{unsafety}impl{generics} {trait_shown} for {}{}", text(&imp.self_ty), gates(&all));
                    push("impl", trait_shown.clone(), line, None);
                }
                (None, false) => {}
            }
        }
    }
}
