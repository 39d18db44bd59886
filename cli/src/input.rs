//! Reading Kubernetes objects from files or standard input: JSON or YAML, one object, a `v1`
//! `List`, or several YAML documents.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); a `List` is read as `kubectl` reads `v1`
//! `List`s.

use std::io::Read;

use serde::de::DeserializeOwned;
use serde_json::Value;
use svcnet_model::{Object, ObjectSet};

use crate::error::CliError;

/// One decoded object with where it came from, for messages.
#[derive(Debug, Clone)]
pub struct Located {
    /// The object.
    pub object: Object,
    /// `document 1`, `document 2, item 3`, ...
    pub origin: String,
}

/// Reads the bytes of `path` (`-` is standard input).
pub fn read_bytes(path: &str) -> Result<Vec<u8>, CliError> {
    let mut buf = Vec::new();
    let res = if path == "-" {
        std::io::stdin().lock().read_to_end(&mut buf).map(|_| ())
    } else {
        std::fs::File::open(path)
            .and_then(|mut f| f.read_to_end(&mut buf))
            .map(|_| ())
    };
    res.map_err(|source| CliError::Read {
        path: display_path(path),
        source,
    })?;
    Ok(buf)
}

fn display_path(path: &str) -> String {
    if path == "-" {
        "<stdin>".to_owned()
    } else {
        path.to_owned()
    }
}

/// Parses the documents of a file: JSON (one value) or YAML (one or more documents).
/// Empty YAML documents are skipped.
pub fn read_documents(path: &str) -> Result<Vec<Value>, CliError> {
    let bytes = read_bytes(path)?;
    parse_documents(path, &bytes)
}

/// Parses bytes as [`read_documents`] does; `path` only names the source in errors.
pub fn parse_documents(path: &str, bytes: &[u8]) -> Result<Vec<Value>, CliError> {
    let perr = |detail: String| CliError::Parse {
        path: display_path(path),
        detail,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| {
        perr(format!(
            "input is not UTF-8 text (invalid byte at offset {})",
            e.valid_up_to()
        ))
    })?;
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let v: Value = serde_json::from_str(trimmed.trim_end()).map_err(|e| {
            perr(format!(
                "document 1: invalid JSON at line {}, column {}: {e}",
                e.line(),
                e.column()
            ))
        })?;
        return Ok(match v {
            Value::Array(items) => items,
            v => vec![v],
        });
    }
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| {
        let loc = e
            .location()
            .map(|l| format!(" at line {}, column {}", l.line(), l.column()))
            .unwrap_or_default();
        let msg = e.to_string();
        let first = msg.lines().next().unwrap_or("invalid YAML");
        perr(format!("invalid YAML{loc}: {first}"))
    })?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// Expands `List` documents into their items, pairing each value with its origin.
pub fn flatten(docs: Vec<Value>) -> Vec<(Value, String)> {
    let mut out = Vec::new();
    for (d, doc) in docs.into_iter().enumerate() {
        let is_list = doc
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k == "List" || k.ends_with("List"))
            && doc.get("items").is_some();
        if is_list {
            if let Some(Value::Array(items)) = doc.get("items").cloned() {
                for (i, item) in items.into_iter().enumerate() {
                    out.push((item, format!("document {}, item {}", d + 1, i + 1)));
                }
            }
        } else {
            out.push((doc, format!("document {}", d + 1)));
        }
    }
    out
}

fn decode<T: DeserializeOwned>(path: &str, origin: &str, kind: &str, v: Value) -> Result<T, CliError> {
    let name = describe(&v);
    serde_json::from_value(v).map_err(|e| CliError::Parse {
        path: display_path(path),
        detail: format!("{origin} ({kind}{name}): {e}"),
    })
}

fn describe(v: &Value) -> String {
    let meta = v.get("metadata");
    let name = meta.and_then(|m| m.get("name")).and_then(Value::as_str);
    let ns = meta.and_then(|m| m.get("namespace")).and_then(Value::as_str);
    match (ns, name) {
        (Some(ns), Some(n)) => format!(" {ns}/{n}"),
        (None, Some(n)) => format!(" {n}"),
        _ => String::new(),
    }
}

/// Decodes one value by its `kind`. `Ok(None)` for a kind svcnet does not read (a warning is
/// printed on standard error).
pub fn decode_object(path: &str, origin: &str, v: Value) -> Result<Option<Object>, CliError> {
    let Some(kind) = v.get("kind").and_then(Value::as_str).map(str::to_owned) else {
        if !v.is_object() {
            return Err(CliError::Parse {
                path: display_path(path),
                detail: format!(
                    "{origin}: expected a Kubernetes object (a mapping), found {}",
                    type_name(&v)
                ),
            });
        }
        eprintln!(
            "svcnet: warning: {}: {origin}: object without a kind, ignored",
            display_path(path)
        );
        return Ok(None);
    };
    let o = match kind.as_str() {
        "Service" => Object::Service(Box::new(decode(path, origin, &kind, v)?)),
        "EndpointSlice" => Object::EndpointSlice(Box::new(decode(path, origin, &kind, v)?)),
        "Endpoints" => Object::Endpoints(Box::new(decode(path, origin, &kind, v)?)),
        "ServiceCIDR" => Object::ServiceCidr(Box::new(decode(path, origin, &kind, v)?)),
        "IPAddress" => Object::IpAddress(Box::new(decode(path, origin, &kind, v)?)),
        "Pod" => Object::Pod(Box::new(decode(path, origin, &kind, v)?)),
        "Node" => Object::Node(Box::new(decode(path, origin, &kind, v)?)),
        "NetworkPolicy" => Object::NetworkPolicy(Box::new(decode(path, origin, &kind, v)?)),
        other => {
            eprintln!(
                "svcnet: warning: {}: {origin}: kind {other:?} is not one svcnet reads, ignored",
                display_path(path)
            );
            return Ok(None);
        }
    };
    Ok(Some(o))
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// Reads every object of a file, in input order.
pub fn read_objects(path: &str) -> Result<Vec<Located>, CliError> {
    let docs = read_documents(path)?;
    let mut out = Vec::new();
    for (v, origin) in flatten(docs) {
        if let Some(object) = decode_object(path, &origin, v)? {
            out.push(Located { object, origin });
        }
    }
    Ok(out)
}

/// Reads a file and sorts its objects by kind.
#[allow(dead_code)] // used by the subcommands that read whole clusters
pub fn read_set(path: &str) -> Result<ObjectSet, CliError> {
    Ok(ObjectSet::sort(read_objects(path)?.into_iter().map(|l| l.object)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_yaml_and_lists() {
        let docs = parse_documents(
            "x",
            br#"{"kind":"List","items":[{"kind":"Service"},{"kind":"Pod"}]}"#,
        )
        .unwrap();
        assert_eq!(flatten(docs).len(), 2);
        let docs = parse_documents("x", b"kind: Service\n---\nkind: Node\n---\n").unwrap();
        assert_eq!(docs.len(), 2);
        let err = parse_documents("f.yaml", b"kind: [unclosed\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("f.yaml: invalid YAML"), "{err}");
        let err = parse_documents("f.json", b"{\"kind\": }")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 1"), "{err}");
        assert!(parse_documents("b", &[0xff, 0xfe]).is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            if let Ok(docs) = parse_documents("fuzz", &bytes) {
                for (v, origin) in flatten(docs) {
                    let _ = decode_object("fuzz", &origin, v);
                }
            }
        }

        #[test]
        fn yaml_like_text_never_panics(text in "[a-zA-Z:{}\\[\\],\\- \n\"'0-9#&*!|>]{0,200}") {
            if let Ok(docs) = parse_documents("fuzz", text.as_bytes()) {
                for (v, origin) in flatten(docs) {
                    let _ = decode_object("fuzz", &origin, v);
                }
            }
        }
    }
}
