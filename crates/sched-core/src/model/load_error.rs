//! Why a file of Kubernetes objects could not be loaded.

use std::fmt;

use super::Role;

/// Why a file of Kubernetes objects could not be loaded: the file's name (when it has one) and
/// what is wrong ([`LoadErrorKind`]), which names the item by its index in `items` and its name.
/// None is retryable: fix the file.
#[derive(Debug)]
pub struct LoadError {
    inner: Box<(String, LoadErrorKind)>,
}

impl LoadError {
    pub(crate) fn new(file: &str, kind: LoadErrorKind) -> LoadError {
        LoadError {
            inner: Box::new((file.to_string(), kind)),
        }
    }

    /// The file's name as given to the loader (`None` for text loaded without one).
    pub fn file(&self) -> Option<&str> {
        let file = &self.inner.0;
        (!file.is_empty()).then_some(file.as_str())
    }

    /// What is wrong.
    pub fn kind(&self) -> &LoadErrorKind {
        &self.inner.1
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = self.file() {
            write!(f, "{file}: ")?;
        }
        fmt::Display::fmt(self.kind(), f)
    }
}

impl std::error::Error for LoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self.kind() {
            LoadErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

/// Where an object is in its file: `items[i]`, or the file's single object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position(pub Option<usize>);

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(i) => write!(f, "items[{i}]"),
            None => f.write_str("the object"),
        }
    }
}

/// What is wrong with a file of Kubernetes objects ([`LoadError::kind`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadErrorKind {
    /// The file could not be read.
    #[error("cannot read: {0}")]
    Io(#[source] std::io::Error),
    /// The file starts with a UTF-16 byte order mark; Kubernetes JSON is UTF-8.
    #[error(
        "the file is UTF-16 ({}); Kubernetes JSON is UTF-8 (convert it, e.g. with iconv)",
        if *big_endian { "big-endian byte order mark" } else { "little-endian byte order mark" }
    )]
    Utf16 {
        /// Whether the mark is big-endian (`FE FF`).
        big_endian: bool,
    },
    /// The bytes are not UTF-8.
    #[error("invalid UTF-8 at byte offset {offset} (line {line})")]
    InvalidUtf8 {
        /// Offset of the first bad byte, from the start of the file.
        offset: usize,
        /// 1-based line of that byte.
        line: usize,
    },
    /// The text is not JSON.
    #[error("not valid JSON: {message} (line {line}, column {column})")]
    Json {
        /// serde_json's description.
        message: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The document is JSON but neither a List, an array of objects, nor one object.
    #[error("expected a List of objects, an array of objects or one object, found {found}")]
    Shape {
        /// What was found.
        found: String,
    },
    /// An object of a kind that the file's [`Role`] does not hold (a Pod in the nodes file).
    #[error(
        "{at}: expected {} ({}), found {} {name:?}",
        article(expected),
        role.holds(),
        article(found)
    )]
    WrongKind {
        /// Where the object is.
        at: Position,
        /// The kind the role holds (`Node` or `Pod`).
        expected: &'static str,
        /// The file's role.
        role: Role,
        /// The object's kind.
        found: String,
        /// Its name (`namespace/name` when namespaced), cut short when huge.
        name: String,
    },
    /// An item without `kind` where nothing says what it is (a `List` of mixed objects).
    #[error("{at}: the object has no `kind`, and in a List of mixed objects every item needs one")]
    MissingKind {
        /// Where the object is.
        at: Position,
    },
    /// One object has a field with a bad value.
    #[error("{at}: {kind} {name:?}: field `{field}`: {message}")]
    Field {
        /// `Node`, `Pod`, `Service`, ...
        kind: String,
        /// Where the object is.
        at: Position,
        /// `metadata.name` of the object (`namespace/name` when namespaced), cut short when huge.
        name: String,
        /// Dotted path of the bad field, e.g. `status.allocatable.cpu`.
        field: String,
        /// What is wrong.
        message: String,
    },
    /// An object without `metadata.name` (the API server requires one).
    #[error("{at}: {kind} has an empty metadata.name")]
    EmptyName {
        /// `Node`, `Pod`, `Namespace`, `PodDisruptionBudget` or a storage kind.
        kind: &'static str,
        /// Where the object is.
        at: Position,
    },
    /// Two nodes with one name (the error's file is the second one's).
    #[error("{at}: node {name:?} is already defined at {}{first_at}", first_file.as_deref().map(|f| format!("{f}: ")).unwrap_or_default())]
    DuplicateNode {
        /// The name.
        name: String,
        /// Where the second node is.
        at: Position,
        /// The file of the first node when it is another file.
        first_file: Option<String>,
        /// Where the first node is.
        first_at: Position,
    },
}

/// `a Node`, `an Endpoints`.
pub(crate) fn article(kind: &str) -> String {
    let vowel = kind
        .chars()
        .next()
        .is_some_and(|c| "AEIOUaeiou".contains(c));
    format!("{} {kind}", if vowel { "an" } else { "a" })
}

/// A name as messages show it: at most 100 characters, longer ones cut with `...`.
pub(crate) fn short(name: &str) -> String {
    const MAX: usize = 100;
    match name.char_indices().nth(MAX) {
        None => name.to_string(),
        Some((cut, _)) => format!("{}... ({} bytes)", &name[..cut], name.len()),
    }
}
