//! A transaction: an ordered list of operations on one table, rendered as `nft -f` input
//! one line per operation (as knftables' `Transaction.String()` renders it).
//!
//! Follows knftables v0.0.22 (`transaction.go`, `objects.go`), the version Kubernetes v1.37.2 pins.

use super::object::{
    Chain, ContainerKind, Counter, Element, Family, Heads, Object, Rule, Set, SharedStr, Table, Verb,
    max_line_len, write_object,
};
use serde::{Deserialize, Serialize};

/// One operation: a verb applied to an object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operation {
    /// The verb.
    pub verb: Verb,
    /// The object.
    #[serde(flatten)]
    pub object: Object,
}

/// An ordered list of operations on one table (`family`, `table`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transaction {
    /// The table's family.
    pub family: Family,
    /// The table's name.
    pub table: String,
    /// The operations, in order.
    pub operations: Vec<Operation>,
}

impl Transaction {
    /// An empty transaction on table `family table`.
    pub fn new(family: Family, table: impl Into<String>) -> Self {
        Transaction {
            family,
            table: table.into(),
            operations: Vec::new(),
        }
    }

    /// Appends `verb object`.
    pub fn push(&mut self, verb: Verb, object: Object) {
        self.operations.push(Operation { verb, object });
    }

    /// Appends `add object`.
    pub fn add(&mut self, object: Object) {
        self.push(Verb::Add, object);
    }

    /// Appends `flush object`.
    pub fn flush(&mut self, object: Object) {
        self.push(Verb::Flush, object);
    }

    /// Appends `delete object`.
    pub fn delete(&mut self, object: Object) {
        self.push(Verb::Delete, object);
    }

    /// Appends `add table` with a comment.
    pub fn add_table(&mut self, comment: Option<&str>) {
        self.add(Object::Table(Table {
            comment: comment.map(str::to_owned),
        }));
    }

    /// Appends `add chain` (regular, no comment).
    pub fn add_chain(&mut self, name: impl Into<SharedStr>) {
        self.add(Object::Chain(Chain::named(name)));
    }

    /// Appends `flush chain`.
    pub fn flush_chain(&mut self, name: impl Into<SharedStr>) {
        self.flush(Object::Chain(Chain::named(name)));
    }

    /// Appends `delete chain`.
    pub fn delete_chain(&mut self, name: impl Into<SharedStr>) {
        self.delete(Object::Chain(Chain::named(name)));
    }

    /// Appends `add rule CHAIN RULE [comment]`.
    pub fn add_rule(
        &mut self,
        chain: impl Into<SharedStr>,
        rule: impl Into<SharedStr>,
        comment: Option<&str>,
    ) {
        self.add(Object::Rule(Rule {
            chain: chain.into(),
            rule: rule.into(),
            comment: comment.map(str::to_owned),
        }));
    }

    /// Appends `add element` to a set or map.
    pub fn add_element(
        &mut self,
        kind: ContainerKind,
        container: impl Into<SharedStr>,
        key: SharedStr,
        value: Option<SharedStr>,
        comment: Option<String>,
    ) {
        self.add(Object::Element(Element {
            kind,
            container: container.into(),
            key,
            value,
            comment,
        }));
    }

    /// Appends `delete element` (key only).
    pub fn delete_element(&mut self, kind: ContainerKind, container: impl Into<SharedStr>, key: SharedStr) {
        self.delete(Object::Element(Element {
            kind,
            container: container.into(),
            key,
            value: None,
            comment: None,
        }));
    }

    /// Appends `add set`.
    pub fn add_set(&mut self, set: Set) {
        self.add(Object::Set(Box::new(set)));
    }

    /// Appends `add map`.
    pub fn add_map(&mut self, map: Set) {
        self.add(Object::Map(Box::new(map)));
    }

    /// Appends `add counter`.
    pub fn add_counter(&mut self, name: &str) {
        self.add(Object::Counter(Counter {
            name: name.to_owned(),
            comment: None,
        }));
    }

    /// The number of operations (knftables' `NumOperations()`).
    pub fn num_operations(&self) -> usize {
        self.operations.len()
    }

    /// Whether there is no operation.
    pub fn is_empty(&self) -> bool {
        self.operations.is_empty()
    }

    /// The `nft -f` text, one line per operation.
    pub fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out);
        out
    }

    /// At least the length of the `nft -f` text (exact but for comments and numbers).
    fn max_text_len(&self) -> usize {
        self.operations
            .iter()
            .map(|op| max_line_len(&self.table, op.verb, &op.object))
            .sum()
    }

    /// Appends the `nft -f` text to `out`.
    pub fn render_into(&self, out: &mut String) {
        // sized once (the text of a large transaction is megabytes: never grown and copied)
        out.reserve(self.max_text_len());
        let mut heads = if self.operations.len() < 16 {
            Heads::uncached(self.family, &self.table)
        } else {
            Heads::new(self.family, &self.table)
        };
        for op in &self.operations {
            write_object(out, &mut heads, op.verb, &op.object);
        }
    }

    /// Splits the transaction into transactions of at most `max_operations` operations each
    /// (at least one), in order, so that no single `nft -f` run (one netlink batch) grows
    /// without bound. Each chunk is valid on the state its predecessors leave: operations
    /// keep their order, and an object is always created in an earlier or the same chunk
    /// as the operations that use it. Applying the chunks one after the other has the same
    /// result as applying the whole transaction (but not atomically).
    pub fn chunks(&self, max_operations: usize) -> Vec<Transaction> {
        let max = max_operations.max(1);
        if self.operations.len() <= max {
            return vec![self.clone()];
        }
        self.operations
            .chunks(max)
            .map(|ops| Transaction {
                family: self.family,
                table: self.table.clone(),
                operations: ops.to_vec(),
            })
            .collect()
    }
}

impl std::fmt::Display for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_and_counts() {
        let mut tx = Transaction::new(Family::Ip6, "kube-proxy");
        tx.add_table(Some("rules for kube-proxy"));
        tx.add_chain("services");
        tx.flush_chain("services");
        tx.add_rule(
            "services",
            "ip6 daddr . meta l4proto . th dport vmap @service-ips",
            None,
        );
        assert_eq!(tx.num_operations(), 4);
        assert_eq!(
            tx.render(),
            "add table ip6 kube-proxy { comment \"rules for kube-proxy\" ; }\n\
             add chain ip6 kube-proxy services\n\
             flush chain ip6 kube-proxy services\n\
             add rule ip6 kube-proxy services ip6 daddr . meta l4proto . th dport vmap @service-ips\n"
        );
        let chunks = tx.chunks(3);
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].num_operations(), 3);
        assert_eq!(chunks[1].num_operations(), 1);
        assert_eq!(
            chunks.iter().map(Transaction::render).collect::<String>(),
            tx.render()
        );
        assert_eq!(tx.chunks(0).len(), 4);
    }
}
