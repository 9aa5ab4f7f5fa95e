//! The CEL environment of DRA selectors, built once: CEL's standard library, the `cel.bind`
//! macro (`ext.Bindings`), the strings, lists and math extensions, and kube's quantity, semver
//! and regex (`find`, `findAll`) libraries.

use std::sync::{Arc, LazyLock};

use cel::common::ast::{ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue};
use cel::common::types::{CelBool, CelInt, CelList, CelString, INT_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::parser::{Macro, MacroExprHelper, ParseError};
use cel::{DeclarationError, Env, ExecutionError, extensions};

use super::{quantity, semver};

/// The shared environment (`Env` is immutable once built and `Send + Sync`).
pub(super) static ENV: LazyLock<Result<Arc<Env>, DeclarationError>> =
    LazyLock::new(|| build().map(Arc::new));

fn build() -> Result<Env, DeclarationError> {
    let mut env = Env::stdlib();
    env.add_extension(extensions::strings)?;
    env.add_extension(extensions::lists)?;
    env.add_extension(extensions::math)?;
    quantity::register(&mut env)?;
    semver::register(&mut env)?;
    env.add_member_overload(
        "find",
        "string_find_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all,
    )?;
    env.add_macro(Macro::receiver("bind", 3, bind_macro))?;
    Ok(env)
}

/// `cel.bind(var, init, result)`, expanded as cel-go's `ext.Bindings` does: a comprehension
/// over an empty list whose accumulator is the bound variable.
fn bind_macro(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    if !matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(n)) if n == "cel") {
        return Ok(None);
    }
    let var = match args.first().map(|a| &a.expr) {
        Some(Expr::Ident(name)) => name.clone(),
        _ => {
            let id = args.first().map_or(0, |a| a.id);
            return Err(
                helper.new_error(id, "cel.bind() variable names must be simple identifiers")
            );
        }
    };
    let result = args.pop().unwrap_or_default();
    let init = args.pop().unwrap_or_default();
    target.take();
    let bind = ComprehensionExpr {
        iter_range: helper.next_expr(Expr::List(ListExpr::new(Vec::new()))),
        iter_var: "#unused".to_owned(),
        iter_var2: None,
        accu_var: var.clone(),
        accu_init: init,
        loop_cond: helper.next_expr(Expr::Literal(LiteralValue::Boolean(CelBool::from(false)))),
        loop_step: helper.next_expr(Expr::Ident(var)),
        result,
    };
    Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(bind)))))
}

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Ret<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

fn regex_args<'a>(
    args: &'a [CowVal<'_, '_>],
    f: &str,
) -> Result<(&'a str, regex::Regex), ExecutionError> {
    let s = |i: usize| {
        args.get(i)
            .and_then(|a| a.downcast_ref::<CelString>())
            .map(|s| s.inner())
    };
    let (Some(text), Some(pattern)) = (s(0), s(1)) else {
        return Err(ExecutionError::no_such_overload(
            f,
            args.iter()
                .map(|a| a.get_type().name().to_owned())
                .collect(),
        ));
    };
    let re = regex::Regex::new(pattern).map_err(|e| ExecutionError::function_error(f, e))?;
    Ok((text, re))
}

/// `<string>.find(<regex>)`: the first match, or `""`.
fn find<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (text, re) = regex_args(&args, "find")?;
    let m = re.find(text).map_or("", |m| m.as_str()).to_owned();
    Ok(CowVal::owned(CelString::from(m)))
}

/// `<string>.findAll(<regex>[, <limit>])`: every match, or the first `limit` (all when negative).
fn find_all<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (text, re) = regex_args(&args, "findAll")?;
    let limit = args
        .get(2)
        .and_then(|a| a.downcast_ref::<CelInt>())
        .map_or(-1, |n| *n.inner());
    let all = re.find_iter(text).map(|m| m.as_str().to_owned());
    let items: Vec<Box<dyn Val>> = if limit < 0 {
        all.map(|m| Box::new(CelString::from(m)) as Box<dyn Val>)
            .collect()
    } else {
        all.take(usize::try_from(limit).unwrap_or(usize::MAX))
            .map(|m| Box::new(CelString::from(m)) as Box<dyn Val>)
            .collect()
    };
    Ok(CowVal::owned(CelList::from(items)))
}
