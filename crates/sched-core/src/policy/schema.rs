//! The key layout of a Policy document, checked before deserializing so that an unknown or
//! missing key gets an error that names its path and lists the valid keys.

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

/// Checks every object's keys against the Policy layout. Values of the wrong JSON type are left
/// for serde to report.
pub(crate) fn check_keys(doc: &Value) -> Result<(), PolicyError> {
    let mut path = String::new();
    check_object(doc, &POLICY, &mut path)
}

fn check_object(v: &Value, schema: &'static Schema, path: &mut String) -> Result<(), PolicyError> {
    let Value::Object(map) = v else {
        return Ok(());
    };
    for (key, value) in map {
        let Some(i) = schema.names.iter().position(|n| n == key) else {
            let suggestion = schema
                .names
                .iter()
                .copied()
                .find(|n| n.eq_ignore_ascii_case(key));
            return Err(PolicyError::UnknownField {
                path: path.clone(),
                field: key.clone(),
                valid: schema.names,
                suggestion,
            });
        };
        let len = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        match &schema.children[i] {
            Leaf => {}
            Object(child) => match value {
                Value::Null => {}
                Value::Object(_) => check_object(value, child, path)?,
                other => return Err(not_an_object(path, child, other)),
            },
            ListOf(child) => match value {
                Value::Null => {}
                Value::Array(items) => {
                    for (j, item) in items.iter().enumerate() {
                        let len = path.len();
                        path.push_str(&format!("[{j}]"));
                        if !item.is_object() {
                            return Err(not_an_object(path, child, item));
                        }
                        check_object(item, child, path)?;
                        path.truncate(len);
                    }
                }
                other => {
                    return Err(PolicyError::InvalidValue {
                        path: path.clone(),
                        message: format!(
                            "expected a list of objects with fields {}, found {}",
                            child.names.join(", "),
                            json_type(other)
                        ),
                    });
                }
            },
        }
        path.truncate(len);
    }
    for &field in schema.required {
        if !map.contains_key(field) {
            return Err(PolicyError::MissingField {
                path: path.clone(),
                field,
            });
        }
    }
    Ok(())
}

fn not_an_object(path: &str, schema: &Schema, found: &Value) -> PolicyError {
    PolicyError::InvalidValue {
        path: path.to_string(),
        message: format!(
            "expected an object with fields {}, found {}",
            schema.names.join(", "),
            json_type(found)
        ),
    }
}

/// "a string", "an array", ... for messages.
pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
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
        let doc: Value = serde_json::from_str(
            r#"{"priorities":[{"name":"a","weight":1},{"name":"b","weight":1,
                "argument":{"requestedToCapacityRatioArguments":{"shape":[{"utilization":0,"score":0,"x":1}]}}}]}"#,
        )
        .unwrap();
        let err = check_keys(&doc).unwrap_err();
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
        let doc: Value = serde_json::from_str(r#"{"Predicates":[]}"#).unwrap();
        let err = check_keys(&doc).unwrap_err();
        assert!(
            err.to_string().contains("did you mean `predicates`?"),
            "{err}"
        );
    }

    #[test]
    fn missing_required_key() {
        let doc: Value = serde_json::from_str(r#"{"priorities":[{"name":"a"}]}"#).unwrap();
        assert_eq!(
            check_keys(&doc).unwrap_err(),
            PolicyError::MissingField {
                path: "priorities[0]".into(),
                field: "weight"
            }
        );
    }
}
