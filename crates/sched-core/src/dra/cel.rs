//! CEL device selectors (`selectors[].cel.expression` of DeviceClasses and requests), in kube
//! v1.34's environment (`k8s.io/dynamic-resource-allocation/cel`, with its features at their
//! v1.34 defaults).
//!
//! [`CompiledSelector::compile`] parses and checks an expression once;
//! [`CompiledSelector::matches`] evaluates it for one device, as often as needed, from any
//! thread. The expression sees one variable, `device`:
//!
//! - `device.driver`: the driver's name;
//! - `device.attributes[domain][id]` (or `.id`): int, bool, string, or `kubernetes.Semver` for
//!   version attributes; a name without a domain belongs to the driver's domain;
//! - `device.capacity[domain][id]`: a `kubernetes.Quantity`;
//! - `device.allowMultipleAllocations`: the device's field, false when unset.
//!
//! A domain the device has nothing under is an empty map; a missing id is the runtime error
//! `no such key: <id>`. kube's allocator treats a runtime error as an allocation failure (`CEL
//! runtime error`), not as a device that does not match, and so should callers of
//! [`CompiledSelector::matches`].
//!
//! `device.allowMultipleAllocations` belongs to `DRAConsumableCapacity`, alpha and off by
//! default in v1.34. With the gate off, kube's API server refuses new expressions that use it
//! (`undefined field 'allowMultipleAllocations'`, its "new expressions" environment), but the
//! scheduler compiles selectors in the "stored expressions" environment, which ignores feature
//! gates and declares the field; this module is the scheduler's, so it declares it too (and
//! the API server drops the device field while the gate is off, so it reads false). The
//! `includes()` function and list-valued attributes came later (v1.36) and are not declared.
//!
//! Functions: CEL's standard library (regular expressions included), `cel.bind`, the strings,
//! lists and math extensions, and kube's quantity, semver and `find`/`findAll` libraries.
//! kube's other base libraries (URLs, IPs, CIDRs, `format`, authorizer, sets, kube's list
//! functions `isSorted`/`sum`/`min`/`max`) and timestamps/durations are not provided: an
//! expression calling them is refused as an undeclared reference.
//!
//! Cost: kube estimates each expression's worst-case cost when the object is created and
//! refuses it above [`SELECTOR_MAX_COST`] (apiserver validation), and the scheduler stops an
//! evaluation whose actual cost passes the same limit (`operation cancelled: actual cost limit
//! exceeded`). The `cel` crate does not count costs while evaluating, so the limit is enforced
//! on the estimate at compile time ([`CelError::CostLimitExceeded`]): an accepted expression
//! can never reach the runtime limit, since the estimate bounds the actual cost.

mod cost;
mod device;
mod env;
pub mod quantity;
pub mod semver;

use std::sync::Arc;

use ::cel::{Context, ExecutionError, Program, Value};

use crate::model::Device;

/// Longest expression kube accepts, in bytes (`CELSelectorExpressionMaxLength`).
pub const SELECTOR_MAX_LENGTH: usize = 10 * 1024;

/// kube's cost limit of one selector (`CELSelectorExpressionMaxCost`).
pub const SELECTOR_MAX_COST: u64 = 1_000_000;

/// Why a selector could not be compiled or evaluated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CelError {
    /// The expression is longer than [`SELECTOR_MAX_LENGTH`].
    #[error("CEL expression is {length} bytes long, more than the {limit} allowed")]
    TooLong {
        /// Its length in bytes.
        length: usize,
        /// The limit.
        limit: usize,
    },
    /// The expression does not parse or does not type-check.
    #[error("CEL expression {expression:?}: compilation failed: {message}")]
    Compile {
        /// The expression.
        expression: String,
        /// What is wrong, in kube's words where it has them.
        message: String,
    },
    /// The expression's worst-case cost is above the limit.
    #[error("CEL expression {expression:?}: estimated cost {estimated} exceeds the limit {limit}")]
    CostLimitExceeded {
        /// The expression.
        expression: String,
        /// Its estimated worst-case cost.
        estimated: u64,
        /// The limit.
        limit: u64,
    },
    /// An attribute of the device has no usable value (kube: `attribute <name>: ...`).
    #[error("attribute {name}: {reason}")]
    InvalidAttribute {
        /// The attribute's name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A capacity of the device is not a quantity.
    #[error("capacity {name}: {reason}")]
    InvalidCapacity {
        /// The capacity's name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The evaluation failed (kube: a CEL runtime error).
    #[error("{message}")]
    Runtime {
        /// What failed, in cel-go's words where they are known (`no such key: <id>`).
        message: String,
    },
    /// The expression evaluated to something other than a bool.
    #[error("CEL result of type {type_name} could not be converted to bool")]
    NotBool {
        /// The CEL type of the result.
        type_name: String,
    },
    /// The CEL environment could not be built (a bug, never the expression's fault).
    #[error("CEL environment: {message}")]
    Environment {
        /// The declaration that failed.
        message: String,
    },
}

/// A compiled device selector: cheap to evaluate, `Send + Sync`.
#[derive(Debug)]
pub struct CompiledSelector {
    program: Program,
    expression: String,
    estimated_cost: u64,
    id: u32,
}

/// The id of the next selector compiled.
static NEXT_ID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl CompiledSelector {
    /// Parses and checks `expression` and estimates its worst-case cost.
    pub fn compile(expression: &str) -> Result<Self, CelError> {
        if expression.len() > SELECTOR_MAX_LENGTH {
            return Err(CelError::TooLong {
                length: expression.len(),
                limit: SELECTOR_MAX_LENGTH,
            });
        }
        let env = environment()?;
        let compile_error = |message: String| CelError::Compile {
            expression: expression.to_owned(),
            message,
        };
        let program = env
            .compile(expression)
            .map_err(|e| compile_error(e.to_string()))?;
        let estimated_cost = cost::estimate(program.expression()).map_err(|r| {
            let offset = program
                .source_info()
                .offset_for(r.id)
                .map_or(0, |(start, _)| start as usize);
            let (line, column) = line_column(expression, offset);
            compile_error(format!("ERROR: <input>:{line}:{column}: {}", r.message))
        })?;
        if estimated_cost > SELECTOR_MAX_COST {
            return Err(CelError::CostLimitExceeded {
                expression: expression.to_owned(),
                estimated: estimated_cost,
                limit: SELECTOR_MAX_COST,
            });
        }
        Ok(CompiledSelector {
            id: NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            program,
            expression: expression.to_owned(),
            estimated_cost,
        })
    }

    /// The expression as given.
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The worst-case cost, as kube estimates it.
    pub fn estimated_cost(&self) -> u64 {
        self.estimated_cost
    }

    /// This selector's id, unique among the selectors compiled in this process (the key of
    /// a device's [`crate::model::SelectorMemo`]).
    pub fn id(&self) -> u32 {
        self.id
    }

    /// [`CompiledSelector::matches`], kept in the device's memo: a second evaluation on the
    /// same device reads the first one's result. Errors are not kept.
    ///
    /// # Errors
    /// As [`CompiledSelector::matches`].
    pub fn matches_memoized(&self, driver: &str, device: &Device) -> Result<bool, CelError> {
        if let Some(r) = device.selector_memo.get(driver, self.id) {
            return Ok(r);
        }
        let r = self.matches(driver, device)?;
        device.selector_memo.put(driver, self.id, r);
        Ok(r)
    }

    /// Whether `device` of `driver` passes the selector.
    ///
    /// # Errors
    /// [`CelError`] for an evaluation that failed (kube: a CEL runtime error).
    pub fn matches(&self, driver: &str, device: &Device) -> Result<bool, CelError> {
        let env = environment()?;
        let value = device::device_value(driver, device)?;
        let mut context = Context::with_env(env);
        context.add_variable_as_val("device", Box::new(value));
        match self.program.execute(&context) {
            Ok(Value::Bool(b)) => Ok(b),
            Ok(other) => Err(CelError::NotBool {
                type_name: other.type_of().to_string().to_lowercase(),
            }),
            Err(e) => Err(CelError::Runtime {
                message: runtime_message(&e),
            }),
        }
    }
}

/// The shared environment, or why it could not be built.
fn environment() -> Result<Arc<::cel::Env>, CelError> {
    env::ENV
        .as_ref()
        .map(Arc::clone)
        .map_err(|e| CelError::Environment {
            message: e.to_string(),
        })
}

/// cel-go's wording of the runtime errors whose wording kube's tests check.
fn runtime_message(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// 1-based line and column of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn results_are_kept_with_the_device_for_its_driver() {
        let s = CompiledSelector::compile(r#"device.driver == "a""#).unwrap();
        let d = Device::default();
        assert_eq!(d.selector_memo.get("a", s.id()), None);
        assert_eq!(s.matches_memoized("a", &d), Ok(true));
        assert_eq!(d.selector_memo.get("a", s.id()), Some(true));
        assert_eq!(s.matches_memoized("a", &d), Ok(true));
        // Another driver is evaluated, not read from the memo (nor kept).
        assert_eq!(s.matches_memoized("b", &d), Ok(false));
        assert_eq!(d.selector_memo.get("b", s.id()), None);
        // A clone keeps the results; another selector has its own.
        assert_eq!(d.clone().selector_memo.get("a", s.id()), Some(true));
        let other = CompiledSelector::compile(r#"device.driver == "b""#).unwrap();
        assert_ne!(other.id(), s.id());
        assert_eq!(d.selector_memo.get("a", other.id()), None);
    }

    #[test]
    fn selector_is_send_and_sync() {
        assert_send_sync::<CompiledSelector>();
    }

    #[test]
    fn line_and_column_count_from_one() {
        assert_eq!(line_column("abc", 0), (1, 1));
        assert_eq!(line_column("a\nbc", 3), (2, 2));
    }
}
