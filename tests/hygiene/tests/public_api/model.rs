//! A crate's module tree read from its source: `mod` declarations followed to their files
//! (`name.rs`, `name/mod.rs`, `#[path]`), `#[cfg]` evaluated with every feature on and `test`,
//! `doctest` and `docsrs` off, the feature gates kept beside each module and item.

use std::collections::BTreeMap;

use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, Item, Lit, Meta, Token};

use super::tokens::text;

/// Reads a file of the crate by its path (`/`-separated, as the loader builds it).
pub(crate) type Read<'a> = &'a dyn Fn(&str) -> Option<String>;

/// One module: a file or an inline `mod name { .. }`.
pub(crate) struct Module {
    /// Its parent, `None` for the root.
    pub(crate) parent: Option<usize>,
    /// The names from the root down to it (empty for the root).
    pub(crate) path: Vec<String>,
    /// The file its items are in.
    pub(crate) file: String,
    /// `#[doc(hidden)]`.
    pub(crate) hidden: bool,
    /// The `#[cfg]` predicates on its declaration (true with every feature on).
    pub(crate) gates: Vec<String>,
    /// Its items, those whose `#[cfg]` is false removed.
    pub(crate) items: Vec<Item>,
    /// Its child modules, by index.
    pub(crate) children: BTreeMap<String, usize>,
}

/// A crate's modules; index 0 is the root.
pub(crate) struct Crate {
    /// The crate's name, as paths spell it (`elicit_runtime`).
    pub(crate) name: String,
    /// Every module, the root first.
    pub(crate) modules: Vec<Module>,
}

impl Crate {
    /// Loads the crate whose root file is `root` (for example `src/lib.rs`).
    pub(crate) fn load(name: &str, root: &str, read: Read<'_>) -> Result<Crate, String> {
        let mut krate = Crate { name: name.to_owned(), modules: Vec::new() };
        let text = read(root).ok_or_else(|| format!("{root}: not found"))?;
        let file = syn::parse_file(&text).map_err(|e| format!("{root}: {e}"))?;
        let dir = parent_dir(root);
        krate.modules.push(Module {
            parent: None,
            path: Vec::new(),
            file: root.to_owned(),
            hidden: false,
            gates: Vec::new(),
            items: Vec::new(),
            children: BTreeMap::new(),
        });
        krate.fill(0, file.items, &dir, &dir, read)?;
        Ok(krate)
    }

    /// The module at `path` below the root.
    pub(crate) fn module(&self, path: &[&str]) -> Option<usize> {
        path.iter().try_fold(0, |m, name| self.modules[m].children.get(*name).copied())
    }

    /// Keeps the items of module `m` whose cfg holds and loads its child modules. `dir` is where
    /// its children's files are; `path_dir` is what a `#[path]` on a child is relative to.
    fn fill(&mut self, m: usize, items: Vec<Item>, dir: &str, path_dir: &str, read: Read<'_>) -> Result<(), String> {
        let mut kept = Vec::new();
        for item in items {
            let Some(gates) = cfg_gates(attrs(&item)) else { continue };
            if let Item::Mod(module) = &item {
                let name = module.ident.to_string();
                let child = self.modules.len();
                let mut path = self.modules[m].path.clone();
                path.push(name.clone());
                self.modules.push(Module {
                    parent: Some(m),
                    path,
                    file: self.modules[m].file.clone(),
                    hidden: is_hidden(&module.attrs),
                    gates,
                    items: Vec::new(),
                    children: BTreeMap::new(),
                });
                self.modules[m].children.insert(name.clone(), child);
                let child_dir = join(dir, &name);
                match &module.content {
                    Some((_, inner)) => self.fill(child, inner.clone(), &child_dir, &child_dir, read)?,
                    None => {
                        let candidates = match path_attr(&module.attrs) {
                            Some(path) => vec![join(path_dir, &path)],
                            None => vec![format!("{child_dir}.rs"), format!("{child_dir}/mod.rs")],
                        };
                        let (file, text) = candidates
                            .iter()
                            .find_map(|file| read(file).map(|text| (file.clone(), text)))
                            .ok_or_else(|| format!("module `{name}`: none of {candidates:?} exists"))?;
                        let parsed = syn::parse_file(&text).map_err(|e| format!("{file}: {e}"))?;
                        self.modules[child].file = file.clone();
                        // A file named by `#[path]` owns its directory, as `mod.rs` does.
                        let own_dir = if file.ends_with("/mod.rs") || path_attr(&module.attrs).is_some() {
                            parent_dir(&file)
                        } else {
                            child_dir.clone()
                        };
                        let file_dir = parent_dir(&file);
                        self.fill(child, parsed.items, &own_dir, &file_dir, read)?;
                    }
                }
            }
            kept.push(item);
        }
        self.modules[m].items = kept;
        Ok(())
    }
}

fn parent_dir(file: &str) -> String {
    file.rsplit_once('/').map_or_else(String::new, |(dir, _)| dir.to_owned())
}

/// `dir/relative`, with `.` and `..` resolved.
fn join(dir: &str, relative: &str) -> String {
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}

/// The attributes of an item (empty for the kinds that have none).
pub(crate) fn attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// `#[doc(hidden)]` among `attrs`.
pub(crate) fn is_hidden(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("doc")
            && matches!(&attr.meta, Meta::List(list) if list.tokens.to_string().trim() == "hidden")
    })
}

/// The attribute `#[name]` (or `#[name(..)]`) is among `attrs`.
pub(crate) fn has_attr(attrs: &[Attribute], name: &str) -> bool {
    attrs.iter().any(|attr| attr.path().is_ident(name))
}

fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            Expr::Lit(lit) => match &lit.lit {
                Lit::Str(s) => Some(s.value()),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    })
}

/// The `#[cfg]` predicates of `attrs` when all of them hold with every feature on, `None` when
/// one does not (the item is not compiled in that build).
pub(crate) fn cfg_gates(attrs: &[Attribute]) -> Option<Vec<String>> {
    let mut gates = Vec::new();
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("cfg")) {
        let Ok(predicate) = attr.parse_args::<Meta>() else { continue };
        if !holds(&predicate) {
            return None;
        }
        gates.push(text(&predicate));
    }
    Some(gates)
}

/// A cfg predicate with every feature on, on Linux, outside tests and docs builds.
fn holds(predicate: &Meta) -> bool {
    match predicate {
        Meta::Path(path) => !["test", "doctest", "docsrs", "miri", "windows"].iter().any(|off| path.is_ident(off)),
        Meta::NameValue(nv) => {
            let value = match &nv.value {
                Expr::Lit(lit) => match &lit.lit {
                    Lit::Str(s) => s.value(),
                    _ => String::new(),
                },
                _ => String::new(),
            };
            if nv.path.is_ident("feature") {
                true
            } else if nv.path.is_ident("target_os") || nv.path.is_ident("target_family") {
                value == "linux" || value == "unix"
            } else {
                true
            }
        }
        Meta::List(list) => {
            let Ok(inner) = list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated) else {
                return true;
            };
            if list.path.is_ident("all") {
                inner.iter().all(holds)
            } else if list.path.is_ident("any") {
                inner.iter().any(holds)
            } else if list.path.is_ident("not") {
                !inner.iter().all(holds)
            } else {
                true
            }
        }
    }
}
