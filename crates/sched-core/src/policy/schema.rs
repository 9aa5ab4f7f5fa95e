//! The key layout of a Policy document, checked before deserializing so that an unknown or
//! missing key gets an error that names its path and lists the valid keys.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use serde_json::Value;

use super::PolicyError;

/// What a key holds.
enum Child {
    /// A scalar or anything serde checks alone.
    Leaf,
    /// An object with its own layout.
    Object(&'static Schema),
    /// A list of objects with that layout.
    ListOf(&'static Schema),
}

/// The keys of one object.
struct Schema {
    names: &'static [&'static str],
    children: &'static [Child],
    required: &'static [&'static str],
}

use Child::{Leaf, ListOf, Object};

/// Valid top-level keys.
pub(crate) const POLICY_FIELDS: &[&str] = &[
    "kind",
    "apiVersion",
    "predicates",
    "priorities",
    "extenders",
    "hardPodAffinitySymmetricWeight",
    "alwaysCheckAllPredicates",
    "percentageOfNodesToScore",
];

/// Valid members of a predicate `argument`.
pub(crate) const PREDICATE_ARGUMENT_FIELDS: &[&str] = &["serviceAffinity", "labelsPresence"];

/// Valid members of a priority `argument`.
pub(crate) const PRIORITY_ARGUMENT_FIELDS: &[&str] = &[
    "serviceAntiAffinity",
    "labelPreference",
    "requestedToCapacityRatioArguments",
];

static POLICY: Schema = Schema {
    names: POLICY_FIELDS,
    // `extenders` is a leaf: any non-empty list is rejected as unsupported later.
    children: &[
        Leaf,
        Leaf,
        ListOf(&PREDICATE),
        ListOf(&PRIORITY),
        Leaf,
        Leaf,
        Leaf,
        Leaf,
    ],
    required: &[],
};

static PREDICATE: Schema = Schema {
    names: &["name", "argument"],
    children: &[Leaf, Object(&PREDICATE_ARGUMENT)],
    required: &["name"],
};

static PREDICATE_ARGUMENT: Schema = Schema {
    names: PREDICATE_ARGUMENT_FIELDS,
    children: &[Object(&SERVICE_AFFINITY), Object(&LABELS_PRESENCE)],
    required: &[],
};

static SERVICE_AFFINITY: Schema = Schema {
    names: &["labels"],
    children: &[Leaf],
    required: &["labels"],
};

static LABELS_PRESENCE: Schema = Schema {
    names: &["labels", "presence"],
    children: &[Leaf, Leaf],
    required: &["labels"],
};

static PRIORITY: Schema = Schema {
    names: &["name", "weight", "argument"],
    children: &[Leaf, Leaf, Object(&PRIORITY_ARGUMENT)],
    required: &["name", "weight"],
};

static PRIORITY_ARGUMENT: Schema = Schema {
    names: PRIORITY_ARGUMENT_FIELDS,
    children: &[
        Object(&SERVICE_ANTI_AFFINITY),
        Object(&LABEL_PREFERENCE),
        Object(&REQUESTED_TO_CAPACITY_RATIO),
    ],
    required: &[],
};

static SERVICE_ANTI_AFFINITY: Schema = Schema {
    names: &["label"],
    children: &[Leaf],
    required: &["label"],
};

static LABEL_PREFERENCE: Schema = Schema {
    names: &["label", "presence"],
    children: &[Leaf, Leaf],
    required: &["label"],
};

static REQUESTED_TO_CAPACITY_RATIO: Schema = Schema {
    names: &["shape", "resources"],
    children: &[ListOf(&SHAPE_POINT), ListOf(&RESOURCE_SPEC)],
    required: &["shape"],
};

static SHAPE_POINT: Schema = Schema {
    names: &["utilization", "score"],
    children: &[Leaf, Leaf],
    required: &["utilization", "score"],
};

static RESOURCE_SPEC: Schema = Schema {
    names: &["name", "weight"],
    children: &[Leaf, Leaf],
    required: &["name"],
};

/// A JSON document with its objects' keys in document order (serde_json's `Value` sorts
/// them), so that problems are reported in the order a reader meets them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Doc {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(serde_json::Number),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Doc>),
    /// An object, keys in document order.
    Object(Vec<(String, Doc)>),
}

impl<'de> serde::Deserialize<'de> for Doc {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Doc, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Doc;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<Doc, E> {
                Ok(Doc::Null)
            }
            fn visit_none<E>(self) -> Result<Doc, E> {
                Ok(Doc::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Doc, E> {
                Ok(Doc::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Doc, E> {
                Ok(Doc::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Doc, E> {
                Ok(Doc::Number(v.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Doc, E> {
                serde_json::Number::from_f64(v)
                    .map(Doc::Number)
                    .ok_or_else(|| E::custom("a number that is not finite"))
            }
            fn visit_str<E>(self, v: &str) -> Result<Doc, E> {
                Ok(Doc::String(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Doc, E> {
                Ok(Doc::String(v))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Doc, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = a.next_element()? {
                    items.push(item);
                }
                Ok(Doc::Array(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Doc, A::Error> {
                let mut fields: Vec<(String, Doc)> = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, Doc>()? {
                    // A repeated key: the last value wins, as in serde_json and Go.
                    match fields.iter_mut().find(|(key, _)| *key == k) {
                        Some(slot) => slot.1 = v,
                        None => fields.push((k, v)),
                    }
                }
                Ok(Doc::Object(fields))
            }
        }
        d.deserialize_any(V)
    }
}

impl Doc {
    /// The same document as a serde_json `Value`.
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Doc::Null => Value::Null,
            Doc::Bool(b) => Value::Bool(*b),
            Doc::Number(n) => Value::Number(n.clone()),
            Doc::String(s) => Value::String(s.clone()),
            Doc::Array(items) => Value::Array(items.iter().map(Doc::to_value).collect()),
            Doc::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
        }
    }

    /// The value of a key of an object.
    pub(crate) fn get(&self, key: &str) -> Option<&Doc> {
        match self {
            Doc::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// "a string", "an array", ... for messages.
    pub(crate) fn json_type(&self) -> &'static str {
        match self {
            Doc::Null => "null",
            Doc::Bool(_) => "a boolean",
            Doc::Number(_) => "a number",
            Doc::String(_) => "a string",
            Doc::Array(_) => "an array",
            Doc::Object(_) => "an object",
        }
    }

    /// The position in document order (`""` for the top, `a.b`, `a[0]`, ...; every value
    /// counts) of each of the `wanted` paths the document has. Only those are kept, so the
    /// map grows with `wanted`, not with the document.
    pub(crate) fn positions<'w>(&self, wanted: &'w HashSet<String>) -> HashMap<&'w str, usize> {
        fn walk<'w>(
            d: &Doc,
            path: &mut String,
            wanted: &'w HashSet<String>,
            next: &mut usize,
            out: &mut HashMap<&'w str, usize>,
        ) {
            if let Some(w) = wanted.get(path.as_str()) {
                out.insert(w, *next);
            }
            *next += 1;
            match d {
                Doc::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        let len = path.len();
                        let _ = write!(path, "[{i}]");
                        walk(item, path, wanted, next, out);
                        path.truncate(len);
                    }
                }
                Doc::Object(fields) => {
                    for (k, v) in fields {
                        let len = path.len();
                        if !path.is_empty() {
                            path.push('.');
                        }
                        path.push_str(k);
                        walk(v, path, wanted, next, out);
                        path.truncate(len);
                    }
                }
                _ => {}
            }
        }
        let mut out = HashMap::with_capacity(wanted.len());
        walk(self, &mut String::new(), wanted, &mut 0, &mut out);
        out
    }
}

/// A valid key that an unknown key probably meant: the same but for letter case (Go's decoder
/// would take it), else the closest within a small edit distance.
pub(crate) fn suggest(key: &str, valid: &'static [&'static str]) -> Option<&'static str> {
    if key.len() > 200 {
        return None;
    }
    if let Some(v) = valid.iter().find(|n| n.eq_ignore_ascii_case(key)) {
        return Some(v);
    }
    let lower = key.to_ascii_lowercase();
    valid
        .iter()
        .map(|n| (edit_distance(&lower, &n.to_ascii_lowercase()), *n))
        .filter(|(d, n)| *d <= 2.max(n.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// Levenshtein distance (keys are short).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Checks every object's keys against the Policy layout and returns every problem, in
/// document order. Values of the wrong JSON type are left for serde to report.
pub(crate) fn check_keys(doc: &Doc) -> Vec<PolicyError> {
    let mut path = String::new();
    let mut out = Vec::new();
    check_object(doc, &POLICY, &mut path, &mut out);
    out
}

fn check_object(v: &Doc, schema: &'static Schema, path: &mut String, out: &mut Vec<PolicyError>) {
    let Doc::Object(fields) = v else {
        return;
    };
    for (key, value) in fields {
        let Some(i) = schema.names.iter().position(|n| n == key) else {
            out.push(PolicyError::UnknownField {
                path: path.clone(),
                field: crate::model::short_name(key),
                valid: schema.names,
                suggestion: suggest(key, schema.names),
            });
            continue;
        };
        let len = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        match &schema.children[i] {
            Leaf => {}
            Object(child) => match value {
                Doc::Null => {}
                Doc::Object(_) => check_object(value, child, path, out),
                other => out.push(not_an_object(path, child, other)),
            },
            ListOf(child) => match value {
                Doc::Null => {}
                Doc::Array(items) => {
                    for (j, item) in items.iter().enumerate() {
                        let len = path.len();
                        path.push_str(&format!("[{j}]"));
                        if item.json_type() == "an object" {
                            check_object(item, child, path, out);
                        } else {
                            out.push(not_an_object(path, child, item));
                        }
                        path.truncate(len);
                    }
                }
                other => out.push(PolicyError::InvalidValue {
                    path: path.clone(),
                    message: format!(
                        "expected a list of objects with fields {}, found {}",
                        child.names.join(", "),
                        other.json_type()
                    ),
                }),
            },
        }
        path.truncate(len);
    }
    for &field in schema.required {
        if !fields.iter().any(|(k, _)| k == field) {
            out.push(PolicyError::MissingField {
                path: path.clone(),
                field,
            });
        }
    }
}

fn not_an_object(path: &str, schema: &Schema, found: &Doc) -> PolicyError {
    PolicyError::InvalidValue {
        path: path.to_string(),
        message: format!(
            "expected an object with fields {}, found {}",
            schema.names.join(", "),
            found.json_type()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_tables_are_consistent() {
        for s in [
            &POLICY,
            &PREDICATE,
            &PREDICATE_ARGUMENT,
            &SERVICE_AFFINITY,
            &LABELS_PRESENCE,
            &PRIORITY,
            &PRIORITY_ARGUMENT,
            &SERVICE_ANTI_AFFINITY,
            &LABEL_PREFERENCE,
            &REQUESTED_TO_CAPACITY_RATIO,
            &SHAPE_POINT,
            &RESOURCE_SPEC,
        ] {
            assert_eq!(s.names.len(), s.children.len());
            for r in s.required {
                assert!(s.names.contains(r));
            }
        }
    }

    #[test]
    fn nested_unknown_key_names_its_path() {
        let doc: Doc = serde_json::from_str(
            r#"{"priorities":[{"name":"a","weight":1},{"name":"b","weight":1,
                "argument":{"requestedToCapacityRatioArguments":{"shape":[{"utilization":0,"score":0,"x":1}]}}}]}"#,
        )
        .unwrap();
        let err = check_keys(&doc).remove(0);
        assert_eq!(
            err,
            PolicyError::UnknownField {
                path: "priorities[1].argument.requestedToCapacityRatioArguments.shape[0]".into(),
                field: "x".into(),
                valid: &["utilization", "score"],
                suggestion: None,
            }
        );
    }

    #[test]
    fn case_only_difference_is_suggested() {
        let doc: Doc = serde_json::from_str(r#"{"Predicates":[]}"#).unwrap();
        let err = check_keys(&doc).remove(0);
        assert!(
            err.to_string().contains("did you mean `predicates`?"),
            "{err}"
        );
    }

    #[test]
    fn typos_are_suggested_and_all_keys_checked_in_document_order() {
        let doc: Doc = serde_json::from_str(
            r#"{"priorites":[], "predicates":[{"nmae":"x"}], "kind":"Policy", "alwaysCheckAllPredicate":true}"#,
        )
        .unwrap();
        let errs = check_keys(&doc);
        let text: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(errs.len(), 4, "{text:?}");
        assert!(text[0].contains("did you mean `priorities`?"), "{text:?}");
        assert!(text[1].contains("did you mean `name`?"), "{text:?}");
        assert!(text[2].contains("missing field `name`"), "{text:?}");
        assert!(
            text[3].contains("did you mean `alwaysCheckAllPredicates`?"),
            "{text:?}"
        );
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn missing_required_key() {
        let doc: Doc = serde_json::from_str(r#"{"priorities":[{"name":"a"}]}"#).unwrap();
        assert_eq!(
            check_keys(&doc).remove(0),
            PolicyError::MissingField {
                path: "priorities[0]".into(),
                field: "weight"
            }
        );
    }
}
