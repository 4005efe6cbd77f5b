//! Where groups and rules, and a rule's `record`, `alert` and `expr`, start
//! in a rule file, for messages that point at them as promtool's do.
//!
//! serde_yaml keeps no positions for what it decoded, so a second, light
//! pass reads the file's YAML events and keeps a tree of positions only.
//! Aliases take the position of the `*name` that uses them, and keys
//! brought in by `<<` merges the position of the anchored text, as Go's
//! YAML decoder reports them. Where this pass disagrees with the decoder
//! (it should not), messages lose their positions, nothing else.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

use super::Position;

/// Positions of one file's groups, in the order of the file.
#[derive(Debug, Default)]
pub(crate) struct FilePositions {
    pub groups: Vec<GroupPositions>,
}

#[derive(Debug, Default)]
pub(crate) struct GroupPositions {
    pub at: Option<Position>,
    pub rules: Vec<RulePositions>,
}

#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct RulePositions {
    pub at: Option<Position>,
    pub record: Option<Position>,
    pub alert: Option<Position>,
    pub expr: Option<Position>,
}

/// Most nodes the position tree may hold, aliases expanded: a file of
/// aliases to aliases could otherwise ask for an exponential tree.
const MAX_NODES: usize = 1_000_000;

/// Reads the positions of the first document of `text`; empty where the
/// text does not parse.
pub(crate) fn read(text: &str) -> FilePositions {
    let mut builder = TreeBuilder::new(text);
    if Parser::new_from_str(text)
        .load(&mut builder, false)
        .is_err()
        || builder.overflow
    {
        return FilePositions::default();
    }
    let Some(root) = builder.root else {
        return FilePositions::default();
    };
    let groups = get(&root, "groups")
        .map(items)
        .unwrap_or_default()
        .into_iter()
        .map(|group| GroupPositions {
            at: Some(group.at),
            rules: get(group, "rules")
                .map(items)
                .unwrap_or_default()
                .into_iter()
                .map(|rule| RulePositions {
                    at: Some(rule.at),
                    record: get(rule, "record").map(|n| n.at),
                    alert: get(rule, "alert").map(|n| n.at),
                    expr: get(rule, "expr").map(|n| n.at),
                })
                .collect(),
        })
        .collect();
    FilePositions { groups }
}

#[derive(Debug, Clone)]
struct Node {
    at: Position,
    /// Where the node starts, in characters from the start of the text.
    index: usize,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Scalar(String),
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

impl Node {
    fn size(&self) -> usize {
        1 + match &self.kind {
            Kind::Scalar(_) => 0,
            Kind::Seq(items) => items.iter().map(Node::size).sum(),
            Kind::Map(entries) => entries.iter().map(|(k, v)| k.size() + v.size()).sum(),
        }
    }
}

/// The items of a sequence; nothing for anything else.
fn items(node: &Node) -> Vec<&Node> {
    match &node.kind {
        Kind::Seq(items) => items.iter().collect(),
        _ => Vec::new(),
    }
}

/// The value of `key` in a mapping, or in what its `<<` keys merge in.
fn get<'a>(node: &'a Node, key: &str) -> Option<&'a Node> {
    let Kind::Map(entries) = &node.kind else {
        return None;
    };
    let is_key = |k: &Node, want: &str| matches!(&k.kind, Kind::Scalar(s) if s == want);
    if let Some((_, value)) = entries.iter().find(|(k, _)| is_key(k, key)) {
        return Some(value);
    }
    entries
        .iter()
        .filter(|(k, _)| is_key(k, "<<"))
        .find_map(|(_, merged)| match &merged.kind {
            Kind::Map(_) => get(merged, key),
            Kind::Seq(sources) => sources.iter().find_map(|s| get(s, key)),
            Kind::Scalar(_) => None,
        })
}

/// A sequence or mapping being read, with the anchor it is to be kept
/// under when it ends.
struct Open {
    node: Node,
    anchor: usize,
    /// A mapping's key waiting for its value.
    key: Option<Node>,
}

struct TreeBuilder {
    chars: Vec<char>,
    /// Index in `chars` of the first character of each line.
    line_starts: Vec<usize>,
    open: Vec<Open>,
    anchors: HashMap<usize, Node>,
    root: Option<Node>,
    nodes: usize,
    overflow: bool,
}

impl TreeBuilder {
    fn new(text: &str) -> Self {
        let chars: Vec<char> = text.chars().collect();
        let line_starts = std::iter::once(0)
            .chain(
                chars
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| **c == '\n')
                    .map(|(i, _)| i + 1),
            )
            .collect();
        TreeBuilder {
            chars,
            line_starts,
            open: Vec::new(),
            anchors: HashMap::new(),
            root: None,
            nodes: 0,
            overflow: false,
        }
    }

    fn locate(&self, index: usize) -> Position {
        locate_in(&self.line_starts, index)
    }

    fn node(&self, index: usize, anchor: usize, kind: Kind) -> Node {
        let index = if anchor == 0 {
            index
        } else {
            anchor_start_in(&self.chars, index)
        };
        Node {
            at: self.locate(index),
            index,
            kind,
        }
    }

    fn finish(&mut self, node: Node, anchor: usize) {
        if anchor != 0 {
            self.anchors.insert(anchor, node.clone());
        }
        let Some(parent) = self.open.last_mut() else {
            if self.root.is_none() {
                self.root = Some(node);
            }
            return;
        };
        match &mut parent.node.kind {
            Kind::Seq(items) => items.push(node),
            Kind::Map(entries) => match parent.key.take() {
                None => {
                    // A block mapping's event comes at its first `:`; Go
                    // places the mapping at its first key (or the `&name`
                    // in front of that).
                    if entries.is_empty() && node.index < parent.node.index {
                        let index = if parent.anchor == 0 {
                            node.index
                        } else {
                            anchor_start_in(&self.chars, node.index)
                        };
                        parent.node.index = index;
                        parent.node.at = locate_in(&self.line_starts, index);
                    }
                    parent.key = Some(node);
                }
                Some(key) => entries.push((key, node)),
            },
            Kind::Scalar(_) => {}
        }
    }

    fn count(&mut self, nodes: usize) -> bool {
        self.nodes = self.nodes.saturating_add(nodes);
        if self.nodes > MAX_NODES {
            self.overflow = true;
        }
        !self.overflow
    }
}

/// Line and column (from 1, in characters) of a character index.
fn locate_in(line_starts: &[usize], index: usize) -> Position {
    let line = line_starts.partition_point(|start| *start <= index);
    let start = line
        .checked_sub(1)
        .and_then(|l| line_starts.get(l))
        .copied()
        .unwrap_or(0);
    Position {
        line,
        column: index.saturating_sub(start) + 1,
    }
}

/// Where the `&name` in front of a node that starts at `index` starts: Go's
/// decoder places an anchored node there, yaml-rust2 after it.
fn anchor_start_in(chars: &[char], index: usize) -> usize {
    let before = |i: usize| i.checked_sub(1).and_then(|p| chars.get(p)).copied();
    let mut i = index;
    while before(i).is_some_and(char::is_whitespace) {
        i -= 1;
    }
    let end = i;
    while before(i).is_some_and(|c| !c.is_whitespace()) {
        i -= 1;
    }
    match chars.get(i) {
        Some('&') if i < end => i,
        _ => index,
    }
}

impl MarkedEventReceiver for TreeBuilder {
    fn on_event(&mut self, event: Event, mark: Marker) {
        if self.overflow {
            return;
        }
        let index = mark.index();
        match event {
            Event::Scalar(value, _, anchor, _) => {
                if self.count(1) {
                    let node = self.node(index, anchor, Kind::Scalar(value));
                    self.finish(node, anchor);
                }
            }
            Event::Alias(anchor) => {
                let Some(mut node) = self.anchors.get(&anchor).cloned() else {
                    return;
                };
                if self.count(node.size()) {
                    node.index = index;
                    node.at = self.locate(index);
                    self.finish(node, 0);
                }
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                let kind = if matches!(event, Event::SequenceStart(..)) {
                    Kind::Seq(Vec::new())
                } else {
                    Kind::Map(Vec::new())
                };
                if self.count(1) {
                    let node = self.node(index, anchor, kind);
                    self.open.push(Open {
                        node,
                        anchor,
                        key: None,
                    });
                }
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(done) = self.open.pop() {
                    self.finish(done.node, done.anchor);
                }
            }
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd => {}
        }
    }
}
