//! Why a `KubeSchedulerConfiguration` was refused: every problem, each with its field path.

use std::fmt;

/// What is wrong at one place of a configuration, worded as kube's field errors word it
/// (`Required value`, `Invalid value`, `Duplicate value`, `Unsupported value`, `Forbidden`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProblemKind {
    /// The text is neither YAML nor JSON (the message carries the line and column).
    Syntax(String),
    /// A key the configuration format does not have at that place (kube decodes strictly).
    UnknownField {
        /// A valid key that is close (same letters in another case, or one edit away).
        suggestion: Option<&'static str>,
    },
    /// A value of the wrong type (a string where a number belongs, ...).
    WrongType {
        /// What belongs here.
        expected: &'static str,
        /// What was found.
        found: &'static str,
    },
    /// A required value is absent (kube's `Required value`).
    Required(String),
    /// A value kube refuses (kube's `Invalid value: <value>: <detail>`).
    Invalid {
        /// The value, rendered as kube renders it.
        value: String,
        /// Why.
        detail: String,
    },
    /// The value repeats an earlier one (kube's `Duplicate value`).
    Duplicate(String),
    /// The value is not one of a fixed set (kube's `Unsupported value`).
    NotSupported {
        /// The value.
        value: String,
        /// The values allowed.
        supported: Vec<String>,
    },
    /// The field may not be set (kube's `Forbidden`).
    Forbidden(String),
    /// The profile's plugins cannot be put together (kube's framework errors: a plugin that
    /// does not exist, one registered twice, one enabled at a point it does not implement).
    Plugins(String),
    /// Valid for kube-scheduler, but this crate cannot act on it yet; refused rather than
    /// silently ignored, because it would change placements.
    Unsupported(String),
}

/// One problem of a configuration: where (a field path such as `profiles[0].plugins.score`)
/// and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigProblem {
    pub(crate) path: String,
    pub(crate) kind: ProblemKind,
}

impl ConfigProblem {
    pub(crate) fn new(path: impl Into<String>, kind: ProblemKind) -> ConfigProblem {
        ConfigProblem {
            path: path.into(),
            kind,
        }
    }

    /// The field path (empty: the whole document).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What is wrong.
    pub fn kind(&self) -> &ProblemKind {
        &self.kind
    }
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "<document>"
        } else {
            &self.path
        };
        match &self.kind {
            ProblemKind::Syntax(m) => write!(f, "{m}"),
            ProblemKind::UnknownField { suggestion } => {
                write!(f, "{path}: unknown field")?;
                if let Some(s) = suggestion {
                    write!(f, " (did you mean \"{s}\"?)")?;
                }
                Ok(())
            }
            ProblemKind::WrongType { expected, found } => {
                write!(f, "{path}: expected {expected}, found {found}")
            }
            ProblemKind::Required(d) if d.is_empty() => write!(f, "{path}: Required value"),
            ProblemKind::Required(d) => write!(f, "{path}: Required value: {d}"),
            ProblemKind::Invalid { value, detail } => {
                write!(f, "{path}: Invalid value: {value}: {detail}")
            }
            ProblemKind::Duplicate(v) => write!(f, "{path}: Duplicate value: {v}"),
            ProblemKind::NotSupported { value, supported } => {
                write!(f, "{path}: Unsupported value: {value}: supported values: ")?;
                for (i, s) in supported.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "\"{s}\"")?;
                }
                Ok(())
            }
            ProblemKind::Forbidden(d) => write!(f, "{path}: Forbidden: {d}"),
            ProblemKind::Plugins(d) => write!(f, "{path}: {d}"),
            ProblemKind::Unsupported(d) => write!(f, "{path}: not supported by sched-core: {d}"),
        }
    }
}

/// Why a configuration was refused: every problem found, in document order, and the file
/// it came from when known. Never retryable: fix the document.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    file: Option<String>,
    problems: Vec<ConfigProblem>,
}

impl ConfigError {
    pub(crate) fn new(problems: Vec<ConfigProblem>) -> ConfigError {
        debug_assert!(!problems.is_empty());
        ConfigError {
            file: None,
            problems,
        }
    }

    pub(crate) fn one(path: impl Into<String>, kind: ProblemKind) -> ConfigError {
        ConfigError::new(vec![ConfigProblem::new(path, kind)])
    }

    /// The same error, naming the file it came from.
    #[must_use]
    pub fn in_file(mut self, file: impl Into<String>) -> ConfigError {
        self.file = Some(file.into());
        self
    }

    /// The file, when known.
    pub fn file(&self) -> Option<&str> {
        self.file.as_deref()
    }

    /// Every problem, in document order (never empty).
    pub fn problems(&self) -> &[ConfigProblem] {
        &self.problems
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}: ")?;
        }
        match self.problems.as_slice() {
            [one] => write!(f, "{one}"),
            many => {
                write!(f, "{} problems in the scheduler configuration:", many.len())?;
                for p in many {
                    write!(f, "\n  - {p}")?;
                }
                Ok(())
            }
        }
    }
}
