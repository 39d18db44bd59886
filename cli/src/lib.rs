//! The reading half of the `svcnet` command line as a library: the input reader (JSON, YAML,
//! `List`s, multi-document files) and its error type, shared by the `svcnet` binary and the
//! fuzz targets (`fuzz/`), so that both read bytes the same way.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).
//!
//! ```
//! use svcnet_cli::input::{decode_object, flatten, parse_documents};
//!
//! let docs = parse_documents("x.yaml", b"kind: Service\nmetadata: {name: web}\n---\nkind: Node\n")?;
//! let objects: Vec<_> = flatten(docs)
//!     .into_iter()
//!     .filter_map(|(v, origin)| decode_object("x.yaml", &origin, v).transpose())
//!     .collect::<Result<_, _>>()?;
//! assert_eq!(objects.len(), 2);
//! assert_eq!(objects[0].kind(), "Service");
//! # Ok::<(), svcnet_cli::error::CliError>(())
//! ```

pub mod error;
pub mod input;
