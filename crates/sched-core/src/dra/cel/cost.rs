//! The static check and worst-case cost estimate of a selector, after cel-go's
//! `checker.CostEstimator` with kube's `library.CostEstimator` and DRA's size estimator
//! (v1.34): every identifier, field, index, call and comprehension is charged as they charge
//! it, with the sizes kube declares for the `device` variable (driver names up to 63
//! characters, domains 63, ids 32, attribute values 64, at most 32 entries per map).
//!
//! The same walk refuses what kube's type checker refuses and that matters here: undeclared
//! identifiers and functions, fields `device` does not have, and results that are neither bool
//! nor of unknown type.

use cel::common::ast::{ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

/// Longest driver name (`DriverNameMaxLength`).
const DRIVER_MAX: u64 = 63;
/// Longest attribute or capacity domain (`DeviceMaxDomainLength`).
const DOMAIN_MAX: u64 = 63;
/// Longest attribute or capacity id (`DeviceMaxIDLength`).
const ID_MAX: u64 = 32;
/// Longest attribute value (`DeviceAttributeMaxValueLength`).
const ATTRIBUTE_MAX: u64 = 64;
/// Most attributes and capacities of a device (`ResourceSliceMaxAttributesAndCapacitiesPerDevice`).
const ENTRIES_MAX: u64 = 32;
/// Unknown size.
const UNKNOWN: u64 = u64::MAX;

/// `common.StringTraversalCostFactor`.
const STRING_TRAVERSAL: f64 = 0.1;
/// `common.RegexStringLengthCostFactor`.
const REGEX_LENGTH: f64 = 0.25;
/// `common.ListCreateBaseCost`.
const LIST_CREATE: u64 = 10;
/// `common.MapCreateBaseCost`.
const MAP_CREATE: u64 = 30;

/// Which of the two device maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Of {
    Attributes,
    Capacity,
}

/// What the walk knows of a node's type and size.
#[derive(Clone, Debug, PartialEq)]
enum T {
    Device,
    Domains(Of),
    Ids(Of),
    /// An attribute value: of unknown type, at most 64 long.
    Attribute,
    Quantity,
    Semver,
    Bool,
    Int,
    Uint,
    Double,
    Null,
    Bytes,
    Str(u64),
    List(u64, Box<T>),
    Map(u64, Box<T>, Box<T>),
    Type,
    Dyn,
}

impl T {
    fn size(&self) -> u64 {
        match self {
            T::Str(n) | T::List(n, _) | T::Map(n, _, _) => *n,
            T::Domains(_) | T::Ids(_) => ENTRIES_MAX,
            T::Attribute => ATTRIBUTE_MAX,
            T::Device => 4,
            _ => UNKNOWN,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            T::Device => "kubernetes.DRADevice",
            T::Domains(_) | T::Ids(_) | T::Map(..) => "map",
            T::Attribute | T::Dyn => "dyn",
            T::Quantity => "kubernetes.Quantity",
            T::Semver => "kubernetes.Semver",
            T::Bool => "bool",
            T::Int => "int",
            T::Uint => "uint",
            T::Double => "double",
            T::Null => "null_type",
            T::Bytes => "bytes",
            T::Str(_) => "string",
            T::List(..) => "list",
            T::Type => "type",
        }
    }

    fn is_string(&self) -> bool {
        matches!(self, T::Str(_))
    }

    /// The type of an element when iterating (list elements, map keys).
    fn element(&self) -> T {
        match self {
            T::List(_, e) => (**e).clone(),
            T::Map(_, k, _) => (**k).clone(),
            T::Domains(_) => T::Str(DOMAIN_MAX),
            T::Ids(_) => T::Str(ID_MAX),
            _ => T::Dyn,
        }
    }

    /// The type of a value looked up by key or index.
    fn value(&self) -> T {
        match self {
            T::Domains(of) => T::Ids(*of),
            T::Ids(Of::Attributes) => T::Attribute,
            T::Ids(Of::Capacity) => T::Quantity,
            T::List(_, e) => (**e).clone(),
            T::Map(_, _, v) => (**v).clone(),
            _ => T::Dyn,
        }
    }

    /// The common type of two branches.
    fn join(self, other: T) -> T {
        match (self, other) {
            (T::Str(a), T::Str(b)) => T::Str(a.max(b)),
            (T::List(a, x), T::List(b, y)) => T::List(a.max(b), Box::new(x.join(*y))),
            (a, b) if a == b => a,
            _ => T::Dyn,
        }
    }
}

/// `ceil(size * factor)`, unknown staying unknown (`SizeEstimate.MultiplyByCostFactor`).
fn factor(size: u64, f: f64) -> u64 {
    if size == UNKNOWN {
        UNKNOWN
    } else {
        (size as f64 * f).ceil() as u64
    }
}

/// A refused expression: the node and why.
#[derive(Debug)]
pub(super) struct Refusal {
    /// The node's id, for its place in the source.
    pub(super) id: u64,
    /// kube's wording of the problem.
    pub(super) message: String,
}

fn refuse<V>(id: u64, message: impl Into<String>) -> Result<V, Refusal> {
    Err(Refusal {
        id,
        message: message.into(),
    })
}

/// Namespaces of functions called as `ns.f(...)`.
const NAMESPACES: &[&str] = &["math", "strings", "lists", "optional"];

/// Type names an expression may mention.
const TYPE_NAMES: &[&str] = &[
    "bool",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
];

/// The worst-case cost of `expr`, or why it is refused.
pub(super) fn estimate(expr: &IdedExpr) -> Result<u64, Refusal> {
    let mut walk = Walk { scope: Vec::new() };
    let (cost, t) = walk.node(expr)?;
    match t {
        T::Bool | T::Dyn | T::Attribute => Ok(cost),
        other => refuse(
            expr.id,
            format!(
                "must evaluate to bool or the unknown type, not {}",
                other.name()
            ),
        ),
    }
}

struct Walk {
    scope: Vec<(String, T)>,
}

impl Walk {
    fn lookup(&self, name: &str) -> Option<&T> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t)
    }

    fn node(&mut self, e: &IdedExpr) -> Result<(u64, T), Refusal> {
        match &e.expr {
            Expr::Unspecified => refuse(e.id, "unspecified expression"),
            Expr::Literal(l) => Ok((0, literal(l))),
            Expr::Ident(name) => {
                if let Some(t) = self.lookup(name) {
                    Ok((1, t.clone()))
                } else if name == "device" {
                    Ok((1, T::Device))
                } else if TYPE_NAMES.contains(&name.as_str()) {
                    Ok((1, T::Type))
                } else {
                    refuse(
                        e.id,
                        format!("undeclared reference to '{name}' (in container '')"),
                    )
                }
            }
            Expr::List(list) => {
                let mut cost = LIST_CREATE;
                let mut elem: Option<T> = None;
                for item in &list.elements {
                    let (c, t) = self.node(item)?;
                    cost = cost.saturating_add(c);
                    elem = Some(match elem {
                        None => t,
                        Some(prev) => prev.join(t),
                    });
                }
                let n = list.elements.len() as u64;
                Ok((cost, T::List(n, Box::new(elem.unwrap_or(T::Dyn)))))
            }
            Expr::Map(map) => {
                let mut cost = MAP_CREATE;
                let mut key: Option<T> = None;
                let mut value: Option<T> = None;
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        let (ck, tk) = self.node(&m.key)?;
                        let (cv, tv) = self.node(&m.value)?;
                        cost = cost.saturating_add(ck).saturating_add(cv);
                        key = Some(key.map_or(tk.clone(), |k| k.join(tk)));
                        value = Some(value.map_or(tv.clone(), |v| v.join(tv)));
                    }
                }
                let n = map.entries.len() as u64;
                Ok((
                    cost,
                    T::Map(
                        n,
                        Box::new(key.unwrap_or(T::Dyn)),
                        Box::new(value.unwrap_or(T::Dyn)),
                    ),
                ))
            }
            Expr::Struct(s) => refuse(e.id, format!("undeclared reference to '{}'", s.type_name)),
            Expr::Select(sel) => {
                let (c, t) = self.node(&sel.operand)?;
                let field = match t {
                    T::Device => match sel.field.as_str() {
                        "driver" => T::Str(DRIVER_MAX),
                        "attributes" => T::Domains(Of::Attributes),
                        "capacity" => T::Domains(Of::Capacity),
                        "allowMultipleAllocations" => T::Bool,
                        other => return refuse(e.id, format!("undefined field '{other}'")),
                    },
                    T::Domains(_) | T::Ids(_) | T::Map(..) => t.value(),
                    T::Dyn | T::Attribute => T::Dyn,
                    other => {
                        return refuse(
                            e.id,
                            format!("type '{}' does not support field selection", other.name()),
                        );
                    }
                };
                let t = if sel.test { T::Bool } else { field };
                Ok((c.saturating_add(1), t))
            }
            Expr::Call(call) => {
                self.call(e.id, &call.func_name, call.target.as_deref(), &call.args)
            }
            Expr::Comprehension(c) => self.comprehension(c),
        }
    }

    fn comprehension(&mut self, c: &ComprehensionExpr) -> Result<(u64, T), Refusal> {
        let (range_cost, range) = self.node(&c.iter_range)?;
        let (init_cost, init) = self.node(&c.accu_init)?;
        let n = range.size();
        let (first, second) = match &c.iter_var2 {
            None => (range.element(), None),
            Some(_) => match &range {
                T::List(_, e) => (T::Int, Some((**e).clone())),
                _ => (range.element(), Some(range.value())),
            },
        };
        // map() and filter() build a list as long as the range.
        let accu = match (&init, &c.accu_init.expr) {
            (T::List(0, _), Expr::List(_)) if c.iter_var != "#unused" => {
                T::List(n, Box::new(T::Dyn))
            }
            _ => init.clone(),
        };
        let depth = self.scope.len();
        self.scope.push((c.accu_var.clone(), accu.clone()));
        self.scope.push((c.iter_var.clone(), first));
        if let (Some(name), Some(t)) = (&c.iter_var2, second) {
            self.scope.push((name.clone(), t));
        }
        let cond = self.node(&c.loop_cond);
        let step = self.node(&c.loop_step);
        self.scope.truncate(depth);
        let ((cond_cost, _), (step_cost, _)) = (cond?, step?);
        self.scope.push((c.accu_var.clone(), accu));
        let result = self.node(&c.result);
        self.scope.truncate(depth);
        let (result_cost, result) = result?;
        let per_item = cond_cost.saturating_add(step_cost);
        let cost = range_cost
            .saturating_add(init_cost)
            .saturating_add(per_item.saturating_mul(n))
            .saturating_add(result_cost);
        Ok((cost, result))
    }

    fn call(
        &mut self,
        id: u64,
        name: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
    ) -> Result<(u64, T), Refusal> {
        // `math.abs(x)` and the like: a namespace, not a receiver.
        if let Some(IdedExpr {
            expr: Expr::Ident(ns),
            ..
        }) = target
            && NAMESPACES.contains(&ns.as_str())
            && self.lookup(ns).is_none()
        {
            let full = format!("{ns}.{name}");
            return self.call(id, &full, None, args);
        }
        let mut cost: u64 = 0;
        let mut recv: Option<T> = None;
        if let Some(t) = target {
            let (c, t) = self.node(t)?;
            cost = cost.saturating_add(c);
            recv = Some(t);
        }
        let mut types = Vec::with_capacity(args.len());
        let mut arg_costs = Vec::with_capacity(args.len());
        for a in args {
            let (c, t) = self.node(a)?;
            arg_costs.push(c);
            types.push(t);
        }
        let arg = |i: usize| types.get(i).cloned().unwrap_or(T::Dyn);
        // The first operand: the receiver, or the first argument of a global call.
        let subject = recv.clone().unwrap_or_else(|| arg(0));
        let subject_size = subject.size();
        // The argument after the subject.
        let other = if recv.is_some() { arg(0) } else { arg(1) };
        let all_args: u64 = arg_costs.iter().fold(0, |a, c| a.saturating_add(*c));
        let (call_cost, t) = match name {
            "_&&_" | "_||_" => (0, T::Bool),
            "_?_:_" => {
                // Only the dearer branch runs.
                let cond = arg_costs.first().copied().unwrap_or(0);
                let branch = arg_costs.iter().skip(1).copied().max().unwrap_or(0);
                return Ok((
                    cost.saturating_add(cond).saturating_add(branch),
                    arg(1).join(arg(2)),
                ));
            }
            "!_" | "@not_strictly_false" => (1, T::Bool),
            "-_" => (1, arg(0)),
            "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => {
                let (a, b) = (arg(0), arg(1));
                let c = if a.is_string() || b.is_string() {
                    factor(a.size().min(b.size()), STRING_TRAVERSAL)
                } else {
                    1
                };
                (c, T::Bool)
            }
            "_+_" => {
                let (a, b) = (arg(0), arg(1));
                match (&a, &b) {
                    (T::Str(x), T::Str(y)) => {
                        let n = x.saturating_add(*y);
                        (factor(n, STRING_TRAVERSAL), T::Str(n))
                    }
                    (T::List(x, e), T::List(y, f)) => {
                        let n = x.saturating_add(*y);
                        (
                            factor(n, STRING_TRAVERSAL),
                            T::List(n, Box::new((**e).clone().join((**f).clone()))),
                        )
                    }
                    _ => (1, a.join(b)),
                }
            }
            "_-_" | "_*_" | "_/_" | "_%_" => (1, arg(0).join(arg(1))),
            "_[_]" | "_[?_]" => (
                1,
                if name == "_[_]" {
                    arg(0).value()
                } else {
                    T::Dyn
                },
            ),
            "_?._" => (1, T::Dyn),
            "@in" => {
                let container = arg(1);
                match container {
                    T::Domains(_) | T::Ids(_) | T::Map(..) | T::Device => (1, T::Bool),
                    other => (other.size(), T::Bool),
                }
            }
            "size" => (1, T::Int),
            "int" => (1, T::Int),
            "uint" => (1, T::Uint),
            "double" => (1, T::Double),
            "string" => (1, T::Str(UNKNOWN)),
            "bytes" => (1, T::Bytes),
            "bool" => (1, T::Bool),
            "type" => (1, T::Type),
            "dyn" => (1, T::Dyn),
            "matches" => (
                factor(subject_size, STRING_TRAVERSAL)
                    .saturating_mul(factor(other.size(), REGEX_LENGTH)),
                T::Bool,
            ),
            "contains" => (
                factor(subject_size, STRING_TRAVERSAL)
                    .saturating_mul(factor(other.size(), STRING_TRAVERSAL)),
                T::Bool,
            ),
            "startsWith" | "endsWith" => (factor(other.size(), STRING_TRAVERSAL), T::Bool),
            "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                (factor(subject_size, STRING_TRAVERSAL), T::Str(subject_size))
            }
            "replace" => (
                factor(subject_size, 2.0 * STRING_TRAVERSAL),
                T::Str(UNKNOWN),
            ),
            "split" => (
                factor(subject_size, 2.0 * STRING_TRAVERSAL),
                T::List(subject_size, Box::new(T::Str(subject_size))),
            ),
            "join" => {
                let elems = subject.element().size();
                let len = subject_size;
                let seps = other.size().saturating_mul(len.saturating_sub(1));
                let n = if recv.is_some() && args.is_empty() {
                    len.saturating_mul(elems)
                } else {
                    len.saturating_mul(elems).saturating_add(seps)
                };
                (factor(n, STRING_TRAVERSAL), T::Str(n))
            }
            "find" | "findAll" => {
                let c = factor(subject_size.saturating_add(1), STRING_TRAVERSAL)
                    .saturating_mul(factor(other.size(), REGEX_LENGTH));
                let t = if name == "find" {
                    T::Str(subject_size)
                } else {
                    T::List(subject_size, Box::new(T::Str(subject_size)))
                };
                (c, t)
            }
            "indexOf" | "lastIndexOf" => (factor(subject_size, STRING_TRAVERSAL), T::Int),
            "charAt" => (1, T::Str(1)),
            "format" | "strings.quote" => (1, T::Str(UNKNOWN)),
            "reverse" => (factor(subject_size, STRING_TRAVERSAL), subject.clone()),
            "slice" | "flatten" | "distinct" | "sort" | "@sortByAssociatedKeys" => {
                (subject_size, subject.clone())
            }
            // Builds a list as long as its argument: charged by that length when it is a
            // literal, refused (unknown cost) otherwise, so no expression allocates unbounded.
            "lists.range" => {
                let n = match args.first().map(|a| &a.expr) {
                    Some(Expr::Literal(LiteralValue::Int(n))) => {
                        u64::try_from(*n.inner()).unwrap_or(0)
                    }
                    _ => UNKNOWN,
                };
                (n, T::List(n, Box::new(T::Int)))
            }
            "quantity" => (factor(arg(0).size(), STRING_TRAVERSAL), T::Quantity),
            "isQuantity" => (factor(arg(0).size(), STRING_TRAVERSAL), T::Bool),
            "semver" => (1, T::Semver),
            "isSemver" | "isGreaterThan" | "isLessThan" | "isInteger" => (1, T::Bool),
            "compareTo" | "sign" | "asInteger" | "major" | "minor" | "patch" => (1, T::Int),
            "asApproximateFloat" => (1, T::Double),
            "add" | "sub" => (1, T::Quantity),
            "optional.of"
            | "optional.none"
            | "optional.ofNonZeroValue"
            | "hasValue"
            | "value"
            | "or"
            | "orValue" => (1, T::Dyn),
            n if n.starts_with("math.") => (args.len().max(1) as u64, T::Dyn),
            _ => {
                return refuse(
                    id,
                    format!("undeclared reference to '{name}' (in container '')"),
                );
            }
        };
        Ok((cost.saturating_add(all_args).saturating_add(call_cost), t))
    }
}

fn literal(l: &LiteralValue) -> T {
    match l {
        LiteralValue::Boolean(_) => T::Bool,
        LiteralValue::Bytes(_) => T::Bytes,
        LiteralValue::Double(_) => T::Double,
        LiteralValue::Int(_) => T::Int,
        LiteralValue::Null => T::Null,
        LiteralValue::String(s) => T::Str(s.inner().chars().count() as u64),
        LiteralValue::UInt(_) => T::Uint,
    }
}
