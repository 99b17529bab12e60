//! Paths resolved the way rustc resolves them (edition 2018 and later), closely enough for a
//! crate that compiles: a path's first name is looked up in its module (items, child modules,
//! `use` bindings, then glob imports) or is `crate`, `self`, `super`, or an external crate.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use syn::{Item, UseTree, Visibility};

use super::model::{Crate, attrs, cfg_gates, has_attr, is_hidden};

/// What a path names.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Target {
    /// A module of the crate.
    Module(usize),
    /// An item of the crate (not a module, not a `use`): module and index in its items.
    Item(usize, usize),
    /// A variant of an enum of the crate.
    Variant(usize, usize, String),
    /// Something outside the crate, by the path written.
    External(String),
}

/// One name bound by a `use` item (`bind: None` for a glob).
#[derive(Clone, Debug)]
pub(crate) struct Binding {
    /// The path imported (for a glob, the module globbed).
    pub(crate) segs: Vec<String>,
    /// `use ::x`.
    pub(crate) leading_colon: bool,
    /// The name it binds, `None` for `*`.
    pub(crate) bind: Option<String>,
    /// `pub use` (exactly).
    pub(crate) public: bool,
    /// `#[doc(hidden)]` on the `use`.
    pub(crate) hidden: bool,
    /// The `use` item's `#[cfg]` predicates.
    pub(crate) gates: Vec<String>,
}

/// Every binding of a `use` tree.
pub(crate) fn bindings(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, Option<String>)>) {
    match tree {
        UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            bindings(&path.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(name) if name.ident == "self" => {
            out.push((prefix.clone(), prefix.last().cloned()));
        }
        UseTree::Name(name) => {
            let mut segs = prefix.clone();
            segs.push(name.ident.to_string());
            out.push((segs, Some(name.ident.to_string())));
        }
        UseTree::Rename(rename) => {
            let mut segs = prefix.clone();
            if rename.ident != "self" {
                segs.push(rename.ident.to_string());
            }
            let bind = rename.rename.to_string();
            out.push((segs, (bind != "_").then_some(bind)));
        }
        UseTree::Glob(_) => out.push((prefix.clone(), None)),
        UseTree::Group(group) => {
            for tree in &group.items {
                bindings(tree, prefix, out);
            }
        }
    }
}

/// The name an item (not a module, not a `use`) defines in its module's namespace.
pub(crate) fn item_name(item: &Item) -> Option<String> {
    match item {
        Item::Const(i) => Some(i.ident.to_string()),
        Item::Enum(i) => Some(i.ident.to_string()),
        Item::Fn(i) => Some(i.sig.ident.to_string()),
        Item::Static(i) => Some(i.ident.to_string()),
        Item::Struct(i) => Some(i.ident.to_string()),
        Item::Trait(i) => Some(i.ident.to_string()),
        Item::TraitAlias(i) => Some(i.ident.to_string()),
        Item::Type(i) => Some(i.ident.to_string()),
        Item::Union(i) => Some(i.ident.to_string()),
        Item::Macro(i) if has_attr(&i.attrs, "macro_export") => i.ident.as_ref().map(ToString::to_string),
        _ => None,
    }
}

/// `pub` (exactly) on an item; `#[macro_export]` counts as `pub` for a macro.
pub(crate) fn is_public(item: &Item) -> bool {
    let vis = match item {
        Item::Const(i) => &i.vis,
        Item::Enum(i) => &i.vis,
        Item::Fn(i) => &i.vis,
        Item::Static(i) => &i.vis,
        Item::Struct(i) => &i.vis,
        Item::Trait(i) => &i.vis,
        Item::TraitAlias(i) => &i.vis,
        Item::Type(i) => &i.vis,
        Item::Union(i) => &i.vis,
        Item::Use(i) => &i.vis,
        Item::Mod(i) => &i.vis,
        Item::Macro(i) => return has_attr(&i.attrs, "macro_export"),
        _ => return false,
    };
    matches!(vis, Visibility::Public(_))
}

/// A crate with its `use` bindings indexed, to resolve paths in it.
pub(crate) struct Resolver<'c> {
    /// The crate.
    pub(crate) krate: &'c Crate,
    /// The `use` bindings of each module.
    pub(crate) uses: Vec<Vec<Binding>>,
    /// Look-ups done, and those under way (a `use` loop through globs ends there, empty).
    lookups: RefCell<HashMap<(usize, String, bool), Vec<Target>>>,
    active: RefCell<HashSet<(usize, String, bool)>>,
}

const MAX_DEPTH: usize = 24;

impl<'c> Resolver<'c> {
    /// Indexes `krate`'s `use` items.
    pub(crate) fn new(krate: &'c Crate) -> Self {
        let uses = krate
            .modules
            .iter()
            .map(|module| {
                let mut out = Vec::new();
                for item in &module.items {
                    let Item::Use(item_use) = item else { continue };
                    let mut found = Vec::new();
                    bindings(&item_use.tree, &mut Vec::new(), &mut found);
                    for (segs, bind) in found {
                        out.push(Binding {
                            segs,
                            leading_colon: item_use.leading_colon.is_some(),
                            bind,
                            public: matches!(item_use.vis, Visibility::Public(_)),
                            hidden: is_hidden(&item_use.attrs),
                            gates: cfg_gates(&item_use.attrs).unwrap_or_default(),
                        });
                    }
                }
                out
            })
            .collect();
        Resolver { krate, uses, lookups: RefCell::default(), active: RefCell::default() }
    }

    /// Everything `segs` names from module `m` (several targets when a name is in several
    /// namespaces); empty when a path into the crate names nothing.
    pub(crate) fn resolve(&self, m: usize, segs: &[String], leading_colon: bool) -> Vec<Target> {
        self.resolve_at(m, segs, leading_colon, 0)
    }

    fn resolve_at(&self, m: usize, segs: &[String], leading_colon: bool, depth: usize) -> Vec<Target> {
        let Some((first, rest)) = segs.split_first() else { return vec![Target::Module(m)] };
        if depth > MAX_DEPTH {
            return Vec::new();
        }
        if leading_colon {
            return vec![Target::External(segs.join("::"))];
        }
        let mut current = match first.as_str() {
            "crate" => vec![Target::Module(0)],
            "self" => vec![Target::Module(m)],
            "super" => self.krate.modules[m].parent.map(Target::Module).into_iter().collect(),
            name => {
                let found = self.lookup(m, name, depth, true);
                if found.is_empty() {
                    return vec![Target::External(segs.join("::"))];
                }
                found
            }
        };
        for seg in rest {
            let mut next = Vec::new();
            for target in &current {
                match target {
                    Target::Module(d) if seg == "super" => {
                        next.extend(self.krate.modules[*d].parent.map(Target::Module))
                    }
                    Target::Module(d) => next.extend(self.lookup(*d, seg, depth, false)),
                    Target::Item(mi, ii) => {
                        if let Item::Enum(e) = &self.krate.modules[*mi].items[*ii]
                            && e.variants.iter().any(|v| v.ident == seg)
                        {
                            next.push(Target::Variant(*mi, *ii, seg.clone()));
                        }
                    }
                    Target::External(path) => next.push(Target::External(format!("{path}::{seg}"))),
                    Target::Variant(..) => {}
                }
            }
            current = next;
        }
        current.sort();
        current.dedup();
        current
    }

    /// What `name` is in module `m`: its items and child modules, its `use` bindings, else its
    /// glob imports. `first`: the name starts a path (an extern crate's own name imported with
    /// `use name;` is then that crate, not the binding).
    fn lookup(&self, m: usize, name: &str, depth: usize, first: bool) -> Vec<Target> {
        let key = (m, name.to_owned(), first);
        if let Some(found) = self.lookups.borrow().get(&key) {
            return found.clone();
        }
        if !self.active.borrow_mut().insert(key.clone()) {
            return Vec::new();
        }
        let found = self.lookup_uncached(m, name, depth, first);
        self.active.borrow_mut().remove(&key);
        self.lookups.borrow_mut().insert(key, found.clone());
        found
    }

    fn lookup_uncached(&self, m: usize, name: &str, depth: usize, first: bool) -> Vec<Target> {
        let module = &self.krate.modules[m];
        let mut found = Vec::new();
        if let Some(&child) = module.children.get(name) {
            found.push(Target::Module(child));
        }
        for (i, item) in module.items.iter().enumerate() {
            if item_name(item).as_deref() == Some(name) {
                found.push(Target::Item(m, i));
            }
        }
        if m == 0 {
            found.extend(self.exported_macros().filter(|(_, _, n)| n == name).map(|(mi, ii, _)| Target::Item(mi, ii)));
        }
        for binding in &self.uses[m] {
            if binding.bind.as_deref() == Some(name) && !(first && binding.segs.len() == 1 && binding.segs[0] == name) {
                found.extend(self.resolve_at(m, &binding.segs, binding.leading_colon, depth + 1));
            }
        }
        if found.is_empty() {
            for binding in self.uses[m].iter().filter(|b| b.bind.is_none()) {
                for target in self.resolve_at(m, &binding.segs, binding.leading_colon, depth + 1) {
                    match target {
                        Target::Module(d) if d != m => found.extend(self.lookup(d, name, depth + 1, false)),
                        Target::Item(mi, ii) => {
                            if let Item::Enum(e) = &self.krate.modules[mi].items[ii]
                                && e.variants.iter().any(|v| v.ident == name)
                            {
                                found.push(Target::Variant(mi, ii, name.to_owned()));
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        found.sort();
        found.dedup();
        found
    }

    /// `#[macro_export]` macros, wherever defined: they live at the crate's root.
    fn exported_macros(&self) -> impl Iterator<Item = (usize, usize, String)> + '_ {
        self.krate.modules.iter().enumerate().flat_map(|(mi, module)| {
            module.items.iter().enumerate().filter_map(move |(ii, item)| match item {
                Item::Macro(mac) if has_attr(&mac.attrs, "macro_export") => {
                    mac.ident.as_ref().map(|ident| (mi, ii, ident.to_string()))
                }
                _ => None,
            })
        })
    }

    /// The public names of module `m` (items, child modules, `pub use` bindings and what its
    /// public globs bring), for a glob re-export of it.
    pub(crate) fn public_names(&self, m: usize, depth: usize) -> Vec<String> {
        let module = &self.krate.modules[m];
        let mut names: Vec<String> = Vec::new();
        for item in &module.items {
            if let Item::Mod(child) = item
                && is_public(item)
            {
                names.push(child.ident.to_string());
            } else if is_public(item)
                && let Some(name) = item_name(item)
            {
                names.push(name);
            }
        }
        for binding in self.uses[m].iter().filter(|b| b.public) {
            match &binding.bind {
                Some(name) => names.push(name.clone()),
                None if depth < MAX_DEPTH => {
                    for target in self.resolve(m, &binding.segs, binding.leading_colon) {
                        if let Target::Module(d) = target {
                            names.extend(self.public_names(d, depth + 1));
                        }
                    }
                }
                None => {}
            }
        }
        names.sort();
        names.dedup();
        names
    }

    /// The `#[cfg]` predicates from the root down to `target`'s definition, its own included.
    pub(crate) fn defining_gates(&self, target: &Target) -> Vec<String> {
        let (mut m, mut gates) = match target {
            Target::Module(m) => (Some(*m), Vec::new()),
            Target::Item(mi, ii) | Target::Variant(mi, ii, _) => {
                let mut gates = cfg_gates(attrs(&self.krate.modules[*mi].items[*ii])).unwrap_or_default();
                if let (Target::Variant(_, _, name), Item::Enum(e)) = (target, &self.krate.modules[*mi].items[*ii])
                    && let Some(variant) = e.variants.iter().find(|v| v.ident == name)
                {
                    gates.extend(cfg_gates(&variant.attrs).unwrap_or_default());
                }
                (Some(*mi), gates)
            }
            Target::External(_) => (None, Vec::new()),
        };
        while let Some(i) = m {
            gates.extend(self.krate.modules[i].gates.iter().cloned());
            m = self.krate.modules[i].parent;
        }
        gates
    }

    /// Where `target` is defined, as a path from the crate's name.
    pub(crate) fn defining_path(&self, target: &Target) -> Vec<String> {
        let mut path = vec![self.krate.name.clone()];
        match target {
            Target::Module(m) => path.extend(self.krate.modules[*m].path.iter().cloned()),
            Target::Item(mi, ii) => {
                let item = &self.krate.modules[*mi].items[*ii];
                if !matches!(item, Item::Macro(_)) {
                    path.extend(self.krate.modules[*mi].path.iter().cloned());
                }
                path.extend(item_name(item));
            }
            Target::Variant(mi, ii, name) => {
                path.extend(self.krate.modules[*mi].path.iter().cloned());
                path.extend(item_name(&self.krate.modules[*mi].items[*ii]));
                path.push(name.clone());
            }
            Target::External(p) => path = p.split("::").map(str::to_owned).collect(),
        }
        path
    }
}
