//! Why a Policy was rejected.

use std::fmt;

/// Why a Policy document was rejected. Every variant names the offending field (as a path such
/// as `priorities[2].weight`) and value; none is retryable: fix the document.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The text is not JSON.
    #[error("policy is not valid JSON: {message} (line {line}, column {column})")]
    Json {
        /// serde_json's description.
        message: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
    },
    /// A key that the Policy format does not have at that place.
    #[error(
        "unknown field `{field}` {}; valid fields: {}{}",
        Place(path),
        valid.join(", "),
        suggestion.map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default()
    )]
    UnknownField {
        /// Where the object with the unknown key is (empty: the top level).
        path: String,
        /// The unknown key.
        field: String,
        /// The keys allowed there.
        valid: &'static [&'static str],
        /// A valid key that differs only in letter case (Go's JSON decoder would accept it).
        suggestion: Option<&'static str>,
    },
    /// A required key is absent.
    #[error("missing field `{field}` {}", Place(path))]
    MissingField {
        /// Where the object lacking the key is.
        path: String,
        /// The missing key.
        field: &'static str,
    },
    /// A value has the wrong JSON type or does not fit the field (e.g. a string where a list of
    /// strings belongs, a number too large).
    #[error("invalid value {}: {message}", Place(path))]
    InvalidValue {
        /// The field.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// `kind` is present and is not `Policy`.
    #[error("`kind` must be \"Policy\", found {found:?}")]
    WrongKind {
        /// The value found.
        found: String,
    },
    /// `apiVersion` is present and is not `v1`.
    #[error("`apiVersion` must be \"v1\", found {found:?}")]
    WrongApiVersion {
        /// The value found.
        found: String,
    },
    /// A predicate name that is neither built in nor defined by an argument. Alone, its message
    /// lists the known names; in [`PolicyError::Multiple`] they are listed once, after every
    /// problem.
    #[error(
        "{}; {}",
        UnknownName::predicate(path, name, known),
        KnownNames::Predicates(known)
    )]
    UnknownPredicate {
        /// The entry, e.g. `predicates[3]`.
        path: String,
        /// The name.
        name: String,
        /// The built-in predicate names (aliases included).
        known: &'static [&'static str],
    },
    /// A priority name that is neither built in nor defined by an argument. Alone, its message
    /// lists the known names; in [`PolicyError::Multiple`] they are listed once, after every
    /// problem.
    #[error(
        "{}; {}",
        UnknownName::priority(path, name, known),
        KnownNames::Priorities(known)
    )]
    UnknownPriority {
        /// The entry, e.g. `priorities[1]`.
        path: String,
        /// The name.
        name: String,
        /// The built-in priority names (aliases included).
        known: &'static [&'static str],
    },
    /// A kube-scheduler predicate or priority that this crate does not implement.
    #[error("`{path}`: {what} {short:?} is not supported by sched-core: {reason}", short = crate::model::short_name(name))]
    Unsupported {
        /// The entry's `name` field, or the argument member that makes it unsupported.
        path: String,
        /// `predicate` or `priority`.
        what: &'static str,
        /// The name.
        name: String,
        /// Why it is not implemented.
        reason: &'static str,
    },
    /// A priority weight that is zero or negative.
    #[error("`{path}.weight`: priority {short:?} must have a positive weight, found {weight}", short = crate::model::short_name(name))]
    NonPositiveWeight {
        /// The entry.
        path: String,
        /// The priority name.
        name: String,
        /// The weight found.
        weight: i64,
    },
    /// Weights so large that weight x 100 (the maximum node score), summed over all priorities,
    /// overflows i64 (kube's MaxTotalScore check).
    #[error(
        "`{path}.weight`: priority {short:?} with weight {weight} makes the total score (sum of weight x 100) overflow i64", short = crate::model::short_name(name))]
    WeightOverflow {
        /// The entry whose weight made the total overflow.
        path: String,
        /// The priority name.
        name: String,
        /// Its weight.
        weight: i64,
    },
    /// A built-in that needs an argument was given none.
    #[error("`{path}.argument`: {short:?} requires an argument with `{expected}`", short = crate::model::short_name(name))]
    MissingArgument {
        /// The entry.
        path: String,
        /// The name.
        name: String,
        /// The argument member it needs.
        expected: &'static str,
    },
    /// A built-in that takes no argument was given one.
    #[error("`{path}.argument`: {short:?} takes no argument", short = crate::model::short_name(name))]
    UnexpectedArgument {
        /// The entry.
        path: String,
        /// The name.
        name: String,
    },
    /// A built-in was given an argument of another kind.
    #[error("`{path}.argument`: {short:?} requires `{expected}`, found `{found}`", short = crate::model::short_name(name))]
    WrongArgument {
        /// The entry.
        path: String,
        /// The name.
        name: String,
        /// The member it needs.
        expected: &'static str,
        /// The member given.
        found: &'static str,
    },
    /// An argument must set exactly one member.
    #[error(
        "`{path}.argument`: exactly one of {} must be set, found {}",
        allowed.join(", "),
        if found.is_empty() { "none".to_string() } else { found.join(", ") }
    )]
    ArgumentCount {
        /// The entry.
        path: String,
        /// The members that were set.
        found: Vec<&'static str>,
        /// The members allowed.
        allowed: &'static [&'static str],
    },
    /// An argument value is out of its domain (an empty label list, an empty label).
    #[error("`{path}`: {message}")]
    InvalidArgument {
        /// The field.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A bad requestedToCapacityRatio shape or resource list.
    #[error("`{path}`: {message}")]
    InvalidShape {
        /// The field, e.g. `priorities[0].argument.requestedToCapacityRatioArguments.shape[1].score`.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// `percentageOfNodesToScore` outside 0..=100.
    #[error("`percentageOfNodesToScore` must be in 0..=100, found {value}")]
    PercentageOutOfRange {
        /// The value found.
        value: i64,
    },
    /// `hardPodAffinitySymmetricWeight` outside 0..=100.
    #[error("`hardPodAffinitySymmetricWeight` must be in 0..=100, found {value}")]
    HardPodAffinityWeightOutOfRange {
        /// The value found.
        value: i64,
    },
    /// One name given twice in one list with different arguments (aliases count as their
    /// target). The same name with the same argument is merged as kube merges it.
    #[error(
        "`{path}`: {what} {short:?} is given again with another argument than at `{first}`; give each argument its own name",
        short = crate::model::short_name(name)
    )]
    ConflictingDuplicate {
        /// The second entry.
        path: String,
        /// `predicate` or `priority`.
        what: &'static str,
        /// The name.
        name: String,
        /// The first entry with that name.
        first: String,
    },
    /// A custom priority kind that kube allows only once (RequestedToCapacityRatio).
    #[error("`{path}`: priority {short:?} redeclares {kind}, already declared by {first:?}", short = crate::model::short_name(name))]
    Redeclared {
        /// The second entry.
        path: String,
        /// Its name.
        name: String,
        /// The kind declared twice.
        kind: &'static str,
        /// The name of the first declaration.
        first: String,
    },
    /// Priorities of a kind kube merges (labelPreference, serviceAntiAffinity) with different
    /// weights; kube requires them equal.
    #[error(
        "`{path}.weight`: {kind} priority {short:?} has weight {weight}, but {first:?} of the same kind has {first_weight}; kube requires equal weights", short = crate::model::short_name(name))]
    DifferentWeights {
        /// The later entry.
        path: String,
        /// Its name.
        name: String,
        /// The argument kind.
        kind: &'static str,
        /// Its weight.
        weight: i64,
        /// The name of the first entry of that kind.
        first: String,
        /// Its weight.
        first_weight: i64,
    },
    /// The scheduler refused the compiled pipeline (validation normally catches this first).
    #[error("building the profile: {0}")]
    Build(#[from] crate::profile::BuildError),
    /// The document is a `KubeSchedulerConfiguration` (kube-scheduler's component
    /// configuration), not a Policy.
    #[error(
        "this is a KubeSchedulerConfiguration ({found}), kube-scheduler's component configuration, not a legacy scheduler Policy; pass the Policy file it names in `algorithmSource.policy` (kube before v1.23), or write a Policy (`kind: Policy`, `apiVersion: v1`)"
    )]
    NotAPolicy {
        /// What gave it away (`kind`, `apiVersion` or `profiles`).
        found: String,
    },
    /// The bytes start with a UTF-16 byte order mark; a Policy is UTF-8 JSON.
    #[error(
        "the policy is UTF-16 ({} byte order mark); it must be UTF-8 (convert it, e.g. with iconv)",
        if *big_endian { "big-endian" } else { "little-endian" }
    )]
    Utf16 {
        /// Whether the mark is big-endian.
        big_endian: bool,
    },
    /// The bytes are not UTF-8.
    #[error("the policy is not valid UTF-8 at byte offset {offset} (line {line})")]
    InvalidUtf8 {
        /// Offset of the first bad byte.
        offset: usize,
        /// 1-based line of that byte.
        line: usize,
    },
    /// Several problems, in document order (each is one of the other variants). See
    /// [`PolicyError::problems`].
    ///
    /// The message stays short however many there are: one line per problem, the first
    /// [`MAX_LISTED_PROBLEMS`] of them and a count of the rest, then the known predicate and
    /// priority names once (when a name was unknown) rather than once per unknown name.
    #[error("{}", ProblemList(.0))]
    Multiple(Vec<PolicyError>),
    /// Non-empty `extenders`: this crate has no HTTP extender client.
    #[error("`extenders`: HTTP extenders are not supported (found {count}); remove them")]
    ExtendersUnsupported {
        /// How many were given.
        count: usize,
    },
}

impl PolicyError {
    /// Every problem: the list of [`PolicyError::Multiple`], else this error alone.
    pub fn problems(&self) -> &[PolicyError] {
        match self {
            PolicyError::Multiple(all) => all,
            one => std::slice::from_ref(one),
        }
    }

    /// Every problem, taken out: the list of [`PolicyError::Multiple`], else this error alone.
    pub(crate) fn into_problems(self) -> Vec<PolicyError> {
        match self {
            PolicyError::Multiple(all) => all,
            one => vec![one],
        }
    }

    /// One error for a list of problems: the problem itself when there is one, else
    /// [`PolicyError::Multiple`] (nested lists flattened).
    pub(crate) fn from_problems(problems: Vec<PolicyError>) -> PolicyError {
        let mut flat: Vec<PolicyError> = Vec::with_capacity(problems.len());
        for p in problems {
            match p {
                PolicyError::Multiple(inner) => flat.extend(inner),
                one => flat.push(one),
            }
        }
        if flat.len() == 1 {
            flat.remove(0)
        } else {
            PolicyError::Multiple(flat)
        }
    }

    /// The JSON path of the field the problem is about (`priorities[2].weight`; empty for the
    /// whole document, and for [`PolicyError::Multiple`]).
    pub fn path(&self) -> String {
        use PolicyError as E;
        match self {
            E::UnknownField { path, field, .. } => {
                if path.is_empty() {
                    field.clone()
                } else {
                    format!("{path}.{field}")
                }
            }
            E::MissingField { path, .. }
            | E::InvalidValue { path, .. }
            | E::UnknownPredicate { path, .. }
            | E::UnknownPriority { path, .. }
            | E::Unsupported { path, .. }
            | E::NonPositiveWeight { path, .. }
            | E::WeightOverflow { path, .. }
            | E::MissingArgument { path, .. }
            | E::UnexpectedArgument { path, .. }
            | E::WrongArgument { path, .. }
            | E::ArgumentCount { path, .. }
            | E::InvalidArgument { path, .. }
            | E::InvalidShape { path, .. }
            | E::ConflictingDuplicate { path, .. }
            | E::Redeclared { path, .. }
            | E::DifferentWeights { path, .. } => path.clone(),
            E::WrongKind { .. } => "kind".into(),
            E::WrongApiVersion { .. } => "apiVersion".into(),
            E::PercentageOutOfRange { .. } => "percentageOfNodesToScore".into(),
            E::HardPodAffinityWeightOutOfRange { .. } => "hardPodAffinitySymmetricWeight".into(),
            E::ExtendersUnsupported { .. } => "extenders".into(),
            E::Json { .. }
            | E::Build(_)
            | E::NotAPolicy { .. }
            | E::Utf16 { .. }
            | E::InvalidUtf8 { .. }
            | E::Multiple(_) => String::new(),
        }
    }
}

/// How many problems the message of [`PolicyError::Multiple`] lists one by one; the others are
/// counted ("... and 12 more problems"). [`PolicyError::problems`] has them all.
pub const MAX_LISTED_PROBLEMS: usize = 1000;

/// "`predicates[3].name`: unknown predicate "X" (did you mean "Y"?)": an unknown name without
/// the list of known ones.
struct UnknownName<'a> {
    path: &'a str,
    what: &'static str,
    name: &'a str,
    known: &'static [&'static str],
}

impl<'a> UnknownName<'a> {
    fn predicate(path: &'a str, name: &'a str, known: &'static [&'static str]) -> Self {
        UnknownName {
            path,
            what: "predicate",
            name,
            known,
        }
    }

    fn priority(path: &'a str, name: &'a str, known: &'static [&'static str]) -> Self {
        UnknownName {
            path,
            what: "priority",
            name,
            known,
        }
    }
}

impl fmt::Display for UnknownName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}.name`: unknown {} {:?}",
            self.path,
            self.what,
            crate::model::short_name(self.name)
        )?;
        match super::schema::suggest(self.name, self.known) {
            Some(s) => write!(f, " (did you mean {s:?}?)"),
            None => Ok(()),
        }
    }
}

/// The known names of one list, with how to define a custom entry.
#[derive(Clone, Copy)]
enum KnownNames {
    Predicates(&'static [&'static str]),
    Priorities(&'static [&'static str]),
}

impl fmt::Display for KnownNames {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (list, known, one, arguments) = match self {
            KnownNames::Predicates(known) => (
                "predicates",
                known,
                "predicate",
                "labelsPresence or serviceAffinity",
            ),
            KnownNames::Priorities(known) => (
                "priorities",
                known,
                "priority",
                "labelPreference, serviceAntiAffinity or requestedToCapacityRatioArguments",
            ),
        };
        write!(
            f,
            "known {list}: {}; a custom {one} needs an `argument` ({arguments})",
            known.join(", ")
        )
    }
}

/// The message of [`PolicyError::Multiple`]: its length grows with the number of problems
/// listed (at most [`MAX_LISTED_PROBLEMS`]), each line bounded, and the known names come once.
struct ProblemList<'a>(&'a [PolicyError]);

impl fmt::Display for ProblemList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let problems = self.0;
        write!(f, "{} problems in the policy:", problems.len())?;
        for p in problems.iter().take(MAX_LISTED_PROBLEMS) {
            f.write_str("\n  - ")?;
            match p {
                PolicyError::UnknownPredicate { path, name, known } => {
                    UnknownName::predicate(path, name, known).fmt(f)?;
                }
                PolicyError::UnknownPriority { path, name, known } => {
                    UnknownName::priority(path, name, known).fmt(f)?;
                }
                other => other.fmt(f)?,
            }
        }
        if let Some(rest) = problems.len().checked_sub(MAX_LISTED_PROBLEMS)
            && rest > 0
        {
            write!(
                f,
                "\n  - ... and {rest} more problem{}",
                if rest == 1 { "" } else { "s" }
            )?;
        }
        // Every unknown name of a list is checked against the same known names.
        let predicates = problems.iter().find_map(|p| match p {
            PolicyError::UnknownPredicate { known, .. } => Some(KnownNames::Predicates(known)),
            _ => None,
        });
        let priorities = problems.iter().find_map(|p| match p {
            PolicyError::UnknownPriority { known, .. } => Some(KnownNames::Priorities(known)),
            _ => None,
        });
        for known in [predicates, priorities].into_iter().flatten() {
            write!(f, "\n{known}")?;
        }
        Ok(())
    }
}

/// Renders "at `path`" or "at the top level".
struct Place<'a>(&'a str);

impl fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            f.write_str("at the top level of the policy")
        } else {
            write!(f, "at `{}`", self.0)
        }
    }
}
