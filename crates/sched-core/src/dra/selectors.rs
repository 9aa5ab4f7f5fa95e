//! The allocator's selectors evaluated by the CEL module: [`CelSelectors`], the
//! [`SelectorEval`] a caller passes to [`crate::dra::allocator::Allocator`].
//!
//! Each distinct expression is compiled once and kept: DeviceClasses and claims repeat the
//! same few selectors over many devices. A compile error is kept too, and reported each time
//! the expression is used, as kube's allocator fails every allocation that needs it.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::allocator::{SelectorError, SelectorEval, SelectorStage};
use super::cel::{CelError, CompiledSelector};
use crate::model::Device;

/// Compiled selectors by expression, shared between threads.
///
/// ```
/// use sched_core::dra::allocator::SelectorEval;
/// use sched_core::dra::selectors::CelSelectors;
/// use sched_core::model::Device;
///
/// let device: Device = serde_json::from_value(serde_json::json!({
///     "name": "gpu-0",
///     "attributes": {"model": {"string": "a100"}},
/// }))?;
/// let selectors = CelSelectors::new();
/// let expr = r#"device.attributes["gpu.example.com"].model == "a100""#;
/// assert!(selectors.matches(expr, "gpu.example.com", &device)?);
/// assert!(!selectors.matches(expr, "other.example.com", &device).unwrap_or(false));
/// assert_eq!(selectors.compiled(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Default)]
pub struct CelSelectors {
    compiled: RwLock<HashMap<String, Result<Arc<CompiledSelector>, CelError>>>,
}

impl CelSelectors {
    /// No selector compiled yet.
    pub fn new() -> CelSelectors {
        CelSelectors::default()
    }

    /// How many distinct expressions were compiled (or failed to).
    pub fn compiled(&self) -> usize {
        self.compiled.read().map(|m| m.len()).unwrap_or(0)
    }

    /// The compiled form of `expression`, compiled on first use.
    fn get(&self, expression: &str) -> Result<Arc<CompiledSelector>, CelError> {
        if let Ok(map) = self.compiled.read()
            && let Some(found) = map.get(expression)
        {
            return found.clone();
        }
        let compiled = CompiledSelector::compile(expression).map(Arc::new);
        if let Ok(mut map) = self.compiled.write() {
            map.insert(expression.to_owned(), compiled.clone());
        }
        compiled
    }
}

impl SelectorEval for CelSelectors {
    fn matches(
        &self,
        expression: &str,
        driver: &str,
        device: &Device,
    ) -> Result<bool, SelectorError> {
        let compiled = self
            .get(expression)
            .map_err(|e| SelectorError::at(SelectorStage::Compile, expression, e))?;
        compiled
            .matches_memoized(driver, device)
            .map_err(|e| SelectorError::at(SelectorStage::Runtime, expression, e))
    }
}
