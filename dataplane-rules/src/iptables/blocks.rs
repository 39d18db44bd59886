//! The service ports of a transaction (and of the tables it leaves) in blocks of whole
//! Services, each block holding its ports' lines of the all-services chains (`KUBE-SERVICES`,
//! `KUBE-NODEPORTS`, the filter chains) concatenated once. Blocks are shared, immutable, from
//! sync to sync: a partial sync rebuilds only the blocks of the Services that changed, and its
//! payload is written as a list of text segments ([`Segments`]) that point into the blocks
//! rather than as one copy.

use std::io::{self, IoSlice, Write};
use std::sync::Arc;

use super::text::{PortText, TxText, Written, write_decl};

/// About how many service ports a block holds (a block ends at the end of a Service); a few
/// in unit tests, so that their small clusters span many blocks.
pub(crate) const BLOCK_PORTS: usize = if cfg!(test) { 3 } else { 128 };

/// One Service of a block: its key, `namespace\0name` (ordered as (namespace, name)), the
/// digest it was synced with, and how many ports it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServiceRec {
    pub(crate) key: Arc<str>,
    pub(crate) ports: u32,
}

/// A run of service ports (whole Services when made by a sync) with their all-services lines
/// concatenated.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Block {
    pub(crate) ports: Vec<Arc<PortText>>,
    /// The Services of the block, in order (empty for blocks not made by a sync).
    pub(crate) services: Vec<ServiceRec>,
    /// Their digests (as [`ProxyModel`](crate::ProxyModel) computes them).
    pub(crate) digests: Vec<u64>,
    /// Every port's filter lines.
    pub(crate) filter: String,
    /// Every port's `head` lines (nat).
    pub(crate) head: String,
    /// The end of each port's head lines in `head`.
    pub(crate) head_ends: Vec<u32>,
    /// Whether a port writes a chain it does not declare.
    pub(crate) has_extra: bool,
    /// The length of every port's own chains: rule lines and declarations.
    pub(crate) body_len: usize,
}

impl Block {
    fn new(ports: Vec<Arc<PortText>>, services: Vec<ServiceRec>, digests: Vec<u64>) -> Self {
        let (mut f, mut h, mut body_len) = (0, 0, 0);
        for p in &ports {
            f += p.filter.text.len();
            h += p.head.text.len();
            body_len += p.body.text.len() + p.decls_len();
        }
        let mut filter = String::with_capacity(f);
        let mut head = String::with_capacity(h);
        let mut head_ends = Vec::with_capacity(ports.len());
        let mut has_extra = false;
        for p in &ports {
            filter.push_str(&p.filter.text);
            head.push_str(&p.head.text);
            head_ends.push(u32::try_from(head.len()).unwrap_or(u32::MAX));
            has_extra |= !p.extra.is_empty();
        }
        Block {
            ports,
            services,
            digests,
            filter,
            head,
            head_ends,
            has_extra,
            body_len,
        }
    }
}

/// The service ports of a transaction, in blocks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PortList {
    pub(crate) blocks: Vec<Arc<Block>>,
}

impl PortList {
    /// Ports not made by a sync (no Service records), in blocks of [`BLOCK_PORTS`].
    pub(crate) fn from_ports(ports: Vec<Arc<PortText>>) -> Self {
        let mut b = ListBuilder::default();
        for p in ports {
            b.ports.push(p);
            if b.ports.len() >= BLOCK_PORTS {
                b.flush();
            }
        }
        b.finish()
    }

    /// Every port, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<PortText>> + '_ {
        self.blocks.iter().flat_map(|b| b.ports.iter())
    }
}

/// Builds a [`PortList`]: whole blocks taken over, or ports (Service by Service) gathered into
/// new blocks.
#[derive(Debug, Default)]
pub(crate) struct ListBuilder {
    blocks: Vec<Arc<Block>>,
    len: usize,
    ports: Vec<Arc<PortText>>,
    services: Vec<ServiceRec>,
    digests: Vec<u64>,
}

impl ListBuilder {
    pub(crate) fn with_capacity(blocks: usize) -> Self {
        ListBuilder {
            blocks: Vec::with_capacity(blocks),
            ..ListBuilder::default()
        }
    }

    /// How many ports so far.
    pub(crate) fn len(&self) -> usize {
        self.len + self.ports.len()
    }

    fn flush(&mut self) {
        if self.ports.is_empty() && self.services.is_empty() {
            return;
        }
        self.len += self.ports.len();
        let block = Block::new(
            std::mem::take(&mut self.ports),
            std::mem::take(&mut self.services),
            std::mem::take(&mut self.digests),
        );
        self.blocks.push(Arc::new(block));
    }

    /// Takes over a whole block (after the ports gathered so far).
    pub(crate) fn block(&mut self, b: &Arc<Block>) {
        self.flush();
        self.len += b.ports.len();
        self.blocks.push(b.clone());
    }

    /// One port of the Service being gathered.
    pub(crate) fn port(&mut self, p: Arc<PortText>) {
        self.ports.push(p);
    }

    /// Ends the Service whose ports were just gathered; starts a new block when this one is
    /// full.
    pub(crate) fn end_service(&mut self, rec: ServiceRec, digest: u64) {
        self.services.push(rec);
        self.digests.push(digest);
        if self.ports.len() >= BLOCK_PORTS {
            self.flush();
        }
    }

    pub(crate) fn finish(mut self) -> PortList {
        self.flush();
        PortList { blocks: self.blocks }
    }
}

/// A piece of a payload: borrowed from the transaction's blocks and rendered lines, or a range
/// of the generated text of [`Segments`].
#[derive(Debug, Clone, Copy)]
enum Piece<'a> {
    Shared(&'a str),
    Own(u32, u32),
}

/// A restore payload as a list of text segments whose concatenation is the payload
/// ([`Transaction::to_restore_text`](super::Transaction::to_restore_text)): most point into
/// the rules the transaction shares with the tables; the few generated lines (table headers,
/// chain declarations, deletions) are held here.
#[derive(Debug, Clone)]
pub struct Segments<'a> {
    own: String,
    pieces: Vec<Piece<'a>>,
}

impl<'a> Segments<'a> {
    fn share(&mut self, s: &'a str) {
        if !s.is_empty() {
            self.pieces.push(Piece::Shared(s));
        }
    }

    /// Appends generated text.
    fn own(&mut self, write: impl FnOnce(&mut String)) {
        let start = self.own.len();
        write(&mut self.own);
        let end = self.own.len();
        if end == start {
            return;
        }
        let (s, e) = (
            u32::try_from(start).unwrap_or(u32::MAX),
            u32::try_from(end).unwrap_or(u32::MAX),
        );
        match self.pieces.last_mut() {
            Some(Piece::Own(_, last)) if *last == s => *last = e,
            _ => self.pieces.push(Piece::Own(s, e)),
        }
    }

    /// The segments in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        self.pieces.iter().map(|p| match *p {
            Piece::Shared(s) => s,
            Piece::Own(s, e) => self.own.get(s as usize..e as usize).unwrap_or(""),
        })
    }

    /// How many segments.
    pub fn len(&self) -> usize {
        self.pieces.len()
    }

    /// Whether there is no segment (never, for a payload).
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// The payload's length in bytes.
    pub fn byte_len(&self) -> usize {
        self.iter().map(str::len).sum()
    }

    /// Appends the concatenation to `out`.
    pub fn append_to(&self, out: &mut String) {
        out.reserve(self.byte_len());
        for s in self.iter() {
            out.push_str(s);
        }
    }

    /// Writes the segments to `w` (vectored writes where `w` takes them).
    pub fn write_to(&self, w: &mut impl Write) -> io::Result<()> {
        const BATCH: usize = 512;
        let all: Vec<&str> = self.iter().collect();
        for chunk in all.chunks(BATCH) {
            let mut slices: Vec<IoSlice<'_>> = chunk.iter().map(|s| IoSlice::new(s.as_bytes())).collect();
            let mut bufs: &mut [IoSlice<'_>] = &mut slices;
            while !bufs.is_empty() {
                match w.write_vectored(bufs) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => IoSlice::advance_slices(&mut bufs, n),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }
}

impl TxText {
    /// The payload as segments (see [`Segments`]).
    pub(crate) fn segments(&self) -> Segments<'_> {
        let mut s = Segments {
            own: String::with_capacity(1024 + 40 * self.stale.len()),
            pieces: Vec::with_capacity(8 + 2 * self.ports.blocks.len()),
        };
        s.own(|o| {
            o.push_str("*filter\n");
            for c in &self.filter_decls {
                write_decl(o, *c);
            }
        });
        s.share(&self.filter_pre.text);
        for b in &self.ports.blocks {
            s.share(&b.filter);
        }
        s.share(&self.filter_post.text);
        s.own(|o| {
            o.push_str("COMMIT\n*nat\n");
            for c in &self.nat_decls {
                write_decl(o, *c);
            }
        });
        // Declarations of the chains written.
        let laid_out = self.laid_out();
        if laid_out {
            for b in &self.shared {
                s.share(&b.decls);
            }
        } else {
            s.own(|o| self.for_written(|p, _, _| p.write_decls(o)));
        }
        s.own(|o| {
            for c in &self.stale {
                write_decl(o, *c);
            }
        });
        s.share(&self.nat_pre.text);
        if laid_out {
            // Every port's lines, in order, as rendered.
            for b in &self.shared {
                s.share(&b.rules);
            }
        }
        let written: &[u32] = match &self.written {
            Written::All => &[],
            Written::Some(w) => w,
        };
        let all = matches!(self.written, Written::All);
        let mut base = 0usize;
        let mut next = written.iter().peekable();
        let blocks: &[Arc<Block>] = if laid_out { &[] } else { &self.ports.blocks };
        for b in blocks {
            let end = base + b.ports.len();
            if !all && next.peek().is_none_or(|&&w| w as usize >= end) {
                s.share(&b.head);
                base = end;
                continue;
            }
            let mut at = 0usize;
            for (k, p) in b.ports.iter().enumerate() {
                if !all && next.next_if(|&&w| (w as usize) == base + k).is_none() {
                    continue;
                }
                let until = b.head_ends.get(k).map_or(b.head.len(), |&e| e as usize);
                s.share(b.head.get(at..until).unwrap_or(""));
                s.share(&p.body.text);
                at = until;
            }
            s.share(b.head.get(at..).unwrap_or(""));
            base = end;
        }
        s.own(|o| {
            for c in &self.stale {
                o.push_str("-X ");
                c.write_to(o);
                o.push('\n');
            }
        });
        s.share(&self.nat_post.text);
        s.own(|o| o.push_str("COMMIT\n"));
        s
    }
}

impl TxText {
    /// Calls `f` on each port that writes its chains, with its block and place in it, in
    /// order, skipping the blocks that have none.
    pub(crate) fn for_written<'s>(&'s self, mut f: impl FnMut(&'s PortText, &'s Block, usize)) {
        match &self.written {
            Written::All => {
                for b in &self.ports.blocks {
                    for (k, p) in b.ports.iter().enumerate() {
                        f(p, b, k);
                    }
                }
            }
            Written::Some(w) => {
                let mut base = 0usize;
                let mut blocks = self.ports.blocks.iter();
                let mut cur = blocks.next();
                for &i in w {
                    let i = i as usize;
                    while let Some(b) = cur {
                        if i < base + b.ports.len() {
                            break;
                        }
                        base += b.ports.len();
                        cur = blocks.next();
                    }
                    let Some(b) = cur else { return };
                    if let Some(p) = b.ports.get(i - base) {
                        f(p, b, i - base);
                    }
                }
            }
        }
    }
}

impl super::Transaction {
    /// The payload as text segments, in order: their concatenation is
    /// [`to_restore_text`](Self::to_restore_text), without copying the rules the transaction
    /// shares with the tables (a partial sync's payload is mostly whole blocks of the
    /// all-services chains).
    pub fn segments(&self) -> Segments<'_> {
        self.text.segments()
    }

    /// Writes the payload to `w` segment by segment (see [`segments`](Self::segments)).
    pub fn write_io(&self, w: &mut impl Write) -> io::Result<()> {
        self.segments().write_to(w)
    }
}
