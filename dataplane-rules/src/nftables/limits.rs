//! Kernel and nft limits, checked before anything is emitted: a rule set the kernel
//! would refuse as a whole is never produced; the error names the Service instead.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use super::error::NftError;
use super::names::COMMENT_LENGTH_MAX;
use super::object::Object;
use super::transaction::{Operation, Transaction};
use serde::{Deserialize, Serialize};

/// The limits checked before emitting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Longest chain, set, map or counter name in bytes (the kernel's
    /// `NFT_NAME_MAXLEN` is 256 with the terminating NUL: 255).
    pub max_name: usize,
    /// Longest comment in bytes (nft's `NFTNL_UDATA_COMMENT_MAXLEN`, knftables'
    /// `CommentLengthMax`: 128).
    pub max_comment: usize,
    /// Most elements in one named set or map, and most entries in one anonymous
    /// `numgen` map (one per endpoint of a service port). Default 65,535.
    pub max_elements: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_name: 255,
            max_comment: COMMENT_LENGTH_MAX,
            max_elements: 65_535,
        }
    }
}

fn name_char_ok(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/')
}

/// [`name_char_ok`] of every byte (a byte of a multi-byte character is never ok).
const NAME_BYTE_OK: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'/');
        b += 1;
    }
    t
};

/// Whether every character of `s` may stand in an unquoted nft identifier.
fn name_ok(s: &str) -> bool {
    s.bytes().all(|b| NAME_BYTE_OK[usize::from(b)])
}

impl Limits {
    /// Checks names a Service's port would create: length, and only characters an
    /// unquoted nft identifier may hold.
    pub(crate) fn check_names(&self, service: &str, names: &[&str]) -> Result<(), NftError> {
        for n in names {
            self.check_name(&|| service.to_owned(), "", n)?;
        }
        Ok(())
    }

    /// Checks the names `prefix` + `base` for each prefix, in order, as
    /// [`Limits::check_names`] checks them, without building them (unless one fails).
    /// The prefixes must hold only characters a name may hold.
    pub(crate) fn check_prefixed(
        &self,
        service: &dyn Fn() -> String,
        prefixes: &[&str],
        base: &str,
    ) -> Result<(), NftError> {
        let chars_ok = name_ok(base);
        for p in prefixes {
            if p.len() + base.len() > self.max_name || !chars_ok {
                self.check_name(service, p, base)?;
            }
        }
        Ok(())
    }

    fn check_name(&self, service: &dyn Fn() -> String, prefix: &str, base: &str) -> Result<(), NftError> {
        let len = prefix.len() + base.len();
        let name = || format!("{prefix}{base}");
        if len > self.max_name {
            return Err(NftError::Limit {
                service: service(),
                what: "object name".into(),
                value: name(),
                len,
                max: self.max_name,
            });
        }
        if !name_ok(base)
            && let Some(c) = prefix.chars().chain(base.chars()).find(|c| !name_char_ok(*c))
        {
            return Err(NftError::Limit {
                service: service(),
                what: format!("object name with the character {c:?}"),
                value: name(),
                len,
                max: self.max_name,
            });
        }
        Ok(())
    }

    /// Checks the size of an anonymous map written for a Service.
    pub(crate) fn check_anonymous(&self, service: &dyn Fn() -> String, n: usize) -> Result<(), NftError> {
        if n > self.max_elements {
            return Err(NftError::Limit {
                service: service(),
                what: "entries of a numgen map".into(),
                value: String::new(),
                len: n,
                max: self.max_elements,
            });
        }
        Ok(())
    }

    /// Checks every comment of a transaction (length, and no `"`, which nft's quoted
    /// strings cannot hold) and every object name's length.
    pub fn check_transaction(&self, tx: &Transaction) -> Result<(), NftError> {
        self.check_operations(&tx.operations)
    }

    /// [`Limits::check_transaction`] of some of a transaction's operations, in order (a
    /// large transaction is checked in pieces as it is written, while they are in cache).
    pub(crate) fn check_operations(&self, operations: &[Operation]) -> Result<(), NftError> {
        for op in operations {
            let (name, comment, service) = match &op.object {
                Object::Table(t) => (None, t.comment.as_deref(), None),
                Object::Chain(c) => (Some(c.name.as_str()), c.comment.as_deref(), None),
                Object::Rule(r) => (None, r.comment.as_deref(), None),
                Object::Set(s) | Object::Map(s) => (Some(s.name.as_str()), s.comment.as_deref(), None),
                Object::Element(e) => (None, e.comment.as_deref(), e.comment.as_deref()),
                Object::Counter(c) => (Some(c.name.as_str()), c.comment.as_deref(), None),
            };
            if let Some(n) = name
                && n.len() > self.max_name
            {
                return Err(NftError::Limit {
                    service: service.unwrap_or("-").into(),
                    what: format!("{} name", op.object.kind()),
                    value: n.into(),
                    len: n.len(),
                    max: self.max_name,
                });
            }
            if let Some(c) = comment
                && (c.len() > self.max_comment || c.contains('"') || c.contains('\n'))
            {
                return Err(NftError::Limit {
                    service: service.unwrap_or("-").into(),
                    what: format!(
                        "{} comment (at most {} bytes, no quote or newline)",
                        op.object.kind(),
                        self.max_comment
                    ),
                    value: c.into(),
                    len: c.len(),
                    max: self.max_comment,
                });
            }
        }
        Ok(())
    }
}
