//! Field paths that are written out only when an error needs one.
//!
//! Validating a valid object visits every field but reports none, so building each field's
//! path text up front (`spec.ports[2].targetPort`) is work thrown away. A [`FieldPath`] is a
//! chain of borrowed steps on the stack, free to make; [`FieldPath::path`] renders it to a
//! [`Path`], with the same text `Path::child` / `index` / `key` would give, when an error is
//! pushed.

use std::fmt::Write;

use crate::field::Path;

/// A field path not yet written out: a root, or one step below a parent path.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FieldPath<'a> {
    /// A root such as `spec` or `metadata` (empty for "no prefix").
    Root(&'a str),
    /// A path already built (from callers that hold a [`Path`]).
    Built(&'a Path),
    /// Field `name` under the parent (`spec` → `spec.ports`).
    Child(&'a FieldPath<'a>, &'a str),
    /// Element `i` of the parent list (`spec.ports` → `spec.ports[0]`).
    Index(&'a FieldPath<'a>, usize),
    /// Entry `key` of the parent map, unquoted (`metadata.annotations[k]`).
    Key(&'a FieldPath<'a>, &'a str),
}

impl<'a> FieldPath<'a> {
    /// The path of field `name` under this one.
    pub(crate) fn child(&'a self, name: &'a str) -> FieldPath<'a> {
        FieldPath::Child(self, name)
    }

    /// The path of element `i` of this list.
    pub(crate) fn index(&'a self, i: usize) -> FieldPath<'a> {
        FieldPath::Index(self, i)
    }

    /// The path of entry `key` of this map.
    pub(crate) fn key(&'a self, key: &'a str) -> FieldPath<'a> {
        FieldPath::Key(self, key)
    }

    /// The path as text, as [`Path`] would build it step by step.
    pub(crate) fn path(&self) -> Path {
        let mut out = String::new();
        self.write(&mut out);
        Path::new(&out)
    }

    fn write(&self, out: &mut String) {
        match self {
            FieldPath::Root(root) => out.push_str(root),
            FieldPath::Built(p) => out.push_str(p.as_str()),
            FieldPath::Child(parent, name) => {
                parent.write(out);
                // `Path::child` of an empty path is the name alone.
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(name);
            }
            FieldPath::Index(parent, i) => {
                parent.write(out);
                let _ = write!(out, "[{i}]");
            }
            FieldPath::Key(parent, key) => {
                parent.write(out);
                out.push('[');
                out.push_str(key);
                out.push(']');
            }
        }
    }
}

impl<'a> From<&'a Path> for FieldPath<'a> {
    fn from(p: &'a Path) -> Self {
        FieldPath::Built(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_as_path_does() {
        let spec = FieldPath::Root("spec");
        let ports = spec.child("ports");
        let port = ports.index(3);
        let tp = port.child("targetPort");
        assert_eq!(
            tp.path(),
            Path::new("spec").child("ports").index(3).child("targetPort")
        );
        let meta = Path::new("metadata");
        let built = FieldPath::from(&meta);
        let ann = built.child("annotations");
        assert_eq!(ann.key("a/b").path(), meta.child("annotations").key("a/b"));
        let empty = FieldPath::Root("");
        assert_eq!(empty.child("x").path(), Path::new("").child("x"));
        assert_eq!(empty.child("x").path().as_str(), "x");
        let e = Path::new("");
        assert_eq!(FieldPath::from(&e).index(1).path(), e.index(1));
    }
}
